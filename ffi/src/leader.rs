//! Leader election: LeaderLatch (and the participant types shared with LeaderSelector).

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use zkrecipes::leader::{
    CancelReason, CloseMode, LeaderLatch, LeaderObserver, LeaderSelector, LeadershipContext,
    LeadershipEvent, LostPolicy, Participant,
};
use zkrecipes::{Error, Result};

use crate::boundary::{arg_out, arg_ref, arg_str, arg_timeout, block_on, ffi_boundary, ffi_call};
use crate::callback::{Registration, UserData};
use crate::client::{client_arg, zkr_client};
use crate::status::zkr_status;
use crate::types::{c_string, zkr_string_free};

// ---------------------------------------------------------------------------------------------
// Participants

/// A member of a leadership group (Curator's Participant). Returned by the library; free with
/// zkr_participant_free (or as part of a zkr_participant_list).
#[repr(C)]
pub struct zkr_participant {
    /// The participant id (its node's data as UTF-8; "" when nobody takes part).
    pub id: *mut c_char,
    /// Whether this participant leads.
    pub is_leader: bool,
}

/// Participants in node order (the leader first). Free with zkr_participant_list_free.
#[repr(C)]
pub struct zkr_participant_list {
    /// `len` participants.
    pub items: *mut zkr_participant,
    /// How many participants `items` holds.
    pub len: usize,
}

fn participant(p: &Participant) -> Result<zkr_participant> {
    Ok(zkr_participant {
        id: c_string(&p.id)?,
        is_leader: p.is_leader,
    })
}

pub(crate) fn participant_box(p: &Participant) -> Result<*mut zkr_participant> {
    Ok(Box::into_raw(Box::new(participant(p)?)))
}

pub(crate) fn participant_list(list: &[Participant]) -> Result<*mut zkr_participant_list> {
    let mut items = Vec::with_capacity(list.len());
    for p in list {
        match participant(p) {
            Ok(item) => items.push(item),
            Err(e) => {
                for item in items {
                    // SAFETY: made by c_string above.
                    unsafe { zkr_string_free(item.id) };
                }
                return Err(e);
            }
        }
    }
    let boxed = items.into_boxed_slice();
    let len = boxed.len();
    let items = Box::into_raw(boxed) as *mut zkr_participant;
    Ok(Box::into_raw(Box::new(zkr_participant_list { items, len })))
}

/// Frees a participant. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn zkr_participant_free(p: *mut zkr_participant) {
    ffi_boundary("zkr_participant_free", (), || {
        if !p.is_null() {
            let p = Box::from_raw(p);
            zkr_string_free(p.id);
        }
    })
}

