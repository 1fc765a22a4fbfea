//! Distributed counters: DistributedAtomicLong, DistributedAtomicInteger and SharedCount.
//!
//! cbindgen reads the sources without expanding macros, so the long and int exports are
//! written out one by one; each is a line calling a shared generic helper.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zkrecipes::atomic::{
    AtomicValue, DistributedAtomicInteger, DistributedAtomicLong, PromotedToLock, SharedCount,
    SharedCountEvent, VersionedValue,
};
use zkrecipes::{Client, Error, Result};

use crate::boundary::{
    arg_opt_str, arg_out, arg_ref, arg_str, arg_timeout, block_on, ffi_boundary, ffi_call,
};
use crate::callback::{CallbackThread, Registration, UserData};
use crate::client::{client_arg, zkr_client, zkr_retry_policy};
use crate::status::zkr_status;

/// Tries and times of a counter operation (Curator's AtomicStats).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zkr_atomic_stats {
    /// Compare-and-set tries in optimistic mode.
    pub optimistic_tries: u32,
    /// Tries made while holding the promoted lock.
    pub promoted_lock_tries: u32,
    /// Milliseconds spent in optimistic mode.
    pub optimistic_time_ms: i64,
    /// Milliseconds spent in promoted mode, including the wait for the lock.
    pub promoted_time_ms: i64,
}

/// The result of a Curator-style counter operation (Curator's AtomicValue), for both
/// zkr_atomic_long and zkr_atomic_int (whose values fit). When `succeeded` is false nothing was
/// written, `pre_value` is the last value read and `post_value` is 0: always check it, or use
/// the `_add_and_get` functions, which never fail silently.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zkr_atomic_value {
    /// Whether the operation's write was applied.
    pub succeeded: bool,
    /// The value before the operation.
    pub pre_value: i64,
    /// The value after the operation (0 if it did not succeed).
    pub post_value: i64,
    /// Tries and times.
    pub stats: zkr_atomic_stats,
}

fn value<T: Into<i64>>(v: AtomicValue<T>) -> zkr_atomic_value {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    zkr_atomic_value {
        succeeded: v.succeeded,
        pre_value: v.pre_value.into(),
        post_value: v.post_value.into(),
        stats: zkr_atomic_stats {
            optimistic_tries: v.stats.optimistic_tries,
            promoted_lock_tries: v.stats.promoted_lock_tries,
            optimistic_time_ms: ms(v.stats.optimistic_time),
            promoted_time_ms: ms(v.stats.promoted_time),
        },
    }
}

/// Curator's DistributedAtomicLong: a 64-bit counter in one node (8 bytes, big-endian), shared
/// with every process and language. Thread-safe; concurrent adds through one client are combined
/// into one compare-and-set round.
pub struct zkr_atomic_long {
    counter: DistributedAtomicLong,
}

/// Curator's DistributedAtomicInteger: a 32-bit counter in one node (4 bytes, big-endian).
/// Same operations as zkr_atomic_long.
pub struct zkr_atomic_int {
    counter: DistributedAtomicInteger,
}

/// Reads the optional retry policy and promotion arguments of the `_new_with` functions.
unsafe fn counter_options(
    retry: *const zkr_retry_policy,
    promoted_lock_path: *const c_char,
    promoted_lock_timeout_ms: i64,
) -> Result<(Option<zkrecipes::RetryPolicy>, Option<PromotedToLock>)> {
    let retry = if retry.is_null() {
        None
    } else {
        Some((*retry).to_core()?)
    };
    let promoted = match arg_opt_str(promoted_lock_path, "promoted_lock_path")? {
        None => None,
        Some(p) => {
            let mut b = PromotedToLock::builder().lock_path(p);
            if let Some(t) = arg_timeout(promoted_lock_timeout_ms)? {
                b = b.timeout(t);
            }
            Some(b.build()?)
        }
    };
    Ok((retry, promoted))
}

