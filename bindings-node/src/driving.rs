//! The JS thread drives zkrecipes' runtime itself, between its own callbacks.
//!
//! A Promise-returning method used to spawn its future as a task for the runtime's background
//! thread, and the background thread settled the Promise through a threadsafe function: every
//! call crossed from the JS thread to the background thread and back (about 30 µs of CPU per
//! crossing on a 2-vCPU VM, docs/PERFORMANCE-LOG.md "The caller drives the runtime"). Now each JS
//! thread (the main one, each worker's) has a [`Port`]:
//!
//! - a method call runs one [`zkrecipes::runtime::loop_turn`] on the JS thread: its task is
//!   spawned there and runs until it waits (the request is written from the JS thread);
//! - libuv watches the runtime's input ([`zkrecipes::runtime::loop_source`], tokio's epoll set)
//!   with a `uv_poll` handle: when a reply arrives, the JS thread's loop runs another turn, which
//!   reads it and runs the tasks it wakes;
//! - a task that finishes during a turn of its own JS thread settles its Promise right after the
//!   turn, on that thread ([`deliver`]); one that finishes elsewhere (on the background driver,
//!   which takes the runtime back after `BACKGROUND_AFTER` without a turn, or in another JS
//!   thread's turn) goes through the port's one threadsafe function, as before.
//!
//! One kind of call leaves the JS thread while others of its kind are pending: a counter's add
//! ([`Way::Queues`]), whose chain of rounds goes on inside the runtime without JS; it is then a
//! task of the background driver, as every call is with turns off.
//!
//! No JS runs inside a turn: Promises are settled after it, events still go through their own
//! threadsafe functions. So the old path stays for a process whose runtime tasks call a JS
//! function *and wait for its answer* (a cache's path filter, an ACL provider: [`WaitsOnJs`]):
//! in a turn, that wait would be on the thread that has to answer. It stays too where the
//! runtime's input cannot be watched (`ZKR_RUNTIME_THREADS`, not Linux, libuv not found), and
//! with `ZKR_NODE_LOOP_TURNS=0` (for comparisons).
//!
//! The event loop stays alive while a Promise of the port is pending (the threadsafe function
//! is referenced then), never because of the `uv_poll` handle (unreferenced).

use std::any::Any;
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use napi::bindgen_prelude::{JsError, ToNapiValue};
use napi::{sys, Env};

use crate::error::{from_core, internal, CoreResult};

/// The environment variable that turns the JS thread's turns off (`0`): every call is a task
/// of the background driver, as before.
pub const LOOP_TURNS_ENV: &str = "ZKR_NODE_LOOP_TURNS";

/// Runtime tasks that call a JS function and wait for its answer (path filters, ACL providers)
/// in this process. While there are any, no JS thread drives the runtime.
static WAITS_ON_JS: AtomicUsize = AtomicUsize::new(0);

/// Held by whatever makes the runtime wait on a JS function's answer, for as long as it can: no
/// JS thread runs turns meanwhile (see the module docs).
pub(crate) struct WaitsOnJs(());

impl WaitsOnJs {
    pub(crate) fn new() -> WaitsOnJs {
        WAITS_ON_JS.fetch_add(1, Ordering::SeqCst);
        WaitsOnJs(())
    }
}

