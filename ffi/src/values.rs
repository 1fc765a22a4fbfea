//! Bytes recipes and cached counters: Curator's SharedValue (`zkr_shared_value`),
//! DistributedAtomicValue (`zkr_atomic_bytes`), CachedAtomicLong and CachedAtomicInteger
//! (`zkr_cached_atomic_long`, `zkr_cached_atomic_int`).

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use zkrecipes::atomic::{
    AtomicValue, CachedAtomicInteger, CachedAtomicLong, DistributedAtomicValue, PromotedToLock,
    SharedValue, SharedValueEvent, VersionedValue,
};
use zkrecipes::{Client, ListenerId, Result, RetryPolicy};

use crate::atomic::{
    counter_new, value, zkr_atomic_int, zkr_atomic_long, zkr_atomic_stats, zkr_atomic_value,
    CounterOptions, NO_OPTIONS,
};
use crate::boundary::{
    arg_out, arg_out_opt, arg_slice, ffi_call, handle_call, handle_out, recipe_new, wait,
};
use crate::callback::{CCallback, CallbackType, Closing, Listeners, Listening};
use crate::client::zkr_client;
use crate::handle::{free_handle, handle, handle_ref, new_handle};
use crate::options::zkr_retry_policy;
use crate::status::zkr_status;
use crate::types::{free_returned, zkr_buffer};

// ---- SharedValue ----

/// Called when a shared value changes (by any client, this one included), with its new data
/// version and bytes: `data` holds `len` bytes (NULL when `len` is 0), borrowed for the call
/// only (copy what you keep). Connection changes are not reported here: use
/// zkr_client_add_state_listener (after a reconnection the value is read again, and this is
/// called if it moved meanwhile). It runs on a library thread, one call at a time, in order
/// with the value's other listeners; any zkr_ function may be called inside. It must not throw
/// (C++) or longjmp out.
pub type zkr_shared_value_callback =
    Option<unsafe extern "C" fn(version: i32, data: *const u8, len: usize, user_data: *mut c_void)>;

/// Curator's SharedValue: bytes in one node, kept up to date in every client that watches it,
/// with versioned (compare-and-set) writes. zkr_shared_count is this over a 4-byte int; the
/// node is shared with Curator's SharedValue. Thread-safe.
pub struct zkr_shared_value {
    value: SharedValue,
    listeners: Listeners<zkr_shared_value_callback>,
}

handle!(zkr_shared_value, "shared_value", |sv| {
    sv.close();
});

impl zkr_shared_value {
    fn close(&self) {
        self.unregister_all();
        self.value.close();
    }
}

impl Closing for zkr_shared_value {
    fn close_handle(&self) -> Result<()> {
        self.close();
        Ok(())
    }
}

type ValueFn = <zkr_shared_value_callback as CallbackType>::Fn;

impl Listening for zkr_shared_value {
    type Callback = zkr_shared_value_callback;

    fn listeners(&self) -> &Listeners<zkr_shared_value_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<ValueFn>>) -> Result<ListenerId> {
        Ok(self.value.add_listener(move |event| {
            if let SharedValueEvent::ValueChanged(v) = event {
                let data = match v.value.is_empty() {
                    true => std::ptr::null(),
                    false => v.value.as_ptr(),
                };
                cb.call((v.version, data, v.value.len()));
            }
        }))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.value.remove_listener(id)
    }
}

/// Makes a shared value at `path` whose node zkr_shared_value_start creates with the
/// `seed_len` bytes of `seed` (`seed` may be NULL when `seed_len` is 0) if it is missing. Free
/// with zkr_shared_value_free.
#[no_mangle]
pub extern "C" fn zkr_shared_value_new(
    c: *mut zkr_client,
    path: *const c_char,
    seed: *const u8,
    seed_len: usize,
    out: *mut *mut zkr_shared_value,
) -> zkr_status {
    recipe_new("zkr_shared_value_new", c, path, out, |c, path| {
        let seed = arg_slice(seed, seed_len, "seed")?;
        Ok(zkr_shared_value {
            value: SharedValue::new(c, path, seed)?,
            listeners: Listeners::default(),
        })
    })
}

/// Creates the node with the seed if missing (parents as persistent nodes), reads it and starts
/// watching. Once only (ZKR_INVALID_ARGUMENT the second time; ZKR_CLOSED after close). The node
/// must be a persistent leaf (ZKR_INVALID_ARGUMENT otherwise).
#[no_mangle]
pub extern "C" fn zkr_shared_value_start(sv: *mut zkr_shared_value) -> zkr_status {
    handle_call("zkr_shared_value_start", sv, |sv| wait(sv.value.start()))
}

