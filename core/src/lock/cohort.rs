//! Cohort handoffs (opt-in, [`InterProcessMutex::with_cohort`](crate::lock::InterProcessMutex::with_cohort)): the owners of one mutex
//! object queue in memory behind the object's one lock node, and a release hands the hold to
//! the next local owner without a round trip, up to a fairness bound; then the node goes and
//! the local owners queue again behind whoever waits elsewhere.
//!
//! To ZooKeeper (and to Curator processes on the same path) the object is one contender with
//! one node, so the queue they see is a valid Curator queue and mutual exclusion across
//! processes is exactly the plain mutex's. Inside the process exactly one owner holds at a
//! time. Every hold gets a [`FencingToken`] `(czxid, handoff)`: the node's czxid and the
//! number of local handoffs on that node before this hold, compared in that order; it
//! strictly increases from one holder to the next across all processes, because nodes are
//! granted in czxid order.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, watch, Notify};

use super::mode::{FencingToken, LostListener, Mode, ReleaseStatus};
use super::plain::Plain;
use super::BoxFuture;
use crate::dispatch::ListenerId;
use crate::wait::Deadline;
use crate::{runtime, Error, Owner, Result};

/// The fairness bound of [cohort handoffs](crate::lock::InterProcessMutex::with_cohort).
///
/// A node is handed from one local owner to the next at most `max_handoffs` times, and for at
/// most `max_hold` after it was granted; then, if another contender has a node on the lock
/// path (another process, or another object), the node is released and the local owners queue
/// again behind it. With nobody else waiting the budget starts over (one getChildren).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CohortOptions {
    /// Local handoffs on one node before checking for other contenders (≥ 1; default 64).
    pub max_handoffs: u32,
    /// How long one node may be passed around locally before checking (default 20 ms).
    pub max_hold: Duration,
}

impl Default for CohortOptions {
    fn default() -> Self {
        CohortOptions {
            max_handoffs: 64,
            max_hold: Duration::from_millis(20),
        }
    }
}

struct LocalHold {
    owner: Owner,
    count: u32,
    handoff: u32,
    ended: watch::Sender<bool>,
}

struct Waiter {
    id: u64,
    /// `Ok(true)`: granted; `Ok(false)`: the node's acquire, run under this waiter's deadline
    /// (it started it), timed out.
    tx: oneshot::Sender<Result<bool>>,
    owner: Owner,
}

enum NodeState {
    /// No node, no acquire in flight.
    Free,
    /// The driver is acquiring the node for the local queue, under the deadline of the waiter
    /// `starter` that found the node free (as a plain acquire makes one full attempt however
    /// short its timeout), or without one (`None`: started again for waiters already queued).
    Acquiring {
        cancel: Arc<Notify>,
        id: u64,
        starter: Option<u64>,
    },
    /// The node is ours: `grants` local holds so far, `budget_*` since the last check.
    Held {
        grants: u32,
        budget_since: Instant,
        budget_used: u32,
    },
    /// The budget is spent and a release looks for other contenders: nobody is granted
    /// until it knows whether the node stays (with `grants` so far) or goes.
    Checking { grants: u32 },
    /// The node is being released (or a cancelled acquire is settling): nobody is granted
    /// until that is done.
    Busy,
}

struct State {
    holder: Option<LocalHold>,
    waiters: VecDeque<Waiter>,
    node: NodeState,
    next_id: u64,
}

/// Cohort handoffs over one plain mutex: the object's node is the plain mutex's hold of
/// `proc_owner`, acquired by a driver task for the local queue.
pub(crate) struct Cohort {
    inner: Plain,
    proc_owner: Owner,
    opts: CohortOptions,
    state: Mutex<State>,
}

