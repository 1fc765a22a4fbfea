//! LeaderSelector: leadership as a held InterProcessMutex, for as long as a callback runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use tokio::sync::{oneshot, watch, Notify};

use super::common::{
    read_leader, read_participants, validate_group_path, validate_id, LostPolicy, Participant,
    LOCK_NAME,
};
use super::context::{CancelReason, LeadershipContext};
use crate::client::sequence;
use crate::dispatch::Dispatcher;
use crate::lifecycle::{Lifecycle, Phase};
use crate::lock::InterProcessMutex;
use crate::{runtime, Client, ConnectionState, Error, Owner, Result};

/// The life cycle of a selector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SelectorState {
    /// Made, not started.
    Latent,
    /// Taking part.
    Started,
    /// Closed for good.
    Closed,
}

type AsyncLeader =
    Arc<dyn Fn(LeadershipContext) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;
type BlockingLeader = Arc<dyn Fn(&LeadershipContext) + Send + Sync>;

#[derive(Clone)]
enum TakeLeadership {
    Async(AsyncLeader),
    Blocking(BlockingLeader),
}

struct Control {
    queued: bool,
    auto_requeue: bool,
    policy: LostPolicy,
    current: Option<LeadershipContext>,
    /// Where the running take_leadership lives, so that a close from inside it does not wait
    /// for itself.
    callback_thread: Option<ThreadId>,
    callback_task: Option<tokio::task::Id>,
}

struct Shared {
    client: Client,
    path: String,
    id: String,
    mutex: InterProcessMutex,
    owner: Owner,
    take: TakeLeadership,
    callbacks: Arc<Dispatcher<()>>,
    /// Changed only under the control lock, so that a term and a close see each other.
    life: Lifecycle,
    control: Mutex<Control>,
    leading: AtomicBool,
    terms: AtomicU64,
    wake: Notify,
    closed: watch::Sender<bool>,
    /// Whether no worker runs (none started, or it ended): what every close waits for.
    worker_ended: watch::Sender<bool>,
    last_error: Mutex<Option<Error>>,
}

impl Shared {
    fn control(&self) -> std::sync::MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Curator's LeaderSelector: leadership is an [`InterProcessMutex`] on the leader path (nodes
/// `_c_<uuid>-lock-<seq>` holding the participant id), and lasts exactly as long as the
/// `take_leadership` callback runs; the mutex is released when it returns. Fair: participants
/// lead in the order they queued.
///
/// ```no_run
/// # async fn demo(client: zkrecipes::Client) -> zkrecipes::Result<()> {
/// use zkrecipes::leader::{LeaderSelector, LeadershipContext};
///
/// let selector = LeaderSelector::new(&client, "/services/billing/leader", "host-a", |ctx: LeadershipContext| async move {
///     let token = ctx.fencing_token();
///     tokio::select! {
///         _ = ctx.cancelled() => {},             // SUSPENDED/LOST, interrupt or close
///         _ = do_leader_work(token) => {},
///     }
/// })?;
/// selector.auto_requeue();
/// selector.start()?;
/// # async fn do_leader_work(_: Option<i64>) {}
/// # Ok(()) }
/// ```
///
/// Dropping the selector closes it in the background (without waiting for `take_leadership`).
pub struct LeaderSelector {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LeaderSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelector")
            .field("path", &self.shared.path)
            .field("id", &self.shared.id)
            .field("state", &self.state())
            .field("has_leadership", &self.has_leadership())
            .finish()
    }
}

impl LeaderSelector {
    /// A selector on `path` for participant `id` (stored in the lock node; may be empty) whose
    /// leadership runs the async `take_leadership(ctx)` on the library's runtime. Nothing
    /// happens on the server before [`start`](Self::start).
    ///
    /// Errors: `InvalidArgument` for a bad path (including the root) or id.
    pub fn new<F, Fut>(
        client: &Client,
        path: &str,
        id: &str,
        take_leadership: F,
    ) -> Result<LeaderSelector>
    where
        F: Fn(LeadershipContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let f: AsyncLeader = Arc::new(move |ctx| Box::pin(take_leadership(ctx)));
        LeaderSelector::build(client, path, id, TakeLeadership::Async(f))
    }

