//! InterProcessMutex: Curator's reentrant distributed mutex, with reentrancy per [`Owner`],
//! fencing tokens, a lock-lost signal and a pipelined acquire.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use super::cohort::{Cohort, CohortOptions, FencingToken};
use super::internals::{
    Acquired, AttemptOptions, DeletedListener, Driver, Internals, Node, RevokeListener, Sorter,
    WRITE_LOCK_NAME,
};
use crate::client::sequence;
use crate::dispatch::{Dispatcher, ListenerId};
use crate::wait::Deadline;
use crate::{path, runtime, Client, ConnectionState, Error, LostPolicy, Owner, Result};

/// When a hold counts as lost: the client framework's one [`LostPolicy`].
pub type LockLostPolicy = LostPolicy;

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

/// What a [`release`](InterProcessMutex::release_with_status) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseStatus {
    /// A reentrant hold went down by one; this many acquires remain to be released.
    StillHeld(u32),
    /// The last release: our lock node is deleted.
    Released,
    /// The hold had already been reported lost (connection SUSPENDED/LOST); it is now gone,
    /// and its node was deleted if it was still there.
    WasLost,
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
    state: watch::Sender<HoldState>,
    _node_watch: Option<watch::Sender<()>>,
}

enum Slot {
    /// An acquire of this owner is in flight; a second one of the same owner waits for it
    /// (dropping the sender ends the wait) rather than creating a second node.
    Acquiring {
        id: u64,
        done: watch::Receiver<()>,
    },
    Held(Hold),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Mutex,
    Read,
    Write,
}

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

/// Curator's InterProcessMutex: a reentrant mutex across processes, fair (first come, first
/// served), with Curator 5.x's node layout so that Curator and zkrecipes processes share it.
///
/// Reentrancy is per [`Owner`]: the same owner may acquire again without a round trip and must
/// release as many times; a different owner contends for real, also in this process. The
/// object is cheap to clone and clones share one hold table, like one Curator instance used by
/// many threads; a second [`InterProcessMutex::new`] on the same path is a separate contender.
///
/// Beyond Curator: each hold has a [fencing token](Self::fencing_token) (the lock node's czxid,
/// strictly increasing from one holder to the next), a [lost signal](Self::lost_signal) (the
/// session went SUSPENDED or LOST, see [`LockLostPolicy`]; or someone else deleted the lock
/// node — a holder watches its node once the hold has lasted 100 ms, so a short hold costs no
/// extra request and an earlier deletion is found then), and the uncontended acquire sends its
/// create and getChildren together (one round trip).
#[derive(Clone)]
pub struct InterProcessMutex {
    shared: Arc<Shared>,
    cohort: Option<Arc<Cohort>>,
}

impl std::fmt::Debug for InterProcessMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessMutex")
            .field("path", &self.shared.internals.base)
            .field("lock_name", &self.shared.internals.lock_name)
            .field(
                "holders",
                &self
                    .shared
                    .lock_slots()
                    .values()
                    .filter(|s| matches!(s, Slot::Held(_)))
                    .count(),
            )
            .finish()
    }
}

/// The longest name we append to a lock path: `/_c_<36>-` + lock name + 19 digits.
const NODE_SUFFIX_LEN: usize = 1 + 3 + 36 + 1 + 8 + 19;

impl InterProcessMutex {
    /// A mutex on `path` (validated: an absolute ZooKeeper path).
    pub fn new(client: &Client, path: &str) -> Result<InterProcessMutex> {
        InterProcessMutex::with_data(client, path, Vec::new())
    }

    /// A mutex whose lock nodes carry `data` (for example a participant id, as LeaderSelector
    /// stores).
    pub fn with_data(client: &Client, path: &str, data: Vec<u8>) -> Result<InterProcessMutex> {
        let internals = Internals {
            client: client.clone(),
            base: path.to_string(),
            lock_name: "lock-",
            sorter: Sorter::Standard("lock-"),
            driver: Driver::Standard { max_leases: 1 },
        };
        InterProcessMutex::build(internals, Kind::Mutex, data, None)
    }

