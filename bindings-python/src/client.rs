//! `zkrecipes._native.Client`: Curator's CuratorFramework for Python — options, start/close,
//! connection-state listeners and the plain operations (each a [`Call`]: waited for by the
//! sync method, awaited by its asyncio twin).

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use zkrecipes::client::{validate_connect_string, Acl, Permission};
use zkrecipes::client::{NodeEvent, Watch};
use zkrecipes::{
    AclProvider, Client, ClientBuilder, ConnectionState, CreateMode, CreateOptions, DeleteOptions,
    ListenerIds, Pem, RetryPolicy, SaslOptions, TlsOptions,
};

use crate::args::{duration, Int, Text};
use crate::bridge::{self, Call};
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
    /// Closed; the closed core client is kept so that its dispatcher still delivers what the
    /// close ends (a pending watch's SESSION_ENDED).
    Closed(#[allow(dead_code)] Option<Local<Client>>),
}

/// The native client. The hand-written `zkrecipes.Client` wraps it.
#[pyclass(frozen, module = "zkrecipes._native", name = "Client")]
pub struct PyClient {
    builder: ClientBuilder,
    hosts: String,
    configured_session_timeout: f64,
    slot: Mutex<Slot>,
    listeners: Listeners,
    listener_ids: ListenerIds,
}

/// A retry policy from `(kind, a, b, n)` as `zkrecipes.RetryPolicy._spec()` spells it.
pub fn retry_policy(py: Python<'_>, spec: (Text, f64, f64, u32)) -> PyResult<RetryPolicy> {
    let (kind, a, b, n) = spec;
    let policy = match &*kind {
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

/// ZooKeeper's permission bits (READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16) as a `Permission`.
fn permission(py: Python<'_>, bits: u32) -> PyResult<Permission> {
    Permission::from_bits(bits).map_err(|e| errors::invalid(py, e.message()))
}

/// An ACL entry as Python hands it over: `(perms, scheme, id)`.
pub(crate) type AclSpec = (u32, Text, Text);

/// A list of ACL entries from Python (`what` names the argument in errors).
pub(crate) fn acl_list(py: Python<'_>, what: &str, entries: Vec<AclSpec>) -> PyResult<Vec<Acl>> {
    if entries.is_empty() {
        return Err(errors::invalid(py, format!("{what} must not be empty")));
    }
    entries
        .into_iter()
        .map(|(perms, scheme, id)| {
            if scheme.is_empty() {
                return Err(errors::invalid(
                    py,
                    format!("{what}: a scheme must not be empty"),
                ));
            }
            Ok(Acl::new(
                permission(py, perms)?,
                String::from(scheme),
                String::from(id),
            ))
        })
        .collect()
}

/// ACL entries for Python: `(perms, scheme, id)`.
fn acl_specs(acl: Vec<Acl>) -> Vec<(u32, String, String)> {
    acl.into_iter()
        .map(|a| (a.perms.bits(), a.scheme, a.id))
        .collect()
}

/// A PEM option as `zkrecipes.TlsOptions` hands it over: `bytes`, always PEM text, or a `str`,
/// a path or PEM text by the core's rule (`Pem::from_arg`). Errors never show the value (it may
/// be a private key).
struct PemArg(Pem);

impl<'a, 'py> FromPyObject<'a, 'py> for PemArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        if let Ok(bytes) = obj.cast::<PyBytes>() {
            return String::from_utf8(bytes.as_bytes().to_vec())
                .map(|text| PemArg(Pem::text(text)))
                .map_err(|_| errors::invalid(py, "PEM bytes must be UTF-8 text"));
        }
        let Ok(text) = obj.cast::<PyString>() else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "a PEM option must be a path (str) or PEM text (str or bytes)",
            ));
        };
        match text.to_cow() {
            Ok(text) => Ok(PemArg(Pem::from_arg(text.into_owned()))),
            Err(_) => Err(errors::invalid(
                py,
                "a PEM option is not valid Unicode text (it has a lone surrogate)",
            )),
        }
    }
}

