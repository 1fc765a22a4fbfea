//! The testing kit's native half (feature `kit`): real ZooKeeper servers from the harness crate
//! (`zkrecipes_testing`), wrapped by `zkrecipes.testing`. Every call that waits releases the
//! GIL; a harness failure (no ZooKeeper, a server that does not start) is a `RuntimeError` with
//! the harness's message, never a panic crossing into Python. A closed server, cluster or
//! proxy raises `zkrecipes.ClosedError`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use zkrecipes_testing::{
    ClientAuth, FaultProxy, Security, ServerCert, TestingCluster, TestingServer,
    TestingServerHandle, TlsMaterial,
};

use crate::errors;

/// A [`Security`] from the keywords of `zkrecipes.testing` (checked: `ValueError` for what
/// ZooKeeper cannot do, before any server starts).
fn security(
    tls: Option<&str>,
    server_cert: &str,
    sasl_users: Vec<(String, String)>,
    sasl_required: bool,
    x509: bool,
    superuser: Option<(String, String)>,
) -> PyResult<Security> {
    let mut security = Security::new();
    if let Some(tls) = tls {
        let auth = ClientAuth::from_name(tls).ok_or_else(|| {
            PyValueError::new_err(format!(
                "tls must be None, 'none', 'want' or 'need', not {tls:?}"
            ))
        })?;
        security = security.tls(auth);
    }
    let cert = ServerCert::from_name(server_cert).ok_or_else(|| {
        PyValueError::new_err(format!(
            "server_cert must be 'valid', 'expired', 'wrong-name' or 'ip-only', not {server_cert:?}"
        ))
    })?;
    security = security.server_cert(cert);
    for (name, password) in sasl_users {
        security = security.sasl_user(name, password);
    }
    security = security.sasl_required(sasl_required).x509_identities(x509);
    if let Some((name, password)) = superuser {
        security = security.superuser(name, password);
    }
    security.check().map_err(PyValueError::new_err)?;
    Ok(security)
}

/// The `(name, text)` entries of TLS material (see `TlsMaterial::entries`).
fn entries(tls: Option<&TlsMaterial>) -> Option<Vec<(String, String)>> {
    tls.map(TlsMaterial::entries)
}

/// Issues a client certificate (`CN=cn`) and key signed by the CA of the material in
/// `tls_dir`, writing each file atomically.
#[pyfunction]
pub fn issue_client(
    py: Python<'_>,
    tls_dir: String,
    cn: String,
    cert_path: String,
    key_path: String,
) -> PyResult<()> {
    harness(py, move || {
        TlsMaterial::at(std::path::Path::new(&tls_dir)).issue_client(&cn, cert_path, key_path)
    })
}

/// The `x509` identity ZooKeeper records for a certificate with the subject `CN=cn`.
#[pyfunction]
pub fn x509_id_for_cn(cn: &str) -> String {
    TlsMaterial::x509_id_for_cn(cn)
}

/// Runs `f` (a harness call) with the GIL released, turning a panic into `RuntimeError`.
fn harness<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "the ZooKeeper test harness failed".to_owned());
            PyRuntimeError::new_err(message)
        })
}

/// Where ZooKeeper comes from (`ZKRECIPES_ZOOKEEPER_JAR`, `ZOOKEEPER_HOME`, Debian's package):
/// `(java, classpath, source)`, or `RuntimeError` naming what to install.
#[pyfunction]
pub fn find_zookeeper() -> PyResult<(String, String, String)> {
    zkrecipes_testing::find_zookeeper()
        .map(|z| (z.java.display().to_string(), z.classpath, z.source))
        .map_err(PyRuntimeError::new_err)
}

/// One standalone server in its own temporary directory (`zkrecipes.testing.TestingServer`).
#[pyclass(module = "zkrecipes._native", name = "_TestingServer")]
pub struct PyTestingServer {
    inner: Mutex<Option<TestingServer>>,
}

