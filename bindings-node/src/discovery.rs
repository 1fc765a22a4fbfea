//! Service discovery (Curator's curator-x-discovery): `NativeServiceDiscovery`,
//! `NativeRegistration`, `NativeServiceCache` (events as `'event'` with
//! `{ kind, path, instance, old, error, resync }`), `NativeServiceProvider`, `NativeUriSpec`,
//! and the instance functions (`serviceInstanceNormalize`, `...ToJson`, `...FromJson`,
//! `...BuildUri`). Instances cross as plain objects; a payload crosses as its JSON text
//! (`payloadJson`), which `lib/discovery.js` parses and stringifies.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{BigInt, Buffer, Object};
use napi::Env;
use napi_derive::napi;
use zkrecipes::discovery::{
    DownInstancePolicy, InstanceKey, ProviderStrategy, Registration, ServiceCache,
    ServiceCacheEvent, ServiceCacheEventKind, ServiceDiscovery, ServiceInstance, ServiceProvider,
    ServiceType, UriSpec,
};

use crate::args;
use crate::boundary::{promise, promise_on, promise_timed, sync};
use crate::client::NativeClient;
use crate::error::{invalid, CoreResult};
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

/// The core's discovery words.
#[napi(object)]
pub struct DiscoveryVocabulary {
    pub service_types: Vec<String>,
    pub cache_event_kinds: Vec<String>,
    pub strategies: Vec<String>,
}

/// The core's lists of service types, service cache event kinds and provider strategies.
#[napi]
pub fn discovery_vocabulary(env: Env) -> napi::Result<DiscoveryVocabulary> {
    sync(&env, || {
        Ok(DiscoveryVocabulary {
            service_types: ServiceType::ALL
                .iter()
                .map(|t| t.name().to_string())
                .collect(),
            cache_event_kinds: ServiceCacheEventKind::ALL
                .iter()
                .map(|k| k.name().to_string())
                .collect(),
            strategies: ProviderStrategy::ALL
                .iter()
                .map(|s| s.name().to_string())
                .collect(),
        })
    })
}

/// An instance as `lib/discovery.js` hands it over (types checked there; an omitted field takes
/// the core's default: a random UUID id, now, DYNAMIC, enabled).
#[napi(object)]
pub struct InstanceIn {
    pub name: String,
    pub id: Option<String>,
    pub address: Option<String>,
    pub port: Option<f64>,
    pub ssl_port: Option<f64>,
    /// The payload's JSON text (`JSON.stringify`), or none.
    pub payload_json: Option<String>,
    pub payload_class: Option<String>,
    pub service_type: Option<String>,
    /// The URI spec's template.
    pub uri_spec: Option<String>,
    pub enabled: Option<bool>,
    /// Milliseconds since the epoch.
    #[napi(js_name = "registrationTimeUTC")]
    pub registration_time_utc: Option<f64>,
    /// The node's JSON an instance object was read from (`instance_out`'s `node`): the fields
    /// above replace its own, what they do not show (unknown fields, a payload's text) stays.
    pub node: Option<Buffer>,
    /// With `node`: the payload was not changed, the node's is kept (exact past 2^53).
    pub keep_payload: Option<bool>,
}