    pub(crate) fn build(
        internals: Internals,
        kind: Kind,
        data: Vec<u8>,
        write_lock: Option<Weak<Shared>>,
    ) -> Result<InterProcessMutex> {
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
        Ok(InterProcessMutex {
            shared,
            cohort: None,
        })
    }

    /// Opts this object into cohort handoffs (see [`CohortOptions`]): its owners queue in
    /// memory behind one lock node, and a release hands the hold to the next local owner
    /// without a round trip, within the fairness bound. Other processes (Curator's too) see
    /// one contender with one node, as before. Each hold's
    /// [`fencing_token_wide`](Self::fencing_token_wide) strictly increases from holder to
    /// holder; the plain
    /// [`fencing_token`](Self::fencing_token) is the node's czxid, shared by the local holders
    /// of one node — fence with the wide token. Call before the first acquire; refused on a
    /// revocable mutex and called twice.
    pub fn with_cohort(self, options: CohortOptions) -> Result<InterProcessMutex> {
        if self.cohort.is_some() {
            return Err(Error::invalid(
                "with_cohort: this mutex already has cohort handoffs",
            ));
        }
        if self.shared.kind != Kind::Mutex {
            return Err(Error::invalid(
                "with_cohort: only a plain InterProcessMutex has cohort handoffs",
            ));
        }
        if self
            .shared
            .revocation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
        {
            return Err(Error::invalid(
                "with_cohort: a revocable mutex cannot have cohort handoffs",
            ));
        }
        if !self.shared.lock_slots().is_empty() {
            return Err(Error::invalid(
                "with_cohort: call it before the first acquire",
            ));
        }
        let cohort = Cohort::new(self.clone(), options)?;
        Ok(InterProcessMutex {
            shared: self.shared,
            cohort: Some(cohort),
        })
    }

    /// How many owners of this object wait in its cohort's local queue (0 without
    /// [cohort handoffs](Self::with_cohort)).
    pub fn local_waiters(&self) -> usize {
        self.cohort.as_ref().map_or(0, |c| c.waiting())
    }

    /// The cohort options, if this object has [cohort handoffs](Self::with_cohort).
    pub fn cohort_options(&self) -> Option<CohortOptions> {
        self.cohort.as_ref().map(|c| c.options())
    }

    pub(crate) fn downgrade(&self) -> Weak<Shared> {
        Arc::downgrade(&self.shared)
    }

    /// Sets when a hold counts as lost (default [`LostPolicy::Standard`]); applies to the
    /// connection changes that follow.
    pub fn set_lost_policy(&self, policy: LockLostPolicy) {
        self.shared
            .policy
            .store(policy_to_u8(policy), Ordering::SeqCst);
    }

    /// Builder-style [`set_lost_policy`](Self::set_lost_policy).
    pub fn with_lost_policy(self, policy: LockLostPolicy) -> Self {
        self.set_lost_policy(policy);
        self
    }

    /// The current lost policy.
    pub fn lost_policy(&self) -> LockLostPolicy {
        self.shared.policy()
    }

    /// Acquires the mutex for `owner`, waiting at most `timeout` (`None`: until acquired).
    /// Returns whether it was acquired. A re-entry by the same owner returns at once.
    ///
    /// A timed-out, failed or cancelled (future dropped) acquire deletes its lock node and
    /// its watch. Errors: `Closed` if the client is closed (also while waiting), connection
    /// errors once the client's retry policy gives up; a re-entry of a hold that was reported
    /// lost fails (`ConnectionLoss`, `SessionExpired` or `Closed`) until it is released.
    pub async fn acquire(&self, owner: Owner, timeout: Option<Duration>) -> Result<bool> {
        match &self.cohort {
            Some(c) => c.acquire(owner, timeout).await,
            None => self.plain_acquire(owner, timeout).await,
        }
    }

