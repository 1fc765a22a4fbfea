//! `zkrecipes._native.LeaderObserver`: who leads a LeaderLatch / LeaderSelector group, without
//! joining it (the core's `LeaderObserver`, etcd's Observe). The hand-written
//! `zkrecipes.LeaderObserver` wraps it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use tokio::sync::watch;
use zkrecipes::leader::{LeaderObserver, Participant};
use zkrecipes::{Client, Error};

use crate::args::{Text, Timeout};
use crate::bridge::{self, Call};
use crate::client::PyClient;
use crate::errors::{self, IntoPyResult};
use crate::leader::{participant_obj, PyParticipant};
use crate::local::Local;

struct Started {
    observer: LeaderObserver,
    /// This object's cursor: `wait_changed` returns each change once, in order.
    changes: Arc<Mutex<watch::Receiver<Participant>>>,
}

enum Slot {
    NotStarted(Client),
    Started(Local<Started>),
}

/// The native observer.
#[pyclass(frozen, module = "zkrecipes._native", name = "LeaderObserver")]
pub struct PyLeaderObserver {
    path: String,
    slot: Mutex<Slot>,
    /// Set by close(): later waits raise ClosedError at once, even with a change unseen.
    closed: AtomicBool,
}

impl PyLeaderObserver {
    /// This object's cursor for a wait: ClosedError once close() was called.
    fn cursor(&self, py: Python<'_>) -> PyResult<Arc<Mutex<watch::Receiver<Participant>>>> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(errors::closed(
                py,
                format!("the leader observer of {} is closed", self.path),
            ));
        }
        self.started(py, |s| Ok(s.changes.clone()))
    }

    fn started<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Started) -> PyResult<T>,
    ) -> PyResult<T> {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *slot {
            Slot::Started(local) => {
                local.get(py, "leader observer")?;
                // Only reached in the process that made it (checked just above).
                f(local.here_mut().expect("checked by get"))
            }
            Slot::NotStarted(_) => Err(errors::closed(
                py,
                format!(
                    "the leader observer of {} is not started: call start() or use `with`",
                    self.path
                ),
            )),
        }
    }

    fn install(&self, py: Python<'_>, mut observer: LeaderObserver) -> PyResult<()> {
        let mut changes = observer.subscribe();
        changes.borrow_and_update();
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        // Closed while starting (close sets the flag, then takes the slot's lock): the new
        // observer stops at once instead of running in an object that says it is closed.
        if self.closed.load(Ordering::SeqCst) {
            drop(slot);
            observer.close();
            return Err(errors::closed(
                py,
                format!(
                    "the leader observer of {} was closed while it started",
                    self.path
                ),
            ));
        }
        if let Slot::Started(_) = &*slot {
            return Err(errors::invalid(
                py,
                format!("the leader observer of {} is already started", self.path),
            ));
        }
        *slot = Slot::Started(Local::new(Started {
            observer,
            changes: Arc::new(Mutex::new(changes)),
        }));
        Ok(())
    }

    fn client(&self, py: Python<'_>) -> PyResult<Client> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(errors::closed(
                py,
                format!("the leader observer of {} is closed", self.path),
            ));
        }
        match &*self.slot.lock().unwrap_or_else(|e| e.into_inner()) {
            Slot::NotStarted(c) => Ok(c.clone()),
            Slot::Started(_) => Err(errors::invalid(
                py,
                format!("the leader observer of {} is already started", self.path),
            )),
        }
    }
}

/// Waits for the next change after the cursor; `Ok(None)` on timeout, `Closed` once closed.
async fn next_change(
    cursor: Arc<Mutex<watch::Receiver<Participant>>>,
    wait: Option<std::time::Duration>,
) -> zkrecipes::Result<Option<Participant>> {
    let mut rx = cursor.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let changed = match wait {
        Some(t) => match tokio::time::timeout(t, rx.changed()).await {
            Ok(r) => r,
            Err(_) => return Ok(None),
        },
        None => rx.changed().await,
    };
    if changed.is_err() {
        return Err(Error::Closed(
            "the leader observer (or its client) is closed".into(),
        ));
    }
    let p = rx.borrow_and_update().clone();
    *cursor.lock().unwrap_or_else(|e| e.into_inner()) = rx;
    Ok(Some(p))
}

fn optional_participant(py: Python<'_>, p: Option<Participant>) -> PyResult<Py<PyAny>> {
    match p {
        Some(p) => participant_obj(py, p),
        None => Ok(py.None()),
    }
}

#[pymethods]
impl PyLeaderObserver {
    #[new]
    fn new(py: Python<'_>, client: &PyClient, path: Text) -> PyResult<PyLeaderObserver> {
        let c = client.core(py)?;
        zkrecipes::path::validate_path(&path).map_err(|e| errors::to_py(py, e))?;
        Ok(PyLeaderObserver {
            path: path.into(),
            slot: Mutex::new(Slot::NotStarted(c)),
            closed: AtomicBool::new(false),
        })
    }

    /// Starts observing; done once the current leader is known.
    fn start(slf: &Bound<'_, Self>) -> PyResult<Call> {
        let py = slf.py();
        let this = slf.get();
        let c = this.client(py)?;
        let path = this.path.clone();
        let me: Py<PyLeaderObserver> = slf.clone().unbind();
        Ok(Call::new(
            async move { LeaderObserver::start(&c, &path).await },
            move |py, observer: LeaderObserver| {
                me.get().install(py, observer)?;
                Ok(py.None())
            },
        ))
    }

    /// The group path.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// The leader as last seen (`Participant("", False)` when nobody leads).
    #[getter]
    fn leader(&self, py: Python<'_>) -> PyResult<PyParticipant> {
        self.started(py, |s| Ok(PyParticipant::from(s.observer.leader())))
    }

    /// The next change of leader since the last call (or start), or None after `timeout`.
    #[pyo3(signature = (timeout))]
    fn wait_changed(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let cursor = self.cursor(py)?;
        Ok(Call::new(
            next_change(cursor, timeout.0),
            optional_participant,
        ))
    }

    /// `callback(participant)` with each new leader, on the observer's dispatcher thread;
    /// returns an id.
    fn add_listener(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        self.started(py, |s| {
            Ok(s.observer
                .add_listener(bridge::listener(callback, |p| (PyParticipant::from(p),))))
        })
    }

    /// Removes a listener; returns whether it was there.
    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.started(py, |s| s.observer.remove_listener(id).py_err(py))
    }

    /// Stops observing (its watch is removed from the server); waiters get ClosedError.
    /// Idempotent; closing one that never started does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.closed.store(true, Ordering::SeqCst);
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Slot::Started(local) = &mut *slot {
            local.get(py, "leader observer")?;
            if let Some(s) = local.here_mut() {
                s.observer.close();
            }
        }
        Ok(())
    }
}
