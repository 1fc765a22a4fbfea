//! [`DistributedAtomicValue`] (Curator's, bytes), and the one home of the Curator-style
//! operations that every distributed atomic shares: `get`, `compare_and_set`, `try_set` (an
//! optimistic loop under the instance's retry policy, then the same under the promoted lock),
//! `force_set` and `initialize`. [`DistributedAtomicLong`](super::DistributedAtomicLong) and
//! [`DistributedAtomicInteger`](super::DistributedAtomicInteger) are this engine over their
//! big-endian codec (plus combining for `add`); `DistributedAtomicValue` is it over the bytes
//! as they are.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::engine::{Bytes, Codec, Engine, Known, Written};
use super::{AtomicStats, AtomicValue, PromotedToLock};
use crate::lock::InterProcessMutex;
use crate::retry::RetryPolicy;
use crate::{path, runtime, Client, Error, Owner, Result};

/// The promoted lock of an atomic (Curator's `PromotedToLock` with its mutex).
#[derive(Clone)]
pub(crate) struct Promotion {
    pub(crate) config: PromotedToLock,
    mutex: InterProcessMutex,
}

/// Releases a promoted lock if the operation's future is dropped while holding it.
struct HeldLock {
    mutex: InterProcessMutex,
    owner: Owner,
    armed: bool,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        if self.armed {
            let (mutex, owner) = (self.mutex.clone(), self.owner);
            runtime::spawn(async move {
                let _ = mutex.release(owner).await;
            });
        }
    }
}

/// A result before any read: not succeeded, no values.
pub(crate) fn failed<V>() -> AtomicValue<Option<V>> {
    AtomicValue {
        succeeded: false,
        pre_value: None,
        post_value: None,
        stats: AtomicStats::default(),
    }
}

/// The Curator-style operations on one value node, over its codec. Values are `Option`s: a
/// missing node is `None` (Curator's `null`); the counters read it as 0.
pub(crate) struct Atomic<C: Codec> {
    pub(crate) engine: Arc<Engine<C>>,
    pub(crate) retry: RetryPolicy,
    pub(crate) promotion: Option<Promotion>,
}

impl<C: Codec> Clone for Atomic<C> {
    fn clone(&self) -> Self {
        Atomic {
            engine: self.engine.clone(),
            retry: self.retry.clone(),
            promotion: self.promotion.clone(),
        }
    }
}

/// Checks an atomic's path, retry policy and promotion (`recipe`: "counter", "value").
pub(crate) fn check_atomic(
    client: &Client,
    path: &str,
    noun: &str,
    retry: Option<RetryPolicy>,
    promoted: Option<PromotedToLock>,
) -> Result<(RetryPolicy, Option<Promotion>)> {
    client.ensure_open_for(noun, path)?;
    path::validate_path(path)?;
    if path == "/" {
        return Err(Error::invalid(format!("the root node cannot be a {noun}")));
    }
    let retry = retry.unwrap_or_else(|| client.retry_policy().clone());
    retry.validate()?;
    let promotion = match promoted {
        None => None,
        Some(config) => {
            if config.path() == path {
                return Err(Error::invalid(format!(
                    "{noun} {path}: the promoted lock needs its own path, not the {noun}'s"
                )));
            }
            let mutex = InterProcessMutex::new(client, config.path())?;
            Some(Promotion { config, mutex })
        }
    };
    Ok((retry, promotion))
}

impl<C: Codec> Atomic<C> {
    pub(crate) fn new(
        engine: Arc<Engine<C>>,
        retry: RetryPolicy,
        promotion: Option<Promotion>,
    ) -> Atomic<C> {
        Atomic {
            engine,
            retry,
            promotion,
        }
    }

    /// Curator's `get`: always succeeds, with `pre_value == post_value`.
    pub(crate) async fn get(&self) -> Result<AtomicValue<Option<C::Value>>> {
        let value = self.engine.read().await?.get().cloned();
        Ok(AtomicValue {
            succeeded: true,
            pre_value: value.clone(),
            post_value: value,
            stats: AtomicStats::default(),
        })
    }

    /// Curator's `compareAndSet`: one try. A missing node never matches (as in Curator); the
    /// values are compared decoded (an empty counter node matches an expected 0).
    pub(crate) async fn compare_and_set(
        &self,
        expected: &C::Value,
        new: C::Value,
    ) -> Result<AtomicValue<Option<C::Value>>> {
        let known = self.engine.read().await?;
        let mut result = failed();
        result.pre_value = known.get().cloned();
        if known.get() == Some(expected) {
            if let Written::Applied(_) = self.engine.write(&known, new.clone()).await? {
                result.succeeded = true;
                result.post_value = Some(new);
            }
        }
        Ok(result)
    }