/// The value as last seen (the seed before start) in `*value` (free with zkr_buffer_free) and,
/// if `version` is not NULL, its data version (-1 before start); no server call. Pass both to
/// zkr_shared_value_try_set_value.
#[no_mangle]
pub extern "C" fn zkr_shared_value_get_value(
    sv: *const zkr_shared_value,
    value: *mut *mut zkr_buffer,
    version: *mut i32,
) -> zkr_status {
    handle_out("zkr_shared_value_get_value", sv, value, "value", |sv| {
        let v = sv.value.get_versioned_value();
        if let Some(out) = arg_out_opt(version) {
            out.write(v.version);
        }
        Ok(zkr_buffer::from_vec(v.value))
    })
}

/// Sets the value to the `len` bytes of `data` whatever it was (ZKR_INVALID_ARGUMENT before
/// start, ZKR_CLOSED after close).
/// After a lost reply it is resent only if certainly not applied (the node unchanged, or one other
/// write further): ZKR_OUTCOME_UNKNOWN when the node moved on further, is gone or cannot be read
/// again (ours may have been applied and overwritten since; Curator resends it blindly, over any
/// write that landed after it).
#[no_mangle]
pub extern "C" fn zkr_shared_value_set_value(
    sv: *mut zkr_shared_value,
    data: *const u8,
    len: usize,
) -> zkr_status {
    handle_call("zkr_shared_value_set_value", sv, |sv| {
        wait(sv.value.set_value(arg_slice(data, len, "data")?))
    })
}

/// Sets the value to the `len` bytes of `data` only if it is still at `previous_version` with
/// the `previous_len` bytes of `previous` (both from zkr_shared_value_get_value); `*set` is
/// false if they are stale (the fresh value is then read, for the next try).
/// ZKR_OUTCOME_UNKNOWN if the write's reply was lost and its fate cannot be known; ZKR_OVERFLOW
/// at data version -1 (where Curator throws IllegalTrySetVersionException).
#[no_mangle]
pub extern "C" fn zkr_shared_value_try_set_value(
    sv: *mut zkr_shared_value,
    previous_version: i32,
    previous: *const u8,
    previous_len: usize,
    data: *const u8,
    len: usize,
    set: *mut bool,
) -> zkr_status {
    handle_out("zkr_shared_value_try_set_value", sv, set, "set", |sv| {
        let previous = VersionedValue {
            version: previous_version,
            value: arg_slice(previous, previous_len, "previous")?.to_vec(),
        };
        let data = arg_slice(data, len, "data")?;
        wait(sv.value.try_set_value(&previous, data))
    })
}

// ---- DistributedAtomicValue ----

/// The result of a zkr_atomic_bytes operation (Curator's AtomicValue of byte[]), owned by you:
/// free it with zkr_atomic_bytes_result_free. When `succeeded` is false nothing was written,
/// `pre_value` is the last value read and `post_value` is NULL.
#[repr(C)]
pub struct zkr_atomic_bytes_result {
    /// Whether the operation's write was applied.
    pub succeeded: bool,
    /// The bytes before the operation; NULL if the node did not exist (Curator's null).
    pub pre_value: *mut zkr_buffer,
    /// The bytes after it; NULL if it did not succeed or the node does not exist.
    pub post_value: *mut zkr_buffer,
    /// Tries and times.
    pub stats: zkr_atomic_stats,
}

fn bytes_result(v: AtomicValue<Option<Vec<u8>>>) -> *mut zkr_atomic_bytes_result {
    let buffer = |b: Option<Vec<u8>>| b.map_or(std::ptr::null_mut(), zkr_buffer::from_vec);
    Box::into_raw(Box::new(zkr_atomic_bytes_result {
        succeeded: v.succeeded,
        stats: zkr_atomic_stats::from(&v.stats),
        pre_value: buffer(v.pre_value),
        post_value: buffer(v.post_value),
    }))
}

/// Frees a result and its buffers. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_atomic_bytes_result_free(result: *mut zkr_atomic_bytes_result) {
    free_returned("zkr_atomic_bytes_result_free", result, |r| {
        crate::types::zkr_buffer_free(r.pre_value);
        crate::types::zkr_buffer_free(r.post_value);
    })
}

/// Curator's DistributedAtomicValue: bytes set atomically in one node, shared with Curator's
/// DistributedAtomicValue (and, when they hold 8 or 4 bytes, with the counters). Thread-safe.
pub struct zkr_atomic_bytes {
    value: DistributedAtomicValue,
}