fn check_open(client: &Client, what: &str, path: &str) -> Result<()> {
    if client.is_closed() {
        Err(Error::Closed(
            format!("{what} {path}: the client is closed").into(),
        ))
    } else {
        Ok(())
    }
}

/// Runs a counter operation returning an AtomicValue into `out`.
fn op_value<'a, H: 'a, T, F, Fut>(
    function: &str,
    handle: *const H,
    out: *mut zkr_atomic_value,
    f: F,
) -> zkr_status
where
    T: Into<i64>,
    F: FnOnce(&'a H) -> Fut,
    Fut: Future<Output = Result<AtomicValue<T>>>,
{
    ffi_call(function, || {
        let h: &'a H = unsafe { arg_ref(handle, "counter") }?;
        let out = unsafe { arg_out(out, "value") }?;
        out.write(value(block_on(f(h))??));
        Ok(())
    })
}

// ---- DistributedAtomicLong ----

/// Makes a 64-bit counter at `path` using the client's retry policy, without promotion (the
/// node is created on the first write). Free with zkr_atomic_long_free.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_atomic_long,
) -> zkr_status {
    atomic_long_new(
        "zkr_atomic_long_new",
        c,
        path,
        std::ptr::null(),
        std::ptr::null(),
        -1,
        out,
    )
}

unsafe fn atomic_long_new(
    function: &str,
    c: *mut zkr_client,
    path: *const c_char,
    retry: *const zkr_retry_policy,
    promoted_lock_path: *const c_char,
    promoted_lock_timeout_ms: i64,
    out: *mut *mut zkr_atomic_long,
) -> zkr_status {
    ffi_call(function, || {
        let client = client_arg(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(out, "out")?;
        let (retry, promoted) =
            counter_options(retry, promoted_lock_path, promoted_lock_timeout_ms)?;
        check_open(client, "counter", path)?;
        let counter = DistributedAtomicLong::new(client, path, retry, promoted)?;
        out.write(Box::into_raw(Box::new(zkr_atomic_long { counter })));
        Ok(())
    })
}

/// zkr_atomic_long_new with Curator's options: `retry` governs the optimistic tries of the
/// Curator-style operations (NULL: the client's policy); `promoted_lock_path` (NULL: none) adds
/// Curator's PromotedToLock fallback, an InterProcessMutex at that path waited for at most
/// `promoted_lock_timeout_ms` (-1: forever).
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_new_with(
    c: *mut zkr_client,
    path: *const c_char,
    retry: *const zkr_retry_policy,
    promoted_lock_path: *const c_char,
    promoted_lock_timeout_ms: i64,
    out: *mut *mut zkr_atomic_long,
) -> zkr_status {
    atomic_long_new(
        "zkr_atomic_long_new_with",
        c,
        path,
        retry,
        promoted_lock_path,
        promoted_lock_timeout_ms,
        out,
    )
}

/// The current value (0 if the node does not exist); `succeeded` is always true and
/// `pre_value == post_value`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_get(
    a: *mut zkr_atomic_long,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_get", a, out, |a| a.counter.get())
}

/// Curator's add: adds `delta` (wrapping on overflow, like Java). Check `out->succeeded`.
/// ZKR_OUTCOME_UNKNOWN if a write's reply was lost and its fate cannot be known.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_add(
    a: *mut zkr_atomic_long,
    delta: i64,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_add", a, out, |a| a.counter.add(delta))
}

/// Curator's subtract: adds -delta. Check `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_subtract(
    a: *mut zkr_atomic_long,
    delta: i64,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_subtract", a, out, |a| {
        a.counter.subtract(delta)
    })
}

/// add(1). Check `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_increment(
    a: *mut zkr_atomic_long,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_increment", a, out, |a| {
        a.counter.increment()
    })
}

/// add(-1). Check `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_decrement(
    a: *mut zkr_atomic_long,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_decrement", a, out, |a| {
        a.counter.decrement()
    })
}

