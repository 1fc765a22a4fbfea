//! Owners: who holds a lock. The hand-written package maps Python's notion (the current thread,
//! or inside a coroutine the current asyncio Task) onto the core's opaque [`zkrecipes::Owner`];
//! `zkrecipes.Owner()` is an explicit one.

use pyo3::prelude::*;

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

/// The owner id of the calling OS thread (one per thread, for the thread's whole life).
#[pyfunction]
pub fn thread_owner_id() -> u64 {
    zkrecipes::Owner::current_thread().as_raw()
}

/// A fresh owner id (for an asyncio Task).
#[pyfunction]
pub fn new_owner_id() -> u64 {
    zkrecipes::Owner::new().as_raw()
}
