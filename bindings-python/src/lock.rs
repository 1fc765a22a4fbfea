//! The lock family: `InterProcessMutex` (and the read/write lock's two sides, which are
//! mutexes too). Owners arrive as raw ids resolved by the hand-written package.

use std::time::Duration;

use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

use zkrecipes::lock::{
    InterProcessLock, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, LockLostPolicy,
};
use zkrecipes::{runtime, Owner};

use crate::bridge::{self, timeout};
use crate::client::PyClient;
use crate::errors::{self, IntoPyResult};
use crate::local::Local;

fn bool_obj(py: Python<'_>, b: bool) -> PyResult<Py<PyAny>> {
    Ok(pyo3::types::PyBool::new(py, b)
        .to_owned()
        .into_any()
        .unbind())
}

fn none_obj(py: Python<'_>, (): ()) -> PyResult<Py<PyAny>> {
    Ok(py.None())
}

/// Releases an acquire nobody will see (interrupted or cancelled after it succeeded).
fn undo_acquire(mutex: InterProcessMutex, owner: Owner) -> bridge::Undo<bool> {
    Box::new(move |acquired| {
        if acquired {
            runtime::spawn(async move {
                let _ = mutex.release(owner).await;
            });
        }
    })
}

/// The native mutex; `zkrecipes.InterProcessMutex` wraps it.
#[pyclass(frozen, module = "zkrecipes._native", name = "InterProcessMutex")]
pub struct PyMutex {
    inner: Local<InterProcessMutex>,
}

impl PyMutex {
    /// Wraps a core mutex made in this process.
    pub fn wrap(m: InterProcessMutex) -> PyMutex {
        PyMutex {
            inner: Local::new(m),
        }
    }

    fn m(&self, py: Python<'_>) -> PyResult<InterProcessMutex> {
        self.inner.get(py, "lock").cloned()
    }

    fn acquire_timeout(py: Python<'_>, t: Option<f64>) -> PyResult<Option<Duration>> {
        timeout(py, "timeout", t)
    }
}