/// Frees a participant list and everything in it. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn zkr_participant_list_free(list: *mut zkr_participant_list) {
    ffi_boundary("zkr_participant_list_free", (), || {
        if list.is_null() {
            return;
        }
        let list = Box::from_raw(list);
        let items = Box::from_raw(ptr::slice_from_raw_parts_mut(list.items, list.len));
        for p in items.iter() {
            zkr_string_free(p.id);
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Shared settings

/// Which connection states end leadership (Curator's ConnectionStateErrorPolicy).
pub type zkr_leader_lost_policy = u32;
/// Leadership ends as soon as the connection is SUSPENDED, and on LOST (the default).
pub const ZKR_LEADER_LOST_ON_SUSPENDED: zkr_leader_lost_policy = 0;
/// Leadership ends only when the session is LOST (fence writes with the leadership epoch).
pub const ZKR_LEADER_LOST_ON_SESSION_LOSS: zkr_leader_lost_policy = 1;

pub(crate) fn lost_policy(policy: zkr_leader_lost_policy) -> Result<LostPolicy> {
    match policy {
        ZKR_LEADER_LOST_ON_SUSPENDED => Ok(LostPolicy::Standard),
        ZKR_LEADER_LOST_ON_SESSION_LOSS => Ok(LostPolicy::Session),
        other => Err(Error::InvalidArgument(
            format!("lost policy {other} is not a ZKR_LEADER_LOST_* value").into(),
        )),
    }
}

/// How zkr_leader_latch_close treats the listeners (Curator's LeaderLatch.CloseMode).
pub type zkr_close_mode = u32;
/// Closing does not call the listeners (the default).
pub const ZKR_CLOSE_SILENT: zkr_close_mode = 0;
/// Closing while leading calls the listeners with is_leader = false.
pub const ZKR_CLOSE_NOTIFY_LEADER: zkr_close_mode = 1;

// ---------------------------------------------------------------------------------------------
// LeaderLatch

/// Called when this participant becomes leader (`is_leader` true) or stops leading (false). It
/// runs on a thread of the latch (never the caller's), one call at a time, in order; any zkr_
/// function may be called inside, including blocking ones. It must not throw (C++) or longjmp
/// out.
pub type zkr_leadership_callback =
    Option<unsafe extern "C" fn(is_leader: bool, user_data: *mut c_void)>;

/// Curator's LeaderLatch: join an election and learn when this participant leads. Each
/// participant creates `<path>/_c_<uuid>-latch-<seq>` holding its id; the first node leads.
/// Thread-safe.
pub struct zkr_leader_latch {
    latch: LeaderLatch,
    listeners: Mutex<HashMap<u64, Arc<Registration>>>,
}

/// Makes a latch on `path` for participant `id` (stored as its node's data; may be "").
/// Nothing happens on the server before zkr_leader_latch_start. Free with
/// zkr_leader_latch_free.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_new(
    c: *mut zkr_client,
    path: *const c_char,
    id: *const c_char,
    out: *mut *mut zkr_leader_latch,
) -> zkr_status {
    ffi_call("zkr_leader_latch_new", || {
        let client = client_arg(c, "client")?;
        let path = arg_str(path, "path")?;
        let id = arg_str(id, "id")?;
        let out = arg_out(out, "out")?;
        if client.is_closed() {
            return Err(Error::Closed(
                format!("leader latch {path}: the client is closed").into(),
            ));
        }
        let latch = LeaderLatch::new(client, path, id)?;
        out.write(Box::into_raw(Box::new(zkr_leader_latch {
            latch,
            listeners: Mutex::new(HashMap::new()),
        })));
        Ok(())
    })
}

/// Sets the close mode: ZKR_CLOSE_SILENT (default) or ZKR_CLOSE_NOTIFY_LEADER.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_set_close_mode(
    l: *mut zkr_leader_latch,
    mode: zkr_close_mode,
) -> zkr_status {
    ffi_call("zkr_leader_latch_set_close_mode", || {
        let l = arg_ref(l, "latch")?;
        l.latch.set_close_mode(match mode {
            ZKR_CLOSE_SILENT => CloseMode::Silent,
            ZKR_CLOSE_NOTIFY_LEADER => CloseMode::NotifyLeader,
            other => {
                return Err(Error::InvalidArgument(
                    format!("close mode {other} is not a ZKR_CLOSE_* value").into(),
                ))
            }
        });
        Ok(())
    })
}

/// Sets which connection states end leadership (ZKR_LEADER_LOST_*); only before start
/// (ZKR_INVALID_ARGUMENT afterwards).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_set_lost_policy(
    l: *mut zkr_leader_latch,
    policy: zkr_leader_lost_policy,
) -> zkr_status {
    ffi_call("zkr_leader_latch_set_lost_policy", || {
        let l = arg_ref(l, "latch")?;
        l.latch.set_lost_policy(lost_policy(policy)?)
    })
}

/// Joins the election: returns once our node is created (a failed first try is retried in the
/// background). ZKR_INVALID_ARGUMENT if started twice, ZKR_CLOSED after close.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_start(l: *mut zkr_leader_latch) -> zkr_status {
    ffi_call("zkr_leader_latch_start", || {
        let l = arg_ref(l, "latch")?;
        block_on(l.latch.start())?
    })
}

/// Waits until this participant leads, at most `timeout_ms` (-1: forever). `*is_leader` tells
/// whether it leads. With -1, a latch that is closed (or not started, or whose client is closed)
/// returns ZKR_CLOSED instead of waiting forever.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_await(
    l: *mut zkr_leader_latch,
    timeout_ms: i64,
    is_leader: *mut bool,
) -> zkr_status {
    ffi_call("zkr_leader_latch_await", || {
        let l = arg_ref(l, "latch")?;
        let out = arg_out(is_leader, "is_leader")?;
        let timeout = arg_timeout(timeout_ms)?;
        out.write(block_on(l.latch.await_leadership(timeout))??);
        Ok(())
    })
}