    /// [`acquire`](Self::acquire) without cohort handoffs (the cohort's own node).
    pub(crate) async fn plain_acquire(
        &self,
        owner: Owner,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        let s = &self.shared;
        let client = &s.internals.client;
        if client.is_closed() {
            return Err(Error::Closed(
                format!("acquire lock {}: the client is closed", s.internals.base).into(),
            ));
        }
        let deadline = Deadline::after(timeout);
        let (id, done) = loop {
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
                    Some(Slot::Acquiring { done, .. }) => done.clone(),
                    None => {
                        let id = s.next_attempt.fetch_add(1, Ordering::Relaxed);
                        let (tx, rx) = watch::channel(());
                        slots.insert(owner, Slot::Acquiring { id, done: rx });
                        break (id, tx);
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
            _done: done,
        };
        let write = s.write_lock.as_ref().and_then(Weak::upgrade);
        let write_held = move || write.as_ref().is_some_and(|w| w.owns(owner));
        // Curator 5.5+: the write lock's holder takes the read lock with a plain EPHEMERAL node
        // carrying the write node's sequence, so the read hold keeps the write's place in line.
        let sequence = match (&s.kind, s.write_lock.as_ref().and_then(Weak::upgrade)) {
            (Kind::Read, Some(w)) => w
                .held_node(owner)
                .map(|n| sequence::key(&n.name, WRITE_LOCK_NAME).to_string()),
            _ => None,
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
            sequence,
            write_held: &write_held,
            revocable,
            deleted: Some(s.deleted_listener()),
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

    /// Releases one acquire of `owner`; the last one deletes the lock node (a guaranteed
    /// delete, as Curator's). `NotOwner` if `owner` does not hold it (the count never goes
    /// negative); `Closed` if the client was closed meanwhile (the node went with the
    /// session). Releasing a hold that was reported lost is a clean `Ok`.
    pub async fn release(&self, owner: Owner) -> Result<()> {
        self.release_with_status(owner).await.map(|_| ())
    }

    /// [`release`](Self::release), telling what happened.
    pub async fn release_with_status(&self, owner: Owner) -> Result<ReleaseStatus> {
        match &self.cohort {
            Some(c) => c.release(owner).await,
            None => self.plain_release(owner).await,
        }
    }

    /// [`release_with_status`](Self::release_with_status) without cohort handoffs.
    pub(crate) async fn plain_release(&self, owner: Owner) -> Result<ReleaseStatus> {
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
        hold.state.send_modify(|st| st.ended = true);
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
                if client.state().is_connected() {
                    let _ = client.delete_ours(&hold.node.path).await;
                } else {
                    client.delete_ours_in_background(&hold.node.path);
                }
            }
            return Ok(ReleaseStatus::WasLost);
        }
        client
            .delete_ours(&hold.node.path)
            .await
            .map(|()| ReleaseStatus::Released)
    }

    /// [`acquire`](Self::acquire) for the blocking face, owned by the calling thread.
    pub fn acquire_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        self.acquire_blocking_as(Owner::current_thread(), timeout)
    }

