//! The lock family: `NativeMutex` (InterProcessMutex, and the read and write halves of
//! InterProcessReadWriteLock, which are mutexes too), `NativeSemaphoreMutex`,
//! `NativeSemaphoreV2` with its `NativeLease`s, and `NativeMultiLock`.

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{BigInt, Object};
use napi::Env;
use napi_derive::napi;
use zkrecipes::lock::{
    CohortOptions, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, LeaseLost,
};

use crate::args::{self, OwnerId};
use crate::boundary::{promise, promise_on, promise_timed, sync, Outcome};
use crate::client::NativeClient;
use crate::error::{invalid, CoreResult};
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

/// The methods of the locks held by owners (a mutex, a multi lock), in their own `#[napi]` block.
macro_rules! owned_lock_methods {
    ($native:ident) => {
        #[napi]
        impl $native {
            /// Resolves to whether `owner` acquired within `timeout_ms` (`undefined`: no limit).
            #[napi]
            pub fn acquire<'env>(
                &self,
                env: &'env Env,
                owner: OwnerId,
                timeout_ms: Option<f64>,
            ) -> napi::Result<Object<'env>> {
                promise(env, || {
                    let owner = owner.get()?;
                    let timeout = args::timeout("timeoutMs", timeout_ms)?;
                    let lock = self.inner.clone();
                    Ok(async move { lock.acquire(owner, timeout).await })
                })
            }

            /// Releases one acquire of `owner` (`ZKR_NOT_OWNER` if it holds nothing).
            #[napi]
            pub fn release<'env>(
                &self,
                env: &'env Env,
                owner: OwnerId,
            ) -> napi::Result<Object<'env>> {
                promise(env, || {
                    let owner = owner.get()?;
                    let lock = self.inner.clone();
                    Ok(async move { lock.release(owner).await })
                })
            }

            /// Whether any owner holds it through this object.
            #[napi]
            pub fn is_acquired_in_this_process(&self, env: Env) -> napi::Result<bool> {
                sync(&env, || Ok(self.inner.is_acquired_in_this_process()))
            }
        }
    };
}

/// The cohort handoffs of a mutex (`{ cohort }` of `new InterProcessMutex`; types checked by
/// `lib/locks.js`, values here). An omitted field keeps the core's default.
#[napi(object)]
pub struct NativeCohortOptions {
    /// Local handoffs on one node before checking for other contenders (an integer ≥ 1).
    pub max_handoffs: Option<f64>,
    /// How long one node may be passed around locally before checking (finite, ≥ 0).
    pub max_hold_ms: Option<f64>,
}

/// The core's [`CohortOptions`] for `o`: the defaults with the given fields replaced.
fn cohort_options(o: &NativeCohortOptions) -> CoreResult<CohortOptions> {
    let mut opts = CohortOptions::default();
    if let Some(n) = o.max_handoffs {
        if n.fract() != 0.0 || !(1.0..=u32::MAX as f64).contains(&n) {
            return Err(invalid(format!(
                "cohort.maxHandoffs must be an integer in 1..{}, got {n}",
                u32::MAX
            )));
        }
        opts.max_handoffs = n as u32;
    }
    if let Some(ms) = o.max_hold_ms {
        opts.max_hold = args::duration("cohort.maxHoldMs", ms)?;
    }
    Ok(opts)
}

/// `{ maxHandoffs, maxHoldMs }`: a mutex's cohort options as JS sees them.
#[napi(object)]
pub struct CohortOptionsOut {
    pub max_handoffs: u32,
    pub max_hold_ms: f64,
}

/// Curator's InterProcessMutex (reentrant per owner). `lib/locks.js`'s `InterProcessMutex`
/// wraps it. Its emitter carries `'lost'` and `'revoke'`, each with the owner id of the hold.
#[napi]
pub struct NativeMutex {
    inner: InterProcessMutex,
    emitter: Emitter,
}

