//! `zkrecipes._native.Client`: Curator's CuratorFramework for Python — options, start/close,
//! connection-state listeners and the plain operations (with asyncio twins).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use zkrecipes::client::{validate_connect_string, Acl, Permission};
use zkrecipes::client::{NodeEventKind, Watch};
use zkrecipes::{
    Client, ClientBuilder, ConnectionState, CreateMode, CreateOptions, DeleteOptions, RetryPolicy,
};

use crate::bridge::{self, duration};
use crate::errors::{self, IntoPyResult};
use crate::local::Local;

/// The stat of a node (ZooKeeper's Stat), immutable.
#[pyclass(frozen, get_all, eq, module = "zkrecipes", name = "Stat")]
#[derive(Clone, PartialEq, Eq)]
pub struct PyStat {
    /// The zxid of the change that created the node (a lock's fencing token).
    czxid: i64,
    /// The zxid of the change that last modified the node.
    mzxid: i64,
    /// The zxid of the change that last modified the node's children.
    pzxid: i64,
    /// Creation time, milliseconds since the epoch.
    ctime: i64,
    /// Last modification time, milliseconds since the epoch.
    mtime: i64,
    /// Data version (number of changes to the data).
    version: i32,
    /// Children version.
    cversion: i32,
    /// ACL version.
    aversion: i32,
    /// Session id of the owner if the node is ephemeral, else 0.
    ephemeral_owner: i64,
    /// Length of the data.
    data_length: i32,
    /// Number of children.
    num_children: i32,
}

#[pymethods]
impl PyStat {
    fn __repr__(&self) -> String {
        format!(
            "Stat(czxid={}, mzxid={}, pzxid={}, ctime={}, mtime={}, version={}, cversion={}, aversion={}, ephemeral_owner={:#x}, data_length={}, num_children={})",
            self.czxid, self.mzxid, self.pzxid, self.ctime, self.mtime, self.version, self.cversion, self.aversion,
            self.ephemeral_owner, self.data_length, self.num_children
        )
    }
}

impl From<zkrecipes::Stat> for PyStat {
    fn from(s: zkrecipes::Stat) -> PyStat {
        PyStat {
            czxid: s.czxid,
            mzxid: s.mzxid,
            pzxid: s.pzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            ephemeral_owner: s.ephemeral_owner,
            data_length: s.data_length,
            num_children: s.num_children,
        }
    }
}

type Listeners = Arc<Mutex<Vec<(u64, Py<PyAny>)>>>;

enum Slot {
    NotStarted,
    Started(Local<Client>),
    Closed,
}

/// The native client. The hand-written `zkrecipes.Client` wraps it.
#[pyclass(frozen, module = "zkrecipes._native", name = "Client")]
pub struct PyClient {
    builder: ClientBuilder,
    hosts: String,
    configured_session_timeout: f64,
    slot: Mutex<Slot>,
    listeners: Listeners,
    next_listener: AtomicU64,
}

pub fn retry_policy(py: Python<'_>, spec: (String, f64, f64, u32)) -> PyResult<RetryPolicy> {
    let (kind, a, b, n) = spec;
    let policy = match kind.as_str() {
        "exponential_backoff" => RetryPolicy::ExponentialBackoff {
            base_sleep: duration(py, "base_sleep", a)?,
            max_retries: n,
            max_sleep: duration(py, "max_sleep", b)?,
        },
        "bounded_exponential_backoff" => RetryPolicy::BoundedExponentialBackoff {
            base_sleep: duration(py, "base_sleep", a)?,
            max_sleep: duration(py, "max_sleep", b)?,
            max_retries: n,
        },
        "n_times" => RetryPolicy::NTimes {
            n,
            sleep: duration(py, "sleep", a)?,
        },
        "one_time" => RetryPolicy::OneTime {
            sleep: duration(py, "sleep", a)?,
        },
        "until_elapsed" => RetryPolicy::UntilElapsed {
            max_elapsed: duration(py, "max_elapsed", a)?,
            sleep: duration(py, "sleep", b)?,
        },
        "forever" => RetryPolicy::Forever {
            sleep: duration(py, "sleep", a)?,
        },
        other => {
            return Err(errors::invalid(
                py,
                format!("unknown retry policy {other:?}"),
            ))
        }
    };
    policy.validate().py_err(py)?;
    Ok(policy)
}

