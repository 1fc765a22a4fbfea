//! The one panic boundary, the C caller's contract, and the argument helpers every export uses.
//!
//! Every `extern "C"` function's body runs inside [`ffi_boundary`] (or a helper built on it): a
//! panic becomes `ZKR_INTERNAL` with a message and never unwinds into C. Every pointer argument
//! goes through [`non_null`] (directly or via the typed helpers), so a NULL is
//! `ZKR_INVALID_ARGUMENT` naming the argument, never a crash.
//!
//! # Where the safety argument lives (rustls-ffi's shape)
//!
//! The exports are safe `extern "C"` functions: they reach their pointer arguments only through
//! the helpers of this module (strings, buffers, input structs, out-parameters) and through
//! [`crate::handle::handle_ref`] (the one checked cast, beside the handle tag). Those helpers are
//! where the contract below is relied upon, once each; an export adds no `unsafe` of its own for
//! its arguments. The `unsafe` blocks left elsewhere each have a reason of their own: calling a
//! C callback, taking back memory the library gave out, reading a versioned options struct.
//!
//! # The C caller's contract
//!
//! The header promises these; the helpers below rely on them:
//!
//! 1. **Handles**: a handle argument is NULL or a pointer this library returned for that type.
//!    A handle that was freed or is of another type is detected in most cases
//!    ([`crate::handle`]); a pointer the library never returned is undefined behaviour, as in
//!    any C library.
//! 2. **Inputs**: a `const char *` is NULL or NUL-terminated and readable for the call; a buffer
//!    or array is NULL (only with length 0) or readable for its length; an input struct is NULL
//!    or readable. (A length no object can have, over `isize::MAX` bytes, is detected: see
//!    [`arg_slice`].)
//! 3. **Outputs**: an out-parameter is NULL or writable for its type during the call.
//! 4. **Callbacks**: a callback is NULL or a function of the declared type that may be called
//!    from any thread with its `user_data` until it is unregistered (or its handle freed).
//! 5. **Returned values**: a pointer given to a `_free` (a string, a list, a buffer, a node) is
//!    NULL or one this library returned for that type, and is freed once.
//!
//! The common shapes of an export are [`handle_call`], [`handle_out`] and [`recipe_new`]: an
//! export is one call to one of them. A new export follows them: a safe `extern "C" fn`, its
//! arguments through these helpers, nothing `unsafe`.

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
pub(crate) fn handle_call<H: Handle>(
    function: &str,
    handle: *const H,
    body: impl FnOnce(&H) -> Result<()>,
) -> zkr_status {
    ffi_call(function, || body(handle_ref(handle)?))
}

/// An export on a handle with one required out-parameter: checks both (so that a NULL
/// `out` does nothing), runs `body` and writes its value only on success.
pub(crate) fn handle_out<H: Handle, T>(
    function: &str,
    handle: *const H,
    out: *mut T,
    what: &str,
    body: impl FnOnce(&H) -> Result<T>,
) -> zkr_status {
    ffi_call(function, || {
        let (handle, out) = (handle_ref(handle)?, arg_out(out, what)?);
        out.write(body(handle)?);
        Ok(())
    })
}

/// A recipe's constructor: `make(client, path)`, written to `*out` as a new handle (the core
/// refuses a closed client).
pub(crate) fn recipe_new<H: Handle>(
    function: &str,
    client: *const zkr_client,
    path: *const c_char,
    out: *mut *mut H,
    make: impl FnOnce(&Client, &str) -> Result<H>,
) -> zkr_status {
    ffi_call(function, || {
        let (client, path, out) = (
            handle_ref(client)?,
            arg_str(path, "path")?,
            arg_out(out, "out")?,
        );
        out.write(new_handle(make(&client.client, path)?));
        Ok(())
    })
}