/// Runs `f` on what `slot` holds (a harness call: GIL released, panics mapped), or fails if
/// it was closed.
fn with_slot<S: Send, T: Send>(
    py: Python<'_>,
    slot: &Mutex<Option<S>>,
    f: impl FnOnce(&S) -> T + Send,
) -> PyResult<T> {
    harness(py, || {
        let guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().map(f)
    })?
    .ok_or_else(|| errors::closed(py, "the testing server or cluster is closed"))
}

/// Empties `slot` and drops what it held (stopping servers) with the GIL released.
fn close_slot<S: Send>(py: Python<'_>, slot: &Mutex<Option<S>>) -> PyResult<()> {
    let held = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    harness(py, move || drop(held))
}

impl PyTestingServer {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&TestingServerHandle) -> T + Send,
    ) -> PyResult<T> {
        with_slot(py, &self.inner, |s: &TestingServer| f(s))
    }
}

#[pymethods]
impl PyTestingServer {
    /// Starts a server, secured as the keywords say, and waits until it serves.
    #[new]
    #[pyo3(signature = (tls=None, server_cert="valid", sasl_users=Vec::new(), sasl_required=false, x509=false, superuser=None))]
    fn new(
        py: Python<'_>,
        tls: Option<&str>,
        server_cert: &str,
        sasl_users: Vec<(String, String)>,
        sasl_required: bool,
        x509: bool,
        superuser: Option<(String, String)>,
    ) -> PyResult<Self> {
        let security = security(tls, server_cert, sasl_users, sasl_required, x509, superuser)?;
        let server = harness(py, move || TestingServer::start_secure(security))?;
        Ok(Self {
            inner: Mutex::new(Some(server)),
        })
    }

    fn secure_connect_string(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |s| s.secure_connect_string())
    }

    fn secure_port(&self, py: Python<'_>) -> PyResult<Option<u16>> {
        self.with(py, |s| s.secure_port())
    }

    /// The TLS material's `(name, text)` entries; `None` without TLS.
    fn tls_entries(&self, py: Python<'_>) -> PyResult<Option<Vec<(String, String)>>> {
        with_slot(py, &self.inner, |s: &TestingServer| entries(s.tls()))
    }

    fn connect_string(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| s.connect_string())
    }

    fn port(&self, py: Python<'_>) -> PyResult<u16> {
        self.with(py, |s| s.port())
    }

    fn is_running(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |s| s.is_running())
    }

    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s| s.stop())
    }

    fn start(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s| s.start())
    }

    fn restart(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s| s.restart())
    }

    fn kill(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s| s.kill())
    }

    fn four_letter(&self, py: Python<'_>, cmd: String) -> PyResult<String> {
        self.with(py, move |s| s.four_letter(&cmd))
    }

    /// Freezes the server (SIGSTOP); `RuntimeError` if it is not running.
    fn pause(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s| s.pause())
    }

    /// Resumes a paused server (SIGCONT); `RuntimeError` if it is not running.
    fn resume(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s| s.resume())
    }

    fn is_paused(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |s| s.is_paused())
    }

    /// Stops the server and removes its directory; idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        close_slot(py, &self.inner)
    }
}

/// An ensemble of `n` servers (`zkrecipes.testing.TestingCluster`).
#[pyclass(module = "zkrecipes._native", name = "_TestingCluster")]
pub struct PyTestingCluster {
    inner: Mutex<Option<TestingCluster>>,
}

impl PyTestingCluster {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&TestingCluster) -> T + Send,
    ) -> PyResult<T> {
        with_slot(py, &self.inner, f)
    }

    fn with_server<T: Send>(
        &self,
        py: Python<'_>,
        i: usize,
        f: impl FnOnce(&TestingServerHandle) -> T + Send,
    ) -> PyResult<T> {
        self.with(py, move |c| (i < c.len()).then(|| f(c.server(i))))?
            .ok_or_else(|| PyIndexError::new_err(format!("no server {i} in this cluster")))
    }
}

