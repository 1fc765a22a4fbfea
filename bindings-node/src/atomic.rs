//! Distributed counters: `NativeAtomicLong` (64-bit, BigInt), `NativeAtomicInteger` (32-bit,
//! number) and `NativeSharedCount`.

use std::sync::Arc;

use napi::bindgen_prelude::{BigInt, Object};
use napi::Env;
use napi_derive::napi;
use zkrecipes::atomic::{
    AtomicStats, AtomicValue, DistributedAtomicInteger, DistributedAtomicLong, PromotedToLock,
    SharedCount, SharedCountEvent, VersionedValue,
};

use crate::args;
use crate::boundary::{promise, promise_by, promise_on, sync};
use crate::client::{retry_policy, NativeClient, RetryOptions};
use crate::driving::Way;
use crate::error::CoreResult;
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

/// Curator's PromotedToLock: fall back to a mutex at `lock_path` after the optimistic tries.
#[napi(object)]
pub struct PromotedToLockOptions {
    /// The mutex's path.
    pub lock_path: String,
    /// How long to wait for the mutex (default: no limit).
    pub timeout_ms: Option<f64>,
    /// The retry policy of the tries under the mutex (default: one try).
    pub retry: Option<RetryOptions>,
}

/// Options of the counters.
#[napi(object)]
pub struct AtomicOptions {
    /// The retry policy of the optimistic tries (default: the client's).
    pub retry: Option<RetryOptions>,
    /// Curator's promotion to a lock after the optimistic tries.
    pub promoted_to_lock: Option<PromotedToLockOptions>,
}

pub(crate) fn counter_options(
    o: Option<AtomicOptions>,
) -> CoreResult<(Option<zkrecipes::RetryPolicy>, Option<PromotedToLock>)> {
    let Some(o) = o else { return Ok((None, None)) };
    let retry = o.retry.as_ref().map(retry_policy).transpose()?;
    let promoted = match o.promoted_to_lock {
        None => None,
        Some(p) => {
            let mut b = PromotedToLock::builder().lock_path(&p.lock_path);
            if let Some(t) = args::timeout("promotedToLock.timeoutMs", p.timeout_ms)? {
                b = b.timeout(t);
            }
            if let Some(r) = &p.retry {
                b = b.retry_policy(retry_policy(r)?);
            }
            Some(b.build()?)
        }
    };
    Ok((retry, promoted))
}

fn stats(s: &AtomicStats) -> Out {
    Out::Object(vec![
        ("optimisticTries", Out::Number(s.optimistic_tries as f64)),
        (
            "promotedLockTries",
            Out::Number(s.promoted_lock_tries as f64),
        ),
        (
            "optimisticTimeMs",
            Out::Number(s.optimistic_time.as_secs_f64() * 1000.0),
        ),
        (
            "promotedTimeMs",
            Out::Number(s.promoted_time.as_secs_f64() * 1000.0),
        ),
    ])
}

/// Curator's AtomicValue as `{ succeeded, preValue, postValue, stats }`.
pub(crate) fn atomic_value<T: Clone>(v: &AtomicValue<T>, num: impl Fn(T) -> Out) -> Out {
    Out::Object(vec![
        ("succeeded", Out::Bool(v.succeeded)),
        ("preValue", num(v.pre_value.clone())),
        ("postValue", num(v.post_value.clone())),
        ("stats", stats(&v.stats)),
    ])
}

/// A counter's operation that resolves to an AtomicValue (`$out` maps the values to JS).
macro_rules! atomic_op {
    ($env:ident, $self_:ident, $out:expr, |$c:ident| $call:expr) => {
        promise_on($env, &$self_.inner, |$c| async move {
            Ok(atomic_value(&$call.await?, $out))
        })
    };
}

/// [`atomic_op!`] for an add (add, subtract, increment, decrement): adds queue behind each
/// other in the runtime ([`Way::Queues`]).
macro_rules! add_op {
    ($env:ident, $self_:ident, $out:expr, |$c:ident| $call:expr) => {
        promise_by($env, Way::Queues, || {
            let $c = $self_.inner.clone();
            Ok(async move { Ok(atomic_value(&$call.await?, $out)) })
        })
    };
}