impl Drop for WaitsOnJs {
    fn drop(&mut self) {
        WAITS_ON_JS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What settles one Promise, run on its JS thread with its `napi_env`; returns the [`Way`] its
/// call was run.
type Settle = Box<dyn FnOnce(sys::napi_env) -> Way + Send>;

/// The part of a port that tasks on any thread reach.
struct Shared {
    /// The port's threadsafe function; `None` once its environment tore down.
    tsfn: Mutex<Option<Tsfn>>,
}

struct Tsfn(sys::napi_threadsafe_function);
// SAFETY: napi's threadsafe functions are made to be called from any thread (napi_call_
// threadsafe_function); the pointer is only used for that, under `Shared::tsfn`'s lock.
unsafe impl Send for Tsfn {}

/// One JS thread's port (see the module docs). Lives on its JS thread only.
struct Port {
    env: sys::napi_env,
    shared: Arc<Shared>,
    tsfn: sys::napi_threadsafe_function,
    /// Promises of this port not settled yet.
    pending: Cell<usize>,
    /// Of those, the Promises of calls run [`Way::Queues`].
    queues: Cell<usize>,
    /// The `uv_poll` handle on the runtime's input; `None`: no turns on this thread.
    poll: Option<Poll>,
    /// Promises settled after a turn of this thread, and from the queue.
    on_turn: Cell<u64>,
    queued: Cell<u64>,
    /// Calls started in a turn of this thread, and given to the background driver because
    /// another add of the thread was pending ([`Way::Queues`]). Decided on the JS thread only,
    /// so (unlike how a Promise is settled) they do not depend on thread timing.
    started_on_turn: Cell<u64>,
    started_behind: Cell<u64>,
}

struct Poll {
    uv: &'static Uv,
    handle: *mut c_void,
    /// The handle is started.
    watching: Cell<bool>,
    /// The async resource and context of the callback scope that settles after a turn (so
    /// that the Promise reactions run as they would after any callback).
    resource: sys::napi_ref,
    context: sys::napi_async_context,
}

thread_local! {
    /// This thread's port (a JS thread's, once it made its first Promise).
    static PORT: Cell<*const Port> = const { Cell::new(ptr::null()) };
    /// The port whose turn runs on this thread now.
    static TURNING: Cell<*const Shared> = const { Cell::new(ptr::null()) };
    /// Settles of the port turning now, run after the turn.
    static READY: std::cell::RefCell<Vec<Settle>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The libuv functions the port needs, found in the process (Node exports them).
struct Uv {
    handle_size: UvHandleSize,
    poll_init: UvPollInit,
    poll_start: UvPollStart,
    poll_stop: UvHandleFn,
    unref: UvUnref,
    close: UvClose,
}

type UvHandleSize = unsafe extern "C" fn(c_int) -> usize;
type UvPollInit = unsafe extern "C" fn(*mut c_void, *mut c_void, c_int) -> c_int;
type UvPollStart = unsafe extern "C" fn(*mut c_void, c_int, UvPollCb) -> c_int;
type UvHandleFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type UvUnref = unsafe extern "C" fn(*mut c_void);
type UvClose = unsafe extern "C" fn(*mut c_void, Option<unsafe extern "C" fn(*mut c_void)>);
type UvPollCb = unsafe extern "C" fn(*mut c_void, c_int, c_int);

/// libuv's `UV_POLL` handle type and `UV_READABLE` event (uv.h).
const UV_POLL: c_int = 8;
const UV_READABLE: c_int = 1;

fn uv() -> Option<&'static Uv> {
    static UV: OnceLock<Option<Uv>> = OnceLock::new();
    UV.get_or_init(|| {
        fn find(name: &CStr) -> Option<*mut c_void> {
            // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT searches the process.
            let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr() as *const c_char) };
            (!f.is_null()).then_some(f)
        }
        let handle_size = find(c"uv_handle_size")?;
        let poll_init = find(c"uv_poll_init")?;
        let poll_start = find(c"uv_poll_start")?;
        let poll_stop = find(c"uv_poll_stop")?;
        let unref = find(c"uv_unref")?;
        let close = find(c"uv_close")?;
        // SAFETY: these are libuv's functions of these names, whose C signatures (uv.h) the
        // field types spell out.
        unsafe {
            Some(Uv {
                handle_size: std::mem::transmute::<*mut c_void, UvHandleSize>(handle_size),
                poll_init: std::mem::transmute::<*mut c_void, UvPollInit>(poll_init),
                poll_start: std::mem::transmute::<*mut c_void, UvPollStart>(poll_start),
                poll_stop: std::mem::transmute::<*mut c_void, UvHandleFn>(poll_stop),
                unref: std::mem::transmute::<*mut c_void, UvUnref>(unref),
                close: std::mem::transmute::<*mut c_void, UvClose>(close),
            })
        }
    })
    .as_ref()
}

