//! How Python waits for the core: one [`Call`] per operation, either waited for (blocking, GIL
//! released, Ctrl-C honoured) or awaited (an `asyncio.Future` resolved from the core's runtime,
//! which the loop's thread drives itself where it can: [`turns`]).
//!
//! Every operation with a sync and an asyncio form is written once: its native method checks
//! and copies the arguments into a core future and returns a `Call`; `zkrecipes` calls
//! `call.wait()` in the sync method and `await call` in its `*_async` twin. (The locks' blocking
//! acquire and release, the hottest calls, wait on their future directly: [`wait_for`], the same
//! wait without the `Call`.) Both run the future
//! on the core's one shared runtime (`zkrecipes::runtime`, rebuilt by the core after `fork()`);
//! this face keeps no runtime, thread or handle of its own, so a forked child starts clean.
//!
//! Callbacks ([`invoke`]) run on the core's dispatcher threads (`zkrecipes::dispatch`): one at a
//! time per client or recipe, in event order, never on an async worker.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::task::Poll;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCFunction, PyModule};
use pyo3::BoundObject;
use tokio::task::AbortHandle;
use zkrecipes::leader::LeaderSelector;
use zkrecipes::runtime;

use crate::errors;
use crate::turns;

/// How long a blocking call on the main thread waits with the GIL released before it looks for
/// pending signals: Ctrl-C reaches a blocked `acquire()` within this slice plus the
/// cancellation. Other threads never run signal handlers in Python, so they wait in one piece
/// and never take the GIL back before the result is there.
const SLICE: Duration = Duration::from_millis(40);

static THREADING: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
static ASYNCIO: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn module<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyModule>>,
    name: &str,
) -> PyResult<&'py Bound<'py, PyModule>> {
    cell.get_or_try_init(py, || py.import(name).map(|m| m.unbind()))
        .map(|m| m.bind(py))
}

/// Whether the caller is Python's main thread (the one that runs signal handlers; after a
/// fork, the thread that forked). Asked of Python once per thread and process: a thread's answer
/// changes only across `fork()`, which changes the process id.
fn on_main_thread(py: Python<'_>) -> bool {
    thread_local! {
        /// (process id, answer) for this thread.
        static MAIN: Cell<Option<(u32, bool)>> = const { Cell::new(None) };
    }
    let pid = runtime::process_id();
    if let Some((seen_in, main)) = MAIN.with(Cell::get) {
        if seen_in == pid {
            return main;
        }
    }
    let check = || -> PyResult<bool> {
        let threading = module(py, &THREADING, "threading")?;
        let main = threading.call_method0("main_thread")?;
        Ok(main.is(&threading.call_method0("current_thread")?))
    };
    match check() {
        Ok(main) => {
            MAIN.with(|m| m.set(Some((pid, main))));
            main
        }
        // If in doubt, poll (and ask again next time): correctness (Ctrl-C) over a few wake-ups.
        Err(_) => true,
    }
}

/// Work to undo a result nobody will see: an acquire that succeeded after its caller gave up
/// (Ctrl-C, a cancelled asyncio task) must release what it took, or a node would stay behind.
pub type Undo<T> = Box<dyn FnOnce(T) + Send>;

type Convert = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Py<PyAny>> + Send>;
type UndoNow = Box<dyn FnOnce() + Send>;

/// A finished operation, not yet turned into Python objects.
struct Ready {
    convert: Convert,
    undo: Option<UndoNow>,
}

/// A core future waited for here ([`wait_for`], [`Call::wait`]).
pub type Blocking<T> = Pin<Box<dyn Future<Output = zkrecipes::Result<T>> + Send>>;

type Work = Blocking<Ready>;

/// Converts a result that PyO3 knows how to convert.
pub fn obj<'py, T: IntoPyObject<'py>>(py: Python<'py>, value: T) -> PyResult<Py<PyAny>> {
    value
        .into_pyobject(py)
        .map(|o| o.into_any().unbind())
        .map_err(Into::into)
}

