//! InterProcessMutex: Curator's reentrant distributed mutex, with reentrancy per [`Owner`],
//! fencing tokens, a lock-lost signal and a pipelined acquire. One object is in one of two
//! modes ([`Mode`]): plain (`plain.rs`) or with cohort handoffs (`cohort.rs`); each method
//! here asks the mode once.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::cohort::{Cohort, CohortOptions};
use super::internals::{Driver, Internals, Sorter};
use super::mode::{FencingToken, Mode, ReleaseStatus};
use super::plain::{Kind, Plain, Shared};
use crate::dispatch::ListenerId;
use crate::wait::Deadline;
use crate::{runtime, Client, Error, LostPolicy, Owner, Result};

/// When a hold counts as lost: the client framework's one [`LostPolicy`].
pub type LockLostPolicy = LostPolicy;

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
    /// The object's plain mutex: its lock, lost policy and listeners, whatever the mode.
    plain: Plain,
    /// How owners hold: `plain` itself, or cohort handoffs over it.
    mode: Arc<dyn Mode>,
}

impl std::fmt::Debug for InterProcessMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessMutex")
            .field("path", &self.plain.path())
            .field("lock_name", &self.plain.lock_name())
            .field("holders", &self.plain.holders())
            .field("cohort", &self.mode.cohort_options())
            .finish()
    }
}

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

    /// A plain mutex of `kind` (the read/write lock's halves).
    pub(crate) fn build(
        internals: Internals,
        kind: Kind,
        data: Vec<u8>,
        write_lock: Option<Weak<Shared>>,
    ) -> Result<InterProcessMutex> {
        let plain = Plain::new(internals, kind, data, write_lock)?;
        Ok(InterProcessMutex {
            mode: Arc::new(plain.clone()),
            plain,
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
        if self.mode.cohort_options().is_some() {
            return Err(Error::invalid(
                "with_cohort: this mutex already has cohort handoffs",
            ));
        }
        if self.plain.kind() != Kind::Mutex {
            return Err(Error::invalid(
                "with_cohort: only a plain InterProcessMutex has cohort handoffs",
            ));
        }
        if self.plain.is_revocable() {
            return Err(Error::invalid(
                "with_cohort: a revocable mutex cannot have cohort handoffs",
            ));
        }
        if self.plain.is_in_use() {
            return Err(Error::invalid(
                "with_cohort: call it before the first acquire",
            ));
        }
        let cohort = Cohort::new(self.plain.clone(), options)?;
        Ok(InterProcessMutex {
            plain: self.plain,
            mode: Arc::new(cohort),
        })
    }

    /// How many owners of this object wait in its cohort's local queue (0 without
    /// [cohort handoffs](Self::with_cohort)).
    pub fn local_waiters(&self) -> usize {
        self.mode.local_waiters()
    }

    /// The cohort options, if this object has [cohort handoffs](Self::with_cohort).
    pub fn cohort_options(&self) -> Option<CohortOptions> {
        self.mode.cohort_options()
    }

    pub(crate) fn downgrade(&self) -> Weak<Shared> {
        self.plain.downgrade()
    }

    /// Sets when a hold counts as lost (default [`LostPolicy::Standard`]); applies to the
    /// connection changes that follow.
    pub fn set_lost_policy(&self, policy: LockLostPolicy) {
        self.plain.set_lost_policy(policy);
    }

    /// Builder-style [`set_lost_policy`](Self::set_lost_policy).
    pub fn with_lost_policy(self, policy: LockLostPolicy) -> Self {
        self.set_lost_policy(policy);
        self
    }

    /// The current lost policy.
    pub fn lost_policy(&self) -> LockLostPolicy {
        self.plain.lost_policy()
    }

    /// Acquires the mutex for `owner`, waiting at most `timeout` (`None`: until acquired).
    /// Returns whether it was acquired. A re-entry by the same owner returns at once.
    ///
    /// A timed-out, failed or cancelled (future dropped) acquire deletes its lock node and
    /// its watch. Errors: `Closed` if the client is closed (also while waiting), connection
    /// errors once the client's retry policy gives up; a re-entry of a hold that was reported
    /// lost fails (`ConnectionLoss`, `SessionExpired` or `Closed`) until it is released.
    pub async fn acquire(&self, owner: Owner, timeout: Option<Duration>) -> Result<bool> {
        if self.plain.client().is_closed() {
            return Err(Error::Closed(
                format!("acquire lock {}: the client is closed", self.path()).into(),
            ));
        }
        self.mode.acquire(owner, Deadline::after(timeout)).await
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
        self.mode.release(owner).await
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
        self.mode.is_owned_by(owner)
    }

    /// Whether any owner of this object holds the mutex.
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.mode.is_acquired_in_this_process()
    }

    /// The fencing token of `owner`'s hold: the lock node's czxid, strictly greater than any
    /// earlier holder's. Pass it to the guarded resource so it can reject a stale holder.
    pub fn fencing_token(&self, owner: Owner) -> Option<i64> {
        self.mode.fencing_token(owner).map(|t| t.zxid)
    }

    /// The wide fencing token of `owner`'s hold: `(czxid, handoff)`, strictly greater than any
    /// earlier holder's, also across [cohort handoffs](Self::with_cohort) inside one process
    /// (without them `handoff` is 0). Every process fencing one resource must use the same
    /// kind of token.
    pub fn fencing_token_wide(&self, owner: Owner) -> Option<FencingToken> {
        self.mode.fencing_token(owner)
    }

    /// The path of `owner`'s lock node.
    pub fn lock_node(&self, owner: Owner) -> Option<String> {
        self.mode.lock_node(owner)
    }

    /// The lock's nodes in line order (holder first), as full paths; empty if the lock path
    /// does not exist.
    pub async fn participant_nodes(&self) -> Result<Vec<String>> {
        self.plain.participant_nodes().await
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
        self.mode.is_held_valid(owner)
    }

    /// The session that made `owner`'s lock node (whether or not the hold is lost since).
    pub(crate) fn held_session(&self, owner: Owner) -> Option<i64> {
        self.mode.held_session(owner)
    }

    /// Why `owner`'s hold is not intact (reported lost, or its node of an ended session), or
    /// `None` (intact, or nothing held): what a re-entry of that hold would fail with.
    pub(crate) fn lost_hold(&self, owner: Owner) -> Option<Error> {
        self.mode.lost_hold(owner)
    }

    /// Calls `f(owner)` when a hold of this mutex is lost (see [`LostPolicy`]; also when the
    /// client is closed). Callbacks run on this lock's dispatcher ([`crate::dispatch`]): one
    /// at a time, in order, off the async workers; they may call the blocking API (release,
    /// say). Returns an id for [`remove_lost_listener`](Self::remove_lost_listener).
    pub fn on_lost(&self, f: impl Fn(Owner) + Send + Sync + 'static) -> ListenerId {
        self.mode.on_lost(Arc::new(f))
    }

    /// Removes a listener added with [`on_lost`](Self::on_lost); whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out.
    pub fn remove_lost_listener(&self, id: ListenerId) -> Result<bool> {
        self.plain.remove_lost_listener(id)
    }

    /// A future that resolves when `owner`'s current hold ends: `true` if it was lost,
    /// `false` if it was released first (or `owner` holds nothing now). For `select!` next to
    /// the work done under the lock.
    pub fn lost_signal(&self, owner: Owner) -> impl Future<Output = bool> + Send + 'static {
        self.mode.lost_signal(owner)
    }

    /// Curator's makeRevocable: from now on, lock nodes of this object carry empty data and are
    /// watched; when another process writes `__REVOKE__` into one (see
    /// [`attempt_revoke`](super::attempt_revoke)), `listener(owner)` is called so the owner can
    /// release. Revocation is cooperative. Applies to acquires that start after this call. The
    /// listener runs on this lock's dispatcher, like [`on_lost`](Self::on_lost)'s.
    /// `InvalidArgument` on a mutex with [cohort handoffs](Self::with_cohort), whose one node
    /// serves every local owner.
    pub fn make_revocable(&self, listener: impl Fn(Owner) + Send + Sync + 'static) -> Result<()> {
        self.mode.make_revocable(Arc::new(listener))
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        self.plain.path()
    }

    /// The client.
    pub fn client(&self) -> &Client {
        self.plain.client()
    }
}
