//! Exit codes (API.md: 0 ok, 1 usage or bad input, 2 could not connect, 3 timed out waiting,
//! 4 hold or leadership lost; the child's otherwise) and the one-line failure that goes with
//! each non-zero code.

use std::fmt;

use zkrecipes::{Error, ErrorKind};

pub const OK: i32 = 0;
pub const USAGE: i32 = 1;
pub const CONNECT: i32 = 2;
pub const TIMEOUT: i32 = 3;
pub const LOST: i32 = 4;
/// `counter cas` found another value: nothing was written.
pub const CAS_FAILED: i32 = 5;
/// A bug of ours (a panic, an internal error of the core). BSD's EX_SOFTWARE.
pub const INTERNAL: i32 = 70;
/// The command could not be executed (shells' convention).
pub const CANNOT_EXECUTE: i32 = 126;
/// The command was not found (shells' convention).
pub const NOT_FOUND: i32 = 127;

/// Why zkr stops with a non-zero code: the code and the one line printed for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn new(code: i32, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// Stop with `code` and print nothing (the reader of our output went away).
    pub fn quiet(code: i32) -> Failure {
        Failure::new(code, "")
    }

    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(USAGE, message)
    }

    pub fn timeout(message: impl Into<String>) -> Failure {
        Failure::new(TIMEOUT, message)
    }

    pub fn lost(message: impl Into<String>) -> Failure {
        Failure::new(LOST, message)
    }

    /// Maps a core error met while working (connected): bad input is 1, connection trouble 2,
    /// a timeout 3, a bug 70.
    pub fn from_core(context: &str, e: Error) -> Failure {
        let code = match e.kind() {
            ErrorKind::InvalidArgument
            | ErrorKind::NotOwner
            | ErrorKind::NoNode
            | ErrorKind::NodeExists
            | ErrorKind::BadVersion
            | ErrorKind::NoAuth
            | ErrorKind::NotEmpty
            | ErrorKind::CorruptedData
            | ErrorKind::Overflow
            | ErrorKind::Conflict
            | ErrorKind::NoWatcher => USAGE,
            ErrorKind::ConnectionLoss
            | ErrorKind::SessionExpired
            | ErrorKind::OutcomeUnknown
            | ErrorKind::Closed
            | ErrorKind::AuthFailed
            | ErrorKind::Server => CONNECT,
            ErrorKind::Timeout => TIMEOUT,
            _ => INTERNAL,
        };
        Failure::new(code, format!("{context}: {}", describe(&e)))
    }
}

/// A core error as a user reads it: the message, with the kind only where the message alone
/// would not say what happened.
pub fn describe(e: &Error) -> String {
    match e.kind() {
        ErrorKind::OutcomeUnknown => format!(
            "the outcome is unknown (the reply was lost; the write may or may not have happened): {}",
            e.message()
        ),
        ErrorKind::NoAuth => format!("not authorized: {}", e.message()),
        ErrorKind::Internal => format!("internal error: {}", e.message()),
        _ => e.message().to_string(),
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a command returns: the exit code when it finished (0, or its child's), or a failure.
pub type Outcome = Result<i32, Failure>;

/// 128 + the signal's number, the shells' code for "stopped by signal N".
pub fn signalled(signal: i32) -> i32 {
    128 + signal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_map_to_the_documented_codes() {
        let f = |e| Failure::from_core("x", e).code;
        assert_eq!(f(Error::InvalidArgument("p".into())), USAGE);
        assert_eq!(f(Error::NoNode("p".into())), USAGE);
        assert_eq!(f(Error::ConnectionLoss("p".into())), CONNECT);
        assert_eq!(f(Error::SessionExpired("p".into())), CONNECT);
        assert_eq!(f(Error::Timeout("p".into())), TIMEOUT);
        assert_eq!(f(Error::Internal("p".into())), INTERNAL);
    }
}
