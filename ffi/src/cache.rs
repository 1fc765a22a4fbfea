//! Caches: CuratorCache, NodeCache, PathChildrenCache and TreeCache as one handle type,
//! `zkr_cache`, with a callback and snapshot reads.

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use zkrecipes::cache::{
    Cache, CacheEvent, CacheEventType, CacheOptions, ChildData, CuratorCache, NodeCache,
    PathChildrenCache, StartMode, TreeCache,
};
use zkrecipes::{ListenerId, Result};

use crate::boundary::arg_callback;
use crate::boundary::{arg_ref, arg_str, arg_timeout, handle_call, handle_out, recipe_new, wait};
use crate::callback::{
    CCallback, CPredicate, CallbackType, Closing, Gate, Listeners, Listening, UserData,
};
use crate::client::zkr_client;
use crate::handle::handle;
use crate::status::{keeping_last_error, zkr_status};
use crate::types::{free_returned, give_array, take_array, zkr_stat};
use crate::vocab::{c_enum_of, CList};

/// What a cache event says (the core's CacheEventType, in order).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zkr_cache_event_type {
    /// A node appeared (after ZKR_CACHE_DELETED of the same path: it was recreated).
    ZKR_CACHE_CREATED = 1,
    /// A node's data changed.
    ZKR_CACHE_CHANGED = 2,
    /// A node went away.
    ZKR_CACHE_DELETED = 3,
    /// The initial load is complete (once).
    ZKR_CACHE_INITIALIZED = 4,
    /// A resync after a reconnect or a new session is complete.
    ZKR_CACHE_RESYNCED = 5,
}

c_enum_of! { zkr_cache_event_type, CACHE_EVENTS: CacheEventType from 1 as "ZKR_CACHE_", [
    ZKR_CACHE_CREATED, ZKR_CACHE_CHANGED, ZKR_CACHE_DELETED, ZKR_CACHE_INITIALIZED, ZKR_CACHE_RESYNCED,
] }

/// PathChildrenCache's start modes (Curator's StartMode, the core's list in order), for
/// zkr_path_children_cache_new.
pub type zkr_start_mode = u32;
/// ZKR_CACHE_CREATED for the children found at start, no ZKR_CACHE_INITIALIZED.
pub const ZKR_START_NORMAL: zkr_start_mode = 1;
/// zkr_cache_start returns once loaded; no events for what it found.
pub const ZKR_START_BUILD_INITIAL_CACHE: zkr_start_mode = 2;
/// ZKR_CACHE_CREATED for the children found at start, then ZKR_CACHE_INITIALIZED.
pub const ZKR_START_POST_INITIALIZED_EVENT: zkr_start_mode = 3;

/// The core's start modes in C (zkr_start_mode's numbers; the test below checks the header).
pub(crate) const START_MODES: CList<StartMode> = CList {
    all: StartMode::ALL,
    first: ZKR_START_NORMAL,
    prefix: "ZKR_START_",
    name: StartMode::name,
};

/// A cached node. In an event it is borrowed (valid during the callback); returned by
/// zkr_cache_get it is yours (zkr_child_data_free); in a zkr_child_data_list the list owns it.
#[repr(C)]
pub struct zkr_child_data {
    /// The node's path (relative to the client's namespace), NUL-terminated.
    pub path: *mut c_char,
    /// Its data (NULL when `data_len` is 0 or the cache keeps stats only).
    pub data: *mut u8,
    /// How many bytes `data` holds.
    pub data_len: usize,
    /// False when the cache keeps stats only (zkr_cache_options.data false).
    pub has_data: bool,
    /// Its stat.
    pub stat: zkr_stat,
}

impl zkr_child_data {
    /// An owned copy (freed by `free_parts`).
    fn owned(c: &ChildData) -> Result<zkr_child_data> {
        let path = crate::types::c_string(&c.path)?;
        let (data, data_len) = give_array(c.data.as_deref().unwrap_or_default().to_vec());
        Ok(zkr_child_data {
            path,
            data,
            data_len,
            has_data: c.data.is_some(),
            stat: zkr_stat::from(&c.stat),
        })
    }

    /// Frees what [`owned`](Self::owned) allocated.
    ///
    /// # Safety
    /// `self` came from `owned` and is freed once.
    unsafe fn free_parts(self) {
        // SAFETY: this function's contract: `path` (from `CString::into_raw`) and `data` (from
        // `give_array`) were made by `owned` and are taken back once.
        unsafe {
            if !self.path.is_null() {
                drop(CString::from_raw(self.path));
            }
            drop(take_array(self.data, self.data_len));
        }
    }
}

