//! [`DistributedAtomicLong`] and [`DistributedAtomicInteger`]: Curator's distributed numbers.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::combiner::{combiner_for, Combiner, Mode};
use super::engine::{Engine, Known, Written};
use super::{AtomicStats, AtomicValue, PromotedToLock, Width};
use crate::client::{CreateMode, CreateOptions};
use crate::lock::InterProcessMutex;
use crate::retry::RetryPolicy;
use crate::{path, runtime, Client, Error, Owner, Result};

/// The width-independent counter behind both public types (values as `i64`).
struct Number {
    combiner: Arc<Combiner>,
    retry: RetryPolicy,
    promotion: Option<Promotion>,
}

struct Promotion {
    config: PromotedToLock,
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

fn failed() -> AtomicValue<i64> {
    AtomicValue {
        succeeded: false,
        pre_value: 0,
        post_value: 0,
        stats: AtomicStats::default(),
    }
}

impl Number {
    fn new(
        client: &Client,
        path: &str,
        width: Width,
        retry: Option<RetryPolicy>,
        promoted: Option<PromotedToLock>,
    ) -> Result<Number> {
        client.ensure_open_for("counter", path)?;
        path::validate_path(path)?;
        if path == "/" {
            return Err(Error::invalid("the root node cannot be a counter"));
        }
        let retry = retry.unwrap_or_else(|| client.retry_policy().clone());
        retry.validate()?;
        let promotion = match promoted {
            None => None,
            Some(config) => {
                if config.path == path {
                    return Err(Error::invalid(format!(
                        "counter {path}: the promoted lock needs its own path, not the counter's"
                    )));
                }
                let mutex = InterProcessMutex::new(client, &config.path)?;
                Some(Promotion { config, mutex })
            }
        };
        Ok(Number {
            combiner: combiner_for(client, path, width),
            retry,
            promotion,
        })
    }

    fn engine(&self) -> &Engine {
        &self.combiner.engine
    }

    fn width(&self) -> Width {
        self.engine().width
    }

    async fn get(&self) -> Result<AtomicValue<i64>> {
        let value = self.engine().read().await?.value();
        Ok(AtomicValue {
            succeeded: true,
            pre_value: value,
            post_value: value,
            stats: AtomicStats::default(),
        })
    }

    /// Curator's `add`, but an overflow is refused (`Overflow`) where Curator wraps; combined
    /// with concurrent adds; then promotion if configured.
    async fn add(&self, delta: i64) -> Result<AtomicValue<i64>> {
        self.engine().check_open()?;
        let c = self
            .combiner
            .submit(
                delta,
                Mode::Curator {
                    policy: self.retry.clone(),
                },
            )
            .wait(None)
            .await?;
        let mut result = AtomicValue {
            succeeded: c.succeeded,
            pre_value: c.pre,
            post_value: c.post,
            stats: AtomicStats {
                optimistic_tries: c.tries,
                optimistic_time: c.elapsed,
                ..AtomicStats::default()
            },
        };
        if !result.succeeded && self.promotion.is_some() {
            let width = self.width();
            let path = self.engine().path.clone();
            self.promoted(&mut result, move |previous| {
                width
                    .checked_add(previous, delta)
                    .ok_or_else(|| super::overflow("add", delta, previous, width, &path))
            })
            .await?;
        }
        Ok(result)
    }

    async fn add_and_get(&self, delta: i64, timeout: Option<Duration>) -> Result<i64> {
        self.engine().check_open()?;
        Ok(self
            .combiner
            .submit(delta, Mode::Checked)
            .wait(timeout)
            .await?
            .post)
    }

    async fn compare_and_set(&self, expected: i64, new: i64) -> Result<AtomicValue<i64>> {
        let known = self.engine().read().await?;
        let mut result = failed();
        result.pre_value = known.value();
        // Curator compares the node's bytes; we compare decoded values, so that an empty node
        // (which reads as 0 everywhere) matches an expected 0. A missing node never matches,
        // as in Curator.
        if matches!(known, Known::Present { value, .. } if value == expected) {
            if let Written::Applied(_) = self.engine().write(known, new).await? {
                result.succeeded = true;
                result.post_value = new;
            }
        }
        Ok(result)
    }

    async fn try_set(&self, value: i64) -> Result<AtomicValue<i64>> {
        let mut result = self.optimistic(move |_| Ok(value)).await?;
        if !result.succeeded && self.promotion.is_some() {
            self.promoted(&mut result, move |_| Ok(value)).await?;
        }
        Ok(result)
    }

