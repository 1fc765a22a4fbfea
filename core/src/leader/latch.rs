//! LeaderLatch: Curator's latch, with one serialized state machine per latch.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc, oneshot, watch};

use super::common::{
    read_leader, read_participants, validate_group_path, validate_id, CloseMode, LeadershipEvent,
    ListenerId, LostPolicy, OurNode, Participant, LATCH_NAME,
};
use crate::client::protected::{ProtectedCreate, ProtectedId};
use crate::client::{sequence, NodeEvent, OrNone, Parents, Watch, WeakClient};
use crate::dispatch::Dispatcher;
use crate::CreateMode;
use crate::{path, runtime, Client, ConnectionState, Error, Result};

/// The life cycle of a latch (Curator's `LeaderLatch.State`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LatchState {
    /// Made, not started.
    Latent,
    /// Taking part in the election.
    Started,
    /// Closed: out of the election for good.
    Closed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Status {
    state: LatchState,
    leader: bool,
}

impl Status {
    fn has_leadership(self) -> bool {
        self.state == LatchState::Started && self.leader
    }
}

const NO_EPOCH: i64 = i64::MIN;

/// What the handle and the state machine share.
struct Core {
    /// The latch path (for logs).
    path: String,
    status: watch::Sender<Status>,
    epoch: AtomicI64,
    our_path: Mutex<Option<String>>,
    last_error: Mutex<Option<Error>>,
    dispatcher: Dispatcher<LeadershipEvent>,
    events: broadcast::Sender<LeadershipEvent>,
}

impl Core {
    /// The one place leadership changes. The epoch is published before leadership is, and
    /// withdrawn after it is gone, so a leader never reads a missing epoch.
    fn set_leader(&self, leader: bool, epoch: Option<i64>, notify: bool) {
        if leader {
            self.epoch
                .store(epoch.unwrap_or(NO_EPOCH), Ordering::SeqCst);
        }
        let changed = self.status.send_if_modified(|s| {
            if s.leader == leader {
                false
            } else {
                s.leader = leader;
                true
            }
        });
        if !leader {
            self.epoch.store(NO_EPOCH, Ordering::SeqCst);
        }
        if changed {
            if leader {
                tracing::info!(latch = %self.path, "leadership taken");
            } else {
                tracing::warn!(latch = %self.path, "leadership lost or given up");
            }
        }
        if changed && notify {
            let event = if leader {
                LeadershipEvent::IsLeader
            } else {
                LeadershipEvent::NotLeader
            };
            self.dispatcher.emit(event);
            let _ = self.events.send(event);
        }
    }

    fn set_our_path(&self, p: Option<String>) {
        *self.our_path.lock().unwrap_or_else(|e| e.into_inner()) = p;
    }
}

enum Command {
    Close {
        mode: CloseMode,
        done: oneshot::Sender<()>,
    },
}

/// Curator's LeaderLatch: take part in an election and learn when this participant leads.
///
/// Every participant creates `<path>/_c_<uuid>-latch-<seq>` (ephemeral-sequential, data = its
/// id); the one whose node sorts first leads — only while its node belongs to the current
/// session. Leadership ends on [`close`](Self::close), when the session is lost, and (under
/// [`LostPolicy::Standard`], the default) as soon as the connection is SUSPENDED; it comes back
/// on RECONNECTED if our node is still first, without creating a second node.
///
/// ```no_run
/// # async fn demo(client: zkrecipes::Client) -> zkrecipes::Result<()> {
/// use std::time::Duration;
/// use zkrecipes::leader::LeaderLatch;
///
/// let latch = LeaderLatch::new(&client, "/services/billing/leader", "host-a")?;
/// latch.start().await?;
/// if latch.await_leadership(Some(Duration::from_secs(10))).await? {
///     let epoch = latch.leadership_epoch(); // fence writes with it
///     # let _ = epoch;
/// }
/// latch.close().await?;
/// # Ok(()) }
/// ```
///
/// Dropping the latch without closing it closes it silently in the background.
pub struct LeaderLatch {
    client: Client,
    path: String,
    id: String,
    close_mode: Mutex<CloseMode>,
    policy: Mutex<LostPolicy>,
    core: Arc<Core>,
    cmds: Mutex<Option<mpsc::UnboundedSender<Command>>>,
}

