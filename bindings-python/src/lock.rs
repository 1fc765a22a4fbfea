//! The lock family: `InterProcessMutex` (and the read/write lock's two sides, which are
//! mutexes too), the semaphore mutex, the counting semaphore and the multi lock. Owners arrive
//! as raw ids resolved by the hand-written package.
//!
//! Acquire and release are written once, in [`PyLock`], over the core's `InterProcessLock`
//! trait; the three lock classes extend it with what is theirs.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::PyClassInitializer;

use zkrecipes::lock::{
    CohortOptions, InterProcessLock, InterProcessMultiLock, InterProcessMutex,
    InterProcessReadWriteLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease,
    LeaseLost,
};
use zkrecipes::{runtime, Client, ConnectionState, LostPolicy, Owner};

use crate::args::{duration, Int, Text, Timeout};
use crate::bridge::{self, Call};
use crate::client::PyClient;
use crate::errors::{self, IntoPyResult};
use crate::local::Local;
use crate::owner::resolve;

/// A lost policy by name (`STANDARD`, `SESSION`), for locks and leaders alike.
pub fn lost_policy(py: Python<'_>, policy: &str) -> PyResult<LostPolicy> {
    match policy {
        "STANDARD" => Ok(LostPolicy::Standard),
        "SESSION" => Ok(LostPolicy::Session),
        other => Err(errors::invalid(
            py,
            format!("lost_policy must be STANDARD or SESSION, not {other:?}"),
        )),
    }
}

/// The name of a lost policy.
pub fn lost_policy_name(policy: LostPolicy) -> &'static str {
    match policy {
        LostPolicy::Session => "SESSION",
        _ => "STANDARD",
    }
}

type DynLock = Arc<dyn InterProcessLock>;

/// What every lock has: acquire and release for an owner. The base of the native lock classes.
#[pyclass(subclass, frozen, module = "zkrecipes._native", name = "Lock")]
pub struct PyLock {
    lock: Local<DynLock>,
}

impl PyLock {
    fn init(lock: DynLock) -> PyClassInitializer<PyLock> {
        PyClassInitializer::from(PyLock {
            lock: Local::new(lock),
        })
    }

    fn get(&self, py: Python<'_>) -> PyResult<DynLock> {
        self.lock.get(py, "lock").cloned()
    }
}

#[pymethods]
impl PyLock {
    /// Acquires for `owner` within `timeout`; whether it was acquired. An acquire nobody sees
    /// (interrupted or cancelled after it succeeded) is released again.
    #[pyo3(signature = (owner, timeout))]
    fn acquire(&self, py: Python<'_>, owner: u64, timeout: Timeout) -> PyResult<Call> {
        let lock = self.get(py)?;
        let owner = Owner::from_raw(owner);
        let undo_lock = lock.clone();
        Ok(Call::undoable(
            async move { lock.acquire(owner, timeout.0).await },
            bridge::to_obj(),
            Box::new(move |acquired| {
                if acquired {
                    release_later(undo_lock, owner);
                }
            }),
        ))
    }

    /// Releases one acquire of `owner` (to its end, whether or not it is still awaited).
    fn release(&self, py: Python<'_>, owner: u64) -> PyResult<Call> {
        let lock = self.get(py)?;
        Ok(Call::to_end(async move {
            lock.release(Owner::from_raw(owner)).await
        }))
    }

    /// `acquire(owner, timeout).wait()` for an `owner=` argument (an `Owner`, or None: the
    /// caller), in one call: the blocking `acquire` of the Python classes. It waits here
    /// ([`bridge::wait_for`]): a blocking wait never drops a result it got, so there is no undo
    /// to make, and no [`Call`].
    #[pyo3(signature = (owner, timeout))]
    fn acquire_wait(
        &self,
        py: Python<'_>,
        owner: Option<&Bound<'_, PyAny>>,
        timeout: Timeout,
    ) -> PyResult<bool> {
        let owner = Owner::from_raw(resolve(py, owner)?);
        let lock = self.get(py)?;
        bridge::wait_for(
            py,
            Box::pin(async move { lock.acquire(owner, timeout.0).await }),
        )
    }

