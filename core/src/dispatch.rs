//! The one way user callbacks are run: a `Dispatcher` per client (connection states, watches)
//! and per recipe (lost holds, revocation, leadership, counts, observers).
//!
//! # The threading guarantee (every face states it)
//!
//! * Callbacks of one dispatcher run **one at a time, in the order of their events**.
//! * They run on a library thread that is **not an async worker** and not the caller's thread,
//!   so a callback may block (a Python callback waiting for the GIL, a C callback taking a
//!   mutex) and **may call the blocking API**, including of the recipe that called it.
//! * A slow callback delays only the later callbacks of the same dispatcher; the recipe's own
//!   state machine and other recipes carry on. A callback that waits for an event the same
//!   dispatcher would deliver next waits forever: don't.
//! * A panicking callback is caught and does not stop the ones after it.
//! * Nothing is delivered after the dispatcher (its recipe or client) is dropped; events already
//!   queued are still delivered.
//! * A listener removed (or every listener, by a recipe's close) hears nothing more, events
//!   already queued included; a call to it already begun finishes (removing never waits for a
//!   listener).
//!
//! # Listener ids
//!
//! A [`ListenerId`] is unique in the process: its high 32 bits name the dispatcher that gave it
//! out, its low 32 bits count that dispatcher's listeners. So an id passed to another client's
//! or recipe's remove is refused (`InvalidArgument`) instead of removing an unrelated listener
//! that happens to have the same number there.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use std::collections::VecDeque;

use crate::{runtime, Error, Result};

/// A listener id, for removal: unique in the process (see the [module notes](self)).
pub type ListenerId = u64;

/// The next registry's number (the high half of its listener ids).
static REGISTRIES: AtomicU32 = AtomicU32::new(1);

/// Gives out listener ids unique in the process (see the [module notes](self)): every
/// dispatcher has one, and so may a face that keeps listeners of its own (Python's client keeps
/// its state listeners before it connects).
#[derive(Debug)]
pub struct ListenerIds {
    /// This registry's number, shifted into the high half of its ids.
    registry: u64,
    next: AtomicU32,
}

impl Default for ListenerIds {
    fn default() -> Self {
        ListenerIds {
            registry: u64::from(REGISTRIES.fetch_add(1, Ordering::Relaxed)) << 32,
            next: AtomicU32::new(1),
        }
    }
}

impl ListenerIds {
    /// A registry of its own.
    pub fn new() -> ListenerIds {
        ListenerIds::default()
    }

    /// A new id.
    pub fn next(&self) -> ListenerId {
        self.registry | u64::from(self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// `InvalidArgument` unless this registry gave `id` out.
    pub fn check(&self, id: ListenerId) -> Result<()> {
        if id & !u64::from(u32::MAX) != self.registry {
            return Err(Error::invalid(format!(
                "listener id {id} was not given out by this client or recipe (it is another's, \
                 or no listener id at all)"
            )));
        }
        Ok(())
    }
}

type Listener<E> = Arc<dyn Fn(&E) + Send + Sync>;
type Listeners<E> = Arc<Mutex<Vec<(ListenerId, Listener<E>)>>>;

enum Job<E> {
    /// Call every listener registered when the event is run.
    Event(E),
    /// Call one function (a one-shot watch callback, say), in order with the events.
    Once(Box<dyn FnOnce() + Send>),
}

/// Delivers events of type `E` to listeners, and one-off calls, under the guarantee above.
pub(crate) struct Dispatcher<E: Send + 'static> {
    listeners: Listeners<E>,
    queue: Arc<Mutex<Queue<E>>>,
    ids: ListenerIds,
}

/// The jobs not run yet, and whether a library thread is running them.
struct Queue<E> {
    jobs: VecDeque<Job<E>>,
    running: bool,
}

impl<E: Send + 'static> Default for Dispatcher<E> {
    fn default() -> Self {
        Dispatcher {
            listeners: Arc::default(),
            queue: Arc::new(Mutex::new(Queue {
                jobs: VecDeque::new(),
                running: false,
            })),
            ids: ListenerIds::new(),
        }
    }
}

