//! Leader election: `LeaderLatch` and `LeaderSelector` (and `Participant`, `LeadershipContext`).
//! What both have (the group, the leader, leadership) is written once, in [`PyElection`]. The
//! hand-written package wraps these.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::PyClassInitializer;
use zkrecipes::leader::{
    CancelReason, CloseMode, LatchState, LeaderLatch, LeaderSelector, LeadershipContext,
    LeadershipEvent, Participant, SelectorState,
};

use crate::args::{Text, Timeout};
use crate::bridge::{self, Call};
use crate::client::PyClient;
use crate::errors::{self, IntoPyResult};
use crate::local::Local;
use crate::lock::lost_policy;

/// A member of a leadership group (Curator's Participant): its id and whether it leads.
#[pyclass(frozen, get_all, eq, hash, module = "zkrecipes", name = "Participant")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyParticipant {
    /// The participant id (its node's data, UTF-8).
    id: String,
    /// Whether this participant leads.
    is_leader: bool,
}

#[pymethods]
impl PyParticipant {
    #[new]
    #[pyo3(signature = (id, is_leader))]
    fn new(id: String, is_leader: bool) -> PyParticipant {
        PyParticipant { id, is_leader }
    }

    fn __repr__(&self) -> String {
        format!(
            "Participant(id={:?}, is_leader={})",
            self.id,
            if self.is_leader { "True" } else { "False" }
        )
    }
}

impl From<Participant> for PyParticipant {
    fn from(p: Participant) -> PyParticipant {
        PyParticipant {
            id: p.id,
            is_leader: p.is_leader,
        }
    }
}

/// Converts a participant for Python.
pub fn participant_obj(py: Python<'_>, p: Participant) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, PyParticipant::from(p))?.into_any())
}

/// Converts participants for Python.
fn participants_obj(py: Python<'_>, v: Vec<Participant>) -> PyResult<Py<PyAny>> {
    let items: Vec<PyParticipant> = v.into_iter().map(PyParticipant::from).collect();
    bridge::obj(py, items)
}

fn close_mode(py: Python<'_>, mode: &str) -> PyResult<CloseMode> {
    match mode {
        "SILENT" => Ok(CloseMode::Silent),
        "NOTIFY_LEADER" => Ok(CloseMode::NotifyLeader),
        other => Err(errors::invalid(
            py,
            format!("close_mode must be SILENT or NOTIFY_LEADER, not {other:?}"),
        )),
    }
}

/// A latch or a selector.
#[derive(Clone)]
enum Member {
    Latch(Arc<LeaderLatch>),
    Selector(Arc<LeaderSelector>),
}

/// Calls the same method on a latch or a selector.
macro_rules! either {
    ($member:expr, $m:ident => $e:expr) => {
        match $member {
            Member::Latch($m) => $e,
            Member::Selector($m) => $e,
        }
    };
}

/// What a latch and a selector both have. The base of the native election classes.
#[pyclass(subclass, frozen, module = "zkrecipes._native", name = "Election")]
pub struct PyElection {
    member: Local<Member>,
}

impl PyElection {
    fn get(&self, py: Python<'_>) -> PyResult<Member> {
        self.member.get(py, "leader election").cloned()
    }
}

#[pymethods]
impl PyElection {
    fn has_leadership(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(either!(self.get(py)?, m => m.has_leadership()))
    }

    #[getter]
    fn leadership_epoch(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        Ok(either!(self.get(py)?, m => m.leadership_epoch()))
    }

    #[getter]
    fn last_error(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        Ok(either!(self.get(py)?, m => m.last_error())
            .map(|e| errors::to_py(py, e).into_value(py).into_any()))
    }