/// [`obj`] as a converter for [`Call::new`] (a closure: `obj` itself is not general enough).
pub fn to_obj<T>() -> impl for<'py> FnOnce(Python<'py>, T) -> PyResult<Py<PyAny>> + Send + 'static
where
    T: for<'py> IntoPyObject<'py>,
{
    |py, v| obj(py, v)
}

/// Converts `()` to `None`.
pub fn none(py: Python<'_>, (): ()) -> PyResult<Py<PyAny>> {
    Ok(py.None())
}

/// One operation of the core, started when waited for or awaited (once).
#[pyclass(frozen, module = "zkrecipes._native", name = "Call")]
pub struct Call {
    work: Mutex<Option<Work>>,
    /// Set when awaited: the undo of a result delivered to a task that was cancelled anyway.
    delivered: Arc<Mutex<Option<UndoNow>>>,
    /// A cancelled awaiter stops waiting, and the operation goes on ([`Call::to_end`]).
    to_end: bool,
}

impl Call {
    /// An operation whose result `convert` turns into a Python object.
    pub fn new<T, F, C>(fut: F, convert: C) -> Call
    where
        T: Send + 'static,
        F: Future<Output = zkrecipes::Result<T>> + Send + 'static,
        C: for<'py> FnOnce(Python<'py>, T) -> PyResult<Py<PyAny>> + Send + 'static,
    {
        Call::from_work(Box::pin(async move {
            let value = fut.await?;
            Ok(Ready {
                convert: Box::new(move |py| convert(py, value)),
                undo: None,
            })
        }))
    }

    /// An operation whose success must be undone if nobody sees it (an acquire).
    pub fn undoable<T, F, C>(fut: F, convert: C, undo: Undo<T>) -> Call
    where
        T: Clone + Send + 'static,
        F: Future<Output = zkrecipes::Result<T>> + Send + 'static,
        C: for<'py> FnOnce(Python<'py>, T) -> PyResult<Py<PyAny>> + Send + 'static,
    {
        Call::from_work(Box::pin(async move {
            let value = fut.await?;
            let kept = value.clone();
            Ok(Ready {
                convert: Box::new(move |py| convert(py, value)),
                undo: Some(Box::new(move || undo(kept))),
            })
        }))
    }

    /// An operation whose result converts with [`obj`].
    pub fn value<T, F>(fut: F) -> Call
    where
        T: for<'py> IntoPyObject<'py> + Send + 'static,
        F: Future<Output = zkrecipes::Result<T>> + Send + 'static,
    {
        Call::new(fut, to_obj())
    }

    /// An operation that returns nothing (`None`).
    pub fn unit<F>(fut: F) -> Call
    where
        F: Future<Output = zkrecipes::Result<()>> + Send + 'static,
    {
        Call::new(fut, none)
    }

    /// An operation that settles something (a release, a queue item's completion) and must
    /// not stop half way: it runs as its own task, which a caller that stops waiting (a
    /// cancelled Task, Ctrl-C in a blocking wait) leaves running. Aborted or dropped, a release
    /// that never began left the lock held by a live session, and an item's completion dropped
    /// in flight let the item go to another consumer after it was processed.
    pub fn to_end<F>(fut: F) -> Call
    where
        F: Future<Output = zkrecipes::Result<()>> + Send + 'static,
    {
        let mut call = Call::unit(async move {
            runtime::spawn(fut).await.unwrap_or_else(|e| {
                Err(zkrecipes::Error::Internal(
                    format!("the operation ended without a result: {e}").into(),
                ))
            })
        });
        call.to_end = true;
        call
    }

    fn from_work(work: Work) -> Call {
        Call {
            work: Mutex::new(Some(work)),
            delivered: Arc::default(),
            to_end: false,
        }
    }

    fn take(&self, py: Python<'_>) -> PyResult<Work> {
        self.work
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| {
                errors::invalid(
                    py,
                    "this call was already waited for or awaited (once only)",
                )
            })
    }

    /// Runs the call to the end here, blocking: the Rust-side twin of `call.wait()`.
    pub fn run(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let work = self.take(py)?;
        wait(py, work)
    }
}