impl<E: Send + 'static> Dispatcher<E> {
    /// A dispatcher with no listeners.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds a listener; it hears events emitted from now on.
    pub(crate) fn add(&self, listener: impl Fn(&E) + Send + Sync + 'static) -> ListenerId {
        let id = self.ids.next();
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, Arc::new(listener)));
        id
    }

    /// Removes a listener; whether it was there (an id of ours removed before: `false`). It
    /// hears nothing more, events queued before included; a call to it already begun (running,
    /// or handed to it an instant before) finishes: removing never waits for a listener, which
    /// could be waiting for the caller. `InvalidArgument` for an id this dispatcher never gave out
    /// (another client's or recipe's).
    pub(crate) fn remove(&self, id: ListenerId) -> Result<bool> {
        self.check_id(id)?;
        let mut l = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        let before = l.len();
        l.retain(|(i, _)| *i != id);
        Ok(l.len() != before)
    }

    /// `InvalidArgument` unless this dispatcher gave `id` out.
    pub(crate) fn check_id(&self, id: ListenerId) -> Result<()> {
        self.ids.check(id)
    }

    /// Removes every listener (a closed recipe): none hears anything more, events queued
    /// before included (a call already begun finishes, as for [`remove`](Self::remove)).
    pub(crate) fn clear(&self) {
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Whether anyone listens (to skip building events nobody hears).
    pub(crate) fn has_listeners(&self) -> bool {
        !self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Queues an event for the listeners.
    pub(crate) fn emit(&self, event: E) {
        if self.has_listeners() {
            self.push(Job::Event(event));
        }
    }

    /// Removes every listener once the jobs queued before have run (a recipe closed after
    /// its last events, which its listeners still hear).
    pub(crate) fn clear_in_turn(&self) {
        let listeners = self.listeners.clone();
        self.push(Job::Once(Box::new(move || {
            listeners.lock().unwrap_or_else(|e| e.into_inner()).clear();
        })));
    }

    /// Takes the events queued and not delivered yet out of the queue (one-off calls stay), in
    /// order.
    pub(crate) fn take_queued_events(&self) -> Vec<E> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let mut events = Vec::new();
        for job in std::mem::take(&mut q.jobs) {
            match job {
                Job::Event(e) => events.push(e),
                once => q.jobs.push_back(once),
            }
        }
        events
    }

    /// Queues a one-off call, in order with the events.
    pub(crate) fn call(&self, f: impl FnOnce() + Send + 'static) {
        self.push(Job::Once(Box::new(f)));
    }

    /// Queues `job`; if no library thread runs this dispatcher's jobs, starts one (on the
    /// runtime's blocking pool, marked as a callback thread so that it may use the blocking
    /// API). It runs them one at a time, in order, until none is left. Events never wait for a
    /// runtime task to be driven on their way: the thread that queues one (a session's task, a
    /// recipe's) hands it straight to the pool.
    fn push(&self, job: Job<E>) {
        let start = {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.jobs.push_back(job);
            !std::mem::replace(&mut q.running, true)
        };
        if start {
            let listeners = self.listeners.clone();
            let queue = self.queue.clone();
            // Detached: the thread runs until the queue is empty.
            drop(runtime::spawn_callback(move || drain(&listeners, &queue)));
        }
    }
}

