//! The lock family: `NativeMutex` (InterProcessMutex, and the read and write halves of
//! InterProcessReadWriteLock, which are mutexes too), `NativeSemaphoreMutex`,
//! `NativeSemaphoreV2` with its `NativeLease`s, and `NativeMultiLock`.

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{BigInt, Object};
use napi::Env;
use napi_derive::napi;
use zkrecipes::lock::{
    InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, LockLostPolicy,
};

use crate::args;
use crate::client::NativeClient;
use crate::error::{from_core, invalid, CoreResult};
use crate::events::{EmitFn, Emitter, Event, Payload};
use crate::promise;
use crate::value::Out;

fn lost_policy(p: Option<String>) -> CoreResult<LockLostPolicy> {
    match p.as_deref() {
        None | Some("standard") => Ok(LockLostPolicy::Standard),
        Some("session") => Ok(LockLostPolicy::Session),
        Some(other) => Err(invalid(format!(
            "lostPolicy must be 'standard' or 'session', got {other:?}"
        ))),
    }
}

/// Emits `'lost'` with the owner id whose hold was lost.
fn forward_lost(m: &InterProcessMutex, emit: EmitFn<'_>) -> napi::Result<()> {
    let emitter = Emitter::new(emit)?;
    m.on_lost(move |owner| emitter.emit(Event::new("lost", Payload::Owner(owner.as_raw()))));
    Ok(())
}

/// Curator's InterProcessMutex (reentrant per owner). `index.js`'s `InterProcessMutex` wraps it.
#[napi]
pub struct NativeMutex {
    inner: InterProcessMutex,
}

#[napi]
impl NativeMutex {
    /// A mutex on `path`; `emit` receives `'lost'` events.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        emit: EmitFn<'_>,
        lost_policy_name: Option<String>,
    ) -> napi::Result<Self> {
        let build = || -> CoreResult<InterProcessMutex> {
            let m = InterProcessMutex::new(&client.inner, &path)?;
            m.set_lost_policy(lost_policy(lost_policy_name)?);
            Ok(m)
        };
        let inner = build().map_err(|e| from_core(&env, &e))?;
        forward_lost(&inner, emit)?;
        Ok(NativeMutex { inner })
    }

    pub(crate) fn wrap(inner: InterProcessMutex, emit: EmitFn<'_>) -> napi::Result<Self> {
        forward_lost(&inner, emit)?;
        Ok(NativeMutex { inner })
    }

    /// Resolves to whether `owner` acquired within `timeout_ms` (`undefined`: wait forever).
    #[napi]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        owner: BigInt,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let (owner, timeout) = match args::owner(&owner)
            .and_then(|o| Ok((o, args::timeout("timeoutMs", timeout_ms)?)))
        {
            Ok(v) => v,
            Err(e) => return promise::rejected(env, e),
        };
        let m = self.inner.clone();
        promise::spawn(env, async move { m.acquire(owner, timeout).await })
    }

    /// Releases one acquire of `owner` (`ZKR_NOT_OWNER` if it holds nothing).
    #[napi]
    pub fn release<'env>(&self, env: &'env Env, owner: BigInt) -> napi::Result<Object<'env>> {
        let owner = match args::owner(&owner) {
            Ok(o) => o,
            Err(e) => return promise::rejected(env, e),
        };
        let m = self.inner.clone();
        promise::spawn(env, async move {
            m.release(owner).await?;
            Ok(Out::Undefined)
        })
    }

    /// Whether `owner` holds the mutex.
    #[napi]
    pub fn is_owned_by(&self, env: Env, owner: BigInt) -> napi::Result<bool> {
        let owner = args::owner(&owner).map_err(|e| from_core(&env, &e))?;
        Ok(self.inner.is_owned_by(owner))
    }

    /// Whether `owner` holds the mutex and the hold is still trustworthy.
    #[napi]
    pub fn is_held_valid(&self, env: Env, owner: BigInt) -> napi::Result<bool> {
        let owner = args::owner(&owner).map_err(|e| from_core(&env, &e))?;
        Ok(self.inner.is_held_valid(owner))
    }

    /// Whether any owner of this object holds it.
    #[napi]
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.inner.is_acquired_in_this_process()
    }

    /// `owner`'s fencing token (the lock node's czxid), or `null` if it holds nothing.
    #[napi]
    pub fn fencing_token(&self, env: Env, owner: BigInt) -> napi::Result<Option<BigInt>> {
        let owner = args::owner(&owner).map_err(|e| from_core(&env, &e))?;
        Ok(self.inner.fencing_token(owner).map(BigInt::from))
    }

    /// The path of `owner`'s lock node, or `null`.
    #[napi]
    pub fn lock_node(&self, env: Env, owner: BigInt) -> napi::Result<Option<String>> {
        let owner = args::owner(&owner).map_err(|e| from_core(&env, &e))?;
        Ok(self.inner.lock_node(owner))
    }

    /// Curator's makeRevocable: from now on, lock nodes of this object carry empty data and are
    /// watched; when another process writes `__REVOKE__` into one (`attemptRevoke`), `emit`
    /// receives `'revoke'` with the owner id of that hold. Cooperative: the owner decides whether
    /// to release. Applies to acquires that start after this call; a second call replaces the
    /// first.
    #[napi]
    pub fn make_revocable(&self, emit: EmitFn<'_>) -> napi::Result<()> {
        let emitter = Emitter::new(emit)?;
        self.inner.make_revocable(move |owner| {
            emitter.emit(Event::new("revoke", Payload::Owner(owner.as_raw())))
        });
        Ok(())
    }

    /// Resolves to the lock's nodes in line order (holder first).
    #[napi]
    pub fn participant_nodes<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let m = self.inner.clone();
        promise::spawn(env, async move {
            Ok(Out::strings(m.participant_nodes().await?))
        })
    }

    /// The lock path.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.inner.path().to_string()
    }
}