    /// Like [`new`](Self::new), with a blocking `take_leadership(&ctx)` run on a thread of its
    /// own for each leadership (it may block, wait for a GIL, or call the blocking API; it
    /// should watch [`LeadershipContext::is_cancelled`] or block in
    /// [`LeadershipContext::wait_cancelled`]).
    pub fn new_blocking<F>(
        client: &Client,
        path: &str,
        id: &str,
        take_leadership: F,
    ) -> Result<LeaderSelector>
    where
        F: Fn(&LeadershipContext) + Send + Sync + 'static,
    {
        LeaderSelector::build(
            client,
            path,
            id,
            TakeLeadership::Blocking(Arc::new(take_leadership)),
        )
    }

    fn build(
        client: &Client,
        path: &str,
        id: &str,
        take: TakeLeadership,
    ) -> Result<LeaderSelector> {
        validate_group_path("leader", path)?;
        validate_id(id)?;
        // Curator stores the id's UTF-8 bytes (an empty id: the client's default data, which
        // we keep empty).
        let mutex = InterProcessMutex::with_data(client, path, id.as_bytes().to_vec())?;
        Ok(LeaderSelector {
            shared: Arc::new(Shared {
                client: client.clone(),
                path: path.to_string(),
                id: id.to_string(),
                mutex,
                owner: Owner::new(),
                take,
                callbacks: Arc::new(Dispatcher::new()),
                life: Lifecycle::new("LeaderSelector", path),
                control: Mutex::new(Control {
                    queued: false,
                    auto_requeue: false,
                    policy: LostPolicy::Standard,
                    current: None,
                    callback_thread: None,
                    callback_task: None,
                }),
                leading: AtomicBool::new(false),
                terms: AtomicU64::new(0),
                wake: Notify::new(),
                closed: watch::channel(false).0,
                worker_ended: watch::channel(true).0,
                last_error: Mutex::new(None),
            }),
        })
    }

    /// Curator's `autoRequeue()`: after each leadership (and after an acquire that failed on
    /// connection trouble), queue again by itself.
    pub fn auto_requeue(&self) {
        self.set_auto_requeue(true);
    }

    /// Turns automatic requeueing on or off.
    pub fn set_auto_requeue(&self, on: bool) {
        self.shared.control().auto_requeue = on;
    }

    /// Builder form of [`auto_requeue`](Self::auto_requeue).
    pub fn with_auto_requeue(self) -> Self {
        self.auto_requeue();
        self
    }

    /// Which connection states cancel leadership; only before [`start`](Self::start).
    pub fn set_lost_policy(&self, policy: LostPolicy) -> Result<()> {
        let mut c = self.shared.control();
        if self.shared.life.phase() != Phase::Latent {
            return Err(Error::invalid(format!(
                "leader selector {}: the lost policy can only be set before start()",
                self.shared.path
            )));
        }
        c.policy = policy;
        self.shared.mutex.set_lost_policy(policy);
        Ok(())
    }

    /// Builder form of [`set_lost_policy`](Self::set_lost_policy).
    pub fn with_lost_policy(self, policy: LostPolicy) -> Result<Self> {
        self.set_lost_policy(policy)?;
        Ok(self)
    }

    /// This participant's id.
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The leader path.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The life-cycle state.
    pub fn state(&self) -> SelectorState {
        match self.shared.life.phase() {
            Phase::Latent | Phase::Starting => SelectorState::Latent,
            Phase::Started => SelectorState::Started,
            Phase::Closed => SelectorState::Closed,
        }
    }

    /// Joins the queue for leadership (in the background; returns at once).
    ///
    /// Errors: `InvalidArgument` when started twice, `Closed` after close or on a closed client.
    pub fn start(&self) -> Result<()> {
        let s = &self.shared;
        let mut c = s.control();
        s.life.start(&s.client)?;
        c.queued = true;
        s.worker_ended.send_replace(false);
        let shared = s.clone();
        runtime::spawn(async move {
            /// Marks the worker ended however it ends (a panic included).
            struct Ended(Arc<Shared>);
            impl Drop for Ended {
                fn drop(&mut self) {
                    self.0.worker_ended.send_replace(true);
                }
            }
            let ended = Ended(shared.clone());
            work(shared).await;
            drop(ended);
        });
        Ok(())
    }