/// The core's instance of `i` (not validated: registering does that).
fn core_instance(i: InstanceIn) -> CoreResult<ServiceInstance> {
    let (mut out, keep_payload) = match &i.node {
        Some(node) => {
            let mut read = ServiceInstance::from_json(node).map_err(|e| {
                invalid(format!(
                    "the node text an instance was read from is not an instance: {}",
                    e.message()
                ))
            })?;
            // A field left out takes a new instance's default, as without a node (only what
            // the fields do not show comes from the node).
            let fresh = ServiceInstance::new(String::new());
            read.id = fresh.id;
            read.registration_time_utc = fresh.registration_time_utc;
            read.service_type = fresh.service_type;
            (read, i.keep_payload.unwrap_or(false))
        }
        None => (ServiceInstance::new(String::new()), false),
    };
    out.name = i.name;
    if let Some(id) = i.id {
        out.id = id;
    }
    out.address = i.address;
    out.port = i.port.map(|p| args::i32_value("port", p)).transpose()?;
    out.ssl_port = i
        .ssl_port
        .map(|p| args::i32_value("sslPort", p))
        .transpose()?;
    out.payload = match i.payload_json {
        None if keep_payload => out.payload.take(),
        None => None,
        Some(text) => {
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| invalid(format!("payload is not JSON: {e}")))?;
            (!v.is_null()).then_some(v)
        }
    };
    out.payload_class = i.payload_class;
    if let Some(t) = i.service_type {
        out.service_type = ServiceType::from_name(&t)
            .map_err(|e| invalid(format!("serviceType: {}", e.message())))?;
    }
    out.uri_spec = i
        .uri_spec
        .map(|t| UriSpec::new(&t))
        .transpose()
        .map_err(|e| invalid(format!("uriSpec: {}", e.message())))?;
    out.enabled = i.enabled.unwrap_or(true);
    if let Some(t) = i.registration_time_utc {
        if t.fract() != 0.0 || t.abs() > 9_007_199_254_740_991.0 {
            return Err(invalid(format!(
                "registrationTimeUTC must be a safe integer number of milliseconds, got {t}"
            )));
        }
        out.registration_time_utc = t as i64;
    }
    Ok(out)
}

/// An instance for JS: `{ name, id, address, port, sslPort, payloadJson, payloadClass,
/// registrationTimeUTC, serviceType, uriSpec, enabled }` (absent values as null), and `node`,
/// its full JSON, when it holds text read from a node that a write-back keeps.
fn instance_out(i: &ServiceInstance) -> Out {
    let text = |s: &Option<String>| s.clone().map_or(Out::Null, Out::Str);
    let port = |p: Option<i32>| p.map_or(Out::Null, |p| Out::Number(f64::from(p)));
    let mut fields = vec![
        ("name", Out::Str(i.name.clone())),
        ("id", Out::Str(i.id.clone())),
        ("address", text(&i.address)),
        ("port", port(i.port)),
        ("sslPort", port(i.ssl_port)),
        (
            "payloadJson",
            i.payload
                .as_ref()
                .map_or(Out::Null, |v| Out::Str(v.to_string())),
        ),
        ("payloadClass", text(&i.payload_class)),
        (
            "registrationTimeUTC",
            Out::Number(i.registration_time_utc as f64),
        ),
        ("serviceType", Out::Str(i.service_type.name().to_string())),
        (
            "uriSpec",
            i.uri_spec
                .as_ref()
                .map_or(Out::Null, |s| Out::Str(s.to_string())),
        ),
        ("enabled", Out::Bool(i.enabled)),
    ];
    if i.holds_read_text() || (i.read_from_node() && i.payload.as_ref().is_some_and(js_changes)) {
        fields.push(("node", Out::Bytes(i.to_json(false))));
    }
    Out::Object(fields)
}

/// Whether `JSON.stringify(JSON.parse(v))` writes a different value: a number JS holds as a
/// double rounds an integer past 2^53 and drops a whole double's `.0` (read back as an integer).
fn js_changes(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    const EXACT: u64 = 1 << 53;
    match v {
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => u > EXACT,
            (_, Some(i), _) => i.unsigned_abs() > EXACT,
            (_, _, Some(f)) => f.fract() == 0.0,
            _ => true,
        },
        Value::Array(items) => items.iter().any(js_changes),
        Value::Object(fields) => fields.values().any(js_changes),
        _ => false,
    }
}

fn instances_out<'a>(all: impl IntoIterator<Item = &'a ServiceInstance>) -> Out {
    Out::Array(all.into_iter().map(instance_out).collect())
}

/// The instance with defaults filled in, validated (what `ServiceInstance.create` returns).
#[napi]
pub fn service_instance_normalize(env: Env, instance: InstanceIn) -> napi::Result<Out> {
    sync(&env, || {
        let i = core_instance(instance)?;
        i.validate()?;
        Ok(instance_out(&i))
    })
}

/// The node's bytes: Curator's JSON (`enabled` only when not `compatible`).
#[napi]
pub fn service_instance_to_json(
    env: Env,
    instance: InstanceIn,
    compatible: bool,
) -> napi::Result<Out> {
    sync(&env, || {
        Ok(Out::Bytes(core_instance(instance)?.to_json(compatible)))
    })
}