/// Runs `work` to the end here, blocking, as `call.wait()` does ([`wait`]), for a native method
/// that only ever waits (the Python classes' blocking `acquire` and `release`): no [`Call`], no
/// converter and no undo to make (a blocking wait never delivers a result it then drops).
pub fn wait_for<T: Send + 'static>(py: Python<'_>, work: Blocking<T>) -> PyResult<T> {
    waited(py, work)?.map_err(|e| errors::to_py(py, e))
}

#[pymethods]
impl Call {
    /// Runs the operation and waits for it with the GIL released. On the main thread, Ctrl-C
    /// interrupts the wait (KeyboardInterrupt) and the operation is abandoned: its future is
    /// dropped (deleting any node it made) and a success that lands anyway is undone.
    fn wait(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let work = self.take(py)?;
        wait(py, work)
    }

    /// Runs the operation for the running asyncio loop: cancelling the awaiting task abandons
    /// it as Ctrl-C does for `wait()`.
    fn __await__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let work = self.take(py)?;
        let event_loop = module(py, &ASYNCIO, "asyncio")?.call_method0("get_running_loop")?;
        future(&event_loop, work, self.delivered.clone(), !self.to_end)?.call_method0("__await__")
    }

    /// Called by `zkrecipes` when the task awaiting this call was cancelled: a result that had
    /// already been delivered (and will never be seen) is undone.
    fn abandon(&self) {
        if let Some(undo) = self
            .delivered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            undo();
        }
    }
}

/// Runs `work` on the calling thread with the GIL released, the thread driving the core's
/// runtime meanwhile ([`runtime::block_on`]: the request is written and its reply read on this
/// thread, with no hand-off to another one).
///
/// On the main thread it waits in slices of [`SLICE`] and runs Python's signal handlers between
/// them (only the main thread runs them, as in Python); if one raises (KeyboardInterrupt), the
/// core's future is dropped — its guards delete any node it made — and the exception
/// propagates. Between two slices the future is not polled, so no result can land after it.
/// Other threads wait in one piece, with no timer.
fn wait(py: Python<'_>, work: Work) -> PyResult<Py<PyAny>> {
    finish(py, waited(py, work)?)
}

/// [`wait`] up to the core's result: `Err` for a panic or an interruption (Ctrl-C).
fn waited<T: Send + 'static>(py: Python<'_>, work: Blocking<T>) -> PyResult<zkrecipes::Result<T>> {
    if !on_main_thread(py) {
        let outcome = py.detach(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime::block_on(work)))
        });
        return outcome.map_err(|_| panicked(py));
    }
    let mut work = work;
    loop {
        // The future moves into the GIL-free closure and back (it is Send, not Sync).
        let (back, outcome) = py.detach(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                runtime::block_on(slice_of(&mut work))
            }));
            (work, r)
        });
        work = back;
        match outcome {
            Err(_) => return Err(panicked(py)),
            Ok(Some(result)) => return Ok(result),
            Ok(None) => {
                if let Err(interrupted) = py.check_signals() {
                    // Dropped inside the runtime, as an aborted task's future would be.
                    py.detach(move || runtime::block_on(async move { drop(work) }));
                    return Err(interrupted);
                }
            }
        }
    }
}

fn finish(py: Python<'_>, result: zkrecipes::Result<Ready>) -> PyResult<Py<PyAny>> {
    match result {
        Ok(ready) => (ready.convert)(py),
        Err(e) => Err(errors::to_py(py, e)),
    }
}

