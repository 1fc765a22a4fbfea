//! The one panic boundary and the one argument-checking helper family used by every export.
//!
//! Every `extern "C"` function's body runs inside [`ffi_boundary`] (or [`ffi_call`], which is
//! built on it): a panic becomes `ZKR_INTERNAL` with a message and never unwinds into C. Every
//! pointer argument goes through [`non_null`] (directly or via the typed helpers), so a NULL
//! is `ZKR_INVALID_ARGUMENT` naming the argument, never a crash.

use std::ffi::{c_char, CStr};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::time::Duration;

use zkrecipes::{runtime, Error, Result};

use crate::status::{fail, set_last_error, zkr_status};

/// Runs an export's body; a panic records a message and yields `on_panic`.
pub(crate) fn ffi_boundary<T>(function: &str, on_panic: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("unknown panic");
            set_last_error(&format!("{function}: internal error (a bug in zkrecipes, please report it): {what} (ZKR_INTERNAL)"));
            on_panic
        }
    }
}

/// Runs a fallible export's body inside the panic boundary and maps its error to a status,
/// recording the message for zkr_last_error_message().
pub(crate) fn ffi_call(function: &str, body: impl FnOnce() -> Result<()>) -> zkr_status {
    ffi_boundary(function, zkr_status::ZKR_INTERNAL, || match body() {
        Ok(()) => zkr_status::ZKR_OK,
        Err(e) => fail(function, &e),
    })
}

/// The NULL check: `Err(InvalidArgument("<what> is NULL"))` for a NULL pointer.
pub(crate) fn non_null<T>(ptr: *const T, what: &str) -> Result<NonNull<T>> {
    NonNull::new(ptr as *mut T)
        .ok_or_else(|| Error::InvalidArgument(format!("{what} is NULL").into()))
}

/// A handle or input struct argument.
///
/// # Safety
/// `ptr` is NULL or points to a live `T` for `'a`.
pub(crate) unsafe fn arg_ref<'a, T>(ptr: *const T, what: &str) -> Result<&'a T> {
    Ok(non_null(ptr, what)?.as_ref())
}

/// An out-parameter, checked up front and written only on success (by [`Out::write`]).
pub(crate) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// Writes the value without reading (or dropping) what the caller's memory held before.
    pub(crate) fn write(self, value: T) {
        // SAFETY: the caller of `arg_out` promised a writable `T`.
        unsafe { self.0.as_ptr().write(value) }
    }
}

/// A required out-parameter.
///
/// # Safety
/// `ptr` is NULL or valid for writing a `T` for as long as the call runs.
pub(crate) unsafe fn arg_out<T>(ptr: *mut T, what: &str) -> Result<Out<T>> {
    non_null(ptr, what).map(Out)
}

/// An optional out-parameter: NULL means "not wanted".
pub(crate) fn arg_out_opt<T>(ptr: *mut T) -> Option<Out<T>> {
    NonNull::new(ptr).map(Out)
}

/// A NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that stays valid during the call.
pub(crate) unsafe fn arg_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    let c = CStr::from_ptr(non_null(ptr, what)?.as_ptr());
    c.to_str().map_err(|e| {
        Error::InvalidArgument(
            format!(
                "{what} is not valid UTF-8 (bad byte at offset {})",
                e.valid_up_to()
            )
            .into(),
        )
    })
}

/// An optional string argument: NULL means "not given".
///
/// # Safety
/// As [`arg_str`].
pub(crate) unsafe fn arg_opt_str<'a>(ptr: *const c_char, what: &str) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        arg_str(ptr, what).map(Some)
    }
}

/// A byte buffer argument: `data` may be NULL only when `len` is 0.
///
/// # Safety
/// `data` is NULL or valid for reading `len` bytes during the call.
pub(crate) unsafe fn arg_bytes<'a>(data: *const u8, len: usize, what: &str) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    let p = non_null(data, what)?;
    Ok(std::slice::from_raw_parts(p.as_ptr(), len))
}

