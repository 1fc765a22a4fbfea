//! The client: connect/close/free, connection states and their callbacks, the plain operations
//! and one-shot watches.

use std::ffi::{c_char, c_void, CString};
use std::sync::{Arc, OnceLock};

use zkrecipes::client::{NodeEvent, Watch};
use zkrecipes::{
    Client, ConnectionState, CreateMode, CreateOptions, DeleteOptions, Error, ListenerId,
    NodeEventKind, Result,
};

use crate::boundary::{
    arg_callback, arg_out, arg_out_opt, arg_slice, arg_str, ffi_boundary, ffi_call, handle_call,
    handle_out, wait,
};
use crate::callback::{
    CCallback, CFn, CallbackType, Closing, Gate, Listeners, Listening, UserData,
};
use crate::handle::{handle, new_handle};
use crate::options::{builder, read_options, zkr_client_options};
use crate::status::zkr_status;
use crate::types::{c_string, zkr_buffer, zkr_stat, zkr_string_list};
use crate::vocab::{c_enum_of, CList};

/// A ZooKeeper client (Curator's CuratorFramework): one session at a time, renewed by itself
/// after LOST. Thread-safe: any thread may use it, and recipes made from it, concurrently.
/// Made by zkr_client_connect, freed by zkr_client_free.
pub struct zkr_client {
    pub(crate) client: Client,
    listeners: Listeners<zkr_state_callback>,
    /// Disabled by free: then no watch callback of this client runs any more.
    watches: Arc<Gate>,
}

// No callback starts once the free begins; the client is closed, and only then are running
// callbacks waited for: one blocked in a wait that only the close ends (zkr_client_wait_for_state,
// a recipe's -1 wait: ZKR_CLOSED) and the free would otherwise wait for each other for good.
handle!(zkr_client, "client", |c| {
    c.shut_all();
    c.watches.shut();
    c.client.close_blocking();
    c.unregister_all();
    c.watches.disable();
});

impl Closing for zkr_client {
    fn close_handle(&self) -> Result<()> {
        wait(async {
            self.client.close().await;
            Ok(())
        })
    }
}

impl Listening for zkr_client {
    type Callback = zkr_state_callback;

    fn listeners(&self) -> &Listeners<zkr_state_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<StateFn>>) -> Result<ListenerId> {
        let client = self.open("state listener")?;
        Ok(client.add_state_listener(move |s| {
            let state = zkr_connection_state::of(s);
            cb.call((state,))
        }))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.client.remove_state_listener(id)
    }
}

type StateFn = <zkr_state_callback as CallbackType>::Fn;

// ---------------------------------------------------------------------------------------------
// Connect, close, free

