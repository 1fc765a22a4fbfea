//! Caches: `NativeCache` over the core's `Cache` (the JS layer's CuratorCache, NodeCache,
//! PathChildrenCache and TreeCache choose its scope), events as `'event'` with
//! `{ type, path, old, new, resync }`.

use std::sync::Arc;

use napi::bindgen_prelude::{BigInt, FnArgs, Function, Object};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use zkrecipes::cache::{
    Cache, CacheEvent, CacheEventType, CacheOptions, ChildData, CuratorCache, NodeCache,
    PathChildrenCache, StartMode, TreeCache,
};

use crate::args;
use crate::boundary::{promise, promise_on, promise_timed, sync};
use crate::client::NativeClient;
use crate::error::CoreResult;
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;
use zkrecipes::client::{PersistentWatcher, WatchEvent};

/// The core's cache words: event types and PathChildrenCache start modes.
#[napi(object)]
pub struct CacheVocabulary {
    pub event_types: Vec<String>,
    pub start_modes: Vec<String>,
}

/// The core's lists of cache event types and start modes.
#[napi]
pub fn cache_vocabulary(env: Env) -> napi::Result<CacheVocabulary> {
    sync(&env, || {
        Ok(CacheVocabulary {
            event_types: CacheEventType::ALL
                .iter()
                .map(|t| t.name().to_string())
                .collect(),
            start_modes: StartMode::ALL
                .iter()
                .map(|t| t.name().to_string())
                .collect(),
        })
    })
}

/// How the JS layer builds a cache.
#[napi(object)]
pub struct NativeCacheOptions {
    /// "curator", "node", "path_children" or "tree".
    pub view: String,
    /// Keep data (default true).
    pub data: Option<bool>,
    /// The depth limit (default none).
    pub max_depth: Option<f64>,
    /// PathChildrenCache's start mode name.
    pub start_mode: Option<String>,
}

/// `{ path, data, stat }` (`data` a Buffer, or null for a stats-only cache).
fn child(c: &ChildData) -> Out {
    Out::Object(vec![
        ("path", Out::Str(c.path.clone())),
        (
            "data",
            c.data
                .as_deref()
                .map_or(Out::Null, |d| Out::Bytes(d.to_vec())),
        ),
        ("stat", Out::stat(&c.stat)),
    ])
}

fn opt_child(c: &Option<ChildData>) -> Out {
    c.as_ref().map_or(Out::Null, child)
}

fn event(e: &CacheEvent) -> Event {
    Event::new(
        "event",
        Out::Object(vec![
            ("type", Out::Str(e.kind.name().to_string())),
            ("path", Out::Str(e.path.clone())),
            ("old", opt_child(&e.old)),
            ("new", opt_child(&e.new)),
            ("resync", Out::Bool(e.resync)),
        ]),
    )
}

fn depth(max_depth: Option<f64>) -> CoreResult<Option<usize>> {
    match max_depth {
        None => Ok(None),
        Some(d) if d.is_finite() && d >= 0.0 && d.fract() == 0.0 && d <= u32::MAX as f64 => {
            Ok(Some(d as usize))
        }
        Some(d) => Err(zkrecipes::Error::InvalidArgument(
            format!("maxDepth is {d}: expected a whole number >= 0").into(),
        )),
    }
}

/// The JS side of a cache's path filter: `(path) => boolean` (the JS layer catches what the
/// user's function throws).
pub type PathFilterFn<'a> = Function<'a, FnArgs<(String,)>, bool>;

type PathFilterTsfn = ThreadsafeFunction<String, bool, FnArgs<(String,)>, Status, false, true>;

/// How long the cache waits for the JS thread to answer its path filter.
const PATH_FILTER_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The core's path filter, asking `tsfn` on the JS thread and waiting for the answer (the core
/// calls it from the cache's task on its runtime, never on the JS thread, which no native method
/// blocks). A filter that cannot answer keeps the node.
fn ask_filter(tsfn: &PathFilterTsfn, path: &str) -> bool {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let status = tsfn.call_with_return_value(
        path.to_string(),
        ThreadsafeFunctionCallMode::NonBlocking,
        move |answer, _env| {
            let _ = tx.send(answer.unwrap_or(true));
            Ok(())
        },
    );
    // Cannot call it (the environment is exiting) or no answer in time: keep the node.
    status != Status::Ok || rx.recv_timeout(PATH_FILTER_WAIT).unwrap_or(true)
}

/// The native cache.
#[napi]
pub struct NativeCache {
    inner: Arc<Cache>,
}