fn create_mode(py: Python<'_>, mode: &str) -> PyResult<CreateMode> {
    Ok(match mode {
        "PERSISTENT" => CreateMode::Persistent,
        "PERSISTENT_SEQUENTIAL" => CreateMode::PersistentSequential,
        "EPHEMERAL" => CreateMode::Ephemeral,
        "EPHEMERAL_SEQUENTIAL" => CreateMode::EphemeralSequential,
        "CONTAINER" => CreateMode::Container,
        other => {
            return Err(errors::invalid(
                py,
                format!("unknown create mode {other:?}"),
            ))
        }
    })
}

/// ZooKeeper's permission bits (READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16) as a `Permission`.
fn permission(py: Python<'_>, bits: u32) -> PyResult<Permission> {
    Permission::from_bits(bits).map_err(|e| errors::invalid(py, e.message()))
}

fn version_arg(py: Python<'_>, version: i64) -> PyResult<Option<i32>> {
    match version {
        -1 => Ok(None),
        v if (0..=i32::MAX as i64).contains(&v) => Ok(Some(v as i32)),
        v => Err(errors::invalid(
            py,
            format!("version must be -1 (any) or 0..2^31-1, not {v}"),
        )),
    }
}

fn stat_obj(py: Python<'_>, s: zkrecipes::Stat) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, PyStat::from(s))?.into_any())
}

/// The name of a watch event's kind, as `zkrecipes.EventType` spells it (kazoo's names).
fn event_kind_name(kind: NodeEventKind) -> &'static str {
    match kind {
        NodeEventKind::Created => "CREATED",
        NodeEventKind::Deleted => "DELETED",
        NodeEventKind::DataChanged => "CHANGED",
        NodeEventKind::ChildrenChanged => "CHILD",
        NodeEventKind::SessionEnded => "SESSION_ENDED",
        // NodeEventKind may grow: report it as the end of the watch's life.
        #[allow(unreachable_patterns)]
        _ => "SESSION_ENDED",
    }
}

/// Calls `callback(kind, path)` once, on a library thread, when the one-shot watch fires.
fn arm(watch: Watch, callback: Py<PyAny>) {
    zkrecipes::runtime::spawn(async move {
        let e = watch.changed().await;
        bridge::call_soon(callback, (event_kind_name(e.kind), e.path));
    });
}

async fn get_data_op(
    c: Client,
    path: String,
    watch: Option<Py<PyAny>>,
) -> zkrecipes::Result<(Vec<u8>, zkrecipes::Stat)> {
    match watch {
        None => c.get_data(&path).await,
        Some(cb) => {
            let (data, stat, w) = c.get_data_watch(&path).await?;
            arm(w, cb);
            Ok((data, stat))
        }
    }
}

async fn exists_op(
    c: Client,
    path: String,
    watch: Option<Py<PyAny>>,
) -> zkrecipes::Result<Option<zkrecipes::Stat>> {
    match watch {
        None => c.exists(&path).await,
        Some(cb) => {
            let (stat, w) = c.exists_watch(&path).await?;
            arm(w, cb);
            Ok(stat)
        }
    }
}

async fn get_children_op(
    c: Client,
    path: String,
    watch: Option<Py<PyAny>>,
) -> zkrecipes::Result<Vec<String>> {
    match watch {
        None => c.get_children(&path).await,
        Some(cb) => {
            let (children, w) = c.get_children_watch(&path).await?;
            arm(w, cb);
            Ok(children)
        }
    }
}

