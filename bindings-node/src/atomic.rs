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
use crate::client::{retry_policy, NativeClient, RetryOptions};
use crate::error::{from_core, invalid, CoreResult};
use crate::events::{EmitFn, Emitter, Event, Payload};
use crate::promise;
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

fn counter_options(
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
fn atomic_value<T: Copy>(v: &AtomicValue<T>, num: impl Fn(T) -> Out) -> Out {
    Out::Object(vec![
        ("succeeded", Out::Bool(v.succeeded)),
        ("preValue", num(v.pre_value)),
        ("postValue", num(v.post_value)),
        ("stats", stats(&v.stats)),
    ])
}

fn long(v: &BigInt, what: &str) -> CoreResult<i64> {
    args::i64_value(what, v)
}

fn int(v: f64, what: &str) -> CoreResult<i32> {
    if v.fract() != 0.0 || v < i32::MIN as f64 || v > i32::MAX as f64 {
        return Err(invalid(format!("{what} must be a 32-bit integer, got {v}")));
    }
    Ok(v as i32)
}

/// Generates the methods shared by both counter widths: `$arg` is the JS argument type,
/// `$conv` turns it into the core's integer, `$out` turns the core's integer into a JS value.
macro_rules! counter_methods {
    ($native:ident, $core:ty, $arg:ty, $conv:expr, $out:expr) => {
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
                let build = || -> CoreResult<$core> {
                    let (retry, promoted) = counter_options(options)?;
                    <$core>::new(&client.inner, &path, retry, promoted)
                };
                let inner = build().map_err(|e| from_core(&env, &e))?;
                Ok($native {
                    inner: Arc::new(inner),
                })
            }

            /// The counter's path.
            #[napi(getter)]
            pub fn path(&self) -> String {
                self.inner.path().to_string()
            }

            /// The current value (always succeeds).
            #[napi]
            pub fn get<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
                let c = self.inner.clone();
                promise::spawn(env, async move { Ok(atomic_value(&c.get().await?, $out)) })
            }

            /// Curator's add (check `succeeded`).
            #[napi]
            pub fn add<'env>(&self, env: &'env Env, delta: $arg) -> napi::Result<Object<'env>> {
                let delta = match $conv(&delta, "delta") {
                    Ok(v) => v,
                    Err(e) => return promise::rejected(env, e),
                };
                let c = self.inner.clone();
                promise::spawn(
                    env,
                    async move { Ok(atomic_value(&c.add(delta).await?, $out)) },
                )
            }

            /// Curator's subtract (check `succeeded`).
            #[napi]
            pub fn subtract<'env>(
                &self,
                env: &'env Env,
                delta: $arg,
            ) -> napi::Result<Object<'env>> {
                let delta = match $conv(&delta, "delta") {
                    Ok(v) => v,
                    Err(e) => return promise::rejected(env, e),
                };
                let c = self.inner.clone();
                promise::spawn(env, async move {
                    Ok(atomic_value(&c.subtract(delta).await?, $out))
                })
            }

            /// Curator's increment (check `succeeded`).
            #[napi]
            pub fn increment<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
                let c = self.inner.clone();
                promise::spawn(
                    env,
                    async move { Ok(atomic_value(&c.increment().await?, $out)) },
                )
            }

            /// Curator's decrement (check `succeeded`).
            #[napi]
            pub fn decrement<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
                let c = self.inner.clone();
                promise::spawn(
                    env,
                    async move { Ok(atomic_value(&c.decrement().await?, $out)) },
                )
            }

            /// Curator's compareAndSet.
            #[napi]
            pub fn compare_and_set<'env>(
                &self,
                env: &'env Env,
                expected: $arg,
                value: $arg,
            ) -> napi::Result<Object<'env>> {
                let vals =
                    $conv(&expected, "expected").and_then(|e| Ok((e, $conv(&value, "value")?)));
                let (expected, value) = match vals {
                    Ok(v) => v,
                    Err(e) => return promise::rejected(env, e),
                };
                let c = self.inner.clone();
                promise::spawn(env, async move {
                    Ok(atomic_value(
                        &c.compare_and_set(expected, value).await?,
                        $out,
                    ))
                })
            }

            /// Curator's trySet.
            #[napi]
            pub fn try_set<'env>(&self, env: &'env Env, value: $arg) -> napi::Result<Object<'env>> {
                let value = match $conv(&value, "value") {
                    Ok(v) => v,
                    Err(e) => return promise::rejected(env, e),
                };
                let c = self.inner.clone();
                promise::spawn(env, async move {
                    Ok(atomic_value(&c.try_set(value).await?, $out))
                })
            }

            /// Curator's forceSet.
            #[napi]
            pub fn force_set<'env>(
                &self,
                env: &'env Env,
                value: $arg,
            ) -> napi::Result<Object<'env>> {
                let value = match $conv(&value, "value") {
                    Ok(v) => v,
                    Err(e) => return promise::rejected(env, e),
                };
                let c = self.inner.clone();
                promise::spawn(env, async move {
                    c.force_set(value).await?;
                    Ok(Out::Undefined)
                })
            }

            /// Curator's initialize: whether the node was created with `value`.
            #[napi]
            pub fn initialize<'env>(
                &self,
                env: &'env Env,
                value: $arg,
            ) -> napi::Result<Object<'env>> {
                let value = match $conv(&value, "value") {
                    Ok(v) => v,
                    Err(e) => return promise::rejected(env, e),
                };
                let c = self.inner.clone();
                promise::spawn(env, async move { c.initialize(value).await })
            }

            /// Adds `delta`; resolves to the new value or rejects (never "not succeeded").
            #[napi]
            pub fn add_and_get<'env>(
                &self,
                env: &'env Env,
                delta: $arg,
                timeout_ms: Option<f64>,
            ) -> napi::Result<Object<'env>> {
                let vals = $conv(&delta, "delta")
                    .and_then(|d| Ok((d, args::timeout("timeoutMs", timeout_ms)?)));
                let (delta, timeout) = match vals {
                    Ok(v) => v,
                    Err(e) => return promise::rejected(env, e),
                };
                let c = self.inner.clone();
                promise::spawn(env, async move {
                    Ok($out(c.add_and_get(delta, timeout).await?))
                })
            }
        }
    };
}

