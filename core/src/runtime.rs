//! The one process-wide tokio runtime shared by the blocking face and every binding.
//!
//! Built lazily on first use. Fork-safe: a child process created by `fork()` does not have the
//! parent's threads, so when the process id changes the old runtime is forgotten (never
//! dropped: dropping would wait for threads that do not exist) and a fresh one is built. It is
//! reached without a lock (`per_process`), so a fork cannot leave the child a held one.
//!
//! # Who drives it: the caller of a blocking call, else one background thread
//!
//! By default the runtime is tokio's current-thread scheduler, and the thread that drives it
//! (polls the sessions' sockets and timers and runs the recipes' tasks) is whichever needs it:
//! - **a thread in a blocking call** ([`block_on`]: the core's blocking face, and through it C
//!   and `zkr`) drives the runtime itself for the length of its call. It writes its request and
//!   reads the reply on its own thread, so a call costs no hand-off to another thread and back:
//!   on a 2-vCPU VM such a crossing costs about 30 µs of CPU each way (docs/PERFORMANCE-LOG.md,
//!   "The caller drives the runtime"). With several blocking callers at once, one drives and
//!   the others wait for their results, as tokio's current-thread scheduler arranges.
//! - **the background driver thread** (`zkrecipes-rt`) drives it whenever no blocking call is
//!   in flight: the async faces (Rust async, Python, Node) spawn their calls as tasks that it
//!   runs, and it keeps every session's pings, watches and state changes moving. When a blocking
//!   call starts it lets go; it takes over again once no blocking call has run for
//!   [`BACKGROUND_AFTER`], or at once when input reaches the runtime while no blocking call is in
//!   flight (on Linux it sleeps on the runtime's own epoll set, armed in that gap: a watch
//!   notification right after a blocking call is not held back) or a task is spawned while
//!   nobody drives.
//!
//! `ZKR_RUNTIME_THREADS=N` (1 to 64) asks for tokio's multi-thread scheduler with N workers
//! instead, which always run the runtime (a blocking call then waits on its caller's thread for
//! a worker to do the work): for a process whose many sessions keep a whole core busy.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Handle, Runtime};

mod bell;
pub(crate) mod delay;
mod per_process;
use bell::Bell;
use per_process::PerProcess;

/// The runtime of this process (see [`runtime`]).
static RUNTIME: PerProcess<Engine> = PerProcess::new();

thread_local! {
    /// Set on the library threads that run user callbacks: they are not runtime workers, so a
    /// callback may call the blocking face (a Python state listener that releases a lock).
    static CALLBACK_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// After this long with no blocking call in flight, the background driver takes the runtime
/// back. It takes it sooner when input reaches the runtime meanwhile (a watch notification, a
/// reply for an async call, a task woken from another thread: on Linux, see `bell`) or when a
/// task is spawned while nobody drives, so only a timer falling due in that gap can run up to
/// this late. The cost of a burst of blocking calls is one background wake-up per this period,
/// not one per call.
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
    /// Where the background driver sleeps; armed to wake it on the runtime's input while no
    /// blocking call is in flight (see [`bell`]).
    bell: Bell,
    /// Held while `active` leaves or reaches 0 and the bell is disarmed or armed, so that the
    /// last of two racing calls decides (never disarmed while nobody drives).
    edges: Mutex<()>,
    /// After this long with no blocking call, the background driver takes over
    /// ([`BACKGROUND_AFTER`]; longer in a test that must not be rescued by the timer).
    after: Duration,
    /// Asks the background driver to let go of the runtime (a blocking call starts).
    let_go: tokio::sync::Notify,
}

