//! The plain InterProcessMutex: Curator's algorithm ([`Internals`]) and a table of holds per
//! [`Owner`], with reentrancy, fencing tokens, lost holds and revocation. The read/write lock's
//! halves are plain mutexes of other kinds; cohort handoffs (`cohort.rs`) wrap one.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::{broadcast, watch};

use super::cohort::CohortOptions;
use super::internals::{
    Acquired, AttemptOptions, DeletedListener, Internals, Node, RevokeListener, WRITE_LOCK_NAME,
};
use super::mode::{FencingToken, LostListener, Mode, ReleaseStatus};
use super::BoxFuture;
use crate::client::sequence;
use crate::dispatch::{Dispatcher, ListenerId};
use crate::wait::Deadline;
use crate::{path, runtime, Client, ConnectionState, Error, LostPolicy, Owner, Result};

fn policy_to_u8(p: LostPolicy) -> u8 {
    match p {
        LostPolicy::Standard => 0,
        LostPolicy::Session => 1,
    }
}

fn policy_from_u8(v: u8) -> LostPolicy {
    if v == 1 {
        LostPolicy::Session
    } else {
        LostPolicy::Standard
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HoldState {
    lost: bool,
    ended: bool,
}

/// One owner's hold: DESIGN.md § Owners (owner, lock node, count, session, fencing token).
struct Hold {
    node: Node,
    count: u32,
    valid: bool,
    /// Tells [`Plain::lost_signal`]'s futures of this hold's end: made by the first of them
    /// (most holds have none, and a channel costs an allocation and a wake-up of nobody on
    /// each change and on its drop). Its `lost` is `!valid`; `ended` is set by the release.
    signal: Option<watch::Sender<HoldState>>,
    _node_watch: Option<watch::Sender<()>>,
}

enum Slot {
    /// An acquire of this owner is in flight; a second one of the same owner waits for it
    /// rather than creating a second node. `done` is made by the first such waiter; the slot's
    /// end (replaced by the hold, or removed) drops it, which ends the waits.
    Acquiring {
        id: u64,
        done: Option<watch::Sender<()>>,
        /// Nodes of this acquire that someone else deleted before it became a hold (a
        /// revocable acquire watches its node from the create on): the hold `install` makes
        /// on one of them is lost from the start.
        gone: Vec<String>,
    },
    Held(Hold),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Mutex,
    Read,
    Write,
}

/// What the clones of one plain mutex share: the lock, its hold table and its listeners.
pub(crate) struct Shared {
    internals: Internals,
    kind: Kind,
    data: Vec<u8>,
    slots: Mutex<HashMap<Owner, Slot>>,
    policy: AtomicU8,
    /// Lost-hold listeners and revocation requests, under the dispatcher's guarantee.
    callbacks: Arc<Dispatcher<Owner>>,
    revocation: Mutex<Option<RevokeListener>>,
    /// The read lock's write lock (for the owner-holds-write rule and the downgrade).
    write_lock: Option<Weak<Shared>>,
    monitor: Mutex<Option<tokio::task::AbortHandle>>,
    next_attempt: AtomicU64,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(m) = self
            .monitor
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            m.abort();
        }
    }
}

/// The longest name we append to a lock path: `/_c_<36>-` + lock name + 19 digits.
const NODE_SUFFIX_LEN: usize = 1 + 3 + 36 + 1 + 8 + 19;

/// A plain mutex (cheap to clone; clones share one hold table).
#[derive(Clone)]
pub(crate) struct Plain {
    shared: Arc<Shared>,
}

impl Plain {
    /// A mutex of `kind` on `internals`' lock path, whose nodes carry `data`; a read lock names
    /// its write lock.
    pub(crate) fn new(
        internals: Internals,
        kind: Kind,
        data: Vec<u8>,
        write_lock: Option<Weak<Shared>>,
    ) -> Result<Plain> {
        let base = &internals.base;
        internals.client.ensure_open_for("lock", base)?;
        path::validate_path(base)?;
        if base.len() + NODE_SUFFIX_LEN > path::MAX_PATH_LEN {
            return Err(Error::invalid(format!(
                "lock path of {} bytes is too long: its lock nodes would pass the {}-byte path limit",
                base.len(),
                path::MAX_PATH_LEN
            )));
        }
        path::validate_data(base, &data)?;
        let events = internals.client.subscribe_events();
        let closed = internals.client.closed();
        let shared = Arc::new(Shared {
            internals,
            kind,
            data,
            slots: Mutex::new(HashMap::new()),
            policy: AtomicU8::new(policy_to_u8(LostPolicy::Standard)),
            callbacks: Arc::new(Dispatcher::new()),
            revocation: Mutex::new(None),
            write_lock,
            monitor: Mutex::new(None),
            next_attempt: AtomicU64::new(1),
        });
        let task = runtime::spawn(monitor(Arc::downgrade(&shared), events, closed));
        *shared.monitor.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
        Ok(Plain { shared })
    }