/// A list of cached nodes sorted by path (zkr_cache_snapshot). Read it, then free it with
/// zkr_child_data_list_free; never free its parts yourself.
#[repr(C)]
pub struct zkr_child_data_list {
    /// `len` nodes (NULL when `len` is 0).
    pub items: *mut zkr_child_data,
    /// How many nodes `items` holds.
    pub len: usize,
}

/// A cache event, valid only during the callback (copy what you keep).
#[repr(C)]
pub struct zkr_cache_event {
    /// What happened.
    pub r#type: zkr_cache_event_type,
    /// The node's path (the cache's root for INITIALIZED and RESYNCED).
    pub path: *const c_char,
    /// The node before (CHANGED, DELETED), else NULL.
    pub old_node: *const zkr_child_data,
    /// The node after (CREATED, CHANGED), else NULL.
    pub new_node: *const zkr_child_data,
    /// Found by a resync walk after a reconnect or a new session (a change made while the
    /// watch could not report it).
    pub resync: bool,
}

/// A cache listener: called with each event (borrowed, valid during the call). It runs on a
/// library thread, one call at a time, in event order, where any zkr_ function may be called
/// (reading the cache included). It must not throw (C++) or longjmp out.
pub type zkr_cache_callback =
    Option<unsafe extern "C" fn(event: *const zkr_cache_event, user_data: *mut c_void)>;

type CacheFn = <zkr_cache_callback as CallbackType>::Fn;

/// How zkr_cache_new builds a cache (a CuratorCache: `data` true, `max_depth` -1).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zkr_cache_options {
    /// Keep each node's data (false: stats only).
    pub data: bool,
    /// The deepest level kept: 0 the root alone, 1 its children, ...; -1 no limit.
    pub max_depth: i32,
}

/// A cache of a subtree (Curator's CuratorCache, NodeCache, PathChildrenCache or TreeCache):
/// one persistent recursive watch, an immutable snapshot, an exact resync after reconnects.
/// It never writes to ZooKeeper. Thread-safe.
pub struct zkr_cache {
    cache: Cache,
    listeners: Listeners<zkr_cache_callback>,
    /// The path filter's gate (zkr_cache_new_filtered): closed by close and free.
    filter: Option<Arc<Gate>>,
}

handle!(zkr_cache, "cache", |c| {
    c.close();
});

impl zkr_cache {
    fn new(cache: impl Into<Cache>) -> zkr_cache {
        zkr_cache {
            cache: cache.into(),
            listeners: Listeners::default(),
            filter: None,
        }
    }

    fn close(&self) {
        // The core cache first: its close is what ends a wait (zkr_cache_await_*) with
        // ZKR_CLOSED, and a listener may be blocked in one. Only then wait for the running
        // listener (unregister_all): the other way round, each waited for the other forever.
        self.cache.close();
        self.unregister_all();
        if let Some(gate) = &self.filter {
            gate.disable();
        }
    }

    fn register_with(&self, cb: Arc<CCallback<CacheFn>>, replay: bool) -> ListenerId {
        let f = move |e: &CacheEvent| {
            let Ok(path) = CString::new(e.path.as_str()) else {
                return;
            };
            let borrowed = |c: &Option<ChildData>| c.as_ref().and_then(|c| Borrowed::new(c).ok());
            let (old, new) = (borrowed(&e.old), borrowed(&e.new));
            let view = zkr_cache_event {
                r#type: zkr_cache_event_type::of(e.kind),
                path: path.as_ptr(),
                old_node: old.as_ref().map_or(std::ptr::null(), |b| &b.c),
                new_node: new.as_ref().map_or(std::ptr::null(), |b| &b.c),
                resync: e.resync,
            };
            cb.call((&view,));
        };
        if replay {
            self.cache.listen_with_replay(f)
        } else {
            self.cache.listen(f)
        }
    }
}

/// A `zkr_child_data` pointing into Rust-owned copies, for one callback.
struct Borrowed {
    _path: CString,
    _data: Vec<u8>,
    c: zkr_child_data,
}