handle!(zkr_atomic_bytes, "value");

fn make_bytes(
    c: &Client,
    path: &str,
    retry: Option<RetryPolicy>,
    promoted: Option<PromotedToLock>,
) -> Result<zkr_atomic_bytes> {
    Ok(zkr_atomic_bytes {
        value: DistributedAtomicValue::new(c, path, retry, promoted)?,
    })
}

/// Makes an atomic value at `path` using the client's retry policy, without promotion (the
/// node is created by the first try_set, force_set or initialize). Free with
/// zkr_atomic_bytes_free.
#[no_mangle]
pub extern "C" fn zkr_atomic_bytes_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_atomic_bytes,
) -> zkr_status {
    counter_new("zkr_atomic_bytes_new", c, path, NO_OPTIONS, out, make_bytes)
}

/// zkr_atomic_bytes_new with Curator's options (see zkr_atomic_long_new_with): `retry` for the
/// optimistic tries of zkr_atomic_bytes_try_set, and Curator's PromotedToLock fallback.
#[no_mangle]
pub extern "C" fn zkr_atomic_bytes_new_with(
    c: *mut zkr_client,
    path: *const c_char,
    retry: *const zkr_retry_policy,
    promoted_lock_path: *const c_char,
    promoted_lock_timeout_ms: i64,
    out: *mut *mut zkr_atomic_bytes,
) -> zkr_status {
    let o = CounterOptions {
        retry,
        lock_path: promoted_lock_path,
        lock_timeout_ms: promoted_lock_timeout_ms,
    };
    counter_new("zkr_atomic_bytes_new_with", c, path, o, out, make_bytes)
}

fn op_bytes(
    function: &str,
    a: *const zkr_atomic_bytes,
    out: *mut *mut zkr_atomic_bytes_result,
    op: impl FnOnce(&DistributedAtomicValue) -> Result<AtomicValue<Option<Vec<u8>>>>,
) -> zkr_status {
    handle_out(function, a, out, "result", |a| {
        Ok(bytes_result(op(&a.value)?))
    })
}

/// The current bytes in `*result` (`succeeded` true; `pre_value` and `post_value` NULL if the
/// node does not exist).
#[no_mangle]
pub extern "C" fn zkr_atomic_bytes_get(
    a: *mut zkr_atomic_bytes,
    result: *mut *mut zkr_atomic_bytes_result,
) -> zkr_status {
    op_bytes("zkr_atomic_bytes_get", a, result, |v| wait(v.get()))
}

/// Curator's compareAndSet: sets the `len` bytes of `data` only if the node holds exactly the
/// `expected_len` bytes of `expected` (one try; a missing node never matches). Check
/// `(*result)->succeeded`.
#[no_mangle]
pub extern "C" fn zkr_atomic_bytes_compare_and_set(
    a: *mut zkr_atomic_bytes,
    expected: *const u8,
    expected_len: usize,
    data: *const u8,
    len: usize,
    result: *mut *mut zkr_atomic_bytes_result,
) -> zkr_status {
    op_bytes("zkr_atomic_bytes_compare_and_set", a, result, |v| {
        let expected = arg_slice(expected, expected_len, "expected")?;
        wait(v.compare_and_set(expected, arg_slice(data, len, "data")?))
    })
}

/// Curator's trySet: sets the `len` bytes of `data` with the optimistic loop (and promotion).
/// Check `(*result)->succeeded`. ZKR_OUTCOME_UNKNOWN if a write's reply was lost and its fate
/// cannot be known.
#[no_mangle]
pub extern "C" fn zkr_atomic_bytes_try_set(
    a: *mut zkr_atomic_bytes,
    data: *const u8,
    len: usize,
    result: *mut *mut zkr_atomic_bytes_result,
) -> zkr_status {
    op_bytes("zkr_atomic_bytes_try_set", a, result, |v| {
        wait(v.try_set(arg_slice(data, len, "data")?))
    })
}

/// Curator's forceSet: sets the `len` bytes of `data` whatever the value was, creating the node
/// if needed.
/// After a lost reply it is resent only if certainly not applied (the node unchanged, or one other
/// write further): ZKR_OUTCOME_UNKNOWN when the node moved on further, is gone or cannot be read
/// again (ours may have been applied and overwritten since; Curator resends it blindly, over any
/// write that landed after it).
#[no_mangle]
pub extern "C" fn zkr_atomic_bytes_force_set(
    a: *mut zkr_atomic_bytes,
    data: *const u8,
    len: usize,
) -> zkr_status {
    handle_call("zkr_atomic_bytes_force_set", a, |a| {
        wait(a.value.force_set(arg_slice(data, len, "data")?))
    })
}