/// Whether this participant leads now (a local flag: no server call).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_has_leadership(
    l: *const zkr_leader_latch,
    is_leader: *mut bool,
) -> zkr_status {
    ffi_call("zkr_leader_latch_has_leadership", || {
        let l = arg_ref(l, "latch")?;
        let out = arg_out(is_leader, "is_leader")?;
        out.write(l.latch.has_leadership());
        Ok(())
    })
}

/// The leadership epoch while leading: our node's czxid, strictly increasing from one
/// leadership to the next, to fence writes with. ZKR_NOT_OWNER if this participant does not
/// lead.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_leadership_epoch(
    l: *const zkr_leader_latch,
    epoch: *mut i64,
) -> zkr_status {
    ffi_call("zkr_leader_latch_leadership_epoch", || {
        let l = arg_ref(l, "latch")?;
        let out = arg_out(epoch, "epoch")?;
        match l.latch.leadership_epoch() {
            Some(e) => out.write(e),
            None => {
                return Err(Error::NotOwner(
                    format!(
                        "leader latch {}: this participant does not lead",
                        l.latch.path()
                    )
                    .into(),
                ))
            }
        }
        Ok(())
    })
}

/// The current leader, read from the server, in `*leader` (free with zkr_participant_free): the
/// participant whose node sorts first, or {"", false} when nobody takes part.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_get_leader(
    l: *mut zkr_leader_latch,
    leader: *mut *mut zkr_participant,
) -> zkr_status {
    ffi_call("zkr_leader_latch_get_leader", || {
        let l = arg_ref(l, "latch")?;
        let out = arg_out(leader, "leader")?;
        let p = block_on(l.latch.get_leader())??;
        out.write(participant_box(&p)?);
        Ok(())
    })
}

/// Every participant in node order (the leader first), read from the server, in
/// `*participants` (free with zkr_participant_list_free).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_get_participants(
    l: *mut zkr_leader_latch,
    participants: *mut *mut zkr_participant_list,
) -> zkr_status {
    ffi_call("zkr_leader_latch_get_participants", || {
        let l = arg_ref(l, "latch")?;
        let out = arg_out(participants, "participants")?;
        let list = block_on(l.latch.get_participants())??;
        out.write(participant_list(&list)?);
        Ok(())
    })
}

/// Our node's path while we have one (Curator's getOurPath), in `*path` (free with
/// zkr_string_free); ZKR_NO_NODE when there is none (not started, closed, or between sessions).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_our_path(
    l: *const zkr_leader_latch,
    path: *mut *mut c_char,
) -> zkr_status {
    ffi_call("zkr_leader_latch_our_path", || {
        let l = arg_ref(l, "latch")?;
        let out = arg_out(path, "path")?;
        match l.latch.our_path() {
            Some(p) => out.write(c_string(&p)?),
            None => {
                return Err(Error::NoNode(
                    format!("leader latch {}: no node of ours right now", l.latch.path()).into(),
                ))
            }
        }
        Ok(())
    })
}

/// Adds a leadership listener (Curator's LeaderLatchListener); `*listener_id` identifies it for
/// zkr_leader_latch_remove_listener. `user_data` must stay valid until the listener is removed
/// or the latch freed.
///
/// The callback is called on another thread (see its type).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_add_listener(
    l: *mut zkr_leader_latch,
    callback: zkr_leadership_callback,
    user_data: *mut c_void,
    listener_id: *mut u64,
) -> zkr_status {
    ffi_call("zkr_leader_latch_add_listener", || {
        let l = arg_ref(l, "latch")?;
        let callback = callback.ok_or_else(|| Error::InvalidArgument("callback is NULL".into()))?;
        let out = arg_out(listener_id, "listener_id")?;
        let reg = Registration::new();
        let run_reg = reg.clone();
        let ud = UserData(user_data);
        let mut listeners = l.listeners.lock().unwrap_or_else(|e| e.into_inner());
        // The latch runs listeners on a plain thread of its own, so the C callback runs there
        // directly (blocking zkr_ calls are allowed on it).
        let id = l.latch.add_event_listener(move |event| {
            let ud = ud;
            run_reg.run(|| callback(event == LeadershipEvent::IsLeader, ud.0))
        });
        listeners.insert(id, reg);
        out.write(id);
        Ok(())
    })
}