/// Sets `new_value` if the value is `expected` (one try, as Curator). Check `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_compare_and_set(
    a: *mut zkr_atomic_long,
    expected: i64,
    new_value: i64,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_compare_and_set", a, out, |a| {
        a.counter.compare_and_set(expected, new_value)
    })
}

/// Curator's trySet: sets `value` with the optimistic loop (and promotion). Check
/// `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_try_set(
    a: *mut zkr_atomic_long,
    value: i64,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_try_set", a, out, |a| {
        a.counter.try_set(value)
    })
}

/// Sets `value` unconditionally, creating the node if needed.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_force_set(
    a: *mut zkr_atomic_long,
    value: i64,
) -> zkr_status {
    ffi_call("zkr_atomic_long_force_set", || {
        let a = arg_ref(a, "counter")?;
        block_on(a.counter.force_set(value))?
    })
}

/// Creates the node with `value` if it does not exist; `*created` tells whether it did.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_initialize(
    a: *mut zkr_atomic_long,
    value: i64,
    created: *mut bool,
) -> zkr_status {
    ffi_call("zkr_atomic_long_initialize", || {
        let a = arg_ref(a, "counter")?;
        let out = arg_out(created, "created")?;
        out.write(block_on(a.counter.initialize(value))??);
        Ok(())
    })
}

/// Beyond Curator: adds `delta` and returns the new value in `*value`, or an error, never a
/// silent failure. Conflicts are retried (combined with this process's other adds) until
/// `timeout_ms` (-1: no limit beyond the client's connection and retry bounds). Errors:
/// ZKR_OVERFLOW (nothing written), ZKR_TIMEOUT (not applied), ZKR_OUTCOME_UNKNOWN (the write's
/// fate cannot be known), ZKR_CLOSED and the connection errors (not applied).
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_add_and_get(
    a: *mut zkr_atomic_long,
    delta: i64,
    timeout_ms: i64,
    value: *mut i64,
) -> zkr_status {
    ffi_call("zkr_atomic_long_add_and_get", || {
        let a = arg_ref(a, "counter")?;
        let out = arg_out(value, "value")?;
        let timeout = arg_timeout(timeout_ms)?;
        out.write(block_on(a.counter.add_and_get(delta, timeout))??);
        Ok(())
    })
}

/// Frees a counter handle (the node stays). NULL does nothing.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_long_free(a: *mut zkr_atomic_long) {
    ffi_boundary("zkr_atomic_long_free", (), || {
        if !a.is_null() {
            drop(Box::from_raw(a));
        }
    })
}

// ---- DistributedAtomicInteger ----

/// Makes a 32-bit counter at `path` (see zkr_atomic_long_new). Free with zkr_atomic_int_free.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_atomic_int,
) -> zkr_status {
    atomic_int_new(
        "zkr_atomic_int_new",
        c,
        path,
        std::ptr::null(),
        std::ptr::null(),
        -1,
        out,
    )
}

unsafe fn atomic_int_new(
    function: &str,
    c: *mut zkr_client,
    path: *const c_char,
    retry: *const zkr_retry_policy,
    promoted_lock_path: *const c_char,
    promoted_lock_timeout_ms: i64,
    out: *mut *mut zkr_atomic_int,
) -> zkr_status {
    ffi_call(function, || {
        let client = client_arg(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(out, "out")?;
        let (retry, promoted) =
            counter_options(retry, promoted_lock_path, promoted_lock_timeout_ms)?;
        check_open(client, "counter", path)?;
        let counter = DistributedAtomicInteger::new(client, path, retry, promoted)?;
        out.write(Box::into_raw(Box::new(zkr_atomic_int { counter })));
        Ok(())
    })
}

/// zkr_atomic_int_new with Curator's options (see zkr_atomic_long_new_with).
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_new_with(
    c: *mut zkr_client,
    path: *const c_char,
    retry: *const zkr_retry_policy,
    promoted_lock_path: *const c_char,
    promoted_lock_timeout_ms: i64,
    out: *mut *mut zkr_atomic_int,
) -> zkr_status {
    atomic_int_new(
        "zkr_atomic_int_new_with",
        c,
        path,
        retry,
        promoted_lock_path,
        promoted_lock_timeout_ms,
        out,
    )
}

/// The current value (see zkr_atomic_long_get).
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_get(
    a: *mut zkr_atomic_int,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_get", a, out, |a| a.counter.get())
}

/// Curator's add (see zkr_atomic_long_add). Check `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_add(
    a: *mut zkr_atomic_int,
    delta: i32,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_add", a, out, |a| a.counter.add(delta))
}