    /// `release(owner).wait()` for an `owner=` argument, in one call.
    #[pyo3(signature = (owner))]
    fn release_wait(&self, py: Python<'_>, owner: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let owner = Owner::from_raw(resolve(py, owner)?);
        let lock = self.get(py)?;
        bridge::wait_for(py, Box::pin(async move { lock.release(owner).await }))
    }

    /// `release(owner).wait()` for a raw owner (the one a `with` block entered as).
    fn release_raw_wait(&self, py: Python<'_>, owner: u64) -> PyResult<()> {
        let lock = self.get(py)?;
        bridge::wait_for(
            py,
            Box::pin(async move { lock.release(Owner::from_raw(owner)).await }),
        )
    }

    /// Starts a release in the background (for an abandoned acquire); errors are dropped.
    fn release_later(&self, py: Python<'_>, owner: u64) -> PyResult<()> {
        release_later(self.get(py)?, Owner::from_raw(owner));
        Ok(())
    }

    fn is_acquired_in_this_process(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.get(py)?.is_acquired_in_this_process())
    }
}

fn release_later(lock: DynLock, owner: Owner) {
    runtime::spawn(async move {
        let _ = lock.release(owner).await;
    });
}

/// The native mutex; `zkrecipes.InterProcessMutex` wraps it.
#[pyclass(extends = PyLock, frozen, module = "zkrecipes._native", name = "InterProcessMutex")]
pub struct PyMutex {
    inner: Local<InterProcessMutex>,
}

impl PyMutex {
    /// A native mutex object for a core mutex made in this process.
    pub fn wrap(py: Python<'_>, m: InterProcessMutex) -> PyResult<Py<PyMutex>> {
        Py::new(py, PyMutex::init(m))
    }

    fn init(m: InterProcessMutex) -> PyClassInitializer<PyMutex> {
        PyLock::init(Arc::new(m.clone())).add_subclass(PyMutex {
            inner: Local::new(m),
        })
    }

    fn m(&self, py: Python<'_>) -> PyResult<InterProcessMutex> {
        self.inner.get(py, "lock").cloned()
    }
}