impl Driven {
    fn start(after: Duration) -> Arc<Driven> {
        let rt = Builder::new_current_thread()
            .thread_name("zkrecipes-rt")
            .enable_all()
            // The call's future is polled only once no task is left to run (see `settle`).
            .event_interval(EVENT_INTERVAL)
            .build()
            .expect("zkrecipes: cannot build the tokio runtime");
        // Before anything drives the runtime (Bell::new looks for its epoll set).
        let bell = Bell::new(&rt);
        let d = Arc::new(Driven {
            rt,
            active: AtomicUsize::new(0),
            last_end: AtomicU64::new(0),
            epoch: Instant::now(),
            background_driving: AtomicBool::new(false),
            background_untimed: AtomicBool::new(false),
            kicked: AtomicBool::new(false),
            bell,
            edges: Mutex::new(()),
            after,
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
            {
                // It reads the runtime's input itself now: a bell armed by the last call
                // would only wake it later for nothing.
                let _edge = self.edges.lock().unwrap_or_else(|e| e.into_inner());
                if self.active.load(Ordering::SeqCst) == 0 {
                    self.bell.disarm();
                }
            }
            self.background_driving.store(true, Ordering::SeqCst);
            // A blocking call that started since the check above finds `background_driving` set
            // or has left a permit in `let_go`: either way this returns at once for it. A permit
            // left by a call that has already ended is not a reason to let go (returning at once
            // would leave the input that woke this thread unread).
            if self.active.load(Ordering::SeqCst) == 0 {
                self.rt.block_on(async {
                    loop {
                        self.let_go.notified().await;
                        if self.active.load(Ordering::SeqCst) > 0 {
                            break;
                        }
                    }
                });
            }
            self.background_driving.store(false, Ordering::SeqCst);
        }
    }

    /// Returns once no blocking call is in flight and none has ended for [`BACKGROUND_AFTER`],
    /// or at once when input reaches the runtime while no call is in flight (the bell is armed
    /// then: see [`bell`]) or a spawn kicked it. While calls run it looks again once per
    /// [`BACKGROUND_AFTER`]; only when one call has stayed in flight for a whole period (a long
    /// wait, such as an acquire that queues) does it sleep untimed, until that call ends. So a
    /// burst of short calls costs it one wake-up per period and costs the callers nothing:
    /// waking it at the end of every call would put a futex wake on each call's path.
    fn wait_until_idle(&self) {
        let after = self.after.as_nanos() as u64;
        // The end time of the last call as seen at the previous look, when calls were in flight.
        let mut in_flight_since: Option<u64> = None;
        // The last wait ended on input to the runtime (the bell was armed: nobody drove).
        let mut input = false;
        loop {
            if self.active.load(Ordering::SeqCst) > 0 {
                // Input seen before this call started is this call's to read (and its end arms
                // the bell again).
                let last_end = self.last_end.load(Ordering::SeqCst);
                // The call may have ended meanwhile, and its arming found input already there:
                // that wake is the only one this input gets.
                input = if in_flight_since == Some(last_end) {
                    // No call ended for a whole period. Announce the untimed sleep before
                    // looking again, so that the call ending the last one in flight either is
                    // seen here or sees the flag and rings.
                    self.background_untimed.store(true, Ordering::SeqCst);
                    let input_woke = self.active.load(Ordering::SeqCst) > 0 && self.bell.wait(None);
                    self.background_untimed.store(false, Ordering::SeqCst);
                    in_flight_since = None;
                    input_woke
                } else {
                    in_flight_since = Some(last_end);
                    self.bell.wait(Some(self.after))
                };
                continue;
            }
            in_flight_since = None;
            if input || self.kicked.swap(false, Ordering::SeqCst) {
                return;
            }
            let idle = self
                .now()
                .saturating_sub(self.last_end.load(Ordering::SeqCst));
            if idle >= after {
                return;
            }
            input = self.bell.wait(Some(Duration::from_nanos(after - idle)));
        }
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.drive(future, Caller::Blocking)
    }

    /// [`Self::block_on`]; `caller`: a blocking call, or an event loop's turn ([`Caller`]).
    ///
    /// For a loop's turn (`loop_watches`): the caller's event loop watches the runtime's input
    /// ([`loop_turn`]), so the call's end neither arms the bell nor rings it for input left
    /// unread (the loop's next turn reads it).
    fn drive<F: Future>(&self, future: F, caller: Caller) -> F::Output {
        let loop_watches = caller != Caller::Blocking;
        {
            let _edge = self.edges.lock().unwrap_or_else(|e| e.into_inner());
            if self.active.fetch_add(1, Ordering::SeqCst) == 0 {
                // This call drives: the runtime's input is its own to read.
                self.bell.disarm();
            }
        }
        // If the background driver holds the runtime, it lets go; if it is about to take it, the
        // permit makes it return at once.
        self.let_go.notify_one();
        /// Ends the call (also when it unwinds); `.1`: what its last step left behind;
        /// `.2`: an event loop watches the runtime's input.
        struct Ended<'a>(&'a Driven, Left, bool);
        impl Drop for Ended<'_> {
            fn drop(&mut self) {
                let d = self.0;
                d.last_end.store(d.now(), Ordering::SeqCst);
                let last = {
                    let _edge = d.edges.lock().unwrap_or_else(|e| e.into_inner());
                    let last = d.active.fetch_sub(1, Ordering::SeqCst) == 1;
                    if last && !self.2 {
                        // Nobody drives now: input from here on (or already waiting) wakes
                        // the background driver.
                        d.bell.arm();
                    }
                    last
                };
                if !last {
                    return;
                }
                match self.1 {
                    // Tasks left queued with no input waiting: nothing would wake the
                    // background driver for them (input would, and an event loop reads input
                    // only), so it takes the runtime now, as after a spawn.
                    Left::Tasks => {
                        d.kicked.store(true, Ordering::SeqCst);
                        d.bell.ring();
                    }
                    // Input keeps coming: the background driver reads it, unless a loop does.
                    Left::Input if !self.2 => d.bell.ring(),
                    _ if d.background_untimed.load(Ordering::SeqCst) => d.bell.ring(),
                    _ => {}
                }
            }
        }
        let mut ended = Ended(self, Left::Input, loop_watches);
        let settled = self.bell.settle_point();
        let (out, left) = self.rt.block_on(async move {
            let out = future.await;
            (out, settle(settled, caller).await)
        });
        ended.1 = left;
        out
    }

    /// [`loop_turn`] on this runtime.
    fn loop_turn<R>(&self, start: impl FnOnce() -> R) -> R {
        if self.active.load(Ordering::SeqCst) > 0 {
            // A blocking call drives: the tasks `start` spawns reach it.
            let _in_runtime = self.rt.enter();
            return start();
        }
        self.drive(async move { start() }, Caller::LoopCall)
    }

    /// [`try_loop_turn`] on this runtime.
    fn try_loop_turn(&self) -> bool {
        if self.active.load(Ordering::SeqCst) > 0 || self.background_driving.load(Ordering::SeqCst)
        {
            return false;
        }
        self.drive(async {}, Caller::LoopInput);
        true
    }

    /// A task was spawned: if nobody drives the runtime, the background driver takes it now.
    fn spawned(&self) {
        if self.active.load(Ordering::SeqCst) == 0
            && !self.background_driving.load(Ordering::SeqCst)
        {
            self.kicked.store(true, Ordering::SeqCst);
            self.bell.ring();
        }
    }
}