impl Cohort {
    pub(crate) fn new(inner: Plain, opts: CohortOptions) -> Result<Arc<Cohort>> {
        if opts.max_handoffs == 0 {
            return Err(Error::invalid(
                "cohort max_handoffs must be at least 1 (use a plain mutex for none)",
            ));
        }
        Ok(Arc::new(Cohort {
            inner,
            proc_owner: Owner::new(),
            opts,
            state: Mutex::new(State {
                holder: None,
                waiters: VecDeque::new(),
                node: NodeState::Free,
                next_id: 1,
            }),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) async fn acquire(
        self: &Arc<Self>,
        owner: Owner,
        deadline: Deadline,
    ) -> Result<bool> {
        let client = self.inner.client().clone();
        let (id, rx, starter) = {
            let mut st = self.lock();
            if let Some(h) = st.holder.as_mut().filter(|h| h.owner == owner) {
                if !self.inner.is_hold_intact(self.proc_owner) {
                    return Err(self.inner.void_hold_error_for(self.proc_owner));
                }
                h.count = h.count.checked_add(1).ok_or_else(|| {
                    Error::Overflow(
                        format!(
                            "acquire lock {}: reentrant count overflow",
                            self.inner.path()
                        )
                        .into(),
                    )
                })?;
                return Ok(true);
            }
            let id = st.next_id;
            st.next_id += 1;
            let (tx, rx) = oneshot::channel();
            st.waiters.push_back(Waiter { id, tx, owner });
            let free = matches!(st.node, NodeState::Free);
            // Idle while a release looks for other contenders: ours if still valid (a lost
            // node is released by that release).
            let idle = matches!(st.node, NodeState::Held { .. })
                && st.holder.is_none()
                && self.inner.is_hold_intact(self.proc_owner);
            if free {
                self.start_driver(&mut st, Some((id, deadline)));
            } else if idle && !self.grant_next(&mut st) {
                self.release_in_background(&mut st);
            }
            (id, rx, free)
        };
        let mut guard = WaiterGuard {
            cohort: self.clone(),
            id,
            owner,
            rx,
            claimed: false,
        };
        // The waiter that started the node's acquire waits for its answer: that acquire runs
        // under this waiter's deadline and makes one full attempt, however short the deadline.
        let got = if starter {
            tokio::select! {
                r = &mut guard.rx => Some(r),
                _ = client.closed() => return Err(Error::closed()),
            }
        } else {
            tokio::select! {
                r = &mut guard.rx => Some(r),
                _ = deadline.sleep() => None,
                _ = client.closed() => return Err(Error::closed()),
            }
        };
        match got {
            Some(Ok(Ok(true))) => {
                guard.claimed = true;
                Ok(true)
            }
            Some(Ok(Ok(false))) => Ok(false),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(Error::Internal(
                "cohort: a waiter's grant was dropped".into(),
            )),
            None => {
                // Timed out: leave the queue, unless a grant (or an error) came meanwhile.
                if self.leave(id) {
                    return Ok(false);
                }
                match guard.rx.try_recv() {
                    Ok(Ok(true)) => {
                        guard.claimed = true;
                        Ok(true)
                    }
                    Ok(Ok(false)) => Ok(false),
                    Ok(Err(e)) => Err(e),
                    Err(_) => Ok(false),
                }
            }
        }
    }

    /// Removes waiter `id` from the queue; false if it is not there (granted or failed). The
    /// last waiter leaving cancels the node's acquire.
    fn leave(&self, id: u64) -> bool {
        let mut st = self.lock();
        let Some(pos) = st.waiters.iter().position(|w| w.id == id) else {
            return false;
        };
        st.waiters.remove(pos);
        if st.waiters.is_empty() {
            if let NodeState::Acquiring { cancel, .. } = &st.node {
                cancel.notify_one();
                st.node = NodeState::Busy;
            }
        }
        true
    }

    /// Hands the held node to the first waiter still waiting; false if there is none.
    fn grant_next(&self, st: &mut State) -> bool {
        let NodeState::Held {
            grants,
            budget_used,
            ..
        } = &mut st.node
        else {
            return false;
        };
        while let Some(w) = st.waiters.pop_front() {
            let (ended, _) = watch::channel(false);
            let hold = LocalHold {
                owner: w.owner,
                count: 1,
                handoff: *grants,
                ended,
            };
            if w.tx.send(Ok(true)).is_ok() {
                *grants = grants.saturating_add(1);
                *budget_used += 1;
                st.holder = Some(hold);
                return true;
            }
        }
        false
    }

    /// Starts acquiring the node for the queue, under `starter`'s deadline (see
    /// [`NodeState::Acquiring`]).
    fn start_driver(self: &Arc<Self>, st: &mut State, starter: Option<(u64, Deadline)>) {
        let cancel = Arc::new(Notify::new());
        let id = st.next_id;
        st.next_id += 1;
        st.node = NodeState::Acquiring {
            cancel: cancel.clone(),
            id,
            starter: starter.map(|(w, _)| w),
        };
        let deadline = starter.map_or(Deadline::NEVER, |(_, d)| d);
        let me = self.clone();
        runtime::spawn(async move {
            let got = tokio::select! {
                r = me.inner.acquire(me.proc_owner, deadline) => Some(r),
                _ = cancel.notified() => None,
            };
            me.on_driver_done(id, got).await;
        });
    }

    async fn on_driver_done(self: &Arc<Self>, id: u64, got: Option<Result<bool>>) {
        let release = {
            let mut st = self.lock();
            let (ours, starter) = match &st.node {
                NodeState::Acquiring { id: i, starter, .. } if *i == id => (true, *starter),
                _ => (false, None),
            };
            match got {
                Some(Ok(true)) if ours => {
                    st.node = NodeState::Held {
                        grants: 0,
                        budget_since: Instant::now(),
                        budget_used: 0,
                    };
                    if self.grant_next(&mut st) {
                        return;
                    }
                    st.node = NodeState::Busy;
                    true
                }
                // Cancelled after the node was granted: give it back.
                Some(Ok(true)) => true,
                // The starter's deadline passed: it is told; waiters that came since get a
                // new acquire of their own (below).
                Some(Ok(false)) => {
                    if let Some(pos) =
                        starter.and_then(|s| st.waiters.iter().position(|w| w.id == s))
                    {
                        if let Some(w) = st.waiters.remove(pos) {
                            let _ = w.tx.send(Ok(false));
                        }
                    }
                    false
                }
                None => false,
                Some(Err(e)) => {
                    for w in st.waiters.drain(..) {
                        let _ = w.tx.send(Err(e.clone()));
                    }
                    false
                }
            }
        };
        if release {
            let _ = self.inner.release(self.proc_owner).await;
        }
        self.settle();
    }

    /// The node is gone (or never came): queue again for whoever waits.
    fn settle(self: &Arc<Self>) {
        let mut st = self.lock();
        st.node = NodeState::Free;
        if !st.waiters.is_empty() {
            self.start_driver(&mut st, None);
        }
    }

    fn release_in_background(self: &Arc<Self>, st: &mut State) {
        st.node = NodeState::Busy;
        let me = self.clone();
        runtime::spawn(async move {
            let _ = me.inner.release(me.proc_owner).await;
            me.settle();
        });
    }

    pub(crate) async fn release(self: &Arc<Self>, owner: Owner) -> Result<ReleaseStatus> {
        let next = {
            let mut st = self.lock();
            let Some(h) = st.holder.as_mut().filter(|h| h.owner == owner) else {
                return Err(Error::NotOwner(
                    format!(
                        "release lock {}: this owner does not hold it",
                        self.inner.path()
                    )
                    .into(),
                ));
            };
            if h.count > 1 {
                h.count -= 1;
                return Ok(ReleaseStatus::StillHeld(h.count));
            }
            if let Some(h) = st.holder.take() {
                let _ = h.ended.send(true);
            }
            let valid = self.inner.is_hold_intact(self.proc_owner);
            let within = match &st.node {
                NodeState::Held {
                    budget_since,
                    budget_used,
                    ..
                } => {
                    *budget_used < self.opts.max_handoffs
                        && budget_since.elapsed() < self.opts.max_hold
                }
                _ => false,
            };
            if !valid || st.waiters.is_empty() {
                st.node = NodeState::Busy;
                Next::Release
            } else if within {
                if self.grant_next(&mut st) {
                    return Ok(ReleaseStatus::Released);
                }
                st.node = NodeState::Busy;
                Next::Release
            } else {
                // Keep the node (and its grant count) while we look for other contenders.
                let grants = match st.node {
                    NodeState::Held { grants, .. } => grants,
                    _ => 0,
                };
                st.node = NodeState::Checking { grants };
                Next::Check
            }
        };
        // The rest runs as its own task: a caller that stops waiting (a timeout around the
        // release, an aborted task, a cancelled asyncio task) must not leave the node Checking
        // or Busy, which only this tail ends (every later acquire of this object would queue
        // for good, and a Checking node would stay on the server for the session).
        let me = self.clone();
        runtime::spawn(async move { me.release_tail(next).await })
            .await
            .unwrap_or_else(|e| {
                Err(Error::Internal(
                    format!("cohort release: its task ended early: {e}").into(),
                ))
            })
    }

    /// [`release`](Self::release) after its decision: look for other contenders first
    /// (`Check`), then hand the node on or release it.
    async fn release_tail(self: Arc<Self>, next: Next) -> Result<ReleaseStatus> {
        if let Next::Check = next {
            let others = match self.inner.participant_nodes().await {
                Ok(nodes) => nodes.len() > 1,
                Err(_) => true,
            };
            let mut st = self.lock();
            let valid = self.inner.is_hold_intact(self.proc_owner);
            if let NodeState::Checking { grants } = st.node {
                if !others && valid {
                    // Nobody else waits: the budget starts over.
                    st.node = NodeState::Held {
                        grants,
                        budget_since: Instant::now(),
                        budget_used: 0,
                    };
                    if self.grant_next(&mut st) {
                        return Ok(ReleaseStatus::Released);
                    }
                }
            }
            st.node = NodeState::Busy;
        }
        let r = self.inner.release(self.proc_owner).await;
        self.settle();
        r
    }

    fn holder(&self) -> Option<Owner> {
        self.lock().holder.as_ref().map(|h| h.owner)
    }

    fn holds(&self, owner: Owner) -> bool {
        self.holder() == Some(owner)
    }

    fn token(&self, owner: Owner) -> Option<FencingToken> {
        let handoff = {
            let st = self.lock();
            st.holder
                .as_ref()
                .filter(|h| h.owner == owner)
                .map(|h| h.handoff)?
        };
        let zxid = self.inner.czxid(self.proc_owner)?;
        Some(FencingToken { zxid, handoff })
    }

    fn lost_signal(&self, owner: Owner) -> impl Future<Output = bool> + Send + 'static {
        let ended = {
            let st = self.lock();
            st.holder
                .as_ref()
                .filter(|h| h.owner == owner)
                .map(|h| h.ended.subscribe())
        };
        let inner = ended
            .as_ref()
            .map(|_| self.inner.lost_signal(self.proc_owner));
        async move {
            let (Some(mut ended), Some(inner)) = (ended, inner) else {
                return false;
            };
            tokio::select! {
                biased;
                lost = inner => lost,
                _ = ended.wait_for(|e| *e) => false,
            }
        }
    }

    /// Maps the node's owner in a lost callback to the local holder.
    fn map_owner(weak: &Weak<Cohort>, o: Owner) -> Option<Owner> {
        match weak.upgrade() {
            Some(c) if o == c.proc_owner => c.holder(),
            _ => Some(o),
        }
    }
}

impl Mode for Arc<Cohort> {
    fn acquire(&self, owner: Owner, deadline: Deadline) -> BoxFuture<'_, Result<bool>> {
        Box::pin(Cohort::acquire(self, owner, deadline))
    }

    fn release(&self, owner: Owner) -> BoxFuture<'_, Result<ReleaseStatus>> {
        Box::pin(Cohort::release(self, owner))
    }