    async fn force_set(&self, value: i64) -> Result<()> {
        let engine = self.engine();
        engine.check_open()?;
        let client = &engine.client;
        let data = engine.width.encode(value);
        // An unconditional write may be repeated safely (it sets the same bytes), so the
        // client's retrying operations are right here, as in Curator.
        let stat = match client.set_data(&engine.path, &data, None).await {
            Err(Error::NoNode(_)) => {
                match client
                    .create(
                        &engine.path,
                        &data,
                        CreateOptions::new(CreateMode::Persistent).parents(),
                    )
                    .await
                {
                    Ok(created) => created.stat,
                    Err(Error::NodeExists(_)) => client.set_data(&engine.path, &data, None).await?,
                    Err(e) => return Err(e),
                }
            }
            other => other?,
        };
        engine.remember(Known::Present {
            version: stat.version,
            czxid: stat.czxid,
            value,
        });
        Ok(())
    }

    async fn initialize(&self, value: i64) -> Result<bool> {
        Ok(matches!(
            self.engine().write(Known::Missing, value).await?,
            Written::Applied(_)
        ))
    }

    /// Curator's tryOnce: read, make the new value, write conditionally.
    async fn try_once(
        &self,
        result: &mut AtomicValue<i64>,
        make: &impl Fn(i64) -> Result<i64>,
    ) -> Result<bool> {
        let known = self.engine().read().await?;
        result.pre_value = known.value();
        let new = make(known.value())?;
        match self.engine().write(known, new).await? {
            Written::Applied(_) => {
                result.post_value = new;
                Ok(true)
            }
            Written::Conflict => Ok(false),
        }
    }