impl std::fmt::Debug for LeaderLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderLatch")
            .field("path", &self.path)
            .field("id", &self.id)
            .field("state", &self.state())
            .field("has_leadership", &self.has_leadership())
            .finish()
    }
}

impl LeaderLatch {
    /// A latch on `path` for participant `id` (stored as the node's data; may be empty), with
    /// [`CloseMode::Silent`] and [`LostPolicy::Standard`]. Nothing happens on the server before
    /// [`start`](Self::start).
    ///
    /// Errors: `InvalidArgument` for a bad path (including the root) or id (NUL, or larger
    /// than a node's data limit).
    pub fn new(client: &Client, path: &str, id: &str) -> Result<LeaderLatch> {
        client.ensure_open_for("LeaderLatch", path)?;
        validate_group_path("latch", path)?;
        validate_id(id)?;
        Ok(LeaderLatch {
            client: client.clone(),
            path: path.to_string(),
            id: id.to_string(),
            close_mode: Mutex::new(CloseMode::Silent),
            policy: Mutex::new(LostPolicy::Standard),
            core: Arc::new(Core {
                path: path.to_string(),
                status: watch::channel(Status {
                    state: LatchState::Latent,
                    leader: false,
                })
                .0,
                epoch: AtomicI64::new(NO_EPOCH),
                our_path: Mutex::new(None),
                last_error: Mutex::new(None),
                dispatcher: Dispatcher::new(),
                events: broadcast::channel(64).0,
            }),
            cmds: Mutex::new(None),
        })
    }

    /// Builder form of [`set_close_mode`](Self::set_close_mode).
    pub fn with_close_mode(self, mode: CloseMode) -> Self {
        self.set_close_mode(mode);
        self
    }

    /// Builder form of [`set_lost_policy`](Self::set_lost_policy) (before start).
    pub fn with_lost_policy(self, policy: LostPolicy) -> Result<Self> {
        self.set_lost_policy(policy)?;
        Ok(self)
    }

    /// The close mode [`close`](Self::close) uses.
    pub fn set_close_mode(&self, mode: CloseMode) {
        *self.close_mode.lock().unwrap_or_else(|e| e.into_inner()) = mode;
    }

