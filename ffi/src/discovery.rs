//! Service discovery (Curator's curator-x-discovery layout and JSON): `zkr_discovery`,
//! `zkr_registration`, `zkr_service_cache`, `zkr_service_provider`. Instances cross the boundary
//! as Curator's JSON text: given to `zkr_discovery_register` / `zkr_registration_update`, and
//! returned (with `enabled`) as strings you free with `zkr_string_free` or lists you free with
//! `zkr_string_list_free`.

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use zkrecipes::discovery::{
    ProviderStrategy, Registration, ServiceCache, ServiceCacheEvent, ServiceCacheEventKind,
    ServiceDiscovery, ServiceInstance, ServiceProvider,
};
use zkrecipes::{Error, ListenerId, Result};

use crate::boundary::{
    arg_opt_str, arg_str, arg_timeout, handle_call, handle_out, recipe_new, wait,
};
use crate::callback::{CCallback, CallbackType, Closing, Listeners, Listening};
use crate::client::zkr_client;
use crate::handle::{free_handle, handle, new_handle};
use crate::status::zkr_status;
use crate::types::{c_string, zkr_string_list};
use crate::vocab::{c_enum_of, CList};

/// An instance from Curator's JSON text; `name` is required. A missing or empty `id` and a
/// missing `registrationTimeUTC` come from `base` (an update keeps the registration's), or,
/// without one, are a random UUID and now (a register). The core validates it.
fn instance_arg(json: *const c_char, base: Option<&ServiceInstance>) -> Result<ServiceInstance> {
    let text = arg_str(json, "instance_json")?;
    let mut i = ServiceInstance::from_json(text.as_bytes())
        .map_err(|e| Error::InvalidArgument(format!("instance_json: {}", e.message()).into()))?;
    if i.name.is_empty() {
        return Err(Error::InvalidArgument(
            "instance_json: \"name\" is required".into(),
        ));
    }
    let fresh;
    let base = match base {
        Some(base) => base,
        None => {
            fresh = ServiceInstance::new(i.name.clone());
            &fresh
        }
    };
    if i.id.is_empty() {
        i.id = base.id.clone();
    }
    if i.registration_time_utc == 0 {
        i.registration_time_utc = base.registration_time_utc;
    }
    Ok(i)
}

fn json_of(i: &ServiceInstance) -> Result<*mut c_char> {
    c_string(&String::from_utf8_lossy(&i.to_json(false)))
}

fn json_list(all: &[Arc<ServiceInstance>]) -> Result<*mut zkr_string_list> {
    zkr_string_list::from_vec(
        all.iter()
            .map(|i| String::from_utf8_lossy(&i.to_json(false)).into_owned())
            .collect(),
    )
}

/// Service discovery under a base path (Curator's ServiceDiscovery). Thread-safe. Made by
/// zkr_discovery_new, freed by zkr_discovery_free (which closes it).
pub struct zkr_discovery {
    discovery: ServiceDiscovery,
}

handle!(zkr_discovery, "service discovery", |d| {
    let _ = d.discovery.close_blocking();
});

/// One registered instance. Freeing the handle does not unregister it (the discovery keeps it
/// until zkr_registration_unregister or zkr_discovery_close).
pub struct zkr_registration {
    registration: Registration,
}

handle!(zkr_registration, "service registration");

/// Makes a discovery under `base_path` (nothing is written before a registration). Free with
/// zkr_discovery_free.
#[no_mangle]
pub extern "C" fn zkr_discovery_new(
    c: *mut zkr_client,
    base_path: *const c_char,
    out: *mut *mut zkr_discovery,
) -> zkr_status {
    recipe_new("zkr_discovery_new", c, base_path, out, |c, p| {
        Ok(zkr_discovery {
            discovery: ServiceDiscovery::new(c, p)?,
        })
    })
}

