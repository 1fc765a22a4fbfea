//! Leader election: LeaderLatch, LeaderSelector (with its leadership context) and
//! LeaderObserver, and the participant types they share.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use zkrecipes::leader::{
    CancelReason, CloseMode, LeaderLatch, LeaderSelector, LeadershipContext, LeadershipEvent,
    Participant,
};
use zkrecipes::lock::BoxFuture;
use zkrecipes::{Error, ListenerId, LostPolicy, Result};

use crate::boundary::{
    arg_callback, arg_str, arg_timeout, ffi_boundary, handle_call, handle_out, recipe_new, wait,
};
use crate::callback::{CCallback, CFn, CallbackType, Closing, Listeners, Listening, UserData};
use crate::client::zkr_client;
use crate::handle::{free_handle, handle, handle_ref, new_handle, Handle};
use crate::lock::lost_policy;
use crate::status::{fail, zkr_status};
use crate::types::{c_string, free_returned, give_array, take_array, zkr_string_free};
use crate::vocab::CList;

// ---------------------------------------------------------------------------------------------
// Participants

/// A member of a leadership group (Curator's Participant). Returned by the library; free with
/// zkr_participant_free (or as part of a zkr_participant_list).
#[repr(C)]
pub struct zkr_participant {
    /// The participant id (its node's data as UTF-8, bytes that are not UTF-8 and NUL bytes as
    /// U+FFFD; "" when nobody takes part).
    pub id: *mut c_char,
    /// Whether this participant leads.
    pub is_leader: bool,
}

/// Participants in node order (the leader first). Free with zkr_participant_list_free.
#[repr(C)]
pub struct zkr_participant_list {
    /// `len` participants (NULL when `len` is 0).
    pub items: *mut zkr_participant,
    /// How many participants `items` holds.
    pub len: usize,
}

pub(crate) fn participant(p: &Participant) -> Result<zkr_participant> {
    // Another process's data: a NUL in it is data, not a bug of ours (a C string cannot hold it).
    let id = if p.id.contains('\0') {
        c_string(&p.id.replace('\0', "\u{FFFD}"))?
    } else {
        c_string(&p.id)?
    };
    Ok(zkr_participant {
        id,
        is_leader: p.is_leader,
    })
}

pub(crate) fn participant_box(p: &Participant) -> Result<*mut zkr_participant> {
    Ok(Box::into_raw(Box::new(participant(p)?)))
}

fn participant_list(list: &[Participant]) -> Result<*mut zkr_participant_list> {
    let mut items = Vec::with_capacity(list.len());
    for p in list {
        match participant(p) {
            Ok(item) => items.push(item),
            Err(e) => {
                for item in items {
                    // Made by c_string above, freed once.
                    zkr_string_free(item.id);
                }
                return Err(e);
            }
        }
    }
    let (items, len) = give_array(items);
    Ok(Box::into_raw(Box::new(zkr_participant_list { items, len })))
}

/// Frees a participant. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_participant_free(p: *mut zkr_participant) {
    free_returned("zkr_participant_free", p, |p| zkr_string_free(p.id))
}

/// Frees a participant list and everything in it. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_participant_list_free(list: *mut zkr_participant_list) {
    free_returned("zkr_participant_list_free", list, |l| {
        // SAFETY: the items of a list `participant_list` made with `give_array`, taken back
        // once with the list.
        unsafe { take_array(l.items, l.len) }
            .into_iter()
            .for_each(|p| zkr_string_free(p.id))
    })
}

// ---------------------------------------------------------------------------------------------
// What the latch and the selector share

/// Which connection states end leadership (Curator's ConnectionStateErrorPolicy).
pub type zkr_leader_lost_policy = u32;
/// Leadership ends as soon as the connection is SUSPENDED, and on LOST (the default).
pub const ZKR_LEADER_LOST_ON_SUSPENDED: zkr_leader_lost_policy = 0;
/// Leadership ends only when the session is LOST (fence writes with the leadership epoch).
pub const ZKR_LEADER_LOST_ON_SESSION_LOSS: zkr_leader_lost_policy = 1;

