//! `NativeClient`: the core's Client (Curator's CuratorFramework) for `lib/client.js`'s `Client`.

use std::future::Future;
use std::sync::Mutex;

use napi::bindgen_prelude::{BigInt, Buffer, Object};
use napi::Env;
use napi_derive::napi;
use zkrecipes::client::Watch;
use zkrecipes::{
    Acl, Client, ClientBuilder, ConnectionState, CreateMode, CreateOptions, DeleteOptions,
    ListenerId, Permission, RetryPolicy,
};

use crate::args;
use crate::boundary::{promise, promise_on, sync, Outcome};
use crate::error::{invalid, CoreResult};
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

/// A retry policy, as `lib/retry.js`'s classes describe it.
#[napi(object)]
pub struct RetryOptions {
    /// `exponentialBackoff`, `boundedExponentialBackoff`, `nTimes`, `oneTime`, `untilElapsed`, `forever`.
    pub kind: String,
    /// Exponential policies: the base sleep.
    pub base_sleep_ms: Option<f64>,
    /// Exponential policies: the longest sleep.
    pub max_sleep_ms: Option<f64>,
    /// Exponential policies: how many retries.
    pub max_retries: Option<u32>,
    /// `nTimes`: how many retries.
    pub n: Option<u32>,
    /// Fixed policies: the sleep between tries.
    pub sleep_ms: Option<f64>,
    /// `untilElapsed`: retry while less than this has passed.
    pub max_elapsed_ms: Option<f64>,
}

/// Authentication added to the session.
#[napi(object)]
pub struct AuthOptions {
    /// e.g. `digest`.
    pub scheme: String,
    /// e.g. `user:password`.
    pub credentials: Buffer,
}

/// One ACL entry for the nodes this client creates.
#[napi(object)]
pub struct AclOptions {
    /// ZooKeeper's permission bits (READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16).
    pub perms: u32,
    /// The ACL scheme (`world`, `auth`, `digest`, `ip`, ...).
    pub scheme: String,
    /// The id within the scheme.
    pub id: String,
}

/// Options of `Client.connect` (checked for types and names by `lib/client.js`).
#[napi(object)]
pub struct ConnectOptions {
    /// Session timeout asked of the server (default 60 s).
    pub session_timeout_ms: Option<f64>,
    /// How long to wait for a connection (default 15 s).
    pub connection_timeout_ms: Option<f64>,
    /// The retry policy of operations.
    pub retry: Option<RetryOptions>,
    /// Curator's namespace.
    pub namespace: Option<String>,
    /// Authentication added to the session.
    pub auth: Option<Vec<AuthOptions>>,
    /// The ACL of created nodes.
    pub acl: Option<Vec<AclOptions>>,
    /// Allow read-only servers.
    pub can_be_read_only: Option<bool>,
}

pub(crate) fn retry_policy(r: &RetryOptions) -> CoreResult<RetryPolicy> {
    let ms = |what: &str, v: Option<f64>| -> CoreResult<std::time::Duration> {
        match v {
            Some(v) => args::duration(&format!("retry.{what}"), v),
            None => Err(invalid(format!("retry policy {:?} needs {what}", r.kind))),
        }
    };
    let count = |what: &str, v: Option<u32>| {
        v.ok_or_else(|| invalid(format!("retry policy {:?} needs {what}", r.kind)))
    };
    let policy = match r.kind.as_str() {
        "exponentialBackoff" => {
            let base = ms("baseSleepMs", r.base_sleep_ms)?;
            let retries = count("maxRetries", r.max_retries)?;
            match r.max_sleep_ms {
                None => RetryPolicy::exponential_backoff(base, retries),
                Some(_) => RetryPolicy::ExponentialBackoff {
                    base_sleep: base,
                    max_retries: retries,
                    max_sleep: ms("maxSleepMs", r.max_sleep_ms)?,
                },
            }
        }
        "boundedExponentialBackoff" => RetryPolicy::BoundedExponentialBackoff {
            base_sleep: ms("baseSleepMs", r.base_sleep_ms)?,
            max_sleep: ms("maxSleepMs", r.max_sleep_ms)?,
            max_retries: count("maxRetries", r.max_retries)?,
        },
        "nTimes" => RetryPolicy::NTimes {
            n: count("n", r.n)?,
            sleep: ms("sleepMs", r.sleep_ms)?,
        },
        "oneTime" => RetryPolicy::OneTime {
            sleep: ms("sleepMs", r.sleep_ms)?,
        },
        "untilElapsed" => RetryPolicy::UntilElapsed {
            max_elapsed: ms("maxElapsedMs", r.max_elapsed_ms)?,
            sleep: ms("sleepMs", r.sleep_ms)?,
        },
        "forever" => RetryPolicy::Forever {
            sleep: ms("sleepMs", r.sleep_ms)?,
        },
        other => return Err(invalid(format!("unknown retry policy {other:?}"))),
    };
    policy.validate()?;
    Ok(policy)
}