impl NativeMutex {
    fn wrap(inner: InterProcessMutex, emit: EmitFn<'_>, policy: Option<String>) -> Outcome<Self> {
        inner.set_lost_policy(args::lost_policy(policy)?);
        let emitter = Emitter::new(emit)?;
        let e = emitter.clone();
        inner.on_lost(move |owner| e.emit(Event::new("lost", Out::U64(owner.as_raw()))));
        Ok(NativeMutex { inner, emitter })
    }
}

#[napi]
impl NativeMutex {
    /// A mutex on `path`; `emit` receives `'lost'` (and, once revocable, `'revoke'`) events.
    /// With `cohort`, its owners share one lock node through cohort handoffs.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        emit: EmitFn<'_>,
        lost_policy: Option<String>,
        cohort: Option<NativeCohortOptions>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let mut mutex = InterProcessMutex::new(&client.inner, &path)?;
            if let Some(c) = &cohort {
                mutex = mutex.with_cohort(cohort_options(c)?)?;
            }
            NativeMutex::wrap(mutex, emit, lost_policy)
        })
    }

    /// Whether `owner` holds the mutex.
    #[napi]
    pub fn is_owned_by(&self, env: Env, owner: OwnerId) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.is_owned_by(owner.get()?)))
    }

    /// Whether `owner` holds the mutex and the hold is still trustworthy.
    #[napi]
    pub fn is_held_valid(&self, env: Env, owner: OwnerId) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.is_held_valid(owner.get()?)))
    }

    /// `owner`'s fencing token (the lock node's czxid), or `null` if it holds nothing.
    #[napi]
    pub fn fencing_token(&self, env: Env, owner: OwnerId) -> napi::Result<Option<BigInt>> {
        sync(&env, || {
            Ok(self.inner.fencing_token(owner.get()?).map(BigInt::from))
        })
    }

    /// `owner`'s wide fencing token (`czxid << 32 | handoff`, strictly increasing also across
    /// cohort handoffs), or `null` if it holds nothing.
    #[napi]
    pub fn fencing_token_wide(&self, env: Env, owner: OwnerId) -> napi::Result<Option<BigInt>> {
        sync(&env, || {
            Ok(self
                .inner
                .fencing_token_wide(owner.get()?)
                .map(|t| BigInt::from(t.wide())))
        })
    }

    /// How many owners wait in the cohort's local queue (0 without cohort handoffs).
    #[napi(getter)]
    pub fn local_waiters(&self, env: Env) -> napi::Result<u32> {
        sync(&env, || {
            Ok(u32::try_from(self.inner.local_waiters()).unwrap_or(u32::MAX))
        })
    }

    /// The cohort options, or `null` without cohort handoffs.
    #[napi(getter)]
    pub fn cohort_options(&self, env: Env) -> napi::Result<Option<CohortOptionsOut>> {
        sync(&env, || {
            Ok(self.inner.cohort_options().map(|o| CohortOptionsOut {
                max_handoffs: o.max_handoffs,
                max_hold_ms: o.max_hold.as_secs_f64() * 1000.0,
            }))
        })
    }

    /// The path of `owner`'s lock node, or `null`.
    #[napi]
    pub fn lock_node(&self, env: Env, owner: OwnerId) -> napi::Result<Option<String>> {
        sync(&env, || Ok(self.inner.lock_node(owner.get()?)))
    }

    /// Curator's makeRevocable: from now on, lock nodes of this object carry empty data and are
    /// watched; when another process writes `__REVOKE__` into one (`attemptRevoke`), the emitter
    /// receives `'revoke'` with the owner id of that hold. Cooperative: the owner decides whether
    /// to release. Applies to acquires that start after this call. `ZKR_INVALID_ARGUMENT` on a
    /// mutex with cohort handoffs.
    #[napi]
    pub fn make_revocable(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            let e = self.emitter.clone();
            self.inner.make_revocable(move |owner| {
                e.emit(Event::new("revoke", Out::U64(owner.as_raw())))
            })?;
            Ok(())
        })
    }

    /// Resolves to the lock's nodes in line order (holder first).
    #[napi]
    pub fn participant_nodes<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |m| async move {
            Ok(Out::strings(m.participant_nodes().await?))
        })
    }

    /// The lock path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path().to_string()))
    }
}