/// Reads a node's bytes (ZKR_CORRUPTED_DATA saying what is wrong).
#[napi]
pub fn service_instance_from_json(env: Env, data: Buffer) -> napi::Result<Out> {
    sync(&env, || {
        Ok(instance_out(&ServiceInstance::from_json(&data)?))
    })
}

/// Renders the instance's URI spec (`''` without one).
#[napi]
pub fn service_instance_build_uri(
    env: Env,
    instance: InstanceIn,
    variables: Option<HashMap<String, String>>,
) -> napi::Result<String> {
    sync(&env, || {
        Ok(core_instance(instance)?.build_uri(&variables.unwrap_or_default()))
    })
}

/// Curator's UriSpec.
#[napi]
pub struct NativeUriSpec {
    inner: UriSpec,
}

#[napi]
impl NativeUriSpec {
    #[napi(constructor)]
    pub fn new(env: Env, template: String) -> napi::Result<Self> {
        sync(&env, || {
            let inner = UriSpec::new(&template)
                .map_err(|e| invalid(format!("template: {}", e.message())))?;
            Ok(NativeUriSpec { inner })
        })
    }

    /// The URI for `instance` (or none) with `variables` on top.
    #[napi]
    pub fn build(
        &self,
        env: Env,
        instance: Option<InstanceIn>,
        variables: Option<HashMap<String, String>>,
    ) -> napi::Result<String> {
        sync(&env, || {
            let i = instance.map(core_instance).transpose()?;
            Ok(self.inner.build(i.as_ref(), &variables.unwrap_or_default()))
        })
    }

    /// The template again.
    #[napi(getter)]
    pub fn template(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.to_string()))
    }
}

/// The native ServiceDiscovery.
#[napi]
pub struct NativeServiceDiscovery {
    inner: ServiceDiscovery,
}

#[napi]
impl NativeServiceDiscovery {
    #[napi(constructor)]
    pub fn new(env: Env, client: &NativeClient, base_path: String) -> napi::Result<Self> {
        sync(&env, || {
            Ok(NativeServiceDiscovery {
                inner: ServiceDiscovery::new(&client.inner, &base_path)?,
            })
        })
    }

    #[napi(getter)]
    pub fn base_path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.base_path().to_string()))
    }

    /// Resolves to a `NativeRegistration` once the node is on the server.
    #[napi]
    pub fn register<'env>(
        &self,
        env: &'env Env,
        instance: InstanceIn,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let i = core_instance(instance)?;
            let d = self.inner.clone();
            Ok(async move {
                Ok(NativeRegistration {
                    inner: d.register(i).await?,
                })
            })
        })
    }

    #[napi]
    pub fn query_for_names<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |d| async move {
            Ok(Out::strings(d.query_for_names().await?))
        })
    }

    #[napi]
    pub fn query_for_instances<'env>(
        &self,
        env: &'env Env,
        name: String,
    ) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |d| async move {
            Ok(instances_out(&d.query_for_instances(&name).await?))
        })
    }

    #[napi]
    pub fn query_for_instance<'env>(
        &self,
        env: &'env Env,
        name: String,
        id: String,
    ) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |d| async move {
            Ok(d.query_for_instance(&name, &id)
                .await?
                .as_ref()
                .map_or(Out::Null, instance_out))
        })
    }

    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |d| async move { d.close().await })
    }
}

/// The native Registration.
#[napi]
pub struct NativeRegistration {
    inner: Registration,
}

#[napi]
impl NativeRegistration {
    #[napi(getter)]
    pub fn instance(&self, env: Env) -> napi::Result<Out> {
        sync(&env, || Ok(instance_out(&self.inner.instance())))
    }

    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path()))
    }

    #[napi(getter)]
    pub fn registered(&self, env: Env) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.is_registered()))
    }

    #[napi]
    pub fn update(&self, env: Env, instance: InstanceIn) -> napi::Result<()> {
        sync(&env, || Ok(self.inner.update(core_instance(instance)?)?))
    }

    #[napi]
    pub fn set_enabled(&self, env: Env, enabled: bool) -> napi::Result<()> {
        sync(&env, || Ok(self.inner.set_enabled(enabled)?))
    }

    #[napi]
    pub fn wait_registered<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |r, t| async move {
            r.wait_registered(t).await
        })
    }

    #[napi]
    pub fn unregister<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |r| async move { r.unregister().await })
    }
}

