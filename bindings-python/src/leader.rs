//! Leader election: `LeaderLatch` (and `Participant`). The hand-written package wraps these.

use std::sync::Arc;

use pyo3::prelude::*;
use zkrecipes::leader::{
    CancelReason, CloseMode, LatchState, LeaderLatch, LeaderSelector, LeadershipContext,
    LeadershipEvent, LostPolicy, Participant, SelectorState,
};

use crate::bridge::{self, timeout};
use crate::client::PyClient;
use crate::errors::{self, IntoPyResult};
use crate::local::Local;

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

/// Converts a participant for an asyncio result.
pub fn participant_obj(py: Python<'_>, p: Participant) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, PyParticipant::from(p))?.into_any())
}

/// Converts participants for an asyncio result.
pub fn participants_obj(py: Python<'_>, v: Vec<Participant>) -> PyResult<Py<PyAny>> {
    let items: Vec<PyParticipant> = v.into_iter().map(PyParticipant::from).collect();
    Ok(items.into_pyobject(py)?.into_any().unbind())
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

/// A leadership lost policy by name.
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

fn none_obj(py: Python<'_>, (): ()) -> PyResult<Py<PyAny>> {
    Ok(py.None())
}

/// The native latch; `zkrecipes.LeaderLatch` wraps it.
#[pyclass(frozen, module = "zkrecipes._native", name = "LeaderLatch")]
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
        path: &str,
        id: &str,
        close_mode: &str,
        lost_policy: &str,
    ) -> PyResult<PyLeaderLatch> {
        let c = client.core(py)?;
        let mode = self::close_mode(py, close_mode)?;
        let policy = self::lost_policy(py, lost_policy)?;
        let latch = LeaderLatch::new(&c, path, id)
            .py_err(py)?
            .with_close_mode(mode)
            .with_lost_policy(policy)
            .py_err(py)?;
        Ok(PyLeaderLatch {
            inner: Local::new(Arc::new(latch)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<()> {
        let l = self.l(py)?;
        bridge::block(py, async move { l.start().await })
    }

    fn start_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let l = self.l(py)?;
        bridge::future(
            py,
            event_loop,
            async move { l.start().await },
            Box::new(none_obj),
            None,
        )
    }

    #[pyo3(signature = (timeout))]
    fn await_leadership(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let l = self.l(py)?;
        let t = self::timeout(py, "timeout", timeout)?;
        bridge::block(py, async move { l.await_leadership(t).await })
    }

    #[pyo3(signature = (event_loop, timeout))]
    fn await_leadership_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let l = self.l(py)?;
        let t = self::timeout(py, "timeout", timeout)?;
        bridge::future(
            py,
            event_loop,
            async move { l.await_leadership(t).await },
            Box::new(|py, b: bool| {
                Ok(pyo3::types::PyBool::new(py, b)
                    .to_owned()
                    .into_any()
                    .unbind())
            }),
            None,
        )
    }

    fn has_leadership(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.l(py)?.has_leadership())
    }

    #[getter]
    fn leadership_epoch(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        Ok(self.l(py)?.leadership_epoch())
    }

    #[getter]
    fn our_path(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.l(py)?.our_path())
    }

    #[getter]
    fn state(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(match self.l(py)?.state() {
            LatchState::Latent => "LATENT",
            LatchState::Started => "STARTED",
            LatchState::Closed => "CLOSED",
        })
    }

    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.l(py)?.id().to_string())
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.l(py)?.path().to_string())
    }

    #[getter]
    fn last_error(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        Ok(self
            .l(py)?
            .last_error()
            .map(|e| errors::to_py(py, e).into_value(py).into_any()))
    }

    fn get_leader(&self, py: Python<'_>) -> PyResult<PyParticipant> {
        let l = self.l(py)?;
        bridge::block(py, async move { l.get_leader().await }).map(PyParticipant::from)
    }

    fn get_leader_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let l = self.l(py)?;
        bridge::future(
            py,
            event_loop,
            async move { l.get_leader().await },
            Box::new(participant_obj),
            None,
        )
    }

    fn get_participants(&self, py: Python<'_>) -> PyResult<Vec<PyParticipant>> {
        let l = self.l(py)?;
        bridge::block(py, async move { l.get_participants().await })
            .map(|v| v.into_iter().map(PyParticipant::from).collect())
    }

    fn get_participants_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let l = self.l(py)?;
        bridge::future(
            py,
            event_loop,
            async move { l.get_participants().await },
            Box::new(participants_obj),
            None,
        )
    }

    /// `callback(True)` when this participant becomes leader, `callback(False)` when it stops;
    /// on the latch's listener thread. Returns an id for `remove_listener`.
    fn add_listener(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        Ok(self.l(py)?.add_event_listener(move |e| {
            let leader = matches!(e, LeadershipEvent::IsLeader);
            if let Some(cb) = Python::try_attach(|py| callback.clone_ref(py)) {
                bridge::call_soon(cb, (leader,));
            }
        }))
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        Ok(self.l(py)?.remove_listener(id))
    }

    #[pyo3(signature = (close_mode = None))]
    fn close(&self, py: Python<'_>, close_mode: Option<&str>) -> PyResult<()> {
        let l = self.l(py)?;
        let mode = close_mode.map(|m| self::close_mode(py, m)).transpose()?;
        bridge::block(py, async move {
            match mode {
                Some(m) => l.close_with(m).await,
                None => l.close().await,
            }
        })
    }

    #[pyo3(signature = (event_loop, close_mode = None))]
    fn close_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        close_mode: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let l = self.l(py)?;
        let mode = close_mode.map(|m| self::close_mode(py, m)).transpose()?;
        bridge::future(
            py,
            event_loop,
            async move {
                match mode {
                    Some(m) => l.close_with(m).await,
                    None => l.close().await,
                }
            },
            Box::new(none_obj),
            None,
        )
    }
}

