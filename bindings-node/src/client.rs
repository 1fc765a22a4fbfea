//! `NativeClient`: the core's Client (Curator's CuratorFramework) for `index.js`'s `Client`.

use std::sync::Mutex;

use napi::bindgen_prelude::{BigInt, Buffer, Object};
use napi::Env;
use napi_derive::napi;
use zkrecipes::client::{Acl, NodeEventKind, Permission, Watch};
use zkrecipes::{
    Client, ClientBuilder, ConnectionState, CreateMode, CreateOptions, DeleteOptions, RetryPolicy,
};

use crate::args;
use crate::error::{invalid, CoreResult};
use crate::events::{EmitFn, Emitter, Event, Payload};
use crate::promise;
use crate::value::Out;

/// A retry policy, as `index.js`'s retry classes describe it.
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

/// Options of `Client.connect` (checked for types by `index.js`).
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
                Some(max) => RetryPolicy::ExponentialBackoff {
                    base_sleep: base,
                    max_retries: retries,
                    max_sleep: args::duration("retry.maxSleepMs", max)?,
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

fn builder(hosts: String, o: ConnectOptions) -> CoreResult<ClientBuilder> {
    let mut b = ClientBuilder::new(hosts);
    if let Some(ms) = o.session_timeout_ms {
        b = b.session_timeout(args::duration("sessionTimeoutMs", ms)?);
    }
    if let Some(ms) = o.connection_timeout_ms {
        b = b.connection_timeout(args::duration("connectionTimeoutMs", ms)?);
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
            list.push(Acl::new(permission(e.perms)?, &e.scheme, &e.id));
        }
        b = b.acl(list);
    }
    if let Some(ro) = o.can_be_read_only {
        b = b.can_be_read_only(ro);
    }
    Ok(b)
}

/// ZooKeeper's permission bits as a `Permission`.
fn permission(bits: u32) -> CoreResult<Permission> {
    Permission::from_bits(bits)
}

/// Emits `(kind, path)` once when the one-shot watch fires: `CREATED`, `DELETED`, `CHANGED`,
/// `CHILD` or `SESSION_ENDED` (the session ended first).
fn arm(watch: Watch, emitter: Emitter) {
    zkrecipes::runtime::spawn(async move {
        let e = watch.changed().await;
        let kind = match e.kind {
            NodeEventKind::Created => "CREATED",
            NodeEventKind::Deleted => "DELETED",
            NodeEventKind::DataChanged => "CHANGED",
            NodeEventKind::ChildrenChanged => "CHILD",
            NodeEventKind::SessionEnded => "SESSION_ENDED",
            #[allow(unreachable_patterns)]
            _ => "SESSION_ENDED",
        };
        emitter.emit(Event::new(kind, Payload::Text(e.path)));
    });
}

fn create_mode(mode: &str) -> CoreResult<CreateMode> {
    Ok(match mode {
        "PERSISTENT" => CreateMode::Persistent,
        "PERSISTENT_SEQUENTIAL" => CreateMode::PersistentSequential,
        "EPHEMERAL" => CreateMode::Ephemeral,
        "EPHEMERAL_SEQUENTIAL" => CreateMode::EphemeralSequential,
        "CONTAINER" => CreateMode::Container,
        other => {
            return Err(invalid(format!(
                "unknown create mode {other:?} (PERSISTENT, PERSISTENT_SEQUENTIAL, EPHEMERAL, EPHEMERAL_SEQUENTIAL, CONTAINER)"
            )))
        },
    })
}

