//! The one place where zkrecipes errors become JS errors: an `Error` whose `code` is API.md's
//! (`ZKR_INVALID_ARGUMENT`, `ZKR_NO_NODE`, ...) and whose message names the path.

use napi::bindgen_prelude::{JsError, Unknown};
use napi::Env;
use zkrecipes::ErrorKind;

/// API.md's `err.code` for each kind: `ZKR_` + the core's name (the C face's status names).
pub(crate) fn code(kind: ErrorKind) -> String {
    format!("ZKR_{}", kind.name())
}

/// Builds the JS error object (on the JS thread) and wraps it so that napi throws or rejects
/// with exactly that object.
pub(crate) fn to_js(env: &Env, code: &str, message: &str) -> napi::Error {
    let err = napi::Error::new(code, message);
    let value: Unknown<'_> = JsError::from(err).into_unknown(*env);
    napi::Error::from(value)
}

/// [`to_js`] for a core error.
pub(crate) fn from_core(env: &Env, e: &zkrecipes::Error) -> napi::Error {
    to_js(env, &code(e.kind()), e.message())
}

/// An error of the face itself before any JS value exists (a bad argument found in Rust).
pub(crate) fn invalid(msg: impl Into<String>) -> zkrecipes::Error {
    zkrecipes::Error::InvalidArgument(zkrecipes::Detail::new(msg))
}

/// Results of the face: a core error until it reaches the JS thread.
pub(crate) type CoreResult<T> = zkrecipes::Result<T>;