/// Curator's initialize: creates the node with the `len` bytes of `data` if it does not exist;
/// `*created` tells whether it did.
#[no_mangle]
pub extern "C" fn zkr_atomic_bytes_initialize(
    a: *mut zkr_atomic_bytes,
    data: *const u8,
    len: usize,
    created: *mut bool,
) -> zkr_status {
    handle_out("zkr_atomic_bytes_initialize", a, created, "created", |a| {
        wait(a.value.initialize(arg_slice(data, len, "data")?))
    })
}

/// Frees an atomic value handle (the node stays). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_atomic_bytes_free(a: *mut zkr_atomic_bytes) {
    free_handle("zkr_atomic_bytes_free", a)
}

// ---- CachedAtomicLong / CachedAtomicInteger ----

/// Curator's CachedAtomicLong: ids handed out from ranges of a zkr_atomic_long's node, reserved
/// `cache_factor` at a time with one Curator-style add. Thread-safe.
pub struct zkr_cached_atomic_long {
    cached: CachedAtomicLong,
}

handle!(zkr_cached_atomic_long, "cached");

/// Curator's CachedAtomicInteger: zkr_cached_atomic_long over a zkr_atomic_int's node.
pub struct zkr_cached_atomic_int {
    cached: CachedAtomicInteger,
}

handle!(zkr_cached_atomic_int, "cached");

/// Makes ids from `counter`'s node, `cache_factor` (at least 1, else ZKR_INVALID_ARGUMENT)
/// reserved at a time. The new handle shares the counter's node and options, not its handle:
/// `counter` may be freed afterwards. Free with zkr_cached_atomic_long_free.
#[no_mangle]
pub extern "C" fn zkr_cached_atomic_long_new(
    counter: *const zkr_atomic_long,
    cache_factor: i64,
    out: *mut *mut zkr_cached_atomic_long,
) -> zkr_status {
    ffi_call("zkr_cached_atomic_long_new", || {
        let (counter, out) = (handle_ref(counter)?, arg_out(out, "out")?);
        let cached = CachedAtomicLong::new(counter.counter.clone(), cache_factor)?;
        out.write(new_handle(zkr_cached_atomic_long { cached }));
        Ok(())
    })
}

/// The next id: `out->post_value` (and `pre_value` = post_value - 1), reserving a new range
/// when needed. Check `out->succeeded` (false when a reservation did not succeed: nothing was
/// handed out). After an error the next call reserves a fresh range: ids may be skipped, never
/// handed out twice across processes.
#[no_mangle]
pub extern "C" fn zkr_cached_atomic_long_next(
    cached: *mut zkr_cached_atomic_long,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    handle_out("zkr_cached_atomic_long_next", cached, out, "value", |c| {
        Ok(value(wait(c.cached.next())?))
    })
}

/// Frees a cached counter (the ids of its range not handed out are lost). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_cached_atomic_long_free(cached: *mut zkr_cached_atomic_long) {
    free_handle("zkr_cached_atomic_long_free", cached)
}

/// zkr_cached_atomic_long_new over a 32-bit counter. Free with zkr_cached_atomic_int_free.
#[no_mangle]
pub extern "C" fn zkr_cached_atomic_int_new(
    counter: *const zkr_atomic_int,
    cache_factor: i32,
    out: *mut *mut zkr_cached_atomic_int,
) -> zkr_status {
    ffi_call("zkr_cached_atomic_int_new", || {
        let (counter, out) = (handle_ref(counter)?, arg_out(out, "out")?);
        let cached = CachedAtomicInteger::new(counter.counter.clone(), cache_factor)?;
        out.write(new_handle(zkr_cached_atomic_int { cached }));
        Ok(())
    })
}

/// The next id (see zkr_cached_atomic_long_next).
#[no_mangle]
pub extern "C" fn zkr_cached_atomic_int_next(
    cached: *mut zkr_cached_atomic_int,
    out: *mut zkr_atomic_value,
) -> zkr_status {
    handle_out("zkr_cached_atomic_int_next", cached, out, "value", |c| {
        Ok(value(wait(c.cached.next())?))
    })
}

/// Frees a cached counter (the ids of its range not handed out are lost). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_cached_atomic_int_free(cached: *mut zkr_cached_atomic_int) {
    free_handle("zkr_cached_atomic_int_free", cached)
}
