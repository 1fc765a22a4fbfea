//! `NativeClient`: the core's Client (Curator's CuratorFramework) for `lib/client.js`'s `Client`.

use std::future::Future;
use std::sync::Mutex;

use napi::bindgen_prelude::{BigInt, Buffer, Either, FnArgs, Function, Object};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use zkrecipes::client::Watch;
use zkrecipes::{
    Acl, AclProvider, Client, ClientBuilder, ConnectionState, CreateMode, CreateOptions,
    DeleteOptions, ListenerId, Pem, Permission, RetryPolicy, SaslOptions, TlsOptions,
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

/// TLS options: each PEM a string (a path, or PEM text by the core's rule, `Pem::from_arg`) or
/// a Buffer (always PEM text).
#[napi(object)]
pub struct TlsOptionsJs {
    /// The CA that signs the servers' certificates (default: the system's trust store).
    pub ca: Option<Either<String, Buffer>>,
    /// The client certificate.
    pub cert: Option<Either<String, Buffer>>,
    /// The client certificate's private key.
    pub key: Option<Either<String, Buffer>>,
    /// Whether the server's certificate must name its host (default true).
    pub verify_hostname: Option<bool>,
    /// Whether every host speaks TLS (default true; false: only `tcp+tls://` hosts).
    pub every_host: Option<bool>,
}

/// SASL options.
#[napi(object)]
pub struct SaslOptionsJs {
    /// `DIGEST-MD5` (the default).
    pub mechanism: Option<String>,
    /// The user.
    pub username: String,
    /// The password.
    pub password: String,
}

/// One path rule of an ACL provider: `acl` for `prefix` and below.
#[napi(object)]
pub struct AclRule {
    /// The server-side path the rule covers (itself and its descendants).
    pub prefix: String,
    /// Its ACL.
    pub acl: Vec<AclOptions>,
}

/// What `lib/client.js`'s wrapper of a user's `aclProvider` function answers: the ACL (or
/// none: the rules and the default apply), or the message of what the function threw.
#[napi(object)]
pub struct AclAnswer {
    /// The chosen ACL.
    pub acl: Option<Vec<AclOptions>>,
    /// What the function threw.
    pub error: Option<String>,
}

/// The JS side of an ACL provider function: `(path) => AclAnswer`.
pub type AclProviderFn<'a> = Function<'a, FnArgs<(String,)>, AclAnswer>;

type AclTsfn = ThreadsafeFunction<String, AclAnswer, FnArgs<(String,)>, Status, false, true>;

/// How long a create waits for the JS thread to answer its ACL provider function.
const ACL_PROVIDER_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The core's provider function, asking `tsfn` on the JS thread and waiting for the answer
/// (the core calls it on its runtime, never on the JS thread, which no native method blocks).
fn ask_js(tsfn: &AclTsfn, path: &str) -> CoreResult<Option<Vec<Acl>>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let status = tsfn.call_with_return_value(
        path.to_string(),
        ThreadsafeFunctionCallMode::NonBlocking,
        move |answer, _env| {
            let _ = tx.send(answer.map_err(|e| e.reason.clone()));
            Ok(())
        },
    );
    let failed = |why: String| {
        zkrecipes::Error::InvalidArgument(format!("aclProvider({path:?}): {why}").into())
    };
    if status != Status::Ok {
        return Err(failed(format!(
            "cannot call the function ({status}): is the environment exiting?"
        )));
    }
    let answer = match rx.recv_timeout(ACL_PROVIDER_WAIT) {
        Ok(a) => a.map_err(failed)?,
        Err(_) => {
            return Err(failed(format!(
                "no answer from the JS thread within {ACL_PROVIDER_WAIT:?}"
            )))
        }
    };
    if let Some(e) = answer.error {
        return Err(failed(e));
    }
    answer.acl.map(acl_list).transpose()
}