impl Borrowed {
    fn new(c: &ChildData) -> Result<Borrowed> {
        let path = CString::new(c.path.as_str()).map_err(|_| {
            zkrecipes::Error::Internal(format!("a path contains a NUL byte: {:?}", c.path).into())
        })?;
        let mut data = c.data.as_deref().unwrap_or_default().to_vec();
        let view = zkr_child_data {
            path: path.as_ptr().cast_mut(),
            data: if data.is_empty() {
                std::ptr::null_mut()
            } else {
                data.as_mut_ptr()
            },
            data_len: data.len(),
            has_data: c.data.is_some(),
            stat: zkr_stat::from(&c.stat),
        };
        Ok(Borrowed {
            _path: path,
            _data: data,
            c: view,
        })
    }
}

impl Closing for zkr_cache {
    fn close_handle(&self) -> Result<()> {
        self.close();
        Ok(())
    }
}

impl Listening for zkr_cache {
    type Callback = zkr_cache_callback;

    fn listeners(&self) -> &Listeners<zkr_cache_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<CacheFn>>) -> Result<ListenerId> {
        Ok(self.register_with(cb, false))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.cache.remove_listener(id)
    }
}

/// Makes a CuratorCache of the subtree at `path` (not started; the path need not exist). Free
/// with zkr_cache_free.
#[no_mangle]
pub extern "C" fn zkr_curator_cache_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_cache,
) -> zkr_status {
    recipe_new("zkr_curator_cache_new", c, path, out, |c, p| {
        Ok(zkr_cache::new(CuratorCache::new(c, p)?))
    })
}

/// Makes a cache of the subtree at `path` built as `opts` says (NULL: a CuratorCache's
/// defaults). A max_depth below -1 is ZKR_INVALID_ARGUMENT. Free with zkr_cache_free.
#[no_mangle]
pub extern "C" fn zkr_cache_new(
    c: *mut zkr_client,
    path: *const c_char,
    opts: *const zkr_cache_options,
    out: *mut *mut zkr_cache,
) -> zkr_status {
    recipe_new("zkr_cache_new", c, path, out, |c, p| {
        let mut o = CacheOptions::default();
        if !opts.is_null() {
            let given = arg_ref(opts, "opts")?;
            o.data = given.data;
            o.max_depth = depth_arg(given.max_depth)?;
        }
        Ok(zkr_cache::new(Cache::new(c, p, o)?))
    })
}

/// A cache's path filter (Curator's CuratorCacheBuilder.withSelector / TreeCache's selector):
/// true keeps `path` — the root or a node below it — in the cache (and lets the cache look below
/// it); false leaves it and everything below it out. It is called from the cache's own work
/// (several times per event: once per level below the root) on whichever thread drives the
/// library's runtime then: its zkrecipes-rt thread, or one of yours while it is inside a blocking
/// zkr_ call. So it must be thread-safe, must return quickly and must not call blocking zkr_
/// functions; `path` is valid during the call only. A zkr_ call it makes that fails records its
/// message for the filter only: once the filter returns, the thread's last error (and the string
/// zkr_last_error_message gave it) is what it was. It is not called once zkr_cache_close or
/// zkr_cache_free has returned.
pub type zkr_path_filter =
    Option<unsafe extern "C" fn(path: *const c_char, user_data: *mut c_void) -> bool>;

/// zkr_cache_new with a path filter (see zkr_path_filter): `filter(path, user_data)` decides
/// which nodes the cache keeps. `user_data` must stay valid until zkr_cache_close or
/// zkr_cache_free returns. NULL `filter` is ZKR_INVALID_ARGUMENT. Free with zkr_cache_free.
#[no_mangle]
pub extern "C" fn zkr_cache_new_filtered(
    c: *mut zkr_client,
    path: *const c_char,
    opts: *const zkr_cache_options,
    filter: zkr_path_filter,
    user_data: *mut c_void,
    out: *mut *mut zkr_cache,
) -> zkr_status {
    recipe_new("zkr_cache_new_filtered", c, path, out, |c, p| {
        let test = arg_callback(filter, "filter")?;
        let mut o = CacheOptions::default();
        if !opts.is_null() {
            let given = arg_ref(opts, "opts")?;
            o.data = given.data;
            o.max_depth = depth_arg(given.max_depth)?;
        }
        let gate = Arc::new(Gate::new());
        let open = gate.clone();
        let ud = UserData(user_data);
        o = o.path_filter(move |path| {
            let ud = ud;
            let Ok(path) = CString::new(path) else {
                return false;
            };
            // Closed: the answer no longer matters (the cache is stopping).
            let mut keep = true;
            open.run(|| keep = keeping_last_error(|| test.test(path.as_ptr(), ud.0)));
            keep
        });
        let mut handle = zkr_cache::new(Cache::new(c, p, o)?);
        handle.filter = Some(gate);
        Ok(handle)
    })
}