    /// Curator's `trySet(MakeValue)`: the optimistic loop, then the promoted lock if it failed.
    pub(crate) async fn try_set_with(
        &self,
        make: impl Fn(Option<&C::Value>) -> Result<C::Value>,
    ) -> Result<AtomicValue<Option<C::Value>>> {
        let mut result = self.optimistic(&make).await?;
        if !result.succeeded {
            self.promoted(&mut result, &make).await?;
        }
        Ok(result)
    }

    /// Curator's `forceSet`: an unconditional write, creating the node (and its parents) if
    /// needed; after a lost reply, resent only when certainly not applied (see
    /// [`Engine::force_write`]).
    pub(crate) async fn force_set(&self, value: C::Value) -> Result<()> {
        let engine = &*self.engine;
        engine.check_open()?;
        let before = engine.learned().map(|(k, _)| k.place());
        engine.force_write(value, before, true).await.map(|_| ())
    }

    /// Curator's `initialize`: creates the node with `value` if it does not exist.
    pub(crate) async fn initialize(&self, value: C::Value) -> Result<bool> {
        Ok(matches!(
            self.engine.write(&Known::Missing, value).await?,
            Written::Applied(_)
        ))
    }

    /// Curator's tryOnce: read, make the new value, write conditionally.
    async fn try_once(
        &self,
        result: &mut AtomicValue<Option<C::Value>>,
        make: &impl Fn(Option<&C::Value>) -> Result<C::Value>,
    ) -> Result<bool> {
        let known = self.engine.read().await?;
        result.pre_value = known.get().cloned();
        let new = make(known.get())?;
        match self.engine.write(&known, new.clone()).await? {
            Written::Applied(_) => {
                result.post_value = Some(new);
                Ok(true)
            }
            Written::Conflict => Ok(false),
        }
    }

    /// Curator's tryOptimistic: tries under the instance's retry policy (sleeping as it says).
    async fn optimistic(
        &self,
        make: &impl Fn(Option<&C::Value>) -> Result<C::Value>,
    ) -> Result<AtomicValue<Option<C::Value>>> {
        let start = Instant::now();
        let mut result = failed();
        let mut retries = 0;
        loop {
            result.stats.optimistic_tries += 1;
            if self.try_once(&mut result, make).await? {
                result.succeeded = true;
                break;
            }
            match self.retry.next_sleep(retries, start.elapsed()) {
                Some(sleep) => {
                    retries += 1;
                    self.sleep(sleep).await?;
                }
                None => break,
            }
        }
        result.stats.optimistic_time = start.elapsed();
        Ok(result)
    }

    /// Curator's tryWithMutex: take the promoted lock (waiting at most its timeout), then try
    /// under the promotion's retry policy. Not getting the lock leaves `result` failed. Without
    /// a promotion, nothing.
    pub(crate) async fn promoted(
        &self,
        result: &mut AtomicValue<Option<C::Value>>,
        make: &impl Fn(Option<&C::Value>) -> Result<C::Value>,
    ) -> Result<()> {
        let Some(promotion) = &self.promotion else {
            return Ok(());
        };
        let start = Instant::now();
        let owner = Owner::new();
        if promotion
            .mutex
            .acquire(owner, promotion.config.max_lock_time())
            .await?
        {
            let mut held = HeldLock {
                mutex: promotion.mutex.clone(),
                owner,
                armed: true,
            };
            let mut retries = 0;
            let tried: Result<()> = async {
                loop {
                    result.stats.promoted_lock_tries += 1;
                    if self.try_once(result, make).await? {
                        result.succeeded = true;
                        return Ok(());
                    }
                    match promotion
                        .config
                        .retry_policy()
                        .next_sleep(retries, start.elapsed())
                    {
                        Some(sleep) => {
                            retries += 1;
                            self.sleep(sleep).await?;
                        }
                        None => return Ok(()),
                    }
                }
            }
            .await;
            held.armed = false;
            let released = promotion.mutex.release(owner).await;
            tried?;
            // A failed release must not hide an applied write (the lock node goes with the
            // session, or the mutex's guaranteed delete removes it).
            if !result.succeeded {
                released?;
            }
        }
        result.stats.promoted_time = start.elapsed();
        Ok(())
    }

    async fn sleep(&self, d: Duration) -> Result<()> {
        tokio::select! {
            _ = tokio::time::sleep(d) => Ok(()),
            _ = self.engine.client.closed() => {
                Err(Error::Closed(format!("{}: the client was closed", self.engine.what()).into()))
            },
        }
    }
}

pub(crate) fn blocking<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    runtime::try_block_on(f)?
}