/// A handle of an election recipe (LeaderLatch, LeaderSelector): the calls both have.
trait Election: Handle {
    fn path(&self) -> &str;
    fn epoch(&self) -> Option<i64>;
    fn leads(&self) -> bool;
    fn set_policy(&self, policy: LostPolicy) -> Result<()>;
    fn leader(&self) -> BoxFuture<'_, Result<Participant>>;
    fn participants(&self) -> BoxFuture<'_, Result<Vec<Participant>>>;
    fn close(&self) -> BoxFuture<'_, Result<()>>;
}

/// _set_lost_policy.
fn set_lost_policy<E: Election>(function: &str, e: *mut E, policy: u32) -> zkr_status {
    handle_call(function, e, |e| {
        e.set_policy(lost_policy(policy, "ZKR_LEADER_LOST_*")?)
    })
}

/// _has_leadership.
fn has_leadership<E: Election>(function: &str, e: *const E, out: *mut bool) -> zkr_status {
    handle_out(function, e, out, "is_leader", |e| Ok(e.leads()))
}

/// _leadership_epoch.
fn epoch<E: Election>(function: &str, e: *const E, out: *mut i64) -> zkr_status {
    handle_out(function, e, out, "epoch", |e| {
        e.epoch().ok_or_else(|| {
            let what = format!("{} {}: this participant does not lead", E::ARG, e.path());
            Error::NotOwner(what.into())
        })
    })
}

/// _get_leader.
fn get_leader<E: Election>(
    function: &str,
    e: *mut E,
    out: *mut *mut zkr_participant,
) -> zkr_status {
    handle_out(function, e, out, "leader", |e| {
        participant_box(&wait(e.leader())?)
    })
}

/// _get_participants.
fn get_participants<E: Election>(
    function: &str,
    e: *mut E,
    out: *mut *mut zkr_participant_list,
) -> zkr_status {
    handle_out(function, e, out, "participants", |e| {
        participant_list(&wait(e.participants())?)
    })
}

/// _close.
fn close<E: Election>(function: &str, e: *mut E) -> zkr_status {
    handle_call(function, e, |e| wait(e.close()))
}

// ---------------------------------------------------------------------------------------------
// LeaderLatch

/// How zkr_leader_latch_close treats the listeners (Curator's LeaderLatch.CloseMode).
pub type zkr_close_mode = u32;
/// Closing does not call the listeners (the default).
pub const ZKR_CLOSE_SILENT: zkr_close_mode = 0;
/// Closing while leading calls the listeners with is_leader = false.
pub const ZKR_CLOSE_NOTIFY_LEADER: zkr_close_mode = 1;

/// Called when this participant becomes leader (`is_leader` true) or stops leading (false). It
/// runs on a library thread (never the caller's, never one of the library's async workers), one
/// call at a time, in order with the latch's other listeners; any zkr_ function may be called
/// inside, including blocking ones. It must not throw (C++) or longjmp out.
pub type zkr_leadership_callback =
    Option<unsafe extern "C" fn(is_leader: bool, user_data: *mut c_void)>;

/// Curator's LeaderLatch: join an election and learn when this participant leads. Each
/// participant creates `<path>/_c_<uuid>-latch-<seq>` holding its id; the first node leads.
/// Thread-safe.
pub struct zkr_leader_latch {
    latch: LeaderLatch,
    listeners: Listeners<zkr_leadership_callback>,
}

// No listener starts once the free begins; the latch is closed, and only then are running
// listeners waited for (one blocked in zkr_leader_latch_await, which the close ends, would
// otherwise hold the free for good).
handle!(zkr_leader_latch, "latch", |l| {
    l.shut_all();
    let _ = wait(l.latch.close_with(CloseMode::Silent));
    l.unregister_all();
});

impl Closing for zkr_leader_latch {
    fn close_handle(&self) -> Result<()> {
        wait(Election::close(self))
    }
}

impl Listening for zkr_leader_latch {
    type Callback = zkr_leadership_callback;

    fn listeners(&self) -> &Listeners<zkr_leadership_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<LeadershipFn>>) -> Result<ListenerId> {
        Ok(self.latch.add_event_listener(move |event| {
            let is_leader = event == LeadershipEvent::IsLeader;
            cb.call((is_leader,))
        }))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.latch.remove_listener(id)
    }
}

