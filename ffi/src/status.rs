//! `zkr_status` and the per-thread last error message: the one place where zkrecipes' `Error`
//! becomes a C status code. The numbers and names are the core's (`ErrorKind::code`,
//! `ErrorKind::name`); this file only spells them for cbindgen, which needs the values in the
//! source, and a test keeps the two in step.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use zkrecipes::{Error, ErrorKind};

use crate::boundary::ffi_boundary;

/// The result of every fallible call. `ZKR_OK` (0) is success; any other value is a failure
/// whose description is in zkr_last_error_message().
///
/// The numbers are part of the ABI and are the core's error codes: grouped in ranges (1xx
/// misuse, 2xx connection and session, 3xx refused by the server, 4xx data, 9xx our bugs),
/// never renumbered, and a retired number is never given to another meaning. New codes may be
/// added, so a `switch` needs a `default:`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zkr_status {
    /// Success.
    ZKR_OK = 0,
    /// A bad argument: NULL where a value is needed, invalid UTF-8, a bad path, a negative
    /// timeout other than -1, an option out of range, an uninitialized owner or options struct,
    /// a request too large for the server, a handle already freed or of another type.
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
    /// Authentication failed: SASL credentials refused (wrong password, unknown user), SASL
    /// required and none configured, or a TLS certificate refused (the server's by us, or ours
    /// by the server). Returned by zkr_client_connect at once and never retried; a session
    /// refused later ends LOST and every call returns this.
    ZKR_AUTH_FAILED = 204,
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
    /// A node we would take over belongs to another live session (a member id registered by
    /// someone else); it was left untouched.
    ZKR_CONFLICT = 305,
    /// There is no watch of the kind asked for on that path in this client
    /// (zkr_client_remove_watches; ZooKeeper's NoWatcherException).
    ZKR_NO_WATCHER = 306,
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
    /// Every status, ZKR_OK first, then in the core's code order.
    const ALL: [zkr_status; 20] = {
        use zkr_status::*;
        [
            ZKR_OK,
            ZKR_INVALID_ARGUMENT,
            ZKR_NOT_OWNER,
            ZKR_CLOSED,
            ZKR_CONNECTION_LOSS,
            ZKR_SESSION_EXPIRED,
            ZKR_OUTCOME_UNKNOWN,
            ZKR_TIMEOUT,
            ZKR_AUTH_FAILED,
            ZKR_NO_NODE,
            ZKR_NODE_EXISTS,
            ZKR_BAD_VERSION,
            ZKR_NO_AUTH,
            ZKR_NOT_EMPTY,
            ZKR_CONFLICT,
            ZKR_NO_WATCHER,
            ZKR_SERVER,
            ZKR_CORRUPTED_DATA,
            ZKR_OVERFLOW,
            ZKR_INTERNAL,
        ]
    };

    fn from_raw(raw: u32) -> Option<zkr_status> {
        zkr_status::ALL.into_iter().find(|s| *s as u32 == raw)
    }

    /// The status of an error kind: the one with the kind's code (the unit test below proves
    /// every kind has one).
    pub(crate) fn of(kind: ErrorKind) -> zkr_status {
        zkr_status::from_raw(kind.code()).unwrap_or(zkr_status::ZKR_INTERNAL)
    }
}

/// "ZKR_" + the core's name of each code, as static C strings.
fn status_name(raw: u32) -> Option<&'static CString> {
    static NAMES: OnceLock<Vec<(u32, CString)>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let ok = (0, "OK");
        std::iter::once(ok)
            .chain(ErrorKind::ALL.iter().map(|k| (k.code(), k.name())))
            .map(|(code, name)| (code, CString::new(format!("ZKR_{name}")).expect("no NUL")))
            .collect()
    });
    names.iter().find(|(c, _)| *c == raw).map(|(_, n)| n)
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `error` as this thread's last error (the C function's name, the message, the
/// status name and ZooKeeper's own code if there is one) and returns its status.
pub(crate) fn fail(function: &str, error: &Error) -> zkr_status {
    let kind = error.kind();
    let zk = error
        .zk_code()
        .map(|c| format!(", ZooKeeper code {c}"))
        .unwrap_or_default();
    set_last_error(&format!(
        "{function}: {} (ZKR_{}{zk})",
        error.message(),
        kind.name()
    ));
    zkr_status::of(kind)
}

/// Runs `f`, a C callback that may run on a user's thread while it is inside a blocking zkr_
/// call (a cache's path filter), keeping that thread's last error: what a failing zkr_ call of
/// the callback records is dropped when it returns, and the message the thread had, at the
/// address zkr_last_error_message gave out, is back.
pub(crate) fn keeping_last_error<T>(f: impl FnOnce() -> T) -> T {
    let saved = LAST_ERROR
        .try_with(|slot| std::mem::take(&mut *slot.borrow_mut()))
        .ok();
    let result = f();
    if let Some(saved) = saved {
        let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = saved);
    }
    result
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
/// the path where there is one), the status name and, for a failure reported by ZooKeeper, its
/// own error code. Never NULL: `""` if no call on this thread has failed yet.
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
    ffi_boundary("zkr_status_name", c"ZKR_UNKNOWN_STATUS".as_ptr(), || {
        status_name(status).map_or(c"ZKR_UNKNOWN_STATUS".as_ptr(), |n| n.as_ptr())
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;

    fn name(raw: u32) -> &'static str {
        // SAFETY: the library returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(zkr_status_name(raw)) }
            .to_str()
            .unwrap()
    }

    #[test]
    fn every_error_kind_has_the_status_of_its_code_and_name() {
        for kind in ErrorKind::ALL {
            let status = zkr_status::from_raw(kind.code())
                .unwrap_or_else(|| panic!("{kind:?} (code {}) has no zkr_status", kind.code()));
            assert_eq!(format!("{status:?}"), format!("ZKR_{}", kind.name()));
            assert_eq!(zkr_status::of(*kind), status);
            assert_eq!(name(kind.code()), format!("ZKR_{}", kind.name()));
        }
        // And nothing else but ZKR_OK.
        assert_eq!(zkr_status::ALL.len(), ErrorKind::ALL.len() + 1);
        assert_eq!(zkr_status::ZKR_OK as u32, 0);
        assert_eq!(name(0), "ZKR_OK");
        assert_eq!(name(7), "ZKR_UNKNOWN_STATUS");
        // Numbers are ABI: pin a few.
        assert_eq!(zkr_status::ZKR_INVALID_ARGUMENT as u32, 100);
        assert_eq!(zkr_status::ZKR_CONFLICT as u32, 305);
        assert_eq!(zkr_status::ZKR_INTERNAL as u32, 900);
    }

    #[test]
    fn the_message_carries_the_status_name_and_zookeepers_code() {
        use zkrecipes::Detail;
        let e = Error::NoNode(Detail::new("get data /a").with_zk_code(-101));
        assert_eq!(fail("zkr_f", &e), zkr_status::ZKR_NO_NODE);
        // SAFETY: the library returns a valid NUL-terminated string.
        let m = unsafe { CStr::from_ptr(zkr_last_error_message()) };
        assert_eq!(
            m.to_str().unwrap(),
            "zkr_f: get data /a (ZKR_NO_NODE, ZooKeeper code -101)"
        );
    }
}