/// The main thread's slice timer, kept from one wait to the next (see [`slice_of`]), with the
/// process that made it.
struct SliceTimer {
    pid: u32,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Drop for SliceTimer {
    fn drop(&mut self) {
        if self.pid != runtime::process_id() {
            // Inherited across fork(): it belongs to the parent's runtime, whose driver may have
            // been locked at the fork; dropping it would lock that driver.
            std::mem::forget(self.timer.take());
        }
    }
}

thread_local! {
    static SLICE_TIMER: RefCell<Option<SliceTimer>> = const { RefCell::new(None) };
}

/// Polls `work` for at most [`SLICE`]: `None` when the slice ran out first.
///
/// The slices are a period of the thread's, not of each wait: the timer is kept between waits
/// and set again, [`SLICE`] ahead, only once its deadline has passed. A wait that starts while
/// it runs ends its first slice at that deadline (sooner than [`SLICE`], never later), so
/// Ctrl-C is still seen within [`SLICE`]. Setting it again on every call cost about 800
/// instructions per lock cycle (two calls: a new deadline re-registers the entry in tokio's
/// timer wheel, under the driver's lock, 2026-12-06). A timer that fired is set again ahead of
/// the runtime's next wake-up, which makes tokio wake its driver (an eventfd write and an extra
/// `epoll_wait`): once per [`SLICE`] at most.
async fn slice_of<T>(work: &mut Blocking<T>) -> Option<zkrecipes::Result<T>> {
    let pid = runtime::process_id();
    let now = tokio::time::Instant::now();
    let kept = SLICE_TIMER
        .with(|t| t.borrow_mut().take())
        .filter(|kept| kept.pid == pid)
        .and_then(|mut kept| kept.timer.take());
    let mut timer = match kept {
        Some(timer) if timer.deadline() > now => timer,
        Some(mut timer) => {
            timer.as_mut().reset(now + SLICE);
            timer
        }
        None => Box::pin(tokio::time::sleep_until(now + SLICE)),
    };
    let out = std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await;
    SLICE_TIMER.with(|t| {
        *t.borrow_mut() = Some(SliceTimer {
            pid,
            timer: Some(timer),
        })
    });
    out
}

fn panicked(py: Python<'_>) -> PyErr {
    errors::to_py(
        py,
        zkrecipes::Error::Internal(
            "the operation ended without a result (a panic in zkrecipes)".into(),
        ),
    )
}

/// Starts `work` on the core's runtime and returns an `asyncio.Future` of `event_loop` that is
/// resolved with the converted result or the mapped exception: right after a turn of the loop's
/// own thread if the task ends in one ([`turns`]), else through `loop.call_soon_threadsafe`.
/// Cancelling the asyncio future aborts the core's future (dropping it cleans up), unless it is
/// not `abortable` ([`Call::to_end`]); a success that arrives after the cancellation is undone. `delivered` keeps the undo of a delivered
/// success, for [`Call::abandon`].
fn future<'py>(
    event_loop: &Bound<'py, PyAny>,
    work: Work,
    delivered: Arc<Mutex<Option<UndoNow>>>,
    abortable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let afut = event_loop.call_method0("create_future")?;
    let afut_ref: Py<PyAny> = afut.clone().unbind();
    let loop_ref: Py<PyAny> = event_loop.clone().unbind();
    let task = async move {
        // A panic in the core's future is an InternalError, as on the blocking path; unwound
        // through the task, it would leave the asyncio future pending for good.
        let result = CatchPanic(work).await.unwrap_or_else(|| {
            Err(zkrecipes::Error::Internal(
                "the operation ended without a result (a panic in zkrecipes)".into(),
            ))
        });
        // None: the interpreter is shutting down; nobody is waiting any more.
        let _ = attach(move |py| deliver(py, loop_ref, afut_ref, result, delivered));
    };
    // The loop's thread drives the runtime for the call's first steps, and its reader for the
    // rest (turns.rs); else the background driver runs the task.
    let (abort, settles) = if turns::ready_for(event_loop) {
        let (handle, settles) = turns::turn(event_loop, move || tokio::spawn(task).abort_handle());
        (handle.ok_or_else(|| panicked(event_loop.py()))?, settles)
    } else {
        (runtime::spawn(task).abort_handle(), Vec::new())
    };
    if abortable {
        let canceller = Canceller {
            abort: Mutex::new(Some(abort)),
        };
        afut.call_method1("add_done_callback", (canceller,))?;
    }
    turns::run_settles(event_loop.py(), settles);
    Ok(afut)
}