/// Checks a retry policy the way `Client.connect` will (the retry classes call this when they
/// are made, so a bad policy fails where it is written).
#[napi]
pub fn check_retry_policy(env: Env, retry: RetryOptions) -> napi::Result<()> {
    sync(&env, || {
        retry_policy(&retry)?;
        Ok(())
    })
}

fn builder(hosts: String, o: ConnectOptions) -> CoreResult<ClientBuilder> {
    let mut b = ClientBuilder::new(hosts);
    if let Some(ms) = o.session_timeout_ms {
        b = b.session_timeout(args::positive_duration("sessionTimeoutMs", ms)?);
    }
    if let Some(ms) = o.connection_timeout_ms {
        b = b.connection_timeout(args::positive_duration("connectionTimeoutMs", ms)?);
    }
    if let Some(r) = &o.retry {
        b = b.retry_policy(retry_policy(r)?);
    }
    if let Some(ns) = o.namespace {
        b = b.namespace(ns);
    }
    for a in o.auth.unwrap_or_default() {
        b = b.auth(a.scheme, a.credentials.to_vec());
    }
    if let Some(acl) = o.acl {
        let mut list = Vec::with_capacity(acl.len());
        for e in acl {
            list.push(Acl::new(Permission::from_bits(e.perms)?, &e.scheme, &e.id));
        }
        b = b.acl(list);
    }
    if let Some(ro) = o.can_be_read_only {
        b = b.can_be_read_only(ro);
    }
    Ok(b)
}

/// Where a one-shot watch's event goes: the client's own emitter, as `emit('watch', id,
/// { type, path })`, so that it keeps its order with the client's 'state' events (the core
/// delivers both on the client's dispatcher, `Client::on_watch`).
struct Watcher {
    client: Client,
    emitter: Emitter,
    id: u32,
}

impl Watcher {
    fn arm(self, watch: Watch) {
        let Watcher {
            client,
            emitter,
            id,
        } = self;
        client.on_watch(watch, move |e| {
            emitter.emit(Event::with(
                "watch",
                Out::Number(id as f64),
                Out::Object(vec![
                    ("type", Out::Str(e.kind.name().to_string())),
                    ("path", Out::Str(e.path)),
                ]),
            ))
        });
    }
}

/// A read with an optional one-shot watch: `plain` without one, else `watching`, whose watch
/// is armed once the read succeeded.
async fn read<T>(
    watcher: Option<Watcher>,
    plain: impl Future<Output = CoreResult<T>>,
    watching: impl Future<Output = CoreResult<(T, Watch)>>,
) -> CoreResult<T> {
    match watcher {
        None => plain.await,
        Some(w) => {
            let (value, watch) = watching.await?;
            w.arm(watch);
            Ok(value)
        }
    }
}

/// The native client. `lib/client.js`'s `Client` wraps it.
#[napi]
pub struct NativeClient {
    pub(crate) inner: Client,
    /// The client's emitter ('state' and 'watch' events) and its state listener's id.
    events: Mutex<Option<(Emitter, ListenerId)>>,
}

