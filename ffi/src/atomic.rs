//! Distributed counters: DistributedAtomicLong, DistributedAtomicInteger and SharedCount.
//!
//! cbindgen reads the sources without expanding macros, so the long and int exports are
//! written out one by one; each is one call of a generic helper.

use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::Duration;

use zkrecipes::atomic::{
    AtomicStats, AtomicValue, DistributedAtomicInteger, DistributedAtomicLong, PromotedToLock,
    SharedCount, SharedCountEvent, VersionedValue,
};
use zkrecipes::{Client, ListenerId, Result, RetryPolicy};

use crate::boundary::{
    arg_opt_str, arg_ref, arg_timeout, handle_call, handle_out, recipe_new, wait,
};
use crate::callback::{CCallback, CallbackType, Closing, Listeners, Listening, Slot, UserData};
use crate::client::zkr_client;
use crate::handle::{free_handle, handle, Handle};
use crate::options::zkr_retry_policy;
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

impl From<&AtomicStats> for zkr_atomic_stats {
    fn from(s: &AtomicStats) -> zkr_atomic_stats {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        zkr_atomic_stats {
            optimistic_tries: s.optimistic_tries,
            promoted_lock_tries: s.promoted_lock_tries,
            optimistic_time_ms: ms(s.optimistic_time),
            promoted_time_ms: ms(s.promoted_time),
        }
    }
}

pub(crate) fn value<T: Into<i64>>(v: AtomicValue<T>) -> zkr_atomic_value {
    zkr_atomic_value {
        succeeded: v.succeeded,
        pre_value: v.pre_value.into(),
        post_value: v.post_value.into(),
        stats: zkr_atomic_stats::from(&v.stats),
    }
}

/// Curator's DistributedAtomicLong: a 64-bit counter in one node (8 bytes, big-endian), shared
/// with every process and language. Thread-safe; concurrent adds through one client are combined
/// into one compare-and-set round.
pub struct zkr_atomic_long {
    pub(crate) counter: DistributedAtomicLong,
}

handle!(zkr_atomic_long, "counter");

/// Curator's DistributedAtomicInteger: a 32-bit counter in one node (4 bytes, big-endian).
/// Same operations as zkr_atomic_long.
pub struct zkr_atomic_int {
    pub(crate) counter: DistributedAtomicInteger,
}

handle!(zkr_atomic_int, "counter");

pub(crate) type MakeCounter<H> =
    fn(&Client, &str, Option<RetryPolicy>, Option<PromotedToLock>) -> Result<H>;

/// The options of the `_new_with` functions (the plain `_new` has none).
pub(crate) struct CounterOptions {
    pub(crate) retry: *const zkr_retry_policy,
    pub(crate) lock_path: *const c_char,
    pub(crate) lock_timeout_ms: i64,
}

pub(crate) const NO_OPTIONS: CounterOptions = CounterOptions {
    retry: std::ptr::null(),
    lock_path: std::ptr::null(),
    lock_timeout_ms: -1,
};

/// The `_new` and `_new_with` of both counters (and of zkr_atomic_bytes).
pub(crate) fn counter_new<H: Handle>(
    function: &str,
    c: *mut zkr_client,
    path: *const c_char,
    o: CounterOptions,
    out: *mut *mut H,
    make: MakeCounter<H>,
) -> zkr_status {
    recipe_new(function, c, path, out, |c, path| {
        let retry = match o.retry.is_null() {
            true => None,
            false => Some(arg_ref(o.retry, "retry")?.to_core()?),
        };
        let promoted = match arg_opt_str(o.lock_path, "promoted_lock_path")? {
            None => None,
            Some(p) => {
                let mut b = PromotedToLock::builder().lock_path(p);
                if let Some(t) = arg_timeout(o.lock_timeout_ms)? {
                    b = b.timeout(t);
                }
                Some(b.build()?)
            }
        };
        make(c, path, retry, promoted)
    })
}

/// A Curator-style operation returning an AtomicValue, into `*out`.
fn op_value<H: Handle, T: Into<i64>>(
    function: &str,
    handle: *const H,
    out: *mut zkr_atomic_value,
    op: impl FnOnce(&H) -> Result<AtomicValue<T>>,
) -> zkr_status {
    handle_out(function, handle, out, "value", |h| Ok(value(op(h)?)))
}

// ---- DistributedAtomicLong ----

