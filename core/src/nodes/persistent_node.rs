//! [`PersistentNode`]: Curator's PersistentNode — a node kept in place by one background task
//! (the only writer), which creates it, watches it, and creates it again after a delete, a
//! reconnect or a new session.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, watch, Notify};
use tokio::task::JoinHandle;

use crate::client::protected::{ProtectedCreate, ProtectedId};
use crate::client::{
    ConnectionState, CreateMode, CreateOptions, NodeEventKind, Parents, Session, Watch,
};
use crate::dispatch::{Dispatcher, ListenerId};
use crate::lifecycle::{Lifecycle, Phase};
use crate::{path, runtime, Client, Error, Result};

/// What a [`PersistentNode`] tells its listeners.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PersistentNodeEventKind {
    /// The node is on the server, ours, with our data: after the first create, and again
    /// after every re-create (a delete, a new session) or check (a reconnect).
    Registered,
    /// The node is known to be gone: deleted by someone, or its session ended or was LOST. It
    /// is being created again.
    Unregistered,
    /// The path holds a node of another live session (or a persistent node where ours is
    /// ephemeral): it is left untouched, and this node stops trying until closed.
    Conflict,
}

impl PersistentNodeEventKind {
    /// Every kind, in declaration order.
    pub const ALL: &'static [PersistentNodeEventKind] = &[
        PersistentNodeEventKind::Registered,
        PersistentNodeEventKind::Unregistered,
        PersistentNodeEventKind::Conflict,
    ];

    /// The one spelling every face uses.
    pub const fn name(self) -> &'static str {
        match self {
            PersistentNodeEventKind::Registered => "REGISTERED",
            PersistentNodeEventKind::Unregistered => "UNREGISTERED",
            PersistentNodeEventKind::Conflict => "CONFLICT",
        }
    }
}

/// A [`PersistentNode`] event: what happened, to which node (the actual path, with the
/// sequence number and protected prefix, if any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistentNodeEvent {
    /// What happened.
    pub kind: PersistentNodeEventKind,
    /// The node's actual path.
    pub path: String,
}

#[derive(Clone, Debug)]
enum Initial {
    Pending,
    Created,
    Failed(Error),
}

#[derive(Clone, Debug)]
struct Status {
    initial: Initial,
    registered: bool,
    actual_path: Option<String>,
}

/// What the handle and the keeper task share.
struct Shared {
    path: String,
    life: Lifecycle,
    /// The data we want on the node, and its generation (bumped by each `set_data`).
    data: Mutex<(Vec<u8>, u64)>,
    poke: Notify,
    status: watch::Sender<Status>,
    closing: watch::Sender<bool>,
    dispatcher: Dispatcher<PersistentNodeEvent>,
    last_error: Mutex<Option<Error>>,
    /// Whether close deletes the node (false: it is left, see
    /// [`PersistentNode::keep_on_close`]); read by the keeper as it ends.
    delete_on_close: AtomicBool,
    /// How the keeper's end went: `None` while it runs; then the first try of the delete on
    /// close (a failure that says nothing about the next try is tried again in the background),
    /// or `Ok` when there was nothing to delete or the node was kept. `Some(Ok)` before start.
    ended: watch::Sender<Option<Result<()>>>,
    /// What a keeper that kept the node on close left on the server, for
    /// [`PersistentNode::delete_kept`].
    kept: Mutex<Option<Remains>>,
}

impl Shared {
    fn set_registered(&self, registered: bool, path: &str) {
        let changed = self.status.send_if_modified(|s| {
            let changed = s.registered != registered;
            s.registered = registered;
            s.actual_path = Some(path.to_string());
            if registered {
                s.initial = Initial::Created;
            }
            changed
        });
        if changed {
            let kind = if registered {
                tracing::debug!(node = %path, "persistent node registered");
                PersistentNodeEventKind::Registered
            } else {
                tracing::warn!(node = %path, "persistent node unregistered (being created again)");
                PersistentNodeEventKind::Unregistered
            };
            self.dispatcher.emit(PersistentNodeEvent {
                kind,
                path: path.to_string(),
            });
        }
    }