    /// Queues for leadership again (Curator's `requeue()`): `Ok(true)` if queued now,
    /// `Ok(false)` if already queued or leading. `Closed` after close, `InvalidArgument` before
    /// start.
    ///
    /// Unlike Curator, a waiting selector stays queued through a session expiry (its lock node
    /// is made again on the new session, in line): Curator's waiting `doWork` fails there and
    /// leaves the queue, so its `requeue()` answers `true` afterwards where ours answers
    /// `false` — still queued, nothing to do. [`is_queued`](Self::is_queued) says which.
    pub fn requeue(&self) -> Result<bool> {
        let s = &self.shared;
        let mut c = s.control();
        s.life.check_started("requeue")?;
        if c.queued {
            return Ok(false);
        }
        c.queued = true;
        drop(c);
        s.wake.notify_one();
        Ok(true)
    }

    /// Whether this selector is queued for leadership (waiting or leading). Without auto
    /// requeue it leaves the queue after a term, and after an acquire that failed (see
    /// [`last_error`](Self::last_error)) — not for session expiries while it waits (see
    /// [`requeue`](Self::requeue)).
    pub fn is_queued(&self) -> bool {
        let c = self.shared.control();
        self.shared.life.is_started() && c.queued
    }

    /// Cancels the current leadership, if any (its context reports
    /// [`CancelReason::Interrupted`]); the selector requeues afterwards only with
    /// [`auto_requeue`](Self::auto_requeue). Waiting participants are not affected.
    pub fn interrupt_leadership(&self) {
        // Under the control lock, as a term starts: the term cancelled is the one `leading`
        // stands for (read before the lock, an ended term's context could be cancelled after
        // the next term began, and `leading` cleared for that one).
        let c = self.shared.control();
        if let Some(ctx) = c.current.as_ref() {
            if ctx.cancel(CancelReason::Interrupted) {
                self.shared.leading.store(false, Ordering::SeqCst);
            }
        }
    }

    /// Whether this participant leads now: its `take_leadership` runs and has not been
    /// cancelled, its lock node belongs to the client's session now, and a server was heard
    /// from recently enough under the lost policy (checked at call time, like
    /// [`InterProcessMutex::is_held_valid`]).
    pub fn has_leadership(&self) -> bool {
        let s = &self.shared;
        s.leading.load(Ordering::SeqCst)
            // The lock node's session still the client's (on a new one, before the selector
            // has heard the old one is lost, another may lead).
            && s.mutex.held_session(s.owner) == Some(s.client.session_id())
            && s.client.heard_recently(s.control().policy)
    }

    /// The fencing token of the current leadership, while leading (as
    /// [`has_leadership`](Self::has_leadership) says).
    pub fn leadership_epoch(&self) -> Option<i64> {
        let current = self.shared.control().current.clone();
        current
            .filter(|c| !c.is_cancelled() && self.has_leadership())
            .and_then(|c| c.fencing_token())
    }

    /// How many leaderships this selector has started.
    pub fn leadership_count(&self) -> u64 {
        self.shared.terms.load(Ordering::SeqCst)
    }