#[napi]
impl NativeCache {
    /// A cache at `path`; its events go to `emit('event', payload)`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        options: NativeCacheOptions,
        emit: EmitFn<'_>,
        path_filter: Option<PathFilterFn<'_>>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let filter = match path_filter {
                Some(f) => Some(
                    f.build_threadsafe_function::<String>()
                        .weak::<true>()
                        .callee_handled::<false>()
                        .build_callback(|ctx| Ok(FnArgs::from((ctx.value,))))?,
                ),
                None => None,
            };
            let c = &client.inner;
            let data = options.data.unwrap_or(true);
            let max_depth = depth(options.max_depth)?;
            let cache: Cache = match options.view.as_str() {
                "node" => NodeCache::new(c, &path)?.into(),
                "path_children" => {
                    let mode = match &options.start_mode {
                        None => StartMode::Normal,
                        Some(m) => StartMode::from_name(m)?,
                    };
                    PathChildrenCache::new(c, &path, data, mode)?.into()
                }
                "tree" => TreeCache::new(c, &path, max_depth)?.into(),
                _ => {
                    let mut opts = CacheOptions {
                        data,
                        max_depth,
                        ..CacheOptions::default()
                    };
                    if let Some(tsfn) = filter {
                        // The runtime waits on the JS thread's answer: no turns on it.
                        let waits = crate::driving::WaitsOnJs::new();
                        opts = opts.path_filter(move |p| {
                            let _ = &waits;
                            ask_filter(&tsfn, p)
                        });
                    }
                    CuratorCache::with_options(c, &path, opts)?.into()
                }
            };
            let emitter = Emitter::new(emit)?;
            cache.listen(move |e| emitter.emit(event(e)));
            Ok(NativeCache {
                inner: Arc::new(cache),
            })
        })
    }

    /// Sets the watch and starts loading.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| async move { c.start().await })
    }

    /// Resolves to whether the initial load completed within `timeoutMs`.
    #[napi]
    pub fn await_initialized<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |c, t| async move {
            c.await_initialized(t).await
        })
    }

    /// Resolves to whether the cache applied every change up to `zxid` within `timeoutMs`.
    #[napi]
    pub fn await_zxid<'env>(
        &self,
        env: &'env Env,
        zxid: BigInt,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let z = args::i64_value("zxid", &zxid)?;
            let t = args::timeout("timeoutMs", timeout_ms)?;
            let c = self.inner.clone();
            Ok(async move { c.await_zxid(z, t).await })
        })
    }

    /// The cached node, or null.
    #[napi]
    pub fn get(&self, env: Env, path: String) -> napi::Result<Out> {
        sync(&env, || {
            Ok(self.inner.get(&path).as_ref().map_or(Out::Null, child))
        })
    }

    /// How many nodes are cached.
    #[napi(getter)]
    pub fn size(&self, env: Env) -> napi::Result<u32> {
        sync(&env, || Ok(self.inner.size() as u32))
    }

    /// The snapshot, sorted by path.
    #[napi]
    pub fn snapshot(&self, env: Env) -> napi::Result<Out> {
        sync(&env, || {
            Ok(Out::Array(
                self.inner.snapshot().iter().map(|c| child(&c)).collect(),
            ))
        })
    }

    /// Whether the initial load is complete.
    #[napi(getter)]
    pub fn initialized(&self, env: Env) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.is_initialized()))
    }

    /// How many resyncs have completed.
    #[napi(getter)]
    pub fn resyncs(&self, env: Env) -> napi::Result<f64> {
        sync(&env, || Ok(self.inner.resyncs() as f64))
    }

    /// A listener of its own for one JS function (`emit('event', payload)`): with `replay`, it
    /// first hears the current contents as CREATED events (the core's `listen_with_replay`:
    /// nothing missed, nothing twice), then what happens next. Its id, for `removeListener`.
    #[napi]
    pub fn listen(&self, env: Env, emit: EmitFn<'_>, replay: bool) -> napi::Result<BigInt> {
        sync(&env, || {
            let emitter = Emitter::new(emit)?;
            let f = move |e: &CacheEvent| emitter.emit(event(e));
            let id = if replay {
                self.inner.listen_with_replay(f)
            } else {
                self.inner.listen(f)
            };
            Ok(BigInt::from(id))
        })
    }

    /// Removes a listener added by `listen`; whether it was there.
    #[napi]
    pub fn remove_listener(&self, env: Env, id: BigInt) -> napi::Result<bool> {
        sync(&env, || {
            let (_, v, _) = id.get_u64();
            Ok(self.inner.remove_listener(v)?)
        })
    }

    /// Stops the cache.
    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            self.inner.close();
            Ok(())
        })
    }

    /// The cached root's path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path().to_string()))
    }
}

/// The core's persistent watcher event names.
#[napi]
pub fn watcher_event_types(env: Env) -> napi::Result<Vec<String>> {
    sync(&env, || {
        Ok(WatchEvent::NAMES.iter().map(|n| n.to_string()).collect())
    })
}

/// The native persistent watcher (Curator's PersistentWatcher); its events go to
/// `emit('event', { type, path })` (`path` null for connection events).
#[napi]
pub struct NativePersistentWatcher {
    inner: Arc<PersistentWatcher>,
}

#[napi]
impl NativePersistentWatcher {
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        recursive: bool,
        emit: EmitFn<'_>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let w = PersistentWatcher::new(&client.inner, &path, recursive)?;
            let emitter = Emitter::new(emit)?;
            w.listen(move |e: &WatchEvent| {
                emitter.emit(Event::new(
                    "event",
                    Out::Object(vec![
                        ("type", Out::Str(e.name().to_string())),
                        (
                            "path",
                            e.path().map_or(Out::Null, |p| Out::Str(p.to_string())),
                        ),
                    ]),
                ))
            });
            Ok(NativePersistentWatcher { inner: Arc::new(w) })
        })
    }

    /// Sets the watch.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |w| async move { w.start().await })
    }

    /// Removes the watch.
    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            self.inner.close();
            Ok(())
        })
    }

    /// The watched path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path().to_string()))
    }

    /// Whether the nodes below the path are watched too.
    #[napi(getter)]
    pub fn recursive(&self, env: Env) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.recursive()))
    }

    /// Whether it was started and is not closed.
    #[napi(getter)]
    pub fn started(&self, env: Env) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.is_started()))
    }
}