/// A future's output, or `None` if polling it panicked.
struct CatchPanic<F>(F);

impl<F: Future + Unpin> Future for CatchPanic<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Pin::new(&mut self.0).poll(cx)
        })) {
            Ok(Poll::Ready(v)) => Poll::Ready(Some(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(None),
        }
    }
}

/// A call whose future panics when polled, to show that an awaited panic is an InternalError
/// (for the tests).
#[cfg(feature = "testing")]
#[pyfunction]
pub fn _panicking_call_for_testing() -> Call {
    Call::unit(async {
        if std::hint::black_box(true) {
            panic!("a panic in a core future, for the tests");
        }
        Ok(())
    })
}

fn deliver(
    py: Python<'_>,
    event_loop: Py<PyAny>,
    afut: Py<PyAny>,
    result: zkrecipes::Result<Ready>,
    delivered: Arc<Mutex<Option<UndoNow>>>,
) {
    let (error, value) = match result {
        Err(e) => (Some(errors::to_py(py, e).into_value(py).into_any()), None),
        Ok(ready) => match (ready.convert)(py) {
            Ok(o) => {
                *delivered.lock().unwrap_or_else(|e| e.into_inner()) = ready.undo;
                (None, Some(o))
            }
            Err(e) => {
                if let Some(undo) = ready.undo {
                    undo();
                }
                (Some(e.into_value(py).into_any()), None)
            }
        },
    };
    let undo = PendingUndo {
        slot: delivered.clone(),
    };
    // Finished in a turn of its loop's thread: resolved right after the turn, there.
    let here = turns::deliver_here(
        turns::key(event_loop.as_ptr()),
        Box::new(move |py| {
            if let Err(e) = resolve(afut.bind(py), error, value, &undo) {
                e.write_unraisable(py, None);
            }
        }),
    );
    let Err(settle) = here else {
        return;
    };
    // Elsewhere: queued to the loop.
    let scheduled = resolver(py).and_then(|resolver| {
        event_loop.call_method1(
            py,
            "call_soon_threadsafe",
            (resolver, Settler(Mutex::new(Some(settle)))),
        )
    });
    if scheduled.is_err() {
        // The loop is closed: nobody will ever see the result; give back what it took.
        PendingUndo { slot: delivered }.run();
    }
}

/// A settle queued to its loop: `_resolve` runs it there, once.
#[pyclass(frozen, module = "zkrecipes._native")]
struct Settler(Mutex<Option<turns::Settle>>);

/// The undo of a delivered success, run if its asyncio future was cancelled before it landed.
pub struct PendingUndo {
    slot: Arc<Mutex<Option<UndoNow>>>,
}

