//! The client framework: Curator's CuratorFramework essentials, and the recipe API.
//!
//! A [`Client`] owns one ZooKeeper session at a time. When the session is lost (expired on the
//! server, or SUSPENDED for the negotiated session timeout) it reports LOST and opens a new
//! session, reporting RECONNECTED, as Curator does. Operations run under the retry policy and
//! wait (up to the connection timeout) for a connection before each try.
//!
//! # The recipe API
//!
//! Recipes are written against this module only, never the wire crate:
//! `Client::retry` runs a step under the retry policy with a `Session` (primitive,
//! pipelined operations on one session: create, getData, exists, getChildren, setData, delete,
//! sync, with watches); `Client::create_protected` is Curator's protected create;
//! `Client::ensure_path` makes parents; `Client::delete_ours` is the guaranteed delete of a
//! node we created; `sequence` orders sequential nodes; [`LostPolicy`] says when a hold or a
//! leadership is lost. The facts the fault suite taught us (a request failed by its
//! connection's end is a connection loss; protected nodes are looked up only after a `sync`)
//! live here, once.

mod builder;
pub mod compression;
mod connection;
mod ensemble;
mod ops;
mod persistent;
pub(crate) mod protected;
mod security;
pub(crate) mod sequence;
mod session;
mod state;
mod transaction;
mod types;
mod watches;
mod wire;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, watch};
use zookeeper_client as zk;

pub use self::builder::{validate_connect_string, ClientBuilder, DEFAULT_MAX_REQUEST_BYTES};
pub use self::ensemble::{EnsembleConfig, EnsembleMember, Reconfig, ServerRole};
pub(crate) use self::ops::retry_later;
pub use self::persistent::{PersistentWatch, PersistentWatcher, WatchEvent, WatchEventStream};
pub use self::security::{AclProvider, Pem, SaslOptions, TlsOptions};
pub(crate) use self::session::NodeRead;
pub use self::session::Watch;
pub(crate) use self::session::{OrNone, Session};
pub use self::state::{ConnectionState, LostPolicy, StateStream};
pub use self::transaction::Transaction;
pub(crate) use self::types::check_ttl;
pub use self::types::{
    Acl, AddWatchMode, CreateMode, CreateOptions, Created, DeleteOptions, NodeEvent, NodeEventKind,
    Op, OpResult, Parents, Permission, Stat, WatcherType,
};

use crate::dispatch::{Dispatcher, ListenerId};
use crate::retry::RetryPolicy;
use crate::{runtime, Error, Result};

pub(crate) fn join_error(e: tokio::task::JoinError) -> Error {
    Error::Internal(format!("background task failed: {e}").into())
}

/// A count in [`Client::finishing`], given back when dropped.
pub(crate) struct Finishing(Arc<Inner>);

impl Drop for Finishing {
    fn drop(&mut self) {
        self.0.finishing.send_modify(|n| *n -= 1);
    }
}

/// Watches a client's connection task: if it panics (a bug of ours), nothing would open a new
/// session or tell of a lost one, and every call would wait out its connection timeout, for
/// good. The client fails instead: LOST, and every call fails at once with `Internal` (the
/// panic's message), until it is closed.
fn supervise(task: tokio::task::JoinHandle<()>, inner: std::sync::Weak<Inner>) {
    runtime::spawn(async move {
        let Err(e) = task.await else { return };
        if !e.is_panic() {
            return;
        }
        let e = join_error(e);
        tracing::error!(error = %e, "the client's connection task panicked: the client fails every call");
        if let Some(inner) = inner.upgrade() {
            inner.fail(e.context(
                "the client's connection task panicked; close this client and connect a new one",
            ));
        }
    });
}

