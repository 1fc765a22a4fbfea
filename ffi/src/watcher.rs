//! Persistent watches (ZooKeeper 3.6+'s addWatch, Curator's PersistentWatcher): `zkr_watcher`,
//! a handle with callbacks.

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use zkrecipes::client::{PersistentWatcher, WatchEvent};
use zkrecipes::{ListenerId, Result};

use crate::boundary::{handle_call, recipe_new, wait};
use crate::callback::{CCallback, CallbackType, Closing, Listeners, Listening};
use crate::client::zkr_client;
use crate::handle::handle;
use crate::status::zkr_status;
use crate::vocab::CList;

/// What a persistent watcher heard (the core's WatchEvent names, in order).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zkr_watcher_event_type {
    /// A node was created.
    ZKR_WATCHER_CREATED = 1,
    /// A node was deleted.
    ZKR_WATCHER_DELETED = 2,
    /// A node's data changed.
    ZKR_WATCHER_DATA_CHANGED = 3,
    /// The watched node's children changed (non-recursive watchers only).
    ZKR_WATCHER_CHILDREN_CHANGED = 4,
    /// The connection was lost (path NULL); changes from now on may not be reported.
    ZKR_WATCHER_DISCONNECTED = 5,
    /// Connected again with the watch set again (path NULL). Changes made meanwhile were NOT
    /// reported: read again what matters (or use a zkr_cache, which does).
    ZKR_WATCHER_RECONNECTED = 6,
    /// The session ended (path NULL); the watch is set again on the next session and
    /// ZKR_WATCHER_RECONNECTED follows.
    ZKR_WATCHER_SESSION_LOST = 7,
    /// The watch was removed by zkr_client_remove_watches (path NULL): the last event.
    ZKR_WATCHER_WATCH_REMOVED = 8,
}

fn same(name: &'static str) -> &'static str {
    name
}

/// The core's watch event names as C numbers (the test below checks the header).
pub(crate) const WATCHER_EVENTS: CList<&'static str> = CList {
    all: WatchEvent::NAMES,
    first: 1,
    prefix: "ZKR_WATCHER_",
    name: same,
};

impl zkr_watcher_event_type {
    fn of(e: &WatchEvent) -> zkr_watcher_event_type {
        use zkr_watcher_event_type::*;
        [
            ZKR_WATCHER_CREATED,
            ZKR_WATCHER_DELETED,
            ZKR_WATCHER_DATA_CHANGED,
            ZKR_WATCHER_CHILDREN_CHANGED,
            ZKR_WATCHER_DISCONNECTED,
            ZKR_WATCHER_RECONNECTED,
            ZKR_WATCHER_SESSION_LOST,
            ZKR_WATCHER_WATCH_REMOVED,
        ][(WATCHER_EVENTS.to_c(e.name()) - WATCHER_EVENTS.first) as usize]
    }
}

/// A watcher listener: called with each event's type and the node's path (relative to the
/// client's namespace; NULL for DISCONNECTED, RECONNECTED, SESSION_LOST and WATCH_REMOVED), valid during the
/// call. It runs on a library thread, one call at a time, in the order the server sent the
/// events, where any zkr_ function may be called. It must not throw (C++) or longjmp out.
pub type zkr_watcher_callback = Option<
    unsafe extern "C" fn(
        event_type: zkr_watcher_event_type,
        path: *const c_char,
        user_data: *mut c_void,
    ),
>;

type WatcherFn = <zkr_watcher_callback as CallbackType>::Fn;

/// A persistent watch on a path, optionally recursive (every node below it too): Curator's
/// PersistentWatcher. It stays set across reconnects and sessions until closed. Watchers and
/// caches on one path of one client share one watch on the server, whatever their modes (the
/// recursive one serves the plain ones, filtered). zkr_client_remove_watches of its kind ends it:
/// ZKR_WATCHER_WATCH_REMOVED is its last event.
/// Thread-safe.
pub struct zkr_watcher {
    watcher: PersistentWatcher,
    listeners: Listeners<zkr_watcher_callback>,
}

handle!(zkr_watcher, "watcher", |w| {
    w.close();
});

impl zkr_watcher {
    fn close(&self) {
        self.unregister_all();
        self.watcher.close();
    }
}

impl Closing for zkr_watcher {
    fn close_handle(&self) -> Result<()> {
        self.close();
        Ok(())
    }
}

impl Listening for zkr_watcher {
    type Callback = zkr_watcher_callback;

    fn listeners(&self) -> &Listeners<zkr_watcher_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<WatcherFn>>) -> Result<ListenerId> {
        Ok(self.watcher.listen(move |e: &WatchEvent| {
            let path = match e.path() {
                Some(p) => match CString::new(p) {
                    Ok(p) => Some(p),
                    Err(_) => return,
                },
                None => None,
            };
            let ptr = path.as_ref().map_or(std::ptr::null(), |p| p.as_ptr());
            let kind = zkr_watcher_event_type::of(e);
            cb.call((kind, ptr));
        }))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.watcher.remove_listener(id)
    }
}

/// Makes a persistent watcher of `path` (not started; the path need not exist); `recursive`
/// also covers every node below it. Free with zkr_watcher_free.
#[no_mangle]
pub extern "C" fn zkr_persistent_watcher_new(
    c: *mut zkr_client,
    path: *const c_char,
    recursive: bool,
    out: *mut *mut zkr_watcher,
) -> zkr_status {
    recipe_new("zkr_persistent_watcher_new", c, path, out, |c, p| {
        Ok(zkr_watcher {
            watcher: PersistentWatcher::new(c, p, recursive)?,
            listeners: Listeners::default(),
        })
    })
}

/// Sets the watch; returns once the server has it (the listeners added before hear every event
/// from then on). Once only: ZKR_INVALID_ARGUMENT the second time, ZKR_CLOSED after
/// zkr_watcher_close.
#[no_mangle]
pub extern "C" fn zkr_watcher_start(watcher: *mut zkr_watcher) -> zkr_status {
    handle_call("zkr_watcher_start", watcher, |w| wait(w.watcher.start()))
}

/// The name of a zkr_watcher_event_type ("CREATED", "DATA_CHANGED", ...), static; NULL for an
/// unknown number.
#[no_mangle]
pub extern "C" fn zkr_watcher_event_type_name(event_type: u32) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<CString>> = std::sync::OnceLock::new();
    crate::boundary::ffi_boundary("zkr_watcher_event_type_name", std::ptr::null(), || {
        WATCHER_EVENTS
            .c_name(&NAMES, event_type)
            .unwrap_or(std::ptr::null())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watcher_constants_are_the_cores_names_in_order() {
        let h = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../include/zkrecipes.h"
        ))
        .expect("include/zkrecipes.h");
        for (i, n) in WatchEvent::NAMES.iter().enumerate() {
            let line = format!("ZKR_WATCHER_{n} = {},", i + 1);
            assert!(
                h.lines().any(|l| l.trim() == line),
                "{line} is not in include/zkrecipes.h"
            );
        }
        assert_eq!(
            zkr_watcher_event_type::of(&WatchEvent::SessionLost),
            zkr_watcher_event_type::ZKR_WATCHER_SESSION_LOST
        );
        assert_eq!(
            zkr_watcher_event_type::of(&WatchEvent::Reconnected) as u32,
            WATCHER_EVENTS.to_c("RECONNECTED")
        );
        assert_eq!(
            zkr_watcher_event_type::of(&WatchEvent::Removed),
            zkr_watcher_event_type::ZKR_WATCHER_WATCH_REMOVED
        );
        assert!(WATCHER_EVENTS.get(9).is_none());
    }
}