/// Removes a leadership listener. When this returns, the callback is not running (unless this is
/// called from inside it) and will not run again. ZKR_INVALID_ARGUMENT for an unknown id.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_remove_listener(
    l: *mut zkr_leader_latch,
    listener_id: u64,
) -> zkr_status {
    ffi_call("zkr_leader_latch_remove_listener", || {
        let l = arg_ref(l, "latch")?;
        let reg = l
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&listener_id);
        match reg {
            Some(reg) => {
                l.latch.remove_listener(listener_id);
                reg.disable();
                Ok(())
            }
            None => Err(Error::InvalidArgument(
                format!("no listener with id {listener_id} on this latch").into(),
            )),
        }
    })
}

/// Leaves the election with the close mode: leadership ends first, then our node is deleted (so
/// the next participant takes over at once). Closing again, or closing a latch never started,
/// is ZKR_OK.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_close(l: *mut zkr_leader_latch) -> zkr_status {
    ffi_call("zkr_leader_latch_close", || {
        let l = arg_ref(l, "latch")?;
        block_on(l.latch.close())?
    })
}

/// Frees a latch: removes its listeners (waiting for a running one, unless called from inside
/// it), closes it silently if still open (its node is deleted before this returns), and
/// releases the handle. NULL does nothing. The latch must not be in use by another thread.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_latch_free(l: *mut zkr_leader_latch) {
    ffi_boundary("zkr_leader_latch_free", (), || {
        if l.is_null() {
            return;
        }
        let l = Box::from_raw(l);
        let listeners: Vec<(u64, Arc<Registration>)> = l
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        for (id, reg) in listeners {
            l.latch.remove_listener(id);
            reg.disable();
        }
        let _ = block_on(l.latch.close_with(CloseMode::Silent));
    })
}

// ---------------------------------------------------------------------------------------------
// LeaderSelector

/// What take_leadership gets: this leadership term's cancellation flag and fencing token. Valid
/// only until take_leadership returns (it may be used from other threads until then).
pub struct zkr_leadership_context {
    ctx: LeadershipContext,
}

/// Why leadership was cancelled (zkr_leadership_cancel_reason).
pub type zkr_cancel_reason = u32;
/// Not cancelled (yet).
pub const ZKR_CANCEL_NONE: zkr_cancel_reason = 0;
/// The connection was SUSPENDED (default lost policy): another participant may lead soon.
pub const ZKR_CANCEL_CONNECTION_SUSPENDED: zkr_cancel_reason = 1;
/// The session was LOST: another participant may lead already.
pub const ZKR_CANCEL_SESSION_LOST: zkr_cancel_reason = 2;
/// zkr_leader_selector_interrupt_leadership was called.
pub const ZKR_CANCEL_INTERRUPTED: zkr_cancel_reason = 3;
/// The selector (or its client) was closed.
pub const ZKR_CANCEL_CLOSED: zkr_cancel_reason = 4;

fn cancel_code(r: Option<CancelReason>) -> zkr_cancel_reason {
    match r {
        None => ZKR_CANCEL_NONE,
        Some(CancelReason::ConnectionSuspended) => ZKR_CANCEL_CONNECTION_SUSPENDED,
        Some(CancelReason::SessionLost) => ZKR_CANCEL_SESSION_LOST,
        Some(CancelReason::Interrupted) => ZKR_CANCEL_INTERRUPTED,
        Some(CancelReason::Closed) => ZKR_CANCEL_CLOSED,
    }
}

/// Leadership: called when this participant becomes leader; it leads exactly as long as this
/// function runs, and the lock is released when it returns. It runs on a thread of its own (one
/// per leadership term), where any zkr_ call is allowed. It must watch
/// zkr_leadership_cancelled(ctx) (or block in zkr_leadership_wait_cancelled) and return promptly
/// once leadership is cancelled: connection SUSPENDED or LOST (per the lost policy),
/// zkr_leader_selector_interrupt_leadership, or close/free. It must not throw (C++) or longjmp
/// out.
pub type zkr_take_leadership_callback =
    Option<unsafe extern "C" fn(ctx: *mut zkr_leadership_context, user_data: *mut c_void)>;