pub(crate) struct Config {
    pub(crate) connect_string: String,
    pub(crate) session_timeout: Duration,
    pub(crate) connection_timeout: Duration,
    pub(crate) retry: RetryPolicy,
    /// "" or "/namespace".
    pub(crate) prefix: String,
    auth: Vec<(String, Vec<u8>)>,
    pub(crate) acl: AclProvider,
    /// The provider's default ACL as the wire crate takes it, built once.
    wire_acl: Vec<zk::Acl>,
    can_be_read_only: bool,
    pub(crate) max_request_bytes: usize,
    /// The wire crate's TLS options (they read the PEM inputs for each connection).
    tls: Option<zk::TlsOptions>,
    tls_every_host: bool,
    /// Whether the TLS options present a client certificate.
    tls_client_cert: bool,
    sasl: Option<SaslOptions>,
    /// Follow the ensemble's configuration (Curator's EnsembleTracker).
    pub(crate) track_ensemble: bool,
    /// Who this client is to the servers: a hash of the connect string and every credential
    /// (auth, SASL, the TLS client certificate). Clients of one process with the same identity
    /// may share what they learn of a node (the counters' lanes, `atomic/combiner.rs`); clients
    /// with different ones never do, whatever the ACLs let each of them read.
    pub(crate) identity: u64,
}

/// Counters of the requests this client sent, per operation (for tests and benchmarks: e.g.
/// proving that one release wakes exactly one waiter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestCounts {
    /// `create` requests (parents and namespace included).
    pub create: u64,
    /// `delete` requests.
    pub delete: u64,
    /// `getData` requests.
    pub get_data: u64,
    /// `setData` requests.
    pub set_data: u64,
    /// `exists` requests.
    pub exists: u64,
    /// `getChildren` requests.
    pub get_children: u64,
    /// `sync` requests (sent before looking for a protected node after a reconnect).
    pub sync: u64,
    /// `multi` requests (transactions).
    pub multi: u64,
    /// `addWatch` requests (persistent watches).
    pub add_watch: u64,
    /// `getACL` requests.
    pub get_acl: u64,
    /// `setACL` requests.
    pub set_acl: u64,
    /// `getConfig` requests (reads of `/zookeeper/config`, the ensemble tracker's included).
    pub get_config: u64,
    /// `reconfig` requests.
    pub reconfig: u64,
    /// `removeWatches` requests ([`Client::remove_watches`]).
    pub remove_watches: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) create: AtomicU64,
    pub(crate) delete: AtomicU64,
    pub(crate) get_data: AtomicU64,
    pub(crate) set_data: AtomicU64,
    pub(crate) exists: AtomicU64,
    pub(crate) get_children: AtomicU64,
    pub(crate) sync: AtomicU64,
    pub(crate) multi: AtomicU64,
    pub(crate) add_watch: AtomicU64,
    pub(crate) get_acl: AtomicU64,
    pub(crate) set_acl: AtomicU64,
    pub(crate) get_config: AtomicU64,
    pub(crate) reconfig: AtomicU64,
    pub(crate) remove_watches: AtomicU64,
}

struct Inner {
    cfg: Arc<Config>,
    session: Mutex<Option<zk::Client>>,
    session_id: AtomicI64,
    state: watch::Sender<ConnectionState>,
    events: broadcast::Sender<ConnectionState>,
    /// State listeners and one-shot watch callbacks, in one order.
    dispatcher: Dispatcher<ConnectionState>,
    closed: watch::Sender<bool>,
    is_closed: AtomicBool,
    counters: Counters,
    guaranteed_deletes: AtomicU64,
    /// Work that needs the session and must end before a close ends it ([`Finishing`]).
    finishing: watch::Sender<usize>,
    /// The client's watches: one shared persistent watch per path, the one-shot watches
    /// (`watches.rs`).
    watches: Arc<watches::Watches>,
    /// Why the client has no session and operations fail at once: a refused SASL
    /// authentication (for good), or, after LOST, a new session refused for a TLS certificate
    /// (while the client keeps trying; cleared when a new session opens or an attempt fails
    /// otherwise).
    failure: Mutex<Option<Error>>,
    /// Why the current session's connection attempts failed (for a refusal's message).
    connect_failures: Mutex<Arc<connection::ConnectFailures>>,
    /// The servers to connect to now: the connect string, or the ensemble's members as the
    /// tracker last read them (`track_ensemble`).
    hosts: Mutex<String>,
}