/// A timeout in milliseconds: -1 waits forever (`None`), other negatives are refused.
pub(crate) fn arg_timeout(timeout_ms: i64) -> Result<Option<Duration>> {
    match timeout_ms {
        -1 => Ok(None),
        ms if ms < 0 => Err(Error::InvalidArgument(
            format!("timeout_ms is {ms}: use -1 to wait forever or a value >= 0").into(),
        )),
        ms => Ok(Some(Duration::from_millis(ms as u64))),
    }
}

/// A duration option in milliseconds that must be positive.
pub(crate) fn arg_positive_ms(ms: i64, what: &str) -> Result<Duration> {
    if ms <= 0 {
        Err(Error::InvalidArgument(
            format!("{what} is {ms} ms: it must be positive").into(),
        ))
    } else {
        Ok(Duration::from_millis(ms as u64))
    }
}

/// Runs a future of the core on the shared runtime, blocking the calling C thread. A call from a
/// runtime thread is refused (`ZKR_INTERNAL`) instead of deadlocking; C callbacks never run on
/// runtime threads, so a C caller only sees this if it calls us from a Rust async context.
pub(crate) fn block_on<F: Future>(future: F) -> Result<F::Output> {
    runtime::try_block_on(future)
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;
    use crate::status::zkr_last_error_message;

    fn last_message() -> String {
        // SAFETY: the library returns a valid NUL-terminated string.
        unsafe { CStr::from_ptr(zkr_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_internal_with_a_message() {
        let status = ffi_call("zkr_test_panics", || panic!("boom at the boundary"));
        assert_eq!(status, zkr_status::ZKR_INTERNAL);
        let m = last_message();
        assert!(m.starts_with("zkr_test_panics: internal error"), "{m}");
        assert!(
            m.contains("boom at the boundary") && m.ends_with("(ZKR_INTERNAL)"),
            "{m}"
        );
        // A value-returning export yields its fallback instead of unwinding.
        assert_eq!(
            ffi_boundary("zkr_test_value", 7, || -> i32 { panic!("no") }),
            7
        );
    }

    #[test]
    fn errors_keep_their_kind_and_name_the_function() {
        let status = ffi_call("zkr_test_fails", || {
            Err(Error::NotOwner("release lock /l: not held".into()))
        });
        assert_eq!(status, zkr_status::ZKR_NOT_OWNER);
        assert_eq!(
            last_message(),
            "zkr_test_fails: release lock /l: not held (ZKR_NOT_OWNER)"
        );
        // Success leaves the message alone.
        assert_eq!(ffi_call("zkr_test_ok", || Ok(())), zkr_status::ZKR_OK);
        assert_eq!(
            last_message(),
            "zkr_test_fails: release lock /l: not held (ZKR_NOT_OWNER)"
        );
    }

    #[test]
    fn null_and_bad_strings_are_invalid_arguments() {
        let e = unsafe { arg_ref::<u8>(std::ptr::null(), "mutex") }.unwrap_err();
        assert_eq!(e, Error::InvalidArgument("mutex is NULL".into()));
        let bad = b"/a\xff\0";
        let e = unsafe { arg_str(bad.as_ptr().cast(), "path") }.unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument(ref m) if m.contains("path is not valid UTF-8")),
            "{e}"
        );
        assert_eq!(
            unsafe { arg_bytes(std::ptr::null(), 0, "data") }.unwrap(),
            &[] as &[u8]
        );
        assert!(unsafe { arg_bytes(std::ptr::null(), 1, "data") }.is_err());
    }

    #[test]
    fn timeouts_follow_the_convention() {
        assert_eq!(arg_timeout(-1).unwrap(), None);
        assert_eq!(arg_timeout(0).unwrap(), Some(Duration::ZERO));
        assert_eq!(
            arg_timeout(1500).unwrap(),
            Some(Duration::from_millis(1500))
        );
        assert!(arg_timeout(-2).is_err());
        assert!(arg_timeout(i64::MIN).is_err());
    }
}
