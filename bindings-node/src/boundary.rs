//! The one boundary between JS and the core: every `#[napi]` method body runs inside [`sync`]
//! (a value or a throw) or [`promise`] (a Promise), never bare.
//!
//! - A core error becomes a JS `Error` whose `code` is API.md's (`ZKR_NO_NODE`, ...), built in
//!   [`crate::error`].
//! - A panic becomes a `ZKR_INTERNAL` error: it never unwinds into Node (which would abort the
//!   process) and never leaves a Promise pending. This holds for the synchronous part of a
//!   method (argument mapping, getters, constructors) and for its future alike.
//! - Async methods never throw: a bad argument found before any I/O rejects the Promise.
//!
//! Promises are settled from a task spawned on **zkrecipes' one runtime**
//! ([`zkrecipes::runtime::spawn`]); napi-rs's own tokio runtime is not compiled in. napi hops
//! back to the JS thread through the deferred's threadsafe function, which keeps the event loop
//! alive exactly while a Promise is pending.

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use napi::bindgen_prelude::{Object, ToNapiValue};
use napi::Env;

use crate::driving::Way;
use crate::error::{from_core, internal, CoreResult};

/// What a method body can fail with: a core error (mapped to its code) or a napi error (a JS
/// value could not be made or read; already a JS error).
pub(crate) enum Failure {
    Core(zkrecipes::Error),
    Napi(napi::Error),
}

impl From<zkrecipes::Error> for Failure {
    fn from(e: zkrecipes::Error) -> Failure {
        Failure::Core(e)
    }
}

impl From<napi::Error> for Failure {
    fn from(e: napi::Error) -> Failure {
        Failure::Napi(e)
    }
}

/// The result of a method body.
pub(crate) type Outcome<T> = Result<T, Failure>;

/// Runs `body` with panics caught; maps its failure to the JS error to throw or reject with.
fn run<T>(env: &Env, body: impl FnOnce() -> Outcome<T>) -> napi::Result<T> {
    let caught = catch_unwind(AssertUnwindSafe(|| {
        testing::maybe_panic(testing::Where::Sync);
        body()
    }));
    match caught {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(Failure::Core(e))) => Err(from_core(env, &e)),
        Ok(Err(Failure::Napi(e))) => Err(e),
        Err(panic) => Err(internal(env, &panic)),
    }
}

/// Runs a synchronous method body (constructor, getter, plain method): its value, or a thrown
/// coded error (`ZKR_INTERNAL` for a panic).
pub(crate) fn sync<T>(env: &Env, body: impl FnOnce() -> Outcome<T>) -> napi::Result<T> {
    run(env, body)
}

/// Runs an async method: `body` maps the arguments on the JS thread and returns the future to
/// run on zkrecipes' runtime. Returns a Promise of the future's value (converted to JS on the
/// JS thread); every failure, before or during the future, rejects it.
pub(crate) fn promise<'env, R, F>(
    env: &'env Env,
    body: impl FnOnce() -> Outcome<F>,
) -> napi::Result<Object<'env>>
where
    R: ToNapiValue + Send + 'static,
    F: Future<Output = CoreResult<R>> + Send + 'static,
{
    promise_by(env, Way::Turn, body)
}

/// [`promise`] run the given [`Way`] (`Way::Queues`: a counter's add).
pub(crate) fn promise_by<'env, R, F>(
    env: &'env Env,
    way: Way,
    body: impl FnOnce() -> Outcome<F>,
) -> napi::Result<Object<'env>>
where
    R: ToNapiValue + Send + 'static,
    F: Future<Output = CoreResult<R>> + Send + 'static,
{
    let fut = match run(env, body) {
        Ok(fut) => fut,
        // SAFETY: on the JS thread of `env`, inside this napi call.
        Err(e) => return unsafe { crate::driving::rejected(env, e) },
    };
    let fut = CatchUnwind(Box::pin(async move {
        testing::maybe_panic(testing::Where::Async);
        fut.await
    }));
    // SAFETY: on the JS thread of `env`, inside this napi call.
    let fut = match unsafe { crate::driving::promise(env, fut, way) } {
        Ok(promise) => return Ok(Object::from_raw(env.raw(), promise)),
        Err(fut) => fut,
    };
    // No port on this thread (napi refused to make one): napi-rs's deferred.
    let (deferred, promise) = env.create_deferred()?;
    zkrecipes::runtime::spawn(async move {
        let outcome = fut.await;
        deferred.resolve(move |env: Env| match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(from_core(&env, &e)),
            Err(panic) => Err(internal(&env, &panic)),
        });
    });
    Ok(promise)
}

/// [`promise`] of `op` on a clone of `handle` (a recipe or client): the usual async method
/// (`R = ()` resolves to `undefined`).
pub(crate) fn promise_on<'env, T, R, Fut>(
    env: &'env Env,
    handle: &T,
    op: impl FnOnce(T) -> Fut,
) -> napi::Result<Object<'env>>
where
    T: Clone,
    R: ToNapiValue + Send + 'static,
    Fut: Future<Output = CoreResult<R>> + Send + 'static,
{
    promise(env, || Ok(op(handle.clone())))
}

/// [`promise_on`] for an operation that takes a timeout in milliseconds (the core's contract:
/// `undefined` or `Infinity` no limit, negative or NaN refused naming `timeoutMs`).
pub(crate) fn promise_timed<'env, T, R, Fut>(
    env: &'env Env,
    handle: &T,
    timeout_ms: Option<f64>,
    op: impl FnOnce(T, Option<Duration>) -> Fut,
) -> napi::Result<Object<'env>>
where
    T: Clone,
    R: ToNapiValue + Send + 'static,
    Fut: Future<Output = CoreResult<R>> + Send + 'static,
{
    promise(env, || {
        let timeout = crate::args::timeout("timeoutMs", timeout_ms)?;
        Ok(op(handle.clone(), timeout))
    })
}

/// A future that turns a panic while polling into `Err` (what `futures::FutureExt::catch_unwind`
/// does, without the dependency).
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(move || inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// A panic on demand, to prove the boundary (builds with the `testing` feature only; without
/// it, [`maybe_panic`](testing::maybe_panic) is an empty inline function).
pub(crate) mod testing {
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Where {
        /// The synchronous part of the next method call (any method).
        Sync = 1,
        /// The future of the next async method call.
        Async = 2,
    }

    #[cfg(feature = "testing")]
    static ARMED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

    #[cfg(feature = "testing")]
    pub(crate) fn arm(at: Where) {
        ARMED.store(at as u8, std::sync::atomic::Ordering::SeqCst);
    }

    #[inline]
    pub(crate) fn maybe_panic(_at: Where) {
        #[cfg(feature = "testing")]
        if ARMED
            .compare_exchange(
                _at as u8,
                0,
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
            )
            .is_ok()
        {
            panic!("a panic for testing (panicForTesting)");
        }
    }
}
