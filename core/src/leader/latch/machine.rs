//! The latch's state machine: the only task that reads watch events and connection events and
//! decides leadership, so they can never race (Curator's LeaderLatch has had double leaders from
//! such races).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot};

use super::{CloseMode, Command, Core, OurNode, LATCH_NAME};
use crate::client::protected::{ProtectedCreate, ProtectedId};
use crate::client::{sequence, NodeEvent, NodeEventKind, OrNone, Parents, Watch, WeakClient};
use crate::leader::common::LostPolicy;
use crate::wait::Deadline;
use crate::{path, Client, ConnectionState, CreateMode, Error, Result};

/// How long a leader's close waits for the watch on its own node to fire after deleting it.
const OWN_WATCH_FIRE: Duration = Duration::from_secs(2);

const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    Create,
    Check,
    /// Leading: watch our own node, so that its deletion ends the leadership at once.
    WatchSelf,
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

pub(super) struct Machine {
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
    /// `pred` watches our own node (we lead), not a predecessor.
    watching_self: bool,
    need: Need,
    /// Bumped on every connection-state change: a server reply from before the change must
    /// not make us leader.
    generation: u64,
    retry_at: Deadline,
    backoff: Duration,
    first: Option<oneshot::Sender<()>>,
}

impl Machine {
    pub(super) fn new(
        core: Arc<Core>,
        client: &Client,
        path: &str,
        data: Arc<[u8]>,
        policy: LostPolicy,
        cmds: mpsc::UnboundedReceiver<Command>,
        first: oneshot::Sender<()>,
    ) -> Machine {
        Machine {
            core,
            client: client.downgrade(),
            client_closed: Box::pin(client.closed()),
            path: path.to_string(),
            data,
            policy,
            cmds,
            conn: client.subscribe_events(),
            conn_done: false,
            node: None,
            pending: None,
            pred: None,
            watching_self: false,
            need: Need::Create,
            generation: 0,
            retry_at: Deadline::NEVER,
            backoff: MIN_BACKOFF,
            first: Some(first),
        }
    }