#[pymethods]
impl PyMutex {
    /// `cohort`: `(max_handoffs, max_hold seconds)` opts the object into cohort handoffs
    /// (`zkrecipes.CohortOptions`, checked there and again here).
    #[new]
    #[pyo3(signature = (client, path, data = None, cohort = None))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        data: Option<Vec<u8>>,
        cohort: Option<(Int<u32>, f64)>,
    ) -> PyResult<PyClassInitializer<PyMutex>> {
        let c = client.core(py)?;
        let mut m = match data {
            Some(d) => InterProcessMutex::with_data(&c, &path, d),
            None => InterProcessMutex::new(&c, &path),
        }
        .py_err(py)?;
        if let Some((max_handoffs, max_hold)) = cohort {
            let options = CohortOptions {
                max_handoffs: max_handoffs.0,
                max_hold: duration(py, "max_hold", max_hold)?,
            };
            m = m.with_cohort(options).py_err(py)?;
        }
        Ok(PyMutex::init(m))
    }

    fn is_owned_by(&self, py: Python<'_>, owner: u64) -> PyResult<bool> {
        Ok(self.m(py)?.is_owned_by(Owner::from_raw(owner)))
    }

    fn is_held_valid(&self, py: Python<'_>, owner: u64) -> PyResult<bool> {
        Ok(self.m(py)?.is_held_valid(Owner::from_raw(owner)))
    }

    fn fencing_token(&self, py: Python<'_>, owner: u64) -> PyResult<Option<i64>> {
        Ok(self.m(py)?.fencing_token(Owner::from_raw(owner)))
    }

    /// The wide fencing token of `owner`'s hold (`zxid << 32 | handoff`), or None.
    fn fencing_token_wide(&self, py: Python<'_>, owner: u64) -> PyResult<Option<u128>> {
        Ok(self
            .m(py)?
            .fencing_token_wide(Owner::from_raw(owner))
            .map(|t| t.wide()))
    }

    fn lock_node(&self, py: Python<'_>, owner: u64) -> PyResult<Option<String>> {
        Ok(self.m(py)?.lock_node(Owner::from_raw(owner)))
    }

    /// Owners waiting in the cohort's local queue (0 without cohort handoffs).
    #[getter]
    fn local_waiters(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.m(py)?.local_waiters())
    }

    /// `(max_handoffs, max_hold seconds)`, or None without cohort handoffs.
    #[getter]
    fn cohort_options(&self, py: Python<'_>) -> PyResult<Option<(u32, f64)>> {
        Ok(self
            .m(py)?
            .cohort_options()
            .map(|o| (o.max_handoffs, o.max_hold.as_secs_f64())))
    }

    fn participant_nodes(&self, py: Python<'_>) -> PyResult<Call> {
        let m = self.m(py)?;
        Ok(Call::value(async move { m.participant_nodes().await }))
    }

    /// Calls `callback(owner_id)` on the lock's dispatcher thread when a hold is lost; returns
    /// an id for `remove_lost_listener`.
    fn on_lost(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        Ok(self
            .m(py)?
            .on_lost(bridge::listener(callback, |o: Owner| (o.as_raw(),))))
    }

    fn remove_lost_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.m(py)?.remove_lost_listener(id).py_err(py)
    }

    /// Curator's makeRevocable: `callback(owner_id)` when another process asks for the lock.
    fn make_revocable(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.m(py)?
            .make_revocable(bridge::listener(callback, |o: Owner| (o.as_raw(),)))
            .py_err(py)
    }

    #[getter]
    fn lost_policy(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(lost_policy_name(self.m(py)?.lost_policy()))
    }

    #[setter]
    fn set_lost_policy(&self, py: Python<'_>, policy: Text) -> PyResult<()> {
        let p = lost_policy(py, &policy)?;
        self.m(py)?.set_lost_policy(p);
        Ok(())
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.m(py)?.path().to_string())
    }
}

/// Curator's Revoker.attemptRevoke: asks the holder of the lock node `node_path` to release.
#[pyfunction]
pub fn attempt_revoke(py: Python<'_>, client: &PyClient, node_path: Text) -> PyResult<Call> {
    let c = client.core(py)?;
    Ok(Call::unit(async move {
        zkrecipes::lock::attempt_revoke(&c, &node_path).await
    }))
}

/// The native read/write lock: two mutexes sharing one path.
#[pyclass(
    frozen,
    module = "zkrecipes._native",
    name = "InterProcessReadWriteLock"
)]
pub struct PyReadWriteLock {
    inner: Local<InterProcessReadWriteLock>,
}

#[pymethods]
impl PyReadWriteLock {
    #[new]
    #[pyo3(signature = (client, path, data = None))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        data: Option<Vec<u8>>,
    ) -> PyResult<PyReadWriteLock> {
        let c = client.core(py)?;
        let l = match data {
            Some(d) => InterProcessReadWriteLock::with_data(&c, &path, d),
            None => InterProcessReadWriteLock::new(&c, &path),
        }
        .py_err(py)?;
        Ok(PyReadWriteLock {
            inner: Local::new(l),
        })
    }

    /// The shared side (`__READ__` nodes).
    fn read_lock(&self, py: Python<'_>) -> PyResult<Py<PyMutex>> {
        PyMutex::wrap(py, self.inner.get(py, "lock")?.read_lock().clone())
    }

    /// The exclusive side (`__WRIT__` nodes).
    fn write_lock(&self, py: Python<'_>) -> PyResult<Py<PyMutex>> {
        PyMutex::wrap(py, self.inner.get(py, "lock")?.write_lock().clone())
    }
}