fn make_long(
    c: &Client,
    path: &str,
    retry: Option<RetryPolicy>,
    promoted: Option<PromotedToLock>,
) -> Result<zkr_atomic_long> {
    Ok(zkr_atomic_long {
        counter: DistributedAtomicLong::new(c, path, retry, promoted)?,
    })
}

/// Makes a 64-bit counter at `path` using the client's retry policy, without promotion (the
/// node is created on the first write). Free with zkr_atomic_long_free.
#[no_mangle]
pub extern "C" fn zkr_atomic_long_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_atomic_long,
) -> zkr_status {
    counter_new("zkr_atomic_long_new", c, path, NO_OPTIONS, out, make_long)
}

/// zkr_atomic_long_new with Curator's options: `retry` governs the optimistic tries of the
/// Curator-style operations (NULL: the client's policy); `promoted_lock_path` (NULL: none) adds
/// Curator's PromotedToLock fallback, an InterProcessMutex at that path waited for at most
/// `promoted_lock_timeout_ms` (-1: forever).
#[no_mangle]
pub extern "C" fn zkr_atomic_long_new_with(
    c: *mut zkr_client,
    path: *const c_char,
    retry: *const zkr_retry_policy,
    promoted_lock_path: *const c_char,
    promoted_lock_timeout_ms: i64,
    out: *mut *mut zkr_atomic_long,
) -> zkr_status {
    let o = CounterOptions {
        retry,
        lock_path: promoted_lock_path,
        lock_timeout_ms: promoted_lock_timeout_ms,
    };
    counter_new("zkr_atomic_long_new_with", c, path, o, out, make_long)
}

/// The current value (0 if the node does not exist); `succeeded` is always true and
/// `pre_value == post_value`. ZKR_CORRUPTED_DATA if the node holds fewer than 8 bytes.
#[no_mangle]
pub extern "C" fn zkr_atomic_long_get(
    a: *mut zkr_atomic_long,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_get", a, out, |a| wait(a.counter.get()))
}

/// Curator's add: adds `delta`. Check `out->succeeded`. Where Curator wraps on overflow (like
/// Java), this is ZKR_OVERFLOW and nothing is written (so are subtract, increment, decrement).
/// ZKR_OUTCOME_UNKNOWN if a write's reply was lost and its fate cannot be known.
#[no_mangle]
pub extern "C" fn zkr_atomic_long_add(
    a: *mut zkr_atomic_long,
    delta: i64,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_add", a, out, |a| {
        wait(a.counter.add(delta))
    })
}

/// Curator's subtract: adds -delta. Check `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_long_subtract(
    a: *mut zkr_atomic_long,
    delta: i64,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_subtract", a, out, |a| {
        wait(a.counter.subtract(delta))
    })
}

/// add(1). Check `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_long_increment(
    a: *mut zkr_atomic_long,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_increment", a, out, |a| {
        wait(a.counter.increment())
    })
}

/// add(-1). Check `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_long_decrement(
    a: *mut zkr_atomic_long,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_decrement", a, out, |a| {
        wait(a.counter.decrement())
    })
}

/// Sets `new_value` if the value is `expected` (one try, as Curator). Check `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_long_compare_and_set(
    a: *mut zkr_atomic_long,
    expected: i64,
    new_value: i64,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    let f = "zkr_atomic_long_compare_and_set";
    op_value(f, a, out, |a| {
        wait(a.counter.compare_and_set(expected, new_value))
    })
}

/// Curator's trySet: sets `value` with the optimistic loop (and promotion). Check
/// `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_long_try_set(
    a: *mut zkr_atomic_long,
    value: i64,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_long_try_set", a, out, |a| {
        wait(a.counter.try_set(value))
    })
}

/// Sets `value` unconditionally, creating the node if needed.
/// After a lost reply it is resent only if certainly not applied (the node unchanged, or one other
/// write further): ZKR_OUTCOME_UNKNOWN when the node moved on further, is gone or cannot be read
/// again (ours may have been applied and overwritten since; Curator resends it blindly, over any
/// write that landed after it).
#[no_mangle]
pub extern "C" fn zkr_atomic_long_force_set(a: *mut zkr_atomic_long, value: i64) -> zkr_status {
    handle_call("zkr_atomic_long_force_set", a, |a| {
        wait(a.counter.force_set(value))
    })
}