/// A ZooKeeper client (Curator's CuratorFramework). Cheap to clone; all clones share one
/// session. The session closes on [`close`](Client::close), or when the last clone is dropped.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("connect_string", &self.inner.cfg.connect_string)
            .field("namespace", &self.inner.cfg.prefix)
            .field(
                "session_id",
                &format_args!("{:#x}", self.inner.session_id.load(Ordering::Relaxed)),
            )
            .field("state", &self.state())
            .finish()
    }
}

impl Client {
    /// Connects with default options (see [`ClientBuilder`]).
    pub async fn connect(connect_string: &str) -> Result<Client> {
        ClientBuilder::new(connect_string).connect().await
    }

    /// A builder.
    pub fn builder(connect_string: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(connect_string)
    }

    fn start(cfg: Arc<Config>, (zk, states, failures): connection::Opened) -> Client {
        let cfg_hosts = cfg.connect_string.clone();
        let initial = if states.peek_state() == zk::SessionState::ConnectedReadOnly {
            ConnectionState::ReadOnly
        } else {
            ConnectionState::Connected
        };
        let inner = Arc::new(Inner {
            session_id: AtomicI64::new(zk.session_id().0),
            session: Mutex::new(Some(zk)),
            cfg,
            state: watch::channel(initial).0,
            events: broadcast::channel(64).0,
            dispatcher: Dispatcher::new(),
            closed: watch::channel(false).0,
            is_closed: AtomicBool::new(false),
            counters: Counters::default(),
            guaranteed_deletes: AtomicU64::new(0),
            finishing: watch::channel(0).0,
            watches: Arc::new(watches::Watches::default()),
            failure: Mutex::new(None),
            connect_failures: Mutex::new(failures),
            hosts: Mutex::new(cfg_hosts),
        });
        supervise(
            runtime::spawn(connection::manage_connection(
                Arc::downgrade(&inner),
                states,
            )),
            Arc::downgrade(&inner),
        );
        let client = Client { inner };
        if client.inner.cfg.track_ensemble {
            ensemble::track(&client);
        }
        client
    }

    /// The current connection state.
    pub fn state(&self) -> ConnectionState {
        *self.inner.state.borrow()
    }

    /// The current session id (it changes after LOST → RECONNECTED); 0 once closed.
    pub fn session_id(&self) -> i64 {
        self.inner.session_id.load(Ordering::SeqCst)
    }

