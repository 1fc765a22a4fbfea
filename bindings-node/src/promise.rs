//! Promises settled from zkrecipes' runtime.
//!
//! napi-rs's `async fn` support would poll our futures on a tokio runtime of napi's own; the
//! core must own the only runtime (DESIGN.md), so instead each call creates a deferred
//! Promise, spawns the core future with [`zkrecipes::runtime::spawn`], and settles the Promise
//! from there (napi hops back to the JS thread through the deferred's threadsafe function,
//! which keeps the event loop alive exactly while a Promise is pending).

use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use napi::bindgen_prelude::{Object, ToNapiValue};
use napi::Env;

use crate::error::{from_core, to_js, CoreResult};

/// Runs `fut` on zkrecipes' runtime and returns a Promise of its value (converted to JS on the
/// JS thread); a core error rejects it with a coded JS error, a panic with `ZKR_INTERNAL`
/// (never unwinding into Node, never leaving the Promise pending).
pub(crate) fn spawn<'env, R, F>(env: &'env Env, fut: F) -> napi::Result<Object<'env>>
where
    R: ToNapiValue + Send + 'static,
    F: Future<Output = CoreResult<R>> + Send + 'static,
{
    let (deferred, promise) = env.create_deferred()?;
    zkrecipes::runtime::spawn(async move {
        let outcome = CatchUnwind(Box::pin(fut)).await;
        deferred.resolve(move |env: Env| match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(from_core(&env, &e)),
            Err(panic) => Err(to_js(
                &env,
                "ZKR_INTERNAL",
                &format!("zkrecipes panicked: {}", panic_message(&panic)),
            )),
        });
    });
    Ok(promise)
}

/// A Promise already rejected with a core error (a bad argument found before any I/O), so
/// that async methods reject rather than throw.
pub(crate) fn rejected<'env>(env: &'env Env, e: zkrecipes::Error) -> napi::Result<Object<'env>> {
    spawn(env, async move { Err::<(), _>(e) })
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

pub(crate) fn panic_message(panic: &Box<dyn Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