/// Creates the node with `value` if it does not exist; `*created` tells whether it did.
#[no_mangle]
pub extern "C" fn zkr_atomic_long_initialize(
    a: *mut zkr_atomic_long,
    value: i64,
    created: *mut bool,
) -> zkr_status {
    let f = "zkr_atomic_long_initialize";
    handle_out(f, a, created, "created", |a| {
        wait(a.counter.initialize(value))
    })
}

/// Beyond Curator: adds `delta` and returns the new value in `*value`, or an error, never a
/// silent failure. Conflicts are retried (combined with this process's other adds) until
/// `timeout_ms` (-1: no limit beyond the client's connection and retry bounds). Errors:
/// ZKR_OVERFLOW (nothing written), ZKR_TIMEOUT (not applied), ZKR_OUTCOME_UNKNOWN (the write's
/// fate cannot be known), ZKR_CLOSED and the connection errors (not applied).
#[no_mangle]
pub extern "C" fn zkr_atomic_long_add_and_get(
    a: *mut zkr_atomic_long,
    delta: i64,
    timeout_ms: i64,
    value: *mut i64,
) -> zkr_status {
    handle_out("zkr_atomic_long_add_and_get", a, value, "value", |a| {
        wait(a.counter.add_and_get(delta, arg_timeout(timeout_ms)?))
    })
}

/// Frees a counter handle (the node stays). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_atomic_long_free(a: *mut zkr_atomic_long) {
    free_handle("zkr_atomic_long_free", a)
}

// ---- DistributedAtomicInteger ----

fn make_int(
    c: &Client,
    path: &str,
    retry: Option<RetryPolicy>,
    promoted: Option<PromotedToLock>,
) -> Result<zkr_atomic_int> {
    Ok(zkr_atomic_int {
        counter: DistributedAtomicInteger::new(c, path, retry, promoted)?,
    })
}

/// Makes a 32-bit counter at `path` (see zkr_atomic_long_new). Free with zkr_atomic_int_free.
#[no_mangle]
pub extern "C" fn zkr_atomic_int_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_atomic_int,
) -> zkr_status {
    counter_new("zkr_atomic_int_new", c, path, NO_OPTIONS, out, make_int)
}

/// zkr_atomic_int_new with Curator's options (see zkr_atomic_long_new_with).
#[no_mangle]
pub extern "C" fn zkr_atomic_int_new_with(
    c: *mut zkr_client,
    path: *const c_char,
    retry: *const zkr_retry_policy,
    promoted_lock_path: *const c_char,
    promoted_lock_timeout_ms: i64,
    out: *mut *mut zkr_atomic_int,
) -> zkr_status {
    let o = CounterOptions {
        retry,
        lock_path: promoted_lock_path,
        lock_timeout_ms: promoted_lock_timeout_ms,
    };
    counter_new("zkr_atomic_int_new_with", c, path, o, out, make_int)
}

/// The current value (see zkr_atomic_long_get).
#[no_mangle]
pub extern "C" fn zkr_atomic_int_get(
    a: *mut zkr_atomic_int,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_get", a, out, |a| wait(a.counter.get()))
}

/// Curator's add (see zkr_atomic_long_add). Check `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_int_add(
    a: *mut zkr_atomic_int,
    delta: i32,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_add", a, out, |a| wait(a.counter.add(delta)))
}

/// Curator's subtract. Check `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_int_subtract(
    a: *mut zkr_atomic_int,
    delta: i32,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_subtract", a, out, |a| {
        wait(a.counter.subtract(delta))
    })
}

/// add(1). Check `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_int_increment(
    a: *mut zkr_atomic_int,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_increment", a, out, |a| {
        wait(a.counter.increment())
    })
}

/// add(-1). Check `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_int_decrement(
    a: *mut zkr_atomic_int,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_decrement", a, out, |a| {
        wait(a.counter.decrement())
    })
}

/// Sets `new_value` if the value is `expected` (one try). Check `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_int_compare_and_set(
    a: *mut zkr_atomic_int,
    expected: i32,
    new_value: i32,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    let f = "zkr_atomic_int_compare_and_set";
    op_value(f, a, out, |a| {
        wait(a.counter.compare_and_set(expected, new_value))
    })
}

/// Curator's trySet. Check `out->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_int_try_set(
    a: *mut zkr_atomic_int,
    value: i32,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    op_value("zkr_atomic_int_try_set", a, out, |a| {
        wait(a.counter.try_set(value))
    })
}