/// Whether this leadership term is cancelled: stop acting as leader and return from
/// take_leadership. A NULL ctx counts as cancelled.
///
/// Call it only while take_leadership runs, with the context it was given.
#[no_mangle]
pub unsafe extern "C" fn zkr_leadership_cancelled(ctx: *const zkr_leadership_context) -> bool {
    ffi_boundary("zkr_leadership_cancelled", true, || {
        match arg_ref(ctx, "ctx") {
            Ok(c) => c.ctx.is_cancelled(),
            Err(e) => {
                crate::status::fail("zkr_leadership_cancelled", &e);
                true
            }
        }
    })
}

/// Blocks until this term is cancelled or `timeout_ms` passes (-1: no limit); `*cancelled`
/// tells which.
///
/// Call it only while take_leadership runs, with the context it was given.
#[no_mangle]
pub unsafe extern "C" fn zkr_leadership_wait_cancelled(
    ctx: *const zkr_leadership_context,
    timeout_ms: i64,
    cancelled: *mut bool,
) -> zkr_status {
    ffi_call("zkr_leadership_wait_cancelled", || {
        let c = arg_ref(ctx, "ctx")?;
        let out = arg_out(cancelled, "cancelled")?;
        let timeout = arg_timeout(timeout_ms)?;
        out.write(c.ctx.wait_cancelled(timeout).is_some());
        Ok(())
    })
}

/// Why this term was cancelled (ZKR_CANCEL_NONE while it is not).
///
/// Call it only while take_leadership runs, with the context it was given.
#[no_mangle]
pub unsafe extern "C" fn zkr_leadership_cancel_reason(
    ctx: *const zkr_leadership_context,
    reason: *mut zkr_cancel_reason,
) -> zkr_status {
    ffi_call("zkr_leadership_cancel_reason", || {
        let c = arg_ref(ctx, "ctx")?;
        arg_out(reason, "reason")?.write(cancel_code(c.ctx.cancel_reason()));
        Ok(())
    })
}

/// The fencing token of this term: the lock node's czxid, strictly greater than any earlier
/// leader's. Pass it to the resources the leader writes to.
///
/// Call it only while take_leadership runs, with the context it was given.
#[no_mangle]
pub unsafe extern "C" fn zkr_leadership_fencing_token(
    ctx: *const zkr_leadership_context,
    token: *mut i64,
) -> zkr_status {
    ffi_call("zkr_leadership_fencing_token", || {
        let c = arg_ref(ctx, "ctx")?;
        let out = arg_out(token, "token")?;
        match c.ctx.fencing_token() {
            Some(t) => out.write(t),
            None => {
                return Err(Error::Internal(
                    "this leadership term has no fencing token".into(),
                ))
            }
        }
        Ok(())
    })
}

/// Which leadership term of this selector this is (1 for the first).
///
/// Call it only while take_leadership runs, with the context it was given.
#[no_mangle]
pub unsafe extern "C" fn zkr_leadership_term(
    ctx: *const zkr_leadership_context,
    term: *mut u64,
) -> zkr_status {
    ffi_call("zkr_leadership_term", || {
        let c = arg_ref(ctx, "ctx")?;
        arg_out(term, "term")?.write(c.ctx.term());
        Ok(())
    })
}

/// Curator's LeaderSelector: leadership is an InterProcessMutex on the path (nodes
/// `_c_<uuid>-lock-<seq>` holding the id), held while take_leadership runs. Fair: participants
/// lead in the order they queued. Thread-safe.
pub struct zkr_leader_selector {
    selector: LeaderSelector,
}