type LeadershipFn = <zkr_leadership_callback as CallbackType>::Fn;

impl Election for zkr_leader_latch {
    fn path(&self) -> &str {
        self.latch.path()
    }
    fn epoch(&self) -> Option<i64> {
        self.latch.leadership_epoch()
    }
    fn leads(&self) -> bool {
        self.latch.has_leadership()
    }
    fn set_policy(&self, policy: LostPolicy) -> Result<()> {
        self.latch.set_lost_policy(policy)
    }
    fn leader(&self) -> BoxFuture<'_, Result<Participant>> {
        Box::pin(self.latch.get_leader())
    }
    fn participants(&self) -> BoxFuture<'_, Result<Vec<Participant>>> {
        Box::pin(self.latch.get_participants())
    }
    fn close(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.latch.close())
    }
}

/// Makes a latch on `path` for participant `id` (stored as its node's data; may be "").
/// Nothing happens on the server before zkr_leader_latch_start. Free with
/// zkr_leader_latch_free.
#[no_mangle]
pub extern "C" fn zkr_leader_latch_new(
    c: *mut zkr_client,
    path: *const c_char,
    id: *const c_char,
    out: *mut *mut zkr_leader_latch,
) -> zkr_status {
    recipe_new("zkr_leader_latch_new", c, path, out, |c, path| {
        let latch = LeaderLatch::new(c, path, arg_str(id, "id")?)?;
        Ok(zkr_leader_latch {
            latch,
            listeners: Listeners::default(),
        })
    })
}