    fn fail(&self, e: &Error) {
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.clone());
        self.status.send_if_modified(|s| {
            if matches!(s.initial, Initial::Pending) || matches!(e, Error::Conflict(_)) {
                s.initial = Initial::Failed(e.clone());
                true
            } else {
                false
            }
        });
    }
}

/// Curator's PersistentNode: a node (any [`CreateMode`], optionally protected) that stays on
/// the server as long as this object is started — created again after someone deletes it,
/// checked after every reconnect (CURATOR-97), created again after a session expiry.
///
/// Better than Curator:
/// * an existing ephemeral node of **another live session** at our path is never taken over:
///   [`wait_for_initial_create`](Self::wait_for_initial_create) fails with
///   [`Error::Conflict`] and the node is left untouched (Curator sets its data, and later
///   deletes it); an ephemeral node of our own current session is taken over (a reply lost
///   with the connection); one of our own *former* session is waited out until the server
///   removes it. A persistent-type node at the path is adopted, as Curator does — unless
///   ours is ephemeral (that is a conflict too).
/// * [`close`](Self::close) deletes only our own node (ephemeral owner our session, or the
///   czxid we created or adopted), at the version just read; as Curator's guaranteed delete,
///   it goes on in the background when it cannot be done now (no connection), until it
///   succeeds, the node is gone or no longer ours, or the client closes.
/// * a sequential (and protected) node is created again at the path it first got, never as a
///   new sequential node, so re-creates never pile up (CURATOR-190); a protected first create
///   whose reply is lost finds its node again. An unprotected one cannot (nothing in its name
///   says it is ours): its retry makes a second node and the first is left behind, as in
///   Curator. Use `protected` for sequential modes.
/// * [`set_data`](Self::set_data) may be called at any time: the data is applied now if
///   connected, else on the next create or reconnect.
///
/// Events ([`add_listener`](Self::add_listener)) run on the node's dispatcher
/// ([`crate::dispatch`]). Dropping the node without closing it closes it in the background.
pub struct PersistentNode {
    client: Client,
    mode: CreateMode,
    ttl: Option<Duration>,
    protected: bool,
    shared: Arc<Shared>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for PersistentNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentNode")
            .field("path", &self.shared.path)
            .field("mode", &self.mode)
            .field("protected", &self.protected)
            .field("actual_path", &self.actual_path())
            .finish()
    }
}

impl PersistentNode {
    /// A node at `path` of `mode` with `data`; `protected` gives its name Curator's
    /// `_c_<uuid>-` prefix. Nothing happens on the server before [`start`](Self::start).
    ///
    /// Errors: `InvalidArgument` for a bad path (the root included), data over the request
    /// limit, or a TTL mode (use [`new_with_ttl`](Self::new_with_ttl)); `Closed` on a closed
    /// client.
    pub fn new(
        client: &Client,
        path: &str,
        mode: CreateMode,
        data: &[u8],
        protected: bool,
    ) -> Result<PersistentNode> {
        Self::build(client, path, mode, None, data, protected)
    }

    /// A node of a TTL mode ([`CreateMode::PersistentWithTtl`],
    /// [`CreateMode::PersistentSequentialWithTtl`]) with its `ttl`.
    pub fn new_with_ttl(
        client: &Client,
        path: &str,
        mode: CreateMode,
        ttl: Duration,
        data: &[u8],
        protected: bool,
    ) -> Result<PersistentNode> {
        Self::build(client, path, mode, Some(ttl), data, protected)
    }

    fn build(
        client: &Client,
        path: &str,
        mode: CreateMode,
        ttl: Option<Duration>,
        data: &[u8],
        protected: bool,
    ) -> Result<PersistentNode> {
        client.ensure_open_for("PersistentNode", path)?;
        if mode.is_sequential() || protected {
            path::validate_sequential_path(path)?;
        } else {
            path::validate_path(path)?;
        }
        if path == "/" {
            return Err(Error::invalid("a persistent node cannot be the root node"));
        }
        crate::client::check_ttl(path, mode, ttl)?;
        check_data(client, path, data)?;
        Ok(PersistentNode {
            client: client.clone(),
            mode,
            ttl,
            protected,
            shared: Arc::new(Shared {
                path: path.to_string(),
                life: Lifecycle::new("PersistentNode", path),
                data: Mutex::new((data.to_vec(), 0)),
                poke: Notify::new(),
                status: watch::channel(Status {
                    initial: Initial::Pending,
                    registered: false,
                    actual_path: None,
                })
                .0,
                closing: watch::channel(false).0,
                dispatcher: Dispatcher::new(),
                last_error: Mutex::new(None),
                delete_on_close: AtomicBool::new(true),
                ended: watch::channel(Some(Ok(()))).0,
                kept: Mutex::new(None),
            }),
            task: Mutex::new(None),
        })
    }

