//! The asyncio loop's thread drives zkrecipes' runtime itself, between its own callbacks.
//!
//! An awaited call used to be spawned as a task for the runtime's background thread, whose end
//! resolved the asyncio future through `loop.call_soon_threadsafe`: every call crossed from the
//! loop's thread to the background thread and back (about 30 µs of CPU per crossing on a 2-vCPU
//! VM, docs/PERFORMANCE-LOG.md "The caller drives the runtime"). Now each thread that runs an
//! asyncio loop keeps a [`Port`] for it, as the Node face does for its JS thread
//! (`bindings-node`, `driving.rs`):
//!
//! - an awaited call runs one [`zkrecipes::runtime::loop_turn`] on the loop's thread, with the
//!   GIL released: its task is spawned there and runs until it waits (the request is written
//!   from this thread);
//! - the loop watches the runtime's input ([`zkrecipes::runtime::loop_source`], tokio's epoll
//!   set) with `loop.add_reader`: when a reply arrives, the loop runs another turn, which reads
//!   it and runs the tasks it wakes;
//! - a task that finishes during a turn of its own loop's thread resolves its future right
//!   after the turn, on that thread, with no system call ([`deliver_here`]); one that finishes
//!   elsewhere (on the background driver, which takes the runtime back after
//!   `BACKGROUND_AFTER` without a turn, or in a blocking call's drive on another thread) goes
//!   through `call_soon_threadsafe`, as before.
//!
//! No Python runs inside a turn except the conversion of a finished call's result (under the
//! GIL, taken back on this thread); listeners still run on the core's dispatcher threads. A
//! runtime task that needs the GIL while the loop's thread turns (a path filter, an ACL
//! provider) simply takes it: the turn runs without it. The old path stays where the runtime's
//! input cannot be watched (`ZKR_RUNTIME_THREADS`, not Linux), for a loop without `add_reader`
//! (Windows' proactor), and with `ZKR_PYTHON_LOOP_TURNS=0` (for comparisons).

use std::cell::{Cell, RefCell};
use std::os::fd::RawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyCFunction;
use zkrecipes::runtime;

/// The environment variable that turns the loop's turns off (`0`): every awaited call is a task
/// of the background driver, as before.
pub const LOOP_TURNS_ENV: &str = "ZKR_PYTHON_LOOP_TURNS";

/// A finished call's future and what to resolve it with, collected in a turn.
pub(crate) type Settle = Box<dyn FnOnce(Python<'_>) + Send>;

/// One thread's port: the asyncio loop it serves (the last one that awaited a call here).
struct Port {
    event_loop: Py<PyAny>,
    /// The runtime's epoll set, in the process that made the port.
    fd: RawFd,
    pid: u32,
    /// The loop's reader on `fd` is registered.
    watching: bool,
    /// `add_reader` works on this loop (false: no turns for it).
    turns: bool,
}

thread_local! {
    /// This thread's port (once an asyncio loop on it awaited a call).
    static PORT: RefCell<Option<Port>> = const { RefCell::new(None) };
    /// The loop whose turn runs on this thread now (its object's address; 0: none).
    static TURNING: Cell<usize> = const { Cell::new(0) };
    /// Settles of the loop turning now, run after the turn.
    static READY: RefCell<Vec<Settle>> = const { RefCell::new(Vec::new()) };
    /// How this thread's loop futures were resolved: after a turn of this thread, through
    /// `call_soon_threadsafe`.
    static COUNTS: Cell<[u64; 2]> = const { Cell::new([0, 0]) };
}

/// The loop's turns are allowed in this process (the variable is read once).
fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var(LOOP_TURNS_ENV).map_or(true, |v| v.trim() != "0"))
}

static ON_INPUT: PyOnceLock<Py<PyCFunction>> = PyOnceLock::new();

fn on_input_fn(py: Python<'_>) -> PyResult<&Py<PyCFunction>> {
    ON_INPUT.get_or_try_init(py, || wrap_pyfunction!(_on_input, py).map(|f| f.unbind()))
}

/// The address that names an event loop while its turn runs.
pub(crate) fn key(event_loop: *mut pyo3::ffi::PyObject) -> usize {
    event_loop as usize
}

/// Whether `event_loop` may run a turn for a call on this thread now: its port exists (made
/// now if needed) and watches the runtime's input. `false`: the call takes the old path.
pub(crate) fn ready_for(event_loop: &Bound<'_, PyAny>) -> bool {
    if !enabled() || TURNING.with(Cell::get) != 0 {
        return false;
    }
    // Inside the runtime (never expected from Python code, which runs on no runtime thread), a
    // turn would nest in the runtime that already runs here.
    if tokio::runtime::Handle::try_current().is_ok() {
        return false;
    }
    let py = event_loop.py();
    let pid = runtime::process_id();
    let current = PORT.with(|p| {
        p.borrow()
            .as_ref()
            .filter(|p| p.pid == pid && p.event_loop.bind(py).is(event_loop))
            .map(|p| (p.turns, p.watching))
    });
    match current {
        Some((false, _)) => false,
        Some((true, true)) => true,
        Some((true, false)) => watch(py),
        None => {
            let Some(fd) = runtime::loop_source() else {
                return false;
            };
            // Another loop had this thread (asyncio.run once more, or a fork): it stops watching.
            let old = PORT.with(|p| p.borrow_mut().take());
            if let Some(old) = old {
                if old.pid == pid && old.watching {
                    let _ = remove_reader(old.event_loop.bind(py), old.fd);
                }
            }
            PORT.with(|p| {
                *p.borrow_mut() = Some(Port {
                    event_loop: event_loop.clone().unbind(),
                    fd,
                    pid,
                    watching: false,
                    turns: true,
                })
            });
            watch(py)
        }
    }
}