/// Sets the close mode: ZKR_CLOSE_SILENT (default) or ZKR_CLOSE_NOTIFY_LEADER.
#[no_mangle]
pub extern "C" fn zkr_leader_latch_set_close_mode(
    l: *mut zkr_leader_latch,
    mode: zkr_close_mode,
) -> zkr_status {
    handle_call("zkr_leader_latch_set_close_mode", l, |l| {
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
pub extern "C" fn zkr_leader_latch_set_lost_policy(
    l: *mut zkr_leader_latch,
    policy: zkr_leader_lost_policy,
) -> zkr_status {
    set_lost_policy("zkr_leader_latch_set_lost_policy", l, policy)
}

/// Joins the election: returns once our node is created (a failed first try is retried in the
/// background). ZKR_INVALID_ARGUMENT if started twice, ZKR_CLOSED after close.
#[no_mangle]
pub extern "C" fn zkr_leader_latch_start(l: *mut zkr_leader_latch) -> zkr_status {
    handle_call("zkr_leader_latch_start", l, |l| wait(l.latch.start()))
}

/// Waits until this participant leads, at most `timeout_ms` (-1: forever). `*is_leader` tells
/// whether it leads. With -1, a latch that is closed (or not started, or whose client is closed)
/// returns ZKR_CLOSED instead of waiting forever.
#[no_mangle]
pub extern "C" fn zkr_leader_latch_await(
    l: *mut zkr_leader_latch,
    timeout_ms: i64,
    is_leader: *mut bool,
) -> zkr_status {
    handle_out("zkr_leader_latch_await", l, is_leader, "is_leader", |l| {
        wait(l.latch.await_leadership(arg_timeout(timeout_ms)?))
    })
}

/// Whether this participant leads now (a local flag: no server call).
#[no_mangle]
pub extern "C" fn zkr_leader_latch_has_leadership(
    l: *const zkr_leader_latch,
    is_leader: *mut bool,
) -> zkr_status {
    has_leadership("zkr_leader_latch_has_leadership", l, is_leader)
}

/// The leadership epoch while leading: our node's czxid, strictly increasing from one
/// leadership to the next, to fence writes with. ZKR_NOT_OWNER if this participant does not
/// lead.
#[no_mangle]
pub extern "C" fn zkr_leader_latch_leadership_epoch(
    l: *const zkr_leader_latch,
    epoch: *mut i64,
) -> zkr_status {
    self::epoch("zkr_leader_latch_leadership_epoch", l, epoch)
}

/// The current leader, read from the server, in `*leader` (free with zkr_participant_free): the
/// participant whose node sorts first, or {"", false} when nobody takes part.
#[no_mangle]
pub extern "C" fn zkr_leader_latch_get_leader(
    l: *mut zkr_leader_latch,
    leader: *mut *mut zkr_participant,
) -> zkr_status {
    get_leader("zkr_leader_latch_get_leader", l, leader)
}

/// Every participant in node order (the leader first), read from the server, in
/// `*participants` (free with zkr_participant_list_free).
#[no_mangle]
pub extern "C" fn zkr_leader_latch_get_participants(
    l: *mut zkr_leader_latch,
    participants: *mut *mut zkr_participant_list,
) -> zkr_status {
    get_participants("zkr_leader_latch_get_participants", l, participants)
}

/// Our node's path while we have one (Curator's getOurPath), in `*path` (free with
/// zkr_string_free); ZKR_NO_NODE when there is none (not started, closed, or between sessions).
#[no_mangle]
pub extern "C" fn zkr_leader_latch_our_path(
    l: *const zkr_leader_latch,
    path: *mut *mut c_char,
) -> zkr_status {
    handle_out("zkr_leader_latch_our_path", l, path, "path", |l| {
        let ours = l.latch.our_path().ok_or_else(|| {
            let what = format!("leader latch {}: no node of ours right now", l.latch.path());
            Error::NoNode(what.into())
        })?;
        c_string(&ours)
    })
}

// ---------------------------------------------------------------------------------------------
// LeaderSelector

/// What take_leadership gets: this leadership term's cancellation flag and fencing token. Valid
/// only until take_leadership returns (it may be used from other threads until then; a call
/// after that is ZKR_INVALID_ARGUMENT in most cases, like any freed handle). A term that ends by
/// returning is not cancelled: a helper thread waiting in zkr_leadership_wait_cancelled is not
/// woken by the return, so take_leadership must end such a wait (a timeout, or its own signal)
/// and join the thread before it returns.
pub struct zkr_leadership_context {
    ctx: LeadershipContext,
}

handle!(zkr_leadership_context, "ctx");

/// Why leadership was cancelled (zkr_leadership_cancel_reason): 0, then the core's
/// CancelReason list in order.
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

/// The core's cancel reasons in C (zkr_cancel_reason).
pub(crate) const CANCEL_REASONS: CList<CancelReason> = CList {
    all: CancelReason::ALL,
    first: ZKR_CANCEL_CONNECTION_SUSPENDED,
    prefix: "ZKR_CANCEL_",
    name: CancelReason::name,
};

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
/// take_leadership. A NULL (or no longer valid) ctx counts as cancelled.
///
/// Call it only while take_leadership runs, with the context it was given.
#[no_mangle]
pub extern "C" fn zkr_leadership_cancelled(ctx: *const zkr_leadership_context) -> bool {
    ffi_boundary("zkr_leadership_cancelled", true, || match handle_ref(ctx) {
        Ok(c) => c.ctx.is_cancelled(),
        Err(e) => {
            fail("zkr_leadership_cancelled", &e);
            true
        }
    })
}

/// Blocks until this term is cancelled or `timeout_ms` passes (-1: no limit); `*cancelled`
/// tells which.
///
/// Call it only while take_leadership runs, with the context it was given.
#[no_mangle]
pub extern "C" fn zkr_leadership_wait_cancelled(
    ctx: *const zkr_leadership_context,
    timeout_ms: i64,
    cancelled: *mut bool,
) -> zkr_status {
    handle_out(
        "zkr_leadership_wait_cancelled",
        ctx,
        cancelled,
        "cancelled",
        |c| Ok(c.ctx.wait_cancelled(arg_timeout(timeout_ms)?).is_some()),
    )
}

/// Why this term was cancelled (ZKR_CANCEL_NONE while it is not).
///
/// Call it only while take_leadership runs, with the context it was given.
#[no_mangle]
pub extern "C" fn zkr_leadership_cancel_reason(
    ctx: *const zkr_leadership_context,
    reason: *mut zkr_cancel_reason,
) -> zkr_status {
    handle_out("zkr_leadership_cancel_reason", ctx, reason, "reason", |c| {
        Ok(c.ctx
            .cancel_reason()
            .map_or(ZKR_CANCEL_NONE, |r| CANCEL_REASONS.to_c(r)))
    })
}

/// The fencing token of this term: the lock node's czxid, strictly greater than any earlier
/// leader's. Pass it to the resources the leader writes to.
///
/// Call it only while take_leadership runs, with the context it was given.
#[no_mangle]
pub extern "C" fn zkr_leadership_fencing_token(
    ctx: *const zkr_leadership_context,
    token: *mut i64,
) -> zkr_status {
    handle_out("zkr_leadership_fencing_token", ctx, token, "token", |c| {
        c.ctx
            .fencing_token()
            .ok_or_else(|| Error::Internal("this leadership term has no fencing token".into()))
    })
}

/// Which leadership term of this selector this is (1 for the first).
///
/// Call it only while take_leadership runs, with the context it was given.
#[no_mangle]
pub extern "C" fn zkr_leadership_term(
    ctx: *const zkr_leadership_context,
    term: *mut u64,
) -> zkr_status {
    handle_out("zkr_leadership_term", ctx, term, "term", |c| {
        Ok(c.ctx.term())
    })
}

/// Curator's LeaderSelector: leadership is an InterProcessMutex on the path (nodes
/// `_c_<uuid>-lock-<seq>` holding the id), held while take_leadership runs. Fair: participants
/// lead in the order they queued. Thread-safe.
pub struct zkr_leader_selector {
    selector: LeaderSelector,
}

handle!(zkr_leader_selector, "selector", |s| {
    let _ = wait(s.selector.close());
});

impl Election for zkr_leader_selector {
    fn path(&self) -> &str {
        self.selector.path()
    }
    fn epoch(&self) -> Option<i64> {
        self.selector.leadership_epoch()
    }
    fn leads(&self) -> bool {
        self.selector.has_leadership()
    }
    fn set_policy(&self, policy: LostPolicy) -> Result<()> {
        self.selector.set_lost_policy(policy)
    }
    fn leader(&self) -> BoxFuture<'_, Result<Participant>> {
        Box::pin(self.selector.get_leader())
    }
    fn participants(&self) -> BoxFuture<'_, Result<Vec<Participant>>> {
        Box::pin(self.selector.get_participants())
    }
    fn close(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.selector.close())
    }
}