owned_lock_methods!(NativeMutex);

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
        sync(&env, || {
            Ok(NativeReadWriteLock {
                inner: InterProcessReadWriteLock::new(&client.inner, &path)?,
            })
        })
    }

    /// A half as a mutex: the write half (exclusive) if `write`, else the read half (shared by
    /// readers; the writer may also take it).
    #[napi]
    pub fn half(
        &self,
        env: Env,
        write: bool,
        emit: EmitFn<'_>,
        lost_policy: Option<String>,
    ) -> napi::Result<NativeMutex> {
        sync(&env, || {
            let half = match write {
                true => self.inner.write_lock(),
                false => self.inner.read_lock(),
            };
            NativeMutex::wrap(half.clone(), emit, lost_policy)
        })
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
        sync(&env, || {
            Ok(NativeSemaphoreMutex {
                inner: Arc::new(InterProcessSemaphoreMutex::new(&client.inner, &path)?),
            })
        })
    }

    /// Resolves to whether it was acquired within `timeout_ms` (`undefined`: no limit).
    #[napi]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |m, t| async move {
            m.acquire(t).await
        })
    }

    /// Releases (`ZKR_NOT_OWNER` if this object does not hold it).
    #[napi]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |m| async move { m.release().await })
    }

    /// Whether this object holds it.
    #[napi]
    pub fn is_acquired_in_this_process(&self, env: Env) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.is_acquired_in_this_process()))
    }

    /// The path of the lease node held, if any.
    #[napi(getter)]
    pub fn lease_node(&self, env: Env) -> napi::Result<Option<String>> {
        sync(&env, || Ok(self.inner.lease_node()))
    }
}

/// A [`LeaseLost`] as JS sees it: `{ reason, state, message }` (`state`: the connection state
/// when the reason is `'STATE'`, else `null`).
fn lease_lost(why: LeaseLost) -> Out {
    let state = match why.state() {
        Some(state) => Out::Str(state.name().to_string()),
        None => Out::Null,
    };
    Out::Object(vec![
        ("reason", Out::Str(why.kind_name().to_string())),
        ("state", state),
        ("message", Out::Str(why.to_string())),
    ])
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
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.path.clone()))
    }

    /// The lease node's czxid.
    #[napi(getter)]
    pub fn czxid(&self, env: Env) -> napi::Result<BigInt> {
        sync(&env, || Ok(BigInt::from(self.czxid)))
    }

    /// Whether it was returned.
    #[napi(getter)]
    pub fn is_returned(&self, env: Env) -> napi::Result<bool> {
        sync(&env, || {
            Ok(self
                .lease
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_none())
        })
    }

    /// Resolves to why the lease can no longer be counted on (the core's
    /// `Lease::lost_signal` under `lost_policy`, watching from this call), or `null` once
    /// `timeout_ms` passed (`undefined`: no limit). Rejects with `ZKR_CLOSED` if the lease was
    /// returned before the call; returning it during the wait does not settle it.
    #[napi]
    pub fn wait_lost<'env>(
        &self,
        env: &'env Env,
        lost_policy: Option<String>,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let policy = args::lost_policy(lost_policy)?;
            let timeout = args::timeout("timeoutMs", timeout_ms)?;
            let signal = match &*self.lease.lock().unwrap_or_else(|e| e.into_inner()) {
                Some(lease) => lease.lost_signal(policy),
                None => {
                    let why = format!("lease {} was returned: it can no longer be lost", self.path);
                    return Err(zkrecipes::Error::Closed(why.into()).into());
                }
            };
            Ok(async move {
                Ok(zkrecipes::timeout::within(timeout, signal)
                    .await
                    .map_or(Out::Null, lease_lost))
            })
        })
    }

    /// Returns the lease (deletes its node); `ZKR_NOT_OWNER` if it was returned already.
    #[napi]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise(env, || {
            let lease = self.lease.lock().unwrap_or_else(|e| e.into_inner()).take();
            let path = self.path.clone();
            Ok(async move {
                let lease = lease.ok_or_else(|| {
                    zkrecipes::Error::NotOwner(
                        format!("return lease {path}: it was returned already").into(),
                    )
                })?;
                lease.release().await
            })
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
        sync(&env, || {
            Ok(NativeSemaphoreV2 {
                inner: InterProcessSemaphoreV2::new(&client.inner, &path, max_leases as usize)?,
            })
        })
    }

    /// Curator's semaphore whose max leases are `count`'s value, read live.
    #[napi(factory)]
    pub fn with_count(
        env: Env,
        client: &NativeClient,
        path: String,
        count: &crate::atomic::NativeSharedCount,
    ) -> napi::Result<Self> {
        sync(&env, || {
            Ok(NativeSemaphoreV2 {
                inner: InterProcessSemaphoreV2::with_count(&client.inner, &path, count.core())?,
            })
        })
    }

    /// Resolves to `qty` leases, or `null` if they were not all acquired within `timeout_ms`.
    #[napi]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        qty: u32,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, move |s, t| async move {
            let leases = s.acquire(qty as usize, t).await?;
            Ok(leases.map(|l| l.into_iter().map(NativeLease::new).collect::<Vec<_>>()))
        })
    }

    /// The lease nodes in sequence order.
    #[napi]
    pub fn participant_nodes<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |s| async move {
            Ok(Out::strings(s.participant_nodes().await?))
        })
    }

    /// The most leases held at once.
    #[napi(getter)]
    pub fn max_leases(&self, env: Env) -> napi::Result<u32> {
        sync(&env, || Ok(self.inner.max_leases() as u32))
    }

    /// The semaphore's path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path().to_string()))
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
        sync(&env, || {
            let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
            Ok(NativeMultiLock {
                inner: InterProcessMultiLock::new(&client.inner, &refs)?,
            })
        })
    }
}