    fn is_owned_by(&self, owner: Owner) -> bool {
        self.holds(owner)
    }

    fn is_acquired_in_this_process(&self) -> bool {
        self.holder().is_some()
    }

    fn fencing_token(&self, owner: Owner) -> Option<FencingToken> {
        self.token(owner)
    }

    fn lock_node(&self, owner: Owner) -> Option<String> {
        if self.holds(owner) {
            self.inner.lock_node(self.proc_owner)
        } else {
            None
        }
    }

    fn held_session(&self, owner: Owner) -> Option<i64> {
        if self.holds(owner) {
            self.inner.held_session(self.proc_owner)
        } else {
            None
        }
    }

    fn is_held_valid(&self, owner: Owner) -> bool {
        self.holds(owner) && self.inner.is_held_valid(self.proc_owner)
    }

    fn lost_hold(&self, owner: Owner) -> Option<Error> {
        if self.holds(owner) {
            Mode::lost_hold(&self.inner, self.proc_owner)
        } else {
            None
        }
    }

    fn lost_signal(&self, owner: Owner) -> BoxFuture<'static, bool> {
        Box::pin(Cohort::lost_signal(self, owner))
    }

    fn on_lost(&self, listener: LostListener) -> ListenerId {
        let weak = Arc::downgrade(self);
        self.inner.on_lost(Arc::new(move |o| {
            if let Some(o) = Cohort::map_owner(&weak, o) {
                listener(o)
            }
        }))
    }

    fn make_revocable(&self, _listener: LostListener) -> Result<()> {
        Err(Error::invalid(format!(
            "make_revocable on lock {}: a mutex with cohort handoffs is not revocable (its one \
             node serves every local owner); use a plain mutex",
            self.inner.path()
        )))
    }

    fn local_waiters(&self) -> usize {
        self.lock().waiters.len()
    }

    fn cohort_options(&self) -> Option<CohortOptions> {
        Some(self.opts)
    }
}

/// What a release does once the local holder is gone.
enum Next {
    /// Release the node.
    Release,
    /// Budget spent with local owners waiting: look for other contenders before handing on.
    Check,
}

/// Leaves the queue if the acquire is dropped while waiting; gives a grant back if it came
/// but was never returned to the caller.
struct WaiterGuard {
    cohort: Arc<Cohort>,
    id: u64,
    owner: Owner,
    rx: oneshot::Receiver<Result<bool>>,
    claimed: bool,
}

impl Drop for WaiterGuard {
    fn drop(&mut self) {
        if self.claimed || self.cohort.leave(self.id) {
            return;
        }
        if let Ok(Ok(true)) = self.rx.try_recv() {
            let (c, owner) = (self.cohort.clone(), self.owner);
            runtime::spawn(async move {
                let _ = c.release(owner).await;
            });
        }
    }
}