/// The last step of a blocking call on the caller-driven runtime: what it may leave behind when
/// it returns.
///
/// tokio's `block_on` polls the I/O driver once more (without waiting) before it sees that the
/// call's future is done, and returns without running the tasks that last poll woke: input
/// for another session that arrived just as the call ended (a watch notification a moment after
/// the reply that ends the call, the usual case when the call's own write triggers it). Nothing
/// would run them until the background driver's timer. So the call ends with a look of its own
/// ([`DeferredLook`]: a deferred wake-up, ready once every runnable task has run and the runtime
/// has polled its driver once more). Then it looks whether that poll woke a task (input that came
/// in woke its connection's reading task: the vendored client counts those wakes,
/// `zookeeper_client::input_wakes`, patch 17; a task woken from another thread sits in the
/// runtime's queue), and whether input came after the poll and waits in the runtime's epoll set.
/// If either, the call goes on: the woken tasks run, its thread's next poll of the driver takes
/// the input, and the tasks that wakes run before the next look. Only if neither happened does
/// the call end (in Node's LeaderLatch failover, about 1 round in 200 found its reply taken by
/// that last poll and waited 5 ms for the background driver, 2026-12-05). The runtime polls the
/// call's future only once no task is left to run ([`EVENT_INTERVAL`]), so the tasks queued
/// after the look have run too. While another thread holds the runtime, the look is a task
/// queued behind every runnable one, which reads the epoll set before the driver's poll (the
/// task cost the blocking face 2,100 instructions per lock cycle, 2026-12-06). After
/// [`SETTLE_LOOKS`] looks that did not end the call, it says what it left: input
/// still waiting (the bell, or the caller's event loop, sees it), or queued tasks only (the
/// background driver is kicked to run them). A timer that fires in that last poll is left to the
/// background driver's timer. `None` (no watch: not Linux): nothing to look at; the timer covers
/// it, as before.
///
/// On the bench VM this cost 2–5 µs of CPU per uncontended lock cycle (two calls), and took
/// LeaderLatch failover from C from p50 0.46–0.50 / p99 6.4 ms to 0.28–0.37 / 2.2–2.5 ms
/// (docs/PERFORMANCE-LOG.md, "Input right after a blocking call").
///
/// A loop's turns never look for waiting input themselves: the loop watches the runtime's
/// epoll set, level-triggered, and runs a turn for input that waits when this one ends. They
/// still look for what that watch cannot see, the tasks woken by the last poll of the driver.
/// - A turn for a call ([`Caller::LoopCall`]) only wrote a request: its reply is not in yet.
/// - A turn for input ([`Caller::LoopInput`]) takes its first look's answer from the loop,
///   which saw input waiting: "waiting", so the turn goes on past tokio's poll of its driver
///   (made once the queue is empty, after the look's task) and runs the tasks that poll woke
///   before it looks again. A turn that ended at its first look left a task the poll woke
///   queued and unrun when nothing counted the wake (a reader other than the wire client's).
///   If another thread took the input meanwhile, the turn goes round once for nothing.
///
/// Two `poll`s saved per call from Node or asyncio (one in its turn, one in its reply's). A
/// loop's looks are deferred wake-ups, not tasks: a Node lock cycle spawned six tasks for them
/// (2026-12-06, `tests/bench/instructions`).
async fn settle(settled: Option<bell::SettlePoint>, caller: Caller) -> Left {
    let Some(point) = settled else {
        return Left::Nothing;
    };
    // Input waiting now is taken by this thread's next poll of the driver; the tasks it wakes
    // run before the next look. Only input that keeps coming is left to the background driver.
    let mut left = Left::Input;
    for look in 0..SETTLE_LOOKS {
        // Where this thread holds the runtime, the look is a deferred wake-up
        // ([`DeferredLook`]): it is ready after every queued task has run and tokio has polled its
        // driver once, when a task's end would have been. The count is read before the queued
        // tasks run: only the driver's poll moves it (a reader's wake from the I/O driver, patch
        // 17), as with a task's read after them. While another thread holds the runtime (the
        // background driver letting go, a blocking call), a task looks instead, before the poll.
        let wakes = zookeeper_client::input_wakes();
        let deferred = DeferredLook::default().await;
        let (waiting, wakes) = match caller {
            // A blocking call looks at the epoll set: input that came after the driver's poll
            // waits there (input the poll took moved the count, see below). Either way the call
            // goes on. An error would mean the task was dropped unrun: assume the worst.
            Caller::Blocking if deferred => (point.input_waiting(), wakes),
            Caller::Blocking => {
                tokio::spawn(
                    async move { (point.input_waiting(), zookeeper_client::input_wakes()) },
                )
                .await
                .unwrap_or((true, 0))
            }
            // A loop's turn looks at nothing itself: its loop watches the epoll set. A turn for
            // input takes its first look's answer from the loop, which saw input waiting.
            Caller::LoopInput | Caller::LoopCall => {
                if !deferred {
                    let _ = tokio::spawn(async {}).await;
                }
                (caller == Caller::LoopInput && look == 0, wakes)
            }
        };
        if waiting {
            left = Left::Input;
            continue;
        }
        // The runtime polled its I/O driver once more before it polled this future: input that
        // came in between woke its reading task (the count moved), and a task woken from
        // another thread went to the runtime's queue for them. Those tasks are queued, unrun,
        // and nothing in the epoll set tells of them any more.
        let queued = zookeeper_client::input_wakes() != wakes
            || tokio::runtime::Handle::current()
                .metrics()
                .global_queue_depth()
                > 0;
        if !queued {
            return Left::Nothing;
        }
        left = Left::Tasks;
    }
    left
}

