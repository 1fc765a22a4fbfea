//! `zkr_status` and the per-thread last error message: the one place where zkrecipes'
//! `Error` becomes a C status code (API.md's error table).

use std::cell::RefCell;
use std::ffi::{c_char, CString};

use zkrecipes::{Error, ErrorKind};

use crate::boundary::ffi_boundary;

/// The result of every fallible call. `ZKR_OK` (0) is success; any other value is a failure
/// whose description is in zkr_last_error_message().
///
/// The numbers are part of the ABI: grouped in ranges (1xx misuse, 2xx connection and session,
/// 3xx refused by the server, 4xx data, 9xx our bugs), never renumbered, and a retired number is
/// never given to another meaning. New codes may be added, so a `switch` needs a `default:`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum zkr_status {
    /// Success.
    ZKR_OK = 0,
    /// A bad argument: NULL where a value is needed, invalid UTF-8, a bad path, a negative
    /// timeout other than -1, an option out of range, an uninitialized owner or options struct.
    ZKR_INVALID_ARGUMENT = 100,
    /// A release (or another owner-only operation) by an owner that does not hold the lock.
    ZKR_NOT_OWNER = 101,
    /// The client or the recipe was closed; the handle may still be freed.
    ZKR_CLOSED = 102,
    /// The connection to ZooKeeper was lost and the retry policy gave up; may be retried.
    ZKR_CONNECTION_LOSS = 200,
    /// The ZooKeeper session expired.
    ZKR_SESSION_EXPIRED = 201,
    /// A write may or may not have been applied (its reply was lost); it was not retried.
    ZKR_OUTCOME_UNKNOWN = 202,
    /// Timed out where a boolean is not the answer (connecting, say).
    ZKR_TIMEOUT = 203,
    /// The server said: no such node.
    ZKR_NO_NODE = 300,
    /// The server said: the node exists already.
    ZKR_NODE_EXISTS = 301,
    /// The server said: the expected version did not match.
    ZKR_BAD_VERSION = 302,
    /// The server refused for lack of authorization.
    ZKR_NO_AUTH = 303,
    /// The server refused to delete a node that has children.
    ZKR_NOT_EMPTY = 304,
    /// Any other error from the server or the protocol layer.
    ZKR_SERVER = 399,
    /// A node's data cannot be decoded (a counter node with too few bytes, say).
    ZKR_CORRUPTED_DATA = 400,
    /// An arithmetic result does not fit.
    ZKR_OVERFLOW = 401,
    /// A bug of ours (a caught panic, a broken invariant). Please report it.
    ZKR_INTERNAL = 900,
}

impl zkr_status {
    /// The code of an error kind. Kinds added to the core later map to `ZKR_INTERNAL` until
    /// they get a code of their own (the message still names the kind).
    pub(crate) fn of(error: &Error) -> zkr_status {
        use zkr_status::*;
        match error.kind() {
            ErrorKind::InvalidArgument => ZKR_INVALID_ARGUMENT,
            ErrorKind::NotOwner => ZKR_NOT_OWNER,
            ErrorKind::Closed => ZKR_CLOSED,
            ErrorKind::ConnectionLoss => ZKR_CONNECTION_LOSS,
            ErrorKind::SessionExpired => ZKR_SESSION_EXPIRED,
            ErrorKind::OutcomeUnknown => ZKR_OUTCOME_UNKNOWN,
            ErrorKind::Timeout => ZKR_TIMEOUT,
            ErrorKind::NoNode => ZKR_NO_NODE,
            ErrorKind::NodeExists => ZKR_NODE_EXISTS,
            ErrorKind::BadVersion => ZKR_BAD_VERSION,
            ErrorKind::NoAuth => ZKR_NO_AUTH,
            ErrorKind::NotEmpty => ZKR_NOT_EMPTY,
            ErrorKind::Server => ZKR_SERVER,
            ErrorKind::CorruptedData => ZKR_CORRUPTED_DATA,
            ErrorKind::Overflow => ZKR_OVERFLOW,
            ErrorKind::Internal => ZKR_INTERNAL,
            _ => ZKR_INTERNAL,
        }
    }

