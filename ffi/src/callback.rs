//! How C callbacks are run.
//!
//! The core delivers every event through its dispatcher (`zkrecipes::dispatch`): callbacks of
//! one dispatcher (one client, one recipe) run one at a time, in event order, on a library
//! thread that is not an async worker, where every zkr_ call is allowed. The C face adds one
//! thing the header promises: when unregistering (or `_free`) returns, the callback is not
//! running and never will, so its `user_data` may be freed. Each registered C callback is a
//! [`CCallback`] behind a [`Gate`]: disabling it waits for a running call to return, unless the disabling
//! happens inside that very call (which cannot wait for itself).

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use zkrecipes::{Error, ListenerId, Result};

use crate::boundary::{arg_callback, handle_call, handle_out};
use crate::handle::Handle;
use crate::status::zkr_status;

/// The caller's `void *user_data`, handed back untouched on a library thread.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub(crate) *mut c_void);

// SAFETY: the pointer is never dereferenced by us; the header tells the caller that callbacks
// run on library threads, so what it points to must be usable there.
unsafe impl Send for UserData {}
// SAFETY: as for Send: we only copy the pointer.
unsafe impl Sync for UserData {}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A C callback cannot panic across our frames, and our own code holding these locks does
    // not: a poisoned lock still holds consistent data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

thread_local! {
    /// The callback this thread is running (its address; 0: none).
    static RUNNING: Cell<usize> = const { Cell::new(0) };
}

/// A C callback type as the header declares it: `Option<unsafe extern "C" fn(...)>` (so that
/// NULL is representable); `Fn` is the function pointer itself.
pub(crate) trait CallbackType: Copy {
    type Fn: Copy + Send + Sync + 'static;
    fn get(self) -> Option<Self::Fn>;
}

impl<F: Copy + Send + Sync + 'static> CallbackType for Option<F> {
    type Fn = F;
    fn get(self) -> Option<F> {
        self
    }
}

/// What the header promises about one callback registration: enabled until disabled, and
/// disabling waits for a running call to return (unless it happens inside that call).
pub(crate) struct Gate {
    enabled: AtomicBool,
    running: Mutex<()>,
}

impl Gate {
    pub(crate) fn new() -> Gate {
        Gate {
            enabled: AtomicBool::new(true),
            running: Mutex::new(()),
        }
    }

    /// Runs `f` if still enabled, holding `running` meanwhile.
    pub(crate) fn run(&self, f: impl FnOnce()) {
        let _running = lock(&self.running);
        if !self.enabled.load(Ordering::SeqCst) {
            return;
        }
        let previous = RUNNING.with(|r| r.replace(self.id()));
        f();
        RUNNING.with(|r| r.set(previous));
    }

    /// Disables the gate and waits until a call running through it has returned (unless we
    /// are inside that call).
    pub(crate) fn disable(&self) {
        self.shut();
        if RUNNING.with(|r| r.get()) != self.id() {
            drop(lock(&self.running));
        }
    }

    /// Disables the gate without waiting: no call starts through it any more, one running goes
    /// on. A `_free` shuts its gates, closes what a running callback may be waiting for, and only
    /// then waits ([`disable`](Self::disable)): waiting first, the free and a callback blocked in
    /// a wait that only the close ends waited for each other for good.
    pub(crate) fn shut(&self) {
        self.enabled.store(false, Ordering::SeqCst);
    }

    fn id(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }
}

/// A C callback's function pointer, called with its arguments and the `user_data` it was given
/// with: the one place a C callback is called. Safe to call because of the C caller's contract 4
/// (`boundary`): the function is of the declared type and may be called from any thread with
/// that `user_data` until unregistered; every call goes through a [`Gate`] (or, for a
/// one-shot function, is made once while its owner lives), so none comes after that.
pub(crate) trait CFn<A>: Copy {
    /// Calls the function with `args` and `user_data`.
    fn invoke(self, args: A, user_data: *mut c_void);
}

/// `CFn` for `unsafe extern "C" fn(A1, …, *mut c_void)`.
macro_rules! c_fn {
    ($($a:ident),+) => {
        impl<$($a),+> CFn<($($a,)+)> for unsafe extern "C" fn($($a),+, *mut c_void) {
            #[allow(non_snake_case)]
            fn invoke(self, ($($a,)+): ($($a,)+), user_data: *mut c_void) {
                // SAFETY: the C caller's contract 4 for a registered callback (see `CFn`).
                unsafe { self($($a),+, user_data) }
            }
        }
    };
}
c_fn!(A1);
c_fn!(A1, A2);
c_fn!(A1, A2, A3);