/// Connects to ZooKeeper: `hosts` is "host:port[,host:port...][/chroot]"; `opts` may be NULL for
/// the defaults. Waits up to the connection timeout for a session; on success `*out` is a new
/// client (free it with zkr_client_free).
///
/// Errors: ZKR_INVALID_ARGUMENT (bad connect string or option), ZKR_TIMEOUT (no server answered
/// within the connection timeout; the message says why).
#[no_mangle]
pub extern "C" fn zkr_client_connect(
    hosts: *const c_char,
    opts: *const zkr_client_options,
    out: *mut *mut zkr_client,
) -> zkr_status {
    ffi_call("zkr_client_connect", || {
        let hosts = arg_str(hosts, "hosts")?;
        let out = arg_out(out, "out")?;
        // SAFETY: `opts` is NULL or the caller's zkr_client_options (contract 2), whose leading
        // `size` says how many bytes of it are readable: what read_options relies on.
        let options = builder(hosts, &unsafe { read_options(opts) }?)?;
        let client = wait(options.connect())?;
        out.write(new_handle(zkr_client {
            client,
            listeners: Listeners::default(),
            watches: Arc::new(Gate::new()),
        }));
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------
// Connection states

/// Curator's connection states.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zkr_connection_state {
    /// The first successful connection.
    ZKR_STATE_CONNECTED = 1,
    /// The connection was lost; the session may still be alive. Treat locks and leadership as
    /// uncertain.
    ZKR_STATE_SUSPENDED = 2,
    /// Connected again after SUSPENDED or LOST (after LOST, with a new session).
    ZKR_STATE_RECONNECTED = 3,
    /// The session is gone (expired, or SUSPENDED for a whole session timeout); its ephemeral
    /// nodes are gone. The client opens a new session by itself.
    ZKR_STATE_LOST = 4,
    /// Connected to a read-only server.
    ZKR_STATE_READ_ONLY = 5,
}

// The core's states in C.
c_enum_of! { zkr_connection_state, STATES: ConnectionState from 1 as "ZKR_STATE_", [
    ZKR_STATE_CONNECTED, ZKR_STATE_SUSPENDED, ZKR_STATE_RECONNECTED, ZKR_STATE_LOST, ZKR_STATE_READ_ONLY,
] }

/// Curator's name of a state ("CONNECTED", "SUSPENDED", "RECONNECTED", "LOST", "READ_ONLY"), or
/// "UNKNOWN". A static string: never NULL, never freed.
#[no_mangle]
pub extern "C" fn zkr_connection_state_name(state: u32) -> *const c_char {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    ffi_boundary("zkr_connection_state_name", c"UNKNOWN".as_ptr(), || {
        STATES.c_name(&NAMES, state).unwrap_or(c"UNKNOWN".as_ptr())
    })
}

impl zkr_client {
    /// The client, unless it is closed (`what` names the recipe or the call in the message).
    pub(crate) fn open(&self, what: &str) -> Result<&Client> {
        if self.client.is_closed() {
            return Err(Error::Closed(
                format!("{what}: the client is closed").into(),
            ));
        }
        Ok(&self.client)
    }
}

/// The current connection state.
#[no_mangle]
pub extern "C" fn zkr_client_state(
    c: *const zkr_client,
    state: *mut zkr_connection_state,
) -> zkr_status {
    handle_out("zkr_client_state", c, state, "state", |c| {
        Ok(zkr_connection_state::of(c.open("state")?.state()))
    })
}

/// The current session id (it changes after LOST → RECONNECTED).
#[no_mangle]
pub extern "C" fn zkr_client_session_id(c: *const zkr_client, session_id: *mut i64) -> zkr_status {
    handle_out("zkr_client_session_id", c, session_id, "session_id", |c| {
        Ok(c.open("session id")?.session_id())
    })
}

/// A connection-state callback. It runs on a library thread (never the thread that registered
/// it, never one of the library's async workers), one call at a time and in the order the states
/// happened, in order with this client's watch callbacks. Inside it any zkr_ function may be
/// called, including blocking ones and freeing this client; it should return soon, since later
/// states wait for it. It must not throw (C++) or longjmp out.
pub type zkr_state_callback =
    Option<unsafe extern "C" fn(state: zkr_connection_state, user_data: *mut c_void)>;

/// Expires this client's session on the server, as Curator's tests do (a second connection joins
/// the session and closes it). For tests of session loss: the client then reports LOST and
/// RECONNECTED with a new session. Only in builds with the `testing` feature (declared when
/// ZKR_TESTING is defined).
#[cfg(feature = "testing")]
#[no_mangle]
pub extern "C" fn zkr_client_expire_session_for_testing(c: *mut zkr_client) -> zkr_status {
    handle_call("zkr_client_expire_session_for_testing", c, |c| {
        // Owned: the wait holds no handle to the client, which a LOST callback may free.
        let expire = zkrecipes_testing::expire_client_session(&c.client);
        wait(async { expire.await.map_err(|e| Error::Timeout(e.into())) })
    })
}

// ---------------------------------------------------------------------------------------------
// Plain operations

/// ZooKeeper node types for zkr_client_create (the core's CreateMode, in order).
pub type zkr_create_mode = u32;
/// A node that lives until deleted.
pub const ZKR_PERSISTENT: zkr_create_mode = 0;
/// A persistent node whose name gets a 10-digit sequence number.
pub const ZKR_PERSISTENT_SEQUENTIAL: zkr_create_mode = 1;
/// A node deleted when the session ends.
pub const ZKR_EPHEMERAL: zkr_create_mode = 2;
/// An ephemeral node whose name gets a 10-digit sequence number.
pub const ZKR_EPHEMERAL_SEQUENTIAL: zkr_create_mode = 3;
/// A node the server deletes once its last child is gone.
pub const ZKR_CONTAINER: zkr_create_mode = 4;
/// A persistent node the server deletes once it has had no change and no child for its TTL
/// (zkr_client_create_ttl; the server needs zookeeper.extendedTypesEnabled).
pub const ZKR_PERSISTENT_WITH_TTL: zkr_create_mode = 5;
/// ZKR_PERSISTENT_WITH_TTL with a 10-digit sequence number.
pub const ZKR_PERSISTENT_SEQUENTIAL_WITH_TTL: zkr_create_mode = 6;

/// The core's create modes in C (zkr_create_mode).
pub(crate) const CREATE_MODES: CList<CreateMode> = CList {
    all: CreateMode::ALL,
    first: ZKR_PERSISTENT,
    prefix: "ZKR_",
    name: CreateMode::name,
};

/// zkr_client_create flag: create missing parents (as container nodes).
pub const ZKR_CREATE_PARENTS: u32 = 1;
/// zkr_client_create flag: Curator's protected mode (`_c_<uuid>-` name prefix, so the node is
/// found again instead of created twice after a connection loss).
pub const ZKR_CREATE_PROTECTED: u32 = 2;

/// zkr_client_delete flag: keep retrying in the background after a connection loss until the
/// node is gone (Curator's guaranteed()).
pub const ZKR_DELETE_GUARANTEED: u32 = 1;
/// zkr_client_delete flag: delete the children first.
pub const ZKR_DELETE_RECURSIVE: u32 = 2;

/// Which of `known` bits are set in `flags`; unknown bits are refused.
pub(crate) fn flags_arg(flags: u32, known: u32) -> Result<impl Fn(u32) -> bool> {
    if flags & !known != 0 {
        return Err(Error::InvalidArgument(
            format!("flags: unknown flag bits {:#x}", flags & !known).into(),
        ));
    }
    Ok(move |flag| flags & flag != 0)
}

/// A node version: -1 for any.
pub(crate) fn version_arg(version: i32) -> Result<Option<i32>> {
    match version {
        -1 => Ok(None),
        v if v < 0 => Err(Error::InvalidArgument(
            format!("version is {v}: use -1 for any version").into(),
        )),
        v => Ok(Some(v)),
    }
}

/// Writes a stat to an optional out-parameter.
pub(crate) fn put_stat(out: *mut zkr_stat, stat: Option<&zkrecipes::Stat>) {
    if let (Some(o), Some(s)) = (arg_out_opt(out), stat) {
        o.write(zkr_stat::from(s));
    }
}

/// Creates a node with `data_len` bytes of `data` (`data` may be NULL when `data_len` is 0).
/// `flags` is 0 or ZKR_CREATE_PARENTS | ZKR_CREATE_PROTECTED. If `created_path` is not NULL it
/// receives the actual path (with sequence number and protected prefix), freed with
/// zkr_string_free. A request larger than the server accepts (path + data + ACL over 1 MiB) is
/// ZKR_INVALID_ARGUMENT naming the sizes, and is not sent.
#[no_mangle]
pub extern "C" fn zkr_client_create(
    c: *mut zkr_client,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    mode: zkr_create_mode,
    flags: u32,
    created_path: *mut *mut c_char,
) -> zkr_status {
    handle_call("zkr_client_create", c, |c| {
        let path = arg_str(path, "path")?;
        let data = arg_slice(data, data_len, "data")?;
        let flag = flags_arg(flags, ZKR_CREATE_PARENTS | ZKR_CREATE_PROTECTED)?;
        let mut options = CreateOptions::new(CREATE_MODES.parse(mode, "mode")?);
        options.create_parents = flag(ZKR_CREATE_PARENTS);
        options.protected = flag(ZKR_CREATE_PROTECTED);
        let out = arg_out_opt(created_path);
        let created = wait(c.client.create(path, data, options))?;
        if let Some(out) = out {
            out.write(c_string(&created.path)?);
        }
        Ok(())
    })
}

/// Reads a node's data into `*data` (free with zkr_buffer_free) and, if `stat` is not NULL, its
/// stat. ZKR_NO_NODE if it does not exist.
#[no_mangle]
pub extern "C" fn zkr_client_get_data(
    c: *mut zkr_client,
    path: *const c_char,
    data: *mut *mut zkr_buffer,
    stat: *mut zkr_stat,
) -> zkr_status {
    handle_out("zkr_client_get_data", c, data, "data", |c| {
        let (bytes, s) = wait(c.client.get_data(arg_str(path, "path")?))?;
        put_stat(stat, Some(&s));
        Ok(zkr_buffer::from_vec(bytes))
    })
}

/// Sets a node's data; `version` -1 for any version, else the expected version (ZKR_BAD_VERSION
/// if it differs). If `stat` is not NULL it receives the new stat. Data too large for the server
/// is ZKR_INVALID_ARGUMENT (see zkr_client_create).
#[no_mangle]
pub extern "C" fn zkr_client_set_data(
    c: *mut zkr_client,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    version: i32,
    stat: *mut zkr_stat,
) -> zkr_status {
    handle_call("zkr_client_set_data", c, |c| {
        let path = arg_str(path, "path")?;
        let data = arg_slice(data, data_len, "data")?;
        let s = wait(c.client.set_data(path, data, version_arg(version)?))?;
        put_stat(stat, Some(&s));
        Ok(())
    })
}

/// Deletes a node; `version` -1 for any version. `flags` is 0 or ZKR_DELETE_GUARANTEED |
/// ZKR_DELETE_RECURSIVE.
#[no_mangle]
pub extern "C" fn zkr_client_delete(
    c: *mut zkr_client,
    path: *const c_char,
    version: i32,
    flags: u32,
) -> zkr_status {
    handle_call("zkr_client_delete", c, |c| {
        let path = arg_str(path, "path")?;
        let flag = flags_arg(flags, ZKR_DELETE_GUARANTEED | ZKR_DELETE_RECURSIVE)?;
        let options = DeleteOptions {
            version: version_arg(version)?,
            guaranteed: flag(ZKR_DELETE_GUARANTEED),
            recursive: flag(ZKR_DELETE_RECURSIVE),
        };
        wait(c.client.delete(path, options))
    })
}

/// ZooKeeper's sync (Curator's sync()): the server this client talks to catches up with the
/// leader before answering, so a read issued after this returns sees every write committed
/// before the call, by any client. A reconnection in between (to another server) loses that:
/// sync again after the connection comes back. A missing node is ZKR_OK.
#[no_mangle]
pub extern "C" fn zkr_client_sync(c: *mut zkr_client, path: *const c_char) -> zkr_status {
    handle_call("zkr_client_sync", c, |c| {
        let path = arg_str(path, "path")?;
        wait(c.client.sync(path))
    })
}

/// Whether a node exists; if it does and `stat` is not NULL, `*stat` receives its stat.
#[no_mangle]
pub extern "C" fn zkr_client_exists(
    c: *mut zkr_client,
    path: *const c_char,
    exists: *mut bool,
    stat: *mut zkr_stat,
) -> zkr_status {
    handle_out("zkr_client_exists", c, exists, "exists", |c| {
        let found = wait(c.client.exists(arg_str(path, "path")?))?;
        put_stat(stat, found.as_ref());
        Ok(found.is_some())
    })
}

/// The names of a node's children (unsorted), in `*children` (free with zkr_string_list_free).
#[no_mangle]
pub extern "C" fn zkr_client_get_children(
    c: *mut zkr_client,
    path: *const c_char,
    children: *mut *mut zkr_string_list,
) -> zkr_status {
    handle_out("zkr_client_get_children", c, children, "children", |c| {
        zkr_string_list::from_vec(wait(c.client.get_children(arg_str(path, "path")?))?)
    })
}

// ---------------------------------------------------------------------------------------------
// One-shot watches

/// What a one-shot watch saw (the core's NodeEventKind, in order).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zkr_watch_event_type {
    /// The node was created (zkr_client_exists_watch on a missing node).
    ZKR_WATCH_CREATED = 1,
    /// The node was deleted.
    ZKR_WATCH_DELETED = 2,
    /// The node's data changed (the core's DATA_CHANGED).
    ZKR_WATCH_CHANGED = 3,
    /// A child was added or removed (zkr_client_get_children_watch; the core's
    /// CHILDREN_CHANGED).
    ZKR_WATCH_CHILD = 4,
    /// The session ended (expired, or the client was closed) before the node changed.
    ZKR_WATCH_SESSION_ENDED = 5,
    /// The watch was removed (zkr_client_remove_watches) before the node changed.
    ZKR_WATCH_REMOVED = 6,
}

// The core's watch events in C.
c_enum_of! { zkr_watch_event_type, WATCH_EVENTS: NodeEventKind from 1 as "ZKR_WATCH_", [
    ZKR_WATCH_CREATED, ZKR_WATCH_DELETED, ZKR_WATCH_CHANGED, ZKR_WATCH_CHILD, ZKR_WATCH_SESSION_ENDED,
    ZKR_WATCH_REMOVED,
] }

/// A one-shot watch callback: called once with what happened and the node's path (relative to
/// the namespace; valid only during the call). It runs on the library thread of this client's
/// callbacks, in order with its state callbacks (see zkr_state_callback), where any zkr_
/// function may be called. It must not throw (C++) or longjmp out.
pub type zkr_watch_callback = Option<
    unsafe extern "C" fn(event: zkr_watch_event_type, path: *const c_char, user_data: *mut c_void),
>;

/// Calls `callback` once, through the client's dispatcher, when `watch` fires; never after the
/// client is freed.
fn arm(
    c: &zkr_client,
    watch: Watch,
    callback: <zkr_watch_callback as CallbackType>::Fn,
    user_data: *mut c_void,
) {
    let ud = UserData(user_data);
    let alive = c.watches.clone();
    c.client.on_watch(watch, move |e: NodeEvent| {
        let Ok(path) = CString::new(e.path) else {
            return;
        };
        let kind = zkr_watch_event_type::of(e.kind);
        let ud = ud;
        // Called once, only while the client lives (the gate); `path` outlives the call.
        alive.run(|| callback.invoke((kind, path.as_ptr()), ud.0));
    });
}

/// zkr_client_get_data that also leaves a one-shot watch on the node: `callback(event, path,
/// user_data)` is called once when its data changes or it is deleted (ZKR_WATCH_CHANGED,
/// ZKR_WATCH_DELETED), or ZKR_WATCH_SESSION_ENDED if the session ends first. `user_data` must
/// stay valid until then. No watch is left when the call fails. After zkr_client_free returns,
/// no watch callback of the client runs (a pending one never will: free its user_data then).
#[no_mangle]
pub extern "C" fn zkr_client_get_data_watch(
    c: *mut zkr_client,
    path: *const c_char,
    data: *mut *mut zkr_buffer,
    stat: *mut zkr_stat,
    callback: zkr_watch_callback,
    user_data: *mut c_void,
) -> zkr_status {
    handle_out("zkr_client_get_data_watch", c, data, "data", |c| {
        let path = arg_str(path, "path")?;
        let f = arg_callback(callback, "callback")?;
        let (bytes, s, w) = wait(c.client.get_data_watch(path))?;
        arm(c, w, f, user_data);
        put_stat(stat, Some(&s));
        Ok(zkr_buffer::from_vec(bytes))
    })
}

/// zkr_client_exists that also leaves a one-shot watch: ZKR_WATCH_CREATED (the node did not
/// exist), ZKR_WATCH_DELETED, ZKR_WATCH_CHANGED, or ZKR_WATCH_SESSION_ENDED. See
/// zkr_client_get_data_watch for the callback's rules.
#[no_mangle]
pub extern "C" fn zkr_client_exists_watch(
    c: *mut zkr_client,
    path: *const c_char,
    exists: *mut bool,
    stat: *mut zkr_stat,
    callback: zkr_watch_callback,
    user_data: *mut c_void,
) -> zkr_status {
    handle_out("zkr_client_exists_watch", c, exists, "exists", |c| {
        let path = arg_str(path, "path")?;
        let f = arg_callback(callback, "callback")?;
        let (found, w) = wait(c.client.exists_watch(path))?;
        arm(c, w, f, user_data);
        put_stat(stat, found.as_ref());
        Ok(found.is_some())
    })
}

/// zkr_client_get_children that also leaves a one-shot watch on the children:
/// ZKR_WATCH_CHILD, ZKR_WATCH_DELETED, or ZKR_WATCH_SESSION_ENDED. See
/// zkr_client_get_data_watch for the callback's rules.
#[no_mangle]
pub extern "C" fn zkr_client_get_children_watch(
    c: *mut zkr_client,
    path: *const c_char,
    children: *mut *mut zkr_string_list,
    callback: zkr_watch_callback,
    user_data: *mut c_void,
) -> zkr_status {
    handle_out(
        "zkr_client_get_children_watch",
        c,
        children,
        "children",
        |c| {
            let path = arg_str(path, "path")?;
            let f = arg_callback(callback, "callback")?;
            let (names, w) = wait(c.client.get_children_watch(path))?;
            let list = zkr_string_list::from_vec(names)?;
            arm(c, w, f, user_data);
            Ok(list)
        },
    )
}
