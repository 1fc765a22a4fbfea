//! The one panic boundary, the C caller's contract, and the argument helpers every export uses.
//!
//! Every `extern "C"` function's body runs inside [`ffi_boundary`] (or a helper built on it): a
//! panic becomes `ZKR_INTERNAL` with a message and never unwinds into C. Every pointer argument
//! goes through [`non_null`] (directly or via the typed helpers), so a NULL is
//! `ZKR_INVALID_ARGUMENT` naming the argument, never a crash.
//!
//! # The C caller's contract
//!
//! The header promises these, and every `// SAFETY: the C caller's contract` relies on them:
//!
//! 1. **Handles**: a handle argument is NULL or a pointer this library returned for that type.
//!    A handle that was freed or is of another type is detected in most cases
//!    ([`crate::handle`]); a pointer the library never returned is undefined behaviour, as in
//!    any C library.
//! 2. **Inputs**: a `const char *` is NULL or NUL-terminated and readable for the call; a buffer
//!    or array is NULL (only with length 0) or readable for its length; an input struct is NULL
//!    or readable.
//! 3. **Outputs**: an out-parameter is NULL or writable for its type during the call.
//! 4. **Callbacks**: a callback is NULL or a function of the declared type that may be called
//!    from any thread with its `user_data` until it is unregistered (or its handle freed).
//!
//! The common shapes of an export are the `unsafe fn`s below ([`handle_call`], [`handle_out`],
//! [`recipe_new`]): an export is one call to one of them, in one `unsafe` block.

use std::ffi::{c_char, CStr};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::time::Duration;

use zkrecipes::{runtime, timeout, Client, Error, Result};

use crate::client::zkr_client;
use crate::handle::{handle_ref, new_handle, Handle};
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

/// An export on a handle: checks it, then runs `body`.
///
/// # Safety
/// The C caller's contract for `handle` and for whatever `body` reads.
pub(crate) unsafe fn handle_call<H: Handle>(
    function: &str,
    handle: *const H,
    body: impl FnOnce(&H) -> Result<()>,
) -> zkr_status {
    ffi_call(function, || {
        // SAFETY: this function's contract.
        body(unsafe { handle_ref(handle) }?)
    })
}

/// An export on a handle with one required out-parameter: checks both (so that a NULL
/// `out` does nothing), runs `body` and writes its value only on success.
///
/// # Safety
/// The C caller's contract for `handle`, `out` and whatever `body` reads.
pub(crate) unsafe fn handle_out<H: Handle, T>(
    function: &str,
    handle: *const H,
    out: *mut T,
    what: &str,
    body: impl FnOnce(&H) -> Result<T>,
) -> zkr_status {
    ffi_call(function, || {
        // SAFETY: this function's contract.
        let (handle, out) = unsafe { (handle_ref(handle)?, arg_out(out, what)?) };
        out.write(body(handle)?);
        Ok(())
    })
}

/// A recipe's constructor: `make(client, path)`, written to `*out` as a new handle (the core
/// refuses a closed client).
///
/// # Safety
/// The C caller's contract for `client`, `path`, `out` and whatever `make` reads.
pub(crate) unsafe fn recipe_new<H: Handle>(
    function: &str,
    client: *const zkr_client,
    path: *const c_char,
    out: *mut *mut H,
    make: impl FnOnce(&Client, &str) -> Result<H>,
) -> zkr_status {
    ffi_call(function, || {
        // SAFETY: this function's contract.
        let (client, path, out) = unsafe {
            (
                handle_ref(client)?,
                arg_str(path, "path")?,
                arg_out(out, "out")?,
            )
        };
        out.write(new_handle(make(&client.client, path)?));
        Ok(())
    })
}

/// The NULL check: `Err(InvalidArgument("<what> is NULL"))` for a NULL pointer.
pub(crate) fn non_null<T>(ptr: *const T, what: &str) -> Result<NonNull<T>> {
    NonNull::new(ptr.cast_mut())
        .ok_or_else(|| Error::InvalidArgument(format!("{what} is NULL").into()))
}

/// An input struct argument.
///
/// # Safety
/// `ptr` is NULL or points to a `T` readable for `'a`.
pub(crate) unsafe fn arg_ref<'a, T>(ptr: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: non-NULL, and readable by this function's contract.
    Ok(unsafe { non_null(ptr, what)?.as_ref() })
}

/// A required callback argument.
pub(crate) fn arg_callback<F>(callback: Option<F>, what: &str) -> Result<F> {
    callback.ok_or_else(|| Error::InvalidArgument(format!("{what} is NULL").into()))
}

/// An out-parameter, checked up front and written only on success (by [`Out::write`]).
pub(crate) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// Writes the value without reading (or dropping) what the caller's memory held before.
    pub(crate) fn write(self, value: T) {
        // SAFETY: `arg_out`'s caller promised a writable `T` for the call.
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
///
/// # Safety
/// As [`arg_out`].
pub(crate) unsafe fn arg_out_opt<T>(ptr: *mut T) -> Option<Out<T>> {
    NonNull::new(ptr).map(Out)
}

/// A NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that stays valid during the call.
pub(crate) unsafe fn arg_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    // SAFETY: non-NULL and NUL-terminated by this function's contract.
    let c = unsafe { CStr::from_ptr(non_null(ptr, what)?.as_ptr()) };
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
        // SAFETY: this function's contract.
        unsafe { arg_str(ptr, what) }.map(Some)
    }
}

/// `len` elements at `ptr` (NULL allowed only with 0): a byte buffer or an array of structs.
///
/// # Safety
/// `ptr` is NULL or valid for reading `len` elements during the call.
pub(crate) unsafe fn arg_slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    let p = non_null(ptr, what)?;
    // SAFETY: non-NULL and readable for `len` elements by this function's contract.
    Ok(unsafe { std::slice::from_raw_parts(p.as_ptr(), len) })
}

/// A timeout in milliseconds, by the core's one contract: -1 waits without limit, 0 tries once,
/// other negatives are refused.
pub(crate) fn arg_timeout(timeout_ms: i64) -> Result<Option<Duration>> {
    timeout::from_millis(timeout_ms)
}

/// Runs a future of the core on the shared runtime, blocking the calling C thread, and
/// flattens its result. A call from a runtime thread is refused (`ZKR_INTERNAL`) instead of
/// deadlocking; C callbacks never run on runtime threads, so a C caller only sees this if it
/// calls us from a Rust async context.
pub(crate) fn wait<T>(future: impl Future<Output = Result<T>>) -> Result<T> {
    runtime::try_block_on(future)?
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
        // SAFETY: NULL is checked before any read.
        let e = unsafe { arg_ref::<u8>(std::ptr::null(), "opts") }.unwrap_err();
        assert_eq!(e, Error::InvalidArgument("opts is NULL".into()));
        let bad = b"/a\xff\0";
        // SAFETY: a NUL-terminated local buffer.
        let e = unsafe { arg_str(bad.as_ptr().cast(), "path") }.unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument(ref m) if m.contains("path is not valid UTF-8")),
            "{e}"
        );
        // SAFETY: NULL with length 0 is allowed.
        let empty = unsafe { arg_slice::<u8>(std::ptr::null(), 0, "data") }.unwrap();
        assert_eq!(empty, &[] as &[u8]);
        // SAFETY: NULL with a length is refused before any read.
        assert!(unsafe { arg_slice::<u8>(std::ptr::null(), 1, "data") }.is_err());
    }
}
