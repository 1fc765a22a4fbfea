//! LeaderLatch: Curator's latch. The handle (this module) and one serialized state machine per
//! latch (`machine`), the only task that decides leadership.

mod machine;

use self::machine::Machine;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot, watch};

use super::common::{
    read_leader, read_participants, validate_group_path, validate_id, CloseMode, LeadershipEvent,
    ListenerId, LostPolicy, OurNode, Participant, LATCH_NAME,
};
use crate::client::sequence;
use crate::dispatch::Dispatcher;
use crate::lifecycle::{Lifecycle, Phase};
use crate::{runtime, Client, Error, Result};

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

impl LatchState {
    fn of(phase: Phase) -> LatchState {
        match phase {
            Phase::Latent | Phase::Starting => LatchState::Latent,
            Phase::Started => LatchState::Started,
            Phase::Closed => LatchState::Closed,
        }
    }
}

pub(super) const NO_EPOCH: i64 = i64::MIN;

/// What the handle and the state machine share.
pub(super) struct Core {
    /// The latch path (for logs).
    path: String,
    life: Lifecycle,
    /// Whether the state machine found us leading (leadership also needs the latch started).
    leader: watch::Sender<bool>,
    epoch: AtomicI64,
    /// The session that owns our node while we lead (set before leadership is): leadership
    /// holds only on that session.
    session: AtomicI64,
    our_path: Mutex<Option<String>>,
    last_error: Mutex<Option<Error>>,
    dispatcher: Dispatcher<LeadershipEvent>,
    events: broadcast::Sender<LeadershipEvent>,
    /// Held while leadership changes and while the latch is closed: leadership taken is told
    /// (listeners, events) only to a latch not closed (see `close_with`).
    gate: Mutex<()>,
}

impl Core {
    /// The one place leadership changes. The epoch is published before leadership is, and
    /// withdrawn after it is gone, so a leader never reads a missing epoch.
    fn set_leader(&self, leader: bool, node: Option<&OurNode>, notify: bool) {
        let _gate = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        self.change_leader(leader, node, notify);
    }

    /// [`set_leader`](Self::set_leader) with the gate held; whether leadership changed.
    fn change_leader(&self, leader: bool, node: Option<&OurNode>, notify: bool) -> bool {
        let epoch = node.map(|n| n.czxid);
        if leader && self.life.phase() == Phase::Closed {
            // A check that found us first as close() began: a closed latch does not lead, and
            // its listeners hear nothing more (Curator's close and checkLeadership take one
            // lock).
            return false;
        }
        if leader {
            self.epoch
                .store(epoch.unwrap_or(NO_EPOCH), Ordering::SeqCst);
            self.session
                .store(node.map_or(0, |n| n.owner), Ordering::SeqCst);
        }
        let changed = self.leader.send_if_modified(|l| {
            let changed = *l != leader;
            *l = leader;
            changed
        });
        if !leader {
            self.epoch.store(NO_EPOCH, Ordering::SeqCst);
        }
        if changed {
            if leader {
                tracing::info!(latch = %self.path, "leadership taken");
            } else if self.life.phase() == Phase::Closed {
                // Closing gives leadership up on purpose: not a loss.
                tracing::info!(latch = %self.path, "leadership given up: the latch is closed");
            } else {
                tracing::warn!(latch = %self.path, "leadership lost");
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
        changed
    }

    fn has_leadership(&self) -> bool {
        self.life.is_started() && *self.leader.borrow()
    }

    fn set_our_path(&self, p: Option<String>) {
        *self.our_path.lock().unwrap_or_else(|e| e.into_inner()) = p;
    }
}

pub(super) enum Command {
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
                life: Lifecycle::new("LeaderLatch", path),
                leader: watch::channel(false).0,
                epoch: AtomicI64::new(NO_EPOCH),
                session: AtomicI64::new(0),
                our_path: Mutex::new(None),
                last_error: Mutex::new(None),
                dispatcher: Dispatcher::new(),
                events: broadcast::channel(64).0,
                gate: Mutex::new(()),
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
        LatchState::of(self.core.life.phase())
    }

    /// Joins the election. Returns once our node is created (or the first try failed: it is
    /// retried in the background, see [`last_error`](Self::last_error)), waiting at most the
    /// client's connection timeout.
    ///
    /// Errors: `InvalidArgument` when started twice, `Closed` after close or on a closed client.
    pub async fn start(&self) -> Result<()> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (first_tx, first_rx) = oneshot::channel();
        {
            // Started and the command channel in place in one step: a close() that sees the
            // latch started finds the channel (before, one between the two found none, returned,
            // and left the machine below running, its node in the election).
            let mut cmds = self.cmds.lock().unwrap_or_else(|e| e.into_inner());
            self.core.life.start(&self.client)?;
            *cmds = Some(tx);
        }
        let machine = Machine::new(
            self.core.clone(),
            &self.client,
            &self.path,
            Arc::from(self.id.as_bytes()),
            self.lost_policy(),
            rx,
            first_tx,
        );
        runtime::spawn(machine.run());
        let _ = tokio::time::timeout(self.client.connection_timeout(), first_rx).await;
        Ok(())
    }