/// Curator's subtract. Check `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_subtract(
    a: *mut zkr_atomic_int,
    delta: i32,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_subtract", a, out, |a| {
        a.counter.subtract(delta)
    })
}

/// add(1). Check `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_increment(
    a: *mut zkr_atomic_int,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_increment", a, out, |a| {
        a.counter.increment()
    })
}

/// add(-1). Check `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_decrement(
    a: *mut zkr_atomic_int,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_decrement", a, out, |a| {
        a.counter.decrement()
    })
}

/// Sets `new_value` if the value is `expected` (one try). Check `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_compare_and_set(
    a: *mut zkr_atomic_int,
    expected: i32,
    new_value: i32,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_compare_and_set", a, out, |a| {
        a.counter.compare_and_set(expected, new_value)
    })
}

/// Curator's trySet. Check `out->succeeded`.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_try_set(
    a: *mut zkr_atomic_int,
    value: i32,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_try_set", a, out, |a| {
        a.counter.try_set(value)
    })
}

/// Sets `value` unconditionally, creating the node if needed.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_force_set(
    a: *mut zkr_atomic_int,
    value: i32,
) -> zkr_status {
    ffi_call("zkr_atomic_int_force_set", || {
        let a = arg_ref(a, "counter")?;
        block_on(a.counter.force_set(value))?
    })
}

/// Creates the node with `value` if it does not exist; `*created` tells whether it did.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_initialize(
    a: *mut zkr_atomic_int,
    value: i32,
    created: *mut bool,
) -> zkr_status {
    ffi_call("zkr_atomic_int_initialize", || {
        let a = arg_ref(a, "counter")?;
        let out = arg_out(created, "created")?;
        out.write(block_on(a.counter.initialize(value))??);
        Ok(())
    })
}

/// Adds `delta` and returns the new value, or an error (see zkr_atomic_long_add_and_get).
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_add_and_get(
    a: *mut zkr_atomic_int,
    delta: i32,
    timeout_ms: i64,
    value: *mut i32,
) -> zkr_status {
    ffi_call("zkr_atomic_int_add_and_get", || {
        let a = arg_ref(a, "counter")?;
        let out = arg_out(value, "value")?;
        let timeout = arg_timeout(timeout_ms)?;
        out.write(block_on(a.counter.add_and_get(delta, timeout))??);
        Ok(())
    })
}

/// Frees a counter handle (the node stays). NULL does nothing.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_atomic_int_free(a: *mut zkr_atomic_int) {
    ffi_boundary("zkr_atomic_int_free", (), || {
        if !a.is_null() {
            drop(Box::from_raw(a));
        }
    })
}

// ---- SharedCount ----

/// A value with the node's data version it was read at (Curator's VersionedValue).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct zkr_versioned_value {
    /// The node's data version (-1 before the count is started).
    pub version: i32,
    /// The value.
    pub value: i32,
}