/// Whether every node written carries the `enabled` field (Curator's non-compatible mode);
/// default false. A disabled instance carries `"enabled":false` either way.
#[no_mangle]
pub extern "C" fn zkr_discovery_set_write_enabled(d: *mut zkr_discovery, yes: bool) -> zkr_status {
    handle_call("zkr_discovery_set_write_enabled", d, |d| {
        d.discovery.set_write_enabled(yes);
        Ok(())
    })
}

/// Registers an instance given as Curator's JSON (`{"name":"orders","address":"10.0.0.7",
/// "port":8080}`; `id` defaults to a random UUID, `serviceType` to DYNAMIC) and returns once its
/// node is on the server: `*out` (free with zkr_registration_free). ZKR_CONFLICT if another live
/// session holds the id (its node is untouched); ZKR_INVALID_ARGUMENT for JSON that is not an
/// instance. An id registered already is updated, unless its registration ended in a conflict:
/// then it is registered afresh. A register that fails leaves no node behind.
#[no_mangle]
pub extern "C" fn zkr_discovery_register(
    d: *mut zkr_discovery,
    instance_json: *const c_char,
    out: *mut *mut zkr_registration,
) -> zkr_status {
    handle_out("zkr_discovery_register", d, out, "out", |d| {
        let instance = instance_arg(instance_json, None)?;
        let registration = wait(d.discovery.register(instance))?;
        Ok(new_handle(zkr_registration { registration }))
    })
}

/// The service names under the base path, sorted (free with zkr_string_list_free).
#[no_mangle]
pub extern "C" fn zkr_discovery_query_for_names(
    d: *mut zkr_discovery,
    names: *mut *mut zkr_string_list,
) -> zkr_status {
    handle_out("zkr_discovery_query_for_names", d, names, "names", |d| {
        zkr_string_list::from_vec(wait(d.discovery.query_for_names())?)
    })
}

/// The instances of service `name` as Curator's JSON, one string each, sorted by node name
/// (free with zkr_string_list_free). Nodes that do not decode are left out.
#[no_mangle]
pub extern "C" fn zkr_discovery_query_for_instances(
    d: *mut zkr_discovery,
    name: *const c_char,
    instances: *mut *mut zkr_string_list,
) -> zkr_status {
    let f = "zkr_discovery_query_for_instances";
    handle_out(f, d, instances, "instances", |d| {
        let all = wait(d.discovery.query_for_instances(arg_str(name, "name")?))?;
        let all: Vec<_> = all.into_iter().map(Arc::new).collect();
        json_list(&all)
    })
}