/// The NULL check: `Err(InvalidArgument("<what> is NULL"))` for a NULL pointer.
pub(crate) fn non_null<T>(ptr: *const T, what: &str) -> Result<NonNull<T>> {
    NonNull::new(ptr.cast_mut())
        .ok_or_else(|| Error::InvalidArgument(format!("{what} is NULL").into()))
}

/// An input struct argument (for the call: the `'a` the caller picks must not outlive it).
pub(crate) fn arg_ref<'a, T>(ptr: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: non-NULL (checked), and readable during the call by contract 2.
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
        // SAFETY: non-NULL (checked by `arg_out`), and writable for a `T` during the call by
        // contract 3; `write` neither reads nor drops what was there (maybe uninitialized).
        unsafe { self.0.as_ptr().write(value) }
    }
}

/// A required out-parameter.
pub(crate) fn arg_out<T>(ptr: *mut T, what: &str) -> Result<Out<T>> {
    non_null(ptr, what).map(Out)
}

/// An optional out-parameter: NULL means "not wanted".
pub(crate) fn arg_out_opt<T>(ptr: *mut T) -> Option<Out<T>> {
    NonNull::new(ptr).map(Out)
}

/// A NUL-terminated UTF-8 string argument (for the call).
pub(crate) fn arg_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    // SAFETY: non-NULL (checked), NUL-terminated and readable during the call by contract 2.
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
pub(crate) fn arg_opt_str<'a>(ptr: *const c_char, what: &str) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        arg_str(ptr, what).map(Some)
    }
}

/// `len` elements at `ptr` (NULL allowed only with 0): a byte buffer or an array of structs.
///
/// A `len` no object can have (more than `isize::MAX` bytes: a negative length cast to
/// `size_t`, say) is refused: no buffer can be readable for it, and `from_raw_parts` with it is
/// undefined behaviour even if nothing is read (an abort `catch_unwind` cannot stop, where the
/// standard library checks it).
pub(crate) fn arg_slice<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    let max = isize::MAX as usize / std::mem::size_of::<T>().max(1);
    if len > max {
        return Err(Error::InvalidArgument(
            format!(
                "{what}: length {len} is not a valid size (no object holds more than {max} \
                 elements of this type: a negative length cast to size_t?)"
            )
            .into(),
        ));
    }
    let p = non_null(ptr, what)?;
    // SAFETY: non-NULL (checked), readable for `len` elements during the call by contract 2,
    // and `len * size_of::<T>()` is at most `isize::MAX` (checked).
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
        // SAFETY: the library returns a valid NUL-terminated string, valid until this thread's
        // next call.
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
        let e = arg_ref::<u8>(std::ptr::null(), "opts").unwrap_err();
        assert_eq!(e, Error::InvalidArgument("opts is NULL".into()));
        let bad = b"/a\xff\0";
        let e = arg_str(bad.as_ptr().cast(), "path").unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument(ref m) if m.contains("path is not valid UTF-8")),
            "{e}"
        );
        let empty = arg_slice::<u8>(std::ptr::null(), 0, "data").unwrap();
        assert_eq!(empty, &[] as &[u8]);
        assert!(arg_slice::<u8>(std::ptr::null(), 1, "data").is_err());
    }

    #[test]
    fn impossible_lengths_are_invalid_arguments() {
        let byte = 7u8;
        let e = arg_slice(&byte, usize::MAX, "data").unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument(ref m)
                if m.starts_with("data: length 18446744073709551615 is not a valid size")),
            "{e}"
        );
        assert!(arg_slice(&byte, isize::MAX as usize + 1, "data").is_err());
        // Elements of 8 bytes: the bound is in elements.
        let word = 7u64;
        let e = arg_slice(&word, isize::MAX as usize / 8 + 1, "zxids").unwrap_err();
        assert!(
            e.message()
                .contains("more than 1152921504606846975 elements"),
            "{e}"
        );
        assert_eq!(arg_slice(&word, 1, "zxids").unwrap(), &[7]);
    }
}