    /// Leaves the node on the server when closed (Curator's PersistentTtlNode overrides
    /// `deleteNode` the same way).
    pub(crate) fn keep_on_close(self) -> Self {
        self.set_delete_on_close(false);
        self
    }

    /// Whether close deletes the node (the default) or leaves it: may change until the keeper
    /// ends (it reads this as it ends). A kept node can still be deleted after close with
    /// [`delete_kept`](Self::delete_kept).
    pub(crate) fn set_delete_on_close(&self, yes: bool) {
        self.shared.delete_on_close.store(yes, Ordering::SeqCst);
    }

    /// The path given at construction.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The create mode.
    pub fn mode(&self) -> CreateMode {
        self.mode
    }

    /// Starts keeping the node (in the background; see
    /// [`wait_for_initial_create`](Self::wait_for_initial_create)).
    ///
    /// Errors: `InvalidArgument` when started twice; `Closed` after close or on a closed client.
    pub fn start(&self) -> Result<()> {
        self.shared.life.start(&self.client)?;
        self.shared.ended.send_replace(None);
        let keeper = Keeper {
            client: self.client.clone(),
            mode: self.mode,
            ttl: self.ttl,
            protected: self.protected.then(ProtectedId::new),
            shared: self.shared.clone(),
            ours: None,
            written: None,
            sessions: Vec::new(),
            pending: None,
            unsure: false,
        };
        let handle = runtime::spawn(keeper.run());
        *self.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        Ok(())
    }

    /// Waits until the node was first created (`Ok(true)`) or `timeout` passes (`Ok(false)`;
    /// `None` waits without limit). Once created it returns `true` at once, even if the node is
    /// being created again now, unless the node has met a conflict since (then `Conflict`:
    /// the node gave up its path).
    ///
    /// Errors: `Conflict` when the path holds another session's node (left untouched), also
    /// after a first create;
    /// another error the first create met that retrying will not cure (`NoAuth`, say; the
    /// node keeps trying); `InvalidArgument` before start; `Closed` once closed.
    pub async fn wait_for_initial_create(&self, timeout: Option<Duration>) -> Result<bool> {
        const OP: &str = "wait_for_initial_create";
        let mut rx = self.shared.status.subscribe();
        let mut phase = self.shared.life.subscribe();
        let life = &self.shared.life;
        let wait = async move {
            loop {
                phase.borrow_and_update();
                life.check_started(OP)?;
                match &rx.borrow_and_update().initial {
                    Initial::Created => return Ok(true),
                    Initial::Failed(e) => return Err(e.clone()),
                    Initial::Pending => {}
                }
                tokio::select! {
                    r = rx.changed() => r.map_err(|_| life.closed_error(OP))?,
                    r = phase.changed() => r.map_err(|_| life.closed_error(OP))?,
                }
            }
        };
        match timeout {
            None => wait.await,
            Some(t) => tokio::time::timeout(t, wait).await.unwrap_or(Ok(false)),
        }
    }