/// The native semaphore mutex (not reentrant, not owned: the owner argument is ignored).
#[pyclass(
    extends = PyLock,
    frozen,
    module = "zkrecipes._native",
    name = "InterProcessSemaphoreMutex"
)]
pub struct PySemaphoreMutex {
    inner: Local<InterProcessSemaphoreMutex>,
}

impl PySemaphoreMutex {
    fn m(&self, py: Python<'_>) -> PyResult<InterProcessSemaphoreMutex> {
        self.inner.get(py, "lock").cloned()
    }
}

#[pymethods]
impl PySemaphoreMutex {
    #[new]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
    ) -> PyResult<PyClassInitializer<PySemaphoreMutex>> {
        let c = client.core(py)?;
        let m = InterProcessSemaphoreMutex::new(&c, &path).py_err(py)?;
        Ok(
            PyLock::init(Arc::new(m.clone())).add_subclass(PySemaphoreMutex {
                inner: Local::new(m),
            }),
        )
    }

    #[getter]
    fn lease_node(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.m(py)?.lease_node())
    }

    fn participant_nodes(&self, py: Python<'_>) -> PyResult<Call> {
        let m = self.m(py)?;
        Ok(Call::value(async move {
            m.semaphore().participant_nodes().await
        }))
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.m(py)?.semaphore().path().to_string())
    }
}

/// One lease of a semaphore. `release()` (or leaving `with lease:`) returns it; a lease
/// dropped without release is returned in the background. `wait_lost()` / `wait_lost_async()`
/// wait until it can no longer be counted on, and say why.
#[pyclass(frozen, module = "zkrecipes", name = "Lease")]
pub struct PyLease {
    lease: Mutex<Option<Local<Lease>>>,
    /// To read the lease node's data without holding `lease` (a release may come meanwhile).
    client: Local<Client>,
    path: String,
    czxid: i64,
}

impl PyLease {
    fn new(client: &Client, lease: Lease) -> PyLease {
        PyLease {
            path: lease.path().to_string(),
            czxid: lease.czxid(),
            client: Local::new(client.clone()),
            lease: Mutex::new(Some(Local::new(lease))),
        }
    }

    fn take(&self) -> Option<Lease> {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .and_then(Local::into_inner)
    }

    fn is_returned(&self) -> bool {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// The core's lost signal of the lease under `lost_policy` (None: STANDARD), watching from
    /// now; `ClosedError` once the lease was returned.
    fn lost_signal(
        &self,
        py: Python<'_>,
        lost_policy: Option<Text>,
    ) -> PyResult<impl std::future::Future<Output = LeaseLost> + Send + 'static> {
        let policy = match lost_policy {
            None => LostPolicy::Standard,
            Some(name) => self::lost_policy(py, &name)?,
        };
        let guard = self.lease.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(lease) => Ok(lease.get(py, "lease")?.lost_signal(policy)),
            None => Err(errors::closed(
                py,
                format!("lease {} was returned: it can no longer be lost", self.path),
            )),
        }
    }
}

#[pymethods]
impl PyLease {
    /// The lease node's path.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// The lease node's czxid (increases with every lease made).
    #[getter]
    fn czxid(&self) -> i64 {
        self.czxid
    }

    /// Whether the lease was returned.
    #[getter]
    fn returned(&self) -> bool {
        self.is_returned()
    }

