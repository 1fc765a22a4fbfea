//! The client framework: Curator's CuratorFramework essentials on `zookeeper-client`.
//!
//! A [`Client`] owns one ZooKeeper session at a time. When the session is lost (expired on the
//! server, or SUSPENDED for the negotiated session timeout) it reports LOST and opens a new
//! session, reporting RECONNECTED, as Curator does. Operations run under the retry policy and
//! wait (up to the connection timeout) for a connection before each try.

mod ops;
mod state;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc, watch};
use zookeeper_client as zk;

pub(crate) use self::ops::ProtectedCleanup;
pub use self::ops::{
    CreateMode, CreateOptions, Created, DeleteOptions, NodeEvent, NodeEventKind, Watch,
};
pub use self::state::{ConnectionState, StateStream};
pub use zookeeper_client::{Acl, AuthId, Permission, Stat};

use crate::retry::RetryPolicy;
use crate::{path, runtime, Error, Result};

/// A connection-state listener. Listeners of one client run one at a time, in order, on a
/// library thread (never on the caller's thread, never concurrently with each other).
pub type StateListener = Arc<dyn Fn(ConnectionState) + Send + Sync>;

/// Builder for a [`Client`] (Curator's CuratorFrameworkFactory.builder()).
#[derive(Clone, Debug)]
pub struct ClientBuilder {
    connect_string: String,
    session_timeout: Duration,
    connection_timeout: Duration,
    retry: RetryPolicy,
    namespace: Option<String>,
    auth: Vec<(String, Vec<u8>)>,
    acl: Vec<Acl>,
    can_be_read_only: bool,
}

impl ClientBuilder {
    /// A builder for `host:port[,host:port...][/chroot]`, with API.md's defaults: session
    /// timeout 60 s, connection timeout 15 s, exponential backoff (1 s base, 3 retries), open ACL.
    pub fn new(connect_string: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            connect_string: connect_string.into(),
            session_timeout: Duration::from_secs(60),
            connection_timeout: Duration::from_secs(15),
            retry: RetryPolicy::default(),
            namespace: None,
            auth: Vec::new(),
            acl: vec![Acl::new(Permission::ALL, AuthId::anyone())],
            can_be_read_only: false,
        }
    }

    /// Session timeout asked of the server (the server may negotiate it into its bounds).
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long to wait for a connection: at start, and before each try of an operation.
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// The retry policy for operations.
    pub fn retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Curator's namespace: every path is relative to `/namespace` (created on demand).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Adds authentication, e.g. `("digest", b"user:password")`.
    pub fn auth(mut self, scheme: impl Into<String>, credentials: impl Into<Vec<u8>>) -> Self {
        self.auth.push((scheme.into(), credentials.into()));
        self
    }

    /// The ACL given to every node this client creates (default: world:anyone, all).
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = acl;
        self
    }

    /// Allows connecting to a read-only server (state READ_ONLY).
    pub fn can_be_read_only(mut self, yes: bool) -> Self {
        self.can_be_read_only = yes;
        self
    }

    fn validate(&self) -> Result<String> {
        validate_connect_string(&self.connect_string)?;
        if self.session_timeout.is_zero() {
            return Err(Error::invalid("session timeout must be positive"));
        }
        if self.session_timeout > Duration::from_millis(i32::MAX as u64) {
            return Err(Error::invalid("session timeout must be below 2^31 ms"));
        }
        if self.connection_timeout.is_zero() {
            return Err(Error::invalid("connection timeout must be positive"));
        }
        if self.acl.is_empty() {
            return Err(Error::invalid(
                "the ACL list for created nodes must not be empty",
            ));
        }
        for (scheme, _) in &self.auth {
            if scheme.is_empty() {
                return Err(Error::invalid("auth scheme must not be empty"));
            }
        }
        self.retry.validate()?;
        let prefix = match self.namespace.as_deref() {
            None | Some("") => String::new(),
            Some(ns) => {
                let p = if ns.starts_with('/') {
                    ns.to_string()
                } else {
                    format!("/{ns}")
                };
                path::validate_path(&p)
                    .map_err(|e| Error::invalid(format!("namespace {ns:?}: {}", e.message())))?;
                if p == "/" {
                    String::new()
                } else {
                    p
                }
            }
        };
        Ok(prefix)
    }

    /// Connects: validates every option, then waits up to the connection timeout for a session.
    pub async fn connect(self) -> Result<Client> {
        let prefix = self.validate()?;
        let cfg = Arc::new(Config {
            connect_string: self.connect_string,
            session_timeout: self.session_timeout,
            connection_timeout: self.connection_timeout,
            retry: self.retry,
            prefix,
            auth: self.auth,
            acl: self.acl,
            can_be_read_only: self.can_be_read_only,
        });
        // The session task of zookeeper-client is spawned on the current runtime: make sure that
        // is ours, whatever runtime the caller polls this future on.
        let (zk, states) = runtime::handle()
            .spawn(open_session(cfg.clone()))
            .await
            .map_err(join_error)??;
        Ok(Client::start(cfg, zk, states))
    }

    /// [`connect`](Self::connect) for the blocking face.
    pub fn connect_blocking(self) -> Result<Client> {
        runtime::try_block_on(self.connect())?
    }
}