#[pymethods]
impl PyMutex {
    #[new]
    #[pyo3(signature = (client, path, data = None))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: &str,
        data: Option<Vec<u8>>,
    ) -> PyResult<PyMutex> {
        let c = client.core(py)?;
        let m = match data {
            Some(d) => InterProcessMutex::with_data(&c, path, d),
            None => InterProcessMutex::new(&c, path),
        }
        .py_err(py)?;
        Ok(PyMutex::wrap(m))
    }

    #[pyo3(signature = (owner, timeout))]
    fn acquire(&self, py: Python<'_>, owner: u64, timeout: Option<f64>) -> PyResult<bool> {
        let m = self.m(py)?;
        let t = Self::acquire_timeout(py, timeout)?;
        let owner = Owner::from_raw(owner);
        let undo = undo_acquire(m.clone(), owner);
        bridge::wait(py, async move { m.acquire(owner, t).await }, Some(undo))
    }

    #[pyo3(signature = (event_loop, owner, timeout))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        owner: u64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = self.m(py)?;
        let t = Self::acquire_timeout(py, timeout)?;
        let owner = Owner::from_raw(owner);
        let undo = undo_acquire(m.clone(), owner);
        bridge::future(
            py,
            event_loop,
            async move { m.acquire(owner, t).await },
            Box::new(bool_obj),
            Some(undo),
        )
    }

    fn release(&self, py: Python<'_>, owner: u64) -> PyResult<()> {
        let m = self.m(py)?;
        // Fast path for errors: a non-owner learns it without a trip to the runtime.
        if !m.is_owned_by(Owner::from_raw(owner)) {
            return Err(errors::to_py(
                py,
                zkrecipes::Error::NotOwner(
                    format!("release lock {}: this owner does not hold it", m.path()).into(),
                ),
            ));
        }
        bridge::block(py, async move { m.release(Owner::from_raw(owner)).await })
    }

    fn release_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        owner: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = self.m(py)?;
        bridge::future(
            py,
            event_loop,
            async move { m.release(Owner::from_raw(owner)).await },
            Box::new(none_obj),
            None,
        )
    }

    /// Starts a release in the background (for an abandoned acquire); errors are dropped.
    fn release_later(&self, py: Python<'_>, owner: u64) -> PyResult<()> {
        let m = self.m(py)?;
        runtime::spawn(async move {
            let _ = m.release(Owner::from_raw(owner)).await;
        });
        Ok(())
    }

    fn is_owned_by(&self, py: Python<'_>, owner: u64) -> PyResult<bool> {
        Ok(self.m(py)?.is_owned_by(Owner::from_raw(owner)))
    }

    fn is_acquired_in_this_process(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.m(py)?.is_acquired_in_this_process())
    }

    fn is_held_valid(&self, py: Python<'_>, owner: u64) -> PyResult<bool> {
        Ok(self.m(py)?.is_held_valid(Owner::from_raw(owner)))
    }

    fn fencing_token(&self, py: Python<'_>, owner: u64) -> PyResult<Option<i64>> {
        Ok(self.m(py)?.fencing_token(Owner::from_raw(owner)))
    }

    fn lock_node(&self, py: Python<'_>, owner: u64) -> PyResult<Option<String>> {
        Ok(self.m(py)?.lock_node(Owner::from_raw(owner)))
    }

    fn participant_nodes(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let m = self.m(py)?;
        bridge::block(py, async move { m.participant_nodes().await })
    }

    fn participant_nodes_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = self.m(py)?;
        bridge::future(
            py,
            event_loop,
            async move { m.participant_nodes().await },
            Box::new(|py, v: Vec<String>| Ok(v.into_pyobject(py)?.into_any().unbind())),
            None,
        )
    }

    /// Calls `callback(owner_id)` on a library thread when a hold is lost.
    fn on_lost(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.m(py)?.on_lost(move |owner| {
            let cb = Python::try_attach(|py| callback.clone_ref(py));
            if let Some(cb) = cb {
                bridge::call_soon(cb, (owner.as_raw(),));
            }
        });
        Ok(())
    }

    /// Curator's makeRevocable: `callback(owner_id)` when another process asks for the lock.
    fn make_revocable(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.m(py)?.make_revocable(move |owner| {
            let cb = Python::try_attach(|py| callback.clone_ref(py));
            if let Some(cb) = cb {
                bridge::call_soon(cb, (owner.as_raw(),));
            }
        });
        Ok(())
    }

    #[getter]
    fn lost_policy(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(match self.m(py)?.lost_policy() {
            LockLostPolicy::Session => "SESSION",
            _ => "STANDARD",
        })
    }

    #[setter]
    fn set_lost_policy(&self, py: Python<'_>, policy: &str) -> PyResult<()> {
        let p = match policy {
            "STANDARD" => LockLostPolicy::Standard,
            "SESSION" => LockLostPolicy::Session,
            other => {
                return Err(errors::invalid(
                    py,
                    format!("lost policy must be STANDARD or SESSION, not {other:?}"),
                ))
            }
        };
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
pub fn attempt_revoke(py: Python<'_>, client: &PyClient, node_path: String) -> PyResult<()> {
    let c = client.core(py)?;
    bridge::block(py, async move {
        zkrecipes::lock::attempt_revoke(&c, &node_path).await
    })
}

impl PyMutex {
    /// The core mutex as a member of a multi lock.
    fn as_lock(&self, py: Python<'_>) -> PyResult<Arc<dyn InterProcessLock>> {
        Ok(Arc::new(self.m(py)?))
    }
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
        path: &str,
        data: Option<Vec<u8>>,
    ) -> PyResult<PyReadWriteLock> {
        let c = client.core(py)?;
        let l = match data {
            Some(d) => InterProcessReadWriteLock::with_data(&c, path, d),
            None => InterProcessReadWriteLock::new(&c, path),
        }
        .py_err(py)?;
        Ok(PyReadWriteLock {
            inner: Local::new(l),
        })
    }

    /// The shared side (`__READ__` nodes).
    fn read_lock(&self, py: Python<'_>) -> PyResult<PyMutex> {
        Ok(PyMutex::wrap(
            self.inner.get(py, "lock")?.read_lock().clone(),
        ))
    }

    /// The exclusive side (`__WRIT__` nodes).
    fn write_lock(&self, py: Python<'_>) -> PyResult<PyMutex> {
        Ok(PyMutex::wrap(
            self.inner.get(py, "lock")?.write_lock().clone(),
        ))
    }
}

/// The native semaphore mutex (not reentrant, not owned: the owner argument is ignored).
#[pyclass(
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

fn undo_semaphore_acquire(m: InterProcessSemaphoreMutex) -> bridge::Undo<bool> {
    Box::new(move |acquired| {
        if acquired {
            runtime::spawn(async move {
                let _ = m.release().await;
            });
        }
    })
}

#[pymethods]
impl PySemaphoreMutex {
    #[new]
    fn new(py: Python<'_>, client: &PyClient, path: &str) -> PyResult<PySemaphoreMutex> {
        let c = client.core(py)?;
        Ok(PySemaphoreMutex {
            inner: Local::new(InterProcessSemaphoreMutex::new(&c, path).py_err(py)?),
        })
    }