fn call_listeners(listeners: &Listeners, state: ConnectionState) {
    let _ = Python::try_attach(|py| {
        let snapshot: Vec<Py<PyAny>> = listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, l)| l.clone_ref(py))
            .collect();
        for l in snapshot {
            if let Err(e) = l.call1(py, (state.as_str(),)) {
                e.write_unraisable(py, Some(l.bind(py)));
            }
        }
    });
}

impl PyClient {
    /// The started core client, or `ClosedError`.
    pub fn core(&self, py: Python<'_>) -> PyResult<Client> {
        match &*self.slot.lock().unwrap_or_else(|e| e.into_inner()) {
            Slot::Started(c) => c.get(py, "client").cloned(),
            Slot::NotStarted => Err(errors::closed(
                py,
                format!(
                    "the client for {} is not started: call start() or use `with Client(...)`",
                    self.hosts
                ),
            )),
            Slot::Closed => Err(errors::closed(
                py,
                format!("the client for {} is closed", self.hosts),
            )),
        }
    }

    fn install(&self, py: Python<'_>, client: Client) -> PyResult<()> {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        match &*slot {
            Slot::NotStarted => {}
            Slot::Started(c) if c.is_here() => {
                // Another thread started it first: keep theirs, drop ours.
                drop(slot);
                zkrecipes::runtime::spawn(async move { client.close().await });
                return Ok(());
            }
            Slot::Started(_) => {}
            Slot::Closed => {
                drop(slot);
                zkrecipes::runtime::spawn(async move { client.close().await });
                return Err(errors::closed(
                    py,
                    format!("the client for {} was closed while starting", self.hosts),
                ));
            }
        }
        let listeners = self.listeners.clone();
        client.add_state_listener(move |s| call_listeners(&listeners, s));
        // Listeners added before start() hear the first CONNECTED too (as in Curator), on a
        // library thread like every later state.
        if !self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
        {
            let listeners = self.listeners.clone();
            let first = client.state();
            zkrecipes::runtime::handle().spawn_blocking(move || call_listeners(&listeners, first));
        }
        *slot = Slot::Started(Local::new(client));
        Ok(())
    }

    fn take_for_close(&self) -> Option<Client> {
        // No state is reported after close; letting the callbacks go also breaks the cycle
        // callback -> Python objects -> this client.
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        match std::mem::replace(&mut *slot, Slot::Closed) {
            Slot::Started(c) => c.into_inner(),
            _ => None,
        }
    }
}