/// Sets `value` unconditionally, creating the node if needed.
/// After a lost reply it is resent only if certainly not applied (the node unchanged, or one other
/// write further): ZKR_OUTCOME_UNKNOWN when the node moved on further, is gone or cannot be read
/// again (ours may have been applied and overwritten since; Curator resends it blindly, over any
/// write that landed after it).
#[no_mangle]
pub extern "C" fn zkr_atomic_int_force_set(a: *mut zkr_atomic_int, value: i32) -> zkr_status {
    handle_call("zkr_atomic_int_force_set", a, |a| {
        wait(a.counter.force_set(value))
    })
}

/// Creates the node with `value` if it does not exist; `*created` tells whether it did.
#[no_mangle]
pub extern "C" fn zkr_atomic_int_initialize(
    a: *mut zkr_atomic_int,
    value: i32,
    created: *mut bool,
) -> zkr_status {
    let f = "zkr_atomic_int_initialize";
    handle_out(f, a, created, "created", |a| {
        wait(a.counter.initialize(value))
    })
}

/// Adds `delta` and returns the new value, or an error (see zkr_atomic_long_add_and_get).
#[no_mangle]
pub extern "C" fn zkr_atomic_int_add_and_get(
    a: *mut zkr_atomic_int,
    delta: i32,
    timeout_ms: i64,
    value: *mut i32,
) -> zkr_status {
    handle_out("zkr_atomic_int_add_and_get", a, value, "value", |a| {
        wait(a.counter.add_and_get(delta, arg_timeout(timeout_ms)?))
    })
}

/// Frees a counter handle (the node stays). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_atomic_int_free(a: *mut zkr_atomic_int) {
    free_handle("zkr_atomic_int_free", a)
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

impl From<VersionedValue<i32>> for zkr_versioned_value {
    fn from(v: VersionedValue<i32>) -> zkr_versioned_value {
        zkr_versioned_value {
            version: v.version,
            value: v.value,
        }
    }
}

/// Called when a shared count changes (by any client, this one included), with the new value
/// and its version. Connection changes are not reported here: use
/// zkr_client_add_state_listener. It runs on a library thread, one call at a time, in order with
/// the count's other listeners; any zkr_ function may be called inside. It must not throw (C++)
/// or longjmp out.
pub type zkr_shared_count_callback =
    Option<unsafe extern "C" fn(value: zkr_versioned_value, user_data: *mut c_void)>;

/// Called when the count's node holds data that is not a count (someone wrote other than 4 bytes
/// into it): `status` is ZKR_CORRUPTED_DATA and `version` the node's data version. Until a valid
/// value is written (the change callbacks hear it then), zkr_shared_count_get_count and
/// zkr_shared_count_get_versioned_value fail with ZKR_CORRUPTED_DATA, never returning the stale
/// count. It runs like zkr_shared_count_callback, in order with it. It must not throw (C++) or
/// longjmp out.
pub type zkr_shared_count_error_callback =
    Option<unsafe extern "C" fn(status: zkr_status, version: i32, user_data: *mut c_void)>;

/// Curator's SharedCount: a 32-bit integer in one node (4 bytes, big-endian), kept up to date
/// in every client that watches it. Thread-safe.
pub struct zkr_shared_count {
    pub(crate) count: SharedCount,
    listeners: Listeners<zkr_shared_count_callback>,
    errors: Arc<Slot<zkr_shared_count_error_callback>>,
    errors_listener: ListenerId,
}

handle!(zkr_shared_count, "shared_count", |sc| {
    sc.close();
});

impl zkr_shared_count {
    fn new(count: SharedCount) -> zkr_shared_count {
        let errors: Arc<Slot<zkr_shared_count_error_callback>> = Arc::new(Slot::new());
        let slot = Arc::downgrade(&errors);
        let errors_listener = count.add_listener(move |event| {
            let (SharedCountEvent::CorruptedData { version }, Some(s)) = (event, slot.upgrade())
            else {
                return;
            };
            let status = zkr_status::ZKR_CORRUPTED_DATA;
            s.fire((status, version));
        });
        zkr_shared_count {
            count,
            listeners: Listeners::default(),
            errors,
            errors_listener,
        }
    }

    fn close(&self) {
        self.unregister_all();
        let _ = self.count.remove_listener(self.errors_listener); // our own id
        self.errors.set(None, UserData(std::ptr::null_mut()));
        self.count.close();
    }
}

impl Closing for zkr_shared_count {
    fn close_handle(&self) -> Result<()> {
        self.close();
        Ok(())
    }
}