/// Whether `ZKR_NODE_LOOP_TURNS` allows turns (anything but `0`).
fn turns_allowed() -> bool {
    static ALLOWED: OnceLock<bool> = OnceLock::new();
    *ALLOWED.get_or_init(|| std::env::var(LOOP_TURNS_ENV).map_or(true, |v| v.trim() != "0"))
}

/// This JS thread's port, made on first use; `None` if napi refused (then the caller takes
/// napi-rs's own deferred path).
fn port(env: sys::napi_env) -> Option<&'static Port> {
    let p = PORT.with(|p| p.get());
    if !p.is_null() {
        // SAFETY: set below from a leaked Box, cleared (and freed) only by the environment's
        // cleanup hook, after which no method of this environment runs on this thread.
        return Some(unsafe { &*p });
    }
    // SAFETY: napi calls on the JS thread with its live env; each result is checked.
    let port = unsafe { Port::new(env)? };
    let port: &'static Port = Box::leak(Box::new(port));
    PORT.with(|p| p.set(port));
    // SAFETY: the hook gets the port's own address, and runs on this thread at teardown.
    // Registered after the threadsafe function: hooks run in reverse order, so this one
    // releases it before Node finalizes it.
    unsafe {
        sys::napi_add_env_cleanup_hook(env, Some(teardown), port as *const Port as *mut c_void);
    }
    Some(port)
}

impl Port {
    /// # Safety
    /// On the JS thread of `env`, inside a napi call.
    unsafe fn new(env: sys::napi_env) -> Option<Port> {
        let mut name = ptr::null_mut();
        let label = c"zkrecipes";
        // SAFETY: the caller's contract; every out-pointer is a live local.
        unsafe {
            if sys::napi_create_string_utf8(env, label.as_ptr(), 9, &mut name)
                != sys::Status::napi_ok
            {
                return None;
            }
            let mut tsfn = ptr::null_mut();
            if sys::napi_create_threadsafe_function(
                env,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                ptr::null_mut(),
                None,
                ptr::null_mut(),
                Some(settle_from_queue),
                &mut tsfn,
            ) != sys::Status::napi_ok
            {
                return None;
            }
            sys::napi_unref_threadsafe_function(env, tsfn);
            let poll = if turns_allowed() {
                Poll::new(env, name)
            } else {
                None
            };
            Some(Port {
                env,
                shared: Arc::new(Shared {
                    tsfn: Mutex::new(Some(Tsfn(tsfn))),
                }),
                tsfn,
                pending: Cell::new(0),
                queues: Cell::new(0),
                poll,
                on_turn: Cell::new(0),
                queued: Cell::new(0),
                started_on_turn: Cell::new(0),
                started_behind: Cell::new(0),
            })
        }
    }

    /// A Promise of this port was made: the loop stays alive until it settles.
    fn more(&self) {
        if self.pending.get() == 0 {
            // SAFETY: on the JS thread, with the port's live env and threadsafe function.
            unsafe { sys::napi_ref_threadsafe_function(self.env, self.tsfn) };
        }
        self.pending.set(self.pending.get() + 1);
    }

    /// A Promise of this port settled.
    fn fewer(&self) {
        let left = self.pending.get().saturating_sub(1);
        self.pending.set(left);
        if left == 0 {
            // SAFETY: as in `more`.
            unsafe { sys::napi_unref_threadsafe_function(self.env, self.tsfn) };
        }
    }

    /// Whether this thread may run turns now.
    fn turns(&self) -> Option<&Poll> {
        self.poll
            .as_ref()
            .filter(|_| WAITS_ON_JS.load(Ordering::SeqCst) == 0)
    }
}