    /// Curator's tryOptimistic: tries under the instance's retry policy (sleeping as it says).
    async fn optimistic(&self, make: impl Fn(i64) -> Result<i64>) -> Result<AtomicValue<i64>> {
        let start = Instant::now();
        let mut result = failed();
        let mut retries = 0;
        loop {
            result.stats.optimistic_tries += 1;
            if self.try_once(&mut result, &make).await? {
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
    /// under the promotion's retry policy. Not getting the lock leaves `result` failed.
    async fn promoted(
        &self,
        result: &mut AtomicValue<i64>,
        make: impl Fn(i64) -> Result<i64>,
    ) -> Result<()> {
        let Some(promotion) = &self.promotion else {
            return Ok(());
        };
        let start = Instant::now();
        let owner = Owner::new();
        if promotion
            .mutex
            .acquire(owner, promotion.config.max_lock_time)
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
                    if self.try_once(result, &make).await? {
                        result.succeeded = true;
                        return Ok(());
                    }
                    match promotion
                        .config
                        .retry_policy
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
            _ = self.engine().client.closed() => {
                Err(Error::Closed(format!("counter {}: the client was closed", self.engine().path).into()))
            },
        }
    }
}

fn blocking<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    runtime::try_block_on(f)?
}

macro_rules! distributed_number {
    ($(#[$doc:meta])* $name:ident, $t:ty, $width:expr) => {
        $(#[$doc])*
        pub struct $name {
            inner: Number,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("path", &self.inner.engine().path)
                    .field("retry", &self.inner.retry)
                    .field("promoted_to_lock", &self.inner.promotion.as_ref().map(|p| &p.config))
                    .finish()
            }
        }

        impl $name {
            /// A counter at `path` (validated; the node is created on the first write).
            /// `retry` governs the optimistic compare-and-set tries of the Curator-style
            /// operations (`None`: the client's retry policy); `promoted_to_lock`, if given,
            /// adds Curator's fallback to an `InterProcessMutex` after they fail.
            pub fn new(
                client: &Client,
                path: &str,
                retry: Option<RetryPolicy>,
                promoted_to_lock: Option<PromotedToLock>,
            ) -> Result<$name> {
                Ok($name { inner: Number::new(client, path, $width, retry, promoted_to_lock)? })
            }

            /// The counter's path.
            pub fn path(&self) -> &str {
                &self.inner.engine().path
            }

            fn typed(v: AtomicValue<i64>) -> AtomicValue<$t> {
                // Values were computed at this width, so the conversion is exact.
                AtomicValue { succeeded: v.succeeded, pre_value: v.pre_value as $t, post_value: v.post_value as $t, stats: v.stats }
            }

            /// The current value (0 if the node does not exist); always succeeds, with
            /// `pre_value == post_value`.
            pub async fn get(&self) -> Result<AtomicValue<$t>> {
                self.inner.get().await.map(Self::typed)
            }

            /// Curator's `add`: adds `delta`, combined with concurrent adds of this process.
            /// Check `succeeded`: false when the retry policy (and the promoted lock, if any)
            /// gave up against other writers. `Err(OutcomeUnknown)` if a write's reply was lost
            /// and its fate cannot be known. Unlike Curator, which wraps (`Long.MAX_VALUE + 1`
            /// becomes `Long.MIN_VALUE` with `succeeded == true`), a result that does not fit
            /// is refused with `Err(Overflow)` and the counter is left unchanged.
            pub async fn add(&self, delta: $t) -> Result<AtomicValue<$t>> {
                self.inner.add(delta as i64).await.map(Self::typed)
            }

            /// Curator's `subtract`: adds `-delta`; `Err(Overflow)` when that does not fit
            /// (`subtract(MIN)`, or a result past the type's range).
            pub async fn subtract(&self, delta: $t) -> Result<AtomicValue<$t>> {
                match delta.checked_neg() {
                    Some(negated) => self.add(negated).await,
                    None => Err(Error::Overflow(format!(
                        "subtract({delta}) on {}: -({delta}) does not fit",
                        self.path()
                    ).into())),
                }
            }

            /// `add(1)`.
            pub async fn increment(&self) -> Result<AtomicValue<$t>> {
                self.add(1).await
            }

            /// `add(-1)`.
            pub async fn decrement(&self) -> Result<AtomicValue<$t>> {
                self.add(-1).await
            }

            /// Sets `new` if the value is `expected` (one try, as Curator). Fails if the node
            /// does not exist or another writer got in between.
            pub async fn compare_and_set(&self, expected: $t, new: $t) -> Result<AtomicValue<$t>> {
                self.inner.compare_and_set(expected as i64, new as i64).await.map(Self::typed)
            }

            /// Curator's `trySet`: sets `value` with the optimistic loop (and promotion);
            /// check `succeeded`.
            pub async fn try_set(&self, value: $t) -> Result<AtomicValue<$t>> {
                self.inner.try_set(value as i64).await.map(Self::typed)
            }

            /// Sets `value` unconditionally, creating the node if needed.
            pub async fn force_set(&self, value: $t) -> Result<()> {
                self.inner.force_set(value as i64).await
            }

            /// Creates the node with `value` if it does not exist; false if it did.
            pub async fn initialize(&self, value: $t) -> Result<bool> {
                self.inner.initialize(value as i64).await
            }

            /// Beyond Curator: adds `delta` and returns the new value, or an error — never a
            /// silent failure. Conflicts are retried (combined with this process's other
            /// adds) until `timeout` (`None`: no limit beyond the client's connection and
            /// retry bounds). Errors: `Overflow` (nothing written), `Timeout` (not applied),
            /// `OutcomeUnknown` (the write's fate cannot be known), `Closed`, and the
            /// connection errors, which all mean not applied.
            pub async fn add_and_get(&self, delta: $t, timeout: Option<Duration>) -> Result<$t> {
                self.inner.add_and_get(delta as i64, timeout).await.map(|v| v as $t)
            }

            /// [`get`](Self::get) for the blocking face.
            pub fn get_blocking(&self) -> Result<AtomicValue<$t>> {
                blocking(self.get())
            }

            /// [`add`](Self::add) for the blocking face.
            pub fn add_blocking(&self, delta: $t) -> Result<AtomicValue<$t>> {
                blocking(self.add(delta))
            }

            /// [`subtract`](Self::subtract) for the blocking face.
            pub fn subtract_blocking(&self, delta: $t) -> Result<AtomicValue<$t>> {
                blocking(self.subtract(delta))
            }

            /// [`increment`](Self::increment) for the blocking face.
            pub fn increment_blocking(&self) -> Result<AtomicValue<$t>> {
                blocking(self.increment())
            }

            /// [`decrement`](Self::decrement) for the blocking face.
            pub fn decrement_blocking(&self) -> Result<AtomicValue<$t>> {
                blocking(self.decrement())
            }

            /// [`compare_and_set`](Self::compare_and_set) for the blocking face.
            pub fn compare_and_set_blocking(&self, expected: $t, new: $t) -> Result<AtomicValue<$t>> {
                blocking(self.compare_and_set(expected, new))
            }

            /// [`try_set`](Self::try_set) for the blocking face.
            pub fn try_set_blocking(&self, value: $t) -> Result<AtomicValue<$t>> {
                blocking(self.try_set(value))
            }

            /// [`force_set`](Self::force_set) for the blocking face.
            pub fn force_set_blocking(&self, value: $t) -> Result<()> {
                blocking(self.force_set(value))
            }

            /// [`initialize`](Self::initialize) for the blocking face.
            pub fn initialize_blocking(&self, value: $t) -> Result<bool> {
                blocking(self.initialize(value))
            }

            /// [`add_and_get`](Self::add_and_get) for the blocking face.
            pub fn add_and_get_blocking(&self, delta: $t, timeout: Option<Duration>) -> Result<$t> {
                blocking(self.add_and_get(delta, timeout))
            }
        }
    };
}

distributed_number!(
    /// Curator's `DistributedAtomicLong`: a 64-bit counter in one node (8 bytes, big-endian
    /// two's complement; missing or empty = 0), shared with Curator processes.
    ///
    /// Concurrent adds through one client are combined into one compare-and-set round; see
    /// the [module documentation](crate::atomic) for the semantics and guarantees.
    DistributedAtomicLong,
    i64,
    Width::I64
);

distributed_number!(
    /// Curator's `DistributedAtomicInteger`: a 32-bit counter in one node (4 bytes,
    /// big-endian two's complement; missing or empty = 0). Same operations as
    /// [`DistributedAtomicLong`], with `i32` arithmetic.
    DistributedAtomicInteger,
    i32,
    Width::I32
);