/// The instance `name`/`id` as Curator's JSON in `*json` (free with zkr_string_free), or NULL
/// if there is none. ZKR_CORRUPTED_DATA if its node does not decode.
#[no_mangle]
pub extern "C" fn zkr_discovery_query_for_instance(
    d: *mut zkr_discovery,
    name: *const c_char,
    id: *const c_char,
    json: *mut *mut c_char,
) -> zkr_status {
    handle_out("zkr_discovery_query_for_instance", d, json, "json", |d| {
        let (name, id) = (arg_str(name, "name")?, arg_str(id, "id")?);
        match wait(d.discovery.query_for_instance(name, id))? {
            Some(i) => json_of(&i),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// Unregisters every instance of this discovery but the PERMANENT ones, all at once. Idempotent;
/// later calls return ZKR_CLOSED. Returns the first error an unregister met (ZKR_CONNECTION_LOSS:
/// the deletes go on in the background, see zkr_registration_unregister).
#[no_mangle]
pub extern "C" fn zkr_discovery_close(d: *mut zkr_discovery) -> zkr_status {
    handle_call("zkr_discovery_close", d, |d| wait(d.discovery.close()))
}

/// Closes (see zkr_discovery_close) and frees a discovery. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_discovery_free(d: *mut zkr_discovery) {
    free_handle("zkr_discovery_free", d)
}

/// The registered instance (its last update) as Curator's JSON (free with zkr_string_free).
#[no_mangle]
pub extern "C" fn zkr_registration_instance(
    r: *const zkr_registration,
    json: *mut *mut c_char,
) -> zkr_status {
    handle_out("zkr_registration_instance", r, json, "json", |r| {
        json_of(&r.registration.instance())
    })
}

/// The node's path, with the sequence number of a DYNAMIC_SEQUENTIAL instance (free with
/// zkr_string_free).
#[no_mangle]
pub extern "C" fn zkr_registration_path(
    r: *const zkr_registration,
    path: *mut *mut c_char,
) -> zkr_status {
    handle_out("zkr_registration_path", r, path, "path", |r| {
        c_string(&r.registration.path())
    })
}

/// Replaces the registered instance (same name, id and service type; ZKR_INVALID_ARGUMENT
/// otherwise): written now when connected, else at the next reconnection. A JSON without
/// `registrationTimeUTC` keeps the registration's time, and one without `id` its id (as a
/// Python or Node update made from the registration's own instance does). ZKR_CLOSED once
/// unregistered; ZKR_CONFLICT once the registration ended in a conflict (register it again).
#[no_mangle]
pub extern "C" fn zkr_registration_update(
    r: *mut zkr_registration,
    instance_json: *const c_char,
) -> zkr_status {
    handle_call("zkr_registration_update", r, |r| {
        let current = r.registration.instance();
        r.registration
            .update(instance_arg(instance_json, Some(&current))?)
    })
}

/// Enables or disables the instance (a disabled one is never picked by a provider).
#[no_mangle]
pub extern "C" fn zkr_registration_set_enabled(
    r: *mut zkr_registration,
    enabled: bool,
) -> zkr_status {
    handle_call("zkr_registration_set_enabled", r, |r| {
        r.registration.set_enabled(enabled)
    })
}

/// Deletes the instance's node (ours only; a PERMANENT one too, even after zkr_discovery_close
/// left it) and stops keeping it; calling it again is ZKR_OK. The delete is guaranteed: without a
/// connection within the retry policy it returns ZKR_CONNECTION_LOSS and goes on in the
/// background until it succeeds, the node is gone or no longer ours, or the client closes.
#[no_mangle]
pub extern "C" fn zkr_registration_unregister(r: *mut zkr_registration) -> zkr_status {
    handle_call("zkr_registration_unregister", r, |r| {
        wait(r.registration.unregister())
    })
}

/// Frees the handle (the registration stays, kept by its discovery). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_registration_free(r: *mut zkr_registration) {
    free_handle("zkr_registration_free", r)
}

/// What a service cache event says (the core's ServiceCacheEventKind, in order).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zkr_service_cache_event_type {
    /// An instance appeared.
    ZKR_SERVICE_ADDED = 1,
    /// An instance's node changed.
    ZKR_SERVICE_UPDATED = 2,
    /// An instance went away.
    ZKR_SERVICE_REMOVED = 3,
    /// A node under the service does not decode (`error` says why).
    ZKR_SERVICE_INVALID = 4,
    /// The initial load is complete (once).
    ZKR_SERVICE_INITIALIZED = 5,
}

c_enum_of! { zkr_service_cache_event_type, SERVICE_EVENTS: ServiceCacheEventKind from 1 as "ZKR_SERVICE_", [
    ZKR_SERVICE_ADDED, ZKR_SERVICE_UPDATED, ZKR_SERVICE_REMOVED, ZKR_SERVICE_INVALID, ZKR_SERVICE_INITIALIZED,
] }

/// A service cache event, valid only during the callback (copy what you keep).
#[repr(C)]
pub struct zkr_service_cache_event {
    /// What happened.
    pub r#type: zkr_service_cache_event_type,
    /// The node's path.
    pub path: *const c_char,
    /// The instance as Curator's JSON (after, for ADDED and UPDATED; as last known, for
    /// REMOVED), else NULL.
    pub instance_json: *const c_char,
    /// The instance before (UPDATED), else NULL.
    pub old_json: *const c_char,
    /// Why the node does not decode (INVALID), else NULL.
    pub error: *const c_char,
    /// Found by a resync after a reconnect or a new session.
    pub resync: bool,
}

/// A service cache listener: called with each event (borrowed, valid during the call), on a
/// library thread, one call at a time, in event order.
pub type zkr_service_cache_callback =
    Option<unsafe extern "C" fn(event: *const zkr_service_cache_event, user_data: *mut c_void)>;

type ServiceCacheFn = <zkr_service_cache_callback as CallbackType>::Fn;

/// The instances of one service, kept by one watch (Curator's ServiceCache). Thread-safe.
pub struct zkr_service_cache {
    cache: ServiceCache,
    listeners: Listeners<zkr_service_cache_callback>,
}

handle!(zkr_service_cache, "service cache", |c| {
    c.close();
});

impl zkr_service_cache {
    /// The core cache first: its close is what ends a wait (zkr_service_cache_await_*) with
    /// ZKR_CLOSED, and a listener may be blocked in one. Only then wait for the running listener
    /// (unregister_all): the other way round, each waited for the other forever.
    fn close(&self) {
        self.cache.close();
        self.unregister_all();
    }
}

impl Listening for zkr_service_cache {
    type Callback = zkr_service_cache_callback;

    fn listeners(&self) -> &Listeners<zkr_service_cache_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<ServiceCacheFn>>) -> Result<ListenerId> {
        Ok(self.cache.listen(false, move |e: &ServiceCacheEvent| {
            let text = |i: &Option<Arc<ServiceInstance>>| {
                i.as_ref().and_then(|i| CString::new(i.to_json(false)).ok())
            };
            let (instance, old) = (text(&e.instance), text(&e.old));
            let error = e
                .error
                .as_ref()
                .and_then(|e| CString::new(e.message()).ok());
            let Ok(path) = CString::new(e.path.as_str()) else {
                return;
            };
            let ptr = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
            let view = zkr_service_cache_event {
                r#type: zkr_service_cache_event_type::of(e.kind),
                path: path.as_ptr(),
                instance_json: ptr(&instance),
                old_json: ptr(&old),
                error: ptr(&error),
                resync: e.resync,
            };
            cb.call((&view as *const zkr_service_cache_event,));
        }))
    }

    fn unregister(&self, id: ListenerId) -> Result<bool> {
        self.cache.remove_listener(id)
    }
}