    /// [`wait_for_initial_create`](Self::wait_for_initial_create) for the blocking face.
    pub fn wait_for_initial_create_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.wait_for_initial_create(timeout))?
    }

    /// The node's actual path (with the sequence number and protected prefix) once it was
    /// created (Curator's `getActualPath`); `None` before.
    pub fn actual_path(&self) -> Option<String> {
        self.shared.status.borrow().actual_path.clone()
    }

    /// Whether the node is on the server as far as this client knows (the last event was
    /// REGISTERED).
    pub fn is_registered(&self) -> bool {
        self.shared.life.is_started() && self.shared.status.borrow().registered
    }

    /// The data this node keeps (the last [`set_data`](Self::set_data), or the initial data).
    pub fn data(&self) -> Vec<u8> {
        self.shared
            .data
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// Sets the node's data: written now when connected, else when the node is next created
    /// or checked after a reconnect. Returns at once.
    ///
    /// Errors: `InvalidArgument` for data over the request limit; `Closed` once closed.
    pub fn set_data(&self, data: &[u8]) -> Result<()> {
        if self.shared.life.phase() == Phase::Closed {
            return Err(self.shared.life.closed_error("set_data"));
        }
        check_data(&self.client, self.path(), data)?;
        {
            let mut d = self.shared.data.lock().unwrap_or_else(|e| e.into_inner());
            d.0 = data.to_vec();
            d.1 += 1;
        }
        self.shared.poke.notify_one();
        Ok(())
    }

    /// The conflict that stopped the node (another session's node at the path, left
    /// untouched), if one did: the node never writes again.
    pub(crate) fn conflict(&self) -> Option<Error> {
        match &self.shared.status.borrow().initial {
            Initial::Failed(e @ Error::Conflict(_)) => Some(e.clone()),
            _ => None,
        }
    }

    /// The last error the background task met (it keeps retrying), if any.
    pub fn last_error(&self) -> Option<Error> {
        self.shared
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Adds a listener for [`PersistentNodeEvent`]s; returns its id.
    pub fn add_listener(
        &self,
        listener: impl Fn(&PersistentNodeEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        self.shared.dispatcher.add(listener)
    }

    /// Removes a listener; whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.shared.dispatcher.remove(id)
    }

    /// Stops keeping the node and deletes it (our own node only, at the version just read;
    /// a PersistentTtlNode's container stays). A create still waiting for its reply is waited
    /// for, and the node it made is deleted too. The delete is Curator's guaranteed delete:
    /// when it fails for want of a connection (the retry policy gave up), close returns all
    /// the same and the delete goes on in the background until it succeeds, the node is gone
    /// or no longer ours, or the client closes. Closing twice, or an unstarted node, is fine.
    pub async fn close(&self) -> Result<()> {
        self.shut().await.map(drop)
    }

    /// [`close`](Self::close), returning how the delete's first try went: its error when it
    /// failed (a failure that says nothing about the next try goes on in the background).
    pub(crate) async fn close_reporting(&self) -> Result<()> {
        self.shut().await?
    }

    /// Closes: `Err` if the keeper panicked, else the first try of the delete on close.
    async fn shut(&self) -> Result<Result<()>> {
        self.shared.life.close();
        self.shared.status.send_modify(|s| s.registered = false);
        self.shared.closing.send_replace(true);
        self.shared.dispatcher.clear();
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(mut task) = task else {
            return Ok(Ok(()));
        };
        // The keeper reports the delete's first try and may go on (in the background) after.
        let mut ended = self.shared.ended.subscribe();
        let first = async move {
            ended
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|e| e.clone())
        };
        tokio::select! {
            first = first => Ok(first.unwrap_or(Ok(()))),
            joined = &mut task => {
                joined.map_err(crate::client::join_error)?;
                Ok(self.shared.ended.borrow().clone().unwrap_or(Ok(())))
            }
        }
    }

    /// After [`close`](Self::close) (by anyone, finished or not) of a node kept on close:
    /// deletes the node the keeper left, as close would have (our own node only; a create
    /// still out is waited for; the guaranteed delete). Returns the first try's outcome;
    /// `Ok` when nothing was left (close deleted it, or there was none). Waits for the keeper
    /// to end, so it must not be called on a node that is not closed.
    pub(crate) async fn delete_kept(&self) -> Result<()> {
        let mut ended = self.shared.ended.subscribe();
        let _ = ended.wait_for(Option::is_some).await.map(drop);
        let kept = self
            .shared
            .kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(kept) = kept else {
            return Ok(());
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let client = self.client.clone();
        runtime::spawn(async move {
            kept.delete(&client, move |r| {
                let _ = tx.send(r);
            })
            .await
        });
        rx.await.unwrap_or(Ok(()))
    }

    /// [`close`](Self::close) for the blocking face.
    pub fn close_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.close())?
    }
}

impl Drop for PersistentNode {
    fn drop(&mut self) {
        // The task sees this, deletes our node and ends.
        self.shared.closing.send_replace(true);
        self.shared.dispatcher.clear();
    }
}

