//! The one process-wide tokio runtime shared by the blocking face and every binding.
//!
//! Built lazily on first use. Fork-safe: a child process created by `fork()` does not have the
//! parent's threads, so when the process id changes the old runtime is forgotten (never
//! dropped: dropping would wait for threads that do not exist) and a fresh one is built.
//!
//! # Who drives it: the caller of a blocking call, else one background thread
//!
//! By default the runtime is tokio's current-thread scheduler, and the thread that drives it
//! (polls the sessions' sockets and timers and runs the recipes' tasks) is whichever needs it:
//! - **a thread in a blocking call** ([`block_on`]: the core's blocking face, and through it C
//!   and `zkr`) drives the runtime itself for the length of its call. It writes its request and
//!   reads the reply on its own thread, so a call costs no hand-off to another thread and back:
//!   on a 2-vCPU VM such a crossing costs about 30 µs of CPU each way (docs/BENCHMARKS.md, "The
//!   caller drives the runtime"). With several blocking callers at once, one drives and the
//!   others wait for their results, as tokio's current-thread scheduler arranges.
//! - **the background driver thread** (`zkrecipes-rt`) drives it whenever no blocking call is
//!   in flight: the async faces (Rust async, Python, Node) spawn their calls as tasks that it
//!   runs, and it keeps every session's pings, watches and state changes moving. When a blocking
//!   call starts it lets go; it takes over again once no blocking call has run for
//!   [`BACKGROUND_AFTER`], or at once when a task is spawned while nobody drives.
//!
//! `ZKR_RUNTIME_THREADS=N` (1 to 64) asks for tokio's multi-thread scheduler with N workers
//! instead, which always run the runtime (a blocking call then waits on its caller's thread for
//! a worker to do the work): for a process whose many sessions keep a whole core busy.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use once_cell::sync::Lazy;
use tokio::runtime::{Builder, Handle, Runtime};

/// The runtime and the pid of the process that built it.
type Slot = Option<(u32, Arc<Engine>)>;

static RUNTIME: Lazy<Mutex<Slot>> = Lazy::new(|| Mutex::new(None));

