//! The bytes recipes and cached counters: `NativeSharedValue`, `NativeAtomicValue` (Curator's
//! DistributedAtomicValue), `NativeCachedAtomicLong` (BigInt) and `NativeCachedAtomicInteger`.

use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, Object};
use napi::Env;
use napi_derive::napi;
use zkrecipes::atomic::{
    AtomicValue, CachedAtomicInteger, CachedAtomicLong, DistributedAtomicValue, SharedValue,
    SharedValueEvent, VersionedValue,
};

use crate::args;
use crate::atomic::{atomic_value, counter_options, AtomicOptions};
use crate::atomic::{NativeAtomicInteger, NativeAtomicLong};
use crate::boundary::{promise, promise_on, sync};
use crate::client::NativeClient;
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

fn bytes_out(v: Option<Vec<u8>>) -> Out {
    v.map_or(Out::Null, Out::Bytes)
}

/// Curator's SharedValue; `emit` receives `'change'` (value, version) and `'state'` (name).
#[napi]
pub struct NativeSharedValue {
    inner: Arc<SharedValue>,
}

#[napi]
impl NativeSharedValue {
    /// A shared value at `path`, created with `seed` by `start()` if missing.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        seed: Buffer,
        emit: EmitFn<'_>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let inner = SharedValue::new(&client.inner, &path, &seed)?;
            let emitter = Emitter::new(emit)?;
            inner.add_listener(move |e| {
                emitter.emit(match e {
                    SharedValueEvent::ValueChanged(v) => {
                        Event::with("change", Out::Bytes(v.value), Out::Number(v.version as f64))
                    }
                    SharedValueEvent::StateChanged(s) => {
                        Event::new("state", Out::Str(s.name().to_string()))
                    }
                })
            });
            Ok(NativeSharedValue {
                inner: Arc::new(inner),
            })
        })
    }

    /// Creates the node if missing, reads it and starts watching.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| async move { c.start().await })
    }

    /// `{ version, value }` as last seen (the seed at version -1 before start).
    #[napi]
    pub fn versioned_value(&self, env: Env) -> napi::Result<Out> {
        sync(&env, || {
            let v = self.inner.get_versioned_value();
            Ok(Out::Object(vec![
                ("version", Out::Number(v.version as f64)),
                ("value", Out::Bytes(v.value)),
            ]))
        })
    }

    /// Sets the value whatever it was.
    #[napi]
    pub fn set_value<'env>(&self, env: &'env Env, value: Buffer) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| {
            // Copied on the JS thread: the Buffer is JS memory.
            let value = value.to_vec();
            async move { c.set_value(&value).await }
        })
    }

    /// Sets the value only if it is still at `{ version, value }`; resolves to whether it did.
    #[napi]
    pub fn try_set_value<'env>(
        &self,
        env: &'env Env,
        version: f64,
        previous: Buffer,
        value: Buffer,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let previous = VersionedValue {
                version: args::i32_value("previous.version", version)?,
                value: previous.to_vec(),
            };
            let value = value.to_vec();
            let c = self.inner.clone();
            Ok(async move { c.try_set_value(&previous, &value).await })
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

fn bytes_value(v: AtomicValue<Option<Vec<u8>>>) -> Out {
    let v = AtomicValue {
        succeeded: v.succeeded,
        pre_value: bytes_out(v.pre_value),
        post_value: bytes_out(v.post_value),
        stats: v.stats,
    };
    atomic_value(&v, |o| o)
}

/// Curator's DistributedAtomicValue (values are Buffers, or `null` for a missing node).
#[napi]
pub struct NativeAtomicValue {
    inner: DistributedAtomicValue,
}

#[napi]
impl NativeAtomicValue {
    /// A value at `path`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        options: Option<AtomicOptions>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let (retry, promoted) = counter_options(options)?;
            Ok(NativeAtomicValue {
                inner: DistributedAtomicValue::new(&client.inner, &path, retry, promoted)?,
            })
        })
    }

    /// The value's path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path().to_string()))
    }

    /// The current bytes (always succeeds; `null` if the node does not exist).
    #[napi]
    pub fn get<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| async move {
            Ok(bytes_value(c.get().await?))
        })
    }

    /// Curator's compareAndSet (one try; a missing node never matches).
    #[napi]
    pub fn compare_and_set<'env>(
        &self,
        env: &'env Env,
        expected: Buffer,
        value: Buffer,
    ) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| {
            let (expected, value) = (expected.to_vec(), value.to_vec());
            async move { Ok(bytes_value(c.compare_and_set(&expected, &value).await?)) }
        })
    }

    /// Curator's trySet.
    #[napi]
    pub fn try_set<'env>(&self, env: &'env Env, value: Buffer) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| {
            let value = value.to_vec();
            async move { Ok(bytes_value(c.try_set(&value).await?)) }
        })
    }

    /// Curator's forceSet.
    #[napi]
    pub fn force_set<'env>(&self, env: &'env Env, value: Buffer) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| {
            let value = value.to_vec();
            async move { c.force_set(&value).await }
        })
    }

    /// Curator's initialize: whether the node was created with `value`.
    #[napi]
    pub fn initialize<'env>(&self, env: &'env Env, value: Buffer) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| {
            let value = value.to_vec();
            async move { c.initialize(&value).await }
        })
    }
}

/// Curator's CachedAtomicLong over a `NativeAtomicLong`'s counter (values are BigInt).
#[napi]
pub struct NativeCachedAtomicLong {
    inner: Arc<CachedAtomicLong>,
}

#[napi]
impl NativeCachedAtomicLong {
    /// Ids from `counter`'s node, `cache_factor` (at least 1) reserved at a time.
    #[napi(constructor)]
    pub fn new(env: Env, counter: &NativeAtomicLong, cache_factor: f64) -> napi::Result<Self> {
        sync(&env, || {
            let factor = i64::from(args::i32_value("cacheFactor", cache_factor)?);
            Ok(NativeCachedAtomicLong {
                inner: Arc::new(CachedAtomicLong::new(counter.core().clone(), factor)?),
            })
        })
    }

    /// The next id (`postValue`), reserving a new range when needed.
    #[napi]
    pub fn next<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| async move {
            Ok(atomic_value(&c.next().await?, Out::BigInt))
        })
    }
}

/// Curator's CachedAtomicInteger over a `NativeAtomicInteger`'s counter (values are numbers).
#[napi]
pub struct NativeCachedAtomicInteger {
    inner: Arc<CachedAtomicInteger>,
}

#[napi]
impl NativeCachedAtomicInteger {
    /// Ids from `counter`'s node, `cache_factor` (at least 1) reserved at a time.
    #[napi(constructor)]
    pub fn new(env: Env, counter: &NativeAtomicInteger, cache_factor: f64) -> napi::Result<Self> {
        sync(&env, || {
            let factor = args::i32_value("cacheFactor", cache_factor)?;
            Ok(NativeCachedAtomicInteger {
                inner: Arc::new(CachedAtomicInteger::new(counter.core().clone(), factor)?),
            })
        })
    }

    /// The next id (`postValue`), reserving a new range when needed.
    #[napi]
    pub fn next<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| async move {
            Ok(atomic_value(&c.next().await?, |v| Out::Number(v as f64)))
        })
    }
}
