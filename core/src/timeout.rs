//! The timeout contract, decided once for every face.
//!
//! A timeout bounds a wait. Zero means "try once, do not wait". "No limit" is spelled in each
//! face's own idiom, and only so:
//!
//! | face | no limit | a limit |
//! |---|---|---|
//! | Rust | `None` | `Some(Duration)` |
//! | C | `-1` | milliseconds ≥ 0 |
//! | Python | `None` or `math.inf` | seconds ≥ 0 (float) |
//! | Node | option omitted (`undefined`) or `Infinity` | milliseconds ≥ 0 |
//!
//! Any other negative value, and NaN, is an `InvalidArgument` naming the value. A finite value
//! too large to represent waits without limit.
//!
//! A timeout bounds the whole call, a lost connection included: the retry policy's pauses and
//! the wait for a connection end at the deadline (a policy's 30 s pause does not hold a 2 s
//! acquire for 30 s; a request already sent still waits for its reply or the request
//! timeout). A lock, read-write lock, multi-lock or semaphore whose deadline passes while the
//! connection is lost answers "timed out" (`false`/`None`), its node deleted in the
//! background; a barrier or queue returns the `ConnectionLoss` error. Without a timeout the
//! retry policy alone decides when a lost connection ends the call.

use std::time::Duration;

use crate::{Error, Result};

/// `future`'s output, or `None` once `timeout` passes first (`None`: no limit). The faces'
/// waits that answer "nothing happened" at their timeout (a lease's lost signal, an
/// observer's change) share it.
pub async fn within<F: std::future::Future>(
    timeout: Option<Duration>,
    future: F,
) -> Option<F::Output> {
    match timeout {
        None => Some(future.await),
        Some(t) => tokio::time::timeout(t, future).await.ok(),
    }
}

/// A C timeout: milliseconds, `-1` for no limit.
pub fn from_millis(ms: i64) -> Result<Option<Duration>> {
    match ms {
        -1 => Ok(None),
        ms if ms < 0 => Err(Error::invalid(format!(
            "timeout of {ms} ms is negative (use -1 to wait without limit)"
        ))),
        ms => Ok(Some(Duration::from_millis(ms as u64))),
    }
}

/// A Python timeout: seconds; `None` or infinity for no limit.
pub fn from_secs_f64(secs: Option<f64>) -> Result<Option<Duration>> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_nan() || s < 0.0 => Err(Error::invalid(format!(
            "timeout of {s} s is negative or not a number (use None to wait without limit)"
        ))),
        Some(s) => Ok(Duration::try_from_secs_f64(s).ok()),
    }
}

/// A Node timeout: milliseconds; absent or `Infinity` for no limit.
pub fn from_millis_f64(ms: Option<f64>) -> Result<Option<Duration>> {
    match ms {
        None => Ok(None),
        Some(m) if m.is_nan() || m < 0.0 => Err(Error::invalid(format!(
            "timeout of {m} ms is negative or not a number (omit it, or pass Infinity, to wait without limit)"
        ))),
        Some(m) => Ok(Duration::try_from_secs_f64(m / 1000.0).ok()),
    }
}

/// A duration that must be positive (a session timeout, a grace period): `what` names it.
pub fn positive_millis(ms: i64, what: &str) -> Result<Duration> {
    if ms <= 0 {
        return Err(Error::invalid(format!(
            "{what} of {ms} ms must be positive"
        )));
    }
    Ok(Duration::from_millis(ms as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_face_spells_no_limit_its_own_way_and_agrees_on_the_rest() {
        assert_eq!(from_millis(-1).unwrap(), None);
        assert_eq!(from_millis(0).unwrap(), Some(Duration::ZERO));
        assert_eq!(
            from_millis(1500).unwrap(),
            Some(Duration::from_millis(1500))
        );
        assert!(matches!(from_millis(-2), Err(Error::InvalidArgument(_))));

        assert_eq!(from_secs_f64(None).unwrap(), None);
        assert_eq!(from_secs_f64(Some(f64::INFINITY)).unwrap(), None);
        assert_eq!(
            from_secs_f64(Some(1.5)).unwrap(),
            Some(Duration::from_millis(1500))
        );
        for bad in [-0.5, -1.0, f64::NAN, f64::NEG_INFINITY] {
            assert!(matches!(
                from_secs_f64(Some(bad)),
                Err(Error::InvalidArgument(_))
            ));
        }

        assert_eq!(from_millis_f64(None).unwrap(), None);
        assert_eq!(from_millis_f64(Some(f64::INFINITY)).unwrap(), None);
        assert_eq!(
            from_millis_f64(Some(1500.0)).unwrap(),
            Some(Duration::from_millis(1500))
        );
        for bad in [-1.0, f64::NAN] {
            assert!(matches!(
                from_millis_f64(Some(bad)),
                Err(Error::InvalidArgument(_))
            ));
        }
        assert!(positive_millis(0, "session timeout").is_err());
    }
}