fn reason_name(r: CancelReason) -> &'static str {
    match r {
        CancelReason::ConnectionSuspended => "CONNECTION_SUSPENDED",
        CancelReason::SessionLost => "SESSION_LOST",
        CancelReason::Interrupted => "INTERRUPTED",
        CancelReason::Closed => "CLOSED",
        #[allow(unreachable_patterns)]
        _ => "CLOSED",
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
        self.ctx.cancel_reason().map(reason_name)
    }

    /// Calls `callback(reason)` once when leadership is cancelled (at once if it already is).
    fn on_cancel(&self, callback: Py<PyAny>) {
        self.ctx
            .on_cancel(move |reason| bridge::call_soon(callback, (reason_name(reason),)));
    }

    /// Blocks (GIL released) until cancelled or `timeout` seconds pass; the reason or None.
    #[pyo3(signature = (timeout = None))]
    fn wait_cancelled(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
    ) -> PyResult<Option<&'static str>> {
        let t = self::timeout(py, "timeout", timeout)?;
        let ctx = self.ctx.clone();
        Ok(py.detach(move || ctx.wait_cancelled(t)).map(reason_name))
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
#[pyclass(frozen, module = "zkrecipes._native", name = "LeaderSelector")]
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
        path: &str,
        id: &str,
        take_leadership: Py<PyAny>,
        lost_policy: &str,
    ) -> PyResult<PyLeaderSelector> {
        let c = client.core(py)?;
        let policy = self::lost_policy(py, lost_policy)?;
        let selector =
            LeaderSelector::new_blocking(&c, path, id, move |ctx: &LeadershipContext| {
                let _ = Python::try_attach(|py| {
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
            .py_err(py)?;
        Ok(PyLeaderSelector {
            inner: Local::new(Arc::new(selector)),
        })
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

    fn has_leadership(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.s(py)?.has_leadership())
    }

    #[getter]
    fn leadership_epoch(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        Ok(self.s(py)?.leadership_epoch())
    }

    #[getter]
    fn leadership_count(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.s(py)?.leadership_count())
    }

    #[getter]
    fn last_error(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        Ok(self
            .s(py)?
            .last_error()
            .map(|e| errors::to_py(py, e).into_value(py).into_any()))
    }

    #[getter]
    fn state(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(match self.s(py)?.state() {
            SelectorState::Latent => "LATENT",
            SelectorState::Started => "STARTED",
            SelectorState::Closed => "CLOSED",
        })
    }

    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.s(py)?.id().to_string())
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.s(py)?.path().to_string())
    }

    fn get_leader(&self, py: Python<'_>) -> PyResult<PyParticipant> {
        let s = self.s(py)?;
        bridge::block(py, async move { s.get_leader().await }).map(PyParticipant::from)
    }

    fn get_leader_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = self.s(py)?;
        bridge::future(
            py,
            event_loop,
            async move { s.get_leader().await },
            Box::new(participant_obj),
            None,
        )
    }

    fn get_participants(&self, py: Python<'_>) -> PyResult<Vec<PyParticipant>> {
        let s = self.s(py)?;
        bridge::block(py, async move { s.get_participants().await })
            .map(|v| v.into_iter().map(PyParticipant::from).collect())
    }

    fn get_participants_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = self.s(py)?;
        bridge::future(
            py,
            event_loop,
            async move { s.get_participants().await },
            Box::new(participants_obj),
            None,
        )
    }

    /// Waits (GIL released) until `take_leadership` has returned. Runs the core's blocking
    /// close on the calling thread, so that a close from inside `take_leadership` is seen as
    /// such (and does not wait for itself).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let s = self.s(py)?;
        if tokio::runtime::Handle::try_current().is_ok() {
            // A library thread (a listener): the blocking face is refused there.
            return bridge::block(py, async move { s.close().await });
        }
        py.detach(move || s.close_blocking()).py_err(py)
    }

    fn close_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = self.s(py)?;
        bridge::future(
            py,
            event_loop,
            async move { s.close().await },
            Box::new(none_obj),
            None,
        )
    }
}