    /// [`start`](Self::start) for the blocking face.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }

    /// Whether this participant leads now (no server round trip): the latch's state, our
    /// node's session still the client's, and a server heard from recently enough under the
    /// lost policy, checked at call time (a process waking from a long pause gets `false` at
    /// once, before its client notices the silence; a client on a new session, before the latch
    /// has heard the old one is lost).
    pub fn has_leadership(&self) -> bool {
        self.core.has_leadership()
            && self.core.session.load(Ordering::SeqCst) == self.client.session_id()
            && self.client.heard_recently(self.lost_policy())
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
        let mut leader = self.core.leader.subscribe();
        let mut phase = self.core.life.subscribe();
        let mut client_closed = Box::pin(self.client.closed());
        let wait = async {
            loop {
                if *phase.borrow_and_update() != Phase::Started {
                    return false;
                }
                if *leader.borrow_and_update() {
                    return true;
                }
                tokio::select! {
                    r = leader.changed() => if r.is_err() { return false },
                    r = phase.changed() => if r.is_err() { return false },
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
    /// call the blocking API. After [`close`](Self::close) they hear no `is_leader` still
    /// queued (see there).
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

    /// Removes a listener; whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.core.dispatcher.remove(id)
    }

    /// A stream of leadership events from now on (the same events listeners get).
    pub fn events(&self) -> LeadershipEvents {
        LeadershipEvents {
            rx: self.core.events.subscribe(),
            last: None,
            held: None,
        }
    }

    /// A watch of this latch's leadership (its state and the state machine's verdict, as
    /// [`has_leadership`](Self::has_leadership) without its call-time checks: the silence,
    /// and our node's session against the client's). Made
    /// while leading or not; see [`LeadershipWatch`] for what it reports.
    pub fn leadership_watch(&self) -> LeadershipWatch {
        let phase = self.core.life.subscribe();
        let mut leader = self.core.leader.subscribe();
        let last = *phase.borrow() == Phase::Started && *leader.borrow_and_update();
        LeadershipWatch {
            phase,
            seen: Mutex::new(Seen { leader, last }),
        }
    }

    /// Leaves the election with the configured [`CloseMode`]: leadership ends first, then our
    /// node is deleted (so the next participant takes over at once). Closing again, or closing a
    /// latch that was never started, is a no-op.
    ///
    /// Listeners hear no event still queued when this is called, and no leadership found
    /// after (a call already begun, running or handed to a listener an instant before,
    /// finishes: close never waits for a listener). With [`CloseMode::Silent`] they hear
    /// nothing more; with [`CloseMode::NotifyLeader`], listeners last told `IsLeader` hear
    /// `NotLeader`, last. Either way they are then removed: a closed latch never calls them
    /// again.
    pub async fn close(&self) -> Result<()> {
        self.close_with(self.close_mode()).await
    }

    /// [`close`](Self::close) with an explicit mode (Curator's `close(CloseMode)`).
    pub async fn close_with(&self, mode: CloseMode) -> Result<()> {
        // Closed first: has_leadership() is false before the node goes. Under the gate: a
        // leadership taken meanwhile is not told (see `set_leader`).
        let was = {
            let _gate = self.core.gate.lock().unwrap_or_else(|e| e.into_inner());
            let was = self.core.life.close();
            if was == Phase::Started {
                self.end_listeners(mode);
            }
            was
        };
        if was != Phase::Started {
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

    /// The listeners' part of a close (the gate held, the latch just closed): events still
    /// queued are not delivered, leadership ends here, and with [`CloseMode::NotifyLeader`]
    /// listeners that were last told `IsLeader` hear `NotLeader`; then they are removed.
    fn end_listeners(&self, mode: CloseMode) {
        let core = &self.core;
        let queued = core.dispatcher.take_queued_events();
        // What the listeners were last told: the opposite of the first event still queued
        // (events alternate), or, with none queued, the leadership now.
        let told_leader = match queued.first() {
            Some(e) => *e == LeadershipEvent::NotLeader,
            None => *core.leader.borrow(),
        };
        let was_leading = core.change_leader(false, None, false);
        match mode {
            CloseMode::Silent => core.dispatcher.clear(),
            CloseMode::NotifyLeader => {
                if told_leader {
                    core.dispatcher.emit(LeadershipEvent::NotLeader);
                }
                if was_leading {
                    let _ = core.events.send(LeadershipEvent::NotLeader);
                }
                core.dispatcher.clear_in_turn();
            }
        }
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
    /// The last event returned.
    last: Option<LeadershipEvent>,
    /// An event received, returned after the one a skip hid (see `next`).
    held: Option<LeadershipEvent>,
}

impl LeadershipEvents {
    /// The next event; `None` once the latch is gone. Events alternate: `IsLeader`, then
    /// `NotLeader`, then `IsLeader`... A receiver more than 64 events behind skips to the
    /// oldest it still has, and keeps the alternation: where the skip hid a change (the next
    /// event the same as the last returned), that change is returned first. So after
    /// `IsLeader`, the next event is `NotLeader` whenever leadership was lost since, whatever
    /// was skipped (a loss and a regain within the skip, followed by a loss, show as one
    /// loss).
    pub async fn next(&mut self) -> Option<LeadershipEvent> {
        if let Some(e) = self.held.take() {
            self.last = Some(e);
            return Some(e);
        }
        let mut skipped = false;
        loop {
            match self.rx.recv().await {
                Ok(e) if skipped && self.last == Some(e) => {
                    let hidden = match e {
                        LeadershipEvent::IsLeader => LeadershipEvent::NotLeader,
                        LeadershipEvent::NotLeader => LeadershipEvent::IsLeader,
                    };
                    self.held = Some(e);
                    self.last = Some(hidden);
                    return Some(hidden);
                }
                Ok(e) => {
                    self.last = Some(e);
                    return Some(e);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => skipped = true,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// A watch of a latch's leadership.
///
/// It reports leadership through [`is_leader`](Self::is_leader) (the value now) and
/// [`changed`](Self::changed) (the next change), and remembers what it last reported through
/// either — at creation, the value then. `changed()` returns as soon as leadership is not what
/// was last reported, and also when it changed and changed back since then: a loss that was
/// over before `changed()` looked (lost and regained, or gained and lost again) is reported,
/// never hidden. So after `is_leader()` returned `true`, any return of `changed()` means that
/// leadership was lost at some point since.
///
/// ```no_run
/// # async fn demo(latch: zkrecipes::leader::LeaderLatch) {
/// let mut watch = latch.leadership_watch();
/// while !watch.is_leader() {
///     if watch.changed().await.is_none() {
///         return; // the latch was closed
///     }
/// }
/// // Leading (as is_leader() just said): work until changed() says anything at all.
/// tokio::select! {
///     _ = watch.changed() => { /* lost (perhaps regained since): stop the work */ }
///     _ = async { /* the leader's work */ } => {}
/// }
/// # }
/// ```
pub struct LeadershipWatch {
    phase: watch::Receiver<Phase>,
    /// The leader flag's receiver (what it has marked seen) and the value last reported, kept
    /// together: `is_leader(&self)` updates both at once.
    seen: Mutex<Seen>,
}

struct Seen {
    leader: watch::Receiver<bool>,
    last: bool,
}

impl LeadershipWatch {
    /// Whether the latch leads now. The answer counts as reported: [`changed`](Self::changed)
    /// compares with it (a change and a change back both before this call are not reported).
    pub fn is_leader(&self) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let started = *self.phase.borrow() == Phase::Started;
        // Read and marked seen in one step: a flip after this read is a change to report.
        let leader = *seen.leader.borrow_and_update();
        let now = started && leader;
        seen.last = now;
        now
    }

    /// Waits until leadership differs from what this watch last reported (by `changed()`,
    /// [`is_leader`](Self::is_leader) or, before either, at creation), or changed and changed
    /// back since that report; returns the value now (equal to the last reported one in the
    /// second case). `None` once the latch is closed (or gone) with nothing left to report.
    pub async fn changed(&mut self) -> Option<bool> {
        let seen = self.seen.get_mut().unwrap_or_else(|e| e.into_inner());
        loop {
            let phase = *self.phase.borrow_and_update();
            let (leader, flipped) = {
                let value = seen.leader.borrow_and_update();
                // The flag only ever changes value (the latch sends only changes), so a version
                // not seen yet is a flip since the last report, even if the value is back.
                (*value, value.has_changed())
            };
            let now = phase == Phase::Started && leader;
            // Once closed, the flag's last flips (the machine lowering it after close()) are
            // the close itself: reported as a value change, or not at all.
            if now != seen.last || (flipped && phase != Phase::Closed) {
                seen.last = now;
                return Some(now);
            }
            if phase == Phase::Closed {
                return None;
            }
            tokio::select! {
                r = seen.leader.changed() => r.ok()?,
                r = self.phase.changed() => r.ok()?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::sync::mpsc as std_mpsc;

    /// A client of `server` and a latch on `path` (not started).
    async fn latch_on(
        server: &zkrecipes_testing::TestingServer,
        path: &str,
    ) -> (Client, LeaderLatch) {
        let client = crate::ClientBuilder::new(server.connect_string())
            .connect()
            .await
            .unwrap();
        let latch = LeaderLatch::new(&client, path, "a").unwrap();
        (client, latch)
    }

    /// Adds a listener that holds the first event it hears (a slow listener) until told to go
    /// by the sender returned; the receiver hears when it holds. Add it first: the listeners
    /// after it hear that event only once it lets go.
    fn hold_first_event(latch: &LeaderLatch) -> (std_mpsc::Receiver<()>, std_mpsc::Sender<()>) {
        let (held_tx, held_rx) = std_mpsc::channel();
        let (go_tx, go_rx) = std_mpsc::channel::<()>();
        let go_rx = Mutex::new(go_rx);
        let first = AtomicBool::new(true);
        latch.add_event_listener(move |_| {
            if first.swap(false, Ordering::SeqCst) {
                let _ = held_tx.send(());
                let _ = go_rx.lock().unwrap().recv();
            }
        });
        (held_rx, go_tx)
    }

    /// Starts `latch` and waits until the first listener holds its IsLeader.
    async fn start_and_hold(latch: &LeaderLatch, held: std_mpsc::Receiver<()>) {
        latch.start().await.unwrap();
        tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(30)))
            .await
            .unwrap()
            .expect("the first listener holds IsLeader");
    }

    /// Returns once the dispatcher has run everything queued before (a call in turn).
    async fn delivered(latch: &LeaderLatch) {
        let (done_tx, done_rx) = oneshot::channel();
        latch.core.dispatcher.call(move || {
            let _ = done_tx.send(());
        });
        done_rx.await.unwrap();
    }

    /// `is_leader` never reaches a listener after `close` returned. Leadership is told to two
    /// listeners; the first holds the event (a slow listener) while the latch is closed; once
    /// it lets go, the second used to be called with `IsLeader` after the close (and, the
    /// close being silent, never heard `NotLeader`: work started on `is_leader` ran on).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_is_leader_reaches_a_listener_after_close_returned() {
        let server = zkrecipes_testing::TestingServer::start();
        let (client, latch) = latch_on(&server, "/latch-close").await;
        let (held, go) = hold_first_event(&latch);
        let closed = Arc::new(AtomicBool::new(false));
        let late = Arc::new(AtomicUsize::new(0));
        latch.add_event_listener({
            let (closed, late) = (closed.clone(), late.clone());
            move |_| {
                if closed.load(Ordering::SeqCst) {
                    late.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        start_and_hold(&latch, held).await;
        latch.close().await.unwrap();
        closed.store(true, Ordering::SeqCst);
        go.send(()).unwrap();
        delivered(&latch).await;
        assert_eq!(
            late.load(Ordering::SeqCst),
            0,
            "a listener was called with IsLeader after close returned"
        );
        client.close().await;
    }

    /// A NotifyLeader close: listeners do not hear the events still queued (a loss and a
    /// leadership found again, queued behind a slow listener), and hear `NotLeader` last. They
    /// used to hear the queued `IsLeader` after close returned, then `NotLeader`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_notify_leader_close_drops_the_queued_events_and_tells_not_leader_last() {
        let server = zkrecipes_testing::TestingServer::start();
        let (client, latch) = latch_on(&server, "/latch-notify").await;
        let (held, go) = hold_first_event(&latch);
        let heard = Arc::new(Mutex::new(Vec::new()));
        latch.add_event_listener({
            let heard = heard.clone();
            move |e| heard.lock().unwrap().push(e)
        });
        start_and_hold(&latch, held).await;
        // Lost and found again while the first IsLeader is held: both queued.
        let node = OurNode {
            name: "n".into(),
            czxid: latch.leadership_epoch().unwrap(),
            owner: client.session_id(),
        };
        latch.core.set_leader(false, None, true);
        latch.core.set_leader(true, Some(&node), true);
        latch.close_with(CloseMode::NotifyLeader).await.unwrap();
        go.send(()).unwrap();
        delivered(&latch).await;
        assert_eq!(
            *heard.lock().unwrap(),
            [LeadershipEvent::IsLeader, LeadershipEvent::NotLeader],
            "the held IsLeader, then NotLeader last"
        );
        client.close().await;
    }

    /// A stream that fell more than 64 events behind never shows two `IsLeader` in a row: the
    /// skip used to hide the `NotLeader` between them (a lost leadership, unseen).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_that_fell_behind_still_alternates() {
        let server = zkrecipes_testing::TestingServer::start();
        let (client, latch) = latch_on(&server, "/latch-lag").await;
        let mut events = latch.events();
        let node = OurNode {
            name: "n".into(),
            czxid: 1,
            owner: client.session_id(),
        };
        latch.core.set_leader(true, Some(&node), true);
        assert_eq!(events.next().await, Some(LeadershipEvent::IsLeader));
        // 101 changes: the receiver keeps the last 64, which start with a NotLeader... or an
        // IsLeader right after the IsLeader it returned.
        for i in 0..101 {
            latch.core.set_leader(i % 2 == 1, Some(&node), true);
        }
        latch.core.set_leader(false, None, true);
        let mut seen = vec![LeadershipEvent::IsLeader];
        while let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(0), events.next()).await
        {
            seen.push(e);
        }
        assert!(seen.len() > 2, "{seen:?}");
        for pair in seen.windows(2) {
            assert_ne!(pair[0], pair[1], "a change hidden: {seen:?}");
        }
        client.close().await;
    }
}