impl Poll {
    /// # Safety
    /// On the JS thread of `env`, inside a napi call; `name` a live JS string.
    unsafe fn new(env: sys::napi_env, name: sys::napi_value) -> Option<Poll> {
        let uv = uv()?;
        let fd = zkrecipes::runtime::loop_source()?;
        // SAFETY: the caller's contract; the handle's memory is sized by libuv itself and
        // lives until its close callback frees it.
        unsafe {
            let mut uv_loop = ptr::null_mut();
            if sys::napi_get_uv_event_loop(env, &mut uv_loop) != sys::Status::napi_ok
                || uv_loop.is_null()
            {
                return None;
            }
            let mut resource = ptr::null_mut();
            let mut resource_ref = ptr::null_mut();
            let mut context = ptr::null_mut();
            if sys::napi_create_object(env, &mut resource) != sys::Status::napi_ok
                || sys::napi_create_reference(env, resource, 1, &mut resource_ref)
                    != sys::Status::napi_ok
                || sys::napi_async_init(env, resource, name, &mut context) != sys::Status::napi_ok
            {
                return None;
            }
            let size = (uv.handle_size)(UV_POLL);
            let handle = libc::calloc(1, size.max(64));
            if handle.is_null() {
                return None;
            }
            if (uv.poll_init)(uv_loop.cast(), handle, fd) != 0 {
                libc::free(handle);
                return None;
            }
            // The handle never keeps the loop alive (the threadsafe function does, while a
            // Promise is pending).
            (uv.unref)(handle);
            Some(Poll {
                uv,
                handle,
                watching: Cell::new(false),
                resource: resource_ref,
                context,
            })
        }
    }

    fn watch(&self) {
        if !self.watching.get() {
            // SAFETY: our initialized handle, on its loop's thread.
            let started = unsafe { (self.uv.poll_start)(self.handle, UV_READABLE, on_input) };
            self.watching.set(started == 0);
        }
    }

    fn unwatch(&self) {
        if self.watching.replace(false) {
            // SAFETY: as in `watch`.
            unsafe { (self.uv.poll_stop)(self.handle) };
        }
    }
}

/// Runs `drive` (a turn of the runtime) as `port`'s turn on this thread: the settles of its
/// tasks that finish meanwhile are collected and returned. A panic in the runtime is caught (the
/// Promise of a task it dropped is rejected by [`Delivery`]'s drop); `None` for it.
fn turning<R>(port: &Port, drive: impl FnOnce() -> R) -> (Option<R>, Vec<Settle>) {
    struct Turning;
    impl Drop for Turning {
        fn drop(&mut self) {
            TURNING.with(|t| t.set(ptr::null()));
        }
    }
    TURNING.with(|t| t.set(Arc::as_ptr(&port.shared)));
    let turning = Turning;
    let out = catch_unwind(AssertUnwindSafe(drive)).ok();
    drop(turning);
    (out, READY.with(|r| std::mem::take(&mut *r.borrow_mut())))
}

/// A turn for `port` that starts with `start` (which may spawn; see
/// [`zkrecipes::runtime::loop_turn`]); the settles it collected.
fn turn(port: &Port, start: impl FnOnce()) -> Vec<Settle> {
    turning(port, || zkrecipes::runtime::loop_turn(start)).1
}

/// A turn for `port` when the runtime's input is readable, if nobody else drives it; `None`:
/// someone does (the loop stops watching until this thread's next call).
fn input_turn(port: &Port) -> Option<Vec<Settle>> {
    let (turned, ready) = turning(port, zkrecipes::runtime::try_loop_turn);
    if turned.unwrap_or(false) || !ready.is_empty() {
        return Some(ready);
    }
    recycle(ready);
    None
}

/// Runs `settles` on the JS thread (inside a napi call or callback scope); `counter`: the
/// port's count of the way they came.
fn run_settles(port: &Port, mut settles: Vec<Settle>, counter: &Cell<u64>) {
    for settle in settles.drain(..) {
        run_settle(port, settle, counter);
    }
    recycle(settles);
}