    /// The close mode [`close`](Self::close) uses.
    pub fn close_mode(&self) -> CloseMode {
        *self.close_mode.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Which connection states end leadership. Only before [`start`](Self::start)
    /// (`InvalidArgument` afterwards).
    pub fn set_lost_policy(&self, policy: LostPolicy) -> Result<()> {
        if self.state() != LatchState::Latent {
            return Err(Error::invalid(format!(
                "latch {}: the lost policy can only be set before start()",
                self.path
            )));
        }
        *self.policy.lock().unwrap_or_else(|e| e.into_inner()) = policy;
        Ok(())
    }

    /// The lost policy.
    pub fn lost_policy(&self) -> LostPolicy {
        *self.policy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This participant's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The latch path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The life-cycle state.
    pub fn state(&self) -> LatchState {
        self.core.status.borrow().state
    }

    /// Joins the election. Returns once our node is created (or the first try failed: it is
    /// retried in the background, see [`last_error`](Self::last_error)), waiting at most the
    /// client's connection timeout.
    ///
    /// Errors: `InvalidArgument` when started twice, `Closed` after close or on a closed client.
    pub async fn start(&self) -> Result<()> {
        if self.client.is_closed() {
            return Err(Error::closed());
        }
        let mut previous = LatchState::Latent;
        self.core.status.send_if_modified(|s| {
            previous = s.state;
            if s.state == LatchState::Latent {
                s.state = LatchState::Started;
                true
            } else {
                false
            }
        });
        match previous {
            LatchState::Latent => {}
            LatchState::Started => {
                return Err(Error::invalid(format!(
                    "latch {}: cannot be started more than once",
                    self.path
                )))
            }
            LatchState::Closed => {
                return Err(Error::Closed(
                    format!("latch {} is closed", self.path).into(),
                ))
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let (first_tx, first_rx) = oneshot::channel();
        *self.cmds.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        let machine = Machine {
            core: self.core.clone(),
            client: self.client.downgrade(),
            client_closed: Box::pin(self.client.closed()),
            path: self.path.clone(),
            data: Arc::from(self.id.as_bytes()),
            policy: self.lost_policy(),
            cmds: rx,
            conn: self.client.subscribe_events(),
            conn_done: false,
            node: None,
            pending: None,
            pred: None,
            need: Need::Create,
            generation: 0,
            retry_at: None,
            backoff: MIN_BACKOFF,
            first: Some(first_tx),
        };
        runtime::spawn(machine.run());
        let _ = tokio::time::timeout(self.client.connection_timeout(), first_rx).await;
        Ok(())
    }

    /// [`start`](Self::start) for the blocking face.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }

    /// Whether this participant leads now (no server round trip): the latch's state, and a
    /// server heard from recently enough under the lost policy, checked at call time (a process
    /// waking from a long pause gets `false` at once, before its client notices the silence).
    pub fn has_leadership(&self) -> bool {
        self.core.status.borrow().has_leadership() && self.client.heard_recently(self.lost_policy())
    }

    /// The leadership epoch while leading: our node's czxid, which strictly increases from one
    /// leadership to the next, so a resource can reject writes from a stale leader.
    pub fn leadership_epoch(&self) -> Option<i64> {
        let epoch = self.core.epoch.load(Ordering::SeqCst);
        (epoch != NO_EPOCH && self.has_leadership()).then_some(epoch)
    }

    /// Our node's path while we have one (Curator's `getOurPath`); having a node does not mean
    /// leading.
    pub fn our_path(&self) -> Option<String> {
        self.core
            .our_path
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The last error the background state machine met (it keeps retrying), if any.
    pub fn last_error(&self) -> Option<Error> {
        self.core
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Waits until this participant leads (`Ok(true)`), the latch is closed or not started,
    /// or `timeout` passes (`Ok(false)`), like Curator's `await(timeout)`. With `None` it waits
    /// without a deadline, like Curator's `await()`: then a closed or unstarted latch (or a
    /// closed client) is `Err(Closed)`.
    pub async fn await_leadership(&self, timeout: Option<Duration>) -> Result<bool> {
        let mut rx = self.core.status.subscribe();
        let mut client_closed = Box::pin(self.client.closed());
        let wait = async {
            loop {
                let s = *rx.borrow_and_update();
                if s.state != LatchState::Started {
                    return false;
                }
                if s.leader {
                    return true;
                }
                tokio::select! {
                    r = rx.changed() => if r.is_err() { return false },
                    _ = &mut client_closed => return false,
                }
            }
        };
        match timeout {
            Some(d) => Ok(tokio::time::timeout(d, wait).await.unwrap_or(false)),
            None => {
                if wait.await {
                    Ok(true)
                } else {
                    Err(Error::Closed(
                        format!(
                            "latch {} is not started, closed, or its client is closed",
                            self.path
                        )
                        .into(),
                    ))
                }
            }
        }
    }

    /// [`await_leadership`](Self::await_leadership) for the blocking face.
    pub fn await_leadership_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.await_leadership(timeout))?
    }

    /// The current leader, read from the server: the participant whose node sorts first, or
    /// Curator's `Participant("", false)` when nobody takes part.
    pub async fn get_leader(&self) -> Result<Participant> {
        read_leader(&self.client, &self.path, latch_key).await
    }

    /// [`get_leader`](Self::get_leader) for the blocking face.
    pub fn get_leader_blocking(&self) -> Result<Participant> {
        runtime::try_block_on(self.get_leader())?
    }

    /// Every participant, in node order, the leader flagged (read from the server).
    pub async fn get_participants(&self) -> Result<Vec<Participant>> {
        read_participants(&self.client, &self.path, latch_key).await
    }

    /// [`get_participants`](Self::get_participants) for the blocking face.
    pub fn get_participants_blocking(&self) -> Result<Vec<Participant>> {
        runtime::try_block_on(self.get_participants())?
    }

    /// Adds a listener (Curator's `LeaderLatchListener`): `is_leader` when this participant
    /// becomes leader, `not_leader` when it stops. Listeners run one at a time, in order, on a
    /// thread of the latch (never on the caller's, never concurrently); they may block and may
    /// call the blocking API.
    pub fn add_listener(
        &self,
        is_leader: impl Fn() + Send + Sync + 'static,
        not_leader: impl Fn() + Send + Sync + 'static,
    ) -> ListenerId {
        self.core
            .dispatcher
            .add(move |e: &LeadershipEvent| match e {
                LeadershipEvent::IsLeader => is_leader(),
                LeadershipEvent::NotLeader => not_leader(),
            })
    }

    /// Adds a listener taking the event as a value (same delivery as
    /// [`add_listener`](Self::add_listener)).
    pub fn add_event_listener(
        &self,
        listener: impl Fn(LeadershipEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        self.core
            .dispatcher
            .add(move |e: &LeadershipEvent| listener(*e))
    }

    /// Removes a listener; returns whether it was there.
    pub fn remove_listener(&self, id: ListenerId) -> bool {
        self.core.dispatcher.remove(id)
    }

    /// A stream of leadership events from now on (the same events listeners get).
    pub fn events(&self) -> LeadershipEvents {
        LeadershipEvents {
            rx: self.core.events.subscribe(),
        }
    }

    /// A watch of [`has_leadership`](Self::has_leadership).
    pub fn leadership_watch(&self) -> LeadershipWatch {
        let rx = self.core.status.subscribe();
        let last = rx.borrow().has_leadership();
        LeadershipWatch { rx, last }
    }

    /// Leaves the election with the configured [`CloseMode`]: leadership ends first, then our
    /// node is deleted (so the next participant takes over at once). Closing again, or closing a
    /// latch that was never started, is a no-op.
    pub async fn close(&self) -> Result<()> {
        self.close_with(self.close_mode()).await
    }

    /// [`close`](Self::close) with an explicit mode (Curator's `close(CloseMode)`).
    pub async fn close_with(&self, mode: CloseMode) -> Result<()> {
        let mut previous = LatchState::Latent;
        // Closed first: has_leadership() is false before the node goes.
        self.core.status.send_if_modified(|s| {
            previous = s.state;
            if s.state == LatchState::Closed {
                false
            } else {
                s.state = LatchState::Closed;
                true
            }
        });
        if previous != LatchState::Started {
            return Ok(());
        }
        let sender = self.cmds.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(sender) = sender {
            let (done, wait) = oneshot::channel();
            if sender.send(Command::Close { mode, done }).is_ok() {
                let _ = wait.await;
            }
        }
        Ok(())
    }

    /// [`close`](Self::close) for the blocking face.
    pub fn close_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.close())?
    }

    /// [`close_with`](Self::close_with) for the blocking face.
    pub fn close_with_blocking(&self, mode: CloseMode) -> Result<()> {
        runtime::try_block_on(self.close_with(mode))?
    }
}

fn latch_key(name: &str) -> &str {
    sequence::key(name, LATCH_NAME)
}

/// A stream of [`LeadershipEvent`]s.
pub struct LeadershipEvents {
    rx: broadcast::Receiver<LeadershipEvent>,
}

impl LeadershipEvents {
    /// The next event; `None` once the latch is gone. A receiver more than 64 events behind
    /// skips to the oldest it still has.
    pub async fn next(&mut self) -> Option<LeadershipEvent> {
        loop {
            match self.rx.recv().await {
                Ok(e) => return Some(e),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// A watch of a latch's leadership (its `has_leadership()`).
pub struct LeadershipWatch {
    rx: watch::Receiver<Status>,
    last: bool,
}

impl LeadershipWatch {
    /// Whether the latch leads now.
    pub fn is_leader(&self) -> bool {
        self.rx.borrow().has_leadership()
    }

    /// Waits for leadership to change from what this watch last reported; returns the new
    /// value, or `None` once the latch is closed (or gone).
    pub async fn changed(&mut self) -> Option<bool> {
        loop {
            let s = *self.rx.borrow_and_update();
            let now = s.has_leadership();
            if now != self.last {
                self.last = now;
                return Some(now);
            }
            if s.state == LatchState::Closed {
                return None;
            }
            self.rx.changed().await.ok()?;
        }
    }
}

const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    Create,
    Check,
    Idle,
}

enum Step<T> {
    Done(T),
    Close(CloseMode, Option<oneshot::Sender<()>>),
    Exit,
}

enum Checked {
    /// Our node is not among the children.
    Gone,
    /// Our node is there but belongs to an earlier session.
    Stale,
    Leader,
    /// Watching the predecessor.
    Follower(Watch),
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The latch's state machine: the only task that reads watch events and connection events and
/// decides leadership, so they can never race (Curator's LeaderLatch has had double leaders from
/// such races).
struct Machine {
    core: Arc<Core>,
    client: WeakClient,
    client_closed: BoxFuture<()>,
    path: String,
    data: Arc<[u8]>,
    policy: LostPolicy,
    cmds: mpsc::UnboundedReceiver<Command>,
    conn: broadcast::Receiver<ConnectionState>,
    conn_done: bool,
    node: Option<OurNode>,
    /// A protected create in progress (kept across failed tries, so a node one of them made
    /// is found, not duplicated).
    pending: Option<ProtectedId>,
    pred: Option<BoxFuture<NodeEvent>>,
    need: Need,
    /// Bumped on every connection-state change: a server reply from before the change must
    /// not make us leader.
    generation: u64,
    retry_at: Option<Instant>,
    backoff: Duration,
    first: Option<oneshot::Sender<()>>,
}

impl Machine {
    async fn run(mut self) {
        let (mode, done) = loop {
            let step = match self.need {
                Need::Create => self.create().await,
                Need::Check => self.check(None).await,
                Need::Idle => self.idle().await,
            };
            match step {
                Step::Done(()) => continue,
                Step::Close(mode, done) => break (mode, done),
                Step::Exit => {
                    // The client closed: the session and our node are gone.
                    self.core.set_leader(false, None, true);
                    self.core.set_our_path(None);
                    self.first.take();
                    return;
                }
            }
        };
        self.first.take();
        self.core
            .set_leader(false, None, mode == CloseMode::NotifyLeader);
        self.pred = None;
        if let Some(client) = self.client.upgrade() {
            if let Some(node) = self.node.take() {
                let _ = client
                    .delete_ours(&path::join(&self.path, &node.name))
                    .await;
            }
            if let Some(cleanup) = self
                .pending
                .take()
                .and_then(|id| id.cleanup(&client, &self.path))
            {
                // Wait a while for it, so a closed latch leaves nothing behind when it can.
                let _ = tokio::time::timeout(client.connection_timeout(), cleanup).await;
            }
        }
        self.core.set_our_path(None);
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    /// Runs one server operation while still serving commands and connection events.
    async fn serve<T>(&mut self, op: impl Future<Output = T>) -> Step<T> {
        tokio::pin!(op);
        loop {
            tokio::select! {
                biased;
                cmd = self.cmds.recv() => return close_step(cmd),
                _ = &mut self.client_closed => return Step::Exit,
                ev = self.conn.recv(), if !self.conn_done => self.on_connection(ev),
                out = &mut op => return Step::Done(out),
            }
        }
    }

    fn on_connection(
        &mut self,
        ev: std::result::Result<ConnectionState, broadcast::error::RecvError>,
    ) {
        self.generation += 1;
        let state = match ev {
            Ok(s) => s,
            // Missed changes: assume the worst (leadership may be gone), then look again.
            Err(broadcast::error::RecvError::Lagged(_)) => {
                self.core.set_leader(false, None, true);
                self.need = self.recheck();
                return;
            }
            Err(broadcast::error::RecvError::Closed) => {
                self.conn_done = true;
                return;
            }
        };
        if self.policy.is_error_state(state) {
            self.core.set_leader(false, None, true);
        }
        match state {
            ConnectionState::Suspended => {}
            ConnectionState::Lost => self.pred = None,
            // Never delete and recreate here: look again; recreate only if our node is gone.
            ConnectionState::Connected
            | ConnectionState::Reconnected
            | ConnectionState::ReadOnly => {
                self.need = self.recheck();
                self.retry_at = None;
            }
        }
    }

    fn recheck(&self) -> Need {
        if self.node.is_some() {
            Need::Check
        } else {
            Need::Create
        }
    }

    fn failed(&mut self, e: Error) -> Step<()> {
        if matches!(e, Error::Closed(_)) {
            return Step::Exit;
        }
        *self
            .core
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(e);
        self.need = Need::Idle;
        self.retry_at = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        Step::Done(())
    }

    async fn create(&mut self) -> Step<()> {
        let Some(client) = self.client.upgrade() else {
            return Step::Exit;
        };
        let generation = self.generation;
        let id = self.pending.get_or_insert_with(ProtectedId::new).clone();
        let group = self.path.clone();
        let data = self.data.clone();
        let op = async move {
            let req = ProtectedCreate {
                parent: &group,
                name: LATCH_NAME,
                data: &data,
                mode: CreateMode::EphemeralSequential,
                parents: Parents::Containers,
                list_parent: true,
            };
            client.create_protected(&id, req).await
        };
        let created = match self.serve(op).await {
            Step::Done(Ok(c)) => c,
            Step::Done(Err(e)) => {
                self.first.take();
                return self.failed(e);
            }
            Step::Close(m, d) => return Step::Close(m, d),
            Step::Exit => return Step::Exit,
        };
        self.pending = None;
        self.core.set_our_path(Some(created.path.clone()));
        self.node = Some(OurNode {
            name: created.name,
            czxid: created.stat.czxid,
            owner: created.stat.ephemeral_owner,
        });
        self.first.take();
        match created.listing {
            Some(children) if generation == self.generation => {
                self.check(Some((children, created.session))).await
            }
            _ => {
                self.need = Need::Check;
                Step::Done(())
            }
        }
    }

    /// Looks at the children (given, or listed now) and decides: lead, watch the predecessor,
    /// or create a node again.
    async fn check(&mut self, listed: Option<(Vec<String>, i64)>) -> Step<()> {
        let Some(client) = self.client.upgrade() else {
            return Step::Exit;
        };
        let Some(node) = self.node.clone() else {
            self.need = Need::Create;
            return Step::Done(());
        };
        let generation = self.generation;
        let group = self.path.clone();
        let op = async move { check_once(&client, &group, &node, listed).await };
        let checked = match self.serve(op).await {
            Step::Done(Ok(c)) => c,
            Step::Done(Err(e)) => return self.failed(e),
            Step::Close(m, d) => return Step::Close(m, d),
            Step::Exit => return Step::Exit,
        };
        self.backoff = MIN_BACKOFF;
        if generation != self.generation {
            // The connection changed while we asked: the answer may be stale.
            self.need = self.recheck();
            return Step::Done(());
        }
        let connected = self
            .client
            .upgrade()
            .is_some_and(|c| c.state().is_connected());
        match checked {
            Checked::Gone => {
                self.core.set_leader(false, None, true);
                self.node = None;
                self.core.set_our_path(None);
                self.pred = None;
                self.need = Need::Create;
            }
            Checked::Stale => {
                // A node of an earlier session that the server has not expired yet: it is ours,
                // so remove it rather than let it block the election until it expires.
                self.core.set_leader(false, None, true);
                if let (Some(node), Some(client)) = (self.node.take(), self.client.upgrade()) {
                    client.delete_ours_in_background(&path::join(&self.path, &node.name));
                }
                self.core.set_our_path(None);
                self.pred = None;
                self.need = Need::Create;
            }
            Checked::Leader => {
                self.pred = None;
                if connected {
                    let epoch = self.node.as_ref().map(|n| n.czxid);
                    self.core.set_leader(true, epoch, true);
                    *self
                        .core
                        .last_error
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = None;
                    self.need = Need::Idle;
                } else {
                    self.need = Need::Check;
                }
            }
            Checked::Follower(w) => {
                self.core.set_leader(false, None, true);
                *self
                    .core
                    .last_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = None;
                self.pred = Some(Box::pin(w.changed()));
                self.need = Need::Idle;
            }
        }
        Step::Done(())
    }

    async fn idle(&mut self) -> Step<()> {
        let retry = self.retry_at;
        let sleep = async move {
            match retry {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            cmd = self.cmds.recv() => close_step(cmd),
            _ = &mut self.client_closed => Step::Exit,
            ev = self.conn.recv(), if !self.conn_done => {
                self.on_connection(ev);
                Step::Done(())
            },
            _ = async { self.pred.as_mut().expect("guarded").await }, if self.pred.is_some() => {
                // Deleted: maybe our turn. Changed data or a session event: the one-shot watch
                // is spent, so look again either way.
                self.pred = None;
                self.need = self.recheck();
                Step::Done(())
            },
            _ = sleep => {
                self.retry_at = None;
                self.need = self.recheck();
                Step::Done(())
            },
        }
    }
}

fn close_step<T>(cmd: Option<Command>) -> Step<T> {
    match cmd {
        Some(Command::Close { mode, done }) => Step::Close(mode, Some(done)),
        // The handle was dropped without close(): close silently.
        None => Step::Close(CloseMode::Silent, None),
    }
}

/// One look at the group, on one session: list the children (unless given), find our node,
/// and either lead or set a getData watch on the predecessor (Curator uses getData, not exists,
/// so that a vanished predecessor leaves no watch behind).
async fn check_once(
    client: &Client,
    group: &str,
    node: &OurNode,
    listed: Option<(Vec<String>, i64)>,
) -> Result<Checked> {
    let mut listed = listed;
    client
        .retry(|s| {
            let given = listed.take();
            async move {
                let mut given = given.filter(|(_, id)| *id == s.id()).map(|(c, _)| c);
                loop {
                    let mut children = match given.take() {
                        Some(c) => c,
                        None => match s.children(group).await.or_none()? {
                            Some(c) => c,
                            None => return Ok(Checked::Gone),
                        },
                    };
                    sequence::sort(&mut children, LATCH_NAME);
                    let Some(index) = children.iter().position(|c| *c == node.name) else {
                        return Ok(Checked::Gone);
                    };
                    if node.owner != s.id() {
                        return Ok(Checked::Stale);
                    }
                    if index == 0 {
                        return Ok(Checked::Leader);
                    }
                    let pred = path::join(group, &children[index - 1]);
                    match s.get_data_watch(&pred).await.or_none()? {
                        Some((_, _, w)) => return Ok(Checked::Follower(w)),
                        // Gone between the listing and the read: list again.
                        None => continue,
                    }
                }
            }
        })
        .await
}