thread_local! {
    /// Set on the library threads that run user callbacks: they are not runtime workers, so a
    /// callback may call the blocking face (a Python state listener that releases a lock).
    static CALLBACK_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// After this long with no blocking call in flight, the background driver takes the runtime
/// back (sooner when a task is spawned while nobody drives). Until then, socket input waits in
/// the kernel's buffers: the cost of a burst of blocking calls is one background wake-up per
/// this period, not one per call.
pub const BACKGROUND_AFTER: Duration = Duration::from_millis(5);

enum Engine {
    /// `ZKR_RUNTIME_THREADS`: tokio's multi-thread scheduler; its workers drive everything.
    Workers(Runtime),
    /// The default: a current-thread runtime driven by blocking callers or the background driver.
    Driven(Arc<Driven>),
}

impl Engine {
    fn handle(&self) -> &Handle {
        match self {
            Engine::Workers(rt) => rt.handle(),
            Engine::Driven(d) => d.rt.handle(),
        }
    }
}

/// The current-thread runtime and who drives it (see the module docs).
struct Driven {
    rt: Runtime,
    /// Blocking calls in flight (in [`Runtime::block_on`], driving or waiting for the driver).
    active: AtomicUsize,
    /// When the last blocking call ended, in nanoseconds since `epoch`.
    last_end: AtomicU64,
    epoch: Instant,
    /// The background driver is in `block_on` (driving, or about to).
    background_driving: AtomicBool,
    /// The background driver sleeps until a blocking call ends (no timeout): the call that ends
    /// the last one in flight wakes it.
    background_untimed: AtomicBool,
    /// A task was spawned while nobody drove: the background driver takes over at once.
    kicked: AtomicBool,
    sleep: Mutex<()>,
    wake: Condvar,
    /// Asks the background driver to let go of the runtime (a blocking call starts).
    let_go: tokio::sync::Notify,
}

impl Driven {
    fn start() -> Arc<Driven> {
        let rt = Builder::new_current_thread()
            .thread_name("zkrecipes-rt")
            .enable_all()
            .build()
            .expect("zkrecipes: cannot build the tokio runtime");
        let d = Arc::new(Driven {
            rt,
            active: AtomicUsize::new(0),
            last_end: AtomicU64::new(0),
            epoch: Instant::now(),
            background_driving: AtomicBool::new(false),
            background_untimed: AtomicBool::new(false),
            kicked: AtomicBool::new(false),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            let_go: tokio::sync::Notify::new(),
        });
        let background = d.clone();
        std::thread::Builder::new()
            .name("zkrecipes-rt".into())
            .spawn(move || background.background())
            .expect("zkrecipes: cannot start the runtime's driver thread");
        d
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// The background driver: drives the runtime whenever no blocking call has been in flight
    /// for [`BACKGROUND_AFTER`], until a blocking call asks it to let go. Runs for the life of
    /// the process.
    fn background(&self) {
        loop {
            self.wait_until_idle();
            self.background_driving.store(true, Ordering::SeqCst);
            // A blocking call that started since the check above finds `background_driving` set
            // or has left a permit in `let_go`: either way this returns at once for it.
            if self.active.load(Ordering::SeqCst) == 0 {
                self.rt.block_on(self.let_go.notified());
            }
            self.background_driving.store(false, Ordering::SeqCst);
        }
    }

    /// Returns once no blocking call is in flight and none has ended for [`BACKGROUND_AFTER`]
    /// (or a spawn kicked it). While calls run it looks again once per [`BACKGROUND_AFTER`];
    /// only when one call has stayed in flight for a whole period (a long wait, such as an
    /// acquire that queues) does it sleep untimed, until that call ends. So a burst of short
    /// calls costs it one wake-up per period and costs the callers nothing: waking it at the end
    /// of every call would put a futex wake on each call's path.
    fn wait_until_idle(&self) {
        let after = BACKGROUND_AFTER.as_nanos() as u64;
        let mut guard = self.sleep.lock().unwrap_or_else(|e| e.into_inner());
        // The end time of the last call as seen at the previous look, when calls were in flight.
        let mut in_flight_since: Option<u64> = None;
        loop {
            if self.active.load(Ordering::SeqCst) > 0 {
                let last_end = self.last_end.load(Ordering::SeqCst);
                if in_flight_since == Some(last_end) {
                    // No call ended for a whole period. Announce the untimed sleep before
                    // looking again, so that the call ending the last one in flight either is
                    // seen here or sees the flag and wakes us.
                    self.background_untimed.store(true, Ordering::SeqCst);
                    if self.active.load(Ordering::SeqCst) > 0 {
                        guard = self.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
                    }
                    self.background_untimed.store(false, Ordering::SeqCst);
                    in_flight_since = None;
                } else {
                    in_flight_since = Some(last_end);
                    guard = self
                        .wake
                        .wait_timeout(guard, BACKGROUND_AFTER)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                continue;
            }
            in_flight_since = None;
            if self.kicked.swap(false, Ordering::SeqCst) {
                return;
            }
            let idle = self
                .now()
                .saturating_sub(self.last_end.load(Ordering::SeqCst));
            if idle >= after {
                return;
            }
            guard = self
                .wake
                .wait_timeout(guard, Duration::from_nanos(after - idle))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.active.fetch_add(1, Ordering::SeqCst);
        // If the background driver holds the runtime, it lets go; if it is about to take it, the
        // permit makes it return at once.
        self.let_go.notify_one();
        struct Ended<'a>(&'a Driven);
        impl Drop for Ended<'_> {
            fn drop(&mut self) {
                let d = self.0;
                d.last_end.store(d.now(), Ordering::SeqCst);
                if d.active.fetch_sub(1, Ordering::SeqCst) == 1
                    && d.background_untimed.load(Ordering::SeqCst)
                {
                    let _guard = d.sleep.lock().unwrap_or_else(|e| e.into_inner());
                    d.wake.notify_one();
                }
            }
        }
        let _ended = Ended(self);
        self.rt.block_on(future)
    }

    /// A task was spawned: if nobody drives the runtime, the background driver takes it now.
    fn spawned(&self) {
        if self.active.load(Ordering::SeqCst) == 0
            && !self.background_driving.load(Ordering::SeqCst)
        {
            self.kicked.store(true, Ordering::SeqCst);
            let _guard = self.sleep.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_one();
        }
    }
}

fn runtime() -> Arc<Engine> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    match slot.as_ref() {
        Some((owner_pid, rt)) if *owner_pid == pid => rt.clone(),
        _ => {
            if let Some((_, stale)) = slot.take() {
                // Inherited across fork(): its threads are gone in this process.
                std::mem::forget(stale);
            }
            let engine = Arc::new(match worker_threads() {
                Some(n) => Engine::Workers(
                    Builder::new_multi_thread()
                        .worker_threads(n)
                        .thread_name("zkrecipes-rt")
                        .enable_all()
                        .build()
                        .expect("zkrecipes: cannot build the tokio runtime"),
                ),
                None => Engine::Driven(Driven::start()),
            });
            *slot = Some((pid, engine.clone()));
            engine
        }
    }
}

/// The environment variable that asks for tokio's multi-thread scheduler with this many worker
/// threads (1 to 64) instead of the default caller-driven runtime (see the module docs).
pub const THREADS_ENV: &str = "ZKR_RUNTIME_THREADS";

/// `Some(n)` when `ZKR_RUNTIME_THREADS` is a number from 1 to 64; `None` (the caller-driven
/// runtime) when it is unset, or not such a number (with a warning).
fn worker_threads() -> Option<usize> {
    match std::env::var(THREADS_ENV) {
        Err(_) => None,
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n @ 1..=64) => Some(n),
            _ => {
                tracing::warn!(
                    "{THREADS_ENV}={v:?} is not a number from 1 to 64: using the caller-driven runtime"
                );
                None
            }
        },
    }
}