    fn name(self) -> &'static str {
        use zkr_status::*;
        match self {
            ZKR_OK => "ZKR_OK\0",
            ZKR_INVALID_ARGUMENT => "ZKR_INVALID_ARGUMENT\0",
            ZKR_NOT_OWNER => "ZKR_NOT_OWNER\0",
            ZKR_CLOSED => "ZKR_CLOSED\0",
            ZKR_CONNECTION_LOSS => "ZKR_CONNECTION_LOSS\0",
            ZKR_SESSION_EXPIRED => "ZKR_SESSION_EXPIRED\0",
            ZKR_OUTCOME_UNKNOWN => "ZKR_OUTCOME_UNKNOWN\0",
            ZKR_TIMEOUT => "ZKR_TIMEOUT\0",
            ZKR_NO_NODE => "ZKR_NO_NODE\0",
            ZKR_NODE_EXISTS => "ZKR_NODE_EXISTS\0",
            ZKR_BAD_VERSION => "ZKR_BAD_VERSION\0",
            ZKR_NO_AUTH => "ZKR_NO_AUTH\0",
            ZKR_NOT_EMPTY => "ZKR_NOT_EMPTY\0",
            ZKR_SERVER => "ZKR_SERVER\0",
            ZKR_CORRUPTED_DATA => "ZKR_CORRUPTED_DATA\0",
            ZKR_OVERFLOW => "ZKR_OVERFLOW\0",
            ZKR_INTERNAL => "ZKR_INTERNAL\0",
        }
    }

    fn from_raw(raw: u32) -> Option<zkr_status> {
        use zkr_status::*;
        const ALL: [zkr_status; 17] = [
            ZKR_OK,
            ZKR_INVALID_ARGUMENT,
            ZKR_NOT_OWNER,
            ZKR_CLOSED,
            ZKR_CONNECTION_LOSS,
            ZKR_SESSION_EXPIRED,
            ZKR_OUTCOME_UNKNOWN,
            ZKR_TIMEOUT,
            ZKR_NO_NODE,
            ZKR_NODE_EXISTS,
            ZKR_BAD_VERSION,
            ZKR_NO_AUTH,
            ZKR_NOT_EMPTY,
            ZKR_SERVER,
            ZKR_CORRUPTED_DATA,
            ZKR_OVERFLOW,
            ZKR_INTERNAL,
        ];
        ALL.into_iter().find(|s| *s as u32 == raw)
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `error` as this thread's last error (prefixed with the C function's name) and
/// returns its status.
pub(crate) fn fail(function: &str, error: &Error) -> zkr_status {
    let status = zkr_status::of(error);
    set_last_error(&format!(
        "{function}: {} ({})",
        error.message(),
        status.name().trim_end_matches('\0')
    ));
    status
}

pub(crate) fn set_last_error(message: &str) {
    // A message with an interior NUL (from a path, say) is cut there rather than lost.
    let bytes = message.as_bytes();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let c = CString::new(&bytes[..end]).unwrap_or_default();
    // During thread teardown the slot may be gone: nothing to record then.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = c);
}

/// The calling thread's last failure message: the function that failed, what went wrong (naming
/// the path where there is one) and the status name. Never NULL: `""` if no call on this thread
/// has failed yet.
///
/// The string belongs to the library. It stays valid until the next zkr_ call on this thread that
/// fails (successful calls leave it alone); copy it to keep it longer.
#[no_mangle]
pub extern "C" fn zkr_last_error_message() -> *const c_char {
    ffi_boundary("zkr_last_error_message", c"".as_ptr(), || {
        LAST_ERROR
            .try_with(|slot| slot.borrow().as_ptr())
            .unwrap_or(c"".as_ptr())
    })
}

/// The name of a status code as a static string (`"ZKR_NO_NODE"`), or `"ZKR_UNKNOWN_STATUS"`
/// for a number this library does not define. Never NULL; never freed.
#[no_mangle]
pub extern "C" fn zkr_status_name(status: u32) -> *const c_char {
    ffi_boundary(
        "zkr_status_name",
        c"ZKR_UNKNOWN_STATUS".as_ptr(),
        || match zkr_status::from_raw(status) {
            Some(s) => s.name().as_ptr().cast(),
            None => c"ZKR_UNKNOWN_STATUS".as_ptr(),
        },
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::ffi::CStr;

    use super::*;

    #[test]
    fn every_code_has_a_unique_number_and_its_own_name() {
        let mut numbers = HashSet::new();
        for raw in 0..1000u32 {
            if let Some(s) = zkr_status::from_raw(raw) {
                assert_eq!(s as u32, raw);
                assert!(numbers.insert(raw));
                let name = unsafe { CStr::from_ptr(zkr_status_name(raw)) }
                    .to_str()
                    .unwrap();
                assert_eq!(format!("{s:?}"), name);
            }
        }
        assert_eq!(numbers.len(), 17);
        // Numbers are ABI: pin a few.
        assert_eq!(zkr_status::ZKR_OK as u32, 0);
        assert_eq!(zkr_status::ZKR_INVALID_ARGUMENT as u32, 100);
        assert_eq!(zkr_status::ZKR_NOT_OWNER as u32, 101);
        assert_eq!(zkr_status::ZKR_INTERNAL as u32, 900);
        let unknown = unsafe { CStr::from_ptr(zkr_status_name(7)) }
            .to_str()
            .unwrap();
        assert_eq!(unknown, "ZKR_UNKNOWN_STATUS");
    }

    #[test]
    fn each_error_kind_maps_to_its_own_code() {
        let errors = [
            Error::InvalidArgument(String::new().into()),
            Error::NotOwner(String::new().into()),
            Error::ConnectionLoss(String::new().into()),
            Error::SessionExpired(String::new().into()),
            Error::OutcomeUnknown(String::new().into()),
            Error::Closed(String::new().into()),
            Error::NoNode(String::new().into()),
            Error::NodeExists(String::new().into()),
            Error::BadVersion(String::new().into()),
            Error::NoAuth(String::new().into()),
            Error::NotEmpty(String::new().into()),
            Error::Timeout(String::new().into()),
            Error::CorruptedData(String::new().into()),
            Error::Overflow(String::new().into()),
            Error::Server(String::new().into()),
            Error::Internal(String::new().into()),
        ];
        let codes: HashSet<u32> = errors.iter().map(|e| zkr_status::of(e) as u32).collect();
        assert_eq!(codes.len(), errors.len());
        assert!(!codes.contains(&0));
    }
}