    /// The data stored in the lease node (`ClosedError` once the lease was returned). Another
    /// thread may return the lease meanwhile: nothing is locked while the read waits.
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.is_returned() {
            return Err(errors::closed(
                py,
                format!("lease {} was returned", self.path),
            ));
        }
        let client = self.client.get(py, "lease")?.clone();
        let path = self.path.clone();
        Call::value(async move { client.get_data(&path).await.map(|(d, _)| d) }).run(py)
    }

    /// Blocks (GIL released; Ctrl-C interrupts it on the main thread) until the lease can no
    /// longer be counted on (the core's `Lease::lost_signal` under `lost_policy`) or `timeout`
    /// passes: why (a `LeaseLost`), or None. `ClosedError` if the lease was returned.
    #[pyo3(signature = (timeout = Timeout(None), lost_policy = None))]
    fn wait_lost(
        &self,
        py: Python<'_>,
        timeout: Timeout,
        lost_policy: Option<Text>,
    ) -> PyResult<Option<PyLeaseLost>> {
        let signal = self.lost_signal(py, lost_policy)?;
        let why = bridge::wait_for(
            py,
            Box::pin(async move { Ok(zkrecipes::timeout::within(timeout.0, signal).await) }),
        )?;
        Ok(why.map(PyLeaseLost::new))
    }

    /// `wait_lost` for asyncio: a `Call` to await. The signal watches the connection from this
    /// call on.
    #[pyo3(signature = (timeout = Timeout(None), lost_policy = None))]
    fn wait_lost_async(
        &self,
        py: Python<'_>,
        timeout: Timeout,
        lost_policy: Option<Text>,
    ) -> PyResult<Call> {
        let signal = self.lost_signal(py, lost_policy)?;
        Ok(Call::new(
            async move { Ok(zkrecipes::timeout::within(timeout.0, signal).await) },
            lease_lost_obj,
        ))
    }

    /// Returns the lease (deletes its node). Returning it twice is a no-op.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(l) = self.take() {
            Call::unit(async move { l.release().await }).run(py)?;
        }
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<Bound<'_, PyAny>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.release(py)
    }

    fn __repr__(&self) -> String {
        format!("Lease(path={:?}, czxid={})", self.path, self.czxid)
    }
}

/// Why a lease was lost (`Lease.wait_lost`): the core's `LeaseLost`, read-only.
#[pyclass(frozen, eq, module = "zkrecipes", name = "LeaseLost")]
#[derive(PartialEq)]
pub struct PyLeaseLost {
    reason: &'static str,
    state: Option<&'static str>,
    message: String,
}

impl PyLeaseLost {
    fn new(why: LeaseLost) -> PyLeaseLost {
        PyLeaseLost {
            reason: why.kind_name(),
            state: why.state().map(ConnectionState::name),
            message: why.to_string(),
        }
    }
}

#[pymethods]
impl PyLeaseLost {
    /// The kind (a `LeaseLostReason` name): `STATE`, `CLOSED`, `SESSION_CHANGED`, `NODE_GONE`.
    #[getter]
    fn reason(&self) -> &'static str {
        self.reason
    }

    /// The connection state (a `ConnectionState` name) when the reason is `STATE`, else None.
    #[getter]
    fn state(&self) -> Option<&'static str> {
        self.state
    }

    /// The core's sentence for it.
    #[getter]
    fn message(&self) -> &str {
        &self.message
    }

    fn __str__(&self) -> &str {
        &self.message
    }

    fn __repr__(&self) -> String {
        match self.state {
            Some(state) => format!("LeaseLost(reason='{}', state='{state}')", self.reason),
            None => format!("LeaseLost(reason='{}')", self.reason),
        }
    }
}

/// The first of `signal` and `timeout` (None: no limit): why the lease was lost, or None.
fn lease_lost_obj(py: Python<'_>, why: Option<LeaseLost>) -> PyResult<Py<PyAny>> {
    match why {
        None => Ok(py.None()),
        Some(why) => bridge::obj(py, PyLeaseLost::new(why)),
    }
}

/// Leases on their way to Python (cloneable for the undo; dropped ones are returned).
#[derive(Clone)]
struct Leases(Arc<Mutex<Option<Vec<Lease>>>>);

