//! Argument mapping shared by the native classes: timeouts and durations (the core's timeout
//! contract), owners, integers, lost policies. The JS layer (`lib/args.js`) checks types
//! first; the values are checked here, once, so a bad value is a coded `ZKR_INVALID_ARGUMENT`
//! (never a panic) whichever way it came in.

use std::time::Duration;

use napi::bindgen_prelude::{BigInt, FromNapiValue, TypeName, ValidateNapiValue};
use napi::{sys, ValueType};
use zkrecipes::{LostPolicy, Owner};

use crate::error::{invalid, CoreResult};

/// A timeout in milliseconds, by the core's contract (`zkrecipes::timeout`): `None` (the option
/// omitted) or `Infinity` waits without limit, 0 tries once, negative or NaN is refused with a
/// message naming `what`.
pub(crate) fn timeout(what: &str, ms: Option<f64>) -> CoreResult<Option<Duration>> {
    zkrecipes::timeout::from_millis_f64(ms).map_err(|e| e.context(what))
}

/// A required finite duration in milliseconds, zero allowed (a retry policy's sleeps).
pub(crate) fn duration(what: &str, ms: f64) -> CoreResult<Duration> {
    timeout(what, Some(ms))?.ok_or_else(|| invalid(format!("{what} must be finite, got {ms}")))
}

/// A required positive finite duration in milliseconds (session and connection timeouts).
pub(crate) fn positive_duration(what: &str, ms: f64) -> CoreResult<Duration> {
    match duration(what, ms)? {
        Duration::ZERO => Err(invalid(format!("{what} must be positive, got {ms}"))),
        d => Ok(d),
    }
}

/// An owner id argument, made by `new Owner()` (a non-negative BigInt below 2^64), read in
/// place by `napi_get_value_bigint_uint64` (napi-rs's `BigInt` allocates a vector of words on
/// every lock call). Reading never fails: what is wrong with the value is reported by
/// [`OwnerId::get`] inside the method's boundary, as a coded `ZKR_INVALID_ARGUMENT` (a rejected
/// Promise for async methods). `pub`: the argument type of `#[napi]` methods.
pub struct OwnerId(Result<u64, &'static str>);

impl OwnerId {
    /// The core's owner, or `ZKR_INVALID_ARGUMENT` naming what the value was.
    pub(crate) fn get(&self) -> CoreResult<Owner> {
        match self.0 {
            Ok(id) => Ok(Owner::from_raw(id)),
            Err(what) => Err(invalid(format!(
                "owner id must be a non-negative 64-bit BigInt made by new Owner(), got {what}"
            ))),
        }
    }
}

impl TypeName for OwnerId {
    fn type_name() -> &'static str {
        "BigInt"
    }

    fn value_type() -> ValueType {
        ValueType::BigInt
    }
}

impl ValidateNapiValue for OwnerId {}

impl FromNapiValue for OwnerId {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        let mut id = 0u64;
        let mut lossless = false;
        // SAFETY: napi-rs hands the callback's live env and argument; the out-pointers are live
        // locals. `lossless` is false for a negative BigInt and for one of 2^64 or more.
        let status =
            unsafe { sys::napi_get_value_bigint_uint64(env, value, &mut id, &mut lossless) };
        Ok(OwnerId(match (status == sys::Status::napi_ok, lossless) {
            (true, true) => Ok(id),
            (true, false) => Err("a negative BigInt or one of 2^64 or more"),
            (false, _) => Err("a value that is not a BigInt"),
        }))
    }
}

/// A signed 64-bit value (counters): a BigInt in range.
pub(crate) fn i64_value(what: &str, v: &BigInt) -> CoreResult<i64> {
    let (value, lossless) = v.get_i64();
    if !lossless {
        return Err(invalid(format!(
            "{what} does not fit a signed 64-bit integer"
        )));
    }
    Ok(value)
}

/// A signed 32-bit value given as a JS number.
pub(crate) fn i32_value(what: &str, v: f64) -> CoreResult<i32> {
    if v.fract() != 0.0 || !(i32::MIN as f64..=i32::MAX as f64).contains(&v) {
        return Err(invalid(format!("{what} must be a 32-bit integer, got {v}")));
    }
    Ok(v as i32)
}

/// The lost policy of locks and leaders: `'standard'` (default) or `'session'`.
pub(crate) fn lost_policy(name: Option<String>) -> CoreResult<LostPolicy> {
    match name.as_deref() {
        None | Some("standard") => Ok(LostPolicy::Standard),
        Some("session") => Ok(LostPolicy::Session),
        Some(other) => Err(invalid(format!(
            "lostPolicy must be 'standard' or 'session', got {other:?}"
        ))),
    }
}