/// [`CFn`] with a `bool` answer (a cache's path filter), under the same contract.
pub(crate) trait CPredicate<A1>: Copy {
    /// Calls the function with `arg` and `user_data`; its answer.
    fn test(self, arg: A1, user_data: *mut c_void) -> bool;
}

impl<A1> CPredicate<A1> for unsafe extern "C" fn(A1, *mut c_void) -> bool {
    fn test(self, arg: A1, user_data: *mut c_void) -> bool {
        // SAFETY: the C caller's contract 4 for a registered callback (see `CFn`).
        unsafe { self(arg, user_data) }
    }
}

/// The C function a set partitioner divides its set with (`zkr_partition_func`).
pub(crate) type ShareFn = unsafe extern "C" fn(
    *const std::ffi::c_char,
    *const *const std::ffi::c_char,
    usize,
    *const *const std::ffi::c_char,
    usize,
    *mut bool,
    *mut c_void,
) -> bool;

/// Calls a set partitioner's partition function: marks `take` (one flag per partition of
/// `set`, read as bytes: any non-zero byte C wrote is true) and answers whether it could. Under
/// the same contract as [`CFn`]: made through its handle's [`Gate`], never after its `_free`
/// returned.
pub(crate) fn call_share(
    f: ShareFn,
    identifier: *const std::ffi::c_char,
    members: &[*const std::ffi::c_char],
    set: &[*const std::ffi::c_char],
    take: &mut [u8],
    user_data: *mut c_void,
) -> bool {
    debug_assert_eq!(set.len(), take.len());
    // SAFETY: the C caller's contract 4 for a registered callback (see `CFn`); the arrays are
    // ours, alive for the call, with the lengths given; C's bool is one byte, and the flags
    // are bytes to us, so whatever byte C writes is read without undefined behaviour.
    unsafe {
        f(
            identifier,
            members.as_ptr(),
            members.len(),
            set.as_ptr(),
            set.len(),
            take.as_mut_ptr().cast::<bool>(),
            user_data,
        )
    }
}

/// One registered C callback (`F` is its function pointer type) with its user data.
pub(crate) struct CCallback<F> {
    function: F,
    user_data: UserData,
    gate: Gate,
}

impl<F: Copy> CCallback<F> {
    pub(crate) fn new(function: F, user_data: UserData) -> Arc<CCallback<F>> {
        Arc::new(CCallback {
            function,
            user_data,
            gate: Gate::new(),
        })
    }

    /// Calls the C function with `args` if still registered.
    pub(crate) fn call<A>(&self, args: A)
    where
        F: CFn<A>,
    {
        self.gate
            .run(|| self.function.invoke(args, self.user_data.0));
    }

    /// Unregisters: see [`Gate::disable`].
    pub(crate) fn disable(&self) {
        self.gate.disable();
    }

    /// No call starts any more: see [`Gate::shut`].
    pub(crate) fn shut(&self) {
        self.gate.shut();
    }
}

/// The C callbacks (of type `C`) registered on one handle as listeners of the core, by the
/// core's id.
pub(crate) struct Listeners<C: CallbackType>(Mutex<HashMap<ListenerId, Arc<CCallback<C::Fn>>>>);

impl<C: CallbackType> Default for Listeners<C> {
    fn default() -> Self {
        Listeners(Mutex::new(HashMap::new()))
    }
}

impl<C: CallbackType> Listeners<C> {
    /// Registers a callback: `register` adds the core listener (which calls the C function
    /// through the given [`CCallback`]) and returns the core's id, which is also ours.
    pub(crate) fn add(
        &self,
        function: C::Fn,
        user_data: UserData,
        register: impl FnOnce(Arc<CCallback<C::Fn>>) -> Result<ListenerId>,
    ) -> Result<ListenerId> {
        let callback = CCallback::new(function, user_data);
        // Held across the registration, so that `clear` cannot miss this listener.
        let mut map = lock(&self.0);
        let id = register(callback.clone())?;
        map.insert(id, callback);
        Ok(id)
    }

