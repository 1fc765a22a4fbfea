//! The Node face of zkrecipes: the native half of the npm package `zkrecipes`.
//!
//! This crate is thin on purpose (DESIGN.md: faces contain no recipe logic). It maps argument
//! values, owners and errors, and turns the core's futures into JS Promises:
//!
//! - every method body runs inside the one boundary ([`boundary`]): errors become JS `Error`s
//!   whose `code` is API.md's ([`error`]), panics become `ZKR_INTERNAL`, Promises are settled
//!   from zkrecipes' one runtime (napi's own tokio runtime is not compiled in);
//! - events reach JS from the core's dispatchers through *weak* threadsafe functions
//!   ([`events`]), so they never keep the event loop alive;
//! - the words every face shares (error kinds, modes, states, ...) come from the core
//!   ([`vocabulary`]);
//! - owners are opaque 64-bit ids handed in by the JS layer, which maps async contexts
//!   (AsyncLocalStorage) onto them (`lib/owners.js`).
//!
//! The exported classes carry a `Native` prefix: the JS layer (`lib/`) wraps them into the
//! public API (`Client`, `InterProcessMutex`, ...) with type checks, EventEmitters and owners.

#![deny(clippy::all)]

mod args;
mod atomic;
mod boundary;
mod cache;
mod client;
mod discovery;
mod driving;
mod ensemble;
mod error;
mod events;
mod leader;
mod lock;
mod log;
mod nodes;
mod observer;
mod partition;
mod queue;
#[cfg(feature = "kit")]
mod testing;
mod value;
mod values;
mod vocabulary;
mod watches;

// The free functions and classes JS reaches (napi registers them; these uses keep them alive in
// every build, `cargo test` included).
pub use cache::{cache_vocabulary, watcher_event_types, NativeCache, NativePersistentWatcher};
pub use client::{check_retry_policy, NativeClient};
pub use discovery::{
    discovery_vocabulary, service_instance_build_uri, service_instance_from_json,
    service_instance_normalize, service_instance_to_json, NativeRegistration, NativeServiceCache,
    NativeServiceDiscovery, NativeServiceProvider, NativeUriSpec,
};
pub use lock::{attempt_revoke, mutex_fast_calls};
pub use log::set_logger;
pub use nodes::{commit_transaction, create_ex, get_data_decompressed, set_data_compressed};
pub use nodes::{NativeGroupMember, NativePersistentNode, NativePersistentTtlNode};
pub use partition::{
    multi_non_blocking_lease, non_blocking_lease, partition_states, NativeSetPartitioner,
};
pub use vocabulary::vocabulary;
pub use watches::watcher_types;
// The testing kit (`require('zkrecipes/testing')`), in builds with the `kit` feature.
#[cfg(feature = "kit")]
pub use testing::{
    check_security, find_zookeeper, issue_client, x509_id_for_cn, NativeFaultProxy,
    NativeTestingCluster, NativeTestingServer, SecurityOptions,
};

use napi::Env;
use napi_derive::napi;

/// The version of the zkrecipes core this addon was built from.
#[napi]
pub fn core_version(env: Env) -> napi::Result<String> {
    boundary::sync(&env, || Ok(zkrecipes::VERSION.to_string()))
}

/// A fresh owner id (never equal to another owner of this process). `lib/owners.js` wraps it in
/// its `Owner` class.
#[napi]
pub fn new_owner_id(env: Env) -> napi::Result<u64> {
    boundary::sync(&env, || Ok(zkrecipes::Owner::new().as_raw()))
}

/// How this JS thread's Promises were settled so far, and how their calls started: `[settled
/// after its own turn of the runtime, settled from the queue of the runtime's other threads,
/// started in a turn, given to the background driver behind another pending add]`
/// (src/driving.rs). Builds with the `testing` feature only.
#[cfg(feature = "testing")]
#[napi]
pub fn settled_for_testing(env: Env) -> napi::Result<Vec<f64>> {
    boundary::sync(&env, || {
        Ok(driving::settled(&env).iter().map(|&n| n as f64).collect())
    })
}

/// Makes the next method call panic inside the boundary (`where`: `'sync'`, its synchronous
/// part; `'async'`, the future of the next async method), to prove that a panic becomes
/// `ZKR_INTERNAL`. Builds with the `testing` feature only.
#[cfg(feature = "testing")]
#[napi]
pub fn panic_for_testing(env: Env, at: String) -> napi::Result<()> {
    use boundary::testing::{arm, Where};
    boundary::sync(&env, || {
        arm(match at.as_str() {
            "sync" => Where::Sync,
            "async" => Where::Async,
            other => {
                return Err(error::invalid(format!(
                    "panicForTesting: where must be 'sync' or 'async', got {other:?}"
                ))
                .into())
            }
        });
        Ok(())
    })
}