pub(crate) fn join_error(e: tokio::task::JoinError) -> Error {
    Error::Internal(format!("background task failed: {e}"))
}

/// Checks `host:port[,host:port...][/chroot]`.
pub fn validate_connect_string(s: &str) -> Result<()> {
    let bad = |why: String| {
        Err(Error::invalid(format!(
            "invalid connect string {s:?}: {why}"
        )))
    };
    if s.trim().is_empty() {
        return bad("it is empty; expected host:port[,host:port...][/chroot]".into());
    }
    let (hosts, chroot) = match s.find('/') {
        Some(i) => (&s[..i], Some(&s[i..])),
        None => (s, None),
    };
    if let Some(chroot) = chroot {
        if chroot != "/" {
            if let Err(e) = path::validate_path(chroot) {
                return bad(format!("bad chroot: {}", e.message()));
            }
        }
    }
    if hosts.is_empty() {
        return bad("no host before the chroot".into());
    }
    for host in hosts.split(',') {
        let host = host.trim();
        if host.is_empty() {
            return bad("an empty host between commas".into());
        }
        let (name, port) = if let Some(rest) = host.strip_prefix('[') {
            match rest.split_once(']') {
                Some((n, "")) => (n, None),
                Some((n, tail)) if tail.starts_with(':') => (n, Some(&tail[1..])),
                _ => return bad(format!("bad IPv6 host {host:?} (expected [addr]:port)")),
            }
        } else {
            match host.rsplit_once(':') {
                Some((n, p)) => (n, Some(p)),
                None => (host, None),
            }
        };
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return bad(format!("bad host name in {host:?}"));
        }
        if let Some(port) = port {
            match port.parse::<u32>() {
                Ok(p) if (1..=65535).contains(&p) => {}
                _ => return bad(format!("bad port {port:?} in {host:?} (expected 1..65535)")),
            }
        }
    }
    Ok(())
}

pub(crate) struct Config {
    pub(crate) connect_string: String,
    pub(crate) session_timeout: Duration,
    pub(crate) connection_timeout: Duration,
    pub(crate) retry: RetryPolicy,
    /// "" or "/namespace".
    pub(crate) prefix: String,
    auth: Vec<(String, Vec<u8>)>,
    pub(crate) acl: Vec<Acl>,
    can_be_read_only: bool,
}

/// Counters of the requests this client sent, per operation (for tests and benchmarks: e.g.
/// proving that one release wakes exactly one waiter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestCounts {
    pub create: u64,
    pub delete: u64,
    pub get_data: u64,
    pub set_data: u64,
    pub exists: u64,
    pub get_children: u64,
    /// `sync` requests (sent before looking for a protected node after a reconnect).
    pub sync: u64,
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
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