owned_lock_methods!(NativeMultiLock);

/// Curator's Revoker.attemptRevoke: writes `__REVOKE__` into the lock node `node_path` (one of
/// `participantNodes()`) to ask its holder to release; a node already gone is fine.
#[napi]
pub fn attempt_revoke<'env>(
    env: &'env Env,
    client: &NativeClient,
    node_path: String,
) -> napi::Result<Object<'env>> {
    promise_on(env, &client.inner, |c| async move {
        zkrecipes::lock::attempt_revoke(&c, &node_path).await
    })
}

/// `{ acquire(mutex, owner, timeoutMs), release(mutex, owner) }`: a `NativeMutex`'s two hot
/// methods as plain napi callbacks, for `lib/locks.js` (the same bodies as the methods, the same
/// argument conversions). A `#[napi]` method pays napi-rs's borrow bookkeeping on every call: a
/// scope, a guard in a process-wide map and four allocations, about 4,000 instructions per lock
/// cycle (tests/bench/instructions, 2026-12-06). These callbacks borrow the mutex for the
/// synchronous part of the call only, where no JS runs, so there is nothing to guard: the
/// receiver is checked by its class's type tag, as napi-rs checks it.
#[napi]
pub fn mutex_fast_calls(env: &Env) -> napi::Result<Object<'_>> {
    sync(env, || {
        let raw = env.raw();
        // SAFETY: on the JS thread, inside this napi call; out-pointers are live locals, and
        // every status is checked.
        unsafe {
            let mut calls = std::ptr::null_mut();
            napi::check_status!(napi::sys::napi_create_object(raw, &mut calls))?;
            let fns: [(&std::ffi::CStr, napi::sys::napi_callback); 2] = [
                (c"acquire", Some(fast_acquire)),
                (c"release", Some(fast_release)),
            ];
            for (name, cb) in fns {
                let mut f = std::ptr::null_mut();
                napi::check_status!(napi::sys::napi_create_function(
                    raw,
                    name.as_ptr(),
                    name.to_bytes().len() as isize,
                    cb,
                    std::ptr::null_mut(),
                    &mut f,
                ))?;
                napi::check_status!(napi::sys::napi_set_named_property(
                    raw,
                    calls,
                    name.as_ptr(),
                    f
                ))?;
            }
            Ok(Object::from_raw(raw, calls))
        }
    })
}

