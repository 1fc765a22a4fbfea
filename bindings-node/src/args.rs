//! Argument mapping shared by the native classes: timeouts, owners, 64-bit integers.
//! The JS layer (`index.js`) checks types first; these checks keep the native layer safe on
//! its own (a bad value is a coded `ZKR_INVALID_ARGUMENT`, never a panic).

use std::time::Duration;

use napi::bindgen_prelude::BigInt;
use zkrecipes::Owner;

use crate::error::{invalid, CoreResult};

/// A timeout in milliseconds: `None` (or +Infinity) waits forever; negative or NaN is refused.
pub(crate) fn timeout(what: &str, ms: Option<f64>) -> CoreResult<Option<Duration>> {
    match ms {
        None => Ok(None),
        Some(ms) if ms.is_nan() || ms < 0.0 => Err(invalid(format!(
            "{what} must be a non-negative number of milliseconds, got {ms}"
        ))),
        Some(ms) if ms.is_infinite() => Ok(None),
        Some(ms) => Duration::try_from_secs_f64(ms / 1000.0)
            .map(Some)
            .map_err(|_| invalid(format!("{what} of {ms} ms is out of range"))),
    }
}

/// A required positive duration in milliseconds (session and connection timeouts, sleeps).
pub(crate) fn duration(what: &str, ms: f64) -> CoreResult<Duration> {
    match timeout(what, Some(ms))? {
        Some(d) => Ok(d),
        None => Err(invalid(format!("{what} must be finite"))),
    }
}

/// An owner id made by `newOwnerId()` (a non-negative BigInt below 2^64).
pub(crate) fn owner(id: &BigInt) -> CoreResult<Owner> {
    let (signed, value, lossless) = id.get_u64();
    if signed || !lossless {
        return Err(invalid(
            "owner id must be a non-negative 64-bit BigInt made by new Owner()",
        ));
    }
    Ok(Owner::from_raw(value))
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