/// Runs the queued jobs one at a time, in order, until none is left.
fn drain<E: Send + 'static>(listeners: &Listeners<E>, queue: &Mutex<Queue<E>>) {
    loop {
        let job = {
            let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
            match q.jobs.pop_front() {
                Some(job) => job,
                None => {
                    q.running = false;
                    return;
                }
            }
        };
        match job {
            Job::Event(event) => {
                let snapshot: Vec<(ListenerId, Listener<E>)> =
                    listeners.lock().unwrap_or_else(|e| e.into_inner()).clone();
                for (id, l) in snapshot {
                    // One removed meanwhile (by an earlier listener, or a recipe closed while
                    // one was running) is not called.
                    let there = listeners
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .iter()
                        .any(|(i, _)| *i == id);
                    if there {
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            crate::owner::as_own_owner(|| l(&event))
                        }));
                    }
                }
            }
            Job::Once(f) => {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    crate::owner::as_own_owner(f)
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owner::Owner;
    use std::sync::mpsc as std_mpsc;
    use std::time::Duration;

    #[test]
    fn delivers_in_order_one_at_a_time_off_the_workers_and_survives_a_panic() {
        let d = Dispatcher::<u32>::new();
        let (tx, rx) = std_mpsc::channel();
        let busy = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let b = busy.clone();
        d.add(move |&n| {
            assert!(!b.swap(true, Ordering::SeqCst), "two callbacks at once");
            // A callback may use the blocking face.
            let echoed = runtime::try_block_on(async move { n }).expect("blocking call allowed");
            if n == 3 {
                b.store(false, Ordering::SeqCst);
                panic!("a listener's panic is contained");
            }
            tx.send(echoed).unwrap();
            b.store(false, Ordering::SeqCst);
        });
        for n in 0..10 {
            d.emit(n);
        }
        let got: Vec<u32> = (0..9)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).expect("delivered"))
            .collect();
        assert_eq!(got, vec![0, 1, 2, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn one_off_calls_keep_their_place_and_removed_listeners_hear_nothing() {
        let d = Dispatcher::<&'static str>::new();
        let (tx, rx) = std_mpsc::channel::<String>();
        let t = tx.clone();
        let id = d.add(move |e| t.send(format!("a:{e}")).unwrap());
        d.emit("1");
        let t = tx.clone();
        d.call(move || t.send("once".into()).unwrap());
        d.emit("2");
        let next = || rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!([next(), next(), next()], ["a:1", "once", "a:2"]);
        assert!(d.remove(id).unwrap());
        assert!(!d.remove(id).unwrap(), "removed already");
        d.emit("3");
        d.call(move || tx.send("done".into()).unwrap());
        assert_eq!(next(), "done");
    }

    #[test]
    fn each_callback_call_is_an_owner_of_its_own() {
        // Two dispatchers' callbacks, and two calls of one, run on the same pool threads: by
        // thread, a hold one took would let the others in as a re-entry.
        let (a, b) = (Dispatcher::<u8>::new(), Dispatcher::<u8>::new());
        let (tx, rx) = std_mpsc::channel();
        let (gate_tx, gate_rx) = std_mpsc::channel::<()>();
        let gate = Mutex::new(gate_rx);
        let t = tx.clone();
        a.add(move |&n| {
            if n == 0 {
                // Holds the drain, so that the next event queues behind it, for the same thread.
                let _ = gate.lock().unwrap().recv_timeout(Duration::from_secs(10));
            }
            t.send((n, Owner::current_thread(), std::thread::current().id()))
                .unwrap();
        });
        let t = tx.clone();
        b.add(move |&n| {
            t.send((n, Owner::current_thread(), std::thread::current().id()))
                .unwrap()
        });
        a.emit(0);
        a.emit(1);
        gate_tx.send(()).unwrap();
        b.emit(2);
        let mut got: Vec<_> = (0..3)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).expect("delivered"))
            .collect();
        got.sort_by_key(|(n, _, _)| *n);
        assert_eq!(got[0].2, got[1].2, "one drain, one thread");
        assert_ne!(got[0].1, got[1].1, "two calls of one listener");
        assert_ne!(got[1].1, got[2].1, "two dispatchers");
        let mine = Owner::current_thread();
        assert!(got.iter().all(|(_, o, _)| *o != mine));
        assert_eq!(
            Owner::current_thread(),
            mine,
            "a plain thread keeps its owner"
        );
        let once = Dispatcher::<u8>::new();
        once.call(move || {
            tx.send((9, Owner::current_thread(), std::thread::current().id()))
                .unwrap()
        });
        let (_, o, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(o != mine && o != got[2].1, "a one-off call too");
    }

    #[test]
    fn ids_are_unique_in_the_process_and_another_registrys_id_is_refused() {
        let (a, b) = (Dispatcher::<u8>::new(), Dispatcher::<u8>::new());
        let ida = a.add(|_| {});
        let idb = b.add(|_| {});
        assert_ne!(ida, idb, "the first listener of each has its own id");
        assert!(matches!(b.remove(ida), Err(Error::InvalidArgument(_))));
        assert!(
            a.has_listeners() && b.has_listeners(),
            "nothing removed by a foreign id"
        );
        assert!(matches!(a.remove(7), Err(Error::InvalidArgument(_))));
        assert!(a.remove(ida).unwrap() && b.remove(idb).unwrap());
    }
}