    #[getter]
    fn state(&self, py: Python<'_>) -> PyResult<&'static str> {
        let (latent, closed) = match self.get(py)? {
            Member::Latch(l) => (
                l.state() == LatchState::Latent,
                l.state() == LatchState::Closed,
            ),
            Member::Selector(s) => (
                s.state() == SelectorState::Latent,
                s.state() == SelectorState::Closed,
            ),
        };
        Ok(match (latent, closed) {
            (true, _) => "LATENT",
            (_, true) => "CLOSED",
            _ => "STARTED",
        })
    }

    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<String> {
        Ok(either!(self.get(py)?, m => m.id().to_string()))
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(either!(self.get(py)?, m => m.path().to_string()))
    }

    fn get_leader(&self, py: Python<'_>) -> PyResult<Call> {
        let member = self.get(py)?;
        Ok(Call::new(
            async move { either!(member, m => m.get_leader().await) },
            participant_obj,
        ))
    }

    fn get_participants(&self, py: Python<'_>) -> PyResult<Call> {
        let member = self.get(py)?;
        Ok(Call::new(
            async move { either!(member, m => m.get_participants().await) },
            participants_obj,
        ))
    }
}

/// The native latch; `zkrecipes.LeaderLatch` wraps it.
#[pyclass(extends = PyElection, frozen, module = "zkrecipes._native", name = "LeaderLatch")]
pub struct PyLeaderLatch {
    inner: Local<Arc<LeaderLatch>>,
}

impl PyLeaderLatch {
    fn l(&self, py: Python<'_>) -> PyResult<Arc<LeaderLatch>> {
        self.inner.get(py, "latch").cloned()
    }
}

#[pymethods]
impl PyLeaderLatch {
    #[new]
    #[pyo3(signature = (client, path, id, close_mode, lost_policy))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        id: Text,
        close_mode: Text,
        lost_policy: Text,
    ) -> PyResult<PyClassInitializer<PyLeaderLatch>> {
        let c = client.core(py)?;
        let mode = self::close_mode(py, &close_mode)?;
        let policy = self::lost_policy(py, &lost_policy)?;
        let latch = Arc::new(
            LeaderLatch::new(&c, &path, &id)
                .py_err(py)?
                .with_close_mode(mode)
                .with_lost_policy(policy)
                .py_err(py)?,
        );
        Ok(PyClassInitializer::from(PyElection {
            member: Local::new(Member::Latch(latch.clone())),
        })
        .add_subclass(PyLeaderLatch {
            inner: Local::new(latch),
        }))
    }

    fn start(&self, py: Python<'_>) -> PyResult<Call> {
        let l = self.l(py)?;
        Ok(Call::unit(async move { l.start().await }))
    }

    #[pyo3(signature = (timeout))]
    fn await_leadership(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let l = self.l(py)?;
        Ok(Call::value(
            async move { l.await_leadership(timeout.0).await },
        ))
    }

    #[getter]
    fn our_path(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.l(py)?.our_path())
    }

    /// `callback(True)` when this participant becomes leader, `callback(False)` when it stops;
    /// on the latch's dispatcher thread. Returns an id for `remove_listener`.
    fn add_listener(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        Ok(self
            .l(py)?
            .add_event_listener(bridge::listener(callback, |e: LeadershipEvent| {
                (matches!(e, LeadershipEvent::IsLeader),)
            })))
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.l(py)?.remove_listener(id).py_err(py)
    }

    #[pyo3(signature = (close_mode = None))]
    fn close(&self, py: Python<'_>, close_mode: Option<Text>) -> PyResult<Call> {
        let l = self.l(py)?;
        let mode = close_mode.map(|m| self::close_mode(py, &m)).transpose()?;
        Ok(Call::unit(async move {
            match mode {
                Some(m) => l.close_with(m).await,
                None => l.close().await,
            }
        }))
    }
}

/// The native leadership context handed to `take_leadership`.
#[pyclass(frozen, module = "zkrecipes._native", name = "LeadershipContext")]
pub struct PyLeadershipContext {
    ctx: LeadershipContext,
}

#[pymethods]
impl PyLeadershipContext {
    fn is_cancelled(&self) -> bool {
        self.ctx.is_cancelled()
    }

    #[getter]
    fn cancel_reason(&self) -> Option<&'static str> {
        self.ctx.cancel_reason().map(CancelReason::name)
    }

    /// Calls `callback(reason)` once when leadership is cancelled (at once if it already is),
    /// on the selector's dispatcher thread.
    fn on_cancel(&self, callback: Py<PyAny>) {
        self.ctx
            .on_cancel(move |reason| bridge::invoke(&callback, (reason.name(),)));
    }

    /// Blocks (GIL released) until cancelled or `timeout` seconds pass; the reason or None.
    #[pyo3(signature = (timeout = Timeout(None)))]
    fn wait_cancelled(&self, py: Python<'_>, timeout: Timeout) -> Option<&'static str> {
        let ctx = self.ctx.clone();
        py.detach(move || ctx.wait_cancelled(timeout.0))
            .map(CancelReason::name)
    }

    #[getter]
    fn fencing_token(&self) -> Option<i64> {
        self.ctx.fencing_token()
    }

    #[getter]
    fn path(&self) -> String {
        self.ctx.path().to_string()
    }

    #[getter]
    fn id(&self) -> String {
        self.ctx.id().to_string()
    }

    #[getter]
    fn term(&self) -> u64 {
        self.ctx.term()
    }
}