/// Makes a selector on `path` for participant `id` (may be "") whose leadership runs
/// `take_leadership(ctx, user_data)`. `user_data` must stay valid until the selector is freed.
/// Nothing happens on the server before zkr_leader_selector_start. Free with
/// zkr_leader_selector_free.
///
/// take_leadership is called on another thread (see its type).
#[no_mangle]
pub extern "C" fn zkr_leader_selector_new(
    c: *mut zkr_client,
    path: *const c_char,
    id: *const c_char,
    take_leadership: zkr_take_leadership_callback,
    user_data: *mut c_void,
    out: *mut *mut zkr_leader_selector,
) -> zkr_status {
    recipe_new("zkr_leader_selector_new", c, path, out, |c, path| {
        let id = arg_str(id, "id")?;
        let f = arg_callback(take_leadership, "take_leadership")?;
        let ud = UserData(user_data);
        // The core runs a blocking take_leadership on a thread of its own per term; the C
        // function runs there, with a context handle that is freed when it returns.
        let selector = LeaderSelector::new_blocking(c, path, id, move |ctx| {
            let ud = ud;
            let handle = new_handle(zkr_leadership_context { ctx: ctx.clone() });
            // On the term's own thread; `handle` is a live context until freed below.
            f.invoke((handle,), ud.0);
            free_handle("zkr_leader_selector (take_leadership)", handle);
        })?;
        Ok(zkr_leader_selector { selector })
    })
}

/// Turns Curator's autoRequeue on or off: after each leadership (and after an acquire that
/// failed on connection trouble), queue again by itself.
#[no_mangle]
pub extern "C" fn zkr_leader_selector_set_auto_requeue(
    s: *mut zkr_leader_selector,
    on: bool,
) -> zkr_status {
    handle_call("zkr_leader_selector_set_auto_requeue", s, |s| {
        s.selector.set_auto_requeue(on);
        Ok(())
    })
}