    /// The last error the background worker met (it retries with auto requeue), if any.
    pub fn last_error(&self) -> Option<Error> {
        self.shared
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The current leader, read from the server: the participant holding the mutex, or
    /// Curator's `Participant("", false)` when nobody takes part.
    pub async fn get_leader(&self) -> Result<Participant> {
        read_leader(&self.shared.client, &self.shared.path, lock_key).await
    }

    /// [`get_leader`](Self::get_leader) for the blocking face.
    pub fn get_leader_blocking(&self) -> Result<Participant> {
        runtime::try_block_on(self.get_leader())?
    }

    /// Every participant in queue order, ids read from the lock nodes, the leader flagged.
    pub async fn get_participants(&self) -> Result<Vec<Participant>> {
        read_participants(&self.shared.client, &self.shared.path, lock_key).await
    }

    /// [`get_participants`](Self::get_participants) for the blocking face.
    pub fn get_participants_blocking(&self) -> Result<Vec<Participant>> {
        runtime::try_block_on(self.get_participants())?
    }

    /// Leaves for good: cancels the current leadership ([`CancelReason::Closed`]), leaves the
    /// queue, and waits until `take_leadership` has returned and the mutex is released — unless
    /// called from inside `take_leadership` itself, which cannot be waited for. A participant
    /// still waiting in the queue has its node removed in the background as close returns
    /// (the mutex's cancelled-acquire cleanup). Closing again waits the same way (also after a
    /// close from inside `take_leadership`, or one whose caller stopped waiting); closing a
    /// selector never started returns at once.
    pub async fn close(&self) -> Result<()> {
        // Every close from outside take_leadership waits for the worker: also one after a
        // close from inside it (which could not wait for itself), and one after a close whose
        // caller stopped waiting.
        if !self.begin_close() {
            let mut ended = self.shared.worker_ended.subscribe();
            let _ = ended.wait_for(|e| *e).await;
        }
        Ok(())
    }

    /// [`close`](Self::close) for the blocking face.
    pub fn close_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.close())?
    }

    /// Marks the selector closed and cancels (the first time); whether we are inside
    /// take_leadership.
    fn begin_close(&self) -> bool {
        let s = &self.shared;
        let mut c = s.control();
        let from_inside = c.callback_thread == Some(std::thread::current().id())
            || (c.callback_task.is_some() && tokio::task::try_id() == c.callback_task);
        if s.life.close() == Phase::Closed {
            return from_inside;
        }
        c.queued = false;
        let current = c.current.clone();
        s.leading.store(false, Ordering::SeqCst);
        drop(c);
        if let Some(ctx) = current {
            ctx.cancel(CancelReason::Closed);
        }
        s.closed.send_replace(true);
        s.wake.notify_one();
        from_inside
    }
}

impl Drop for LeaderSelector {
    fn drop(&mut self) {
        let _ = self.begin_close();
    }
}

fn lock_key(name: &str) -> &str {
    sequence::key(name, LOCK_NAME)
}

/// The selector's worker: queue, acquire, lead while take_leadership runs, release, repeat.
async fn work(s: Arc<Shared>) {
    let mut closed = s.closed.subscribe();
    let mut backoff = Duration::from_millis(50);
    loop {
        // Wait to be queued.
        loop {
            let notified = s.wake.notified();
            {
                let c = s.control();
                if s.life.phase() == Phase::Closed {
                    return;
                }
                if c.queued {
                    break;
                }
            }
            tokio::select! {
                _ = notified => {},
                _ = closed.wait_for(|c| *c) => return,
            }
        }
        // Dropping the acquire (on close) removes its node and watch.
        let session = s.client.session_id();
        let acquired = tokio::select! {
            r = s.mutex.acquire(s.owner, None) => r,
            _ = closed.wait_for(|c| *c) => return,
        };
        match acquired {
            Ok(true) => backoff = Duration::from_millis(50),
            Ok(false) => continue,
            Err(e) => {
                let fatal = matches!(e, Error::Closed(_));
                // Our lock node went with an expired session more often than the retry policy
                // allows over the whole wait (the lock's budget spans it): a waiting selector
                // stays queued through expiries (see `requeue`), and queues again after a
                // pause. Another NoNode (a node deleted by someone else, a parent that cannot
                // be made) leaves the queue, as any failed attempt.
                //
                // A connection error (the wait's read lost with the connection the expiry
                // dropped) is judged once the client is connected again: on a new session it is
                // the same case as the NoNode above.
                let connection = matches!(
                    e,
                    Error::ConnectionLoss(_) | Error::SessionExpired(_) | Error::Timeout(_)
                );
                if connection {
                    let timeout = s.client.session_timeout() * 2;
                    tokio::select! {
                        _ = s.client.wait_for_state(timeout, |st| st.is_connected()) => {},
                        _ = closed.wait_for(|c| *c) => return,
                    }
                }
                let node_gone = (connection || matches!(e, Error::NoNode(_)))
                    && s.client.session_id() != session;
                *s.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                if fatal {
                    // Out of the queue for good (Curator's doWork clears isQueued as it fails).
                    s.control().queued = false;
                    return;
                }
                if !node_gone {
                    // Curator's doWorkLoop: without auto requeue, a failed attempt leaves the queue.
                    let mut c = s.control();
                    if !c.auto_requeue {
                        c.queued = false;
                        continue;
                    }
                }
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {},
                    _ = closed.wait_for(|c| *c) => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(2));
                continue;
            }
        }
        lead(&s, &mut closed).await;
        // Out of the queue before the mutex goes: whoever sees the release may requeue() at
        // once and must find us not queued (a release seen first made requeue() say "already
        // queued", and the selector stayed out).
        {
            let mut c = s.control();
            c.queued = c.auto_requeue && s.life.is_started();
        }
        let _ = s.mutex.release(s.owner).await;
    }
}