/// Curator's DistributedAtomicLong (values are BigInt).
#[napi]
pub struct NativeAtomicLong {
    inner: Arc<DistributedAtomicLong>,
}

counter_methods!(
    NativeAtomicLong,
    DistributedAtomicLong,
    BigInt,
    long,
    Out::BigInt
);

/// Curator's DistributedAtomicInteger (values are numbers).
#[napi]
pub struct NativeAtomicInteger {
    inner: Arc<DistributedAtomicInteger>,
}

fn int_ref(v: &f64, what: &str) -> CoreResult<i32> {
    int(*v, what)
}

fn int_out(v: i32) -> Out {
    Out::Number(v as f64)
}

counter_methods!(
    NativeAtomicInteger,
    DistributedAtomicInteger,
    f64,
    int_ref,
    int_out
);

/// Curator's SharedCount; `emit` receives `'change'` (value, version) and `'state'` (name).
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
        let inner = int(seed, "seed")
            .and_then(|seed| SharedCount::new(&client.inner, &path, seed))
            .map_err(|e| from_core(&env, &e))?;
        let emitter = Emitter::new(emit)?;
        inner.add_listener(move |e| match e {
            SharedCountEvent::CountChanged(v) => emitter.emit(Event {
                name: "change",
                payload: Payload::Number(v.value as f64),
                extra: Payload::Number(v.version as f64),
            }),
            SharedCountEvent::StateChanged(s) => {
                emitter.emit(Event::new("state", Payload::Text(s.as_str().into())))
            }
            SharedCountEvent::CorruptedData { version } => emitter.emit(Event {
                name: "corrupted",
                payload: Payload::Number(version as f64),
                extra: Payload::Number(version as f64),
            }),
        });
        Ok(NativeSharedCount {
            inner: Arc::new(inner),
        })
    }

    /// Creates the node if missing, reads it and starts watching.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let c = self.inner.clone();
        promise::spawn(env, async move {
            c.start().await?;
            Ok(Out::Undefined)
        })
    }

    /// The count as last seen; throws `ZKR_CORRUPTED_DATA` while the node holds no count.
    #[napi(getter)]
    pub fn count(&self, env: Env) -> napi::Result<i32> {
        self.inner.get_count().map_err(|e| from_core(&env, &e))
    }

    /// `{ version, value }` for `trySetCount`.
    #[napi]
    pub fn versioned_value(&self, env: Env) -> napi::Result<Object<'_>> {
        let v = self
            .inner
            .get_versioned_value()
            .map_err(|e| from_core(&env, &e))?;
        let mut o = Object::new(&env)?;
        o.set("version", v.version)?;
        o.set("value", v.value)?;
        Ok(o)
    }

    /// Sets the count whatever it was.
    #[napi]
    pub fn set_count<'env>(&self, env: &'env Env, count: f64) -> napi::Result<Object<'env>> {
        let count = match int(count, "count") {
            Ok(c) => c,
            Err(e) => return promise::rejected(env, e),
        };
        let c = self.inner.clone();
        promise::spawn(env, async move {
            c.set_count(count).await?;
            Ok(Out::Undefined)
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
        let vals = int(version, "previous.version").and_then(|ver| {
            Ok((
                VersionedValue {
                    version: ver,
                    value: int(value, "previous.value")?,
                },
                int(count, "count")?,
            ))
        });
        let (previous, count) = match vals {
            Ok(v) => v,
            Err(e) => return promise::rejected(env, e),
        };
        let c = self.inner.clone();
        promise::spawn(env, async move { c.try_set_count(&previous, count).await })
    }

    /// Stops watching (the node stays).
    #[napi]
    pub fn close(&self) {
        self.inner.close();
    }

    /// The path.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.inner.path().to_string()
    }
}