/// Gives an emptied vector of settles back to collect the next turn's (no allocation per turn).
fn recycle(settles: Vec<Settle>) {
    debug_assert!(settles.is_empty());
    READY.with(|r| {
        let mut ready = r.borrow_mut();
        if ready.capacity() == 0 {
            *ready = settles;
        }
    });
}

/// Runs one settle on the JS thread (see [`run_settles`]).
fn run_settle(port: &Port, settle: Settle, counter: &Cell<u64>) {
    counter.set(counter.get() + 1);
    if settle(port.env) == Way::Queues {
        port.queues.set(port.queues.get().saturating_sub(1));
    }
    port.fewer();
}

/// libuv's callback: the runtime's input is readable.
unsafe extern "C" fn on_input(_handle: *mut c_void, _status: c_int, _events: c_int) {
    let p = PORT.with(|p| p.get());
    if p.is_null() {
        return;
    }
    // SAFETY: see `port`: the port outlives every callback of its handle.
    let port = unsafe { &*p };
    let Some(poll) = port.poll.as_ref() else {
        return;
    };
    if WAITS_ON_JS.load(Ordering::SeqCst) > 0 {
        poll.unwatch();
        return;
    }
    let Some(settles) = input_turn(port) else {
        poll.unwatch();
        return;
    };
    if settles.is_empty() {
        recycle(settles);
        return;
    }
    let env = port.env;
    // SAFETY: on the JS thread, outside any napi call: open the scopes a callback into JS
    // needs (closing the callback scope runs the Promise reactions), settle, close them.
    unsafe {
        let mut handles = ptr::null_mut();
        if sys::napi_open_handle_scope(env, &mut handles) != sys::Status::napi_ok {
            return;
        }
        let mut resource = ptr::null_mut();
        let mut scope = ptr::null_mut();
        let opened = sys::napi_get_reference_value(env, poll.resource, &mut resource)
            == sys::Status::napi_ok
            && sys::napi_open_callback_scope(env, resource, poll.context, &mut scope)
                == sys::Status::napi_ok;
        run_settles(port, settles, &port.on_turn);
        if opened {
            sys::napi_close_callback_scope(env, scope);
        }
        sys::napi_close_handle_scope(env, handles);
    }
}

/// The threadsafe function's callback: one settle from another thread (`env` null: the
/// environment tears down; the settle is dropped).
unsafe extern "C" fn settle_from_queue(
    env: sys::napi_env,
    _js_callback: sys::napi_value,
    _context: *mut c_void,
    data: *mut c_void,
) {
    if data.is_null() {
        return;
    }
    // SAFETY: `deliver` queued a `Box<Settle>` leaked into this pointer, taken back once here.
    let settle = unsafe { Box::from_raw(data as *mut Settle) };
    if env.is_null() {
        return;
    }
    let p = PORT.with(|p| p.get());
    if p.is_null() {
        return;
    }
    // SAFETY: see `port`.
    let port = unsafe { &*p };
    run_settle(port, *settle, &port.queued);
}

/// The environment's cleanup hook: no settle reaches it from now on.
unsafe extern "C" fn teardown(arg: *mut c_void) {
    let port = arg as *const Port;
    PORT.with(|p| {
        if p.get() == port {
            p.set(ptr::null())
        }
    });
    // SAFETY: `port` leaked this Box; nothing of this environment uses it after its hook.
    let port = unsafe { Box::from_raw(port as *mut Port) };
    if let Some(tsfn) = port
        .shared
        .tsfn
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        // SAFETY: the port's own threadsafe function, released once.
        unsafe {
            sys::napi_release_threadsafe_function(tsfn.0, sys::ThreadsafeFunctionReleaseMode::abort)
        };
    }
    if let Some(poll) = &port.poll {
        poll.unwatch();
        unsafe extern "C" fn closed(handle: *mut c_void) {
            // SAFETY: allocated with calloc in `Poll::new`, closed once.
            unsafe { libc::free(handle) };
        }
        // SAFETY: our handle, closed once, on its loop's thread.
        unsafe { (poll.uv.close)(poll.handle, Some(closed)) };
    }
}