/// The native client. `index.js`'s `Client` wraps it.
#[napi]
pub struct NativeClient {
    pub(crate) inner: Client,
    listener: Mutex<Option<u64>>,
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
        let b = match builder(hosts, options) {
            Ok(b) => b,
            Err(e) => return promise::rejected(env, e),
        };
        promise::spawn(env, async move {
            let inner = b.connect().await?;
            Ok(NativeClient {
                inner,
                listener: Mutex::new(None),
            })
        })
    }

    /// Routes connection-state changes to `emit('state', NAME)` (one listener per client; a
    /// second call replaces the first).
    #[napi]
    pub fn set_emitter(&self, emit: EmitFn<'_>) -> napi::Result<()> {
        let emitter = Emitter::new(emit)?;
        let id = self.inner.add_state_listener(move |s: ConnectionState| {
            emitter.emit(Event::new("state", Payload::Text(s.as_str().to_string())));
        });
        let old = self
            .listener
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(id);
        if let Some(old) = old {
            self.inner.remove_state_listener(old);
        }
        Ok(())
    }

    /// Closes the session (ephemeral nodes vanish at once); later calls reject with `ZKR_CLOSED`.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let client = self.inner.clone();
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        promise::spawn(env, async move {
            client.close().await;
            // Drops the listener's threadsafe function: nothing of ours stays registered.
            if let Some(id) = listener {
                client.remove_state_listener(id);
            }
            Ok(())
        })
    }

    /// `CONNECTED`, `SUSPENDED`, `RECONNECTED`, `LOST` or `READ_ONLY`.
    #[napi(getter)]
    pub fn state(&self) -> String {
        self.inner.state().as_str().to_string()
    }

    /// The current session id (0 once closed).
    #[napi(getter)]
    pub fn session_id(&self) -> BigInt {
        BigInt::from(self.inner.session_id())
    }

    /// Whether `close()` was called.
    #[napi(getter)]
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The namespace prefix (`""` or `"/ns"`).
    #[napi(getter)]
    pub fn namespace(&self) -> String {
        self.inner.namespace().to_string()
    }

    /// Creates a node; resolves to its actual path.
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
        let mode = match create_mode(&mode) {
            Ok(m) => m,
            Err(e) => return promise::rejected(env, e),
        };
        let mut opts = CreateOptions::new(mode);
        opts.create_parents = create_parents;
        opts.protected = protected;
        let data = data.map(|b| b.to_vec()).unwrap_or_default();
        let client = self.inner.clone();
        promise::spawn(env, async move {
            Ok(Out::Str(client.create(&path, &data, opts).await?.path))
        })
    }

    /// Resolves to `{ data: Buffer, stat }`; with `watch`, leaves a one-shot data watch that
    /// calls `watch(kind, path)`.
    #[napi]
    pub fn get_data<'env>(
        &self,
        env: &'env Env,
        path: String,
        watch: Option<EmitFn<'_>>,
    ) -> napi::Result<Object<'env>> {
        let client = self.inner.clone();
        let watch = watch.map(Emitter::new).transpose()?;
        promise::spawn(env, async move {
            let (data, stat) = match watch {
                None => client.get_data(&path).await?,
                Some(emitter) => {
                    let (data, stat, w) = client.get_data_watch(&path).await?;
                    arm(w, emitter);
                    (data, stat)
                }
            };
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
        let data = data.to_vec();
        let client = self.inner.clone();
        promise::spawn(env, async move {
            Ok(Out::stat(&client.set_data(&path, &data, version).await?))
        })
    }

    /// Resolves to the stat, or `null` when the node does not exist; with `watch`, leaves a
    /// one-shot watch (created, deleted, data changed).
    #[napi]
    pub fn exists<'env>(
        &self,
        env: &'env Env,
        path: String,
        watch: Option<EmitFn<'_>>,
    ) -> napi::Result<Object<'env>> {
        let client = self.inner.clone();
        let watch = watch.map(Emitter::new).transpose()?;
        promise::spawn(env, async move {
            let stat = match watch {
                None => client.exists(&path).await?,
                Some(emitter) => {
                    let (stat, w) = client.exists_watch(&path).await?;
                    arm(w, emitter);
                    stat
                }
            };
            Ok(match stat {
                Some(stat) => Out::stat(&stat),
                None => Out::Null,
            })
        })
    }

    /// Resolves to the children's names; with `watch`, leaves a one-shot children watch.
    #[napi]
    pub fn get_children<'env>(
        &self,
        env: &'env Env,
        path: String,
        watch: Option<EmitFn<'_>>,
    ) -> napi::Result<Object<'env>> {
        let client = self.inner.clone();
        let watch = watch.map(Emitter::new).transpose()?;
        promise::spawn(env, async move {
            let children = match watch {
                None => client.get_children(&path).await?,
                Some(emitter) => {
                    let (children, w) = client.get_children_watch(&path).await?;
                    arm(w, emitter);
                    children
                }
            };
            Ok(Out::strings(children))
        })
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
        let client = self.inner.clone();
        let opts = DeleteOptions {
            version,
            guaranteed,
            recursive,
        };
        promise::spawn(env, async move {
            client.delete(&path, opts).await?;
            Ok(Out::Undefined)
        })
    }

    /// Requests sent so far, per operation (for tests and benchmarks).
    #[napi]
    pub fn request_counts(&self, env: Env) -> napi::Result<Object<'_>> {
        let c = self.inner.request_counts();
        let mut o = Object::new(&env)?;
        o.set("create", c.create as f64)?;
        o.set("delete", c.delete as f64)?;
        o.set("getData", c.get_data as f64)?;
        o.set("setData", c.set_data as f64)?;
        o.set("exists", c.exists as f64)?;
        o.set("getChildren", c.get_children as f64)?;
        Ok(o)
    }
}

/// Test-only entry points, in builds with the `testing` feature.
#[cfg(feature = "testing")]
#[napi]
impl NativeClient {
    /// Expires the session on the server (Curator's KillSession), for tests (builds with the
    /// `testing` feature only).
    #[napi]
    pub fn expire_session_for_testing<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let expire = zkrecipes_testing::expire_client_session(&self.inner);
        promise::spawn(env, async move {
            expire
                .await
                .map_err(|e| zkrecipes::Error::Timeout(e.into()))?;
            Ok(Out::Undefined)
        })
    }
}