impl Leases {
    fn take(&self) -> Option<Vec<Lease>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The native counting semaphore.
#[pyclass(frozen, module = "zkrecipes._native", name = "InterProcessSemaphoreV2")]
pub struct PySemaphore {
    inner: Local<InterProcessSemaphoreV2>,
    client: Local<Client>,
}

impl PySemaphore {
    fn s(&self, py: Python<'_>) -> PyResult<InterProcessSemaphoreV2> {
        self.inner.get(py, "semaphore").cloned()
    }
}

#[pymethods]
impl PySemaphore {
    /// `max_leases` fixed, or `count` (a native SharedCount) giving it live; exactly one.
    #[new]
    #[pyo3(signature = (client, path, max_leases, data = None, count = None))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        max_leases: Option<Int<usize>>,
        data: Option<Vec<u8>>,
        count: Option<PyRef<'_, crate::atomic::PySharedCount>>,
    ) -> PyResult<PySemaphore> {
        let c = client.core(py)?;
        let data = data.unwrap_or_default();
        let s = match (max_leases, count) {
            (Some(n), None) => InterProcessSemaphoreV2::with_data(&c, &path, n.0, data),
            (None, Some(count)) => {
                InterProcessSemaphoreV2::with_count_and_data(&c, &path, &*count.s(py)?, data)
            }
            _ => {
                return Err(errors::invalid(
                    py,
                    "give either max_leases or count (a SharedCount), not both or neither",
                ))
            }
        }
        .py_err(py)?;
        Ok(PySemaphore {
            inner: Local::new(s),
            client: Local::new(c),
        })
    }

    /// `qty` leases within `timeout`, or None (all or nothing). Leases nobody sees (an
    /// interrupted or cancelled acquire) are returned.
    #[pyo3(signature = (qty, timeout))]
    fn acquire(&self, py: Python<'_>, qty: Int<usize>, timeout: Timeout) -> PyResult<Call> {
        let s = self.s(py)?;
        let client = self.client.get(py, "semaphore")?.clone();
        Ok(Call::undoable(
            async move {
                s.acquire(qty.0, timeout.0)
                    .await
                    .map(|v| Leases(Arc::new(Mutex::new(v))))
            },
            move |py, leases: Leases| match leases.take() {
                None => Ok(py.None()),
                Some(v) => {
                    let items: Vec<PyLease> =
                        v.into_iter().map(|l| PyLease::new(&client, l)).collect();
                    bridge::obj(py, items)
                }
            },
            // Dropping the undo's copy returns leases nobody saw.
            Box::new(|leases: Leases| drop(leases.take())),
        ))
    }

    /// Returns a lease (Curator's returnLease).
    fn return_lease(&self, py: Python<'_>, lease: &PyLease) -> PyResult<()> {
        lease.release(py)
    }

    #[getter]
    fn max_leases(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.s(py)?.max_leases())
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.s(py)?.path().to_string())
    }

    fn participant_nodes(&self, py: Python<'_>) -> PyResult<Call> {
        let s = self.s(py)?;
        Ok(Call::value(async move { s.participant_nodes().await }))
    }
}

/// The native multi lock: all of several locks, or none.
#[pyclass(
    extends = PyLock,
    frozen,
    module = "zkrecipes._native",
    name = "InterProcessMultiLock"
)]
pub struct PyMultiLock {}

#[pymethods]
impl PyMultiLock {
    /// Over `paths` (a mutex each) or over existing locks (mutexes, semaphore mutexes).
    #[new]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        members: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<PyMultiLock>> {
        let c = client.core(py)?;
        let multi = if members
            .iter()
            .all(|m| m.is_instance_of::<pyo3::types::PyString>())
        {
            let paths: Vec<Text> = members
                .iter()
                .map(|m| m.extract())
                .collect::<PyResult<_>>()?;
            let refs: Vec<&str> = paths.iter().map(|p| &**p).collect();
            InterProcessMultiLock::new(&c, &refs).py_err(py)?
        } else {
            let mut locks: Vec<DynLock> = Vec::new();
            for m in &members {
                match m.cast::<PyLock>() {
                    Ok(lock) if !m.is_instance_of::<PyMultiLock>() => {
                        locks.push(lock.get().get(py)?)
                    }
                    _ => return Err(pyo3::exceptions::PyTypeError::new_err(
                        "a multi lock takes lock paths (str) or zkrecipes lock objects, not a mix",
                    )),
                }
            }
            InterProcessMultiLock::from_locks(locks).py_err(py)?
        };
        Ok(PyLock::init(Arc::new(multi)).add_subclass(PyMultiLock {}))
    }
}