/// A handle to the shared runtime (built on first use, rebuilt in a forked child).
///
/// Tasks spawned through it run whenever some thread drives the runtime; prefer [`spawn`], which
/// also makes sure one does at once.
pub fn handle() -> Handle {
    runtime().handle().clone()
}

/// Runs a future on the shared runtime and waits for it on the calling thread, which drives
/// the runtime itself meanwhile (unless `ZKR_RUNTIME_THREADS` asked for worker threads).
///
/// This is the blocking face. It must not be called from inside an async context (a runtime
/// task): that would block the runtime; such a call gets `Err(Error::Internal)` from
/// [`try_block_on`] instead of a panic.
pub fn block_on<F: Future>(future: F) -> F::Output {
    match &*runtime() {
        Engine::Workers(rt) => rt.handle().block_on(future),
        Engine::Driven(d) => d.block_on(future),
    }
}

/// Like [`block_on`], but refuses (instead of panicking) when called from inside a runtime.
pub fn try_block_on<F: Future>(future: F) -> crate::Result<F::Output> {
    if Handle::try_current().is_ok() && !CALLBACK_THREAD.with(|c| c.get()) {
        return Err(crate::Error::Internal(
            "a blocking zkrecipes call was made from inside an async runtime; use the async API there".into(),
        ));
    }
    Ok(block_on(future))
}

/// Spawns a task on the shared runtime (and makes sure a thread drives it).
pub fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let engine = runtime();
    let task = engine.handle().spawn(future);
    if let Engine::Driven(d) = &*engine {
        d.spawned();
    }
    task
}

/// Runs a user callback (a listener, a leadership function) on the runtime's blocking pool,
/// off the thread that drives the runtime, where the callback may block and may call the
/// blocking face.
pub fn spawn_callback<F, R>(f: F) -> tokio::task::JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    runtime().handle().spawn_blocking(move || {
        CALLBACK_THREAD.with(|c| c.set(true));
        let r = f();
        CALLBACK_THREAD.with(|c| c.set(false));
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callbacks_may_use_the_blocking_face() {
        let r = block_on(spawn_callback(|| try_block_on(async { 7 }))).unwrap();
        assert_eq!(r.unwrap(), 7);
    }

    /// A task spawned from a plain thread right after a blocking call, while nobody drives the
    /// runtime, runs at once: `spawn` wakes the background driver (it would otherwise wait
    /// `BACKGROUND_AFTER`; without a driver at all it would never run).
    #[test]
    fn a_task_spawned_between_blocking_calls_runs() {
        for _ in 0..50 {
            assert_eq!(block_on(async { 1 }), 1);
            let (tx, rx) = std::sync::mpsc::channel();
            spawn(async move { tx.send(2).unwrap() });
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(2));
        }
    }

    /// While one thread's blocking call is in flight (it drives the runtime), tasks spawned by
    /// other threads and other threads' blocking calls are run too, and every call gets its own
    /// result.
    #[test]
    fn blocking_calls_from_many_threads_and_tasks_all_complete() {
        let (release, held) = tokio::sync::oneshot::channel::<()>();
        let long = std::thread::spawn(move || block_on(async move { held.await.is_ok() }));
        let threads: Vec<_> = (0..16u64)
            .map(|i| {
                std::thread::spawn(move || {
                    (0..50u64)
                        .map(|j| {
                            block_on(async move {
                                tokio::task::yield_now().await;
                                tokio::time::sleep(Duration::from_micros(100)).await;
                                i * 1000 + j
                            })
                        })
                        .sum::<u64>()
                })
            })
            .collect();
        let (tx, rx) = std::sync::mpsc::channel();
        for k in 0..100u64 {
            let tx = tx.clone();
            spawn(async move { tx.send(k).unwrap() });
        }
        let mut got: Vec<u64> = (0..100)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        got.sort_unstable();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        for (i, t) in threads.into_iter().enumerate() {
            let i = i as u64;
            assert_eq!(
                t.join().unwrap(),
                (0..50).map(|j| i * 1000 + j).sum::<u64>()
            );
        }
        assert!(
            !long.is_finished(),
            "the long call ended before it was released"
        );
        release.send(()).unwrap();
        assert!(long.join().unwrap());
    }

    #[test]
    fn workers_may_not() {
        let r = block_on(spawn(async { try_block_on(async { 7 }) })).unwrap();
        assert!(matches!(r, Err(crate::Error::Internal(_))));
    }
}
