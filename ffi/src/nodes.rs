//! Nodes and membership: PersistentNode, PersistentTtlNode and GroupMember.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

use zkrecipes::nodes::{
    GroupMember, PersistentNode, PersistentNodeEvent, PersistentNodeEventKind, PersistentTtlNode,
};
use zkrecipes::{Error, ListenerId, Result};

use crate::boundary::{arg_slice, arg_str, arg_timeout, handle_call, handle_out, recipe_new, wait};
use crate::callback::{CCallback, CallbackType, Closing, Listeners, Listening};
use crate::client::{zkr_client, zkr_create_mode, CREATE_MODES};
use crate::handle::{free_handle, handle};
use crate::status::zkr_status;
use crate::transaction::ttl_arg;
use crate::types::{c_string, free_returned, give_array, take_array, zkr_string_free};
use crate::vocab::CList;

// ---------------------------------------------------------------------------------------------
// PersistentNode

/// What a persistent node's listener hears (the core's PersistentNodeEventKind, in order).
pub type zkr_node_event = u32;
/// The node is on the server, ours, with our data (after each create or check).
pub const ZKR_NODE_REGISTERED: zkr_node_event = 0;
/// The node is known to be gone (deleted, session ended or LOST); it is being created again.
pub const ZKR_NODE_UNREGISTERED: zkr_node_event = 1;
/// The path holds another live session's node: left untouched; the node stops trying.
pub const ZKR_NODE_CONFLICT: zkr_node_event = 2;

/// The core's node event kinds in C (zkr_node_event).
pub(crate) const NODE_EVENTS: CList<PersistentNodeEventKind> = CList {
    all: PersistentNodeEventKind::ALL,
    first: ZKR_NODE_REGISTERED,
    prefix: "ZKR_NODE_",
    name: PersistentNodeEventKind::name,
};

/// Called with each registration event of a persistent node and the node's actual path (valid
/// during the call). It runs on a library thread (never the caller's, never one of the
/// library's async workers), one call at a time, in event order; any zkr_ function may be
/// called inside, including blocking ones. It must not throw (C++) or longjmp out.
pub type zkr_node_callback = Option<
    unsafe extern "C" fn(event: zkr_node_event, path: *const c_char, user_data: *mut c_void),
>;

type NodeFn = <zkr_node_callback as CallbackType>::Fn;

/// Curator's PersistentNode: a node kept on the server while started — created again after a
/// delete, checked after every reconnect, created again after a session expiry. Another live
/// session's node at the path is never taken over (ZKR_CONFLICT); close deletes only our own
/// node. Thread-safe.
pub struct zkr_persistent_node {
    node: PersistentNode,
    listeners: Listeners<zkr_node_callback>,
}

// As the latch's: no listener starts, the node is closed (ending waits such as
// zkr_persistent_node_wait_for_initial_create), then running listeners are waited for.
handle!(zkr_persistent_node, "node", |n| {
    n.shut_all();
    let _ = wait(n.node.close());
    n.unregister_all();
});

impl Closing for zkr_persistent_node {
    fn close_handle(&self) -> Result<()> {
        wait(self.node.close())
    }
}

impl Listening for zkr_persistent_node {
    type Callback = zkr_node_callback;

    fn listeners(&self) -> &Listeners<zkr_node_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<NodeFn>>) -> Result<ListenerId> {
        Ok(self.node.add_listener(move |e: &PersistentNodeEvent| {
            let Ok(path) = std::ffi::CString::new(e.path.as_str()) else {
                return;
            };
            let kind = NODE_EVENTS.to_c(e.kind);
            cb.call((kind, path.as_ptr()))
        }))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.node.remove_listener(id)
    }
}