/// Ready once tokio has run every queued task and polled its I/O driver once, by a deferred
/// wake-up (tokio's `yield_now`), if this thread holds the runtime now: `true`. tokio defers the
/// wake-up of the future it blocks on only while it runs it (and then polls that future only
/// once no task is left, [`EVENT_INTERVAL`], after a poll of its driver); on a thread that waits
/// for the runtime it wakes at once, and this is ready at once with `false`. A spawned task gives
/// the same wait either way, at the cost of a task (six per Node lock cycle, 2026-12-06).
#[derive(Default)]
struct DeferredLook {
    yielded: bool,
}

/// The waker a [`DeferredLook`] hands to `yield_now` (one per thread): it tells whether the
/// wake-up came at once, and passes every wake-up on to the look's own waker.
struct LookWaker {
    inner: Mutex<Option<std::task::Waker>>,
    woke: AtomicBool,
}

impl std::task::Wake for LookWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woke.store(true, Ordering::SeqCst);
        // Woken outside the lock: whatever the wake-up does cannot find it held.
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(w) = inner {
            w.wake();
        }
    }
}

thread_local! {
    /// This thread's [`LookWaker`], and the waker made of it.
    static LOOK_WAKER: (Arc<LookWaker>, std::task::Waker) = {
        let probe = Arc::new(LookWaker {
            inner: Mutex::new(None),
            woke: AtomicBool::new(false),
        });
        let waker = std::task::Waker::from(probe.clone());
        (probe, waker)
    };
}

impl Future for DeferredLook {
    type Output = bool;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<bool> {
        // During the thread's exit (its thread-locals destroyed): the caller's task instead.
        let looked = LOOK_WAKER.try_with(|(probe, waker)| {
            let mut inner = probe.inner.lock().unwrap_or_else(|e| e.into_inner());
            if self.yielded {
                // The deferred wake-up has come (tokio wakes them all before it polls this
                // future again): the runtime is kept alive by nothing here between looks.
                *inner = None;
                return Poll::Ready(true);
            }
            *inner = Some(cx.waker().clone());
            drop(inner);
            probe.woke.store(false, Ordering::SeqCst);
            let mut yielding = std::pin::pin!(tokio::task::yield_now());
            // Its first poll is always Pending: the wake-up is deferred, or made at once.
            let _ = yielding
                .as_mut()
                .poll(&mut std::task::Context::from_waker(waker));
            if probe.woke.load(Ordering::SeqCst) {
                *probe.inner.lock().unwrap_or_else(|e| e.into_inner()) = None;
                return Poll::Ready(false);
            }
            self.yielded = true;
            Poll::Pending
        });
        looked.unwrap_or(Poll::Ready(false))
    }
}

/// Who drives the runtime in [`Driven::drive`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Caller {
    /// A blocking call ([`block_on`]).
    Blocking,
    /// An event loop's turn that starts a call ([`loop_turn`]).
    LoopCall,
    /// An event loop's turn for input it saw ([`try_loop_turn`]).
    LoopInput,
}

/// What a blocking call's last step ([`settle`]) left behind as the call returns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Left {
    /// No task queued, no input waiting (or nothing to look at).
    Nothing,
    /// Input was still waiting at the last look (tasks may be queued too).
    Input,
    /// Tasks woken after the last look are still queued; no input waits.
    Tasks,
}

/// How many tasks the runtime runs in a row before it polls its I/O driver and the future it
/// blocks on (tokio's default is 61). A blocking call must not return while tasks are still
/// queued: nothing would run them until the background driver's timer, 5 ms later ([`settle`]).
/// With tokio's default, the call's future was polled after 61 tasks whether or not more were
/// queued, and [`settle`]'s look could not tell (tokio's park hook does not run when the future
/// is about to be polled, so counting parks did not tell either: every call looked four times,
/// 2026-12-05). So the runtime runs every queued task before it polls its future or its driver
/// again, up to this many: in a burst that long, input waits for the tasks already runnable. A
/// chain longer than this (never seen) leaves its tail to the background driver's timer.
const EVENT_INTERVAL: u32 = 1 << 16;

