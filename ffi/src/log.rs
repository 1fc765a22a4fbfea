//! The log callback: zkrecipes' log records (connection states, retries, session expiry, lost
//! holds and leadership, corrupted nodes) handed to one C function.
//!
//! One per process, not one per client: the core logs through one process-wide sink
//! (`zkrecipes::log::set_logger`) and its records do not say which client they come from, so a
//! per-client option would either hand one client's records to another's callback or silently
//! replace the first client's callback with the second's. A process-wide `zkr_set_logger` says
//! what happens: the last call wins, for every client.

use std::ffi::{c_char, c_void, CString};
use std::sync::OnceLock;

use zkrecipes::log::{self, Level, Record};

use crate::boundary::{arg_callback, ffi_boundary, ffi_call};
use crate::callback::{Slot, UserData};
use crate::status::zkr_status;
use crate::vocab::CList;

/// How severe a log record is, most severe first (the core's levels, in order); also the most
/// verbose level zkr_set_logger passes on.
pub type zkr_log_level = u32;
/// Logging off (zkr_set_logger only).
pub const ZKR_LOG_OFF: zkr_log_level = 0;
/// A failure the caller hears about too, or corrupted data.
pub const ZKR_LOG_ERROR: zkr_log_level = 1;
/// Something went wrong that the library handles: a session expiry, a lost hold or leadership.
pub const ZKR_LOG_WARN: zkr_log_level = 2;
/// A notable change: connected, reconnected, a protected node recovered.
pub const ZKR_LOG_INFO: zkr_log_level = 3;
/// What the library does: retries, deletes in the background.
pub const ZKR_LOG_DEBUG: zkr_log_level = 4;
/// Every step.
pub const ZKR_LOG_TRACE: zkr_log_level = 5;

/// The core's levels in C (zkr_log_level).
pub(crate) const LEVELS: CList<Level> = CList {
    all: Level::ALL,
    first: ZKR_LOG_ERROR,
    prefix: "ZKR_LOG_",
    name: Level::name,
};

/// A log callback: `level` (ZKR_LOG_ERROR .. ZKR_LOG_TRACE), `target` (where the record comes
/// from: "zkrecipes::client::connection", "zkrecipes::lock", ...) and `message` (the text,
/// followed by its fields as `key=value`), both valid only during the call. Records are
/// delivered one at a time, in the order they were logged, on a library thread (never a thread
/// of the library's async workers, never the thread whose call logged the record), where any
/// zkr_ function may be called. It must not throw (C++) or longjmp out.
pub type zkr_log_callback = Option<
    unsafe extern "C" fn(
        level: zkr_log_level,
        target: *const c_char,
        message: *const c_char,
        user_data: *mut c_void,
    ),
>;

static LOGGER: Slot<zkr_log_callback> = Slot::new();

/// A string for C, cut at an interior NUL.
fn c_text(s: &str) -> CString {
    let end = s.find('\0').unwrap_or(s.len());
    CString::new(&s[..end]).unwrap_or_default()
}

fn deliver(r: &Record) {
    let (target, message) = (c_text(&r.target), c_text(&r.message));
    let level = LEVELS.to_c(r.level);
    LOGGER.fire((level, target.as_ptr(), message.as_ptr()));
}

/// Sends zkrecipes' log records of `max_level` and more severe (ZKR_LOG_ERROR .. ZKR_LOG_TRACE)
/// to `callback(level, target, message, user_data)`, for every client of the process, replacing
/// the callback of an earlier call. `ZKR_LOG_OFF` (with a NULL callback) turns logging off; off
/// is the default, and costs nothing. When this returns, the callback it replaced is not running
/// (unless this is called from inside it) and will not run again, so its user_data may be freed.
///
/// Errors: ZKR_INVALID_ARGUMENT for a level above ZKR_LOG_TRACE, a NULL callback with a level
/// other than ZKR_LOG_OFF, or a process whose Rust code already installed its own `tracing`
/// subscriber (configure that one instead).
#[no_mangle]
pub extern "C" fn zkr_set_logger(
    max_level: zkr_log_level,
    callback: zkr_log_callback,
    user_data: *mut c_void,
) -> zkr_status {
    ffi_call("zkr_set_logger", || {
        if max_level == ZKR_LOG_OFF {
            log::set_max_level(None);
            LOGGER.set(None, UserData(user_data));
            return Ok(());
        }
        let level = LEVELS.parse(max_level, "max_level")?;
        let f = arg_callback(callback, "callback")?;
        log::set_logger(Some(level), deliver)?;
        LOGGER.set(Some(f), UserData(user_data));
        Ok(())
    })
}

/// The name of a log level ("ERROR", "WARN", "INFO", "DEBUG", "TRACE"), or "OFF" for
/// ZKR_LOG_OFF, or "UNKNOWN". A static string: never NULL, never freed.
#[no_mangle]
pub extern "C" fn zkr_log_level_name(level: zkr_log_level) -> *const c_char {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    ffi_boundary("zkr_log_level_name", c"UNKNOWN".as_ptr(), || match level {
        ZKR_LOG_OFF => c"OFF".as_ptr(),
        _ => LEVELS.c_name(&NAMES, level).unwrap_or(c"UNKNOWN".as_ptr()),
    })
}