fn check_data(client: &Client, path: &str, data: &[u8]) -> Result<()> {
    let limit = client.cfg().max_request_bytes;
    if data.len() >= limit {
        return Err(Error::invalid(format!(
            "persistent node {path}: {} bytes of data is over the {limit}-byte request limit",
            data.len()
        )));
    }
    Ok(())
}

/// The node we made or adopted.
#[derive(Clone, Debug)]
struct Ours {
    path: String,
    czxid: i64,
}

/// How one pass of [`Keeper::reconcile`] ended.
enum Outcome {
    /// The node is ours, with our data; the watch fires on its change or delete.
    Kept(String, Watch),
    /// Another session's node (or a persistent one where ours is ephemeral) is in the way.
    Conflict(Error),
}

/// The background task: the node's only writer.
struct Keeper {
    client: Client,
    mode: CreateMode,
    ttl: Option<Duration>,
    protected: Option<ProtectedId>,
    shared: Arc<Shared>,
    ours: Option<Ours>,
    /// The data generation last written to the node (`None`: none written yet).
    written: Option<u64>,
    /// Sessions this node has seen: an ephemeral node of one of them is ours, stale.
    sessions: Vec<i64>,
    /// A create sent and not answered yet, as its own task (see [`Keeper::send_create`]).
    pending: Option<JoinHandle<Result<(String, i64)>>>,
    /// A create at `ours.path` went out and no reply of it has been read back since (it was
    /// cut off by close, failed without the server's answer, or found a node there): a
    /// persistent node at that path may be the one it made, and the reconcile pass would
    /// adopt it. Close deletes it then; cleared once the node is made or adopted.
    unsure: bool,
}

impl Drop for Keeper {
    fn drop(&mut self) {
        // However it ended (a conflict, a closed client, a panic): it has.
        self.shared.ended.send_if_modified(|e| {
            let unset = e.is_none();
            if unset {
                *e = Some(Ok(()));
            }
            unset
        });
    }
}

impl Keeper {
    async fn run(mut self) {
        if !self.keep().await {
            return;
        }
        let remains = Remains {
            pending: self.pending.take(),
            ours: self.ours.take(),
            unsure: self.unsure,
            ephemeral: self.mode.is_ephemeral(),
            protected: self.protected.take(),
            parent: path::parent(&self.shared.path).to_string(),
        };
        if self.shared.delete_on_close.load(Ordering::SeqCst) {
            let shared = self.shared.clone();
            remains
                .delete(&self.client, move |r| {
                    shared.ended.send_replace(Some(r));
                })
                .await;
        } else {
            // Kept before `ended` is set: `delete_kept` waits for `ended`, then takes it.
            *self.shared.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(remains);
            self.shared.ended.send_replace(Some(Ok(())));
        }
    }