/// Makes a persistent node at `path` of `mode` with `data_len` bytes of `data`;
/// `is_protected` gives its name Curator's `_c_<uuid>-` prefix. `ttl_ms` is the TTL of the
/// ZKR_PERSISTENT*_WITH_TTL modes (0 for the others). Nothing happens on the server before
/// zkr_persistent_node_start. Free with zkr_persistent_node_free.
#[no_mangle]
pub extern "C" fn zkr_persistent_node_new(
    c: *mut zkr_client,
    path: *const c_char,
    mode: zkr_create_mode,
    data: *const u8,
    data_len: usize,
    is_protected: bool,
    ttl_ms: i64,
    out: *mut *mut zkr_persistent_node,
) -> zkr_status {
    recipe_new("zkr_persistent_node_new", c, path, out, |c, path| {
        let mode = CREATE_MODES.parse(mode, "mode")?;
        let data = arg_slice(data, data_len, "data")?;
        let node = match ttl_arg(ttl_ms)? {
            Some(ttl) => PersistentNode::new_with_ttl(c, path, mode, ttl, data, is_protected)?,
            None => PersistentNode::new(c, path, mode, data, is_protected)?,
        };
        Ok(zkr_persistent_node {
            node,
            listeners: Listeners::default(),
        })
    })
}

/// Starts keeping the node, in the background (see zkr_persistent_node_wait_for_initial_create).
/// ZKR_INVALID_ARGUMENT if started twice, ZKR_CLOSED after close.
#[no_mangle]
pub extern "C" fn zkr_persistent_node_start(n: *mut zkr_persistent_node) -> zkr_status {
    handle_call("zkr_persistent_node_start", n, |n| n.node.start())
}

/// Waits until the node was first created, at most `timeout_ms` (-1: forever); `*created`
/// tells whether it was. ZKR_CONFLICT when the path holds another session's node (left
/// untouched), ZKR_INVALID_ARGUMENT before start, ZKR_CLOSED once closed.
#[no_mangle]
pub extern "C" fn zkr_persistent_node_wait_for_initial_create(
    n: *mut zkr_persistent_node,
    timeout_ms: i64,
    created: *mut bool,
) -> zkr_status {
    let f = "zkr_persistent_node_wait_for_initial_create";
    handle_out(f, n, created, "created", |n| {
        wait(n.node.wait_for_initial_create(arg_timeout(timeout_ms)?))
    })
}

/// The node's actual path (with the sequence number and protected prefix) in `*path` (free
/// with zkr_string_free); ZKR_NO_NODE before it was first created.
#[no_mangle]
pub extern "C" fn zkr_persistent_node_actual_path(
    n: *const zkr_persistent_node,
    path: *mut *mut c_char,
) -> zkr_status {
    handle_out("zkr_persistent_node_actual_path", n, path, "path", |n| {
        let p = n.node.actual_path().ok_or_else(|| {
            let what = format!("persistent node {}: not created yet", n.node.path());
            Error::NoNode(what.into())
        })?;
        c_string(&p)
    })
}

/// Sets the node's data: written now when connected, else on the next create or reconnect.
/// Returns at once.
#[no_mangle]
pub extern "C" fn zkr_persistent_node_set_data(
    n: *mut zkr_persistent_node,
    data: *const u8,
    data_len: usize,
) -> zkr_status {
    handle_call("zkr_persistent_node_set_data", n, |n| {
        n.node.set_data(arg_slice(data, data_len, "data")?)
    })
}

// ---------------------------------------------------------------------------------------------
// PersistentTtlNode

/// Curator's PersistentTtlNode: a container node kept at `path` and a child `path/touch` of
/// the TTL, touched every TTL / 2; once the owner stops (closed, crashed), the node is gone
/// within the TTL plus the server's container check interval. Needs a server with
/// zookeeper.extendedTypesEnabled=true. Thread-safe.
pub struct zkr_persistent_ttl_node {
    node: PersistentTtlNode,
}

handle!(zkr_persistent_ttl_node, "node", |n| {
    let _ = wait(n.node.close());
});