/// The native selector; `zkrecipes.LeaderSelector` wraps it. `take_leadership(ctx)` is called
/// on the selector's own thread for each leadership.
#[pyclass(extends = PyElection, frozen, module = "zkrecipes._native", name = "LeaderSelector")]
pub struct PyLeaderSelector {
    inner: Local<Arc<LeaderSelector>>,
}

impl PyLeaderSelector {
    fn s(&self, py: Python<'_>) -> PyResult<Arc<LeaderSelector>> {
        self.inner.get(py, "selector").cloned()
    }
}

#[pymethods]
impl PyLeaderSelector {
    #[new]
    #[pyo3(signature = (client, path, id, take_leadership, lost_policy))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        id: Text,
        take_leadership: Py<PyAny>,
        lost_policy: Text,
    ) -> PyResult<PyClassInitializer<PyLeaderSelector>> {
        let c = client.core(py)?;
        let policy = self::lost_policy(py, &lost_policy)?;
        let selector = Arc::new(
            LeaderSelector::new_blocking(&c, &path, &id, move |ctx: &LeadershipContext| {
                let _ = bridge::attach(|py| {
                    let arg = match Py::new(py, PyLeadershipContext { ctx: ctx.clone() }) {
                        Ok(a) => a,
                        Err(e) => return e.write_unraisable(py, None),
                    };
                    if let Err(e) = take_leadership.call1(py, (arg,)) {
                        e.write_unraisable(py, Some(take_leadership.bind(py)));
                    }
                });
            })
            .py_err(py)?
            .with_lost_policy(policy)
            .py_err(py)?,
        );
        // A leadership still running when the interpreter exits is interrupted, so that a
        // callback waiting for its cancellation returns before finalization.
        bridge::interrupt_at_exit(&selector);
        Ok(PyClassInitializer::from(PyElection {
            member: Local::new(Member::Selector(selector.clone())),
        })
        .add_subclass(PyLeaderSelector {
            inner: Local::new(selector),
        }))
    }

    fn start(&self, py: Python<'_>) -> PyResult<()> {
        self.s(py)?.start().py_err(py)
    }

    fn auto_requeue(&self, py: Python<'_>) -> PyResult<()> {
        self.s(py)?.auto_requeue();
        Ok(())
    }

    fn set_auto_requeue(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.s(py)?.set_auto_requeue(on);
        Ok(())
    }

    fn requeue(&self, py: Python<'_>) -> PyResult<bool> {
        self.s(py)?.requeue().py_err(py)
    }

    fn interrupt_leadership(&self, py: Python<'_>) -> PyResult<()> {
        self.s(py)?.interrupt_leadership();
        Ok(())
    }

    #[getter]
    fn leadership_count(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.s(py)?.leadership_count())
    }

    /// Waits (GIL released; on the main thread Ctrl-C interrupts the wait, as every blocking
    /// call's) until `take_leadership` has returned. The close runs on the calling thread, so
    /// that a close from inside `take_leadership` is seen as such (and does not wait for
    /// itself). An interrupted close has closed the selector; closing again waits again.
    fn close_blocking(&self, py: Python<'_>) -> PyResult<()> {
        if tokio::runtime::Handle::try_current().is_ok() {
            // A thread of the core's runtime: its blocking face is refused there.
            return self.close(py)?.run(py).map(drop);
        }
        let s = self.s(py)?;
        bridge::wait_for(py, Box::pin(async move { s.close().await }))
    }

    /// The asyncio form of close (and the form for a thread inside the core's runtime).
    fn close(&self, py: Python<'_>) -> PyResult<Call> {
        let s = self.s(py)?;
        Ok(Call::unit(async move { s.close().await }))
    }
}