#[pymethods]
impl PyTestingCluster {
    /// Starts `n` servers, secured as the keywords say, and waits until they serve and agree on
    /// a leader.
    #[new]
    #[pyo3(signature = (n, tls=None, server_cert="valid", sasl_users=Vec::new(), sasl_required=false, x509=false, superuser=None, read_only_mode=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        n: usize,
        tls: Option<&str>,
        server_cert: &str,
        sasl_users: Vec<(String, String)>,
        sasl_required: bool,
        x509: bool,
        superuser: Option<(String, String)>,
        read_only_mode: bool,
    ) -> PyResult<Self> {
        if n == 0 {
            return Err(PyValueError::new_err("a cluster needs at least one server"));
        }
        let security = security(tls, server_cert, sasl_users, sasl_required, x509, superuser)?
            .read_only_mode(read_only_mode);
        let cluster = harness(py, move || TestingCluster::start_secure(n, security))?;
        Ok(Self {
            inner: Mutex::new(Some(cluster)),
        })
    }

    fn secure_connect_string(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |c| c.secure_connect_string())
    }

    /// The TLS material's `(name, text)` entries; `None` without TLS.
    fn tls_entries(&self, py: Python<'_>) -> PyResult<Option<Vec<(String, String)>>> {
        self.with(py, |c| entries(c.tls()))
    }

    fn server_secure_connect_string(&self, py: Python<'_>, i: usize) -> PyResult<Option<String>> {
        self.with_server(py, i, |s| s.secure_connect_string())
    }

    fn connect_string(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |c| c.connect_string())
    }

    fn size(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |c| c.len())
    }

    fn leader_index(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        self.with(py, |c| c.leader_index())
    }

    fn wait_for_quorum(&self, py: Python<'_>, timeout: f64) -> PyResult<Option<usize>> {
        let timeout = std::time::Duration::try_from_secs_f64(timeout)
            .map_err(|e| PyValueError::new_err(format!("timeout: {e}")))?;
        self.with(py, move |c| c.wait_for_quorum(timeout))
    }

    fn server_connect_string(&self, py: Python<'_>, i: usize) -> PyResult<String> {
        self.with_server(py, i, |s| s.connect_string())
    }

    fn server_is_running(&self, py: Python<'_>, i: usize) -> PyResult<bool> {
        self.with_server(py, i, |s| s.is_running())
    }

    fn stop_server(&self, py: Python<'_>, i: usize) -> PyResult<()> {
        self.with_server(py, i, |s| s.stop())
    }

    fn start_server(&self, py: Python<'_>, i: usize) -> PyResult<()> {
        self.with_server(py, i, |s| s.start())
    }

    fn restart_server(&self, py: Python<'_>, i: usize) -> PyResult<()> {
        self.with_server(py, i, |s| s.restart())
    }

    fn kill_server(&self, py: Python<'_>, i: usize) -> PyResult<()> {
        self.with_server(py, i, |s| s.kill())
    }

    fn pause_server(&self, py: Python<'_>, i: usize) -> PyResult<()> {
        self.with_server(py, i, |s| s.pause())
    }

    fn resume_server(&self, py: Python<'_>, i: usize) -> PyResult<()> {
        self.with_server(py, i, |s| s.resume())
    }

    fn server_is_paused(&self, py: Python<'_>, i: usize) -> PyResult<bool> {
        self.with_server(py, i, |s| s.is_paused())
    }

    /// Stops every server and removes the directory; idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        close_slot(py, &self.inner)
    }
    // Dynamic ensembles (issue 32).

    /// `n` members with `reconfigEnabled=true` and a digest superuser (`user:password`), for
    /// `reconfig`: `TestingCluster::start_reconfigurable`.
    #[staticmethod]
    fn start_reconfigurable(
        py: Python<'_>,
        n: usize,
        superuser: (String, String),
    ) -> PyResult<Self> {
        if n == 0 {
            return Err(PyValueError::new_err("a cluster needs at least one server"));
        }
        let security = Security::new().superuser(superuser.0, superuser.1);
        let cluster = harness(py, move || {
            TestingCluster::start_reconfigurable(n, security)
        })?;
        Ok(Self {
            inner: Mutex::new(Some(cluster)),
        })
    }

    /// Starts a server synced with a reconfigurable ensemble, not yet a member; its index.
    fn add_server(&self, py: Python<'_>, observer: bool) -> PyResult<usize> {
        let role = if observer {
            zkrecipes_testing::ServerRole::Observer
        } else {
            zkrecipes_testing::ServerRole::Participant
        };
        harness(py, || {
            let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            guard.as_mut().map(|c| c.add_server(role))
        })?
        .ok_or_else(|| errors::closed(py, "the testing server or cluster is closed"))
    }

    /// Server `i`'s `server.ID=...` line for `reconfig(joining=...)`; `None` outside a
    /// reconfigurable ensemble.
    fn server_reconfig_spec(&self, py: Python<'_>, i: usize) -> PyResult<Option<String>> {
        self.with_server(py, i, |s| s.reconfig_spec())
    }

    /// Waits until the running members list exactly `ids` and one leads.
    fn wait_for_members(&self, py: Python<'_>, ids: Vec<u64>, timeout: f64) -> PyResult<bool> {
        let timeout = std::time::Duration::try_from_secs_f64(timeout)
            .map_err(|e| PyValueError::new_err(format!("timeout: {e}")))?;
        self.with(py, move |c| c.wait_for_members(&ids, timeout))
    }
}