struct Inner {
    cfg: Arc<Config>,
    session: Mutex<Option<zk::Client>>,
    session_id: AtomicI64,
    state: watch::Sender<ConnectionState>,
    events: broadcast::Sender<ConnectionState>,
    dispatch: mpsc::UnboundedSender<ConnectionState>,
    listeners: Mutex<Vec<(u64, StateListener)>>,
    next_listener: AtomicU64,
    closed: watch::Sender<bool>,
    is_closed: AtomicBool,
    counters: Counters,
    guaranteed_deletes: AtomicU64,
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

async fn open_session(cfg: Arc<Config>) -> Result<(zk::Client, zk::StateWatcher)> {
    let mut connector = zk::Client::connector()
        .with_session_timeout(cfg.session_timeout)
        .with_readonly(cfg.can_be_read_only);
    for (scheme, cred) in &cfg.auth {
        connector = connector.with_auth(scheme, cred);
    }
    match tokio::time::timeout(
        cfg.connection_timeout,
        connector.connect(&cfg.connect_string),
    )
    .await
    {
        Err(_) => Err(Error::Timeout(format!(
            "could not connect to ZooKeeper at {} within the connection timeout of {:?}",
            cfg.connect_string, cfg.connection_timeout
        ))),
        Ok(Err(e)) => Err(match e {
            zk::Error::BadArguments(_) | zk::Error::NoHosts => {
                Error::invalid(format!("connect string {:?}: {e}", cfg.connect_string))
            }
            e => Error::from_zk(e, "connect to", &cfg.connect_string),
        }),
        Ok(Ok(client)) => {
            let states = client.state_watcher();
            Ok((client, states))
        }
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

    fn start(cfg: Arc<Config>, zk: zk::Client, states: zk::StateWatcher) -> Client {
        let initial = if states.peek_state() == zk::SessionState::ConnectedReadOnly {
            ConnectionState::ReadOnly
        } else {
            ConnectionState::Connected
        };
        let (dispatch_tx, dispatch_rx) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            session_id: AtomicI64::new(zk.session_id().0),
            session: Mutex::new(Some(zk)),
            cfg,
            state: watch::channel(initial).0,
            events: broadcast::channel(64).0,
            dispatch: dispatch_tx,
            listeners: Mutex::new(Vec::new()),
            next_listener: AtomicU64::new(1),
            closed: watch::channel(false).0,
            is_closed: AtomicBool::new(false),
            counters: Counters::default(),
            guaranteed_deletes: AtomicU64::new(0),
        });
        runtime::spawn(dispatch_listeners(Arc::downgrade(&inner), dispatch_rx));
        runtime::spawn(manage_connection(Arc::downgrade(&inner), states));
        Client { inner }
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

    /// Adds a connection-state listener; returns an id for [`remove_state_listener`](Self::remove_state_listener).
    pub fn add_state_listener(
        &self,
        listener: impl Fn(ConnectionState) + Send + Sync + 'static,
    ) -> u64 {
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        self.inner
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, Arc::new(listener)));
        id
    }

    /// Removes a listener; returns whether it was there.
    pub fn remove_state_listener(&self, id: u64) -> bool {
        let mut l = self
            .inner
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let before = l.len();
        l.retain(|(i, _)| *i != id);
        l.len() != before
    }

    /// A stream of the state changes from now on.
    pub fn state_stream(&self) -> StateStream {
        StateStream {
            rx: self.inner.events.subscribe(),
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
                Err(Error::Timeout(format!(
                    "connection state still {} after {timeout:?}",
                    self.state()
                )))
            })
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
        }
    }

    /// Guaranteed deletes still being retried in the background.
    pub fn pending_guaranteed_deletes(&self) -> u64 {
        self.inner.guaranteed_deletes.load(Ordering::SeqCst)
    }

    /// Closes the session: ephemeral nodes (locks, latches) vanish at once, waiters get
    /// `Closed`, and every later call gets `Closed`. Closing twice is a no-op.
    pub async fn close(&self) {
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
            drop(zk);
            // The session sends CloseSession once the last handle is gone (in-flight operations
            // hold one briefly); wait for it so that ephemerals are gone when we return.
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

    #[allow(dead_code)]
    pub(crate) fn subscribe_events(&self) -> broadcast::Receiver<ConnectionState> {
        self.inner.events.subscribe()
    }

    pub(crate) fn cfg(&self) -> &Config {
        &self.inner.cfg
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    pub(crate) fn downgrade(&self) -> WeakClient {
        WeakClient(Arc::downgrade(&self.inner))
    }

    /// The current session's handle, waiting up to the connection timeout for a connection.
    pub(crate) async fn zk(&self) -> Result<zk::Client> {
        let mut rx = self.inner.state.subscribe();
        let deadline = Instant::now() + self.inner.cfg.connection_timeout;
        loop {
            if self.is_closed() {
                return Err(Error::closed());
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
                    return Ok(zk);
                }
            }
            let mut closed = self.inner.closed.subscribe();
            tokio::select! {
                r = rx.changed() => if r.is_err() { return Err(Error::closed()) },
                _ = closed.wait_for(|c| *c) => return Err(Error::closed()),
                _ = tokio::time::sleep_until(deadline.into()) => {
                    return Err(Error::ConnectionLoss(format!(
                        "not connected to ZooKeeper ({}) within the connection timeout of {:?}",
                        self.state(), self.inner.cfg.connection_timeout
                    )))
                }
            }
        }
    }

    /// Runs `op` under the retry policy: each try gets a connected session handle; retryable
    /// errors (connection loss, operation timeout, session moved) sleep and try again; session
    /// expiry is never retried here. `op` must be safe to repeat (idempotent, or made so).
    pub(crate) async fn retry<T, F, Fut>(&self, mut op: F) -> Result<T>
    where
        F: FnMut(zk::Client) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let start = Instant::now();
        let mut retries = 0u32;
        loop {
            let result = match self.zk().await {
                Ok(zk) => op(zk).await,
                Err(e) => Err(e),
            };
            match result {
                Err(e) if e.is_retryable() => {
                    match self.inner.cfg.retry.next_sleep(retries, start.elapsed()) {
                        Some(sleep) => {
                            retries += 1;
                            tokio::select! {
                                _ = tokio::time::sleep(sleep) => {},
                                _ = self.closed() => return Err(Error::closed()),
                            }
                        }
                        None => return Err(e),
                    }
                }
                other => return other,
            }
        }
    }

    /// Expires this client's session on the server, as Curator's test KillSession does: a
    /// second connection joins the session and closes it. For fault tests. Returns once this
    /// client has seen the session end (`LOST`): its ephemeral nodes are gone then.
    ///
    /// The join (a ConnectRequest with the session's id and password) and the CloseSession are
    /// written together, before any reply: the server holds the second request until the
    /// session is re-attached, so this client cannot get back onto the session in between (a
    /// close from a connection that no longer owns the session would be refused).
    pub async fn expire_session_for_testing(&self) -> Result<()> {
        let zk = self.zk().await?;
        let (id, password) = (zk.session().id().0, zk.session().password().to_vec());
        drop(zk);
        let events = self.subscribe_events();
        let servers = server_addresses(&self.inner.cfg.connect_string);
        let limit = self
            .inner
            .cfg
            .connection_timeout
            .max(Duration::from_secs(30));
        let weak = self.downgrade();
        // An owned task that never touches `self`: a state listener may drop this client's last
        // handle (C: zkr_client_free from the LOST callback) while we wait for LOST.
        runtime::spawn(expire_session(weak, events, servers, id, password, limit))
            .await
            .map_err(join_error)?
    }
}