    #[pyo3(signature = (_owner, timeout))]
    fn acquire(&self, py: Python<'_>, _owner: u64, timeout: Option<f64>) -> PyResult<bool> {
        let m = self.m(py)?;
        let t = self::timeout(py, "timeout", timeout)?;
        let undo = undo_semaphore_acquire(m.clone());
        bridge::wait(py, async move { m.acquire(t).await }, Some(undo))
    }

    #[pyo3(signature = (event_loop, _owner, timeout))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        _owner: u64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = self.m(py)?;
        let t = self::timeout(py, "timeout", timeout)?;
        let undo = undo_semaphore_acquire(m.clone());
        bridge::future(
            py,
            event_loop,
            async move { m.acquire(t).await },
            Box::new(bool_obj),
            Some(undo),
        )
    }

    fn release(&self, py: Python<'_>, _owner: u64) -> PyResult<()> {
        let m = self.m(py)?;
        bridge::block(py, async move { m.release().await })
    }

    fn release_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        _owner: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = self.m(py)?;
        bridge::future(
            py,
            event_loop,
            async move { m.release().await },
            Box::new(none_obj),
            None,
        )
    }

    fn release_later(&self, py: Python<'_>, _owner: u64) -> PyResult<()> {
        let m = self.m(py)?;
        runtime::spawn(async move {
            let _ = m.release().await;
        });
        Ok(())
    }

    fn is_acquired_in_this_process(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.m(py)?.is_acquired_in_this_process())
    }

    #[getter]
    fn lease_node(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.m(py)?.lease_node())
    }

    fn participant_nodes(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let m = self.m(py)?;
        bridge::block(py, async move { m.semaphore().participant_nodes().await })
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.m(py)?.semaphore().path().to_string())
    }
}

/// One lease of a semaphore. `release()` (or leaving `with lease:`) returns it; a lease
/// dropped without release is returned in the background.
#[pyclass(frozen, module = "zkrecipes", name = "Lease")]
pub struct PyLease {
    lease: Mutex<Option<Local<Lease>>>,
    path: String,
    czxid: i64,
}

impl PyLease {
    fn new(lease: Lease) -> PyLease {
        PyLease {
            path: lease.path().to_string(),
            czxid: lease.czxid(),
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
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// The data stored in the lease node.
    fn data(&self, py: Python<'_>) -> PyResult<Vec<u8>> {
        let path = self.path.clone();
        let guard = self.lease.lock().unwrap_or_else(|e| e.into_inner());
        let Some(local) = guard.as_ref() else {
            return Err(errors::closed(py, format!("lease {path} was returned")));
        };
        let lease = local.get(py, "lease")?;
        // Lease::data borrows the lease, so it runs on this thread (the core's blocking face).
        let fut = lease.data();
        let r = py.detach(|| zkrecipes::runtime::try_block_on(fut));
        drop(guard);
        r.and_then(|r| r).py_err(py)
    }

    /// Returns the lease (deletes its node). Returning it twice is a no-op.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        match self.take() {
            Some(l) => bridge::block(py, async move { l.release().await }),
            None => Ok(()),
        }
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

/// Leases on their way to Python (cloneable for the asyncio bridge; dropped ones are returned).
#[derive(Clone)]
struct Leases(Arc<Mutex<Option<Vec<Lease>>>>);

fn leases_obj(py: Python<'_>, leases: Leases) -> PyResult<Py<PyAny>> {
    match leases.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
        None => Ok(py.None()),
        Some(v) => {
            let items: Vec<PyLease> = v.into_iter().map(PyLease::new).collect();
            Ok(items.into_pyobject(py)?.into_any().unbind())
        }
    }
}

/// The native counting semaphore.
#[pyclass(frozen, module = "zkrecipes._native", name = "InterProcessSemaphoreV2")]
pub struct PySemaphore {
    inner: Local<InterProcessSemaphoreV2>,
}

impl PySemaphore {
    fn s(&self, py: Python<'_>) -> PyResult<InterProcessSemaphoreV2> {
        self.inner.get(py, "semaphore").cloned()
    }
}

#[pymethods]
impl PySemaphore {
    #[new]
    #[pyo3(signature = (client, path, max_leases, data = None))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: &str,
        max_leases: usize,
        data: Option<Vec<u8>>,
    ) -> PyResult<PySemaphore> {
        let c = client.core(py)?;
        let s = match data {
            Some(d) => InterProcessSemaphoreV2::with_data(&c, path, max_leases, d),
            None => InterProcessSemaphoreV2::new(&c, path, max_leases),
        }
        .py_err(py)?;
        Ok(PySemaphore {
            inner: Local::new(s),
        })
    }

