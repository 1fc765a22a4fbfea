//! Owners: who holds a lock. The hand-written package maps Python's notion (the current thread,
//! or inside a coroutine the current asyncio Task) onto the core's opaque [`zkrecipes::Owner`];
//! `zkrecipes.Owner()` is an explicit one.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// An explicit lock owner: pass it as `owner=` to acquire and release from anywhere (any thread
/// or task) as one party. Two `Owner` objects are never the same owner.
#[pyclass(frozen, eq, hash, module = "zkrecipes", name = "Owner")]
#[derive(PartialEq, Eq, Hash)]
pub struct PyOwner {
    raw: u64,
}

#[pymethods]
impl PyOwner {
    /// A fresh owner, distinct from every other owner in this process.
    #[new]
    fn new() -> PyOwner {
        PyOwner {
            raw: zkrecipes::Owner::new().as_raw(),
        }
    }

    /// The owner's opaque number (stable for the owner's life, unique in this process).
    #[getter]
    fn id(&self) -> u64 {
        self.raw
    }

    fn __repr__(&self) -> String {
        format!("Owner({})", self.raw)
    }
}

impl PyOwner {
    /// The raw value.
    pub fn raw(&self) -> u64 {
        self.raw
    }
}

/// The owner id of the calling OS thread (one per thread, for the thread's whole life; inside a
/// callback the library runs, that call's own).
#[pyfunction]
pub fn thread_owner_id() -> u64 {
    zkrecipes::Owner::current_thread().as_raw()
}

/// A fresh owner id (for an asyncio Task).
#[pyfunction]
pub fn new_owner_id() -> u64 {
    zkrecipes::Owner::new().as_raw()
}

/// `asyncio.events._get_running_loop` (the C function: None when no loop runs in this thread).
static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
/// `zkrecipes._owners.current_owner_id` (the Task-owner lookup, in Python).
static CURRENT_OWNER_ID: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The raw owner for an `owner=` argument: an [`Owner`](PyOwner)'s id; for None the caller,
/// which is its asyncio Task when a loop runs in this thread with a current task, else its OS
/// thread; anything else is a TypeError. The one home of that rule: Python's
/// `zkrecipes._owners.owner_id` is this function (`_native.resolve_owner`), and the blocking
/// acquire and release call it directly. The thread's case (every blocking call from a plain
/// thread) runs no Python code: one call of the C function `_get_running_loop`; a running loop
/// defers to `current_owner_id`, the Task-owner lookup in Python.
#[pyfunction(name = "resolve_owner", signature = (owner))]
pub fn resolve(py: Python<'_>, owner: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    match owner {
        Some(o) if !o.is_none() => match o.cast::<PyOwner>() {
            Ok(o) => Ok(o.get().raw),
            Err(_) => Err(PyTypeError::new_err(format!(
                "owner must be a zkrecipes.Owner or None, not {}",
                o.get_type().name()?
            ))),
        },
        _ => {
            let running = GET_RUNNING_LOOP
                .import(py, "asyncio.events", "_get_running_loop")?
                .call0()?;
            if running.is_none() {
                return Ok(thread_owner_id());
            }
            CURRENT_OWNER_ID
                .import(py, "zkrecipes._owners", "current_owner_id")?
                .call0()?
                .extract()
        }
    }
}