async fn expire_session(
    weak: WeakClient,
    mut events: broadcast::Receiver<ConnectionState>,
    servers: Vec<String>,
    id: i64,
    password: Vec<u8>,
    limit: Duration,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    let mut last_error = String::from("no server in the connect string");
    'closed: loop {
        for server in &servers {
            let close = close_session(server, id, &password);
            match tokio::time::timeout(Duration::from_secs(5), close).await {
                Ok(Ok(())) => break 'closed,
                Ok(Err(e)) => last_error = format!("{server}: {e}"),
                Err(_) => last_error = format!("{server}: no answer within 5 s"),
            }
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout(format!(
                "could not expire session {id:#x}: {last_error}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Wait until the client has seen the session go (it reconnects and hears "expired").
    loop {
        let moved_on = weak.upgrade().map_or(true, |c| {
            c.is_closed() || !matches!(c.session_id(), 0) && c.session_id() != id
        });
        if moved_on {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, events.recv()).await {
            Ok(Ok(ConnectionState::Lost)) | Ok(Err(broadcast::error::RecvError::Closed)) => {
                return Ok(())
            }
            Ok(_) => {}
            Err(_) => {
                return Err(Error::Timeout(format!(
                    "session {id:#x} was closed on the server, but the client did not report LOST in time"
                )))
            }
        }
    }
}

/// `host:port` of each server of a connect string (chroot removed).
fn server_addresses(connect_string: &str) -> Vec<String> {
    let hosts = connect_string.split('/').next().unwrap_or_default();
    hosts
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.contains(':') {
                s.to_string()
            } else {
                format!("{s}:2181")
            }
        })
        .collect()
}

/// Joins session `id` on `server` and closes it, in one pipelined exchange; `Ok` too when the
/// server says the session is already gone.
async fn close_session(server: &str, id: i64, password: &[u8]) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(server).await?;
    let frame = |body: &[u8]| [&(body.len() as i32).to_be_bytes()[..], body].concat();
    let mut connect = Vec::with_capacity(64);
    connect.extend(0i32.to_be_bytes()); // protocol version
    connect.extend(0i64.to_be_bytes()); // last zxid seen
    connect.extend(10_000i32.to_be_bytes()); // session timeout, ms
    connect.extend(id.to_be_bytes());
    connect.extend((password.len() as i32).to_be_bytes());
    connect.extend(password);
    connect.push(0); // not read-only
    let close = [1i32.to_be_bytes(), (-11i32).to_be_bytes()].concat(); // xid 1, CloseSession
    stream
        .write_all(&[frame(&connect), frame(&close)].concat())
        .await?;
    // ConnectResponse: protocol version, negotiated timeout (0: no such session), id, password.
    let reply = read_frame(&mut stream).await?;
    let timeout = reply
        .get(4..8)
        .map(|b| i32::from_be_bytes(b.try_into().expect("4 bytes")))
        .ok_or(std::io::ErrorKind::InvalidData)?;
    if timeout <= 0 {
        return Ok(());
    }
    // The CloseSession's reply comes once the session is closed.
    read_frame(&mut stream).await.map(drop)
}

