//! The Rust side of `bench/mutex.js`: the same loops run straight on the core, on the same
//! client and server, so the binding's overhead shows next to the core's own figures.
//! Not part of the public API (`index.js` does not export it).

use std::time::{Duration, Instant};

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;
use zkrecipes::lock::InterProcessMutex;
use zkrecipes::Owner;

use crate::client::NativeClient;
use crate::promise;
use crate::value::Out;

/// Uncontended acquire+release, `iterations` times: resolves to each iteration's microseconds.
#[napi]
pub fn bench_core_uncontended<'env>(
    env: &'env Env,
    client: &NativeClient,
    path: String,
    iterations: u32,
) -> napi::Result<Object<'env>> {
    let client = client.inner.clone();
    promise::spawn(env, async move {
        let m = InterProcessMutex::new(&client, &path)?;
        let owner = Owner::new();
        let mut out = Vec::with_capacity(iterations as usize);
        for _ in 0..iterations {
            let t0 = Instant::now();
            m.acquire(owner, None).await?;
            m.release(owner).await?;
            out.push(Out::Number(t0.elapsed().as_secs_f64() * 1e6));
        }
        Ok(Out::Array(out))
    })
}

/// `contenders` owners (one mutex object each, as separate processes would) taking turns on
/// one lock for `duration_ms`: resolves to the number of holds.
#[napi]
pub fn bench_core_contended<'env>(
    env: &'env Env,
    client: &NativeClient,
    path: String,
    contenders: u32,
    duration_ms: u32,
) -> napi::Result<Object<'env>> {
    let client = client.inner.clone();
    promise::spawn(env, async move {
        let deadline = Instant::now() + Duration::from_millis(duration_ms as u64);
        let mut tasks = Vec::new();
        for _ in 0..contenders {
            let m = InterProcessMutex::new(&client, &path)?;
            tasks.push(zkrecipes::runtime::spawn(async move {
                let owner = Owner::new();
                let mut holds = 0u64;
                while Instant::now() < deadline {
                    m.acquire(owner, None).await?;
                    holds += 1;
                    m.release(owner).await?;
                }
                Ok::<u64, zkrecipes::Error>(holds)
            }));
        }
        let mut total = 0u64;
        for t in tasks {
            total += t
                .await
                .map_err(|e| zkrecipes::Error::Internal(e.to_string().into()))??;
        }
        Ok(Out::Number(total as f64))
    })
}

/// A Promise settled from the runtime at once: the binding's fixed cost per async call.
#[napi]
pub fn bench_noop(env: &Env) -> napi::Result<Object<'_>> {
    promise::spawn(env, async move { Ok(Out::Undefined) })
}

/// `exists(path)` (one read round trip), `iterations` times: each iteration's microseconds.
#[napi]
pub fn bench_core_exists<'env>(
    env: &'env Env,
    client: &NativeClient,
    path: String,
    iterations: u32,
) -> napi::Result<Object<'env>> {
    let client = client.inner.clone();
    promise::spawn(env, async move {
        let mut out = Vec::with_capacity(iterations as usize);
        for _ in 0..iterations {
            let t0 = Instant::now();
            client.exists(&path).await?;
            out.push(Out::Number(t0.elapsed().as_secs_f64() * 1e6));
        }
        Ok(Out::Array(out))
    })
}