/// `{ kind, path, instance, old, error: { code, message } | null, resync }`.
fn cache_event(e: &ServiceCacheEvent) -> Event {
    let inst = |i: &Option<Arc<ServiceInstance>>| i.as_deref().map_or(Out::Null, instance_out);
    let error = e.error.as_ref().map_or(Out::Null, |err| {
        Out::Object(vec![
            ("code", Out::Str(crate::error::code(err.kind()))),
            ("message", Out::Str(err.message().to_string())),
        ])
    });
    Event::new(
        "event",
        Out::Object(vec![
            ("kind", Out::Str(e.kind.name().to_string())),
            ("path", Out::Str(e.path.clone())),
            ("instance", inst(&e.instance)),
            ("old", inst(&e.old)),
            ("error", error),
            ("resync", Out::Bool(e.resync)),
        ]),
    )
}

/// The native ServiceCache; its events go to `emit('event', payload)`.
#[napi]
pub struct NativeServiceCache {
    inner: Arc<ServiceCache>,
}

#[napi]
impl NativeServiceCache {
    #[napi(constructor)]
    pub fn new(
        env: Env,
        discovery: &NativeServiceDiscovery,
        name: String,
        emit: EmitFn<'_>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let cache = ServiceCache::new(&discovery.inner, &name)?;
            let emitter = Emitter::new(emit)?;
            cache.listen(false, move |e| emitter.emit(cache_event(e)));
            Ok(NativeServiceCache {
                inner: Arc::new(cache),
            })
        })
    }

    /// Another listener (an async iterator's): `emit('event', payload)` for each event, with
    /// `replay` the cached instances first. Returns its id.
    #[napi]
    pub fn listen(&self, env: Env, replay: bool, emit: EmitFn<'_>) -> napi::Result<BigInt> {
        sync(&env, || {
            let emitter = Emitter::new(emit)?;
            let id = self
                .inner
                .listen(replay, move |e| emitter.emit(cache_event(e)));
            Ok(BigInt::from(id))
        })
    }

    #[napi]
    pub fn remove_listener(&self, env: Env, id: BigInt) -> napi::Result<bool> {
        sync(&env, || {
            let (_, id, _) = id.get_u64();
            Ok(self.inner.remove_listener(id)?)
        })
    }

    #[napi(getter)]
    pub fn name(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.name().to_string()))
    }

    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |c| async move { c.start().await })
    }

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

    #[napi]
    pub fn instances(&self, env: Env) -> napi::Result<Out> {
        sync(&env, || {
            Ok(instances_out(self.inner.instances().iter().map(|i| &**i)))
        })
    }

    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            self.inner.close();
            Ok(())
        })
    }
}

thread_local! {
    /// The instances a provider's JS filter accepted, for the core call in progress on this
    /// (the JS) thread: the core runs a provider's filter synchronously inside `get_instance`.
    static ACCEPTED: RefCell<Option<HashSet<InstanceKey>>> = const { RefCell::new(None) };
}

/// How `lib/discovery.js` builds a provider.
#[napi(object)]
pub struct ProviderOptions {
    /// `round_robin` (default), `random` or `sticky`.
    pub strategy: Option<String>,
    /// Whether a JS filter decides (then every pick passes the instances it accepted).
    pub has_filter: bool,
    /// Noted errors that make an instance down (default 2).
    pub down_error_threshold: Option<u32>,
    /// How long a down instance is left out, in milliseconds (default 30 s).
    pub down_timeout_ms: Option<f64>,
}

/// The native ServiceProvider.
#[napi]
pub struct NativeServiceProvider {
    inner: Arc<ServiceProvider>,
    closed: AtomicBool,
    /// What the last `cacheInstances` gave the JS filter: `accepted` indexes it.
    shown: Mutex<Vec<Arc<ServiceInstance>>>,
}

