//! Watch removal and connection waiting on a client (`removeWatches`, `waitForState`) and its
//! request size limit (`maxRequestBytes`), for `lib/client.js`.

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;
use zkrecipes::WatcherType;

use crate::args;
use crate::boundary::{promise, sync};
use crate::client::NativeClient;

#[napi]
impl NativeClient {
    /// Removes this client's watches of `kind` (a WatcherType name) on `path`.
    #[napi]
    pub fn remove_watches<'env>(
        &self,
        env: &'env Env,
        path: String,
        kind: String,
        local: bool,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let kind = WatcherType::from_name(&kind)?;
            let c = self.inner.clone();
            Ok(async move { c.remove_watches(&path, kind, local).await })
        })
    }

    /// Curator's blockUntilConnected(timeout): true once connected, false when the time ran out.
    #[napi]
    pub fn wait_for_state<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let t = args::timeout("timeoutMs", timeout_ms)?;
            let c = self.inner.clone();
            Ok(async move { c.block_until_connected(t).await })
        })
    }

    /// The largest request the client sends, in bytes.
    #[napi(getter)]
    pub fn max_request_bytes(&self, env: Env) -> napi::Result<f64> {
        sync(&env, || Ok(self.inner.max_request_bytes() as f64))
    }
}

/// The core's watcher types (`removeWatches`).
#[napi]
pub fn watcher_types(env: Env) -> napi::Result<Vec<String>> {
    sync(&env, || {
        Ok(WatcherType::ALL
            .iter()
            .map(|t| t.name().to_string())
            .collect())
    })
}