    /// [`acquire`](Self::acquire) for the blocking face, with an explicit owner.
    pub fn acquire_blocking_as(&self, owner: Owner, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.acquire(owner, timeout))?
    }

    /// [`release`](Self::release) for the blocking face, by the calling thread.
    pub fn release_blocking(&self) -> Result<()> {
        self.release_blocking_as(Owner::current_thread())
    }

    /// [`release`](Self::release) for the blocking face, with an explicit owner.
    pub fn release_blocking_as(&self, owner: Owner) -> Result<()> {
        runtime::try_block_on(self.release(owner))?
    }

    /// Whether `owner` holds the mutex (Curator's isOwnedByCurrentThread). A hold that was
    /// reported lost still counts until released; see [`is_held_valid`](Self::is_held_valid).
    pub fn is_owned_by(&self, owner: Owner) -> bool {
        if let Some(c) = &self.cohort {
            return c.holds(owner);
        }
        self.shared.owns(owner)
    }

    /// Whether any owner of this object holds the mutex.
    pub fn is_acquired_in_this_process(&self) -> bool {
        if let Some(c) = &self.cohort {
            return c.holder().is_some();
        }
        self.shared
            .lock_slots()
            .values()
            .any(|s| matches!(s, Slot::Held(_)))
    }

    /// The fencing token of `owner`'s hold: the lock node's czxid, strictly greater than any
    /// earlier holder's. Pass it to the guarded resource so it can reject a stale holder.
    pub fn fencing_token(&self, owner: Owner) -> Option<i64> {
        if let Some(c) = &self.cohort {
            return c.token(owner).map(|t| t.zxid);
        }
        self.shared.held_node(owner).map(|n| n.czxid)
    }

    /// The wide fencing token of `owner`'s hold: `(czxid, handoff)`, strictly greater than any
    /// earlier holder's, also across [cohort handoffs](Self::with_cohort) inside one process
    /// (without them `handoff` is 0). Every process fencing one resource must use the same
    /// kind of token.
    pub fn fencing_token_wide(&self, owner: Owner) -> Option<FencingToken> {
        if let Some(c) = &self.cohort {
            return c.token(owner);
        }
        self.fencing_token(owner)
            .map(|zxid| FencingToken { zxid, handoff: 0 })
    }

    /// The path of `owner`'s lock node.
    pub fn lock_node(&self, owner: Owner) -> Option<String> {
        if let Some(c) = &self.cohort {
            return if c.holds(owner) {
                c.inner().lock_node(c.proc_owner())
            } else {
                None
            };
        }
        self.shared.held_node(owner).map(|n| n.path)
    }

    /// The lock's nodes in line order (holder first), as full paths; empty if the lock path
    /// does not exist.
    pub async fn participant_nodes(&self) -> Result<Vec<String>> {
        let s = &self.shared;
        if s.internals.client.is_closed() {
            return Err(Error::closed());
        }
        s.internals.participant_nodes(s.kind != Kind::Mutex).await
    }

    /// [`participant_nodes`](Self::participant_nodes) for the blocking face.
    pub fn participant_nodes_blocking(&self) -> Result<Vec<String>> {
        runtime::try_block_on(self.participant_nodes())?
    }

    /// Whether `owner` holds the mutex and the hold is still trustworthy: not reported lost,
    /// same session, client open, (standard policy) connected right now, and a server heard
    /// from recently (within the read timeout; session policy: the session timeout), checked at
    /// call time — a process that wakes from a long pause gets `false` at once, before its
    /// client's tasks have noticed. A check is a moment: fence writes with the
    /// [fencing token](Self::fencing_token).
    pub fn is_held_valid(&self, owner: Owner) -> bool {
        if let Some(c) = &self.cohort {
            return c.holds(owner) && c.inner().is_held_valid(c.proc_owner());
        }
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

    /// Calls `f(owner)` when a hold of this mutex is lost (see [`LostPolicy`]; also when the
    /// client is closed). Callbacks run on this lock's dispatcher ([`crate::dispatch`]): one
    /// at a time, in order, off the async workers; they may call the blocking API (release,
    /// say). Returns an id for [`remove_lost_listener`](Self::remove_lost_listener).
    pub fn on_lost(&self, f: impl Fn(Owner) + Send + Sync + 'static) -> ListenerId {
        if let Some(c) = &self.cohort {
            let weak = Arc::downgrade(c);
            return self.shared.callbacks.add(move |o: &Owner| {
                if let Some(o) = Cohort::map_owner(&weak, *o) {
                    f(o)
                }
            });
        }
        self.shared.callbacks.add(move |o: &Owner| f(*o))
    }

    /// Removes a listener added with [`on_lost`](Self::on_lost); whether it was there.
    pub fn remove_lost_listener(&self, id: ListenerId) -> bool {
        self.shared.callbacks.remove(id)
    }

    /// A future that resolves when `owner`'s current hold ends: `true` if it was lost,
    /// `false` if it was released first (or `owner` holds nothing now). For `select!` next to
    /// the work done under the lock.
    pub fn lost_signal(&self, owner: Owner) -> impl Future<Output = bool> + Send + 'static {
        enum Signal<C, P> {
            Cohort(C),
            Plain(P),
        }
        let signal = match &self.cohort {
            Some(cohort) => Signal::Cohort(cohort.lost_signal(owner)),
            None => Signal::Plain(self.plain_lost_signal(owner)),
        };
        async move {
            match signal {
                Signal::Cohort(signal) => signal.await,
                Signal::Plain(signal) => signal.await,
            }
        }
    }

    /// [`lost_signal`](Self::lost_signal) of a hold of the cohort's own node.
    pub(crate) fn plain_lost_signal(
        &self,
        owner: Owner,
    ) -> impl Future<Output = bool> + Send + 'static {
        let rx = match self.shared.lock_slots().get(&owner) {
            Some(Slot::Held(h)) => Some(h.state.subscribe()),
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

    /// Curator's makeRevocable: from now on, lock nodes of this object carry empty data and are
    /// watched; when another process writes `__REVOKE__` into one (see
    /// [`attempt_revoke`](super::attempt_revoke)), `listener(owner)` is called so the owner can
    /// release. Revocation is cooperative. Applies to acquires that start after this call. The
    /// listener runs on this lock's dispatcher, like [`on_lost`](Self::on_lost)'s. Ignored
    /// (with a warning in the log) on a mutex with [cohort handoffs](Self::with_cohort).
    pub fn make_revocable(&self, listener: impl Fn(Owner) + Send + Sync + 'static) {
        if self.cohort.is_some() {
            tracing::warn!(lock = %self.shared.internals.base, "make_revocable ignored: a mutex with cohort handoffs is not revocable");
            return;
        }
        let listener = Arc::new(listener);
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
    }

    /// Whether `owner`'s hold has not been marked lost (the cohort's view of its node).
    pub(crate) fn is_hold_marked_valid(&self, owner: Owner) -> bool {
        matches!(self.shared.lock_slots().get(&owner), Some(Slot::Held(h)) if h.valid)
    }

    /// The error a re-entry of `owner`'s lost hold gets.
    pub(crate) fn void_hold_error_for(&self, owner: Owner) -> Error {
        match self.shared.lock_slots().get(&owner) {
            Some(Slot::Held(h)) => self.shared.void_hold_error(h),
            _ => Error::Internal("cohort: no hold to report on".into()),
        }
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.shared.internals.base
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.shared.internals.client
    }
}