    /// Unregisters one callback (`unregister` removes the core's listener); when this returns,
    /// it neither runs (unless this is called from inside it) nor will run.
    pub(crate) fn remove(
        &self,
        id: ListenerId,
        on: &str,
        unregister: impl FnOnce(ListenerId) -> Result<bool>,
    ) -> Result<()> {
        let callback = lock(&self.0).remove(&id).ok_or_else(|| {
            Error::InvalidArgument(format!("no listener with id {id} on this {on}").into())
        })?;
        unregister(id)?;
        callback.disable();
        Ok(())
    }

    /// Lets no registered callback start any more, without waiting for running ones (see
    /// [`Gate::shut`]); [`clear`](Self::clear) then unregisters them and waits.
    pub(crate) fn shut_all(&self) {
        for callback in lock(&self.0).values() {
            callback.shut();
        }
    }

    /// Unregisters every callback (the handle is being freed or closed).
    pub(crate) fn clear(&self, mut unregister: impl FnMut(ListenerId) -> Result<bool>) {
        let all: Vec<_> = lock(&self.0).drain().collect();
        for (id, callback) in all {
            let _ = unregister(id); // our own ids
            callback.disable();
        }
    }
}

/// One replaceable C callback of type `C` (a mutex's lost or revoke callback, the process's
/// logger).
pub(crate) struct Slot<C: CallbackType>(Mutex<Option<Arc<CCallback<C::Fn>>>>);

impl<C: CallbackType> Slot<C> {
    pub(crate) const fn new() -> Slot<C> {
        Slot(Mutex::new(None))
    }

    /// Installs `callback` (NULL: none). When this returns, the previous callback neither runs
    /// (unless this is called from inside it) nor will run.
    pub(crate) fn set(&self, callback: C, user_data: UserData) {
        let new = callback.get().map(|f| CCallback::new(f, user_data));
        let previous = std::mem::replace(&mut *lock(&self.0), new);
        if let Some(p) = previous {
            p.disable();
        }
    }

    /// Calls the current callback, if any (outside the slot's lock, so that it may replace
    /// itself).
    pub(crate) fn fire<A>(&self, args: A)
    where
        C::Fn: CFn<A>,
    {
        let current = lock(&self.0).clone();
        if let Some(c) = current {
            c.call(args);
        }
    }
}

/// A handle whose C callbacks are listeners of the core with ids (the client's state listeners,
/// a latch's, an observer's, a shared count's): its `_add_listener` and `_remove_listener` are
/// [`add_listener`] and [`remove_listener`].
pub(crate) trait Listening: Handle {
    /// The C callback type.
    type Callback: CallbackType;

    fn listeners(&self) -> &Listeners<Self::Callback>;

    /// Adds the core's listener, which calls the C function through `callback`.
    fn register(
        &self,
        callback: Arc<CCallback<<Self::Callback as CallbackType>::Fn>>,
    ) -> Result<ListenerId>;

    /// Removes the core's listener.
    fn unregister(&self, id: ListenerId) -> Result<bool>;

    /// Unregisters every callback (the handle is being closed or freed).
    fn unregister_all(&self) {
        self.listeners().clear(|id| self.unregister(id));
    }

    /// Lets no callback start any more, without waiting (a `_free` before its close).
    fn shut_all(&self) {
        self.listeners().shut_all();
    }
}

/// `_add_listener`: registers `callback` with `user_data`; its id goes to `*listener_id`.
pub(crate) fn add_listener<H: Listening>(
    function: &str,
    h: *mut H,
    callback: H::Callback,
    user_data: *mut c_void,
    listener_id: *mut u64,
) -> zkr_status {
    handle_out(function, h, listener_id, "listener_id", |h| {
        let f = arg_callback(callback.get(), "callback")?;
        h.listeners()
            .add(f, UserData(user_data), |cb| h.register(cb))
    })
}

/// `_remove_listener`: when it returns, the callback neither runs (unless this is called from
/// inside it) nor will run.
pub(crate) fn remove_listener<H: Listening>(
    function: &str,
    h: *mut H,
    id: ListenerId,
) -> zkr_status {
    handle_call(function, h, |h| {
        h.listeners().remove(id, H::ARG, |id| h.unregister(id))
    })
}

/// A handle with a `_close` export (generated with its listener exports by `build.rs`).
pub(crate) trait Closing: Handle {
    /// Closes the recipe or client (idempotent).
    fn close_handle(&self) -> Result<()>;
}

/// `_close`.
pub(crate) fn close_handle<H: Closing>(function: &str, h: *mut H) -> zkr_status {
    handle_call(function, h, |h| h.close_handle())
}