    /// Keeps the node until close (`true`: what is left is deleted or kept), a conflict or a
    /// closed client (`false`: nothing to do).
    async fn keep(&mut self) -> bool {
        let mut closing = self.shared.closing.subscribe();
        let mut states = self.client.subscribe_events();
        let mut backoff = Duration::from_millis(50);
        let mut last_session: Option<i64> = None;
        let mut last_node: Option<i64> = None;
        'outer: loop {
            if *closing.borrow() {
                break;
            }
            let outcome = tokio::select! {
                r = self.reconcile() => r,
                _ = closing.wait_for(|c| *c) => break,
            };
            let (path, watch) = match outcome {
                Ok(Outcome::Kept(path, watch)) => {
                    backoff = Duration::from_millis(50);
                    (path, watch)
                }
                Ok(Outcome::Conflict(e)) => {
                    tracing::warn!(node = %self.shared.path, error = %e, "persistent node: the path is another session's; left untouched");
                    self.shared.fail(&e);
                    self.shared.dispatcher.emit(PersistentNodeEvent {
                        kind: PersistentNodeEventKind::Conflict,
                        path: self.shared.path.clone(),
                    });
                    // Never touch it: wait for close only.
                    let _ = closing.wait_for(|c| *c).await;
                    return false;
                }
                Err(Error::Closed(_)) => return false,
                Err(e) => {
                    if !(e.is_retryable()
                        || matches!(e, Error::Timeout(_) | Error::SessionExpired(_)))
                    {
                        tracing::warn!(node = %self.shared.path, error = %e, "persistent node: create failed; retrying");
                        self.shared.fail(&e);
                    } else {
                        tracing::debug!(node = %self.shared.path, error = %e, "persistent node: retrying");
                        *self
                            .shared
                            .last_error
                            .lock()
                            .unwrap_or_else(|p| p.into_inner()) = Some(e);
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = self.shared.poke.notified() => {}
                        _ = closing.wait_for(|c| *c) => break,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            // The session the node is kept on. Kept now on another session than the last pass
            // (the old one ended while this pass ran, and no event said so yet): that is the
            // loss, heard once; a LOST heard from now on that is older (sent when the earlier
            // session ended, still queued) is not a second one.
            // Also a node other than the one kept last (its czxid): it was gone meanwhile, deleted
            // while this pass ran (no watch of ours saw it go), and is made again.
            let kept_on = self.client.session_id();
            let node = self.ours.as_ref().map(|o| o.czxid);
            if last_session.is_some_and(|s| s != kept_on)
                || last_node.is_some_and(|n| Some(n) != node)
            {
                self.shared.set_registered(false, &path);
            }
            last_session = Some(kept_on);
            last_node = node;
            self.shared.set_registered(true, &path);
            let mut fired = Box::pin(watch.changed());
            loop {
                tokio::select! {
                    event = &mut fired => {
                        if matches!(event.kind, NodeEventKind::Deleted | NodeEventKind::SessionEnded) {
                            self.shared.set_registered(false, &path);
                        }
                        break;
                    }
                    _ = self.shared.poke.notified() => break,
                    state = states.recv() => match state {
                        Ok(ConnectionState::Lost)
                            if self.client.session_id() == kept_on
                                && self.client.state().is_connected() => {}
                        Ok(ConnectionState::Lost) => {
                            self.shared.set_registered(false, &path);
                            break;
                        }
                        // CURATOR-97: check (and reinstate) the node after every reconnect.
                        Ok(ConnectionState::Reconnected) | Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Closed) => break 'outer,
                    },
                    _ = closing.wait_for(|c| *c) => break 'outer,
                }
            }
        }
        true
    }

    /// Sends a create as its own task and waits for it. The pass that waits may be dropped
    /// (close), the create is not: [`run`](Self::run) then waits for its answer before it
    /// deletes what the node made, so a node created just as close came is not left behind.
    async fn send_create<F>(&mut self, create: F) -> Result<(String, i64)>
    where
        F: std::future::Future<Output = Result<(String, i64)>> + Send + 'static,
    {
        let task = self.pending.insert(runtime::spawn(create));
        let result = task
            .await
            .unwrap_or_else(|e| Err(crate::client::join_error(e)));
        self.pending = None;
        result
    }

    /// One pass: make sure the node is there, ours, with our data, and watched.
    async fn reconcile(&mut self) -> Result<Outcome> {
        loop {
            let (data, generation) = self
                .shared
                .data
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let Some(ours) = self.ours.clone() else {
                self.first_create(&data, generation).await?;
                continue;
            };
            let p = ours.path.as_str();
            let read = self
                .client
                .retry(|s: Session| async move {
                    match s.get_data_watch(p).await {
                        Err(e) if e.is_retryable() => Err(e),
                        r => Ok((r, s.id())),
                    }
                })
                .await?;
            let (read, session) = read;
            if !self.sessions.contains(&session) {
                self.sessions.push(session);
            }
            let (current, stat, watch) = match read {
                Err(Error::NoNode(_)) => {
                    self.create_at(p, &data, generation).await?;
                    continue;
                }
                Err(e) => return Err(e),
                Ok(found) => found,
            };
            let owner = stat.ephemeral_owner;
            if owner != 0 && owner != session && self.sessions.contains(&owner) {
                // Our own node of a former session: the server removes it when it expires
                // that session (the watch fires); never delete it ourselves.
                tracing::debug!(node = %p, "persistent node: waiting for our former session's node to go");
                let wait = self.client.session_timeout() * 2;
                let _ = tokio::time::timeout(wait, watch.changed()).await;
                continue;
            }
            let mine = if owner != 0 {
                owner == session
            } else {
                !self.mode.is_ephemeral()
            };
            if !mine {
                let whose = if owner != 0 {
                    format!("an ephemeral node of session {owner:#x}")
                } else {
                    "a persistent node".to_string()
                };
                return Ok(Outcome::Conflict(Error::Conflict(
                    format!(
                        "{p} is {whose}, not of this session ({session:#x}); it was left untouched"
                    )
                    .into(),
                )));
            }
            if stat.czxid != ours.czxid {
                // A node we had not seen (ours after a lost reply, or a persistent one adopted):
                // it gets our data, as Curator's setData after NodeExists does.
                self.written = None;
            }
            self.ours = Some(Ours {
                path: ours.path.clone(),
                czxid: stat.czxid,
            });
            self.unsure = false;
            if self.written != Some(generation) && current != data {
                // On the session that read the node, never on a later one: the node was ours
                // on that session only. Once it expired, the server deleted our node, and
                // another process may have made one at the same path, at the same version, that
                // a write resent on a new session would overwrite.
                let data = data.as_slice();
                let written = self
                    .client
                    .retry(|s: Session| async move {
                        if s.id() != session {
                            return Ok(false); // a new session: read again
                        }
                        s.set_data(p, data, Some(stat.version)).await.map(|_| true)
                    })
                    .await;
                match written {
                    Ok(true) => {
                        self.written = Some(generation);
                        continue; // read again for a fresh watch
                    }
                    Ok(false) | Err(Error::BadVersion(_) | Error::NoNode(_)) => continue,
                    Err(e) => return Err(e),
                }
            }
            self.written = Some(generation);
            return Ok(Outcome::Kept(ours.path, watch));
        }
    }

    /// The first create: where the actual path is decided (sequence number, protected prefix).
    async fn first_create(&mut self, data: &[u8], generation: u64) -> Result<()> {
        let path = self.shared.path.clone();
        if let Some(id) = &self.protected {
            let (client, id, mode, ttl) = (self.client.clone(), id.clone(), self.mode, self.ttl);
            let data = data.to_vec();
            let (made, czxid) = self
                .send_create(async move {
                    let req = ProtectedCreate {
                        parent: path::parent(&path),
                        name: path::node_name(&path),
                        data: &data,
                        mode,
                        parents: Parents::Containers,
                        list_parent: false,
                    };
                    let node = client.create_protected_ttl(&id, req, ttl).await?;
                    Ok((node.path, node.stat.czxid))
                })
                .await?;
            self.made(made, czxid, generation);
        } else if self.mode.is_sequential() {
            let (client, options, data) = (self.client.clone(), self.options(), data.to_vec());
            let (made, czxid) = self
                .send_create(async move {
                    let created = client.create(&path, &data, options).await?;
                    Ok((created.path, created.stat.czxid))
                })
                .await?;
            self.made(made, czxid, generation);
        } else {
            // A fixed path: the reconcile pass creates it, or finds what is there.
            self.ours = Some(Ours { path, czxid: 0 });
        }
        Ok(())
    }

    /// Creates the node again at its known path (a sequential one without a new number).
    async fn create_at(&mut self, path: &str, data: &[u8], generation: u64) -> Result<()> {
        let mut options = self.options();
        options.mode = self.mode.without_sequence();
        let (client, at, data) = (self.client.clone(), path.to_owned(), data.to_vec());
        self.unsure = true;
        let created = self
            .send_create(async move {
                let created = client.create(&at, &data, options).await?;
                Ok((created.path, created.stat.czxid))
            })
            .await;
        match created {
            Ok((made, czxid)) => {
                self.made(made, czxid, generation);
                Ok(())
            }
            // A lost reply, or someone else: the reconcile pass reads whose it is.
            Err(Error::NodeExists(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn options(&self) -> CreateOptions {
        let mut options = CreateOptions::new(self.mode).parents();
        options.ttl = self.ttl;
        options
    }

    fn made(&mut self, path: String, czxid: i64, generation: u64) {
        tracing::debug!(node = %path, "persistent node created");
        self.shared
            .status
            .send_modify(|s| s.actual_path = Some(path.clone()));
        self.ours = Some(Ours { path, czxid });
        self.unsure = false;
        self.written = Some(generation);
    }
}

/// What a keeper leaves as it ends: the node it made or adopted, and a create still out.
struct Remains {
    /// A create sent and not answered yet (see [`Keeper::send_create`]).
    pending: Option<JoinHandle<Result<(String, i64)>>>,
    ours: Option<Ours>,
    /// See [`Keeper::unsure`].
    unsure: bool,
    ephemeral: bool,
    protected: Option<ProtectedId>,
    /// The node's parent (for a protected create's cleanup).
    parent: String,
}

impl Remains {
    /// Deletes what the keeper left, telling `first` how the first try went. A create cut
    /// off by close may still be applied: its answer is waited for, so that what it made is
    /// known and deleted (Curator deletes a node whose create completes after close), not left
    /// behind. Then Curator's guaranteed delete of our own node ([`Doomed::delete`]).
    async fn delete(mut self, client: &Client, first: impl FnOnce(Result<()>)) {
        if let Some(task) = self.pending.take() {
            if let Ok(Ok((path, czxid))) = task.await {
                self.ours = Some(Ours { path, czxid });
                self.unsure = false;
            }
        }
        let Some(ours) = self.ours else {
            if let Some(id) = &self.protected {
                let _ = id.cleanup(client, &self.parent);
            }
            return first(Ok(()));
        };
        let doomed = Doomed {
            adopt: self.unsure && !self.ephemeral,
            path: ours.path,
            czxid: ours.czxid,
        };
        doomed.delete(client, first).await
    }
}

/// Our node, to delete: only if it is still ours (ephemeral owner our session, or the czxid
/// we made or adopted, or, for a persistent mode after a create whose outcome was not read
/// back, a persistent node at our path: the reconcile pass adopts those), at the version just
/// read.
struct Doomed {
    path: String,
    czxid: i64,
    adopt: bool,
}

impl Doomed {
    /// Curator's guaranteed delete: one try under the retry policy, whose outcome `first`
    /// hears; after a failure that says nothing about the next try (no connection, a timeout,
    /// a session expiry), tries again in the background ([`Client::keep_deleting`]) until the
    /// node is deleted, gone or no longer ours, or the client closes.
    async fn delete(self, client: &Client, first: impl FnOnce(Result<()>)) {
        let p = self.path.as_str();
        match self.try_once(client).await {
            // A closed client deletes nothing more (its ephemeral nodes go with it).
            Ok(()) | Err(Error::Closed(_)) => return first(Ok(())),
            Err(e) if !crate::client::retry_later(&e) => {
                tracing::warn!(node = %p, error = %e, "persistent node: could not delete it on close");
                return first(Err(e.context(format!("delete {p}"))));
            }
            Err(e) => {
                tracing::warn!(node = %p, error = %e, "persistent node: could not delete it on close yet; trying again in the background");
                first(Err(e.context(format!(
                    "delete {p} (tried again in the background until it is gone)"
                ))));
            }
        }
        let doomed = Arc::new(self);
        client.keep_deleting(
            doomed.path.clone(),
            Box::new(move |client| {
                let doomed = doomed.clone();
                Box::pin(async move { doomed.try_once(client).await })
            }),
        );
    }

    /// One try, under the retry policy: `Ok` once the node is deleted, gone, or not ours.
    async fn try_once(&self, client: &Client) -> Result<()> {
        let (p, czxid, adopt) = (self.path.as_str(), self.czxid, self.adopt);
        client
            .retry(|s: Session| async move {
                loop {
                    let Some(stat) = s.exists(p).await? else {
                        return Ok(());
                    };
                    let mine = if stat.ephemeral_owner != 0 {
                        s.owns(&stat)
                    } else {
                        adopt || (czxid != 0 && stat.czxid == czxid)
                    };
                    if !mine {
                        if czxid != 0 {
                            tracing::warn!(node = %p, "persistent node: not deleted on close, it is no longer ours");
                        }
                        return Ok(());
                    }
                    match s.delete(p, Some(stat.version)).await {
                        Ok(()) | Err(Error::NoNode(_)) => return Ok(()),
                        Err(Error::BadVersion(_)) => continue,
                        Err(e) => return Err(e),
                    }
                }
            })
            .await
    }
}