/// Called when a shared count changes (by any client, this one included), with the new value
/// and its version. Connection changes are not reported here: use
/// zkr_client_add_state_listener. It runs on a thread of the library dedicated to this count's
/// callbacks, one call at a time, in order; any zkr_ function may be called inside. It must not
/// throw (C++) or longjmp out.
pub type zkr_shared_count_callback =
    Option<unsafe extern "C" fn(value: zkr_versioned_value, user_data: *mut c_void)>;

/// Curator's SharedCount: a 32-bit integer in one node (4 bytes, big-endian), kept up to date
/// in every client that watches it. Thread-safe.
pub struct zkr_shared_count {
    count: SharedCount,
    callbacks: Arc<CallbackThread>,
    listeners: Mutex<HashMap<u64, Arc<Registration>>>,
}

/// Makes a shared count at `path` whose node zkr_shared_count_start creates with `seed` if it
/// is missing. Free with zkr_shared_count_free.
#[no_mangle]
pub unsafe extern "C" fn zkr_shared_count_new(
    c: *mut zkr_client,
    path: *const c_char,
    seed: i32,
    out: *mut *mut zkr_shared_count,
) -> zkr_status {
    ffi_call("zkr_shared_count_new", || {
        let client = client_arg(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(out, "out")?;
        check_open(client, "shared count", path)?;
        let count = SharedCount::new(client, path, seed)?;
        out.write(Box::into_raw(Box::new(zkr_shared_count {
            count,
            callbacks: CallbackThread::new("zkr-cb-count"),
            listeners: Mutex::new(HashMap::new()),
        })));
        Ok(())
    })
}

/// Creates the node with the seed if missing, reads it and starts watching. Once only
/// (ZKR_INVALID_ARGUMENT the second time; ZKR_CLOSED after close).
#[no_mangle]
pub unsafe extern "C" fn zkr_shared_count_start(sc: *mut zkr_shared_count) -> zkr_status {
    ffi_call("zkr_shared_count_start", || {
        let sc = arg_ref(sc, "shared_count")?;
        block_on(sc.count.start())?
    })
}

/// The count as last seen (the seed before start); no server call.
#[no_mangle]
pub unsafe extern "C" fn zkr_shared_count_get_count(
    sc: *const zkr_shared_count,
    count: *mut i32,
) -> zkr_status {
    ffi_call("zkr_shared_count_get_count", || {
        let sc = arg_ref(sc, "shared_count")?;
        arg_out(count, "count")?.write(sc.count.get_count()?);
        Ok(())
    })
}

/// The count with its data version, for zkr_shared_count_try_set_count.
#[no_mangle]
pub unsafe extern "C" fn zkr_shared_count_get_versioned_value(
    sc: *const zkr_shared_count,
    out: *mut zkr_versioned_value,
) -> zkr_status {
    ffi_call("zkr_shared_count_get_versioned_value", || {
        let sc = arg_ref(sc, "shared_count")?;
        let v = sc.count.get_versioned_value()?;
        arg_out(out, "out")?.write(zkr_versioned_value {
            version: v.version,
            value: v.value,
        });
        Ok(())
    })
}

/// Sets the count whatever it was.
#[no_mangle]
pub unsafe extern "C" fn zkr_shared_count_set_count(
    sc: *mut zkr_shared_count,
    count: i32,
) -> zkr_status {
    ffi_call("zkr_shared_count_set_count", || {
        let sc = arg_ref(sc, "shared_count")?;
        block_on(sc.count.set_count(count))?
    })
}

/// Sets the count to `count` only if it is still at `previous` (from
/// zkr_shared_count_get_versioned_value); `*set` is false if `previous` is stale (the fresh
/// value is then read, for the next try). ZKR_OUTCOME_UNKNOWN if the write's reply was lost.
#[no_mangle]
pub unsafe extern "C" fn zkr_shared_count_try_set_count(
    sc: *mut zkr_shared_count,
    previous: zkr_versioned_value,
    count: i32,
    set: *mut bool,
) -> zkr_status {
    ffi_call("zkr_shared_count_try_set_count", || {
        let sc = arg_ref(sc, "shared_count")?;
        let out = arg_out(set, "set")?;
        let previous = VersionedValue {
            version: previous.version,
            value: previous.value,
        };
        out.write(block_on(sc.count.try_set_count(&previous, count))??);
        Ok(())
    })
}

/// Adds a change listener; `*listener_id` identifies it for zkr_shared_count_remove_listener.
/// `user_data` must stay valid until the listener is removed or the count freed.
///
/// The callback is called on another thread (see its type).
#[no_mangle]
pub unsafe extern "C" fn zkr_shared_count_add_listener(
    sc: *mut zkr_shared_count,
    callback: zkr_shared_count_callback,
    user_data: *mut c_void,
    listener_id: *mut u64,
) -> zkr_status {
    ffi_call("zkr_shared_count_add_listener", || {
        let sc = arg_ref(sc, "shared_count")?;
        let callback = callback.ok_or_else(|| Error::InvalidArgument("callback is NULL".into()))?;
        let out = arg_out(listener_id, "listener_id")?;
        let reg = Registration::new();
        let job_reg = reg.clone();
        let thread = Arc::downgrade(&sc.callbacks);
        let ud = UserData(user_data);
        let mut listeners = sc.listeners.lock().unwrap_or_else(|e| e.into_inner());
        let id = sc.count.add_listener(move |event| {
            let SharedCountEvent::CountChanged(v) = event else {
                return;
            };
            let (Some(thread), true) = (thread.upgrade(), job_reg.is_enabled()) else {
                return;
            };
            let reg = job_reg.clone();
            let v = zkr_versioned_value {
                version: v.version,
                value: v.value,
            };
            thread.post(Box::new(move || {
                let ud = ud;
                reg.run(|| callback(v, ud.0))
            }));
        });
        listeners.insert(id, reg);
        out.write(id);
        Ok(())
    })
}

/// Removes a change listener. When this returns, the callback is not running (unless this is
/// called from inside it) and will not run again. ZKR_INVALID_ARGUMENT for an unknown id.
#[no_mangle]
pub unsafe extern "C" fn zkr_shared_count_remove_listener(
    sc: *mut zkr_shared_count,
    listener_id: u64,
) -> zkr_status {
    ffi_call("zkr_shared_count_remove_listener", || {
        let sc = arg_ref(sc, "shared_count")?;
        let reg = sc
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&listener_id);
        match reg {
            Some(reg) => {
                sc.count.remove_listener(listener_id);
                reg.disable();
                Ok(())
            }
            None => Err(Error::InvalidArgument(
                format!("no listener with id {listener_id} on this shared count").into(),
            )),
        }
    })
}

/// Stops watching and drops the listeners (the node stays). Closing twice is ZKR_OK; later
/// calls other than the getters return ZKR_CLOSED.
#[no_mangle]
pub unsafe extern "C" fn zkr_shared_count_close(sc: *mut zkr_shared_count) -> zkr_status {
    ffi_call("zkr_shared_count_close", || {
        let sc = arg_ref(sc, "shared_count")?;
        disable_listeners(sc);
        sc.count.close();
        Ok(())
    })
}

fn disable_listeners(sc: &zkr_shared_count) {
    let listeners: Vec<(u64, Arc<Registration>)> = sc
        .listeners
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .drain()
        .collect();
    for (id, reg) in listeners {
        sc.count.remove_listener(id);
        reg.disable();
    }
}

/// Frees a shared count: removes its listeners (waiting for a running one, unless called from
/// inside it) and closes it. NULL does nothing.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_shared_count_free(sc: *mut zkr_shared_count) {
    ffi_boundary("zkr_shared_count_free", (), || {
        if sc.is_null() {
            return;
        }
        let sc = Box::from_raw(sc);
        disable_listeners(&sc);
        sc.count.close();
        sc.callbacks.shutdown();
    })
}