fn depth_arg(max_depth: i32) -> Result<Option<usize>> {
    match max_depth {
        -1 => Ok(None),
        d if d >= 0 => Ok(Some(d as usize)),
        d => Err(zkrecipes::Error::InvalidArgument(
            format!("max_depth is {d}: expected -1 (no limit) or a depth >= 0").into(),
        )),
    }
}

/// Makes a NodeCache of the one node at `path`. Free with zkr_cache_free.
#[no_mangle]
pub extern "C" fn zkr_node_cache_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_cache,
) -> zkr_status {
    recipe_new("zkr_node_cache_new", c, path, out, |c, p| {
        Ok(zkr_cache::new(NodeCache::new(c, p)?))
    })
}

/// Makes a PathChildrenCache of the children of `path` (`cache_data` false: stats only) with a
/// start mode (a zkr_start_mode; anything else is ZKR_INVALID_ARGUMENT). Free with
/// zkr_cache_free.
#[no_mangle]
pub extern "C" fn zkr_path_children_cache_new(
    c: *mut zkr_client,
    path: *const c_char,
    cache_data: bool,
    start_mode: zkr_start_mode,
    out: *mut *mut zkr_cache,
) -> zkr_status {
    recipe_new("zkr_path_children_cache_new", c, path, out, |c, p| {
        let mode = START_MODES.parse(start_mode, "start_mode")?;
        Ok(zkr_cache::new(PathChildrenCache::new(
            c, p, cache_data, mode,
        )?))
    })
}

/// Makes a TreeCache of the subtree at `path` to `max_depth` (-1: no limit; 0 the root alone).
/// Free with zkr_cache_free.
#[no_mangle]
pub extern "C" fn zkr_tree_cache_new(
    c: *mut zkr_client,
    path: *const c_char,
    max_depth: i32,
    out: *mut *mut zkr_cache,
) -> zkr_status {
    recipe_new("zkr_tree_cache_new", c, path, out, |c, p| {
        Ok(zkr_cache::new(TreeCache::new(c, p, depth_arg(max_depth)?)?))
    })
}

/// Sets the watch and starts loading (the listeners added before hear the initial load). Once
/// only: ZKR_INVALID_ARGUMENT the second time, ZKR_CLOSED after zkr_cache_close.
#[no_mangle]
pub extern "C" fn zkr_cache_start(cache: *mut zkr_cache) -> zkr_status {
    handle_call("zkr_cache_start", cache, |c| wait(c.cache.start()))
}

/// Waits until the initial load is complete (`*initialized` true) or `timeout_ms` passes
/// (false). Until then a missing node may just not be loaded yet.
#[no_mangle]
pub extern "C" fn zkr_cache_await_initialized(
    cache: *mut zkr_cache,
    timeout_ms: i64,
    initialized: *mut bool,
) -> zkr_status {
    let f = "zkr_cache_await_initialized";
    handle_out(f, cache, initialized, "initialized", |c| {
        wait(c.cache.await_initialized(arg_timeout(timeout_ms)?))
    })
}

/// Read-your-writes: waits until the cache has applied every change up to `zxid` (the mzxid
/// or czxid of a stat your write returned): `*reached` true, or false after `timeout_ms`.
#[no_mangle]
pub extern "C" fn zkr_cache_await_zxid(
    cache: *mut zkr_cache,
    zxid: i64,
    timeout_ms: i64,
    reached: *mut bool,
) -> zkr_status {
    let f = "zkr_cache_await_zxid";
    handle_out(f, cache, reached, "reached", |c| {
        wait(c.cache.await_zxid(zxid, arg_timeout(timeout_ms)?))
    })
}

/// How many nodes are cached.
#[no_mangle]
pub extern "C" fn zkr_cache_size(cache: *const zkr_cache, size: *mut usize) -> zkr_status {
    handle_out("zkr_cache_size", cache, size, "size", |c| {
        Ok(c.cache.size())
    })
}

