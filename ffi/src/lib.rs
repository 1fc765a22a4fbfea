//! The C ABI of zkrecipes: `libzkrecipes.so` / `libzkrecipes.a` and the generated, committed
//! `include/zkrecipes.h` (see `docs/C_API.md` for the conventions).
//!
//! This crate holds no recipe logic: it checks arguments, maps types, owners and errors from
//! the core's vocabulary, and runs the core's blocking calls on the core's one runtime. Every
//! export is one call of a helper of [`boundary`] (the panic boundary, the argument checks, the
//! C caller's contract), on a handle of [`handle`] (tagged, so that a freed handle is refused),
//! with its callbacks behind [`callback`]'s gates.

#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)] // every unsafe export documents its contract in the header

pub mod acl;
pub mod atomic;
pub mod barriers;
mod boundary;
pub mod cache;
mod callback;
pub mod client;
pub mod discovery;
mod handle;
pub mod leader;
pub mod lock;
pub mod log;
pub mod nodes;
pub mod options;
pub mod queue;
pub mod status;
pub mod transaction;
pub mod types;
mod vocab;
pub mod watcher;

use std::ffi::c_char;

use boundary::ffi_boundary;

/// The library's version, "MAJOR.MINOR.PATCH" (compare with ZKR_VERSION_STRING, the version of
/// the header you compiled against). A static string: never NULL, never freed.
#[no_mangle]
pub extern "C" fn zkr_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    ffi_boundary("zkr_version", VERSION.as_ptr().cast(), || {
        VERSION.as_ptr().cast()
    })
}