    pub(crate) fn downgrade(&self) -> Weak<Shared> {
        Arc::downgrade(&self.shared)
    }

    pub(crate) fn kind(&self) -> Kind {
        self.shared.kind
    }

    pub(crate) fn path(&self) -> &str {
        &self.shared.internals.base
    }

    pub(crate) fn client(&self) -> &Client {
        &self.shared.internals.client
    }

    pub(crate) fn lock_name(&self) -> &'static str {
        self.shared.internals.lock_name
    }

    pub(crate) fn holders(&self) -> usize {
        self.shared
            .lock_slots()
            .values()
            .filter(|s| matches!(s, Slot::Held(_)))
            .count()
    }

    /// Whether any owner holds or is acquiring (a cohort must be set up before that).
    pub(crate) fn is_in_use(&self) -> bool {
        !self.shared.lock_slots().is_empty()
    }

    pub(crate) fn is_revocable(&self) -> bool {
        self.shared
            .revocation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    pub(crate) fn set_lost_policy(&self, policy: LostPolicy) {
        self.shared
            .policy
            .store(policy_to_u8(policy), Ordering::SeqCst);
    }

    pub(crate) fn lost_policy(&self) -> LostPolicy {
        self.shared.policy()
    }

    pub(crate) fn remove_lost_listener(&self, id: ListenerId) -> Result<bool> {
        self.shared.callbacks.remove(id)
    }

    /// The lock's nodes in line order, as full paths (only this lock's kind for the read/write
    /// lock's halves).
    pub(crate) async fn participant_nodes(&self) -> Result<Vec<String>> {
        let s = &self.shared;
        if s.internals.client.is_closed() {
            return Err(Error::closed());
        }
        s.internals.participant_nodes(s.kind != Kind::Mutex).await
    }

    /// Acquires for `owner` until `deadline`: a re-entry counts up; a second acquire of an owner
    /// whose first is in flight waits for it; otherwise Curator's attempt.
    pub(crate) async fn acquire(&self, owner: Owner, deadline: Deadline) -> Result<bool> {
        let s = &self.shared;
        let client = &s.internals.client;
        let id = loop {
            let mut wait = {
                let mut slots = s.lock_slots();
                match slots.get_mut(&owner) {
                    Some(Slot::Held(h)) => {
                        if !h.valid {
                            return Err(s.void_hold_error(h));
                        }
                        h.count = h.count.checked_add(1).ok_or_else(|| {
                            Error::Overflow(
                                format!(
                                    "acquire lock {}: reentrant count overflow",
                                    s.internals.base
                                )
                                .into(),
                            )
                        })?;
                        return Ok(true);
                    }
                    Some(Slot::Acquiring { done, .. }) => {
                        done.get_or_insert_with(|| watch::channel(()).0).subscribe()
                    }
                    None => {
                        let id = s.next_attempt.fetch_add(1, Ordering::Relaxed);
                        slots.insert(
                            owner,
                            Slot::Acquiring {
                                id,
                                done: None,
                                gone: Vec::new(),
                            },
                        );
                        break id;
                    }
                }
            };
            tokio::select! {
                _ = wait.changed() => {},
                _ = deadline.sleep() => return Ok(false),
                _ = client.closed() => return Err(Error::closed()),
            }
        };
        let mut slot = SlotGuard {
            shared: s.clone(),
            owner,
            id,
            armed: true,
        };
        // The read lock's write lock (none for the others).
        let write = s.write_lock.as_ref().and_then(Weak::upgrade);
        let write_held = {
            let write = write.clone();
            move || {
                write
                    .as_ref()
                    .is_some_and(|w| w.intact_held_node(owner).is_some())
            }
        };
        // Curator 5.5+: the write lock's holder takes the read lock with a plain EPHEMERAL node
        // carrying the write node's sequence, so the read hold keeps the write's place in line.
        // Only an intact write hold lends its place, asked for each node the attempt makes. One
        // lost (its session gone, its node deleted, a suspension under the standard policy) but
        // not released yet is refused, as re-entering it is: another client may hold the write
        // lock now, and a plain read node would queue behind this owner's own write node, if it
        // is still there. One released since lends nothing.
        let sequence = move || match &write {
            Some(w) => match w.lost_hold_error(owner) {
                Some(e) => Err(e),
                None => Ok(w
                    .intact_held_node(owner)
                    .map(|n| sequence::key(&n.name, WRITE_LOCK_NAME).to_string())),
            },
            None => Ok(None),
        };
        let revocable = s
            .revocation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        // Curator writes empty data into revocable nodes, so that only `__REVOKE__` matches.
        let data: &[u8] = if revocable.is_some() { &[] } else { &s.data };
        let opts = AttemptOptions {
            owner,
            data,
            deadline,
            sequence: &sequence,
            write_held: &write_held,
            revocable,
            deleted: Some(s.deleted_listener(owner, id)),
        };
        match s.internals.attempt(&opts).await? {
            Some(acquired) => {
                slot.armed = false;
                s.install(owner, id, acquired);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Releases one acquire of `owner`; the last one deletes the lock node.
    pub(crate) async fn release(&self, owner: Owner) -> Result<ReleaseStatus> {
        let s = &self.shared;
        let hold = {
            let mut slots = s.lock_slots();
            match slots.get_mut(&owner) {
                Some(Slot::Held(h)) if h.count > 1 => {
                    h.count -= 1;
                    return Ok(ReleaseStatus::StillHeld(h.count));
                }
                Some(Slot::Held(_)) => match slots.remove(&owner) {
                    Some(Slot::Held(h)) => h,
                    _ => {
                        return Err(Error::Internal(
                            "lock hold table changed under its lock".into(),
                        ))
                    }
                },
                _ => {
                    return Err(Error::NotOwner(
                        format!(
                            "release lock {}: this owner does not hold it",
                            s.internals.base
                        )
                        .into(),
                    ))
                }
            }
        };
        if let Some(signal) = &hold.signal {
            signal.send_modify(|st| st.ended = true);
        }
        let client = &s.internals.client;
        if client.is_closed() {
            return Err(Error::Closed(
                format!(
                    "release lock {}: the client is closed; the lock node {} went with its session",
                    s.internals.base, hold.node.path
                )
                .into(),
            ));
        }
        if !hold.valid {
            // Already reported lost. A node of an older session went with that session. One
            // of the current session (lost on SUSPENDED) is deleted now if we are connected,
            // else in the background (the delete is guaranteed): a release never waits out a
            // disconnection for a hold its owner was already told is gone.
            if hold.node.session == client.session_id() {
                client
                    .delete_ours_unless_disconnected(&hold.node.path)
                    .await;
            }
            return Ok(ReleaseStatus::WasLost);
        }
        client
            .delete_ours(&hold.node.path)
            .await
            .map(|()| ReleaseStatus::Released)
    }

    pub(crate) fn owns(&self, owner: Owner) -> bool {
        self.shared.owns(owner)
    }

    /// The czxid of `owner`'s lock node.
    pub(crate) fn czxid(&self, owner: Owner) -> Option<i64> {
        self.shared.held_node(owner).map(|n| n.czxid)
    }

    pub(crate) fn lock_node(&self, owner: Owner) -> Option<String> {
        self.shared.held_node(owner).map(|n| n.path)
    }

    pub(crate) fn is_held_valid(&self, owner: Owner) -> bool {
        let s = &self.shared;
        let client = &s.internals.client;
        let slots = s.lock_slots();
        let Some(Slot::Held(h)) = slots.get(&owner) else {
            return false;
        };
        h.valid
            && !client.is_closed()
            && h.node.session == client.session_id()
            && (s.policy() == LostPolicy::Session || client.state().is_connected())
            && client.heard_recently(s.policy())
    }

    /// Resolves when `owner`'s current hold ends: `true` if lost, `false` if released first.
    pub(crate) fn lost_signal(&self, owner: Owner) -> impl Future<Output = bool> + Send + 'static {
        let rx = match self.shared.lock_slots().get_mut(&owner) {
            Some(Slot::Held(h)) => Some(
                h.signal
                    .get_or_insert_with(|| {
                        watch::channel(HoldState {
                            lost: !h.valid,
                            ended: false,
                        })
                        .0
                    })
                    .subscribe(),
            ),
            _ => None,
        };
        async move {
            let Some(mut rx) = rx else { return false };
            let lost = match rx.wait_for(|s| s.lost || s.ended).await {
                Ok(s) => s.lost,
                Err(_) => false,
            };
            lost
        }
    }

    pub(crate) fn on_lost(&self, listener: LostListener) -> ListenerId {
        self.shared.callbacks.add(move |o: &Owner| listener(*o))
    }

    /// Whether `owner`'s hold is intact: not marked lost, and its node of the client's session
    /// now (between a new session and the monitor's marking, a node of the ended one is gone
    /// from the server already: never to be handed on).
    pub(crate) fn is_hold_intact(&self, owner: Owner) -> bool {
        self.shared.intact_held_node(owner).is_some()
    }

    /// The error a re-entry of `owner`'s lost hold gets.
    pub(crate) fn void_hold_error_for(&self, owner: Owner) -> Error {
        match self.shared.lock_slots().get(&owner) {
            Some(Slot::Held(h)) => self.shared.void_hold_error(h),
            _ => Error::Internal("no hold to report on".into()),
        }
    }
}

impl Mode for Plain {
    fn acquire(&self, owner: Owner, deadline: Deadline) -> BoxFuture<'_, Result<bool>> {
        Box::pin(Plain::acquire(self, owner, deadline))
    }

    fn release(&self, owner: Owner) -> BoxFuture<'_, Result<ReleaseStatus>> {
        Box::pin(Plain::release(self, owner))
    }

    fn is_owned_by(&self, owner: Owner) -> bool {
        self.owns(owner)
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.holders() > 0
    }

    fn fencing_token(&self, owner: Owner) -> Option<FencingToken> {
        self.czxid(owner)
            .map(|zxid| FencingToken { zxid, handoff: 0 })
    }

    fn lock_node(&self, owner: Owner) -> Option<String> {
        Plain::lock_node(self, owner)
    }

    fn held_session(&self, owner: Owner) -> Option<i64> {
        self.shared.held_node(owner).map(|n| n.session)
    }

    fn is_held_valid(&self, owner: Owner) -> bool {
        Plain::is_held_valid(self, owner)
    }

    fn lost_hold(&self, owner: Owner) -> Option<Error> {
        self.shared.lost_hold_error(owner)
    }

    fn lost_signal(&self, owner: Owner) -> BoxFuture<'static, bool> {
        Box::pin(Plain::lost_signal(self, owner))
    }

    fn on_lost(&self, listener: LostListener) -> ListenerId {
        Plain::on_lost(self, listener)
    }

    fn make_revocable(&self, listener: LostListener) -> Result<()> {
        let callbacks = Arc::downgrade(&self.shared.callbacks);
        let queue: RevokeListener = Arc::new(move |owner| {
            if let Some(d) = callbacks.upgrade() {
                let l = listener.clone();
                d.call(move || l(owner));
            }
        });
        *self
            .shared
            .revocation
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(queue);
        Ok(())
    }

    fn local_waiters(&self) -> usize {
        0
    }

    fn cohort_options(&self) -> Option<CohortOptions> {
        None
    }
}