impl Listening for zkr_shared_count {
    type Callback = zkr_shared_count_callback;

    fn listeners(&self) -> &Listeners<zkr_shared_count_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<CountFn>>) -> Result<ListenerId> {
        Ok(self.count.add_listener(move |event| {
            if let SharedCountEvent::CountChanged(v) = event {
                cb.call((v.into(),));
            }
        }))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.count.remove_listener(id)
    }
}

type CountFn = <zkr_shared_count_callback as CallbackType>::Fn;

/// Makes a shared count at `path` whose node zkr_shared_count_start creates with `seed` if it
/// is missing. Free with zkr_shared_count_free.
#[no_mangle]
pub extern "C" fn zkr_shared_count_new(
    c: *mut zkr_client,
    path: *const c_char,
    seed: i32,
    out: *mut *mut zkr_shared_count,
) -> zkr_status {
    recipe_new("zkr_shared_count_new", c, path, out, |c, path| {
        Ok(zkr_shared_count::new(SharedCount::new(c, path, seed)?))
    })
}

/// Creates the node with the seed if missing, reads it and starts watching. Once only
/// (ZKR_INVALID_ARGUMENT the second time; ZKR_CLOSED after close).
#[no_mangle]
pub extern "C" fn zkr_shared_count_start(sc: *mut zkr_shared_count) -> zkr_status {
    handle_call("zkr_shared_count_start", sc, |sc| wait(sc.count.start()))
}

/// The count as last seen (the seed before start); no server call. ZKR_CORRUPTED_DATA while the
/// node holds data that is not a count (see zkr_shared_count_error_callback).
#[no_mangle]
pub extern "C" fn zkr_shared_count_get_count(
    sc: *const zkr_shared_count,
    count: *mut i32,
) -> zkr_status {
    let f = "zkr_shared_count_get_count";
    handle_out(f, sc, count, "count", |sc| sc.count.get_count())
}

/// The count with its data version, for zkr_shared_count_try_set_count.
#[no_mangle]
pub extern "C" fn zkr_shared_count_get_versioned_value(
    sc: *const zkr_shared_count,
    out: *mut zkr_versioned_value,
) -> zkr_status {
    let f = "zkr_shared_count_get_versioned_value";
    handle_out(f, sc, out, "out", |sc| {
        Ok(sc.count.get_versioned_value()?.into())
    })
}

/// Sets the count whatever it was.
/// After a lost reply it is resent only if certainly not applied (the node unchanged, or one other
/// write further): ZKR_OUTCOME_UNKNOWN when the node moved on further, is gone or cannot be read
/// again (ours may have been applied and overwritten since; Curator resends it blindly, over any
/// write that landed after it).
#[no_mangle]
pub extern "C" fn zkr_shared_count_set_count(sc: *mut zkr_shared_count, count: i32) -> zkr_status {
    handle_call("zkr_shared_count_set_count", sc, |sc| {
        wait(sc.count.set_count(count))
    })
}

/// Sets the count to `count` only if it is still at `previous` (from
/// zkr_shared_count_get_versioned_value); `*set` is false if `previous` is stale (the fresh
/// value is then read, for the next try). ZKR_OUTCOME_UNKNOWN if the write's reply was lost.
#[no_mangle]
pub extern "C" fn zkr_shared_count_try_set_count(
    sc: *mut zkr_shared_count,
    previous: zkr_versioned_value,
    count: i32,
    set: *mut bool,
) -> zkr_status {
    let previous = VersionedValue {
        version: previous.version,
        value: previous.value,
    };
    handle_out("zkr_shared_count_try_set_count", sc, set, "set", |sc| {
        wait(sc.count.try_set_count(&previous, count))
    })
}

/// Sets (replaces) the callback called when the count's node holds data that is not a count; a
/// NULL callback removes it. When this returns, the previous callback is not running (unless
/// this is called from inside it) and will not run again, so its user_data may be freed.
///
/// The callback is called on another thread (see its type).
#[no_mangle]
pub extern "C" fn zkr_shared_count_set_error_callback(
    sc: *mut zkr_shared_count,
    callback: zkr_shared_count_error_callback,
    user_data: *mut c_void,
) -> zkr_status {
    handle_call("zkr_shared_count_set_error_callback", sc, |sc| {
        sc.errors.set(callback, UserData(user_data));
        Ok(())
    })
}