/// Makes a selector on `path` for participant `id` (may be "") whose leadership runs
/// `take_leadership(ctx, user_data)`. `user_data` must stay valid until the selector is freed.
/// Nothing happens on the server before zkr_leader_selector_start. Free with
/// zkr_leader_selector_free.
///
/// take_leadership is called on another thread (see its type).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_new(
    c: *mut zkr_client,
    path: *const c_char,
    id: *const c_char,
    take_leadership: zkr_take_leadership_callback,
    user_data: *mut c_void,
    out: *mut *mut zkr_leader_selector,
) -> zkr_status {
    ffi_call("zkr_leader_selector_new", || {
        let client = client_arg(c, "client")?;
        let path = arg_str(path, "path")?;
        let id = arg_str(id, "id")?;
        let callback = take_leadership
            .ok_or_else(|| Error::InvalidArgument("take_leadership is NULL".into()))?;
        let out = arg_out(out, "out")?;
        if client.is_closed() {
            return Err(Error::Closed(
                format!("leader selector {path}: the client is closed").into(),
            ));
        }
        let ud = UserData(user_data);
        // The core runs a blocking take_leadership on a plain thread of its own per term, so the
        // C function runs there directly; the context lives on that thread's stack for the call.
        let selector = LeaderSelector::new_blocking(client, path, id, move |ctx| {
            let ud = ud;
            let mut c_ctx = zkr_leadership_context { ctx: ctx.clone() };
            callback(&mut c_ctx, ud.0);
        })?;
        out.write(Box::into_raw(Box::new(zkr_leader_selector { selector })));
        Ok(())
    })
}

/// Turns Curator's autoRequeue on or off: after each leadership (and after an acquire that
/// failed on connection trouble), queue again by itself.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_set_auto_requeue(
    s: *mut zkr_leader_selector,
    on: bool,
) -> zkr_status {
    ffi_call("zkr_leader_selector_set_auto_requeue", || {
        arg_ref(s, "selector")?.selector.set_auto_requeue(on);
        Ok(())
    })
}

/// Sets which connection states cancel leadership (ZKR_LEADER_LOST_*); only before start.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_set_lost_policy(
    s: *mut zkr_leader_selector,
    policy: zkr_leader_lost_policy,
) -> zkr_status {
    ffi_call("zkr_leader_selector_set_lost_policy", || {
        arg_ref(s, "selector")?
            .selector
            .set_lost_policy(lost_policy(policy)?)
    })
}

/// Joins the queue for leadership (in the background; returns at once). ZKR_INVALID_ARGUMENT if
/// started twice, ZKR_CLOSED after close.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_start(s: *mut zkr_leader_selector) -> zkr_status {
    ffi_call("zkr_leader_selector_start", || {
        arg_ref(s, "selector")?.selector.start()
    })
}

/// Queues for leadership again (Curator's requeue); `*queued` is false if it already was queued
/// or leading.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_requeue(
    s: *mut zkr_leader_selector,
    queued: *mut bool,
) -> zkr_status {
    ffi_call("zkr_leader_selector_requeue", || {
        let s = arg_ref(s, "selector")?;
        let out = arg_out(queued, "queued")?;
        out.write(s.selector.requeue()?);
        Ok(())
    })
}

/// Cancels the current leadership, if any (its context reports ZKR_CANCEL_INTERRUPTED).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_interrupt_leadership(
    s: *mut zkr_leader_selector,
) -> zkr_status {
    ffi_call("zkr_leader_selector_interrupt_leadership", || {
        arg_ref(s, "selector")?.selector.interrupt_leadership();
        Ok(())
    })
}

/// Whether this participant leads now (take_leadership runs and is not cancelled).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_has_leadership(
    s: *const zkr_leader_selector,
    is_leader: *mut bool,
) -> zkr_status {
    ffi_call("zkr_leader_selector_has_leadership", || {
        let s = arg_ref(s, "selector")?;
        arg_out(is_leader, "is_leader")?.write(s.selector.has_leadership());
        Ok(())
    })
}

/// The fencing token of the current leadership, while leading (as in the context).
/// ZKR_NOT_OWNER if this participant does not lead.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_leadership_epoch(
    s: *const zkr_leader_selector,
    epoch: *mut i64,
) -> zkr_status {
    ffi_call("zkr_leader_selector_leadership_epoch", || {
        let s = arg_ref(s, "selector")?;
        let out = arg_out(epoch, "epoch")?;
        match s.selector.leadership_epoch() {
            Some(e) => out.write(e),
            None => {
                return Err(Error::NotOwner(
                    format!(
                        "leader selector {}: this participant does not lead",
                        s.selector.path()
                    )
                    .into(),
                ))
            }
        }
        Ok(())
    })
}