/// Curator's InterProcessReadWriteLock: a read mutex and a write mutex sharing one line.
#[napi]
pub struct NativeReadWriteLock {
    inner: InterProcessReadWriteLock,
}

#[napi]
impl NativeReadWriteLock {
    /// A read/write lock on `path`.
    #[napi(constructor)]
    pub fn new(env: Env, client: &NativeClient, path: String) -> napi::Result<Self> {
        let inner = InterProcessReadWriteLock::new(&client.inner, &path)
            .map_err(|e| from_core(&env, &e))?;
        Ok(NativeReadWriteLock { inner })
    }

    /// The read half (shared by readers; a writer may also take it).
    #[napi]
    pub fn read_lock(
        &self,
        env: Env,
        emit: EmitFn<'_>,
        lost_policy_name: Option<String>,
    ) -> napi::Result<NativeMutex> {
        let m = self.inner.read_lock().clone();
        m.set_lost_policy(lost_policy(lost_policy_name).map_err(|e| from_core(&env, &e))?);
        NativeMutex::wrap(m, emit)
    }

    /// The write half (exclusive).
    #[napi]
    pub fn write_lock(
        &self,
        env: Env,
        emit: EmitFn<'_>,
        lost_policy_name: Option<String>,
    ) -> napi::Result<NativeMutex> {
        let m = self.inner.write_lock().clone();
        m.set_lost_policy(lost_policy(lost_policy_name).map_err(|e| from_core(&env, &e))?);
        NativeMutex::wrap(m, emit)
    }
}

/// Curator's InterProcessSemaphoreMutex: not reentrant, owned by no one in particular.
#[napi]
pub struct NativeSemaphoreMutex {
    inner: Arc<InterProcessSemaphoreMutex>,
}

#[napi]
impl NativeSemaphoreMutex {
    /// A semaphore mutex on `path`.
    #[napi(constructor)]
    pub fn new(env: Env, client: &NativeClient, path: String) -> napi::Result<Self> {
        let inner = InterProcessSemaphoreMutex::new(&client.inner, &path)
            .map_err(|e| from_core(&env, &e))?;
        Ok(NativeSemaphoreMutex {
            inner: Arc::new(inner),
        })
    }

    /// Resolves to whether it was acquired within `timeout_ms` (`undefined`: no limit).
    #[napi]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let timeout = match args::timeout("timeoutMs", timeout_ms) {
            Ok(t) => t,
            Err(e) => return promise::rejected(env, e),
        };
        let m = self.inner.clone();
        promise::spawn(env, async move { m.acquire(timeout).await })
    }

    /// Releases (`ZKR_NOT_OWNER` if this object does not hold it).
    #[napi]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let m = self.inner.clone();
        promise::spawn(env, async move {
            m.release().await?;
            Ok(Out::Undefined)
        })
    }

    /// Whether this object holds it.
    #[napi]
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.inner.is_acquired_in_this_process()
    }

    /// The path of the lease node held, if any.
    #[napi(getter)]
    pub fn lease_node(&self) -> Option<String> {
        self.inner.lease_node()
    }
}

/// One lease of a semaphore.
#[napi]
pub struct NativeLease {
    lease: Mutex<Option<Lease>>,
    path: String,
    czxid: i64,
}

impl NativeLease {
    fn new(lease: Lease) -> NativeLease {
        NativeLease {
            path: lease.path().to_string(),
            czxid: lease.czxid(),
            lease: Mutex::new(Some(lease)),
        }
    }
}