/// Where a finished task's settle goes: run after the turn if it is its own JS thread's turn,
/// else queued to its JS thread.
fn deliver(shared: &Shared, settle: Settle) {
    if std::ptr::eq(TURNING.with(|t| t.get()), shared) {
        READY.with(|r| r.borrow_mut().push(settle));
        return;
    }
    let tsfn = shared.tsfn.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = tsfn.as_ref() {
        let data = Box::into_raw(Box::new(settle));
        // SAFETY: a live threadsafe function (the lock keeps teardown from releasing it
        // meanwhile); on refusal the data is ours again.
        let status = unsafe {
            sys::napi_call_threadsafe_function(
                t.0,
                data.cast(),
                sys::ThreadsafeFunctionCallMode::nonblocking,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: not queued: still ours, taken back once.
            drop(unsafe { Box::from_raw(data) });
        }
    }
}

/// The outcome of a call's future: its value, its error, or a panic.
pub(crate) type Outcome<R> = Result<CoreResult<R>, Box<dyn Any + Send>>;

/// Settles one Promise with a call's outcome: delivered exactly once, by the task when it ends,
/// or by its drop (a task dropped unrun rejects with `ZKR_INTERNAL`).
struct Delivery<R: ToNapiValue + Send + 'static> {
    to: Option<(Arc<Shared>, Deferred)>,
    way: Way,
    _r: std::marker::PhantomData<fn(R)>,
}

struct Deferred(sys::napi_deferred);
// SAFETY: the deferred is only used on its JS thread (in the settle, run there); it is carried
// to it from the runtime's threads as an opaque pointer.
unsafe impl Send for Deferred {}

impl Deferred {
    /// The pointer (a method, so that a closure captures the whole `Send` wrapper).
    fn get(self) -> sys::napi_deferred {
        self.0
    }
}

impl<R: ToNapiValue + Send + 'static> Delivery<R> {
    fn settle(&mut self, outcome: Outcome<R>) {
        let Some((shared, deferred)) = self.to.take() else {
            return;
        };
        let way = self.way;
        deliver(
            &shared,
            Box::new(move |env| {
                // SAFETY: on the JS thread of `deferred`, inside a napi call or callback scope.
                unsafe { settle_deferred(env, deferred.get(), outcome) };
                way
            }),
        );
    }
}

impl<R: ToNapiValue + Send + 'static> Drop for Delivery<R> {
    fn drop(&mut self) {
        // Settled already (the usual end): nothing to make, not even the message's box.
        if self.to.is_some() {
            self.settle(Err(Box::new(
                "the call's task was dropped before it finished",
            )));
        }
    }
}

/// Resolves or rejects `deferred` with `outcome`.
///
/// # Safety
/// On the JS thread of `env`, inside a napi call or callback scope.
unsafe fn settle_deferred<R: ToNapiValue>(
    env: sys::napi_env,
    deferred: sys::napi_deferred,
    outcome: Outcome<R>,
) {
    let e = Env::from_raw(env);
    let value = catch_unwind(AssertUnwindSafe(|| match outcome {
        // SAFETY: the caller's contract.
        Ok(Ok(v)) => unsafe { R::to_napi_value(env, v) },
        Ok(Err(err)) => Err(from_core(&e, &err)),
        Err(panic) => Err(internal(&e, &panic)),
    }))
    .unwrap_or_else(|panic| Err(internal(&e, &panic)));
    // SAFETY: the caller's contract; the deferred is settled once (the Delivery took it).
    unsafe {
        match value {
            Ok(v) => sys::napi_resolve_deferred(env, deferred, v),
            Err(err) => {
                sys::napi_reject_deferred(env, deferred, JsError::from(err).into_value(env))
            }
        };
    }
}