/// How many leadership terms this selector has started.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_leadership_count(
    s: *const zkr_leader_selector,
    count: *mut u64,
) -> zkr_status {
    ffi_call("zkr_leader_selector_leadership_count", || {
        let s = arg_ref(s, "selector")?;
        arg_out(count, "count")?.write(s.selector.leadership_count());
        Ok(())
    })
}

/// The current leader, read from the server (free with zkr_participant_free).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_get_leader(
    s: *mut zkr_leader_selector,
    leader: *mut *mut zkr_participant,
) -> zkr_status {
    ffi_call("zkr_leader_selector_get_leader", || {
        let s = arg_ref(s, "selector")?;
        let out = arg_out(leader, "leader")?;
        let p = block_on(s.selector.get_leader())??;
        out.write(participant_box(&p)?);
        Ok(())
    })
}

/// Every participant in queue order, the leader flagged (free with zkr_participant_list_free).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_get_participants(
    s: *mut zkr_leader_selector,
    participants: *mut *mut zkr_participant_list,
) -> zkr_status {
    ffi_call("zkr_leader_selector_get_participants", || {
        let s = arg_ref(s, "selector")?;
        let out = arg_out(participants, "participants")?;
        let list = block_on(s.selector.get_participants())??;
        out.write(participant_list(&list)?);
        Ok(())
    })
}

/// Leaves for good: cancels the current leadership (ZKR_CANCEL_CLOSED), leaves the queue and
/// waits until take_leadership has returned and the lock is released (unless called from inside
/// take_leadership). Closing again is ZKR_OK.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_close(s: *mut zkr_leader_selector) -> zkr_status {
    ffi_call("zkr_leader_selector_close", || {
        let s = arg_ref(s, "selector")?;
        block_on(s.selector.close())?
    })
}

/// Frees a selector: closes it (waiting for a running take_leadership to return, unless called
/// from inside it), so `user_data` may be freed afterwards. NULL does nothing.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_selector_free(s: *mut zkr_leader_selector) {
    ffi_boundary("zkr_leader_selector_free", (), || {
        if s.is_null() {
            return;
        }
        let s = Box::from_raw(s);
        let _ = block_on(s.selector.close());
    })
}

// ---------------------------------------------------------------------------------------------
// LeaderObserver

/// Called with each new leader of an observed group (`leader` is valid only during the call; its
/// id is "" when nobody leads). Runs on the observer's listener thread, one call at a time, in
/// order; any zkr_ function may be called inside. It must not throw (C++) or longjmp out.
pub type zkr_leader_observer_callback =
    Option<unsafe extern "C" fn(leader: *const zkr_participant, user_data: *mut c_void)>;

/// Follows the leader of a LeaderLatch or LeaderSelector group without joining it (etcd's
/// Observe), with one children watch. Thread-safe.
pub struct zkr_leader_observer {
    observer: Mutex<LeaderObserver>,
    /// Our own receiver, so that zkr_leader_observer_wait_changed sees every change once.
    changes: Mutex<watch::Receiver<Participant>>,
    listeners: Mutex<HashMap<u64, Arc<Registration>>>,
}

/// Starts observing the group at `path`; returns once the current leader is known (the path
/// need not exist yet). Free with zkr_leader_observer_free.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_observer_start(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_leader_observer,
) -> zkr_status {
    ffi_call("zkr_leader_observer_start", || {
        let client = client_arg(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(out, "out")?;
        let observer = block_on(LeaderObserver::start(client, path))??;
        let mut changes = observer.subscribe();
        changes.borrow_and_update();
        out.write(Box::into_raw(Box::new(zkr_leader_observer {
            observer: Mutex::new(observer),
            changes: Mutex::new(changes),
            listeners: Mutex::new(HashMap::new()),
        })));
        Ok(())
    })
}

/// The leader as last seen (free with zkr_participant_free); {"", false} when nobody leads.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_observer_leader(
    o: *const zkr_leader_observer,
    leader: *mut *mut zkr_participant,
) -> zkr_status {
    ffi_call("zkr_leader_observer_leader", || {
        let o = arg_ref(o, "observer")?;
        let out = arg_out(leader, "leader")?;
        let p = o
            .observer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .leader();
        out.write(participant_box(&p)?);
        Ok(())
    })
}