#[napi]
impl NativeLease {
    /// The lease node's path.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// The lease node's czxid.
    #[napi(getter)]
    pub fn czxid(&self) -> BigInt {
        BigInt::from(self.czxid)
    }

    /// Whether it was returned.
    #[napi(getter)]
    pub fn is_returned(&self) -> bool {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// Returns the lease (deletes its node); `ZKR_NOT_OWNER` if it was returned already.
    #[napi]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let lease = self.lease.lock().unwrap_or_else(|e| e.into_inner()).take();
        let path = self.path.clone();
        promise::spawn(env, async move {
            match lease {
                Some(l) => l.release().await?,
                None => {
                    return Err(zkrecipes::Error::NotOwner(
                        format!("return lease {path}: it was returned already").into(),
                    ))
                }
            }
            Ok(Out::Undefined)
        })
    }
}

/// Curator's InterProcessSemaphoreV2: at most `maxLeases` leases at once.
#[napi]
pub struct NativeSemaphoreV2 {
    inner: InterProcessSemaphoreV2,
}

#[napi]
impl NativeSemaphoreV2 {
    /// A semaphore on `path` with `max_leases`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        max_leases: u32,
    ) -> napi::Result<Self> {
        let inner = InterProcessSemaphoreV2::new(&client.inner, &path, max_leases as usize)
            .map_err(|e| from_core(&env, &e))?;
        Ok(NativeSemaphoreV2 { inner })
    }

    /// Resolves to `qty` leases, or `null` if they were not all acquired within `timeout_ms`.
    #[napi]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        qty: u32,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let timeout = match args::timeout("timeoutMs", timeout_ms) {
            Ok(t) => t,
            Err(e) => return promise::rejected(env, e),
        };
        let s = self.inner.clone();
        promise::spawn(env, async move {
            Ok(s.acquire(qty as usize, timeout)
                .await?
                .map(|leases| leases.into_iter().map(NativeLease::new).collect::<Vec<_>>()))
        })
    }

    /// The lease nodes in sequence order.
    #[napi]
    pub fn participant_nodes<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let s = self.inner.clone();
        promise::spawn(env, async move {
            Ok(Out::strings(s.participant_nodes().await?))
        })
    }

    /// The most leases held at once.
    #[napi(getter)]
    pub fn max_leases(&self) -> u32 {
        self.inner.max_leases() as u32
    }

    /// The semaphore's path.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.inner.path().to_string()
    }
}

/// Curator's InterProcessMultiLock over mutexes at several paths (all or nothing).
#[napi]
pub struct NativeMultiLock {
    inner: InterProcessMultiLock,
}

#[napi]
impl NativeMultiLock {
    /// A multi lock over an InterProcessMutex at each path.
    #[napi(constructor)]
    pub fn new(env: Env, client: &NativeClient, paths: Vec<String>) -> napi::Result<Self> {
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let inner =
            InterProcessMultiLock::new(&client.inner, &refs).map_err(|e| from_core(&env, &e))?;
        Ok(NativeMultiLock { inner })
    }

    /// Resolves to whether `owner` took every lock within `timeout_ms`.
    #[napi]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        owner: BigInt,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let (owner, timeout) = match args::owner(&owner)
            .and_then(|o| Ok((o, args::timeout("timeoutMs", timeout_ms)?)))
        {
            Ok(v) => v,
            Err(e) => return promise::rejected(env, e),
        };
        let m = self.inner.clone();
        promise::spawn(env, async move { m.acquire(owner, timeout).await })
    }

    /// Releases every lock of `owner`.
    #[napi]
    pub fn release<'env>(&self, env: &'env Env, owner: BigInt) -> napi::Result<Object<'env>> {
        let owner = match args::owner(&owner) {
            Ok(o) => o,
            Err(e) => return promise::rejected(env, e),
        };
        let m = self.inner.clone();
        promise::spawn(env, async move {
            m.release(owner).await?;
            Ok(Out::Undefined)
        })
    }

    /// Whether the locks are held in this process.
    #[napi]
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.inner.is_acquired_in_this_process()
    }
}

/// Curator's Revoker.attemptRevoke: writes `__REVOKE__` into the lock node `node_path` (one of
/// `participantNodes()`) to ask its holder to release; a node already gone is fine.
#[napi]
pub fn attempt_revoke<'env>(
    env: &'env Env,
    client: &NativeClient,
    node_path: String,
) -> napi::Result<Object<'env>> {
    let c = client.inner.clone();
    promise::spawn(env, async move {
        zkrecipes::lock::attempt_revoke(&c, &node_path).await?;
        Ok(Out::Undefined)
    })
}