    /// The negotiated-or-requested session timeout.
    pub fn session_timeout(&self) -> Duration {
        self.inner
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|z| z.session_timeout())
            .unwrap_or(self.inner.cfg.session_timeout)
    }

    /// The connect string this client was built with.
    pub fn connect_string(&self) -> &str {
        &self.inner.cfg.connect_string
    }

    /// The namespace prefix ("" or "/ns").
    pub fn namespace(&self) -> &str {
        &self.inner.cfg.prefix
    }

    /// The connection timeout this client was built with.
    pub fn connection_timeout(&self) -> Duration {
        self.inner.cfg.connection_timeout
    }

    /// The retry policy this client was built with.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.inner.cfg.retry
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed.load(Ordering::SeqCst)
    }

    /// Adds a connection-state listener; returns an id for
    /// [`remove_state_listener`](Self::remove_state_listener). Listeners run on the client's
    /// dispatcher (see [`crate::dispatch`] for the threading guarantee), in order with the
    /// client's one-shot watch callbacks.
    pub fn add_state_listener(
        &self,
        listener: impl Fn(ConnectionState) + Send + Sync + 'static,
    ) -> ListenerId {
        self.inner
            .dispatcher
            .add(move |s: &ConnectionState| listener(*s))
    }

    /// Removes a listener; returns whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out: listener ids are
    /// unique in the process ([`crate::dispatch`]).
    pub fn remove_state_listener(&self, id: ListenerId) -> Result<bool> {
        self.inner.dispatcher.remove(id)
    }

    /// `InvalidArgument` unless `id` is one of this client's state listener ids.
    pub(crate) fn check_listener_id(&self, id: ListenerId) -> Result<()> {
        self.inner.dispatcher.check_id(id)
    }

    /// A stream of the state changes from now on.
    pub fn state_stream(&self) -> StateStream {
        StateStream {
            rx: self.inner.events.subscribe(),
            closed: self.inner.closed.subscribe(),
        }
    }

    /// Waits until the state satisfies `pred` (checked against the current state first), or
    /// `timeout` passes; returns the state, or `Err(Timeout)`.
    pub async fn wait_for_state(
        &self,
        timeout: Duration,
        pred: impl Fn(ConnectionState) -> bool,
    ) -> Result<ConnectionState> {
        let mut rx = self.inner.state.subscribe();
        let fut = async {
            loop {
                let s = *rx.borrow_and_update();
                if pred(s) {
                    return Ok(s);
                }
                if rx.changed().await.is_err() {
                    return Err(Error::closed());
                }
            }
        };
        tokio::time::timeout(timeout, fut)
            .await
            .unwrap_or_else(|_| {
                Err(Error::Timeout(
                    format!("connection state still {} after {timeout:?}", self.state()).into(),
                ))
            })
    }

    /// Curator's `blockUntilConnected(timeout)`: waits until the client is connected
    /// (CONNECTED, RECONNECTED or READ_ONLY; at once if it is now); `Ok(false)` once `timeout`
    /// passes first (`None`: no limit; zero: look once). `Closed` if the client is closed or
    /// closes meanwhile. The faces' `wait_for_state(timeout)`.
    pub async fn block_until_connected(&self, timeout: Option<Duration>) -> Result<bool> {
        if self.is_closed() {
            return Err(Error::closed());
        }
        let mut rx = self.inner.state.subscribe();
        let connected = async {
            loop {
                if rx.borrow_and_update().is_connected() {
                    return Ok(true);
                }
                tokio::select! {
                    r = rx.changed() => if r.is_err() { return Err(Error::closed()) },
                    _ = self.closed() => return Err(Error::closed()),
                }
            }
        };
        match timeout {
            None => connected.await,
            Some(t) => tokio::time::timeout(t, connected)
                .await
                .unwrap_or(Ok(false)),
        }
    }

    /// [`block_until_connected`](Self::block_until_connected), blocking.
    pub fn block_until_connected_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.block_until_connected(timeout))?
    }

    /// The largest request this client sends, in bytes
    /// ([`ClientBuilder::max_request_bytes`]).
    pub fn max_request_bytes(&self) -> usize {
        self.inner.cfg.max_request_bytes
    }

    /// Counts of requests sent so far, per operation.
    pub fn request_counts(&self) -> RequestCounts {
        let c = &self.inner.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RequestCounts {
            create: l(&c.create),
            delete: l(&c.delete),
            get_data: l(&c.get_data),
            set_data: l(&c.set_data),
            exists: l(&c.exists),
            get_children: l(&c.get_children),
            sync: l(&c.sync),
            multi: l(&c.multi),
            add_watch: l(&c.add_watch),
            get_acl: l(&c.get_acl),
            set_acl: l(&c.set_acl),
            get_config: l(&c.get_config),
            reconfig: l(&c.reconfig),
            remove_watches: l(&c.remove_watches),
        }
    }

    /// Guaranteed deletes still being retried in the background (a plain guaranteed delete's,
    /// a lock's or lease's node's, and a persistent node's or service registration's delete on
    /// close or unregister).
    pub fn pending_guaranteed_deletes(&self) -> u64 {
        self.inner.guaranteed_deletes.load(Ordering::SeqCst)
    }

    /// Counts work that needs the session and must end before [`close`](Self::close) ends it
    /// (the put-back of a queue item a dropped take removed), until the guard is dropped.
    pub(crate) fn finishing(&self) -> Finishing {
        self.inner.finishing.send_modify(|n| *n += 1);
        Finishing(self.inner.clone())
    }

    /// Closes the session: ephemeral nodes (locks, latches) vanish at once, waiters get
    /// `Closed`, and every later call gets `Closed`. Closing twice is a no-op. Work that must
    /// end first (the put-back of a queue item a dropped take removed: Ctrl-C, then the close
    /// of a `with` block) is waited for, at most the connection timeout.
    pub async fn close(&self) {
        let mut finishing = self.inner.finishing.subscribe();
        let _ = tokio::time::timeout(
            self.inner.cfg.connection_timeout,
            finishing.wait_for(|n| *n == 0),
        )
        .await;
        if self.inner.is_closed.swap(true, Ordering::SeqCst) {
            return;
        }
        self.inner.closed.send_replace(true);
        let zk = self
            .inner
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.inner.session_id.store(0, Ordering::SeqCst);
        if let Some(zk) = zk {
            let mut states = zk.state_watcher();
            // Ends the session for every handle (wire patch 20): a started cache, a queue
            // item's hold or an in-flight operation holds one too, and the session would live
            // on until the last of them is gone (a cache kept for good: for good). Wait for it
            // so that ephemerals are gone when we return.
            zk.close();
            drop(zk);
            let wait = async {
                while !states.state().is_terminated() {
                    states.changed().await;
                }
            };
            let _ = tokio::time::timeout(self.inner.cfg.connection_timeout, wait).await;
        }
    }

    /// [`close`](Self::close) for the blocking face.
    pub fn close_blocking(&self) {
        let _ = runtime::try_block_on(self.close());
    }

    /// Resolves when the client is closed (for recipes' waits).
    pub(crate) fn closed(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.inner.closed.subscribe();
        async move {
            let _ = rx.wait_for(|c| *c).await;
        }
    }

    /// Why the client has no session and every call fails at once, if so (`AuthFailed`):
    ///
    /// - the servers refused this client's SASL authentication (or require SASL and it has
    ///   none): for good, as Java's AUTH_FAILED; no new session is attempted;
    /// - after LOST, every server refused a TLS certificate (theirs expired, ours expired, a CA
    ///   rotation half done, a wrong clock): the client keeps trying a new session (pauses of
    ///   up to 5 s, the PEM files read again for each attempt, an ERROR log line with the
    ///   reason) and this is `None` again once one opens (RECONNECTED), or while an attempt
    ///   fails for another reason (no server reachable: calls then wait for a connection, as
    ///   after any LOST). A first connect that every server refuses for a certificate still
    ///   fails at once.
    pub fn failure(&self) -> Option<Error> {
        self.inner
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn subscribe_events(&self) -> broadcast::Receiver<ConnectionState> {
        self.inner.events.subscribe()
    }

    pub(crate) fn cfg(&self) -> &Config {
        &self.inner.cfg
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    pub(crate) fn watches(&self) -> &Arc<watches::Watches> {
        &self.inner.watches
    }

    pub(crate) fn downgrade(&self) -> WeakClient {
        WeakClient(Arc::downgrade(&self.inner))
    }
    /// Returns once session `ended` is no longer the client's: it is gone (a new one may be
    /// opening, see [`session`](Self::session)), or the client closed or failed. A persistent
    /// watch whose session ended waits here before it is set again: its terminal event can be
    /// read before the client has seen the expiry, and a set on that session fails
    /// (`SessionExpired`) and waits out a pause before its next try.
    pub(crate) async fn session_after(&self, ended: i64) {
        let mut rx = self.inner.state.subscribe();
        // The id changes before the state is published (`replace_session`), so a change after
        // the subscription is seen by `changed`.
        while !self.is_closed() && self.failure().is_none() && self.session_id() == ended {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// The current session, waiting up to the connection timeout for a connection.
    pub(crate) async fn session(&self) -> Result<Session> {
        let mut rx = self.inner.state.subscribe();
        // A connection timeout too long for the clock (the builder takes any) waits for good.
        let deadline = Instant::now()
            .checked_add(self.inner.cfg.connection_timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 86_400));
        // Not past the deadline of the caller's operation, when one bounds this task.
        let bound = crate::wait::Deadline::bound();
        let (deadline, within) = match bound.instant() {
            Some(b) if b < deadline => (b, "the operation's deadline"),
            _ => (deadline, "the connection timeout"),
        };
        loop {
            if self.is_closed() {
                return Err(Error::closed());
            }
            if let Some(e) = self.failure() {
                return Err(e);
            }
            let connected = rx.borrow_and_update().is_connected();
            if connected {
                if let Some(zk) = self
                    .inner
                    .session
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone()
                {
                    return Ok(Session::new(self.clone(), zk));
                }
            }
            let mut closed = self.inner.closed.subscribe();
            tokio::select! {
                r = rx.changed() => if r.is_err() { return Err(Error::closed()) },
                _ = closed.wait_for(|c| *c) => return Err(Error::closed()),
                _ = tokio::time::sleep_until(deadline.into()) => {
                    return Err(Error::ConnectionLoss(format!(
                        "not connected to ZooKeeper ({}) within {within} (connection timeout {:?})",
                        self.state(), self.inner.cfg.connection_timeout
                    ).into()))
                }
            }
        }
    }

    /// Runs `op` under the retry policy (Curator's RetryLoop): each try gets a connected
    /// [`Session`]; retryable errors (connection loss, operation timeout, session moved) sleep
    /// and try again; session expiry is never retried here. `op` must be safe to repeat
    /// (idempotent, or made so — see [`Client::create_protected`]).
    pub(crate) async fn retry<T, F, Fut>(&self, mut op: F) -> Result<T>
    where
        F: FnMut(Session) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let start = Instant::now();
        let mut retries = 0u32;
        loop {
            let result = match self.session().await {
                Ok(s) => op(s).await,
                Err(e) => Err(e),
            };
            match result {
                Err(e) if e.is_retryable() => {
                    // The caller's operation has its own deadline (`Deadline::bounding`): past
                    // it, the policy's next pause is not waited for.
                    let bound = crate::wait::Deadline::bound();
                    if bound.passed() {
                        tracing::debug!(retries, error = %e, "the operation's deadline passed: not retried");
                        return Err(e);
                    }
                    match self.inner.cfg.retry.next_sleep(retries, start.elapsed()) {
                        Some(sleep) => {
                            retries += 1;
                            tracing::debug!(attempt = retries, delay = ?sleep, error = %e, "retrying after a connection loss");
                            tokio::select! {
                                _ = crate::wait::Deadline::after(Some(sleep)).earliest(bound).sleep() => {},
                                _ = self.closed() => return Err(Error::closed()),
                            }
                        }
                        None => {
                            tracing::warn!(retries, elapsed = ?start.elapsed(), error = %e, "the retry policy gave up");
                            return Err(e);
                        }
                    }
                }
                other => return other,
            }
        }
    }

    /// The id and password of the current session (ZooKeeper's `getSessionId` and
    /// `getSessionPasswd`), or `None` while there is none. With them another connection can
    /// join the session — which is how tests expire it on the server (Curator's KillSession,
    /// `zkrecipes_testing::expire_session`). Treat the password as a secret.
    pub fn session_credentials(&self) -> Option<(i64, Vec<u8>)> {
        let zk = self
            .inner
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        let session = zk.session();
        Some((session.id().0, session.password().to_vec()))
    }

    /// A chroot in the connect string must exist: without it every operation would fail with
    /// NoNode (ZooKeeper lets the session open anyway). Closes the client and says so.
    async fn check_chroot(&self) -> Result<()> {
        let Some(chroot) = self
            .connect_string()
            .find('/')
            .map(|i| &self.connect_string()[i..])
            .filter(|c| *c != "/")
        else {
            return Ok(());
        };
        match self.retry(|s| async move { s.chroot_exists().await }).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.close().await;
                Err(Error::NoNode(
                    format!("the connect string's chroot {chroot} does not exist on the server; create it first (e.g. with zkCli: create {chroot})").into(),
                ))
            }
            Err(e) => {
                self.close().await;
                Err(e.context(format!("checking the chroot {chroot}")))
            }
        }
    }

    /// Whether the current session heard from a server recently enough to vouch for what it
    /// holds, checked at call time (the state, published by a task, may lag: a process frozen
    /// by SIGSTOP or a long pause wakes up before its client's tasks notice the silence).
    /// Standard policy: within the read timeout (beyond it the connection counts as lost);
    /// session policy: within the session timeout (beyond it the server expires the session).
    pub(crate) fn heard_recently(&self, policy: LostPolicy) -> bool {
        let limit = match policy {
            LostPolicy::Standard => connection::read_timeout(&self.inner.cfg),
            LostPolicy::Session => self.session_timeout(),
        };
        self.inner
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|zk| zk.last_heard().elapsed() < limit)
    }

    /// The caller's path of a server-side path (namespace removed).
    pub(crate) fn user_path(&self, full: &str) -> String {
        let prefix = &self.cfg().prefix;
        match full.strip_prefix(prefix.as_str()) {
            Some("") => "/".into(),
            Some(rest) if rest.starts_with('/') || prefix.is_empty() => rest.to_string(),
            _ => full.to_string(),
        }
    }

    /// The server-side path of a caller's path (namespace applied): the caller's own string
    /// when there is no namespace (no copy per request).
    pub(crate) fn full_path<'p>(&self, path: &'p str) -> std::borrow::Cow<'p, str> {
        let prefix = &self.cfg().prefix;
        if prefix.is_empty() {
            path.into()
        } else if path == "/" {
            prefix.clone().into()
        } else {
            format!("{prefix}{path}").into()
        }
    }

    /// Calls `f` with `watch`'s event on the client's dispatcher ([`crate::dispatch`]), in
    /// order with the state listeners: the callback form of a one-shot watch, for the faces.
    /// Nothing is called once the client is dropped; a closed client's watches fire with
    /// `SESSION_ENDED`.
    pub fn on_watch(&self, watch: Watch, f: impl FnOnce(NodeEvent) + Send + 'static) {
        let weak = self.downgrade();
        runtime::spawn(async move {
            let event = watch.changed().await;
            if let Some(client) = weak.upgrade() {
                client.inner.dispatcher.call(move || f(event));
            }
        });
    }

    /// Runs `f` on the client's dispatcher ([`crate::dispatch`]), after the callbacks already
    /// queued: for a face that delivers something of its own in order with the client's
    /// events (the first CONNECTED to listeners registered before the client existed).
    pub fn run_on_dispatcher(&self, f: impl FnOnce() + Send + 'static) {
        self.inner.dispatcher.call(f);
    }
}