/// A TCP proxy injecting network faults in front of one server (`zkrecipes.testing.FaultProxy`).
/// Using it after `close()` raises `ClosedError`; a bad latency or upstream,
/// `InvalidArgumentError`.
#[pyclass(module = "zkrecipes._native", name = "_FaultProxy")]
pub struct PyFaultProxy {
    inner: Mutex<Option<FaultProxy>>,
}

/// A latency in seconds as a [`std::time::Duration`]: finite and not negative.
fn latency(py: Python<'_>, seconds: f64) -> PyResult<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(seconds).map_err(|_| {
        errors::invalid(
            py,
            format!("latency must be a finite, non-negative number of seconds, not {seconds}"),
        )
    })
}

/// Whether `upstream` is `"host:port"` with a host and a port number.
fn check_upstream(py: Python<'_>, upstream: &str) -> PyResult<()> {
    let ok = upstream
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
    if ok {
        Ok(())
    } else {
        Err(errors::invalid(
            py,
            format!("upstream must be \"host:port\" (one server), not {upstream:?}"),
        ))
    }
}

impl PyFaultProxy {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&FaultProxy) -> T + Send,
    ) -> PyResult<T> {
        harness(py, || {
            let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            guard.as_ref().map(f)
        })?
        .ok_or_else(|| errors::closed(py, "the fault proxy is closed"))
    }
}

#[pymethods]
impl PyFaultProxy {
    /// Starts forwarding a free 127.0.0.1 port to `upstream` (`"host:port"`).
    #[new]
    fn new(py: Python<'_>, upstream: String) -> PyResult<Self> {
        check_upstream(py, &upstream)?;
        let proxy = harness(py, move || FaultProxy::start(&upstream))?;
        Ok(Self {
            inner: Mutex::new(Some(proxy)),
        })
    }

    fn connect_string(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |p| p.connect_string())
    }

    fn port(&self, py: Python<'_>) -> PyResult<u16> {
        self.with(py, |p| p.port())
    }

    fn upstream(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |p| p.upstream().to_owned())
    }

    /// Closes every connection (and new ones on accept); returns once none is open.
    fn cut(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |p| p.cut())
    }

    fn blackhole(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |p| p.blackhole())
    }

    fn drop_replies(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |p| p.drop_replies())
    }

    /// Delays every chunk by `seconds` in each direction.
    fn delay(&self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        let latency = latency(py, seconds)?;
        self.with(py, move |p| p.delay(latency))
    }

    /// Delays every server-to-client chunk by `seconds`.
    fn delay_replies(&self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        let latency = latency(py, seconds)?;
        self.with(py, move |p| p.delay_replies(latency))
    }

    fn restore(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |p| p.restore())
    }

    fn connections(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |p| p.connections())
    }

    fn bytes_forwarded(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |p| p.bytes_forwarded())
    }

    fn is_closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// Stops the proxy, closing every connection through it; idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        close_slot(py, &self.inner)
    }
}