/// Sets which connection states cancel leadership (ZKR_LEADER_LOST_*); only before start.
#[no_mangle]
pub extern "C" fn zkr_leader_selector_set_lost_policy(
    s: *mut zkr_leader_selector,
    policy: zkr_leader_lost_policy,
) -> zkr_status {
    set_lost_policy("zkr_leader_selector_set_lost_policy", s, policy)
}

/// Joins the queue for leadership (in the background; returns at once). ZKR_INVALID_ARGUMENT if
/// started twice, ZKR_CLOSED after close.
#[no_mangle]
pub extern "C" fn zkr_leader_selector_start(s: *mut zkr_leader_selector) -> zkr_status {
    handle_call("zkr_leader_selector_start", s, |s| s.selector.start())
}

/// Queues for leadership again (Curator's requeue); `*queued` is false if it already was queued
/// or leading.
#[no_mangle]
pub extern "C" fn zkr_leader_selector_requeue(
    s: *mut zkr_leader_selector,
    queued: *mut bool,
) -> zkr_status {
    handle_out("zkr_leader_selector_requeue", s, queued, "queued", |s| {
        s.selector.requeue()
    })
}

/// Cancels the current leadership, if any (its context reports ZKR_CANCEL_INTERRUPTED).
#[no_mangle]
pub extern "C" fn zkr_leader_selector_interrupt_leadership(
    s: *mut zkr_leader_selector,
) -> zkr_status {
    handle_call("zkr_leader_selector_interrupt_leadership", s, |s| {
        s.selector.interrupt_leadership();
        Ok(())
    })
}

/// Whether this participant leads now (take_leadership runs and is not cancelled).
#[no_mangle]
pub extern "C" fn zkr_leader_selector_has_leadership(
    s: *const zkr_leader_selector,
    is_leader: *mut bool,
) -> zkr_status {
    has_leadership("zkr_leader_selector_has_leadership", s, is_leader)
}

/// The fencing token of the current leadership, while leading (as in the context).
/// ZKR_NOT_OWNER if this participant does not lead.
#[no_mangle]
pub extern "C" fn zkr_leader_selector_leadership_epoch(
    s: *const zkr_leader_selector,
    epoch: *mut i64,
) -> zkr_status {
    self::epoch("zkr_leader_selector_leadership_epoch", s, epoch)
}

/// How many leadership terms this selector has started.
#[no_mangle]
pub extern "C" fn zkr_leader_selector_leadership_count(
    s: *const zkr_leader_selector,
    count: *mut u64,
) -> zkr_status {
    handle_out(
        "zkr_leader_selector_leadership_count",
        s,
        count,
        "count",
        |s| Ok(s.selector.leadership_count()),
    )
}

/// The current leader, read from the server (free with zkr_participant_free).
#[no_mangle]
pub extern "C" fn zkr_leader_selector_get_leader(
    s: *mut zkr_leader_selector,
    leader: *mut *mut zkr_participant,
) -> zkr_status {
    get_leader("zkr_leader_selector_get_leader", s, leader)
}

/// Every participant in queue order, the leader flagged (free with zkr_participant_list_free).
#[no_mangle]
pub extern "C" fn zkr_leader_selector_get_participants(
    s: *mut zkr_leader_selector,
    participants: *mut *mut zkr_participant_list,
) -> zkr_status {
    get_participants("zkr_leader_selector_get_participants", s, participants)
}

/// Leaves for good: cancels the current leadership (ZKR_CANCEL_CLOSED), leaves the queue and
/// waits until take_leadership has returned and the lock is released. Called from inside
/// take_leadership it does not wait (for itself): the lock is released in the background once
/// take_leadership returns. Closing again is ZKR_OK; from another thread it too waits until a
/// take_leadership still running (one that closed its own selector) has returned.
#[no_mangle]
pub extern "C" fn zkr_leader_selector_close(s: *mut zkr_leader_selector) -> zkr_status {
    close("zkr_leader_selector_close", s)
}

/// Frees a selector: closes it, waiting for a running take_leadership to return (also one that
/// closed the selector itself), unless called from inside it; so `user_data` may be freed
/// afterwards. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_leader_selector_free(s: *mut zkr_leader_selector) {
    free_handle("zkr_leader_selector_free", s)
}