/// A weak handle for background tasks that must not keep a client alive.
#[derive(Clone)]
pub(crate) struct WeakClient(Weak<Inner>);

impl WeakClient {
    pub(crate) fn upgrade(&self) -> Option<Client> {
        self.0.upgrade().map(|inner| Client { inner })
    }
}

impl Inner {
    fn connect_failures(&self) -> Arc<connection::ConnectFailures> {
        self.connect_failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_connect_failures(&self, failures: Arc<connection::ConnectFailures>) {
        *self
            .connect_failures
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = failures;
    }

    /// No session, and none coming soon: LOST (once), and every operation fails with `e` until
    /// [`clear_failure`](Self::clear_failure) (for good unless the caller keeps trying).
    fn fail(&self, e: Error) {
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        self.replace_session(None);
        if *self.state.borrow() != ConnectionState::Lost {
            self.publish(ConnectionState::Lost);
        } else {
            // Wake waiters of `session()`, which look at `failure` on each state change.
            self.state.send_replace(ConnectionState::Lost);
        }
    }

    /// Undoes [`fail`](Self::fail): a new session opened (called before it is published), or
    /// the last attempt at one failed for another reason than a refusal.
    fn clear_failure(&self) {
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn publish(&self, s: ConnectionState) {
        self.state.send_replace(s);
        let _ = self.events.send(s);
        self.dispatcher.emit(s);
    }

    fn replace_session(&self, zk: Option<zk::Client>) {
        let id = zk.as_ref().map(|z| z.session_id().0).unwrap_or(0);
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        // Read under the lock `close` takes the session under, after setting the flag: a new
        // session made as the client closed is either taken and ended by `close`, or ended here.
        if self.is_closed.load(Ordering::SeqCst) {
            if let Some(zk) = zk {
                zk.close();
            }
            return;
        }
        *session = zk;
        self.session_id.store(id, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection task that panics fails the client (LOST, every call `Internal` with the
    /// panic's message, at once) instead of leaving calls to wait for a session that nothing
    /// will open.
    #[test]
    fn a_panicking_connection_task_fails_the_client_instead_of_hanging_it() {
        let server = zkrecipes_testing::TestingServer::start();
        let client = ClientBuilder::new(server.connect_string())
            .connection_timeout(Duration::from_secs(30))
            .connect_blocking()
            .unwrap();
        let mut states = client.state_stream();
        supervise(
            runtime::spawn(async { panic!("boom in the connection task") }),
            Arc::downgrade(&client.inner),
        );
        let state = runtime::block_on(async {
            tokio::time::timeout(Duration::from_secs(20), states.next()).await
        });
        assert_eq!(state, Ok(Some(ConnectionState::Lost)));
        let start = Instant::now();
        let e = client.exists_blocking("/").unwrap_err();
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the call waited {:?}",
            start.elapsed()
        );
        assert_eq!(e.kind(), crate::ErrorKind::Internal, "{e}");
        assert!(
            e.to_string().contains("boom in the connection task")
                && e.to_string().contains("close this client"),
            "{e}"
        );
        client.close_blocking();
    }

    /// A request handed to the wire client while it reconnects (one sent just as the
    /// connection went, the client still looking connected to the recipe) fails with a
    /// connection loss at the next failed connection attempt, as Java's client fails its
    /// outgoing queue. It used to wait in the wire client's channel until a connection was
    /// back or the session given up (7/5 of its timeout, then `SessionExpired`): far past the
    /// deadline of the operation that sent it (a barrier's 1 s enter answered after 42 s, and
    /// with an expiry the session did not have).
    #[test]
    fn a_request_queued_while_reconnecting_fails_at_the_next_failed_attempt() {
        let server = zkrecipes_testing::TestingServer::start();
        let proxy = zkrecipes_testing::FaultProxy::start(&server.connect_string());
        let client = ClientBuilder::new(proxy.connect_string())
            .session_timeout(Duration::from_secs(10))
            .connection_timeout(Duration::from_secs(4))
            .connect_blocking()
            .unwrap();
        let session = client.session_id();
        let zk = client
            .inner
            .session
            .lock()
            .unwrap()
            .clone()
            .expect("a wire client");
        // Every connection attempt fails at once (accepted, then closed) until restored.
        proxy.cut();
        let deadline = Instant::now() + Duration::from_secs(10);
        while client.state().is_connected() {
            assert!(Instant::now() < deadline, "the client never saw the cut");
            std::thread::sleep(Duration::from_millis(10));
        }
        let sent = Instant::now();
        let r = runtime::block_on(async {
            tokio::time::timeout(Duration::from_secs(5), zk.get_data("/")).await
        });
        assert!(
            matches!(r, Ok(Err(zk::Error::ConnectionLoss))),
            "after {:?}: {r:?}",
            sent.elapsed()
        );
        // Nothing else changed: the connection comes back on the same session.
        proxy.restore();
        client.exists_blocking("/").unwrap();
        assert_eq!(client.session_id(), session);
        client.close_blocking();
    }
}
