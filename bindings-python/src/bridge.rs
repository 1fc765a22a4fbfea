//! How Python waits for the core: blocking calls with the GIL released and Ctrl-C honoured, and
//! asyncio futures resolved from the core's runtime.
//!
//! Both spawn the core's future on the one shared runtime (`zkrecipes::runtime`, rebuilt by the
//! core after `fork()`); this face keeps no runtime, thread or handle of its own, so a forked
//! child starts clean.

use std::future::Future;
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCFunction, PyModule};
use tokio::task::AbortHandle;
use zkrecipes::runtime;

use crate::errors;

/// How long a blocking call on the main thread waits with the GIL released before it looks for
/// pending signals: Ctrl-C reaches a blocked `acquire()` within this slice plus the
/// cancellation. Other threads never run signal handlers in Python, so they wait in one piece
/// and never take the GIL back before the result is there.
const SLICE: Duration = Duration::from_millis(40);

static THREADING: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Whether the caller is Python's main thread (the one that runs signal handlers; after a
/// fork, the thread that forked).
fn on_main_thread(py: Python<'_>) -> bool {
    let check = || -> PyResult<bool> {
        let threading = THREADING
            .get_or_try_init(py, || py.import("threading").map(|m| m.unbind()))?
            .bind(py);
        let main = threading.call_method0("main_thread")?;
        Ok(main.is(&threading.call_method0("current_thread")?))
    };
    // If in doubt, poll: correctness (Ctrl-C) over a few wake-ups.
    check().unwrap_or(true)
}

/// A timeout argument in seconds: `None` is "wait forever", otherwise a finite number >= 0.
pub fn timeout(py: Python<'_>, what: &str, seconds: Option<f64>) -> PyResult<Option<Duration>> {
    match seconds {
        None => Ok(None),
        Some(s) => duration(py, what, s).map(Some),
    }
}

/// A duration argument in seconds: a finite number >= 0.
pub fn duration(py: Python<'_>, what: &str, seconds: f64) -> PyResult<Duration> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(errors::invalid(
            py,
            format!("{what} must be a finite number of seconds >= 0, not {seconds}"),
        ));
    }
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| errors::invalid(py, format!("{what} is too large: {seconds} s")))
}

/// Work to undo a result nobody will see: an acquire that succeeded after its caller gave up
/// (Ctrl-C, a cancelled asyncio task) must release what it took, or a node would stay behind.
pub type Undo<T> = Box<dyn FnOnce(T) + Send>;

/// Runs `fut` on the core's runtime and waits for it with the GIL released. Between slices of
/// [`SLICE`] it runs Python's signal handlers (main thread only, as Python does); if one raises
/// (KeyboardInterrupt), the core's future is dropped — its guards delete any node it made — and
/// the exception propagates. A result that arrives anyway is handed to `undo`.
pub fn wait<T, F>(py: Python<'_>, fut: F, undo: Option<Undo<T>>) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = zkrecipes::Result<T>> + Send + 'static,
{
    let (tx, rx) = sync_channel(1);
    let task = runtime::spawn(async move {
        let _ = tx.send(fut.await);
    });
    let slice = if on_main_thread(py) {
        SLICE
    } else {
        Duration::from_secs(3600)
    };
    let mut rx = rx;
    loop {
        // The receiver moves into the GIL-free closure and back (it is Send, not Sync).
        let (back, received) = py.detach(move || {
            let r = rx.recv_timeout(slice);
            (rx, r)
        });
        rx = back;
        match received {
            Ok(result) => return result.map_err(|e| errors::to_py(py, e)),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(interrupted) = py.check_signals() {
                    task.abort();
                    // Wait for the task to go (its future dropped, or finished just before).
                    let late = py.detach(move || rx.recv_timeout(Duration::from_secs(10)));
                    if let (Ok(Ok(value)), Some(undo)) = (late, undo) {
                        undo(value);
                    }
                    return Err(interrupted);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(errors::to_py(
                    py,
                    zkrecipes::Error::Internal(
                        "the operation's task ended without a result (a panic in zkrecipes)".into(),
                    ),
                ))
            }
        }
    }
}

/// [`wait`] without undo, for calls whose result needs no cleanup.
pub fn block<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = zkrecipes::Result<T>> + Send + 'static,
{
    wait(py, fut, None)
}

/// Converts a core result into a Python object, attached to the interpreter.
pub type Convert<T> = Box<dyn for<'py> FnOnce(Python<'py>, T) -> PyResult<Py<PyAny>> + Send>;

/// Starts `fut` on the core's runtime and returns an `asyncio.Future` of `event_loop` that the
/// runtime resolves (through `loop.call_soon_threadsafe`) with `convert(result)` or the mapped
/// exception. Cancelling the asyncio future aborts the core's future (dropping it cleans up); a
/// success that arrives after the cancellation is handed to `undo`.
pub fn future<'py, T, F>(
    _py: Python<'py>,
    event_loop: &Bound<'py, PyAny>,
    fut: F,
    convert: Convert<T>,
    undo: Option<Undo<T>>,
) -> PyResult<Bound<'py, PyAny>>
where
    T: Clone + Send + 'static,
    F: Future<Output = zkrecipes::Result<T>> + Send + 'static,
{
    let afut = event_loop.call_method0("create_future")?;
    let afut_ref: Py<PyAny> = afut.clone().unbind();
    let loop_ref: Py<PyAny> = event_loop.clone().unbind();
    let task = runtime::spawn(async move {
        let result = fut.await;
        // None: the interpreter is shutting down; nobody is waiting any more.
        let _ =
            Python::try_attach(move |py| deliver(py, loop_ref, afut_ref, result, convert, undo));
    });
    let canceller = Canceller {
        abort: Mutex::new(Some(task.abort_handle())),
    };
    afut.call_method1("add_done_callback", (canceller,))?;
    Ok(afut)
}

