//! The one process-wide tokio runtime shared by the blocking face and every binding.
//!
//! Built lazily on first use. Fork-safe: a child process created by `fork()` does not have the
//! parent's worker threads, so when the process id changes the old runtime is forgotten (never
//! dropped: dropping would wait for threads that do not exist) and a fresh one is built.

use std::future::Future;
use std::sync::{Arc, Mutex};

use once_cell::sync::Lazy;
use tokio::runtime::{Builder, Handle, Runtime};

/// The runtime and the pid of the process that built it.
type Slot = Option<(u32, Arc<Runtime>)>;

static RUNTIME: Lazy<Mutex<Slot>> = Lazy::new(|| Mutex::new(None));

thread_local! {
    /// Set on the library threads that run user callbacks: they are not runtime workers, so a
    /// callback may call the blocking face (a Python state listener that releases a lock).
    static CALLBACK_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn runtime() -> Arc<Runtime> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    match slot.as_ref() {
        Some((owner_pid, rt)) if *owner_pid == pid => rt.clone(),
        _ => {
            if let Some((_, stale)) = slot.take() {
                // Inherited across fork(): its threads are gone in this process.
                std::mem::forget(stale);
            }
            let rt = Arc::new(
                Builder::new_multi_thread()
                    .worker_threads(worker_threads())
                    .thread_name("zkrecipes-rt")
                    .enable_all()
                    .build()
                    .expect("zkrecipes: cannot build the tokio runtime"),
            );
            *slot = Some((pid, rt.clone()));
            rt
        }
    }
}

/// The environment variable that sets the number of async worker threads (1 to 64).
pub const THREADS_ENV: &str = "ZKR_RUNTIME_THREADS";

/// `ZKR_RUNTIME_THREADS` if it is a number from 1 to 64, else the CPUs clamped to 2..=4. One
/// worker costs the least CPU per call from the blocking faces (no second worker woken to
/// look for work); more workers parse long child lists of many sessions in parallel.
fn worker_threads() -> usize {
    let default = std::thread::available_parallelism()
        .map(|n| n.get().clamp(2, 4))
        .unwrap_or(2);
    match std::env::var(THREADS_ENV) {
        Err(_) => default,
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n @ 1..=64) => n,
            _ => {
                tracing::warn!("{THREADS_ENV}={v:?} is not a number from 1 to 64: using {default}");
                default
            }
        },
    }
}

/// A handle to the shared runtime (built on first use, rebuilt in a forked child).
pub fn handle() -> Handle {
    runtime().handle().clone()
}

/// Runs a future on the shared runtime and waits for it on the calling thread.
///
/// This is the blocking face. It must not be called from inside an async context (a runtime
/// worker thread): that would block the runtime; such a call gets `Err(Error::Internal)` from
/// [`try_block_on`] instead of a panic.
pub fn block_on<F: Future>(future: F) -> F::Output {
    handle().block_on(future)
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

/// Runs `future` to completion as a task on a runtime worker and blocks the calling thread
/// until that task has finished: the blocking face's hot path.
///
/// [`try_block_on`] drives the future on the calling thread, so every request's reply crosses
/// threads twice (the connection's worker wakes the caller, the caller wakes the worker to send
/// the next request). Here the whole operation runs where the replies land and the caller is
/// woken once, at the end: fewer context switches per call (the C face's uncontended
/// acquire+release measured 263 → 216 µs CPU per cycle against the async core's 143–153).
///
/// Refused like [`try_block_on`] from inside an async context. The future must not depend on
/// the calling thread (thread-locals, the thread's id): the lock family's acquire and release
/// take their owner as an argument. A panic in the future is returned as `Error::Internal`.
pub fn run_blocking<'a, T>(future: impl Future<Output = T> + Send + 'a) -> crate::Result<T>
where
    T: Send + 'static,
{
    if Handle::try_current().is_ok() && !CALLBACK_THREAD.with(|c| c.get()) {
        return Err(crate::Error::Internal(
            "a blocking zkrecipes call was made from inside an async runtime; use the async API there".into(),
        ));
    }
    let future: std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>> = Box::pin(future);
    // SAFETY: the task may borrow from the caller's frame ('a) because this function does not
    // return, and does not unwind, before the task is over: tokio completes a JoinHandle only
    // after the task's future has been dropped (finished, panicked or cancelled), and the
    // shared runtime is never shut down (a forked child forgets its parent's runtime, but no
    // thread of the child is inside this call). Should the wait itself ever unwind, the guard
    // aborts the process rather than let the task outlive the borrow.
    let future: std::pin::Pin<Box<dyn Future<Output = T> + Send + 'static>> =
        unsafe { std::mem::transmute(future) };
    struct MustFinish;
    impl Drop for MustFinish {
        fn drop(&mut self) {
            if std::thread::panicking() {
                std::process::abort();
            }
        }
    }
    let guard = MustFinish;
    let handle = handle();
    let task = handle.spawn(future);
    let joined = handle.block_on(task);
    drop(guard);
    joined.map_err(|e| {
        crate::Error::Internal(if e.is_panic() {
            let payload = e.into_panic();
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string payload".into());
            format!("a zkrecipes operation panicked: {what}").into()
        } else {
            format!("a zkrecipes operation was cancelled: {e}").into()
        })
    })
}

/// Spawns a task on the shared runtime.
pub fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    handle().spawn(future)
}

/// Runs a user callback (a listener, a leadership function) on the runtime's blocking pool,
/// off the async workers, where the callback may block and may call the blocking face.
pub fn spawn_callback<F, R>(f: F) -> tokio::task::JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    handle().spawn_blocking(move || {
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

    #[test]
    fn workers_may_not() {
        let r = block_on(spawn(async { try_block_on(async { 7 }) })).unwrap();
        assert!(matches!(r, Err(crate::Error::Internal(_))));
        let r = block_on(spawn(async { run_blocking(async { 7 }) })).unwrap();
        assert!(matches!(r, Err(crate::Error::Internal(_))));
    }

    #[test]
    fn run_blocking_runs_on_a_worker_and_may_borrow() {
        let caller = std::thread::current().id();
        let mut seen = Vec::new();
        let on = run_blocking(async {
            tokio::task::yield_now().await;
            seen.push(1);
            std::thread::current().id()
        })
        .unwrap();
        assert_ne!(on, caller, "the future ran on the calling thread");
        assert_eq!(seen, [1]);
        // From a callback thread (the blocking pool), as a lock-lost listener would.
        let r = block_on(spawn_callback(|| run_blocking(async { 8 }))).unwrap();
        assert_eq!(r.unwrap(), 8);
    }

    #[test]
    fn run_blocking_returns_a_panic_as_internal() {
        let r = run_blocking(async {
            if std::hint::black_box(true) {
                panic!("boom in a task");
            }
        });
        match r {
            Err(crate::Error::Internal(m)) => assert!(m.contains("boom in a task"), "{m}"),
            other => panic!("expected Internal, got {other:?}"),
        }
    }
}
