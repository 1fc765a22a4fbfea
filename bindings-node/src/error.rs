//! The one place where zkrecipes errors become JS errors: an `Error` whose `code` is API.md's
//! (`ZKR_INVALID_ARGUMENT`, `ZKR_NO_NODE`, ...) and whose message names the path.

use napi::bindgen_prelude::{JsError, Unknown};
use napi::Env;
use zkrecipes::ErrorKind;

/// API.md's `err.code` for each kind; the extra kinds of the core get codes of the same form
/// (the C face uses the same names).
pub(crate) fn code(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidArgument => "ZKR_INVALID_ARGUMENT",
        ErrorKind::NotOwner => "ZKR_NOT_OWNER",
        ErrorKind::ConnectionLoss => "ZKR_CONNECTION_LOSS",
        ErrorKind::SessionExpired => "ZKR_SESSION_EXPIRED",
        ErrorKind::OutcomeUnknown => "ZKR_OUTCOME_UNKNOWN",
        ErrorKind::Closed => "ZKR_CLOSED",
        ErrorKind::NoNode => "ZKR_NO_NODE",
        ErrorKind::NodeExists => "ZKR_NODE_EXISTS",
        ErrorKind::BadVersion => "ZKR_BAD_VERSION",
        ErrorKind::NoAuth => "ZKR_NO_AUTH",
        ErrorKind::NotEmpty => "ZKR_NOT_EMPTY",
        ErrorKind::Timeout => "ZKR_TIMEOUT",
        ErrorKind::CorruptedData => "ZKR_CORRUPTED_DATA",
        ErrorKind::Overflow => "ZKR_OVERFLOW",
        ErrorKind::Server => "ZKR_SERVER",
        ErrorKind::Internal => "ZKR_INTERNAL",
        // A kind added to the core later: still an error with a code, never a bare string.
        _ => "ZKR_INTERNAL",
    }
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
    to_js(env, code(e.kind()), e.message())
}

/// An error of the face itself before any JS value exists (a bad argument found in Rust).
pub(crate) fn invalid(msg: impl Into<String>) -> zkrecipes::Error {
    zkrecipes::Error::InvalidArgument(msg.into())
}

/// Results of the face: a core error until it reaches the JS thread.
pub(crate) type CoreResult<T> = zkrecipes::Result<T>;