fn deliver<T: Clone + Send + 'static>(
    py: Python<'_>,
    event_loop: Py<PyAny>,
    afut: Py<PyAny>,
    result: zkrecipes::Result<T>,
    convert: Convert<T>,
    undo: Option<Undo<T>>,
) {
    let mut pending_undo: Option<Py<PendingUndo>> = None;
    let (error, value): (Option<Py<PyAny>>, Option<Py<PyAny>>) = match result {
        Err(e) => (Some(errors::to_py(py, e).into_value(py).into_any()), None),
        Ok(v) => {
            if let Some(undo) = undo {
                let kept = v.clone();
                let action: Box<dyn FnOnce() + Send> = Box::new(move || undo(kept));
                match Py::new(
                    py,
                    PendingUndo {
                        undo: Mutex::new(Some(action)),
                    },
                ) {
                    Ok(p) => pending_undo = Some(p),
                    Err(e) => e.write_unraisable(py, None),
                }
            }
            match convert(py, v) {
                Ok(o) => (None, Some(o)),
                Err(e) => {
                    if let Some(p) = pending_undo.take() {
                        p.get().run();
                    }
                    (Some(e.into_value(py).into_any()), None)
                }
            }
        }
    };
    let resolver = match resolver(py) {
        Ok(r) => r,
        Err(e) => return e.write_unraisable(py, None),
    };
    let undo_arg = pending_undo.as_ref().map(|p| p.clone_ref(py));
    let scheduled = event_loop.call_method1(
        py,
        "call_soon_threadsafe",
        (resolver, afut, error, value, undo_arg),
    );
    if scheduled.is_err() {
        // The loop is closed: nobody will ever see the result; give back what it took.
        if let Some(p) = pending_undo {
            p.get().run();
        }
    }
}

/// An undo waiting to learn whether its asyncio future was cancelled before the result landed.
#[pyclass(frozen, module = "zkrecipes._native")]
pub struct PendingUndo {
    undo: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl PendingUndo {
    fn run(&self) {
        if let Some(undo) = self.undo.lock().unwrap_or_else(|e| e.into_inner()).take() {
            undo();
        }
    }
}

/// The done-callback of an asyncio future: a cancellation aborts the core's task.
#[pyclass(frozen, module = "zkrecipes._native")]
struct Canceller {
    abort: Mutex<Option<AbortHandle>>,
}

#[pymethods]
impl Canceller {
    fn __call__(&self, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        if fut.call_method0("cancelled")?.is_truthy()? {
            if let Some(abort) = self.abort.lock().unwrap_or_else(|e| e.into_inner()).take() {
                abort.abort();
            }
        }
        Ok(())
    }
}

/// Runs on the event loop's thread: settles the future unless it was cancelled meanwhile, in
/// which case a success is undone.
#[pyfunction]
#[pyo3(signature = (fut, error, value, undo))]
fn _resolve(
    fut: &Bound<'_, PyAny>,
    error: Option<Bound<'_, PyAny>>,
    value: Option<Bound<'_, PyAny>>,
    undo: Option<Bound<'_, PendingUndo>>,
) -> PyResult<()> {
    if fut.call_method0("done")?.is_truthy()? {
        if error.is_none() {
            if let Some(undo) = undo {
                undo.get().run();
            }
        }
        return Ok(());
    }
    match error {
        Some(e) => fut.call_method1("set_exception", (e,))?,
        None => fut.call_method1("set_result", (value,))?,
    };
    Ok(())
}

static RESOLVER: PyOnceLock<Py<PyCFunction>> = PyOnceLock::new();

fn resolver(py: Python<'_>) -> PyResult<Py<PyCFunction>> {
    RESOLVER
        .get_or_try_init(py, || wrap_pyfunction!(_resolve, py).map(|f| f.unbind()))
        .map(|f| f.clone_ref(py))
}

/// Calls a Python callback from a library thread: off the runtime's workers (the GIL may take a
/// while), exceptions reported through `sys.unraisablehook`, nothing at interpreter shutdown.
pub fn call_soon<A>(callback: Py<PyAny>, args: A)
where
    A: for<'py> pyo3::call::PyCallArgs<'py> + Send + 'static,
{
    let call = move || {
        let _ = Python::try_attach(|py| {
            if let Err(e) = callback.call1(py, args) {
                e.write_unraisable(py, Some(callback.bind(py)));
            }
        });
    };
    if tokio::runtime::Handle::try_current().is_ok() {
        runtime::handle().spawn_blocking(call);
    } else {
        call();
    }
}