/// Makes a TTL node at `path` with `data`, touched every `ttl_ms` / 2 (2 ms to 2^40 - 1 ms).
/// Free with zkr_persistent_ttl_node_free.
#[no_mangle]
pub extern "C" fn zkr_persistent_ttl_node_new(
    c: *mut zkr_client,
    path: *const c_char,
    ttl_ms: i64,
    data: *const u8,
    data_len: usize,
    out: *mut *mut zkr_persistent_ttl_node,
) -> zkr_status {
    recipe_new("zkr_persistent_ttl_node_new", c, path, out, |c, path| {
        let ttl = zkrecipes::timeout::positive_millis(ttl_ms, "ttl_ms")?;
        let data = arg_slice(data, data_len, "data")?;
        Ok(zkr_persistent_ttl_node {
            node: PersistentTtlNode::new(c, path, ttl, data)?,
        })
    })
}

/// Starts keeping the node and touching its child.
#[no_mangle]
pub extern "C" fn zkr_persistent_ttl_node_start(n: *mut zkr_persistent_ttl_node) -> zkr_status {
    handle_call("zkr_persistent_ttl_node_start", n, |n| n.node.start())
}

/// As zkr_persistent_node_wait_for_initial_create.
#[no_mangle]
pub extern "C" fn zkr_persistent_ttl_node_wait_for_initial_create(
    n: *mut zkr_persistent_ttl_node,
    timeout_ms: i64,
    created: *mut bool,
) -> zkr_status {
    let f = "zkr_persistent_ttl_node_wait_for_initial_create";
    handle_out(f, n, created, "created", |n| {
        wait(n.node.wait_for_initial_create(arg_timeout(timeout_ms)?))
    })
}

/// Sets the node's data (as zkr_persistent_node_set_data).
#[no_mangle]
pub extern "C" fn zkr_persistent_ttl_node_set_data(
    n: *mut zkr_persistent_ttl_node,
    data: *const u8,
    data_len: usize,
) -> zkr_status {
    handle_call("zkr_persistent_ttl_node_set_data", n, |n| {
        n.node.set_data(arg_slice(data, data_len, "data")?)
    })
}

/// Stops touching and keeping the node; it is not deleted (it goes once its TTL passes).
#[no_mangle]
pub extern "C" fn zkr_persistent_ttl_node_close(n: *mut zkr_persistent_ttl_node) -> zkr_status {
    handle_call("zkr_persistent_ttl_node_close", n, |n| wait(n.node.close()))
}

/// Frees a TTL node (closing it first if still open). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_persistent_ttl_node_free(n: *mut zkr_persistent_ttl_node) {
    free_handle("zkr_persistent_ttl_node_free", n)
}

// ---------------------------------------------------------------------------------------------
// GroupMember

/// One member of a group: its id and payload.
#[repr(C)]
pub struct zkr_member {
    /// The member id (its node's name).
    pub id: *mut c_char,
    /// `len` bytes of payload (NULL when `len` is 0).
    pub data: *mut u8,
    /// How many bytes `data` holds.
    pub len: usize,
}

/// A group's members, sorted by id. Free with zkr_member_list_free (except the one a
/// zkr_members_callback gets, which is the library's).
#[repr(C)]
pub struct zkr_member_list {
    /// `len` members (NULL when `len` is 0).
    pub items: *mut zkr_member,
    /// How many members `items` holds.
    pub len: usize,
}

fn member_list(members: &BTreeMap<String, Vec<u8>>) -> Result<zkr_member_list> {
    let mut items = Vec::with_capacity(members.len());
    for (id, data) in members {
        let id = match c_string(id) {
            Ok(id) => id,
            Err(e) => {
                free_members(items);
                return Err(e);
            }
        };
        let (data, len) = give_array(data.clone());
        items.push(zkr_member { id, data, len });
    }
    let (items, len) = give_array(items);
    Ok(zkr_member_list { items, len })
}

fn free_members(items: Vec<zkr_member>) {
    for m in items {
        zkr_string_free(m.id);
        // SAFETY: a member's data, made by `member_list` with `give_array`, taken back once.
        drop(unsafe { take_array(m.data, m.len) });
    }
}