/// Runs `call` with the `NativeMutex` and the other `N - 1` arguments of a fast call; its
/// Promise, or the error thrown (a panic outside the method's own boundary: `ZKR_INTERNAL`).
///
/// # Safety
/// napi's callback contract: `env` and `info` of a live call on the JS thread.
unsafe fn fast_call<const N: usize>(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
    call: impl FnOnce(
        &NativeMutex,
        &Env,
        &[napi::sys::napi_value],
    ) -> napi::Result<napi::sys::napi_value>,
) -> napi::sys::napi_value {
    use napi::bindgen_prelude::{JsError, TypeTag};
    use napi::sys;
    let e = Env::from_raw(env);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut argc = N;
        let mut argv = [std::ptr::null_mut(); N];
        // SAFETY: the caller's contract; `argv` has room for `argc` values (napi fills the ones
        // not passed with `undefined`).
        unsafe {
            napi::check_status!(sys::napi_get_cb_info(
                env,
                info,
                &mut argc,
                argv.as_mut_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            ))?;
            let mut tagged = false;
            napi::check_status!(sys::napi_check_object_type_tag(
                env,
                argv[0],
                &<NativeMutex as TypeTag>::type_tag(),
                &mut tagged,
            ))?;
            if !tagged {
                return Err(napi::Error::new(
                    napi::Status::InvalidArg,
                    "the first argument must be a NativeMutex",
                ));
            }
            let mut wrapped = std::ptr::null_mut();
            napi::check_status!(sys::napi_unwrap(env, argv[0], &mut wrapped))?;
            // SAFETY: tagged as a NativeMutex, whose instances napi-rs wraps as a pointer to
            // the struct; the JS object (an argument of this call) keeps it alive meanwhile, and
            // no JS runs before the call returns.
            let mutex = &*(wrapped as *const NativeMutex);
            call(mutex, &e, &argv[1..])
        }
    }));
    let thrown = match outcome {
        Ok(Ok(promise)) => return promise,
        Ok(Err(err)) => err,
        Err(panic) => crate::error::internal(&e, &panic),
    };
    // SAFETY: on the JS thread, inside this call: the error becomes its exception.
    unsafe { JsError::from(thrown).throw_into(env) };
    std::ptr::null_mut()
}

/// `acquire(mutex, owner, timeoutMs)` (see [`mutex_fast_calls`]).
unsafe extern "C" fn fast_acquire(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
) -> napi::sys::napi_value {
    use napi::bindgen_prelude::FromNapiValue;
    use napi::JsValue;
    // SAFETY: napi calls this with a live env and callback info; the values are this call's
    // arguments, converted as the `#[napi]` method's are.
    unsafe {
        fast_call::<3>(env, info, |mutex, e, args| {
            let owner = OwnerId::from_napi_value(env, args[0])?;
            let timeout_ms = Option::<f64>::from_napi_value(env, args[1])?;
            Ok(mutex.acquire(e, owner, timeout_ms)?.raw())
        })
    }
}

/// `release(mutex, owner)` (see [`mutex_fast_calls`]).
unsafe extern "C" fn fast_release(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
) -> napi::sys::napi_value {
    use napi::bindgen_prelude::FromNapiValue;
    use napi::JsValue;
    // SAFETY: as in `fast_acquire`.
    unsafe {
        fast_call::<2>(env, info, |mutex, e, args| {
            let owner = OwnerId::from_napi_value(env, args[0])?;
            Ok(mutex.release(e, owner)?.raw())
        })
    }
}
