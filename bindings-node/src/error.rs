//! The one place where zkrecipes errors become JS errors: an `Error` whose `code` is API.md's
//! (`'ZKR_' + kind.name()`: `ZKR_INVALID_ARGUMENT`, `ZKR_NO_NODE`, ...), whose message names the
//! path, and, when ZooKeeper gave one, whose `zkCode` is ZooKeeper's own error code (-101 for
//! NONODE, ...).

use std::any::Any;

use napi::bindgen_prelude::{JsError, Object, Unknown};
use napi::Env;
use zkrecipes::ErrorKind;

/// API.md's `err.code` of a kind: `ZKR_` + the core's name (the C face's status names).
pub(crate) fn code(kind: ErrorKind) -> String {
    format!("ZKR_{}", kind.name())
}

/// Builds the JS error object (on the JS thread) and wraps it so that napi throws or rejects
/// with exactly that object.
fn to_js(env: &Env, kind: ErrorKind, message: &str, zk_code: Option<i32>) -> napi::Error {
    to_js_indexed(env, kind, message, zk_code, None)
}

/// [`to_js`], with the `index` of a transaction's failing operation.
fn to_js_indexed(
    env: &Env,
    kind: ErrorKind,
    message: &str,
    zk_code: Option<i32>,
    index: Option<usize>,
) -> napi::Error {
    let value: Unknown<'_> =
        JsError::from(napi::Error::new(code(kind), message)).into_unknown(*env);
    if zk_code.is_some() || index.is_some() {
        // SAFETY: `value` was made just above by napi_create_error: it is an object.
        if let Ok(mut obj) = unsafe { value.cast::<Object<'_>>() } {
            if let Some(zk) = zk_code {
                let _ = obj.set("zkCode", zk);
            }
            if let Some(i) = index {
                let _ = obj.set("index", i as u32);
            }
        }
    }
    napi::Error::from(value)
}

/// The JS error of a core error (a failed transaction's also carries `index`).
pub(crate) fn from_core(env: &Env, e: &zkrecipes::Error) -> napi::Error {
    to_js_indexed(env, e.kind(), e.message(), e.zk_code(), e.failed_op())
}

/// The JS error of a caught panic: `ZKR_INTERNAL`, a bug of ours.
pub(crate) fn internal(env: &Env, panic: &Box<dyn Any + Send>) -> napi::Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    to_js(
        env,
        ErrorKind::Internal,
        &format!("zkrecipes panicked (a bug, please report it): {what}"),
        None,
    )
}

/// An error of the face itself (a bad argument found in Rust).
pub(crate) fn invalid(msg: impl Into<String>) -> zkrecipes::Error {
    zkrecipes::Error::InvalidArgument(zkrecipes::Detail::new(msg))
}

/// Results of the face: a core error until it reaches the JS thread.
pub(crate) type CoreResult<T> = zkrecipes::Result<T>;