async fn read_frame(stream: &mut tokio::net::TcpStream) -> std::io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let len = stream.read_i32().await?;
    let mut body = vec![0; len.clamp(0, 1 << 20) as usize];
    stream.read_exact(&mut body).await?;
    Ok(body)
}

/// ZooKeeper's permission bits as they travel on the wire (READ 1, WRITE 2, CREATE 4,
/// DELETE 8, ADMIN 16) as a [`Permission`]; `InvalidArgument` unless `bits` is a non-empty
/// combination of them (1..=31). For the faces, which take ACLs as plain numbers.
pub fn permission_from_bits(bits: u32) -> Result<Permission> {
    if bits == 0 || bits > 31 {
        return Err(Error::invalid(format!(
            "acl perms {bits} is not a set of ZooKeeper permission bits (1..31)"
        )));
    }
    let all = [
        Permission::READ,
        Permission::WRITE,
        Permission::CREATE,
        Permission::DELETE,
        Permission::ADMIN,
    ];
    Ok(all
        .into_iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .fold(Permission::NONE, |acc, (_, p)| acc | p))
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
    fn publish(&self, s: ConnectionState) {
        self.state.send_replace(s);
        let _ = self.events.send(s);
        let _ = self.dispatch.send(s);
    }

    fn replace_session(&self, zk: Option<zk::Client>) {
        let id = zk.as_ref().map(|z| z.session_id().0).unwrap_or(0);
        *self.session.lock().unwrap_or_else(|e| e.into_inner()) = zk;
        self.session_id.store(id, Ordering::SeqCst);
    }
}