/// How many times a blocking call's last step looks for waiting input before it leaves the rest
/// to the background driver (see [`settle`]).
const SETTLE_LOOKS: usize = 4;

/// This process's id, without a system call after the first (glibc no longer caches `getpid`,
/// and the blocking face asks on every call to notice a `fork()`). On Linux a `pthread_atfork`
/// handler clears the cached value in the child, which then reads its own id; elsewhere it is
/// read each time.
pub fn process_id() -> u32 {
    #[cfg(target_os = "linux")]
    {
        use std::sync::atomic::AtomicU32;
        /// 0: not read yet in this process.
        static PID: AtomicU32 = AtomicU32::new(0);
        extern "C" fn forked_child() {
            PID.store(0, Ordering::SeqCst);
        }
        let cached = PID.load(Ordering::SeqCst);
        if cached != 0 {
            return cached;
        }
        /// The handler is registered (if not, the id is read each time).
        static CACHEABLE: AtomicBool = AtomicBool::new(false);
        static REGISTER: std::sync::Once = std::sync::Once::new();
        REGISTER.call_once(|| {
            // SAFETY: registers a handler that only stores to an atomic (async-signal-safe).
            let ok = unsafe { libc::pthread_atfork(None, None, Some(forked_child)) } == 0;
            CACHEABLE.store(ok, Ordering::SeqCst);
        });
        let pid = std::process::id();
        // A thread forking meanwhile leaves its child with 0 or the parent's id in `PID`, and
        // the handler clears either in the child.
        if CACHEABLE.load(Ordering::SeqCst) {
            PID.store(pid, Ordering::SeqCst);
        }
        pid
    }
    #[cfg(not(target_os = "linux"))]
    {
        std::process::id()
    }
}

/// Runs `child` in a forked child process and waits for it: whether it returned true there (a
/// panic counts as false). The child ends with `_exit`, running none of the parent's exit
/// handlers; it must only do what is safe after a fork in a threaded process.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn in_forked_child(child: impl FnOnce() -> bool) -> bool {
    // SAFETY: the callers' children only use atomics, getpid and malloc before `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(false);
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

/// This process's runtime, built on first use (a parent's, inherited across `fork()`, is never
/// touched: its threads are gone in the child).
fn runtime() -> &'static Engine {
    RUNTIME.get_or_init(|| match worker_threads() {
        Some(n) => Engine::Workers(
            Builder::new_multi_thread()
                .worker_threads(n)
                .thread_name("zkrecipes-rt")
                .enable_all()
                .build()
                .expect("zkrecipes: cannot build the tokio runtime"),
        ),
        None => Engine::Driven(Driven::start(BACKGROUND_AFTER)),
    })
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
    match runtime() {
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

/// The descriptor an event loop on the caller's thread polls for readable to learn that the
/// runtime has input (tokio's epoll set: a socket's input, a timer's or another thread's wake-up
/// of the I/O driver), for [`loop_turn`]. `None` with `ZKR_RUNTIME_THREADS` (worker threads read
/// the input themselves) and where the set is not known (not Linux).
#[cfg(unix)]
pub fn loop_source() -> Option<std::os::fd::RawFd> {
    match runtime() {
        Engine::Workers(_) => None,
        Engine::Driven(d) => d.bell.loop_source(),
    }
}

/// One turn of the runtime on this thread, for an event loop that watches [`loop_source`] and
/// must never block (the Node face's JS thread): runs `start` (which may spawn tasks: they queue
/// on this thread) and then every task that is runnable, reads the input that waits, and
/// returns. It never waits for input: a reply that has not arrived is the loop's next turn.
///
/// If the background driver holds the runtime, this takes it over (a short wait for it to let
/// go); if a blocking call on another thread drives, `start` runs here and its tasks there. The
/// turn's end leaves the runtime's input to the loop: the background driver takes the runtime
/// back only after [`BACKGROUND_AFTER`] with no turn and no blocking call (it also runs timers
/// that fall due meanwhile). With `ZKR_RUNTIME_THREADS`, `start` runs and the workers do the
/// rest. Must not be called from inside the runtime (a task, or `start` of another turn).
pub fn loop_turn<R>(start: impl FnOnce() -> R) -> R {
    match runtime() {
        Engine::Workers(rt) => {
            let _in_runtime = rt.enter();
            start()
        }
        Engine::Driven(d) => d.loop_turn(start),
    }
}

/// [`loop_turn`] with nothing to start, when [`loop_source`] is readable; only if nobody else
/// drives the runtime. `false`: the background driver or a blocking call drives it and reads
/// the input, so the loop may stop watching until its next [`loop_turn`].
pub fn try_loop_turn() -> bool {
    match runtime() {
        Engine::Workers(_) => false,
        Engine::Driven(d) => d.try_loop_turn(),
    }
}

/// Spawns a task on the shared runtime (and makes sure a thread drives it).
pub fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let engine = runtime();
    let task = engine.handle().spawn(future);
    if let Engine::Driven(d) = engine {
        d.spawned();
    }
    task
}