impl Closing for zkr_service_cache {
    fn close_handle(&self) -> Result<()> {
        self.close();
        Ok(())
    }
}

/// Makes a cache of service `name` of `d` (not started). Free with zkr_service_cache_free.
#[no_mangle]
pub extern "C" fn zkr_service_cache_new(
    d: *mut zkr_discovery,
    name: *const c_char,
    out: *mut *mut zkr_service_cache,
) -> zkr_status {
    handle_out("zkr_service_cache_new", d, out, "out", |d| {
        Ok(new_handle(zkr_service_cache {
            cache: ServiceCache::new(&d.discovery, arg_str(name, "name")?)?,
            listeners: Listeners::default(),
        }))
    })
}

/// Starts watching (the listeners added before hear the initial load).
#[no_mangle]
pub extern "C" fn zkr_service_cache_start(c: *mut zkr_service_cache) -> zkr_status {
    handle_call("zkr_service_cache_start", c, |c| wait(c.cache.start()))
}

/// Waits until the initial load is complete (`*initialized` true) or `timeout_ms` passes.
#[no_mangle]
pub extern "C" fn zkr_service_cache_await_initialized(
    c: *mut zkr_service_cache,
    timeout_ms: i64,
    initialized: *mut bool,
) -> zkr_status {
    let f = "zkr_service_cache_await_initialized";
    handle_out(f, c, initialized, "initialized", |c| {
        wait(c.cache.await_initialized(arg_timeout(timeout_ms)?))
    })
}