/// Generates the methods shared by both counter widths: `$arg` is the JS argument type,
/// `$conv` turns it into the core's integer, `$out` turns the core's integer into a JS value.
macro_rules! counter_methods {
    ($native:ident, $core:ty, $arg:ty, $conv:ident, $out:ident) => {
        #[napi]
        impl $native {
            /// A counter at `path`.
            #[napi(constructor)]
            pub fn new(
                env: Env,
                client: &NativeClient,
                path: String,
                options: Option<AtomicOptions>,
            ) -> napi::Result<Self> {
                sync(&env, || {
                    let (retry, promoted) = counter_options(options)?;
                    Ok($native {
                        inner: Arc::new(<$core>::new(&client.inner, &path, retry, promoted)?),
                    })
                })
            }

            /// The counter's path.
            #[napi(getter)]
            pub fn path(&self, env: Env) -> napi::Result<String> {
                sync(&env, || Ok(self.inner.path().to_string()))
            }

            /// The current value (always succeeds).
            #[napi]
            pub fn get<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
                atomic_op!(env, self, $out, |c| c.get())
            }

            /// Curator's add (check `succeeded`).
            #[napi]
            pub fn add<'env>(&self, env: &'env Env, delta: $arg) -> napi::Result<Object<'env>> {
                add_op!(env, self, $out, |c| c.add($conv("delta", &delta)?))
            }

            /// Curator's subtract (check `succeeded`).
            #[napi]
            pub fn subtract<'env>(
                &self,
                env: &'env Env,
                delta: $arg,
            ) -> napi::Result<Object<'env>> {
                add_op!(env, self, $out, |c| c.subtract($conv("delta", &delta)?))
            }

            /// Curator's increment (check `succeeded`).
            #[napi]
            pub fn increment<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
                add_op!(env, self, $out, |c| c.increment())
            }

            /// Curator's decrement (check `succeeded`).
            #[napi]
            pub fn decrement<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
                add_op!(env, self, $out, |c| c.decrement())
            }

            /// Curator's compareAndSet.
            #[napi]
            pub fn compare_and_set<'env>(
                &self,
                env: &'env Env,
                expected: $arg,
                value: $arg,
            ) -> napi::Result<Object<'env>> {
                atomic_op!(env, self, $out, |c| c.compare_and_set(
                    $conv("expected", &expected)?,
                    $conv("value", &value)?
                ))
            }

            /// Curator's trySet.
            #[napi]
            pub fn try_set<'env>(&self, env: &'env Env, value: $arg) -> napi::Result<Object<'env>> {
                atomic_op!(env, self, $out, |c| c.try_set($conv("value", &value)?))
            }

            /// Curator's forceSet.
            #[napi]
            pub fn force_set<'env>(
                &self,
                env: &'env Env,
                value: $arg,
            ) -> napi::Result<Object<'env>> {
                promise_on(env, &self.inner, |c| async move {
                    c.force_set($conv("value", &value)?).await
                })
            }

            /// Curator's initialize: whether the node was created with `value`.
            #[napi]
            pub fn initialize<'env>(
                &self,
                env: &'env Env,
                value: $arg,
            ) -> napi::Result<Object<'env>> {
                promise_on(env, &self.inner, |c| async move {
                    c.initialize($conv("value", &value)?).await
                })
            }

            /// Adds `delta`; resolves to the new value or rejects (never "not succeeded").
            #[napi]
            pub fn add_and_get<'env>(
                &self,
                env: &'env Env,
                delta: $arg,
                timeout_ms: Option<f64>,
            ) -> napi::Result<Object<'env>> {
                promise_by(env, Way::Queues, || {
                    let c = self.inner.clone();
                    let t = crate::args::timeout("timeoutMs", timeout_ms)?;
                    Ok(async move { Ok($out(c.add_and_get($conv("delta", &delta)?, t).await?)) })
                })
            }
        }
    };
}

fn long_in(what: &str, v: &BigInt) -> CoreResult<i64> {
    args::i64_value(what, v)
}

fn long_out(v: i64) -> Out {
    Out::BigInt(v)
}

fn int_in(what: &str, v: &f64) -> CoreResult<i32> {
    args::i32_value(what, *v)
}

fn int_out(v: i32) -> Out {
    Out::Number(v as f64)
}