/// How `TlsOptions`' repr shows a `str` PEM option: `None` for a path (shown as given), else
/// what stands for it (`PEM text, N bytes`, `N bytes, not a file path`): the core's rule
/// (`Pem::redacted`).
#[pyfunction]
pub fn pem_redacted(value: &Bound<'_, PyString>) -> Option<String> {
    match value.to_cow() {
        Ok(text) => Pem::from_arg(text.into_owned()).redacted(),
        Err(_) => Some("not Unicode text, not a file path".to_string()),
    }
}

/// TLS options as Python hands them over: `(ca, cert, key, verify_hostname, every_host)`.
type TlsSpec = (Option<PemArg>, Option<PemArg>, Option<PemArg>, bool, bool);

fn tls_options((ca, cert, key, verify, every_host): TlsSpec) -> TlsOptions {
    let mut tls = TlsOptions::new()
        .verify_hostname(verify)
        .every_host(every_host);
    if let Some(PemArg(ca)) = ca {
        tls = tls.ca(ca);
    }
    if let Some(PemArg(cert)) = cert {
        tls = tls.cert(cert);
    }
    if let Some(PemArg(key)) = key {
        tls = tls.key(key);
    }
    tls
}

/// Curator's ACLProvider from Python: the default ACL, path rules, and a callable
/// `path -> list | None` called with the GIL from the client's runtime for each create. A
/// callable that raises (or cannot run because the interpreter is exiting) fails the create.
fn acl_provider(
    default: Vec<Acl>,
    rules: Vec<(String, Vec<Acl>)>,
    func: Option<Py<PyAny>>,
) -> AclProvider {
    let mut provider = rules
        .into_iter()
        .fold(AclProvider::new(default), |p, (prefix, acl)| {
            p.with_path(prefix, acl)
        });
    if let Some(func) = func {
        provider = provider.with_fn(move |path| {
            bridge::attach(|py| -> zkrecipes::Result<Option<Vec<Acl>>> {
                let failed = |e: String| {
                    zkrecipes::Error::InvalidArgument(
                        format!("acl_provider({path:?}) failed: {e}").into(),
                    )
                };
                let answer = func.call1(py, (path,)).map_err(|e| failed(e.to_string()))?;
                if answer.is_none(py) {
                    return Ok(None);
                }
                // zkrecipes.client wraps the user's callable: entries come as (perms, scheme, id).
                let specs: Vec<(u32, String, String)> = answer.extract(py).map_err(|e| {
                    failed(format!("expected a list of zkrecipes.Acl or None ({e})"))
                })?;
                specs
                    .into_iter()
                    .map(|(perms, scheme, id)| {
                        Permission::from_bits(perms)
                            .map(|p| Acl::new(p, scheme, id))
                            .map_err(|e| failed(e.message().to_string()))
                    })
                    .collect::<zkrecipes::Result<Vec<Acl>>>()
                    .map(Some)
            })
            .unwrap_or_else(|| {
                Err(zkrecipes::Error::Closed(
                    "acl_provider: the Python interpreter is exiting".into(),
                ))
            })
        });
    }
    provider
}

fn version_arg(py: Python<'_>, version: Int<i64>) -> PyResult<Option<i32>> {
    match version.0 {
        -1 => Ok(None),
        v if (0..=i32::MAX as i64).contains(&v) => Ok(Some(v as i32)),
        v => Err(errors::invalid(
            py,
            format!("version must be -1 (any) or 0..2**31-1, not {v}"),
        )),
    }
}

fn stat_obj(py: Python<'_>, s: zkrecipes::Stat) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, PyStat::from(s))?.into_any())
}