/// Removes an in-flight marker that did not become a hold (timeout, error, cancellation).
struct SlotGuard {
    shared: Arc<Shared>,
    owner: Owner,
    id: u64,
    armed: bool,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if self.armed {
            let mut slots = self.shared.lock_slots();
            if matches!(slots.get(&self.owner), Some(Slot::Acquiring { id, .. }) if *id == self.id)
            {
                // Same-owner waiters wake (the slot's `done` drops) once it is gone, after
                // the table's lock is let go.
                let settled = slots.remove(&self.owner);
                drop(slots);
                drop(settled);
            }
        }
    }
}

impl Shared {
    fn lock_slots(&self) -> MutexGuard<'_, HashMap<Owner, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn policy(&self) -> LostPolicy {
        policy_from_u8(self.policy.load(Ordering::SeqCst))
    }

    fn owns(&self, owner: Owner) -> bool {
        matches!(self.lock_slots().get(&owner), Some(Slot::Held(_)))
    }

    fn held_node(&self, owner: Owner) -> Option<Node> {
        match self.lock_slots().get(&owner) {
            Some(Slot::Held(h)) => Some(h.node.clone()),
            _ => None,
        }
    }

    /// The error for acquiring on `owner`'s hold when it is held but not intact.
    fn lost_hold_error(&self, owner: Owner) -> Option<Error> {
        let session = self.internals.client.session_id();
        match self.lock_slots().get(&owner) {
            Some(Slot::Held(h)) if !(h.valid && h.node.session == session) => {
                Some(self.void_hold_error(h))
            }
            _ => None,
        }
    }

    /// `owner`'s held node, if its hold is intact: not lost, and its node on this session.
    fn intact_held_node(&self, owner: Owner) -> Option<Node> {
        let session = self.internals.client.session_id();
        match self.lock_slots().get(&owner) {
            Some(Slot::Held(h)) if h.valid && h.node.session == session => Some(h.node.clone()),
            _ => None,
        }
    }

    fn void_hold_error(&self, h: &Hold) -> Error {
        let client = &self.internals.client;
        let why = format!(
            "acquire lock {}: this owner's hold was lost; release it before acquiring again",
            self.internals.base
        );
        if client.is_closed() {
            Error::Closed(why.into())
        } else if client.session_id() != h.node.session {
            Error::SessionExpired(why.into())
        } else {
            Error::ConnectionLoss(why.into())
        }
    }

    fn install(&self, owner: Owner, id: u64, acquired: Acquired) {
        let client = &self.internals.client;
        // Same-owner waiters wake (the in-flight slot's `done` drops) once the hold is in,
        // after the table's lock is let go.
        let (valid, _settled) = {
            let mut slots = self.lock_slots();
            // The connection may have changed between the grant and now. Looked at under the
            // table's lock, which the connection monitor's `mark_lost` takes too: a change it
            // handles either is seen here or finds this hold in the table.
            // So may the node: the deletion listener records a deletion it heard before
            // the hold was in (a revocable acquire's watch runs from the create on).
            let deleted = matches!(slots.get(&owner),
                Some(Slot::Acquiring { id: i, gone, .. })
                    if *i == id && gone.contains(&acquired.node.path));
            let valid = !deleted
                && !client.is_closed()
                && acquired.node.session == client.session_id()
                && (self.policy() == LostPolicy::Session || client.state().is_connected());
            let hold = Hold {
                node: acquired.node,
                count: 1,
                valid,
                signal: None,
                _node_watch: acquired.node_watch,
            };
            debug_assert!(
                matches!(slots.get(&owner), Some(Slot::Acquiring { id: i, .. }) if *i == id)
            );
            (valid, slots.insert(owner, Slot::Held(hold)))
        };
        if !valid {
            self.fire_lost(vec![owner]);
        }
    }

    /// Marks the valid holds matching `pred` lost and tells their owners.
    fn mark_lost(&self, pred: impl Fn(&Hold) -> bool) {
        let mut owners = Vec::new();
        {
            let mut slots = self.lock_slots();
            for (owner, slot) in slots.iter_mut() {
                if let Slot::Held(h) = slot {
                    if h.valid && pred(h) {
                        h.valid = false;
                        if let Some(signal) = &h.signal {
                            signal.send_modify(|s| s.lost = true);
                        }
                        owners.push(*owner);
                    }
                }
            }
        }
        if !owners.is_empty() {
            tracing::warn!(lock = %self.internals.base, holds = owners.len(), state = %self.internals.client.state(), "lock hold lost: the owner must stop acting on it");
            self.fire_lost(owners);
        }
    }

    /// Marks the hold on `node` lost when someone else deletes the node. A deletion heard
    /// while `owner`'s acquire `id` is still on its way to a hold (granted, not yet installed)
    /// is recorded in its slot, under the table's lock that `install` reads it under: the
    /// hold made on that node is lost from the start, rather than valid with nobody watching
    /// its node any more.
    fn deleted_listener(self: &Arc<Self>, owner: Owner, id: u64) -> DeletedListener {
        let weak = Arc::downgrade(self);
        Arc::new(move |node: &str| {
            if let Some(s) = weak.upgrade() {
                let before = {
                    let mut slots = s.lock_slots();
                    if let Some(Slot::Acquiring { id: i, gone, .. }) = slots.get_mut(&owner) {
                        if *i == id {
                            gone.push(node.to_string());
                        }
                    }
                    slots
                        .values()
                        .any(|slot| matches!(slot, Slot::Held(h) if h.valid && h.node.path == node))
                };
                if before {
                    tracing::warn!(lock = %s.internals.base, %node, "our lock node was deleted by someone else while held");
                }
                s.mark_lost(|h| h.node.path == node);
            }
        })
    }

    fn fire_lost(&self, owners: Vec<Owner>) {
        for owner in owners {
            self.callbacks.emit(owner);
        }
    }

    fn on_state(&self, state: ConnectionState, lagged: bool) {
        let policy = self.policy();
        let session = self.internals.client.session_id();
        match state {
            ConnectionState::Suspended if policy == LostPolicy::Standard => {
                self.mark_lost(|_| true)
            }
            ConnectionState::Suspended => {}
            ConnectionState::Lost => self.mark_lost(|_| true),
            // Missed events (lagged) may have hidden a SUSPENDED: the standard policy assumes one.
            ConnectionState::Connected
            | ConnectionState::Reconnected
            | ConnectionState::ReadOnly => self.mark_lost(|h| {
                h.node.session != session || (lagged && policy == LostPolicy::Standard)
            }),
        }
    }
}