async fn dispatch_listeners(inner: Weak<Inner>, mut rx: mpsc::UnboundedReceiver<ConnectionState>) {
    while let Some(state) = rx.recv().await {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let listeners: Vec<StateListener> = strong
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        drop(strong);
        if listeners.is_empty() {
            continue;
        }
        // Listeners may block (a Python callback waiting for the GIL): run them off the workers.
        let _ = runtime::spawn_callback(move || {
            for l in listeners {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l(state)));
            }
        })
        .await;
    }
}

/// Follows the session's states and turns them into Curator's, replacing a lost session.
async fn manage_connection(inner: Weak<Inner>, mut states: zk::StateWatcher) {
    let mut suspended_since: Option<Instant> = None;
    loop {
        let (closed_rx, session_timeout) = match inner.upgrade() {
            Some(i) => (
                i.closed.subscribe(),
                i.session
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .map(|z| z.session_timeout())
                    .unwrap_or(i.cfg.session_timeout),
            ),
            None => return,
        };
        let mut closed_rx = closed_rx;
        if *closed_rx.borrow() {
            return;
        }
        let lost_deadline = suspended_since.map(|t| t + session_timeout);
        let lost = tokio::select! {
            s = states.changed() => {
                let Some(i) = inner.upgrade() else { return };
                match s {
                    zk::SessionState::Disconnected => {
                        suspended_since.get_or_insert_with(Instant::now);
                        i.publish(ConnectionState::Suspended);
                        false
                    },
                    zk::SessionState::SyncConnected => {
                        suspended_since = None;
                        i.publish(ConnectionState::Reconnected);
                        false
                    },
                    zk::SessionState::ConnectedReadOnly => {
                        suspended_since = None;
                        i.publish(ConnectionState::ReadOnly);
                        false
                    },
                    zk::SessionState::Closed => return,
                    zk::SessionState::Expired | zk::SessionState::AuthFailed => true,
                }
            },
            _ = async { match lost_deadline { Some(d) => tokio::time::sleep_until(d.into()).await, None => std::future::pending().await } } => true,
            _ = closed_rx.wait_for(|c| *c) => return,
        };
        if !lost {
            continue;
        }
        // LOST: the session is gone (or presumed gone after SUSPENDED for a whole session
        // timeout, as Curator 3+ decides). Drop it and open a new one.
        suspended_since = None;
        {
            let Some(i) = inner.upgrade() else { return };
            i.replace_session(None);
            i.publish(ConnectionState::Lost);
        }
        let mut backoff = Duration::from_millis(50);
        loop {
            let Some(i) = inner.upgrade() else { return };
            if i.is_closed.load(Ordering::SeqCst) {
                return;
            }
            let cfg = i.cfg.clone();
            drop(i);
            match open_session(cfg).await {
                Ok((zk, new_states)) => {
                    let Some(i) = inner.upgrade() else { return };
                    if i.is_closed.load(Ordering::SeqCst) {
                        return;
                    }
                    i.replace_session(Some(zk));
                    states = new_states;
                    i.publish(
                        if states.peek_state() == zk::SessionState::ConnectedReadOnly {
                            ConnectionState::ReadOnly
                        } else {
                            ConnectionState::Reconnected
                        },
                    );
                    break;
                }
                Err(_) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
    }
}

#[cfg(test)]
mod permission_tests {
    use super::*;

    #[test]
    fn permission_bits_map_to_zookeepers_and_bad_ones_are_refused() {
        assert_eq!(permission_from_bits(1).unwrap(), Permission::READ);
        assert_eq!(permission_from_bits(31).unwrap(), Permission::ALL);
        assert_eq!(
            permission_from_bits(1 | 8).unwrap(),
            Permission::READ | Permission::DELETE
        );
        for bad in [0, 32, u32::MAX] {
            assert!(matches!(
                permission_from_bits(bad),
                Err(Error::InvalidArgument(_))
            ));
        }
    }
}
