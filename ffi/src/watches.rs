//! Watch removal and connection waiting on a client (`zkr_client_remove_watches`,
//! `zkr_client_wait_for_state`), and the client's request size limit.

use std::ffi::c_char;

use zkrecipes::WatcherType;

use crate::boundary::{arg_str, arg_timeout, handle_call, handle_out, wait};
use crate::client::zkr_client;
use crate::status::zkr_status;
use crate::vocab::CList;

/// The kinds of watches zkr_client_remove_watches removes (ZooKeeper's WatcherType, with its
/// numbers; the core's WatcherType in order).
pub type zkr_watcher_type = u32;
/// One-shot child watches (zkr_client_get_children_watch).
pub const ZKR_WATCHER_TYPE_CHILDREN: zkr_watcher_type = 1;
/// One-shot data watches (zkr_client_get_data_watch, zkr_client_exists_watch).
pub const ZKR_WATCHER_TYPE_DATA: zkr_watcher_type = 2;
/// Every kind.
pub const ZKR_WATCHER_TYPE_ANY: zkr_watcher_type = 3;
/// Persistent watchers (zkr_persistent_watcher_new with recursive false) and node caches on
/// the path.
pub const ZKR_WATCHER_TYPE_PERSISTENT: zkr_watcher_type = 4;
/// Recursive persistent watchers and the caches rooted at the path.
pub const ZKR_WATCHER_TYPE_PERSISTENT_RECURSIVE: zkr_watcher_type = 5;

/// The core's watcher types in C (zkr_watcher_type).
pub(crate) const WATCHER_TYPES: CList<WatcherType> = CList {
    all: WatcherType::ALL,
    first: ZKR_WATCHER_TYPE_CHILDREN,
    prefix: "ZKR_WATCHER_TYPE_",
    name: WatcherType::name,
};

/// Removes this client's watches of `type` on `path` (ZooKeeper's removeAllWatches, Curator's
/// watchers().removeAll()). Each removed one-shot watch's callback is called with
/// ZKR_WATCH_REMOVED; a removed persistent watcher's listeners hear ZKR_WATCHER_WATCH_REMOVED,
/// last. ZKR_NO_WATCHER when the client has no watch of that kind there.
///
/// One-shot kinds are removed on the server first: with `local` false, a failure to reach it is
/// returned (ZKR_CONNECTION_LOSS) and nothing is removed; with `local` true one try is made and
/// the watches are removed here whatever it says. Persistent kinds are removed here at once
/// (the path's one shared watch leaves the server with its last user). A recipe waiting on a
/// removed watch reads again and sets a new one; a cache whose watch is removed sets it again
/// and resyncs. ZooKeeper before 3.9 cannot remove a persistent watch by its kind
/// (ZOOKEEPER-4472) and strips half of one with a data or child removal (ZOOKEEPER-4471): the
/// library sets such a watch again and its users hear RECONNECTED (read again).
#[no_mangle]
pub extern "C" fn zkr_client_remove_watches(
    c: *mut zkr_client,
    path: *const c_char,
    kind: zkr_watcher_type,
    local: bool,
) -> zkr_status {
    handle_call("zkr_client_remove_watches", c, |c| {
        let path = arg_str(path, "path")?;
        let kind = WATCHER_TYPES.parse(kind, "type")?;
        wait(c.client.remove_watches(path, kind, local))
    })
}

/// Curator's blockUntilConnected(timeout): waits until the client is connected (CONNECTED,
/// RECONNECTED or READ_ONLY; at once if it is now), at most `timeout_ms` (-1: no limit; 0: look
/// once). `*connected` is false when the time ran out first. ZKR_CLOSED on a closed client.
#[no_mangle]
pub extern "C" fn zkr_client_wait_for_state(
    c: *mut zkr_client,
    timeout_ms: i64,
    connected: *mut bool,
) -> zkr_status {
    handle_out(
        "zkr_client_wait_for_state",
        c,
        connected,
        "connected",
        |c| wait(c.client.block_until_connected(arg_timeout(timeout_ms)?)),
    )
}

/// The largest request this client sends, in bytes (zkr_client_options.max_request_bytes).
#[no_mangle]
pub extern "C" fn zkr_client_max_request_bytes(
    c: *const zkr_client,
    bytes: *mut usize,
) -> zkr_status {
    handle_out("zkr_client_max_request_bytes", c, bytes, "bytes", |c| {
        Ok(c.client.max_request_bytes())
    })
}