/// The cached node at `path`: `*node` is a copy you own (free with zkr_child_data_free), or
/// NULL if the cache does not hold it. No server call.
#[no_mangle]
pub extern "C" fn zkr_cache_get(
    cache: *const zkr_cache,
    path: *const c_char,
    node: *mut *mut zkr_child_data,
) -> zkr_status {
    handle_out("zkr_cache_get", cache, node, "node", |c| {
        match c.cache.get(arg_str(path, "path")?) {
            None => Ok(std::ptr::null_mut()),
            Some(d) => Ok(Box::into_raw(Box::new(zkr_child_data::owned(&d)?))),
        }
    })
}

/// Frees a node returned by zkr_cache_get. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_child_data_free(node: *mut zkr_child_data) {
    free_returned("zkr_child_data_free", node, |n| {
        // SAFETY: the parts of a node that `owned` made, freed once with it.
        unsafe { n.free_parts() }
    })
}

/// A consistent copy of the whole cache at one moment, sorted by path: `*list` is yours (free
/// it with zkr_child_data_list_free).
#[no_mangle]
pub extern "C" fn zkr_cache_snapshot(
    cache: *const zkr_cache,
    list: *mut *mut zkr_child_data_list,
) -> zkr_status {
    handle_out("zkr_cache_snapshot", cache, list, "list", |c| {
        let mut items = Vec::new();
        for d in c.cache.snapshot().iter() {
            match zkr_child_data::owned(&d) {
                Ok(n) => items.push(n),
                Err(e) => {
                    // SAFETY: each was made by `owned` just above and never reached the caller.
                    items.into_iter().for_each(|n| unsafe { n.free_parts() });
                    return Err(e);
                }
            }
        }
        let (items, len) = give_array(items);
        Ok(Box::into_raw(Box::new(zkr_child_data_list { items, len })))
    })
}

/// Frees a list from zkr_cache_snapshot and every node in it. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_child_data_list_free(list: *mut zkr_child_data_list) {
    free_returned("zkr_child_data_list_free", list, |l| {
        // SAFETY: the parts of a list zkr_cache_snapshot made: an array from `give_array` of
        // nodes from `owned`, taken back once with the list.
        unsafe { take_array(l.items, l.len) }
            .into_iter()
            .for_each(|n| unsafe { n.free_parts() })
    })
}

/// zkr_cache_add_listener that first hears the cached nodes as ZKR_CACHE_CREATED (and
/// ZKR_CACHE_INITIALIZED if the cache is initialized), then what happens after, with nothing
/// missed or repeated in between.
#[no_mangle]
pub extern "C" fn zkr_cache_add_listener_with_replay(
    cache: *mut zkr_cache,
    callback: zkr_cache_callback,
    user_data: *mut c_void,
    listener_id: *mut u64,
) -> zkr_status {
    let f = "zkr_cache_add_listener_with_replay";
    handle_out(f, cache, listener_id, "listener_id", |c| {
        let cb = crate::boundary::arg_callback(callback, "callback")?;
        c.listeners
            .add(cb, UserData(user_data), |cb| Ok(c.register_with(cb, true)))
    })
}

/// The name of a zkr_cache_event_type ("CREATED", ...), static; NULL for an unknown number.
#[no_mangle]
pub extern "C" fn zkr_cache_event_type_name(event_type: u32) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<CString>> = std::sync::OnceLock::new();
    crate::boundary::ffi_boundary("zkr_cache_event_type_name", std::ptr::null(), || {
        CACHE_EVENTS
            .c_name(&NAMES, event_type)
            .unwrap_or(std::ptr::null())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_constants_are_the_cores_lists_in_order() {
        let h = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../include/zkrecipes.h"
        ))
        .expect("include/zkrecipes.h");
        let check = |prefix: &str, names: Vec<&str>| {
            for (i, n) in names.iter().enumerate() {
                let line = format!("{prefix}{n} = {},", i + 1);
                let define = format!("#define {prefix}{n} {}", i + 1);
                assert!(
                    h.lines().any(|l| l.trim() == line || l.trim() == define),
                    "{line} is not in include/zkrecipes.h"
                );
            }
        };
        check(
            "ZKR_CACHE_",
            CacheEventType::ALL.iter().map(|t| t.name()).collect(),
        );
        check(
            "ZKR_START_",
            StartMode::ALL.iter().map(|t| t.name()).collect(),
        );
        assert_eq!(CACHE_EVENTS.all, CacheEventType::ALL);
        assert_eq!(START_MODES.all, StartMode::ALL);
        assert!(START_MODES.parse(9, "start_mode").is_err());
    }
}