impl NativeClient {
    /// An async read with an optional one-shot watch (`watch`: its id): `op` gets the client and
    /// the watch's watcher.
    fn read<'env, Fut>(
        &self,
        env: &'env Env,
        watch: Option<u32>,
        op: impl FnOnce(Client, Option<Watcher>) -> Fut,
    ) -> napi::Result<Object<'env>>
    where
        Fut: Future<Output = CoreResult<Out>> + Send + 'static,
    {
        promise(env, || Ok(op(self.inner.clone(), self.watcher(watch)?)))
    }

    fn watcher(&self, id: Option<u32>) -> Outcome<Option<Watcher>> {
        let Some(id) = id else { return Ok(None) };
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let (emitter, _) = events
            .as_ref()
            .ok_or_else(|| invalid("a watch needs the client's emitter (setEmitter)"))?;
        Ok(Some(Watcher {
            client: self.inner.clone(),
            emitter: emitter.clone(),
            id,
        }))
    }
}

#[napi]
impl NativeClient {
    /// Connects; resolves to a `NativeClient` once the session is up.
    #[napi]
    pub fn connect<'env>(
        env: &'env Env,
        hosts: String,
        options: ConnectOptions,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let b = builder(hosts, options)?;
            Ok(async move {
                Ok(NativeClient {
                    inner: b.connect().await?,
                    events: Mutex::new(None),
                })
            })
        })
    }

    /// Routes connection-state changes (`emit('state', NAME)`) and one-shot watches
    /// (`emit('watch', id, { type, path })`) to `emit` (a second call replaces the first).
    #[napi]
    pub fn set_emitter(&self, env: Env, emit: EmitFn<'_>) -> napi::Result<()> {
        sync(&env, || {
            let emitter = Emitter::new(emit)?;
            let e = emitter.clone();
            let id = self.inner.add_state_listener(move |s: ConnectionState| {
                e.emit(Event::new("state", Out::Str(s.name().to_string())));
            });
            let old = self
                .events
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .replace((emitter, id));
            if let Some((_, old)) = old {
                let _ = self.inner.remove_state_listener(old); // our own id
            }
            Ok(())
        })
    }

    /// Closes the session (ephemeral nodes vanish at once); later calls reject with `ZKR_CLOSED`.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise(env, || {
            let client = self.inner.clone();
            let events = self.events.lock().unwrap_or_else(|e| e.into_inner()).take();
            Ok(async move {
                client.close().await;
                // Drops the listener's threadsafe function: nothing of ours stays registered.
                if let Some((_, id)) = events {
                    let _ = client.remove_state_listener(id); // our own id
                }
                Ok(())
            })
        })
    }

    /// `CONNECTED`, `SUSPENDED`, `RECONNECTED`, `LOST` or `READ_ONLY`.
    #[napi(getter)]
    pub fn state(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.state().name().to_string()))
    }

    /// The current session id (0 once closed).
    #[napi(getter)]
    pub fn session_id(&self, env: Env) -> napi::Result<BigInt> {
        sync(&env, || Ok(BigInt::from(self.inner.session_id())))
    }

    /// Whether `close()` was called.
    #[napi(getter)]
    pub fn is_closed(&self, env: Env) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.is_closed()))
    }

    /// The namespace prefix (`""` or `"/ns"`).
    #[napi(getter)]
    pub fn namespace(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.namespace().to_string()))
    }

    /// Creates a node (`mode`: one of the core's create modes); resolves to its actual path.
    #[napi]
    pub fn create<'env>(
        &self,
        env: &'env Env,
        path: String,
        data: Option<Buffer>,
        mode: String,
        create_parents: bool,
        protected: bool,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let mut opts = CreateOptions::new(CreateMode::from_name(&mode)?);
            opts.create_parents = create_parents;
            opts.protected = protected;
            let data = data.map(|b| b.to_vec()).unwrap_or_default();
            let client = self.inner.clone();
            Ok(async move { Ok(Out::Str(client.create(&path, &data, opts).await?.path)) })
        })
    }

    /// Resolves to `{ data: Buffer, stat }`; with `watch` (an id), leaves a one-shot data watch.
    #[napi]
    pub fn get_data<'env>(
        &self,
        env: &'env Env,
        path: String,
        watch: Option<u32>,
    ) -> napi::Result<Object<'env>> {
        self.read(env, watch, |c, watcher| async move {
            let (data, stat) = read(watcher, c.get_data(&path), async {
                let (data, stat, w) = c.get_data_watch(&path).await?;
                Ok(((data, stat), w))
            })
            .await?;
            Ok(Out::Object(vec![
                ("data", Out::Bytes(data)),
                ("stat", Out::stat(&stat)),
            ]))
        })
    }

    /// Sets data (at `version` if given); resolves to the new stat.
    #[napi]
    pub fn set_data<'env>(
        &self,
        env: &'env Env,
        path: String,
        data: Buffer,
        version: Option<i32>,
    ) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| {
            // Copied on the JS thread: the Buffer is JS memory.
            let data = data.to_vec();
            async move { Ok(Out::stat(&c.set_data(&path, &data, version).await?)) }
        })
    }

    /// Resolves to the stat, or `null` when the node does not exist; with `watch` (an id),
    /// leaves a one-shot watch (created, deleted, data changed).
    #[napi]
    pub fn exists<'env>(
        &self,
        env: &'env Env,
        path: String,
        watch: Option<u32>,
    ) -> napi::Result<Object<'env>> {
        self.read(env, watch, |c, watcher| async move {
            let stat = read(watcher, c.exists(&path), c.exists_watch(&path)).await?;
            Ok(stat.as_ref().map_or(Out::Null, Out::stat))
        })
    }

    /// Resolves to the children's names; with `watch` (an id), leaves a one-shot children watch.
    #[napi]
    pub fn get_children<'env>(
        &self,
        env: &'env Env,
        path: String,
        watch: Option<u32>,
    ) -> napi::Result<Object<'env>> {
        self.read(env, watch, |c, watcher| async move {
            let children =
                read(watcher, c.get_children(&path), c.get_children_watch(&path)).await?;
            Ok(Out::strings(children))
        })
    }

    /// ZooKeeper's sync: the server catches up with the leader before answering.
    #[napi]
    pub fn sync<'env>(&self, env: &'env Env, path: String) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| async move { c.sync(&path).await })
    }

    /// Deletes a node.
    #[napi]
    pub fn delete<'env>(
        &self,
        env: &'env Env,
        path: String,
        version: Option<i32>,
        guaranteed: bool,
        recursive: bool,
    ) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| async move {
            let opts = DeleteOptions {
                version,
                guaranteed,
                recursive,
            };
            c.delete(&path, opts).await
        })
    }

    /// Requests sent so far, per operation (for tests and benchmarks).
    #[napi]
    pub fn request_counts(&self, env: Env) -> napi::Result<Out> {
        sync(&env, || {
            let c = self.inner.request_counts();
            Ok(Out::Object(vec![
                ("create", Out::Number(c.create as f64)),
                ("delete", Out::Number(c.delete as f64)),
                ("getData", Out::Number(c.get_data as f64)),
                ("setData", Out::Number(c.set_data as f64)),
                ("exists", Out::Number(c.exists as f64)),
                ("getChildren", Out::Number(c.get_children as f64)),
                ("sync", Out::Number(c.sync as f64)),
            ]))
        })
    }
}

/// Test-only entry points, in builds with the `testing` feature (napi ignores `cfg` on single
/// methods, so they live in their own block); the testing kit (`kit`) uses them too.
#[cfg(any(feature = "testing", feature = "kit"))]
#[napi]
impl NativeClient {
    /// Expires the session on the server (Curator's KillSession) and waits for LOST.
    #[napi]
    pub fn expire_session_for_testing<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise(env, || {
            let expire = zkrecipes_testing::expire_client_session(&self.inner);
            Ok(async move {
                expire
                    .await
                    .map_err(|e| zkrecipes::Error::Timeout(e.into()))
            })
        })
    }
}
