//! How C callbacks are run.
//!
//! The core calls its listeners on runtime threads, where a blocking zkr_ call would be refused.
//! So each handle that has C callbacks gets a thread of its own (made on first use, named
//! `zkr-cb-<kind>`): the core's listener only posts a job there, and the C callback runs on that
//! plain thread, one at a time and in order, free to call any zkr_ function.
//!
//! Unregistering (or freeing the handle) disables the registration and waits for a running call
//! of it to return, so once it returns, the callback neither runs nor will run and the caller may
//! free its `user_data`. Called from inside that very callback, it does not wait (it cannot).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{JoinHandle, ThreadId};

/// The caller's `void *user_data`, handed back untouched on a library thread.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub(crate) *mut c_void);

// SAFETY: the pointer is never dereferenced by us; the header tells the caller that callbacks
// run on another thread, so what it points to must be usable there.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

type Job = Box<dyn FnOnce() + Send>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A C callback cannot panic, and our own code holding these locks does not: a poisoned
    // lock still holds consistent data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Worker {
    tx: Sender<Job>,
    id: ThreadId,
    join: JoinHandle<()>,
}

/// The thread that runs one handle's C callbacks.
pub(crate) struct CallbackThread {
    name: &'static str,
    worker: Mutex<Option<Worker>>,
    shut_down: AtomicBool,
}

impl CallbackThread {
    pub(crate) fn new(name: &'static str) -> Arc<CallbackThread> {
        Arc::new(CallbackThread {
            name,
            worker: Mutex::new(None),
            shut_down: AtomicBool::new(false),
        })
    }

    /// Queues a job, starting the thread on first use. After [`shutdown`](Self::shutdown), or if
    /// no thread can be made, the job is dropped (its registration is disabled by then anyway).
    pub(crate) fn post(&self, job: Job) {
        let mut worker = lock(&self.worker);
        if self.shut_down.load(Ordering::SeqCst) {
            return;
        }
        if worker.is_none() {
            let (tx, rx) = channel::<Job>();
            let spawned = std::thread::Builder::new()
                .name(self.name.to_string())
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                });
            match spawned {
                Ok(join) => {
                    *worker = Some(Worker {
                        tx,
                        id: join.thread().id(),
                        join,
                    })
                }
                Err(_) => return,
            }
        }
        if let Some(w) = worker.as_ref() {
            let _ = w.tx.send(job);
        }
    }

    /// Stops the thread after the jobs already queued (disabled registrations skip theirs) and
    /// waits for it, unless called on that thread itself.
    pub(crate) fn shutdown(&self) {
        self.shut_down.store(true, Ordering::SeqCst);
        let worker = lock(&self.worker).take();
        if let Some(Worker { tx, id, join }) = worker {
            drop(tx);
            if std::thread::current().id() != id {
                let _ = join.join();
            }
        }
    }
}

thread_local! {
    /// The registration whose callback this thread is running (0: none).
    static RUNNING: Cell<usize> = const { Cell::new(0) };
}

/// One registered C callback: enabled until unregistered; `running` is held while it runs.
pub(crate) struct Registration {
    enabled: AtomicBool,
    running: Mutex<()>,
}

impl Registration {
    pub(crate) fn new() -> Arc<Registration> {
        Arc::new(Registration {
            enabled: AtomicBool::new(true),
            running: Mutex::new(()),
        })
    }

    /// Runs `call` (which calls the C function) if the registration is still enabled.
    pub(crate) fn run(&self, call: impl FnOnce()) {
        let _running = lock(&self.running);
        if !self.enabled.load(Ordering::SeqCst) {
            return;
        }
        let me = self as *const Registration as usize;
        let previous = RUNNING.with(|r| r.replace(me));
        call();
        RUNNING.with(|r| r.set(previous));
    }

    /// Disables the registration and waits until a running call of it has returned (unless we
    /// are inside that call).
    pub(crate) fn disable(&self) {
        self.enabled.store(false, Ordering::SeqCst);
        let me = self as *const Registration as usize;
        if RUNNING.with(|r| r.get()) != me {
            drop(lock(&self.running));
        }
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::SeqCst)
    }
}