impl PendingUndo {
    fn run(&self) {
        if let Some(undo) = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take() {
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

/// Runs on the event loop's thread: a settle queued by [`deliver`].
#[pyfunction]
fn _resolve(py: Python<'_>, settler: &Bound<'_, Settler>) {
    turns::count_queued();
    let settle = settler
        .get()
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(settle) = settle {
        settle(py);
    }
}

/// On the event loop's thread: settles the future unless it was cancelled meanwhile, in which
/// case a success is undone.
fn resolve(
    fut: &Bound<'_, PyAny>,
    error: Option<Py<PyAny>>,
    value: Option<Py<PyAny>>,
    undo: &PendingUndo,
) -> PyResult<()> {
    if fut.call_method0("done")?.is_truthy()? {
        undo.run();
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

/// Calls a Python callback from the core's dispatcher thread (where every listener of the core
/// runs: one at a time per client or recipe, in event order, never on an async worker),
/// taking the GIL; exceptions go to `sys.unraisablehook`; nothing at interpreter shutdown.
pub fn invoke<A>(callback: &Py<PyAny>, args: A)
where
    A: for<'py> pyo3::call::PyCallArgs<'py>,
{
    let _ = attach(|py| {
        if let Err(e) = callback.call1(py, args) {
            e.write_unraisable(py, Some(callback.bind(py)));
        }
    });
}

/// A listener for the core: calls `callback(*to_args(event))` through [`invoke`].
pub fn listener<E, A>(
    callback: Py<PyAny>,
    to_args: impl Fn(E) -> A + Send + Sync + 'static,
) -> impl Fn(E) + Send + Sync + 'static
where
    A: for<'py> pyo3::call::PyCallArgs<'py>,
{
    move |event| invoke(&callback, to_args(event))
}

/// Whether callbacks may still take the GIL, and how many threads are inside [`attach`].
struct Gate {
    closed: bool,
    inside: usize,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    closed: false,
    inside: 0,
});
static LEFT: Condvar = Condvar::new();

/// How long [`_shutdown`] waits for callbacks that are running when the interpreter exits.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Leaves the gate when dropped (also on a panic inside a callback).
struct Inside;

impl Drop for Inside {
    fn drop(&mut self) {
        let mut gate = GATE.lock().unwrap_or_else(|e| e.into_inner());
        gate.inside -= 1;
        // Only `_shutdown` waits, and only once the gate is closed: a notify costs a futex
        // system call even with no waiter (one per asyncio result and per callback before).
        if gate.inside == 0 && gate.closed {
            LEFT.notify_all();
        }
    }
}

/// Runs `f` with the GIL from a thread Python did not create (the core's dispatcher threads,
/// its runtime's workers): the only way this face calls back into Python. `None` once the
/// interpreter is exiting: after the `atexit` hook [`_shutdown`] has run, no callback starts,
/// and that hook waits for the ones already running. Without it a callback could still hold a
/// thread state when finalization starts, and CPython aborts the process
/// ("PyGILState_Release: thread state ... must be current when releasing").
pub fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    {
        let mut gate = GATE.lock().unwrap_or_else(|e| e.into_inner());
        if gate.closed {
            return None;
        }
        gate.inside += 1;
    }
    let _inside = Inside;
    Python::try_attach(f)
}

/// The selectors to interrupt at exit (weakly held; the dropped ones are pruned on each add).
static SELECTORS: Mutex<Vec<Weak<LeaderSelector>>> = Mutex::new(Vec::new());

/// Has [`_shutdown`] interrupt `selector`'s leadership if it still leads when the interpreter
/// exits, so that a `take_leadership` waiting for its cancellation returns before the exit goes
/// on.
pub fn interrupt_at_exit(selector: &Arc<LeaderSelector>) {
    let mut selectors = SELECTORS.lock().unwrap_or_else(|e| e.into_inner());
    selectors.retain(|s| s.strong_count() > 0);
    selectors.push(Arc::downgrade(selector));
}

/// The `atexit` hook (registered when the native module loads): closes the gate of [`attach`],
/// interrupts the leaderships of [`interrupt_at_exit`], and waits, without the GIL, up to
/// [`EXIT_WAIT`] for callbacks still running. A callback that does not return in that time (a
/// leadership callback that ignores its cancellation) is left to the interpreter's exit, which
/// may then abort the process.
#[pyfunction]
pub fn _shutdown(py: Python<'_>) {
    py.detach(|| {
        GATE.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        let selectors = std::mem::take(&mut *SELECTORS.lock().unwrap_or_else(|e| e.into_inner()));
        for selector in selectors.iter().filter_map(Weak::upgrade) {
            selector.interrupt_leadership();
        }
        let gate = GATE.lock().unwrap_or_else(|e| e.into_inner());
        let _ = LEFT.wait_timeout_while(gate, EXIT_WAIT, |gate| gate.inside > 0);
    });
}