/// Registers the port's reader (if not yet): `false` if the loop refuses it, which ends the
/// port's turns.
fn watch(py: Python<'_>) -> bool {
    let Some((event_loop, fd)) = PORT.with(|p| {
        p.borrow()
            .as_ref()
            .map(|p| (p.event_loop.clone_ref(py), p.fd))
    }) else {
        return false;
    };
    let added = on_input_fn(py)
        .and_then(|f| event_loop.call_method1(py, "add_reader", (fd, f.clone_ref(py))))
        .is_ok();
    PORT.with(|p| {
        if let Some(p) = p.borrow_mut().as_mut() {
            p.watching = added;
            p.turns = added;
        }
    });
    added
}

fn remove_reader(event_loop: &Bound<'_, PyAny>, fd: RawFd) -> PyResult<()> {
    if !event_loop.call_method0("is_closed")?.is_truthy()? {
        event_loop.call_method1("remove_reader", (fd,))?;
    }
    Ok(())
}

/// Stops watching until this thread's next call (someone else drives the runtime and reads
/// its input; this loop's results reach it through `call_soon_threadsafe` meanwhile).
fn unwatch(py: Python<'_>) {
    let watched = PORT.with(|p| {
        p.borrow_mut().as_mut().and_then(|p| {
            std::mem::replace(&mut p.watching, false).then(|| (p.event_loop.clone_ref(py), p.fd))
        })
    });
    if let Some((event_loop, fd)) = watched {
        let _ = remove_reader(event_loop.bind(py), fd);
    }
}

/// Runs `drive` (a turn of the runtime) on this thread with the GIL released, as the turn of the
/// loop named `key`: the settles of its calls that finish meanwhile are collected and returned.
/// A panic in the runtime is caught: `None` for it.
fn turning<R: Send>(
    py: Python<'_>,
    key: usize,
    drive: impl FnOnce() -> R + Send,
) -> (Option<R>, Vec<Settle>) {
    struct Turning;
    impl Drop for Turning {
        fn drop(&mut self) {
            TURNING.with(|t| t.set(0));
        }
    }
    TURNING.with(|t| t.set(key));
    let turning = Turning;
    let out = py.detach(move || catch_unwind(AssertUnwindSafe(drive)).ok());
    drop(turning);
    (out, READY.with(|r| std::mem::take(&mut *r.borrow_mut())))
}

/// A turn for an awaited call of `event_loop` ([`ready_for`] said yes) that starts with `start`
/// (which spawns the call's task); the settles it collected, for [`run_settles`]. `None`: the
/// runtime panicked.
pub(crate) fn turn<R: Send>(
    event_loop: &Bound<'_, PyAny>,
    start: impl FnOnce() -> R + Send,
) -> (Option<R>, Vec<Settle>) {
    turning(event_loop.py(), key(event_loop.as_ptr()), move || {
        runtime::loop_turn(start)
    })
}

/// Runs settles collected in a turn, on the loop's thread.
pub(crate) fn run_settles(py: Python<'_>, settles: Vec<Settle>) {
    COUNTS.with(|c| {
        let [on_turn, queued] = c.get();
        c.set([on_turn + settles.len() as u64, queued])
    });
    for settle in settles {
        settle(py);
    }
}

/// `settle` of the loop named `key`: kept for after the turn if that loop's turn runs on this
/// thread now (`Err(settle)` otherwise: the caller queues it to the loop).
pub(crate) fn deliver_here(key: usize, settle: Settle) -> Result<(), Settle> {
    if TURNING.with(Cell::get) != key {
        return Err(settle);
    }
    READY.with(|r| r.borrow_mut().push(settle));
    Ok(())
}

/// A future of this thread's loop was resolved from the queue (`call_soon_threadsafe`).
pub(crate) fn count_queued() {
    COUNTS.with(|c| {
        let [on_turn, queued] = c.get();
        c.set([on_turn, queued + 1])
    });
}

/// The loop's reader: the runtime's input is readable. A turn reads it if nobody else drives the
/// runtime; else the loop stops watching until its next call.
#[pyfunction]
fn _on_input(py: Python<'_>) {
    let pid = runtime::process_id();
    let Some(key) = PORT.with(|p| {
        p.borrow()
            .as_ref()
            .filter(|p| p.pid == pid && p.watching)
            .map(|p| key(p.event_loop.as_ptr()))
    }) else {
        return;
    };
    let (turned, settles) = turning(py, key, runtime::try_loop_turn);
    if !turned.unwrap_or(false) && settles.is_empty() {
        unwatch(py);
        return;
    }
    run_settles(py, settles);
}

/// How this thread's asyncio futures were resolved so far: `(after a turn of this thread,
/// through call_soon_threadsafe)`. For the tests.
#[cfg(feature = "testing")]
#[pyfunction]
pub fn _loop_turn_counts() -> (u64, u64) {
    let [on_turn, queued] = COUNTS.with(Cell::get);
    (on_turn, queued)
}