/// Frees a member list and everything in it. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_member_list_free(list: *mut zkr_member_list) {
    free_returned("zkr_member_list_free", list, |l| {
        // SAFETY: the items of a list `member_list` made with `give_array`, taken back once
        // with the list.
        free_members(unsafe { take_array(l.items, l.len) })
    })
}

/// Called with each new membership of a group (valid during the call only; do not free it).
/// Same thread rules as zkr_node_callback.
pub type zkr_members_callback =
    Option<unsafe extern "C" fn(members: *const zkr_member_list, user_data: *mut c_void)>;

type MembersFn = <zkr_members_callback as CallbackType>::Fn;

/// Curator's GroupMember: this process's ephemeral node `path/member_id` with its payload (kept
/// like a persistent node), and the group's membership. The same id from another live session
/// is ZKR_CONFLICT at start, and that session's node is left untouched. Thread-safe.
pub struct zkr_group_member {
    member: GroupMember,
    listeners: Listeners<zkr_members_callback>,
}

handle!(zkr_group_member, "member", |m| {
    m.shut_all();
    let _ = wait(m.member.close());
    m.unregister_all();
});

impl Closing for zkr_group_member {
    fn close_handle(&self) -> Result<()> {
        wait(self.member.close())
    }
}

impl Listening for zkr_group_member {
    type Callback = zkr_members_callback;

    fn listeners(&self) -> &Listeners<zkr_members_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<MembersFn>>) -> Result<ListenerId> {
        Ok(self.member.add_listener(move |members| {
            let Ok(list) = member_list(members) else {
                return;
            };
            cb.call((&list,));
            free_members(
                // SAFETY: made by `member_list` just above, taken back once.
                unsafe { take_array(list.items, list.len) },
            );
        }))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.member.remove_listener(id)
    }
}

/// Makes member `member_id` of the group at `path` with `payload_len` bytes of `payload`.
/// Nothing happens on the server before zkr_group_member_start. Free with
/// zkr_group_member_free.
#[no_mangle]
pub extern "C" fn zkr_group_member_new(
    c: *mut zkr_client,
    path: *const c_char,
    member_id: *const c_char,
    payload: *const u8,
    payload_len: usize,
    out: *mut *mut zkr_group_member,
) -> zkr_status {
    recipe_new("zkr_group_member_new", c, path, out, |c, path| {
        let id = arg_str(member_id, "member_id")?;
        let payload = arg_slice(payload, payload_len, "payload")?;
        Ok(zkr_group_member {
            member: GroupMember::new(c, path, id, payload)?,
            listeners: Listeners::default(),
        })
    })
}

/// Joins the group; returns once this member is registered. ZKR_CONFLICT when another live
/// session holds this id (its node untouched); ZKR_TIMEOUT when not registered within the
/// client's connection timeout (it keeps trying).
#[no_mangle]
pub extern "C" fn zkr_group_member_start(m: *mut zkr_group_member) -> zkr_status {
    handle_call("zkr_group_member_start", m, |m| wait(m.member.start()))
}

/// Every member id → payload (this member's own included) in `*members`, sorted by id (free
/// with zkr_member_list_free).
#[no_mangle]
pub extern "C" fn zkr_group_member_current_members(
    m: *const zkr_group_member,
    members: *mut *mut zkr_member_list,
) -> zkr_status {
    let f = "zkr_group_member_current_members";
    handle_out(f, m, members, "members", |m| {
        Ok(Box::into_raw(Box::new(member_list(
            &m.member.current_members(),
        )?)))
    })
}

/// Changes this member's payload (written now when connected, else on the next create or
/// reconnect).
#[no_mangle]
pub extern "C" fn zkr_group_member_set_this_data(
    m: *mut zkr_group_member,
    payload: *const u8,
    payload_len: usize,
) -> zkr_status {
    handle_call("zkr_group_member_set_this_data", m, |m| {
        m.member
            .set_this_data(arg_slice(payload, payload_len, "payload")?)
    })
}
