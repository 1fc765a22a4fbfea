//! The Python face of zkrecipes: the native module `zkrecipes._native`, wrapped by the
//! hand-written package `zkrecipes` (bindings-python/python/zkrecipes).
//!
//! This crate holds no recipe logic: it checks arguments, maps types, owners and errors, and
//! waits for the core with the GIL released. Every wait runs on the core's one runtime.

mod atomic;
mod bridge;
mod client;
mod errors;
mod leader;
mod local;
mod lock;
mod observer;
mod owner;

use pyo3::prelude::*;

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", zkrecipes::VERSION)?;
    m.add_class::<client::PyClient>()?;
    m.add_class::<client::PyStat>()?;
    m.add_class::<owner::PyOwner>()?;
    m.add_class::<lock::PyMutex>()?;
    m.add_class::<lock::PyReadWriteLock>()?;
    m.add_class::<lock::PySemaphoreMutex>()?;
    m.add_class::<lock::PySemaphore>()?;
    m.add_class::<lock::PyLease>()?;
    m.add_class::<lock::PyMultiLock>()?;
    m.add_function(wrap_pyfunction!(lock::attempt_revoke, m)?)?;
    m.add_class::<leader::PyParticipant>()?;
    m.add_class::<leader::PyLeaderLatch>()?;
    m.add_class::<leader::PyLeadershipContext>()?;
    m.add_class::<leader::PyLeaderSelector>()?;
    m.add_class::<observer::PyLeaderObserver>()?;
    m.add_class::<atomic::PyAtomicStats>()?;
    m.add_class::<atomic::PyAtomicValue>()?;
    m.add_class::<atomic::PyVersionedValue>()?;
    m.add_class::<atomic::PyAtomicNumber>()?;
    m.add_class::<atomic::PySharedCount>()?;
    m.add_function(wrap_pyfunction!(owner::thread_owner_id, m)?)?;
    m.add_function(wrap_pyfunction!(owner::new_owner_id, m)?)?;
    Ok(())
}