    /// `qty` leases within `timeout`, or None (all or nothing).
    #[pyo3(signature = (qty, timeout))]
    fn acquire(
        &self,
        py: Python<'_>,
        qty: usize,
        timeout: Option<f64>,
    ) -> PyResult<Option<Vec<PyLease>>> {
        let s = self.s(py)?;
        let t = self::timeout(py, "timeout", timeout)?;
        // A result nobody will see is dropped, which returns its leases.
        let got = bridge::block(py, async move { s.acquire(qty, t).await })?;
        Ok(got.map(|v| v.into_iter().map(PyLease::new).collect()))
    }

    #[pyo3(signature = (event_loop, qty, timeout))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        qty: usize,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = self.s(py)?;
        let t = self::timeout(py, "timeout", timeout)?;
        bridge::future(
            py,
            event_loop,
            async move {
                s.acquire(qty, t)
                    .await
                    .map(|v| Leases(Arc::new(Mutex::new(v))))
            },
            Box::new(leases_obj),
            // Dropping the undo's copy returns leases a cancelled caller never saw.
            Some(Box::new(|leases: Leases| {
                drop(leases.0.lock().unwrap_or_else(|e| e.into_inner()).take())
            })),
        )
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

    fn participant_nodes(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let s = self.s(py)?;
        bridge::block(py, async move { s.participant_nodes().await })
    }
}

/// The native multi lock: all of several locks, or none.
#[pyclass(frozen, module = "zkrecipes._native", name = "InterProcessMultiLock")]
pub struct PyMultiLock {
    inner: Local<InterProcessMultiLock>,
}

impl PyMultiLock {
    fn m(&self, py: Python<'_>) -> PyResult<InterProcessMultiLock> {
        self.inner.get(py, "lock").cloned()
    }
}

fn undo_multi(m: InterProcessMultiLock, owner: Owner) -> bridge::Undo<bool> {
    Box::new(move |acquired| {
        if acquired {
            runtime::spawn(async move {
                let _ = m.release(owner).await;
            });
        }
    })
}

#[pymethods]
impl PyMultiLock {
    /// Over `paths` (a mutex each) or over existing locks (mutexes, semaphore mutexes).
    #[new]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        members: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<PyMultiLock> {
        let c = client.core(py)?;
        if members
            .iter()
            .all(|m| m.is_instance_of::<pyo3::types::PyString>())
        {
            let paths: Vec<String> = members
                .iter()
                .map(|m| m.extract())
                .collect::<PyResult<_>>()?;
            let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
            return Ok(PyMultiLock {
                inner: Local::new(InterProcessMultiLock::new(&c, &refs).py_err(py)?),
            });
        }
        let mut locks: Vec<Arc<dyn InterProcessLock>> = Vec::new();
        for m in &members {
            if let Ok(mutex) = m.cast::<PyMutex>() {
                locks.push(mutex.get().as_lock(py)?);
            } else if let Ok(sem) = m.cast::<PySemaphoreMutex>() {
                locks.push(Arc::new(sem.get().m(py)?));
            } else {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "a multi lock takes lock paths (str) or zkrecipes lock objects, not a mix",
                ));
            }
        }
        Ok(PyMultiLock {
            inner: Local::new(InterProcessMultiLock::from_locks(locks).py_err(py)?),
        })
    }

    #[pyo3(signature = (owner, timeout))]
    fn acquire(&self, py: Python<'_>, owner: u64, timeout: Option<f64>) -> PyResult<bool> {
        let m = self.m(py)?;
        let t = self::timeout(py, "timeout", timeout)?;
        let owner = Owner::from_raw(owner);
        let undo = undo_multi(m.clone(), owner);
        bridge::wait(py, async move { m.acquire(owner, t).await }, Some(undo))
    }

    #[pyo3(signature = (event_loop, owner, timeout))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        owner: u64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = self.m(py)?;
        let t = self::timeout(py, "timeout", timeout)?;
        let owner = Owner::from_raw(owner);
        let undo = undo_multi(m.clone(), owner);
        bridge::future(
            py,
            event_loop,
            async move { m.acquire(owner, t).await },
            Box::new(bool_obj),
            Some(undo),
        )
    }

    fn release(&self, py: Python<'_>, owner: u64) -> PyResult<()> {
        let m = self.m(py)?;
        bridge::block(py, async move { m.release(Owner::from_raw(owner)).await })
    }

    fn release_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        owner: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = self.m(py)?;
        bridge::future(
            py,
            event_loop,
            async move { m.release(Owner::from_raw(owner)).await },
            Box::new(none_obj),
            None,
        )
    }

    fn release_later(&self, py: Python<'_>, owner: u64) -> PyResult<()> {
        let m = self.m(py)?;
        runtime::spawn(async move {
            let _ = m.release(Owner::from_raw(owner)).await;
        });
        Ok(())
    }

    fn is_acquired_in_this_process(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.m(py)?.is_acquired_in_this_process())
    }
}