pub(crate) fn acl_list(entries: Vec<AclOptions>) -> CoreResult<Vec<Acl>> {
    entries
        .into_iter()
        .map(|e| Ok(Acl::new(Permission::from_bits(e.perms)?, &e.scheme, &e.id)))
        .collect()
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
    /// TLS.
    pub tls: Option<TlsOptionsJs>,
    /// SASL.
    pub sasl: Option<SaslOptionsJs>,
    /// The path rules of the ACL provider (`aclProvider` given as an object).
    pub acl_rules: Option<Vec<AclRule>>,
    /// The largest request the client sends, in bytes (default 0xfffff).
    pub max_request_bytes: Option<f64>,
    /// Follow the ensemble's configuration (Curator's EnsembleTracker).
    pub track_ensemble: Option<bool>,
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

/// A PEM option: a string is a path or PEM text by the core's rule (`Pem::from_arg`); a Buffer
/// is always PEM text. Errors never show the value (it may be a private key).
fn pem(what: &str, v: Either<String, Buffer>) -> CoreResult<Pem> {
    match v {
        Either::A(s) => Ok(Pem::from_arg(s)),
        Either::B(bytes) => String::from_utf8(bytes.to_vec())
            .map(Pem::text)
            .map_err(|_| invalid(format!("{what}: a PEM Buffer must be UTF-8 text"))),
    }
}

fn builder(hosts: String, o: ConnectOptions, acl_fn: Option<AclTsfn>) -> CoreResult<ClientBuilder> {
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
    if let Some(track) = o.track_ensemble {
        b = b.track_ensemble(track);
    }
    if let Some(n) = o.max_request_bytes {
        if !(n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64) {
            return Err(invalid(format!(
                "maxRequestBytes is {n}: expected a whole number of bytes"
            )));
        }
        b = b.max_request_bytes(n as usize);
    }
    for a in o.auth.unwrap_or_default() {
        b = b.auth(a.scheme, a.credentials.to_vec());
    }
    let default = match o.acl {
        Some(acl) => acl_list(acl)?,
        None => Acl::open(),
    };
    let mut provider = AclProvider::new(default);
    for rule in o.acl_rules.unwrap_or_default() {
        provider = provider.with_path(rule.prefix, acl_list(rule.acl)?);
    }
    if let Some(tsfn) = acl_fn {
        // The runtime waits on the JS thread's answer: no turns on it.
        let waits = crate::driving::WaitsOnJs::new();
        provider = provider.with_fn(move |path| {
            let _ = &waits;
            ask_js(&tsfn, path)
        });
    }
    b = b.acl_provider(provider);
    if let Some(t) = o.tls {
        let mut tls = TlsOptions::new()
            .verify_hostname(t.verify_hostname.unwrap_or(true))
            .every_host(t.every_host.unwrap_or(true));
        if let Some(ca) = t.ca {
            tls = tls.ca(pem("tls.ca", ca)?);
        }
        if let Some(cert) = t.cert {
            tls = tls.cert(pem("tls.cert", cert)?);
        }
        if let Some(key) = t.key {
            tls = tls.key(pem("tls.key", key)?);
        }
        b = b.tls(tls);
    }
    if let Some(s) = o.sasl {
        let mechanism = s.mechanism.as_deref().unwrap_or("DIGEST-MD5");
        b = b.sasl(SaslOptions::new(mechanism, s.username, s.password)?);
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
        acl_provider: Option<AclProviderFn<'_>>,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let acl_fn = match acl_provider {
                Some(f) => Some(
                    f.build_threadsafe_function::<String>()
                        .weak::<true>()
                        .callee_handled::<false>()
                        .build_callback(|ctx| Ok(FnArgs::from((ctx.value,))))?,
                ),
                None => None,
            };
            let b = builder(hosts, options, acl_fn)?;
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

    /// Resolves to `{ acl: [{ perms, scheme, id }], stat }`.
    #[napi]
    pub fn get_acl<'env>(&self, env: &'env Env, path: String) -> napi::Result<Object<'env>> {
        promise(env, || {
            let client = self.inner.clone();
            Ok(async move {
                let (acl, stat) = client.get_acl(&path).await?;
                Ok(Out::Object(vec![
                    (
                        "acl",
                        Out::Array(
                            acl.into_iter()
                                .map(|a| {
                                    Out::Object(vec![
                                        ("perms", Out::Number(a.perms.bits() as f64)),
                                        ("scheme", Out::Str(a.scheme)),
                                        ("id", Out::Str(a.id)),
                                    ])
                                })
                                .collect(),
                        ),
                    ),
                    ("stat", Out::stat(&stat)),
                ]))
            })
        })
    }

    /// Replaces the ACL (at ACL `version` if given); resolves to the new stat.
    #[napi]
    pub fn set_acl<'env>(
        &self,
        env: &'env Env,
        path: String,
        acl: Vec<AclOptions>,
        version: Option<i32>,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let acl = acl_list(acl)?;
            let version = match version {
                None | Some(-1) => None,
                v => v,
            };
            let client = self.inner.clone();
            Ok(async move { Ok(Out::stat(&client.set_acl(&path, &acl, version).await?)) })
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