/// Curator's `DistributedAtomicValue`: bytes in one node, set atomically. Every method but
/// [`get`](Self::get) may fail to set (check `succeeded`): [`try_set`](Self::try_set) first
/// tries optimistically (read, then a write conditional on the version read) under its retry
/// policy and then, if configured, the same under an `InterProcessMutex` at the
/// [`PromotedToLock`] path.
///
/// The node holds the bytes as they are, so Curator processes share it. A missing node is
/// `None` (Curator's `null`): `get` gives `None`, `compare_and_set` never matches it (use
/// [`initialize`](Self::initialize)), and `try_set` creates it. As the counters do (see the
/// [module documentation](crate::atomic)), a write whose reply is lost is never blindly
/// retried: it is resent only once a re-read proves it was not applied, and otherwise the
/// operation fails with [`Error::OutcomeUnknown`] (Curator may apply it twice or report it
/// lost). The node must be a persistent leaf (`InvalidArgument` on an ephemeral node or a
/// directory, whose value would be lost).
///
/// Cheap to clone; clones share the node's cache.
#[derive(Clone)]
pub struct DistributedAtomicValue {
    inner: Atomic<Bytes>,
}

impl std::fmt::Debug for DistributedAtomicValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedAtomicValue")
            .field("path", &self.inner.engine.path)
            .field("retry", &self.inner.retry)
            .field(
                "promoted_to_lock",
                &self.inner.promotion.as_ref().map(|p| &p.config),
            )
            .finish()
    }
}

impl DistributedAtomicValue {
    /// A value at `path` (validated; the node is created by the first `try_set`, `force_set`
    /// or `initialize`). `retry` governs the optimistic tries of `try_set` (`None`: the
    /// client's retry policy); `promoted_to_lock`, if given, adds Curator's fallback to an
    /// `InterProcessMutex` after they fail.
    pub fn new(
        client: &Client,
        path: &str,
        retry: Option<RetryPolicy>,
        promoted_to_lock: Option<PromotedToLock>,
    ) -> Result<DistributedAtomicValue> {
        let (retry, promotion) = check_atomic(client, path, "value", retry, promoted_to_lock)?;
        let engine = Arc::new(Engine::new(client.clone(), path, Bytes));
        Ok(DistributedAtomicValue {
            inner: Atomic::new(engine, retry, promotion),
        })
    }

    /// The value's path.
    pub fn path(&self) -> &str {
        &self.inner.engine.path
    }

    /// The current bytes (`None` if the node does not exist); always succeeds, with
    /// `pre_value == post_value`.
    pub async fn get(&self) -> Result<AtomicValue<Option<Vec<u8>>>> {
        self.inner.get().await
    }

    /// Sets `new` if the node holds exactly `expected` (one try, as Curator). Fails if the node
    /// does not exist, holds other bytes, or another writer got in between.
    pub async fn compare_and_set(
        &self,
        expected: &[u8],
        new: &[u8],
    ) -> Result<AtomicValue<Option<Vec<u8>>>> {
        self.check_size(new)?;
        self.inner
            .compare_and_set(&expected.to_vec(), new.to_vec())
            .await
    }

    /// Curator's `trySet`: sets `value` with the optimistic loop (and promotion); check
    /// `succeeded`.
    pub async fn try_set(&self, value: &[u8]) -> Result<AtomicValue<Option<Vec<u8>>>> {
        self.check_size(value)?;
        let value = value.to_vec();
        self.inner.try_set_with(move |_| Ok(value.clone())).await
    }

    /// Sets `value` unconditionally, creating the node (and its parents) if needed.
    /// After a lost reply it is resent only if certainly not applied (the node unchanged, or one
    /// other write further): `OutcomeUnknown` when the node moved on further, is gone or cannot be
    /// read again, for ours may have been applied and overwritten since (Curator resends it
    /// blindly, over any write that landed after it).
    pub async fn force_set(&self, value: &[u8]) -> Result<()> {
        self.check_size(value)?;
        self.inner.force_set(value.to_vec()).await
    }

    /// Creates the node with `value` if it does not exist; false if it did.
    pub async fn initialize(&self, value: &[u8]) -> Result<bool> {
        self.check_size(value)?;
        self.inner.initialize(value.to_vec()).await
    }

    fn check_size(&self, data: &[u8]) -> Result<()> {
        path::validate_data(self.path(), data)
    }

    /// [`get`](Self::get) for the blocking face.
    pub fn get_blocking(&self) -> Result<AtomicValue<Option<Vec<u8>>>> {
        blocking(self.get())
    }

    /// [`compare_and_set`](Self::compare_and_set) for the blocking face.
    pub fn compare_and_set_blocking(
        &self,
        expected: &[u8],
        new: &[u8],
    ) -> Result<AtomicValue<Option<Vec<u8>>>> {
        blocking(self.compare_and_set(expected, new))
    }

    /// [`try_set`](Self::try_set) for the blocking face.
    pub fn try_set_blocking(&self, value: &[u8]) -> Result<AtomicValue<Option<Vec<u8>>>> {
        blocking(self.try_set(value))
    }

    /// [`force_set`](Self::force_set) for the blocking face.
    pub fn force_set_blocking(&self, value: &[u8]) -> Result<()> {
        blocking(self.force_set(value))
    }

    /// [`initialize`](Self::initialize) for the blocking face.
    pub fn initialize_blocking(&self, value: &[u8]) -> Result<bool> {
        blocking(self.initialize(value))
    }
}