/// One leadership term: runs take_leadership until it returns, cancelling it on lost
/// connection/session, interrupt or close.
async fn lead(s: &Arc<Shared>, closed: &mut watch::Receiver<bool>) {
    let term = s.terms.fetch_add(1, Ordering::SeqCst) + 1;
    let ctx = LeadershipContext::new(
        s.client.clone(),
        s.path.clone(),
        s.id.clone(),
        term,
        s.mutex.fencing_token(s.owner),
        s.callbacks.clone(),
    );
    let lost = s.mutex.lost_signal(s.owner);
    let valid = s.mutex.is_held_valid(s.owner);
    {
        // Under the control lock, as close() marks the state: either it sees this term and
        // cancels it, or this term sees the close.
        let mut c = s.control();
        if s.life.phase() == Phase::Closed {
            ctx.cancel(CancelReason::Closed);
        } else if !valid {
            // Already doubtful (a SUSPENDED between the acquire and now): starts cancelled.
            ctx.cancel(lost_reason(&s.client));
        }
        c.current = Some(ctx.clone());
        if !ctx.is_cancelled() {
            s.leading.store(true, Ordering::SeqCst);
        }
    }
    let (done_tx, done_rx) = oneshot::channel::<()>();
    match &s.take {
        TakeLeadership::Async(f) => {
            let fut = f(ctx.clone());
            let shared = s.clone();
            // Its own task: a panic in the callee ends the term, not the worker. It records its
            // id before the callee runs, so that a close() from inside never waits for itself.
            runtime::spawn(async move {
                shared.control().callback_task = Some(tokio::task::id());
                fut.await;
                let _ = done_tx.send(());
            });
        }
        TakeLeadership::Blocking(f) => {
            let (f, ctx2, shared) = (f.clone(), ctx.clone(), s.clone());
            let spawned = std::thread::Builder::new()
                .name("zkr-take-leadership".into())
                .spawn(move || {
                    shared.control().callback_thread = Some(std::thread::current().id());
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&ctx2)));
                    let _ = done_tx.send(());
                });
            match spawned {
                Ok(_) => {}
                Err(e) => {
                    *s.last_error.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some(Error::Internal(
                            format!("cannot start a take_leadership thread: {e}").into(),
                        ));
                }
            }
        }
    }
    tokio::pin!(lost);
    tokio::pin!(done_rx);
    let mut lost_seen = false;
    let mut closed_seen = false;
    loop {
        tokio::select! {
            // Returned, panicked (sender dropped) or never started.
            _ = &mut done_rx => break,
            was_lost = &mut lost, if !lost_seen => {
                lost_seen = true;
                if was_lost && ctx.cancel(lost_reason(&s.client)) {
                    s.leading.store(false, Ordering::SeqCst);
                }
            },
            _ = closed.wait_for(|c| *c), if !closed_seen => {
                closed_seen = true;
                ctx.cancel(CancelReason::Closed);
                s.leading.store(false, Ordering::SeqCst);
            },
        }
    }
    s.leading.store(false, Ordering::SeqCst);
    let mut c = s.control();
    c.current = None;
    c.callback_task = None;
    c.callback_thread = None;
}

fn lost_reason(client: &Client) -> CancelReason {
    match client.state() {
        ConnectionState::Suspended => CancelReason::ConnectionSuspended,
        _ => CancelReason::SessionLost,
    }
}