impl NativeServiceProvider {
    fn open(&self) -> CoreResult<&ServiceProvider> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(zkrecipes::Error::Closed(
                format!(
                    "the service provider of {:?} is closed",
                    self.inner.cache().name()
                )
                .into(),
            ));
        }
        Ok(&self.inner)
    }

    /// Runs `f` with the filter's accepted instances in place: `accepted` indexes what the
    /// last `cacheInstances` gave (`lib/discovery.js` calls both in one synchronous turn).
    fn with_accepted<T>(&self, accepted: Option<Vec<u32>>, f: impl FnOnce() -> T) -> CoreResult<T> {
        let keys = match accepted {
            None => None,
            Some(indexes) => {
                let shown = self.shown.lock().unwrap_or_else(|e| e.into_inner());
                let keys = indexes
                    .into_iter()
                    .map(|i| shown.get(i as usize).map(|instance| instance.key()))
                    .collect::<Option<HashSet<_>>>()
                    .ok_or_else(|| {
                        zkrecipes::Error::InvalidArgument(
                            "accepted: an index past the instances cacheInstances gave".into(),
                        )
                    })?;
                Some(keys)
            }
        };
        ACCEPTED.with(|a| *a.borrow_mut() = keys);
        let out = f();
        ACCEPTED.with(|a| a.borrow_mut().take());
        Ok(out)
    }
}

#[napi]
impl NativeServiceProvider {
    #[napi(constructor)]
    pub fn new(
        env: Env,
        discovery: &NativeServiceDiscovery,
        name: String,
        options: ProviderOptions,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let strategy = match &options.strategy {
                None => ProviderStrategy::RoundRobin,
                Some(s) => ProviderStrategy::from_name(s)
                    .map_err(|e| invalid(format!("strategy: {}", e.message())))?,
            };
            let mut policy = DownInstancePolicy::default();
            if let Some(n) = options.down_error_threshold {
                policy.error_threshold = n;
            }
            if let Some(ms) = options.down_timeout_ms {
                policy.timeout = args::duration("downTimeoutMs", ms)?;
            }
            let mut p = ServiceProvider::new(&discovery.inner, &name, strategy)?
                .with_down_instance_policy(policy);
            if options.has_filter {
                p = p.with_filter(|i: &ServiceInstance| {
                    ACCEPTED.with(|a| {
                        a.borrow()
                            .as_ref()
                            .is_some_and(|accepted| accepted.contains(&i.key()))
                    })
                });
            }
            Ok(NativeServiceProvider {
                inner: Arc::new(p),
                closed: AtomicBool::new(false),
                shown: Mutex::new(Vec::new()),
            })
        })
    }

    /// Starts the cache; resolves once it is loaded.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise(env, || {
            self.open()?;
            let p = self.inner.clone();
            Ok(async move { p.start().await })
        })
    }

    /// Every cached instance, usable or not (what a JS filter looks at).
    #[napi]
    pub fn cache_instances(&self, env: Env) -> napi::Result<Out> {
        sync(&env, || {
            let all = self.open()?.cache().instances();
            let out = instances_out(all.iter().map(|i| &**i));
            *self.shown.lock().unwrap_or_else(|e| e.into_inner()) = all;
            Ok(out)
        })
    }

    /// An instance, or null; `accepted`: the indexes (in the last `cacheInstances`) of the
    /// instances the JS filter accepted.
    #[napi]
    pub fn get_instance(&self, env: Env, accepted: Option<Vec<u32>>) -> napi::Result<Out> {
        sync(&env, || {
            let p = self.open()?;
            let picked = self.with_accepted(accepted, || p.get_instance())?;
            Ok(picked.as_deref().map_or(Out::Null, instance_out))
        })
    }

    /// Every usable instance; `accepted`: as for `get_instance`.
    #[napi]
    pub fn get_all_instances(&self, env: Env, accepted: Option<Vec<u32>>) -> napi::Result<Out> {
        sync(&env, || {
            let p = self.open()?;
            let all = self.with_accepted(accepted, || p.get_all_instances())?;
            Ok(instances_out(all.iter().map(|i| &**i)))
        })
    }

    #[napi]
    pub fn note_error(&self, env: Env, instance: InstanceIn) -> napi::Result<()> {
        sync(&env, || {
            let i = core_instance(instance)?;
            self.open()?.note_error(&i);
            Ok(())
        })
    }

    #[napi(getter)]
    pub fn name(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.cache().name().to_string()))
    }

    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            self.closed.store(true, Ordering::SeqCst);
            self.inner.close();
            Ok(())
        })
    }
}
