//! The Python face of zkrecipes: the native module `zkrecipes._native`, wrapped by the
//! hand-written package `zkrecipes` (bindings-python/python/zkrecipes).
//!
//! This crate holds no recipe logic: it checks arguments, maps types, owners and errors, and
//! waits for the core with the GIL released. Every wait runs on the core's one runtime.

mod args;
mod atomic;
mod barriers;
mod bridge;
mod cache;
mod client;
mod discovery;
mod ensemble;
mod errors;
mod leader;
mod local;
mod lock;
mod logging;
mod nodes;
mod observer;
mod owner;
mod partition;
mod queue;
#[cfg(feature = "kit")]
mod testing;
mod turns;
mod values;
mod watches;

use pyo3::prelude::*;

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", zkrecipes::VERSION)?;
    // No callback may hold the GIL when the interpreter starts finalizing (bridge::attach).
    let shutdown = wrap_pyfunction!(bridge::_shutdown, m)?;
    m.py()
        .import("atexit")?
        .call_method1("register", (shutdown,))?;
    // The core's vocabulary, which the hand-written enums and exception classes follow (a test
    // checks that they agree).
    m.add("ERROR_KINDS", errors::kinds())?;
    m.add(
        "CREATE_MODES",
        names(zkrecipes::CreateMode::ALL, |v| v.name()),
    )?;
    m.add(
        "EVENT_TYPES",
        names(zkrecipes::NodeEventKind::ALL, |v| v.name()),
    )?;
    m.add(
        "CONNECTION_STATES",
        names(zkrecipes::ConnectionState::ALL, |v| v.name()),
    )?;
    m.add(
        "CANCEL_REASONS",
        names(zkrecipes::leader::CancelReason::ALL, |v| v.name()),
    )?;
    m.add(
        "LEASE_LOST_REASONS",
        zkrecipes::lock::LeaseLost::KINDS.to_vec(),
    )?;
    m.add(
        "LOG_LEVELS",
        names(zkrecipes::log::Level::ALL, |v| v.name()),
    )?;
    m.add(
        "WATCHER_TYPES",
        names(zkrecipes::WatcherType::ALL, |v| v.name()),
    )?;
    m.add_function(wrap_pyfunction!(watches::remove_watches, m)?)?;
    m.add_function(wrap_pyfunction!(watches::wait_for_state, m)?)?;
    m.add_function(wrap_pyfunction!(watches::max_request_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(ensemble::get_config, m)?)?;
    m.add_function(wrap_pyfunction!(ensemble::reconfig, m)?)?;
    m.add_function(wrap_pyfunction!(ensemble::current_connect_string, m)?)?;
    m.add_class::<bridge::Call>()?;
    m.add_class::<client::PyClient>()?;
    m.add_function(wrap_pyfunction!(client::pem_redacted, m)?)?;
    m.add_class::<client::PyStat>()?;
    m.add_class::<owner::PyOwner>()?;
    m.add_class::<lock::PyMutex>()?;
    m.add_class::<lock::PyReadWriteLock>()?;
    m.add_class::<lock::PySemaphoreMutex>()?;
    m.add_class::<lock::PySemaphore>()?;
    m.add_class::<lock::PyLease>()?;
    m.add_class::<lock::PyLeaseLost>()?;
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
    m.add_class::<values::PySharedValue>()?;
    m.add_class::<values::PyAtomicBytes>()?;
    m.add_class::<values::PyCachedNumber>()?;
    m.add_function(wrap_pyfunction!(owner::thread_owner_id, m)?)?;
    m.add_function(wrap_pyfunction!(owner::new_owner_id, m)?)?;
    m.add_function(wrap_pyfunction!(owner::resolve, m)?)?;
    m.add_function(wrap_pyfunction!(logging::set_log_level, m)?)?;
    m.add_class::<cache::PyChildData>()?;
    m.add_class::<cache::PyCache>()?;
    m.add_class::<cache::PyPersistentWatcher>()?;
    m.add(
        "WATCHER_EVENT_TYPES",
        zkrecipes::client::WatchEvent::NAMES.to_vec(),
    )?;
    m.add(
        "CACHE_EVENT_TYPES",
        names(zkrecipes::cache::CacheEventType::ALL, |v| v.name()),
    )?;
    m.add(
        "START_MODES",
        names(zkrecipes::cache::StartMode::ALL, |v| v.name()),
    )?;
    m.add_class::<nodes::PyPersistentNode>()?;
    m.add_class::<nodes::PyPersistentTtlNode>()?;
    m.add_class::<nodes::PyGroupMember>()?;
    m.add_function(wrap_pyfunction!(nodes::commit_transaction, m)?)?;
    m.add(
        "NODE_EVENTS",
        names(zkrecipes::nodes::PersistentNodeEventKind::ALL, |v| v.name()),
    )?;
    m.add_class::<discovery::PyInstanceData>()?;
    m.add_class::<discovery::PyUriSpec>()?;
    m.add_class::<discovery::PyServiceDiscovery>()?;
    m.add_class::<discovery::PyRegistration>()?;
    m.add_class::<discovery::PyServiceCache>()?;
    m.add_class::<discovery::PyServiceProvider>()?;
    m.add("SERVICE_TYPES", discovery::service_types())?;
    m.add("SERVICE_CACHE_EVENT_KINDS", discovery::cache_event_kinds())?;
    m.add("PROVIDER_STRATEGIES", discovery::strategies())?;
    m.add_class::<barriers::PyBarrier>()?;
    m.add_class::<barriers::PyDoubleBarrier>()?;
    m.add_class::<queue::PySimpleQueue>()?;
    m.add_class::<queue::PyQueue>()?;
    m.add_class::<queue::PyQueueItem>()?;
    m.add_class::<partition::PySetPartitioner>()?;
    m.add_function(wrap_pyfunction!(partition::non_blocking_lease, m)?)?;
    m.add_function(wrap_pyfunction!(partition::multi_non_blocking_lease, m)?)?;
    m.add("PARTITION_STATES", partition::states())?;
    m.add_class::<queue::PyQueueSharder>()?;
    #[cfg(feature = "testing")]
    m.add_function(wrap_pyfunction!(turns::_loop_turn_counts, m)?)?;
    #[cfg(feature = "testing")]
    m.add_function(wrap_pyfunction!(bridge::_panicking_call_for_testing, m)?)?;
    #[cfg(feature = "kit")]
    {
        m.add_function(wrap_pyfunction!(testing::find_zookeeper, m)?)?;
        m.add_function(wrap_pyfunction!(testing::issue_client, m)?)?;
        m.add_function(wrap_pyfunction!(testing::x509_id_for_cn, m)?)?;
        m.add_class::<testing::PyTestingServer>()?;
        m.add_class::<testing::PyTestingCluster>()?;
        m.add_class::<testing::PyFaultProxy>()?;
    }
    Ok(())
}

fn names<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|v| name(*v)).collect()
}
