//! The Node face of zkrecipes: the native half of the npm package `zkrecipes`.
//!
//! This crate is thin on purpose (DESIGN.md: faces contain no recipe logic). It maps
//! argument types, owners and errors, and turns the core's futures into JS Promises:
//!
//! - every Promise is settled from a task spawned on **zkrecipes' one runtime**
//!   ([`zkrecipes::runtime::spawn`], see [`promise`]); napi's own tokio runtime is not compiled in;
//! - errors become JS `Error` objects whose `code` is API.md's (`ZKR_NO_NODE`, ...), in one place
//!   ([`error`]);
//! - events (connection states, lost holds, leadership) reach JS through *weak* (unref'd)
//!   threadsafe functions ([`events`]), so they never keep the event loop alive;
//! - owners are opaque 64-bit ids handed in by the JS layer, which maps async contexts
//!   (AsyncLocalStorage) onto them (`index.js`).
//!
//! The exported classes carry a `Native` prefix: `index.js` wraps them into the public API
//! (`Client`, `InterProcessMutex`, ...) with argument checks, EventEmitters and owners.

#![deny(clippy::all)]

mod args;
mod atomic;
pub mod bench;
mod client;
mod error;
mod events;
mod leader;
mod lock;
mod observer;
mod promise;
mod value;

pub use client::NativeClient;
pub use lock::attempt_revoke;

use napi_derive::napi;

/// The version of the zkrecipes core this addon was built from.
#[napi]
pub fn core_version() -> String {
    zkrecipes::VERSION.to_string()
}

/// A fresh owner id (never equal to another owner of this process). `index.js` wraps it in
/// its `Owner` class.
#[napi]
pub fn new_owner_id() -> u64 {
    zkrecipes::Owner::new().as_raw()
}