/// Read-your-writes: waits until the cache has applied every change up to `zxid`.
#[no_mangle]
pub extern "C" fn zkr_service_cache_await_zxid(
    c: *mut zkr_service_cache,
    zxid: i64,
    timeout_ms: i64,
    reached: *mut bool,
) -> zkr_status {
    let f = "zkr_service_cache_await_zxid";
    handle_out(f, c, reached, "reached", |c| {
        wait(c.cache.await_zxid(zxid, arg_timeout(timeout_ms)?))
    })
}

/// The cached instances now as Curator's JSON, sorted by node name (free with
/// zkr_string_list_free). No server call.
#[no_mangle]
pub extern "C" fn zkr_service_cache_instances(
    c: *const zkr_service_cache,
    instances: *mut *mut zkr_string_list,
) -> zkr_status {
    handle_out(
        "zkr_service_cache_instances",
        c,
        instances,
        "instances",
        |c| json_list(&c.cache.instances()),
    )
}

/// Picks instances of one service (Curator's ServiceProvider): never a disabled one, nor one
/// noted down. Thread-safe.
pub struct zkr_service_provider {
    provider: ServiceProvider,
}

handle!(zkr_service_provider, "service provider", |p| {
    p.provider.close();
});

/// Makes a provider of service `name` with `strategy` ("round_robin", "random", "sticky"; NULL:
/// round robin). Free with zkr_service_provider_free.
#[no_mangle]
pub extern "C" fn zkr_service_provider_new(
    d: *mut zkr_discovery,
    name: *const c_char,
    strategy: *const c_char,
    out: *mut *mut zkr_service_provider,
) -> zkr_status {
    handle_out("zkr_service_provider_new", d, out, "out", |d| {
        let strategy = match arg_opt_str(strategy, "strategy")? {
            None => ProviderStrategy::RoundRobin,
            Some(s) => ProviderStrategy::from_name(s)?,
        };
        Ok(new_handle(zkr_service_provider {
            provider: ServiceProvider::new(&d.discovery, arg_str(name, "name")?, strategy)?,
        }))
    })
}

/// Starts the provider's cache and waits for its initial load.
#[no_mangle]
pub extern "C" fn zkr_service_provider_start(p: *mut zkr_service_provider) -> zkr_status {
    handle_call("zkr_service_provider_start", p, |p| {
        wait(p.provider.start())
    })
}

/// An instance by the strategy as Curator's JSON in `*json` (free with zkr_string_free), or
/// NULL when none is usable. No server call.
#[no_mangle]
pub extern "C" fn zkr_service_provider_get_instance(
    p: *const zkr_service_provider,
    json: *mut *mut c_char,
) -> zkr_status {
    handle_out(
        "zkr_service_provider_get_instance",
        p,
        json,
        "json",
        |p| match p.provider.get_instance() {
            Some(i) => json_of(&i),
            None => Ok(std::ptr::null_mut()),
        },
    )
}

/// Every usable instance (enabled, not down) as Curator's JSON, sorted by id (free with
/// zkr_string_list_free).
#[no_mangle]
pub extern "C" fn zkr_service_provider_get_all_instances(
    p: *const zkr_service_provider,
    instances: *mut *mut zkr_string_list,
) -> zkr_status {
    let f = "zkr_service_provider_get_all_instances";
    handle_out(f, p, instances, "instances", |p| {
        json_list(&p.provider.get_all_instances())
    })
}

/// Notes an error with the instance whose id is `instance_id` (Curator's noteError: after 2
/// within 30 s it is left out for the rest of those 30 s).
#[no_mangle]
pub extern "C" fn zkr_service_provider_note_error(
    p: *mut zkr_service_provider,
    instance_id: *const c_char,
) -> zkr_status {
    handle_call("zkr_service_provider_note_error", p, |p| {
        p.provider
            .note_error_id(arg_str(instance_id, "instance_id")?);
        Ok(())
    })
}

/// Frees a provider (closing it). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_service_provider_free(p: *mut zkr_service_provider) {
    free_handle("zkr_service_provider_free", p)
}