/// Runs `future` as its own task and waits for it: a caller that stops waiting (a timeout
/// around the call, a cancelled task, Ctrl-C in a face) does not stop it. The one home of the
/// rule "this must not stop half way" (a release, a guaranteed delete, a start past its point
/// of no return, a put-back). The caller's deadline bound
/// ([`Deadline::bounding`](crate::wait::Deadline::bounding)) goes with it; a panic in it is
/// `Internal`.
pub(crate) async fn run_to_end<F, T>(future: F) -> crate::Result<T>
where
    F: Future<Output = crate::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let bound = crate::wait::Deadline::bound();
    spawn(bound.bounding(future))
        .await
        .map_err(crate::client::join_error)?
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
        let r = crate::owner::as_own_owner(f);
        CALLBACK_THREAD.with(|c| c.set(false));
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cached id is the child's own after `fork()` (the handler clears the parent's).
    #[cfg(target_os = "linux")]
    #[test]
    fn process_id_is_the_childs_own_after_fork() {
        let parent = process_id();
        assert_eq!(parent, std::process::id());
        assert_eq!(process_id(), parent, "cached");
        assert!(
            in_forked_child(|| process_id() == std::process::id() && process_id() != parent),
            "the child saw its parent's id"
        );
        assert_eq!(process_id(), parent);
    }

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

    /// A private caller-driven runtime whose background driver would take over only after an
    /// hour: whatever runs in the gap after a blocking call below was woken by the bell.
    #[cfg(target_os = "linux")]
    fn without_timer() -> Arc<Driven> {
        let d = Driven::start(Duration::from_secs(3600));
        assert!(
            d.bell.watches_input(),
            "the runtime's epoll set was not found: the gap after a blocking call is covered by the timer alone"
        );
        d
    }

    /// A task on `d` that sends the first byte it reads from a socket, started by a blocking
    /// call (it runs once and waits for input before the call ends); the socket's other end.
    #[cfg(target_os = "linux")]
    fn reader(
        d: &Driven,
    ) -> (
        std::os::unix::net::UnixStream,
        std::sync::mpsc::Receiver<u8>,
    ) {
        let (theirs, ours) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        d.block_on(async move {
            tokio::spawn(send_first_byte(ours, tx));
            tokio::task::yield_now().await;
        });
        (theirs, rx)
    }

    /// Reads `ours` (in the runtime) until a byte comes, and sends it.
    #[cfg(target_os = "linux")]
    async fn send_first_byte(
        ours: std::os::unix::net::UnixStream,
        tx: std::sync::mpsc::Sender<u8>,
    ) {
        let ours = tokio::net::UnixStream::from_std(ours).unwrap();
        let mut b = [0u8; 1];
        loop {
            ours.readable().await.unwrap();
            if let Ok(1) = ours.try_read(&mut b) {
                break;
            }
        }
        tx.send(b[0]).unwrap();
    }

    /// Input for a task (a watch notification, in real use) that arrives after a blocking call
    /// ended, while nobody drives, wakes the background driver at once instead of waiting for
    /// its timer (`BACKGROUND_AFTER`; an hour here).
    #[cfg(target_os = "linux")]
    #[test]
    fn input_right_after_a_blocking_call_is_read_at_once() {
        use std::io::Write;
        let d = without_timer();
        for round in 0..20u8 {
            let (mut theirs, rx) = reader(&d);
            theirs.write_all(&[round]).unwrap();
            assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(round));
        }
    }

    /// Input that reaches the runtime during a blocking call's last poll of the I/O driver
    /// (here: written by the call itself, which then yields once, so tokio polls the driver and
    /// then sees the call done) is read at once, not left to the timer: by the call itself (its
    /// settling step) or by the background driver.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_task_woken_by_a_blocking_calls_last_poll_runs_at_once() {
        use std::io::Write;
        let d = without_timer();
        for round in 0..20u8 {
            let (mut theirs, rx) = reader(&d);
            d.block_on(async move {
                theirs.write_all(&[round]).unwrap();
                tokio::task::yield_now().await;
            });
            assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(round));
        }
    }

    /// A task woken from a plain thread after a blocking call ended, while nobody drives, runs
    /// at once (tokio's own waker makes the runtime's epoll set ready).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_task_woken_from_another_thread_after_a_blocking_call_runs_at_once() {
        let d = without_timer();
        for round in 0..20u32 {
            let (wake, woken) = tokio::sync::oneshot::channel::<u32>();
            let (tx, rx) = std::sync::mpsc::channel();
            d.block_on(async move {
                tokio::spawn(async move { tx.send(woken.await.unwrap()).unwrap() });
                tokio::task::yield_now().await;
            });
            std::thread::spawn(move || wake.send(round).unwrap())
                .join()
                .unwrap();
            assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(round));
        }
    }

    /// Waits (up to 30 s) until `fd` is readable.
    #[cfg(target_os = "linux")]
    fn readable_within_30s(fd: std::os::fd::RawFd) -> bool {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, 30_000) == 1 }
    }

    /// An event loop's turn (the Node face's JS thread) runs the task it starts until that task
    /// waits, returns without waiting for input, and leaves the input to the loop: the
    /// runtime's epoll set becomes readable, the background driver is not woken (its timer is
    /// an hour here), and the loop's next turn runs the woken task before it returns.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_loop_turn_leaves_the_input_to_the_loop() {
        use std::io::Write;
        let d = without_timer();
        let source = d.bell.loop_source().unwrap();
        for round in 0..20u8 {
            let (mut theirs, ours) = std::os::unix::net::UnixStream::pair().unwrap();
            ours.set_nonblocking(true).unwrap();
            let (tx, rx) = std::sync::mpsc::channel();
            let (ran_tx, ran) = std::sync::mpsc::channel();
            d.loop_turn(|| {
                tokio::spawn(async move {
                    ran_tx.send(()).unwrap();
                    send_first_byte(ours, tx).await;
                });
            });
            assert_eq!(ran.try_recv(), Ok(()), "the turn did not run its task");
            assert!(rx.try_recv().is_err());
            assert!(
                !d.bell.armed(),
                "the turn's end armed the bell: input would wake the background driver"
            );
            theirs.write_all(&[round]).unwrap();
            assert!(readable_within_30s(source), "the loop never saw the input");
            assert!(
                d.try_loop_turn(),
                "another thread drives the runtime: the input woke the background driver"
            );
            assert_eq!(
                rx.try_recv(),
                Ok(round),
                "the loop's turn did not run the woken task"
            );
        }
    }

    /// A chain of tasks, each spawning the next, far longer than tokio runs in a row by default
    /// before it polls the call's future again (61): a blocking call and a loop's turn run it to
    /// its end before they return, instead of leaving its tail queued for the background driver
    /// (an hour here). With tokio's default event interval both stopped after about 61 tasks, or
    /// 4 × 61 with every look spent.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_call_runs_a_long_chain_of_tasks_to_its_end() {
        fn link(left: usize, done: Arc<AtomicUsize>) {
            tokio::spawn(async move {
                done.fetch_add(1, Ordering::SeqCst);
                if left > 0 {
                    link(left - 1, done);
                }
            });
        }
        const CHAIN: usize = 5_000;
        let d = without_timer();
        for round in 0..5 {
            let done = Arc::new(AtomicUsize::new(0));
            let chain = done.clone();
            d.block_on(async move { link(CHAIN - 1, chain) });
            assert_eq!(
                done.load(Ordering::SeqCst),
                CHAIN,
                "blocking call, round {round}"
            );
            let done = Arc::new(AtomicUsize::new(0));
            let chain = done.clone();
            d.loop_turn(move || link(CHAIN - 1, chain));
            assert_eq!(
                done.load(Ordering::SeqCst),
                CHAIN,
                "loop turn, round {round}"
            );
        }
    }

    /// Input that reaches the runtime after a call's last look, in the poll of the I/O driver
    /// that tokio makes before it polls the call's future again, wakes its connection's task:
    /// the call does not return with that task queued and unrun (nothing would run it until the
    /// background driver's timer, an hour here). A task queued after the call's look makes a
    /// data watch fire and holds the thread until the proxy has written the notification to
    /// the watching session's socket; the task waiting on the watch has run when the call
    /// returns. Before, the call returned with the session's reading task queued (in Node's
    /// LeaderLatch failover, about 1 round in 200 waited 5 ms for the background driver).
    ///
    /// The task waits until the notification is readable in the runtime's epoll set, not only
    /// written by the proxy: loopback delivers in a softirq that a busy machine defers past the
    /// write's return. Without that wait, about 1 full run of this binary in 10 beside a busy
    /// loop failed a round; in 200 rounds sampled (2026-12-06), every round whose notification
    /// was readable when the task ended fired, and 2 of the 3 whose was not did not: input
    /// still in the kernel is not yet the runtime's, and the bell hands it to the background
    /// driver after the call.
    #[cfg(target_os = "linux")]
    #[test]
    fn input_taken_by_the_last_poll_of_a_call_is_not_left_queued() {
        use zookeeper_client as zk;
        let server = zkrecipes_testing::TestingServer::start();
        let proxy = Arc::new(zkrecipes_testing::FaultProxy::start(
            &server.connect_string(),
        ));
        // The writer on a runtime of its own, driven from another thread.
        let writer_rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let writer = Arc::new(
            writer_rt
                .block_on(zk::Client::connect(&server.connect_string()))
                .expect("connect the writer"),
        );
        let writer_rt = Arc::new(writer_rt);
        let path = format!("/settle-{}", std::process::id());
        let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        writer_rt
            .block_on(writer.create(&path, b"", &persistent))
            .expect("create the watched node");
        let d = without_timer();
        // A long session: no ping crosses the proxy while a round runs.
        let watching = d
            .block_on(
                zk::Client::connector()
                    .with_session_timeout(Duration::from_secs(60))
                    .connect(&proxy.connect_string()),
            )
            .expect("connect through the proxy");
        for round in 0..5 {
            let (_, _, watch) = d
                .block_on(watching.get_and_watch_data(&path))
                .expect("watch the node");
            let fired = Arc::new(AtomicBool::new(false));
            let set = fired.clone();
            d.block_on(async move {
                tokio::spawn(async move {
                    watch.changed().await;
                    set.store(true, Ordering::SeqCst);
                });
            });
            let (proxy, writer, writer_rt, path) = (
                proxy.clone(),
                writer.clone(),
                writer_rt.clone(),
                path.clone(),
            );
            let point = d.bell.settle_point().expect("the runtime's epoll set");
            d.block_on(async move {
                // Spawned by a task the call's future spawns: queued after the call's look.
                tokio::spawn(async move {
                    tokio::spawn(async move {
                        let before = proxy.bytes_forwarded();
                        let notification = 32 + path.len() as u64;
                        std::thread::spawn(move || {
                            writer_rt
                                .block_on(writer.set_data(&path, b"x", None))
                                .expect("set the watched node")
                        })
                        .join()
                        .unwrap();
                        // The proxy writes the notification to the watching session's socket
                        // (loopback: it is readable once the write returns). All of it: its
                        // frame is 4 (length) + 16 (reply header) + 4 (type) + 4 (state) + 4
                        // (path length) + the path, and a ping crossing the proxy meanwhile (12
                        // bytes out, 20 back) must not pass for it.
                        let until = Instant::now() + Duration::from_secs(30);
                        while proxy.bytes_forwarded() < before + notification {
                            assert!(Instant::now() < until, "the notification never came");
                            std::thread::yield_now();
                        }
                        // Written is not yet readable: loopback delivers in a softirq, which a
                        // busy machine defers to ksoftirqd, after the write has returned. The
                        // runtime's epoll set tells once it is (nothing else polls it while
                        // this task holds the thread).
                        while !point.input_waiting() {
                            assert!(Instant::now() < until, "the notification never arrived");
                            std::thread::yield_now();
                        }
                    });
                });
            });
            assert!(
                fired.load(Ordering::SeqCst),
                "round {round}: the call returned with the notification's task left queued"
            );
        }
        drop(watching);
        writer_rt.block_on(writer.delete(&path, None)).unwrap();
    }

    /// A loop's turn takes the runtime from the background driver when it holds it (the turn's
    /// task runs before the turn returns); a turn for input leaves it to the background driver.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_loop_turn_takes_the_runtime_from_the_background_driver() {
        let d = Driven::start(Duration::from_millis(1));
        let background_drives = || {
            let until = Instant::now() + Duration::from_secs(30);
            while !d.background_driving.load(Ordering::SeqCst) {
                assert!(
                    Instant::now() < until,
                    "the background driver never took over"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        for round in 0..10u32 {
            background_drives();
            assert!(!d.try_loop_turn(), "a turn for input took the runtime");
            let (tx, rx) = std::sync::mpsc::channel();
            d.loop_turn(|| {
                tokio::spawn(async move { tx.send(round).unwrap() });
            });
            assert_eq!(rx.try_recv(), Ok(round), "the turn did not run its task");
        }
    }

    /// A deferred look is ready after the tasks queued before it have run, where this thread
    /// holds the runtime; where another thread holds it, at once with `false` (the caller then
    /// waits on a task instead: see `a_loop_turn_takes_the_runtime_from_the_background_driver`).
    #[test]
    fn a_deferred_look_waits_for_the_queue_only_where_the_runtime_is_held() {
        let rt = Arc::new(
            Builder::new_current_thread()
                .enable_all()
                .event_interval(EVENT_INTERVAL)
                .build()
                .unwrap(),
        );
        let (ran, deferred) = rt.block_on(async {
            let ran = Arc::new(AtomicUsize::new(0));
            for _ in 0..3 {
                let r = ran.clone();
                tokio::spawn(async move {
                    r.fetch_add(1, Ordering::SeqCst);
                });
            }
            let deferred = DeferredLook::default().await;
            (ran.load(Ordering::SeqCst), deferred)
        });
        assert!(
            deferred,
            "the look was not deferred on the thread holding the runtime"
        );
        assert_eq!(ran, 3, "the look was ready before the queued tasks ran");

        let (inside_tx, inside_rx) = std::sync::mpsc::channel();
        let release = Arc::new(tokio::sync::Notify::new());
        let holder = {
            let (rt, release) = (rt.clone(), release.clone());
            std::thread::spawn(move || {
                rt.block_on(async move {
                    inside_tx.send(()).unwrap();
                    release.notified().await;
                })
            })
        };
        inside_rx.recv().unwrap();
        let deferred = rt.block_on(DeferredLook::default());
        assert!(
            !deferred,
            "a look on a thread waiting for the runtime was deferred"
        );
        release.notify_one();
        holder.join().unwrap();
    }

    #[test]
    fn workers_may_not() {
        let r = block_on(spawn(async { try_block_on(async { 7 }) })).unwrap();
        assert!(matches!(r, Err(crate::Error::Internal(_))));
    }
}