/// Follows the client's connection states for the holds of one mutex object.
async fn monitor(
    shared: Weak<Shared>,
    mut events: broadcast::Receiver<ConnectionState>,
    closed: impl Future<Output = ()> + Send + 'static,
) {
    tokio::pin!(closed);
    loop {
        tokio::select! {
            _ = &mut closed => {
                if let Some(s) = shared.upgrade() {
                    s.mark_lost(|_| true);
                }
                return;
            },
            event = events.recv() => {
                let Some(s) = shared.upgrade() else { return };
                match event {
                    Ok(state) => s.on_state(state, false),
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let now = s.internals.client.state();
                        s.on_state(now, true);
                    },
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deletion of a revocable acquire's node can be heard after the grant and before the
    /// hold is in (the watch runs on another worker from the create on). Placed here in that
    /// window by hand: the hold must start lost and its owner be told, not start valid with
    /// nobody watching its node any more (a second holder, and the first never told).
    #[test]
    fn a_deletion_heard_between_the_grant_and_the_hold_makes_the_hold_lost() {
        let server = zkrecipes_testing::TestingServer::start();
        let client = crate::ClientBuilder::new(server.connect_string())
            .connect_blocking()
            .unwrap();
        let internals = Internals {
            client: client.clone(),
            base: "/plain-test/lock".to_string(),
            lock_name: "lock-",
            sorter: super::super::internals::Sorter::Standard("lock-"),
            driver: super::super::internals::Driver::Standard { max_leases: 1 },
        };
        let plain = Plain::new(internals, Kind::Mutex, Vec::new(), None).unwrap();
        let s = plain.shared.clone();
        let lost = Arc::new(Mutex::new(Vec::new()));
        let heard = lost.clone();
        s.callbacks
            .add(move |o: &Owner| heard.lock().unwrap().push(*o));
        let (owner, id) = (Owner::new(), 7);
        s.lock_slots().insert(
            owner,
            Slot::Acquiring {
                id,
                done: None,
                gone: Vec::new(),
            },
        );
        let node = Node {
            path: "/plain-test/lock/_c_x-lock-0000000000".to_string(),
            name: "_c_x-lock-0000000000".to_string(),
            czxid: 1,
            session: client.session_id(),
        };
        // A deletion of another node of this acquire (an earlier try's) is no news to this one.
        (s.deleted_listener(owner, id))("/plain-test/lock/_c_y-lock-0000000001");
        (s.deleted_listener(owner, id))(&node.path);
        s.install(
            owner,
            id,
            Acquired {
                node: node.clone(),
                node_watch: None,
            },
        );
        assert!(
            !plain.is_hold_intact(owner),
            "a hold on a node deleted before it was installed must start lost"
        );
        assert!(!plain.is_held_valid(owner));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while lost.lock().unwrap().as_slice() != [owner] {
            assert!(
                std::time::Instant::now() < deadline,
                "the lost listener was not told: {:?}",
                lost.lock().unwrap()
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }

        // The same, with the other node deleted only: the hold is valid.
        let other = Owner::new();
        s.lock_slots().insert(
            other,
            Slot::Acquiring {
                id: 8,
                done: None,
                gone: Vec::new(),
            },
        );
        (s.deleted_listener(other, 8))("/plain-test/lock/_c_y-lock-0000000001");
        // A listener of an earlier acquire of this owner (another id) records nothing here.
        let mine = Node {
            path: "/plain-test/lock/_c_z-lock-0000000002".to_string(),
            name: "_c_z-lock-0000000002".to_string(),
            czxid: 2,
            session: client.session_id(),
        };
        (s.deleted_listener(other, 3))(&mine.path);
        s.install(
            other,
            8,
            Acquired {
                node: mine,
                node_watch: None,
            },
        );
        assert!(plain.is_hold_intact(other));
        client.close_blocking();
    }
}