/// A Promise already rejected with `error` (a bad argument found before any I/O).
///
/// # Safety
/// On the JS thread of `env`, inside a napi call.
pub(crate) unsafe fn rejected<'env>(
    env: &'env Env,
    error: napi::Error,
) -> napi::Result<napi::bindgen_prelude::Object<'env>> {
    let raw = env.raw();
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: the caller's contract; out-pointers are live locals; the deferred is settled once.
    unsafe {
        napi::check_status!(sys::napi_create_promise(raw, &mut deferred, &mut promise))?;
        napi::check_status!(sys::napi_reject_deferred(
            raw,
            deferred,
            JsError::from(error).into_value(raw)
        ))?;
        Ok(napi::bindgen_prelude::Object::from_raw(raw, promise))
    }
}

/// How a call's future is run when this JS thread may run turns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Way {
    /// In a turn of the JS thread (the module docs): the request leaves from this thread, and
    /// the reply is read here too. Right for a call whose next step is the caller's: a lock's
    /// release after its acquire resolved goes out with no thread crossing.
    Turn,
    /// A call that queues behind others of its kind inside the runtime, whose chain goes on
    /// without JS (a counter's add: the rounds of one counter node take turns, and the next
    /// round's write leaves as soon as the previous reply is in). While another such call of
    /// the port is pending, it is a task of the background driver: the chain then runs on that
    /// thread while the JS thread settles, and no reply waits for the JS thread to finish its
    /// callbacks. A lone add still takes a turn, also while other kinds of calls wait (a lock's
    /// acquire, a latch's await). docs/PERFORMANCE-LOG.md, "A counter's adds in
    /// Node: the chain off the JS thread".
    Queues,
}

/// A Promise for `fut` (already made by the method body on the JS thread), settled on this JS
/// thread; `Err(fut)` if this thread has no port (napi refused to make one: the caller falls
/// back to napi-rs's deferred).
///
/// # Safety
/// On the JS thread of `env`, inside a napi call.
pub(crate) unsafe fn promise<R, F>(env: &Env, fut: F, way: Way) -> Result<sys::napi_value, F>
where
    R: ToNapiValue + Send + 'static,
    F: Future<Output = Outcome<R>> + Send + 'static,
{
    let raw = env.raw();
    let Some(port) = port(raw) else {
        return Err(fut);
    };
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: the caller's contract; out-pointers are live locals.
    if unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) } != sys::Status::napi_ok
    {
        return Err(fut);
    }
    port.more();
    let mut delivery = Delivery::<R> {
        to: Some((port.shared.clone(), Deferred(deferred))),
        way,
        _r: std::marker::PhantomData,
    };
    let task = async move {
        let outcome = fut.await;
        delivery.settle(outcome);
    };
    // Another call of this port that queues in the runtime is pending: this one goes to the
    // background driver (see `Way::Queues`).
    let behind = way == Way::Queues && port.queues.get() > 0;
    if way == Way::Queues {
        port.queues.set(port.queues.get() + 1);
    }
    let turns = port.turns();
    if behind && turns.is_some() {
        port.started_behind.set(port.started_behind.get() + 1);
    }
    match turns.filter(|_| !behind) {
        Some(poll) => {
            port.started_on_turn.set(port.started_on_turn.get() + 1);
            let settles = turn(port, || {
                tokio::spawn(task);
            });
            run_settles(port, settles, &port.on_turn);
            poll.watch();
        }
        None => {
            zkrecipes::runtime::spawn(task);
        }
    }
    Ok(promise)
}

/// How this JS thread's Promises were settled so far, and how their calls started: `[settled
/// after a turn of this thread, settled from the queue, started in a turn, given to the
/// background driver behind another add]` (all 0 before its first Promise). For the tests.
#[cfg(feature = "testing")]
pub(crate) fn settled(env: &Env) -> [u64; 4] {
    let _ = env;
    let p = PORT.with(|p| p.get());
    if p.is_null() {
        return [0; 4];
    }
    // SAFETY: see `port`.
    let port = unsafe { &*p };
    [
        port.on_turn.get(),
        port.queued.get(),
        port.started_on_turn.get(),
        port.started_behind.get(),
    ]
}