/// Removes an in-flight marker that did not become a hold (timeout, error, cancellation).
struct SlotGuard {
    shared: Arc<Shared>,
    owner: Owner,
    id: u64,
    armed: bool,
    // Dropped after `drop` runs: wakes same-owner waiters once the slot is settled.
    _done: watch::Sender<()>,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if self.armed {
            let mut slots = self.shared.lock_slots();
            if matches!(slots.get(&self.owner), Some(Slot::Acquiring { id, .. }) if *id == self.id)
            {
                slots.remove(&self.owner);
            }
        }
    }
}

impl Shared {
    fn lock_slots(&self) -> MutexGuard<'_, HashMap<Owner, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn policy(&self) -> LockLostPolicy {
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
        // The connection may have changed between the grant and now.
        let valid = !client.is_closed()
            && acquired.node.session == client.session_id()
            && (self.policy() == LostPolicy::Session || client.state().is_connected());
        let hold = Hold {
            node: acquired.node,
            count: 1,
            valid,
            state: watch::channel(HoldState {
                lost: !valid,
                ended: false,
            })
            .0,
            _node_watch: acquired.node_watch,
        };
        {
            let mut slots = self.lock_slots();
            debug_assert!(
                matches!(slots.get(&owner), Some(Slot::Acquiring { id: i, .. }) if *i == id)
            );
            slots.insert(owner, Slot::Held(hold));
        }
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
                        h.state.send_modify(|s| s.lost = true);
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

    /// Marks the hold on `node` lost when someone else deletes the node.
    fn deleted_listener(self: &Arc<Self>) -> DeletedListener {
        let weak = Arc::downgrade(self);
        Arc::new(move |node: &str| {
            if let Some(s) = weak.upgrade() {
                let before = s.lock_slots().values().any(|slot| matches!(slot, Slot::Held(h) if h.valid && h.node.path == node && !h.state.borrow().ended));
                if before {
                    tracing::warn!(lock = %s.internals.base, %node, "our lock node was deleted by someone else while held");
                }
                s.mark_lost(|h| h.node.path == node && !h.state.borrow().ended);
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