fn call_listeners(listeners: &Listeners, state: ConnectionState) {
    let _ = bridge::attach(|py| {
        let snapshot: Vec<Py<PyAny>> = listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, l)| l.clone_ref(py))
            .collect();
        for l in snapshot {
            bridge::invoke(&l, (state.name(),));
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
            Slot::Closed(_) => Err(errors::closed(
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
            Slot::Closed(_) => {
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
        // Listeners added before start() hear the first CONNECTED too (as in Curator), on the
        // client's dispatcher like every later state.
        if !self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
        {
            let listeners = self.listeners.clone();
            let first = client.state();
            client.run_on_dispatcher(move || call_listeners(&listeners, first));
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
        let client = match &*slot {
            Slot::Started(c) => c.here().cloned(),
            _ => None,
        };
        if !matches!(&*slot, Slot::Closed(_)) {
            let kept = match std::mem::replace(&mut *slot, Slot::Closed(None)) {
                Slot::Started(c) => Some(c),
                _ => None,
            };
            *slot = Slot::Closed(kept);
        }
        client
    }

    fn started_here(&self) -> bool {
        matches!(&*self.slot.lock().unwrap_or_else(|e| e.into_inner()), Slot::Started(c) if c.is_here())
    }

    /// A read with an optional one-shot watch: `read` without, `read_watch` with (the watch is
    /// armed with `callback(event_type, path)`, called on the client's dispatcher).
    fn watched<T, R, W, C>(
        &self,
        py: Python<'_>,
        watch: Option<Py<PyAny>>,
        read: R,
        read_watch: W,
        convert: C,
    ) -> PyResult<Call>
    where
        T: Send + 'static,
        C: for<'py> FnOnce(Python<'py>, T) -> PyResult<Py<PyAny>> + Send + 'static,
        R: std::future::Future<Output = zkrecipes::Result<T>> + Send + 'static,
        W: std::future::Future<Output = zkrecipes::Result<(T, Watch)>> + Send + 'static,
    {
        let c = self.core(py)?;
        let Some(callback) = watch else {
            return Ok(Call::new(read, convert));
        };
        Ok(Call::new(
            async move {
                let (value, w) = read_watch.await?;
                c.on_watch(w, move |e: NodeEvent| {
                    bridge::invoke(&callback, (e.kind.name(), e.path))
                });
                Ok(value)
            },
            convert,
        ))
    }
}

#[pymethods]
impl PyClient {
    #[new]
    #[pyo3(signature = (hosts, session_timeout, connection_timeout, retry, namespace, auth, can_be_read_only, acl=None, tls=None, sasl=None, acl_rules=None, acl_func=None, max_request_bytes=None, track_ensemble=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        hosts: Text,
        session_timeout: f64,
        connection_timeout: f64,
        retry: Option<(Text, f64, f64, u32)>,
        namespace: Option<Text>,
        auth: Vec<(Text, Vec<u8>)>,
        can_be_read_only: bool,
        acl: Option<Vec<AclSpec>>,
        tls: Option<TlsSpec>,
        sasl: Option<(Text, Text, Text)>,
        acl_rules: Option<Vec<(Text, Vec<AclSpec>)>>,
        acl_func: Option<Py<PyAny>>,
        max_request_bytes: Option<Int<usize>>,
        track_ensemble: bool,
    ) -> PyResult<PyClient> {
        let hosts = String::from(hosts);
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
            .can_be_read_only(can_be_read_only)
            .track_ensemble(track_ensemble);
        if let Some(bytes) = max_request_bytes {
            builder = builder.max_request_bytes(bytes.0);
        }
        if let Some(spec) = retry {
            builder = builder.retry_policy(retry_policy(py, spec)?);
        }
        if let Some(ns) = namespace {
            builder = builder.namespace(String::from(ns));
        }
        for (scheme, credentials) in auth {
            if scheme.is_empty() {
                return Err(errors::invalid(py, "auth scheme must not be empty"));
            }
            builder = builder.auth(String::from(scheme), credentials);
        }
        let default = match acl {
            Some(entries) => acl_list(
                py,
                "acl (None keeps the default world:anyone, all)",
                entries,
            )?,
            None => Acl::open(),
        };
        let rules = acl_rules
            .unwrap_or_default()
            .into_iter()
            .map(|(prefix, entries)| {
                let what = format!("acl_provider[{:?}]", &*prefix);
                Ok((String::from(prefix), acl_list(py, &what, entries)?))
            })
            .collect::<PyResult<Vec<_>>>()?;
        builder = builder.acl_provider(acl_provider(default, rules, acl_func));
        if let Some(spec) = tls {
            builder = builder.tls(tls_options(spec));
        }
        if let Some((mechanism, username, password)) = sasl {
            let sasl = SaslOptions::new(&mechanism, String::from(username), String::from(password))
                .py_err(py)?;
            builder = builder.sasl(sasl);
        }
        Ok(PyClient {
            builder,
            hosts,
            configured_session_timeout: session_timeout,
            slot: Mutex::new(Slot::NotStarted),
            listeners: Arc::new(Mutex::new(Vec::new())),
            listener_ids: ListenerIds::new(),
        })
    }

    /// Connects (Ctrl-C or a cancelled task abandons the attempt). Starting a started client
    /// is a no-op.
    fn start(slf: &Bound<'_, Self>) -> PyResult<Call> {
        let py = slf.py();
        let this = slf.get();
        if this.started_here() {
            return Ok(Call::unit(async { Ok(()) }));
        }
        if this.closed() {
            return Err(errors::closed(
                py,
                format!("the client for {} is closed", this.hosts),
            ));
        }
        let me: Py<PyClient> = slf.clone().unbind();
        Ok(Call::new(
            this.builder.clone().connect(),
            move |py, client| {
                me.get().install(py, client)?;
                Ok(py.None())
            },
        ))
    }

    /// Whether `start()` succeeded (in this process) and `close()` was not called.
    #[getter]
    fn started(&self) -> bool {
        self.started_here()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        matches!(
            &*self.slot.lock().unwrap_or_else(|e| e.into_inner()),
            Slot::Closed(_)
        )
    }

    /// Ends the session (ephemeral nodes vanish at once). Idempotent. Runs to its end even if
    /// its caller stops waiting (a cancelled Task, Ctrl-C): this object is closed once the call
    /// is made, so a close stopped half way could not be made again and the session lived on.
    fn close(&self) -> Call {
        let client = self.take_for_close();
        Call::to_end(async move {
            if let Some(c) = client {
                c.close().await;
            }
            Ok(())
        })
    }

    /// The connection state's name, or None unless started.
    #[getter]
    fn state(&self) -> Option<&'static str> {
        match &*self.slot.lock().unwrap_or_else(|e| e.into_inner()) {
            Slot::Started(c) => c.here().map(|c| c.state().name()),
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
        .unwrap_or(self.configured_session_timeout)
    }

    /// The connect string.
    #[getter]
    fn hosts(&self) -> &str {
        &self.hosts
    }

    /// Adds a listener called with the state's name on the client's dispatcher thread;
    /// returns its id.
    fn add_state_listener(&self, listener: Py<PyAny>) -> u64 {
        let id = self.listener_ids.next();
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, listener));
        id
    }

    /// Removes a listener by id; returns whether it was there (False for one removed before).
    /// InvalidArgumentError for an id another client or recipe gave out.
    fn remove_state_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.listener_ids.check(id).py_err(py)?;
        let mut l = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        let before = l.len();
        l.retain(|(i, _)| *i != id);
        Ok(l.len() != before)
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
    /// `testing` or `kit` feature only).
    #[cfg(any(feature = "testing", feature = "kit"))]
    fn _expire_session_for_testing(&self, py: Python<'_>) -> PyResult<Call> {
        let c = self.core(py)?;
        let expire = zkrecipes_testing::expire_client_session(&c);
        Ok(Call::unit(async move {
            expire
                .await
                .map_err(|e| zkrecipes::Error::Timeout(e.into()))
        }))
    }

    // ---- plain operations: each returns a Call (`.wait()` or `await`) ----

    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (path, data, mode, create_parents, protected, persistent_parents = false, compressed = false, ttl = None, acl = None))]
    fn create(
        &self,
        py: Python<'_>,
        path: Text,
        data: Vec<u8>,
        mode: Text,
        create_parents: bool,
        protected: bool,
        persistent_parents: bool,
        compressed: bool,
        ttl: Option<f64>,
        acl: Option<Vec<AclSpec>>,
    ) -> PyResult<Call> {
        let c = self.core(py)?;
        let mut options = CreateOptions::new(CreateMode::from_name(&mode).py_err(py)?);
        options.create_parents = create_parents;
        options.protected = protected;
        options.persistent_parents = persistent_parents;
        options.compressed = compressed;
        options.ttl = ttl.map(|t| duration(py, "ttl", t)).transpose()?;
        let acl = acl
            .map(|entries| acl_list(py, "acl", entries))
            .transpose()?;
        Ok(Call::value(async move {
            match acl {
                Some(acl) => c.create_with_acl(&path, &data, options, &acl).await,
                None => c.create(&path, &data, options).await,
            }
            .map(|created| created.path)
        }))
    }

    /// The node's ACL as `(perms, scheme, id)` entries, and its stat.
    fn get_acl(&self, py: Python<'_>, path: Text) -> PyResult<Call> {
        let c = self.core(py)?;
        Ok(Call::new(
            async move { c.get_acl(&path).await },
            |py, (acl, stat): (Vec<Acl>, zkrecipes::Stat)| {
                bridge::obj(py, (acl_specs(acl), PyStat::from(stat)))
            },
        ))
    }

    /// Replaces the node's ACL at ACL `version` (-1: any); the new stat.
    fn set_acl(
        &self,
        py: Python<'_>,
        path: Text,
        acl: Vec<AclSpec>,
        version: Int<i64>,
    ) -> PyResult<Call> {
        let c = self.core(py)?;
        let acl = acl_list(py, "acl", acl)?;
        let version = version_arg(py, version)?;
        Ok(Call::new(
            async move { c.set_acl(&path, &acl, version).await },
            stat_obj,
        ))
    }

    #[pyo3(signature = (path, watch = None, compressed = false))]
    fn get_data(
        &self,
        py: Python<'_>,
        path: Text,
        watch: Option<Py<PyAny>>,
        compressed: bool,
    ) -> PyResult<Call> {
        let c = self.core(py)?;
        let (p, c2, p2) = (path.clone(), c.clone(), path);
        // Curator's GZIP data, decompressed (`getData().decompressed()`).
        let plain = move |p: &str, data: Vec<u8>| match compressed {
            true => zkrecipes::client::compression::gunzip(p, &data),
            false => Ok(data),
        };
        self.watched(
            py,
            watch,
            async move {
                let (data, stat) = c.get_data(&p).await?;
                Ok((plain(&p, data)?, stat))
            },
            async move {
                let (data, stat, w) = c2.get_data_watch(&p2).await?;
                Ok(((plain(&p2, data)?, stat), w))
            },
            |py, (data, stat): (Vec<u8>, zkrecipes::Stat)| {
                bridge::obj(py, (PyBytes::new(py, &data), PyStat::from(stat)))
            },
        )
    }

    #[pyo3(signature = (path, data, version, compressed = false))]
    fn set_data(
        &self,
        py: Python<'_>,
        path: Text,
        data: Vec<u8>,
        version: Int<i64>,
        compressed: bool,
    ) -> PyResult<Call> {
        let c = self.core(py)?;
        let version = version_arg(py, version)?;
        Ok(Call::new(
            async move {
                match compressed {
                    true => c.set_data_compressed(&path, &data, version).await,
                    false => c.set_data(&path, &data, version).await,
                }
            },
            stat_obj,
        ))
    }

    #[pyo3(signature = (path, watch = None))]
    fn exists(&self, py: Python<'_>, path: Text, watch: Option<Py<PyAny>>) -> PyResult<Call> {
        let c = self.core(py)?;
        let (p, c2, p2) = (path.clone(), c.clone(), path);
        self.watched(
            py,
            watch,
            async move { c.exists(&p).await },
            async move { c2.exists_watch(&p2).await },
            |py, s: Option<zkrecipes::Stat>| match s {
                Some(s) => stat_obj(py, s),
                None => Ok(py.None()),
            },
        )
    }

    #[pyo3(signature = (path, watch = None))]
    fn get_children(&self, py: Python<'_>, path: Text, watch: Option<Py<PyAny>>) -> PyResult<Call> {
        let c = self.core(py)?;
        let (p, c2, p2) = (path.clone(), c.clone(), path);
        self.watched(
            py,
            watch,
            async move { c.get_children(&p).await },
            async move { c2.get_children_watch(&p2).await },
            bridge::to_obj(),
        )
    }

    /// ZooKeeper's sync: the server catches up with the leader before answering.
    fn sync(&self, py: Python<'_>, path: Text) -> PyResult<Call> {
        let c = self.core(py)?;
        Ok(Call::unit(async move { c.sync(&path).await }))
    }

    #[pyo3(signature = (path, version, guaranteed, recursive))]
    fn delete(
        &self,
        py: Python<'_>,
        path: Text,
        version: Int<i64>,
        guaranteed: bool,
        recursive: bool,
    ) -> PyResult<Call> {
        let c = self.core(py)?;
        let options = DeleteOptions {
            version: version_arg(py, version)?,
            guaranteed,
            recursive,
        };
        Ok(Call::unit(async move { c.delete(&path, options).await }))
    }
}