/// Curator's DistributedAtomicLong (values are BigInt).
#[napi]
pub struct NativeAtomicLong {
    inner: Arc<DistributedAtomicLong>,
}

impl NativeAtomicLong {
    /// The core counter (a cached counter takes a clone of it).
    pub(crate) fn core(&self) -> &DistributedAtomicLong {
        &self.inner
    }
}

counter_methods!(
    NativeAtomicLong,
    DistributedAtomicLong,
    BigInt,
    long_in,
    long_out
);

/// Curator's DistributedAtomicInteger (values are numbers).
#[napi]
pub struct NativeAtomicInteger {
    inner: Arc<DistributedAtomicInteger>,
}

impl NativeAtomicInteger {
    /// The core counter (a cached counter takes a clone of it).
    pub(crate) fn core(&self) -> &DistributedAtomicInteger {
        &self.inner
    }
}

counter_methods!(
    NativeAtomicInteger,
    DistributedAtomicInteger,
    f64,
    int_in,
    int_out
);

impl NativeSharedCount {
    /// The core count (a count-driven semaphore reads it).
    pub(crate) fn core(&self) -> &SharedCount {
        &self.inner
    }
}

/// Curator's SharedCount; `emit` receives `'change'` (value, version), `'state'` (name) and
/// `'corrupted'` (the data version of a value that is not a count).
#[napi]
pub struct NativeSharedCount {
    inner: Arc<SharedCount>,
}

#[napi]
impl NativeSharedCount {
    /// A shared count at `path`, created with `seed` by `start()` if missing.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        seed: f64,
        emit: EmitFn<'_>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let inner = SharedCount::new(&client.inner, &path, args::i32_value("seed", seed)?)?;
            let emitter = Emitter::new(emit)?;
            inner.add_listener(move |e| {
                emitter.emit(match e {
                    SharedCountEvent::CountChanged(v) => Event::with(
                        "change",
                        Out::Number(v.value as f64),
                        Out::Number(v.version as f64),
                    ),
                    SharedCountEvent::StateChanged(s) => {
                        Event::new("state", Out::Str(s.name().to_string()))
                    }
                    SharedCountEvent::CorruptedData { version } => {
                        Event::new("corrupted", Out::Number(version as f64))
                    }
                })
            });
            Ok(NativeSharedCount {
                inner: Arc::new(inner),
            })
        })
    }

    /// Creates the node if missing, reads it and starts watching.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| async move { c.start().await })
    }

    /// The count as last seen; throws `ZKR_CORRUPTED_DATA` while the node holds no count.
    #[napi(getter)]
    pub fn count(&self, env: Env) -> napi::Result<i32> {
        sync(&env, || Ok(self.inner.get_count()?))
    }

    /// `{ version, value }` for `trySetCount`; throws `ZKR_CORRUPTED_DATA` like `count`.
    #[napi]
    pub fn versioned_value(&self, env: Env) -> napi::Result<Out> {
        sync(&env, || {
            let v = self.inner.get_versioned_value()?;
            Ok(Out::Object(vec![
                ("version", Out::Number(v.version as f64)),
                ("value", Out::Number(v.value as f64)),
            ]))
        })
    }

    /// Sets the count whatever it was.
    #[napi]
    pub fn set_count<'env>(&self, env: &'env Env, count: f64) -> napi::Result<Object<'env>> {
        promise(env, || {
            let count = args::i32_value("count", count)?;
            let c = self.inner.clone();
            Ok(async move { c.set_count(count).await })
        })
    }

    /// Sets the count only if it is still at `{ version, value }`; resolves to whether it did.
    #[napi]
    pub fn try_set_count<'env>(
        &self,
        env: &'env Env,
        version: f64,
        value: f64,
        count: f64,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let previous = VersionedValue {
                version: args::i32_value("previous.version", version)?,
                value: args::i32_value("previous.value", value)?,
            };
            let count = args::i32_value("count", count)?;
            let c = self.inner.clone();
            Ok(async move { c.try_set_count(&previous, count).await })
        })
    }

    /// Stops watching (the node stays).
    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            self.inner.close();
            Ok(())
        })
    }

    /// The path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path().to_string()))
    }
}