    pub(super) async fn run(mut self) {
        let (mode, done) = loop {
            let step = match self.need {
                Need::Create => self.create().await,
                Need::Check => self.check(None).await,
                Need::WatchSelf => self.watch_self().await,
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
        // `close_with` has ended leadership and the listeners (a dropped latch's close has not:
        // it is silent).
        self.core
            .set_leader(false, None, mode == CloseMode::NotifyLeader);
        if mode == CloseMode::NotifyLeader {
            self.core.dispatcher.clear_in_turn();
        } else {
            self.core.dispatcher.clear();
        }
        // The watch on our own node (a leader's) goes with the node: the delete fires it, and
        // a fired watch is dropped without a request. Dropped before the delete, it cost a
        // removeWatches request sent ahead of it (one more per failover).
        let own_watch = if std::mem::take(&mut self.watching_self) {
            self.pred.take()
        } else {
            None
        };
        self.pred = None;
        if let Some(client) = self.client.upgrade() {
            if let Some(node) = self.node.take() {
                // Not waiting out a disconnection (the retry policy's span, or for good with
                // `Forever`): the guaranteed delete goes on in the background, as Curator's.
                client
                    .delete_ours_unless_disconnected(&path::join(&self.path, &node.name))
                    .await;
            }
            // The delete fired the watch, its event read before the delete's reply; the future
            // may not have seen it yet (a loaded machine): awaited a moment, so that it drops
            // fired rather than send a removeWatches for a watch the server no longer has.
            if let Some(watch) = own_watch {
                if client.state().is_connected() {
                    let _ = tokio::time::timeout(OWN_WATCH_FIRE, watch).await;
                }
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
        // A read-only server's view may be stale (the quorum, cut off from it, may have
        // expired our session and elected another): never lead through one.
        if self.policy.is_error_state(state) || state == ConnectionState::ReadOnly {
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
                self.retry_at = Deadline::NEVER;
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
        self.retry_at = Deadline::after(Some(self.backoff));
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

    /// What a step on our node needs, the client and the node; or the step to take instead: exit
    /// (the client is gone), or create a node (none yet).
    fn client_and_node(&mut self) -> std::result::Result<(Client, OurNode), Step<()>> {
        let Some(client) = self.client.upgrade() else {
            return Err(Step::Exit);
        };
        let Some(node) = self.node.clone() else {
            self.need = Need::Create;
            return Err(Step::Done(()));
        };
        Ok((client, node))
    }

    /// Looks at the children (given, or listed now) and decides: lead, watch the predecessor,
    /// or create a node again.
    async fn check(&mut self, listed: Option<(Vec<String>, i64)>) -> Step<()> {
        let (client, node) = match self.client_and_node() {
            Ok(both) => both,
            Err(step) => return step,
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
        let state = self.client.upgrade().map(|c| c.state());
        let connected = state.is_some_and(|s| s.is_connected());
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
                if state == Some(ConnectionState::ReadOnly) {
                    // First in a read-only server's listing says nothing about the quorum's:
                    // wait for a read-write server (its connection event looks again).
                    self.core.set_leader(false, None, true);
                    self.need = Need::Idle;
                } else if connected {
                    self.core.set_leader(true, self.node.as_ref(), true);
                    *self
                        .core
                        .last_error
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = None;
                    self.need = Need::WatchSelf;
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
                self.watching_self = false;
                self.need = Need::Idle;
            }
        }
        Step::Done(())
    }

    /// Leading: sets a watch on our own node (after leadership was taken, so it costs the
    /// failover no round trip). Someone deleting it (an operator, a tool) lets the next member
    /// lead: the deletion ends our leadership at once ([`idle`](Self::idle)), and our node is
    /// made again. Curator's LeaderLatch does not watch its own node, and goes on leading.
    async fn watch_self(&mut self) -> Step<()> {
        let (client, node) = match self.client_and_node() {
            Ok(both) => both,
            Err(step) => return step,
        };
        let generation = self.generation;
        let ours = path::join(&self.path, &node.name);
        let op = async move {
            let ours = ours.as_str();
            client
                .retry(|s| async move { s.get_data_watch(ours).await.or_none() })
                .await
        };
        let found = match self.serve(op).await {
            Step::Done(Ok(found)) => found,
            Step::Done(Err(e)) => return self.failed(e),
            Step::Close(m, d) => return Step::Close(m, d),
            Step::Exit => return Step::Exit,
        };
        if generation != self.generation {
            self.need = self.recheck();
            return Step::Done(());
        }
        match found {
            Some((_, stat, w)) if stat.czxid == node.czxid => {
                self.pred = Some(Box::pin(w.changed()));
                self.watching_self = true;
                self.need = Need::Idle;
            }
            // Gone already (or replaced): the leadership went with it; look again.
            _ => {
                self.core.set_leader(false, None, true);
                self.need = Need::Check;
            }
        }
        Step::Done(())
    }

    async fn idle(&mut self) -> Step<()> {
        let sleep = self.retry_at.sleep();
        tokio::select! {
            biased;
            cmd = self.cmds.recv() => close_step(cmd),
            _ = &mut self.client_closed => Step::Exit,
            ev = self.conn.recv(), if !self.conn_done => {
                self.on_connection(ev);
                Step::Done(())
            },
            event = async { self.pred.as_mut().expect("guarded").await }, if self.pred.is_some() => {
                // Deleted: maybe our turn. Changed data or a session event: the one-shot watch
                // is spent, so look again either way.
                self.pred = None;
                if std::mem::take(&mut self.watching_self) && event.kind == NodeEventKind::Deleted {
                    // Our own node, deleted while we led: the next member may lead already.
                    self.core.set_leader(false, None, true);
                }
                self.need = self.recheck();
                Step::Done(())
            },
            _ = sleep => {
                self.retry_at = Deadline::NEVER;
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
