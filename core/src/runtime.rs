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

/// The async worker threads without [`THREADS_ENV`]: one. The runtime only moves bytes and
/// runs recipe state machines (user callbacks run on its blocking pool), and one worker costs
/// every face less. In an interleaved A/B on a quiet 2-core machine (2026-12-03, 4 rounds, one
/// worker ÷ two): CPU per uncontended cycle rust 0.74, c 0.80, python 0.69, node 0.82, p50 4–12%
/// lower; contended handoffs/s and counter_clients increments/s equal or up to 16% higher, at
/// 15–23% less CPU per handoff; round trips through a 0.5 ms delay the same (1.04–1.09). Until
/// the wire client's patch 16, one worker made about half the connections write an acquire's
/// two requests apart (an extra round trip); docs/BENCHMARKS.md has the figures. Raise it with
/// `ZKR_RUNTIME_THREADS` for a process whose many sessions keep one core busy.
pub const DEFAULT_THREADS: usize = 1;

/// `ZKR_RUNTIME_THREADS` if it is a number from 1 to 64, else [`DEFAULT_THREADS`].
fn worker_threads() -> usize {
    let default = DEFAULT_THREADS;
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
    }
}