/// Waits for the next change of leader (since the last call, or since start), at most
/// `timeout_ms` (-1: forever). `*leader` receives the new leader (free with
/// zkr_participant_free), or NULL if the timeout passed first. ZKR_CLOSED once the observer or
/// its client is closed.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_observer_wait_changed(
    o: *mut zkr_leader_observer,
    timeout_ms: i64,
    leader: *mut *mut zkr_participant,
) -> zkr_status {
    ffi_call("zkr_leader_observer_wait_changed", || {
        let o = arg_ref(o, "observer")?;
        let out = arg_out(leader, "leader")?;
        let timeout = arg_timeout(timeout_ms)?;
        let mut rx = o.changes.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let changed = block_on(async {
            match timeout {
                Some(t) => tokio::time::timeout(t, rx.changed()).await.ok(),
                None => Some(rx.changed().await),
            }
        })?;
        match changed {
            None => out.write(ptr::null_mut()),
            Some(Err(_)) => {
                return Err(Error::Closed(
                    "the leader observer (or its client) is closed".into(),
                ))
            }
            Some(Ok(())) => {
                let p = rx.borrow_and_update().clone();
                // Remember what this caller saw, for the next call.
                *o.changes.lock().unwrap_or_else(|e| e.into_inner()) = rx;
                out.write(participant_box(&p)?);
            }
        }
        Ok(())
    })
}

/// Adds a listener called with each new leader; `*listener_id` identifies it for
/// zkr_leader_observer_remove_listener. `user_data` must stay valid until it is removed or the
/// observer freed. The callback is called on another thread (see its type).
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_observer_add_listener(
    o: *mut zkr_leader_observer,
    callback: zkr_leader_observer_callback,
    user_data: *mut c_void,
    listener_id: *mut u64,
) -> zkr_status {
    ffi_call("zkr_leader_observer_add_listener", || {
        let o = arg_ref(o, "observer")?;
        let callback = callback.ok_or_else(|| Error::InvalidArgument("callback is NULL".into()))?;
        let out = arg_out(listener_id, "listener_id")?;
        let reg = Registration::new();
        let run_reg = reg.clone();
        let ud = UserData(user_data);
        let mut listeners = o.listeners.lock().unwrap_or_else(|e| e.into_inner());
        // The observer runs listeners on a plain thread of its own: call the C function there.
        let id = o
            .observer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add_listener(move |p| {
                let ud = ud;
                let Ok(c) = participant(&p) else { return };
                run_reg.run(|| callback(&c, ud.0));
                zkr_string_free(c.id);
            });
        listeners.insert(id, reg);
        out.write(id);
        Ok(())
    })
}

/// Removes a listener. When this returns, the callback is not running (unless this is called
/// from inside it) and will not run again. ZKR_INVALID_ARGUMENT for an unknown id.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_observer_remove_listener(
    o: *mut zkr_leader_observer,
    listener_id: u64,
) -> zkr_status {
    ffi_call("zkr_leader_observer_remove_listener", || {
        let o = arg_ref(o, "observer")?;
        let reg = o
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&listener_id);
        match reg {
            Some(reg) => {
                o.observer
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove_listener(listener_id);
                reg.disable();
                Ok(())
            }
            None => Err(Error::InvalidArgument(
                format!("no listener with id {listener_id} on this observer").into(),
            )),
        }
    })
}

/// Stops observing (its watch is removed from the server); waiters get ZKR_CLOSED. Closing twice
/// is ZKR_OK.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_observer_close(o: *mut zkr_leader_observer) -> zkr_status {
    ffi_call("zkr_leader_observer_close", || {
        let o = arg_ref(o, "observer")?;
        o.observer.lock().unwrap_or_else(|e| e.into_inner()).close();
        Ok(())
    })
}

/// Frees an observer: removes its listeners (waiting for a running one, unless called from
/// inside it) and closes it. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn zkr_leader_observer_free(o: *mut zkr_leader_observer) {
    ffi_boundary("zkr_leader_observer_free", (), || {
        if o.is_null() {
            return;
        }
        let o = Box::from_raw(o);
        let listeners: Vec<(u64, Arc<Registration>)> = o
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        let mut observer = o.observer.lock().unwrap_or_else(|e| e.into_inner());
        for (id, reg) in listeners {
            observer.remove_listener(id);
            reg.disable();
        }
        observer.close();
    })
}