#[pymethods]
impl PyClient {
    #[new]
    #[pyo3(signature = (hosts, session_timeout, connection_timeout, retry, namespace, auth, can_be_read_only, acl=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        hosts: String,
        session_timeout: f64,
        connection_timeout: f64,
        retry: Option<(String, f64, f64, u32)>,
        namespace: Option<String>,
        auth: Vec<(String, Vec<u8>)>,
        can_be_read_only: bool,
        acl: Option<Vec<(u32, String, String)>>,
    ) -> PyResult<PyClient> {
        validate_connect_string(&hosts).py_err(py)?;
        let session = duration(py, "session_timeout", session_timeout)?;
        let connection = duration(py, "connection_timeout", connection_timeout)?;
        if session.is_zero() || connection.is_zero() {
            return Err(errors::invalid(
                py,
                "session_timeout and connection_timeout must be > 0",
            ));
        }
        let mut builder = ClientBuilder::new(hosts.clone())
            .session_timeout(session)
            .connection_timeout(connection)
            .can_be_read_only(can_be_read_only);
        if let Some(spec) = retry {
            builder = builder.retry_policy(retry_policy(py, spec)?);
        }
        if let Some(ns) = namespace {
            builder = builder.namespace(ns);
        }
        for (scheme, credentials) in auth {
            if scheme.is_empty() {
                return Err(errors::invalid(py, "auth scheme must not be empty"));
            }
            builder = builder.auth(scheme, credentials);
        }
        if let Some(entries) = acl {
            if entries.is_empty() {
                return Err(errors::invalid(
                    py,
                    "acl must not be empty (None keeps the default world:anyone, all)",
                ));
            }
            let mut list = Vec::with_capacity(entries.len());
            for (perms, scheme, id) in entries {
                if scheme.is_empty() {
                    return Err(errors::invalid(py, "acl scheme must not be empty"));
                }
                list.push(Acl::new(permission(py, perms)?, scheme, id));
            }
            builder = builder.acl(list);
        }
        Ok(PyClient {
            builder,
            hosts,
            configured_session_timeout: session_timeout,
            slot: Mutex::new(Slot::NotStarted),
            listeners: Arc::new(Mutex::new(Vec::new())),
            next_listener: AtomicU64::new(1),
        })
    }

    /// Connects (blocking, GIL released, Ctrl-C aborts). Starting a started client is a no-op.
    fn start(&self, py: Python<'_>) -> PyResult<()> {
        match &*self.slot.lock().unwrap_or_else(|e| e.into_inner()) {
            Slot::Started(c) if c.is_here() => return Ok(()),
            Slot::Closed => {
                return Err(errors::closed(
                    py,
                    format!("the client for {} is closed", self.hosts),
                ))
            }
            _ => {}
        }
        let builder = self.builder.clone();
        let client = bridge::wait(
            py,
            builder.connect(),
            Some(Box::new(|c: Client| {
                zkrecipes::runtime::spawn(async move { c.close().await });
            })),
        )?;
        self.install(py, client)
    }

    /// Whether `start()` succeeded (in this process) and `close()` was not called.
    #[getter]
    fn started(&self) -> bool {
        matches!(&*self.slot.lock().unwrap_or_else(|e| e.into_inner()), Slot::Started(c) if c.is_here())
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        matches!(
            &*self.slot.lock().unwrap_or_else(|e| e.into_inner()),
            Slot::Closed
        )
    }

    /// Ends the session (ephemeral nodes vanish at once). Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(client) = self.take_for_close() {
            bridge::block(py, async move {
                client.close().await;
                Ok(())
            })?;
        }
        Ok(())
    }

    fn close_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.take_for_close();
        bridge::future(
            py,
            event_loop,
            async move {
                if let Some(c) = client {
                    c.close().await;
                }
                Ok(())
            },
            Box::new(|py, ()| Ok(py.None())),
            None,
        )
    }

    fn start_async<'py>(
        slf: &Bound<'py, Self>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        if this.started() {
            return bridge::future(
                py,
                event_loop,
                async { Ok(()) },
                Box::new(|py, ()| Ok(py.None())),
                None,
            );
        }
        if this.closed() {
            return Err(errors::closed(
                py,
                format!("the client for {} is closed", this.hosts),
            ));
        }
        let me: Py<PyClient> = slf.clone().unbind();
        bridge::future(
            py,
            event_loop,
            this.builder.clone().connect(),
            Box::new(move |py, client| {
                me.get().install(py, client)?;
                Ok(py.None())
            }),
            None,
        )
    }

    /// The connection state's name, or None unless started.
    #[getter]
    fn state(&self) -> Option<&'static str> {
        match &*self.slot.lock().unwrap_or_else(|e| e.into_inner()) {
            Slot::Started(c) => c.here().map(|c| c.state().as_str()),
            _ => None,
        }
    }

    /// The current session id (0 unless connected).
    #[getter]
    fn session_id(&self) -> i64 {
        match &*self.slot.lock().unwrap_or_else(|e| e.into_inner()) {
            Slot::Started(c) => c.here().map(|c| c.session_id()).unwrap_or(0),
            _ => 0,
        }
    }

    /// The negotiated (or requested) session timeout in seconds.
    #[getter]
    fn session_timeout(&self) -> f64 {
        match &*self.slot.lock().unwrap_or_else(|e| e.into_inner()) {
            Slot::Started(c) => c.here().map(|c| c.session_timeout().as_secs_f64()),
            _ => None,
        }
        .unwrap_or_else(|| self.builder_session_timeout())
    }

    /// The connect string.
    #[getter]
    fn hosts(&self) -> &str {
        &self.hosts
    }

    /// Adds a listener called with the state's name on a library thread; returns its id.
    fn add_state_listener(&self, listener: Py<PyAny>) -> u64 {
        let id = self.next_listener.fetch_add(1, Ordering::Relaxed);
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, listener));
        id
    }

    /// Removes a listener by id; returns whether it was there.
    fn remove_state_listener(&self, id: u64) -> bool {
        let mut l = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        let before = l.len();
        l.retain(|(i, _)| *i != id);
        l.len() != before
    }

    /// Requests sent so far, per operation.
    fn request_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.core(py)?.request_counts();
        let d = PyDict::new(py);
        d.set_item("create", c.create)?;
        d.set_item("delete", c.delete)?;
        d.set_item("get_data", c.get_data)?;
        d.set_item("set_data", c.set_data)?;
        d.set_item("exists", c.exists)?;
        d.set_item("get_children", c.get_children)?;
        d.set_item("sync", c.sync)?;
        Ok(d)
    }

    /// Expires the session on the server (Curator's KillSession), for tests (built with the
    /// `testing` feature only).
    #[cfg(feature = "testing")]
    fn _expire_session_for_testing(&self, py: Python<'_>) -> PyResult<()> {
        let c = self.core(py)?;
        let expire = zkrecipes_testing::expire_client_session(&c);
        bridge::block(py, async move {
            expire
                .await
                .map_err(|e| zkrecipes::Error::Timeout(e.into()))
        })
    }

    // ---- plain operations; each has an asyncio twin taking the running loop first ----

    #[pyo3(signature = (path, data, mode, create_parents, protected))]
    fn create(
        &self,
        py: Python<'_>,
        path: String,
        data: Vec<u8>,
        mode: &str,
        create_parents: bool,
        protected: bool,
    ) -> PyResult<String> {
        let fut = self.create_fut(py, path, data, mode, create_parents, protected)?;
        bridge::block(py, fut)
    }

    #[pyo3(signature = (event_loop, path, data, mode, create_parents, protected))]
    #[allow(clippy::too_many_arguments)]
    fn create_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        path: String,
        data: Vec<u8>,
        mode: &str,
        create_parents: bool,
        protected: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fut = self.create_fut(py, path, data, mode, create_parents, protected)?;
        bridge::future(
            py,
            event_loop,
            fut,
            Box::new(|py, p: String| Ok(p.into_pyobject(py)?.into_any().unbind())),
            None,
        )
    }

    #[pyo3(signature = (path, watch = None))]
    fn get_data<'py>(
        &self,
        py: Python<'py>,
        path: String,
        watch: Option<Py<PyAny>>,
    ) -> PyResult<(Bound<'py, PyBytes>, PyStat)> {
        let c = self.core(py)?;
        let (data, stat) = bridge::block(py, get_data_op(c, path, watch))?;
        Ok((PyBytes::new(py, &data), stat.into()))
    }

    #[pyo3(signature = (event_loop, path, watch = None))]
    fn get_data_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        path: String,
        watch: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let c = self.core(py)?;
        bridge::future(
            py,
            event_loop,
            get_data_op(c, path, watch),
            Box::new(|py, (data, stat): (Vec<u8>, zkrecipes::Stat)| {
                Ok((PyBytes::new(py, &data), PyStat::from(stat))
                    .into_pyobject(py)?
                    .into_any()
                    .unbind())
            }),
            None,
        )
    }

    #[pyo3(signature = (path, data, version))]
    fn set_data(
        &self,
        py: Python<'_>,
        path: String,
        data: Vec<u8>,
        version: i64,
    ) -> PyResult<PyStat> {
        let c = self.core(py)?;
        let version = version_arg(py, version)?;
        bridge::block(py, async move { c.set_data(&path, &data, version).await }).map(PyStat::from)
    }

    #[pyo3(signature = (event_loop, path, data, version))]
    fn set_data_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        path: String,
        data: Vec<u8>,
        version: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let c = self.core(py)?;
        let version = version_arg(py, version)?;
        bridge::future(
            py,
            event_loop,
            async move { c.set_data(&path, &data, version).await },
            Box::new(stat_obj),
            None,
        )
    }

    #[pyo3(signature = (path, watch = None))]
    fn exists(
        &self,
        py: Python<'_>,
        path: String,
        watch: Option<Py<PyAny>>,
    ) -> PyResult<Option<PyStat>> {
        let c = self.core(py)?;
        bridge::block(py, exists_op(c, path, watch)).map(|s| s.map(PyStat::from))
    }

    #[pyo3(signature = (event_loop, path, watch = None))]
    fn exists_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        path: String,
        watch: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let c = self.core(py)?;
        bridge::future(
            py,
            event_loop,
            exists_op(c, path, watch),
            Box::new(|py, s: Option<zkrecipes::Stat>| match s {
                Some(s) => stat_obj(py, s),
                None => Ok(py.None()),
            }),
            None,
        )
    }

    #[pyo3(signature = (path, watch = None))]
    fn get_children(
        &self,
        py: Python<'_>,
        path: String,
        watch: Option<Py<PyAny>>,
    ) -> PyResult<Vec<String>> {
        let c = self.core(py)?;
        bridge::block(py, get_children_op(c, path, watch))
    }

    #[pyo3(signature = (event_loop, path, watch = None))]
    fn get_children_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        path: String,
        watch: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let c = self.core(py)?;
        bridge::future(
            py,
            event_loop,
            get_children_op(c, path, watch),
            Box::new(|py, v: Vec<String>| Ok(v.into_pyobject(py)?.into_any().unbind())),
            None,
        )
    }

    #[pyo3(signature = (path, version, guaranteed, recursive))]
    fn delete(
        &self,
        py: Python<'_>,
        path: String,
        version: i64,
        guaranteed: bool,
        recursive: bool,
    ) -> PyResult<()> {
        let c = self.core(py)?;
        let options = DeleteOptions {
            version: version_arg(py, version)?,
            guaranteed,
            recursive,
        };
        bridge::block(py, async move { c.delete(&path, options).await })
    }

    #[pyo3(signature = (event_loop, path, version, guaranteed, recursive))]
    fn delete_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        path: String,
        version: i64,
        guaranteed: bool,
        recursive: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let c = self.core(py)?;
        let options = DeleteOptions {
            version: version_arg(py, version)?,
            guaranteed,
            recursive,
        };
        bridge::future(
            py,
            event_loop,
            async move { c.delete(&path, options).await },
            Box::new(|py, ()| Ok(py.None())),
            None,
        )
    }
}

impl PyClient {
    fn builder_session_timeout(&self) -> f64 {
        self.configured_session_timeout
    }

    fn create_fut(
        &self,
        py: Python<'_>,
        path: String,
        data: Vec<u8>,
        mode: &str,
        create_parents: bool,
        protected: bool,
    ) -> PyResult<impl std::future::Future<Output = zkrecipes::Result<String>> + Send + 'static>
    {
        let c = self.core(py)?;
        let mut options = CreateOptions::new(create_mode(py, mode)?);
        options.create_parents = create_parents;
        options.protected = protected;
        Ok(async move {
            c.create(&path, &data, options)
                .await
                .map(|created| created.path)
        })
    }
}
