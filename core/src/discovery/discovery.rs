//! [`ServiceDiscovery`]: Curator's `ServiceDiscovery` — register instances at
//! `basePath/serviceName/instanceId` and query them — with each registration kept by a
//! [`PersistentNode`], so it survives everything a session goes through without Curator's
//! flaps: a connection blip with the session intact deletes and re-creates nothing
//! (Curator deletes and re-creates every instance on every reconnect, CURATOR-320); after a
//! session expiry each instance is back exactly once; another live session's node with the same
//! id is never deleted (`Conflict`); `unregister` is idempotent and its delete is guaranteed:
//! when it cannot be done for want of a connection, it goes on in the background after the
//! reconnect (CURATOR-617).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::instance::{ServiceInstance, ServiceType};
use crate::client::OrNone;
use crate::dispatch::ListenerId;
use crate::nodes::{PersistentNode, PersistentNodeEvent};
use crate::{path, runtime, Client, Error, Result};

/// Curator's `ServiceDiscovery` over `base_path` (see the module notes). Cheap to clone.
#[derive(Clone)]
pub struct ServiceDiscovery {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    base: String,
    write_enabled: AtomicBool,
    closed: AtomicBool,
    /// Live registrations by (name, id).
    registrations: Mutex<HashMap<Key, Registration>>,
    /// One register at a time per (name, id): two at once would each start a node keeper on
    /// the same path, and the one left out of `registrations` would make the node again
    /// after unregister or close. Entries go when their last register ends.
    registering: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>,
    /// The caches made on this discovery (a [`ServiceProvider`](super::ServiceProvider)'s
    /// included), closed with it as Curator's `close` does. Weak: a cache dropped first is
    /// stopped already.
    caches: Mutex<Vec<Weak<crate::cache::Cache>>>,
}

/// A registration's (name, id).
type Key = (String, String);

/// A register's place in its key's line (`Inner::registering`). Dropped as the register ends,
/// returned or cancelled: the key's entry goes with the last register of that key.
struct Turn<'a> {
    map: &'a Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>,
    key: Key,
    mutex: Arc<tokio::sync::Mutex<()>>,
}

impl<'a> Turn<'a> {
    fn take(map: &'a Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>, key: Key) -> Turn<'a> {
        let mutex = map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key.clone())
            .or_default()
            .clone();
        Turn { map, key, mutex }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        // The map's and ours: no other register of this key waits.
        if Arc::strong_count(&self.mutex) == 2 {
            map.remove(&self.key);
        }
    }
}

impl std::fmt::Debug for ServiceDiscovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceDiscovery")
            .field("base_path", &self.inner.base)
            .finish()
    }
}

impl ServiceDiscovery {
    /// Discovery under `base_path` (Curator's `ServiceDiscoveryBuilder.basePath`). Nothing is
    /// written before a registration.
    ///
    /// Errors: `InvalidArgument` for a bad path; `Closed` on a closed client.
    pub fn new(client: &Client, base_path: &str) -> Result<ServiceDiscovery> {
        client.ensure_open_for("ServiceDiscovery", base_path)?;
        path::validate_path(base_path)?;
        Ok(ServiceDiscovery {
            inner: Arc::new(Inner {
                client: client.clone(),
                base: base_path.to_string(),
                write_enabled: AtomicBool::new(false),
                closed: AtomicBool::new(false),
                registrations: Mutex::new(HashMap::new()),
                registering: Mutex::new(HashMap::new()),
                caches: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Whether every node written carries the `enabled` field (Curator's
    /// `JsonInstanceSerializer(..., compatibleSerializationMode = false)`). Default false, as
    /// Curator's default: readers older than CURATOR-275 fail on the field. A disabled instance
    /// carries `"enabled":false` either way, so [`Registration::set_enabled`] always takes
    /// effect.
    pub fn set_write_enabled(&self, yes: bool) {
        self.inner.write_enabled.store(yes, Ordering::Relaxed);
    }

    /// The base path.
    pub fn base_path(&self) -> &str {
        &self.inner.base
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// `base/name`: the parent of a service's instances.
    pub fn path_for_name(&self, name: &str) -> String {
        path::join(&self.inner.base, name)
    }

    /// `base/name/id`.
    pub fn path_for_instance(&self, name: &str, id: &str) -> String {
        path::join(&self.path_for_name(name), id)
    }

    /// `Closed` once closed (or the client is).
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(Error::Closed(
                format!("service discovery {} is closed", self.inner.base).into(),
            ));
        }
        self.inner
            .client
            .ensure_open_for("service discovery call", &self.inner.base)
    }

    /// Keeps `cache` to close with this discovery; `Closed` once closed (the cache is then
    /// not kept, and its maker drops it).
    pub(crate) fn track_cache(&self, cache: &Arc<crate::cache::Cache>) -> Result<()> {
        let mut caches = self.inner.caches.lock().unwrap_or_else(|e| e.into_inner());
        // Under the list's lock: close marks itself closed before it takes the lock to empty
        // the list, so either close finds this cache there, or this sees close.
        self.check_open()?;
        caches.retain(|c| c.strong_count() > 0);
        caches.push(Arc::downgrade(cache));
        Ok(())
    }

    pub(crate) fn json(&self, instance: &ServiceInstance) -> Vec<u8> {
        let compatible = !self.inner.write_enabled.load(Ordering::Relaxed) && instance.enabled;
        instance.to_json(compatible)
    }

    /// Registers `instance` (Curator's `registerService`) and returns once its node is on the
    /// server: `base/name/id` (`id` + a 10-digit sequence number for DYNAMIC_SEQUENTIAL),
    /// ephemeral for the DYNAMIC types, persistent for STATIC and PERMANENT, parents as
    /// containers. Registering an id this discovery already registered updates it (and returns
    /// the same registration), unless that registration ended in a conflict (its CONFLICT
    /// event): the instance is then registered afresh, as a new registration (the old one is
    /// over: `Closed`).
    ///
    /// Errors: `Conflict` when another live session (or a persistent node, for a DYNAMIC
    /// instance) holds the path: it is left untouched; `Timeout` if the node could not be made
    /// within the client's connection timeout; `InvalidArgument` for a bad name or id; `Closed`.
    /// A register that fails leaves no node behind (a PERMANENT one included: only a
    /// registration that succeeded outlives [`close`](Self::close)).
    pub async fn register(&self, instance: ServiceInstance) -> Result<Registration> {
        self.check_open()?;
        instance.validate()?;
        let key = (instance.name.clone(), instance.id.clone());
        let turn = Turn::take(&self.inner.registering, key.clone());
        let _turn = turn.mutex.lock().await;
        self.register_in_turn(instance, key).await
    }

    /// [`register`](Self::register), the only one of its (name, id) running.
    async fn register_in_turn(
        &self,
        instance: ServiceInstance,
        key: (String, String),
    ) -> Result<Registration> {
        self.check_open()?;
        // One unregistered already (its unregister ran before this turn) is over.
        let existing = self
            .registration(&key)
            .filter(|r| !r.inner.unregistered.load(Ordering::SeqCst));
        if let Some(r) = existing {
            match r.inner.node.conflict() {
                None => {
                    r.update(instance)?;
                    return Ok(r);
                }
                Some(e) => {
                    // It stopped on another session's node and never writes again: it is over.
                    // Register afresh (`Conflict` again while that node is there).
                    tracing::info!(path = %r.path(), error = %e, "registering again an instance whose registration ended in a conflict");
                    self.forget(&key, &r);
                    let _ = r.stop().await;
                }
            }
        }
        let path = self.path_for_instance(&instance.name, &instance.id);
        let ty = instance.service_type;
        // Deleted on close until registered, whatever the type: a register that fails (or
        // that close overtakes) must not leave a node nobody owns. A PERMANENT registration
        // is kept on close only once it is in `registrations` (below).
        let node = PersistentNode::new(
            &self.inner.client,
            &path,
            ty.create_mode(),
            &self.json(&instance),
            false,
        )?;
        node.start()?;
        let wait = self.inner.client.connection_timeout();
        match node.wait_for_initial_create(Some(wait)).await {
            Ok(true) => {}
            Ok(false) => {
                let why = node
                    .last_error()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default();
                let _ = node.close().await;
                return Err(Error::Timeout(
                    format!("register {path}: not created within {wait:?}{why}").into(),
                ));
            }
            Err(e) => {
                let _ = node.close().await;
                return Err(e.context(format!("register {path}")));
            }
        }
        let registration = Registration {
            inner: Arc::new(RegInner {
                discovery: self.clone(),
                node,
                instance: Mutex::new(instance),
                unregistered: AtomicBool::new(false),
            }),
        };
        let inserted = {
            let mut map = self.lock();
            // Under the map's lock: close marks itself closed before it takes the lock to
            // empty the map, so either close finds this registration there (and stops it, or
            // keeps it if PERMANENT: it is registered), or this sees close.
            let open = !self.inner.closed.load(Ordering::SeqCst);
            if open {
                map.insert(key, registration.clone());
                if ty == ServiceType::Permanent {
                    registration.inner.node.set_delete_on_close(false);
                }
            }
            open
        };
        if !inserted {
            // Closed while this register ran: its node is deleted, whatever the type.
            let _ = registration.stop().await;
            return Err(Error::Closed(
                format!(
                    "register {}: service discovery {} was closed meanwhile",
                    registration.path(),
                    self.inner.base
                )
                .into(),
            ));
        }
        tracing::info!(path = %registration.path(), "service instance registered");
        Ok(registration)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Registration>> {
        self.inner
            .registrations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn registration(&self, key: &(String, String)) -> Option<Registration> {
        self.lock().get(key).cloned()
    }

    /// Removes `r` from the registrations (if it is still the one kept for `key`).
    fn forget(&self, key: &(String, String), r: &Registration) {
        let mut map = self.lock();
        if map
            .get(key)
            .is_some_and(|m| Arc::ptr_eq(&m.inner, &r.inner))
        {
            map.remove(key);
        }
    }

    /// The registrations this discovery keeps.
    pub fn registrations(&self) -> Vec<Registration> {
        self.lock().values().cloned().collect()
    }

    /// The service names (Curator's `queryForNames`): the children of the base path; none if it
    /// does not exist.
    pub async fn query_for_names(&self) -> Result<Vec<String>> {
        self.check_open()?;
        let base = self.inner.base.as_str();
        let mut names = self
            .inner
            .client
            .retry(|s| async move { s.children(base).await.or_none() })
            .await?
            .unwrap_or_default();
        names.sort();
        Ok(names)
    }

    /// The instances of service `name` (Curator's `queryForInstances`), sorted by node name.
    /// A node that does not decode is left out with a WARN log (one bad node does not hide the
    /// others; a [`ServiceCache`](super::ServiceCache) reports it as an event).
    pub async fn query_for_instances(&self, name: &str) -> Result<Vec<ServiceInstance>> {
        self.check_open()?;
        let parent = self.path_for_name(name);
        path::validate_path(&parent)?;
        let p = parent.as_str();
        let mut ids = self
            .inner
            .client
            .retry(|s| async move { s.children(p).await.or_none() })
            .await?
            .unwrap_or_default();
        ids.sort();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            match self.query_for_instance(name, &id).await {
                Ok(Some(i)) => out.push(i),
                Ok(None) => {}
                Err(Error::CorruptedData(e)) => {
                    tracing::warn!(path = %path::join(p, &id), error = %e, "service instance left out: its node does not decode")
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The instance `name`/`id` (Curator's `queryForInstance`), `None` if there is none.
    /// Errors: `CorruptedData` when its node does not decode.
    pub async fn query_for_instance(
        &self,
        name: &str,
        id: &str,
    ) -> Result<Option<ServiceInstance>> {
        self.check_open()?;
        let node = self.path_for_instance(name, id);
        path::validate_path(&node)?;
        let p = node.as_str();
        let found = self
            .inner
            .client
            .retry(|s| async move { s.get_data(p).await.or_none() })
            .await?;
        match found {
            None => Ok(None),
            Some((data, _)) => ServiceInstance::from_json(&data)
                .map(Some)
                .map_err(|e| e.context(p)),
        }
    }

    /// Closes every [`ServiceCache`](super::ServiceCache) and
    /// [`ServiceProvider`](super::ServiceProvider) made on this discovery (as Curator's
    /// `close`), unregisters every instance this discovery registered but the PERMANENT ones
    /// (whose nodes stay; [`Registration::unregister`] still deletes one), all at once, and
    /// refuses further use. Closing twice is fine.
    ///
    /// Errors: the first error an unregister met (`ConnectionLoss` when there was no
    /// connection within the retry policy: every delete goes on in the background, see
    /// [`Registration::unregister`]).
    pub async fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let caches =
            std::mem::take(&mut *self.inner.caches.lock().unwrap_or_else(|e| e.into_inner()));
        for cache in caches.iter().filter_map(Weak::upgrade) {
            cache.close();
        }
        let all: Vec<Registration> = self.lock().drain().map(|(_, r)| r).collect();
        // Each stop as its own task: they run at once (during an outage each waits out the
        // retry policy), and go on if this close is given up.
        let stops: Vec<_> = all
            .into_iter()
            .map(|r| runtime::spawn(async move { r.stop().await }))
            .collect();
        let mut first = None;
        for stop in stops {
            let stopped = stop.await.map_err(crate::client::join_error);
            if let Err(e) = stopped.and_then(|r| r) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// [`register`](Self::register) for the blocking face.
    pub fn register_blocking(&self, instance: ServiceInstance) -> Result<Registration> {
        runtime::try_block_on(self.register(instance))?
    }

    /// [`query_for_names`](Self::query_for_names) for the blocking face.
    pub fn query_for_names_blocking(&self) -> Result<Vec<String>> {
        runtime::try_block_on(self.query_for_names())?
    }

    /// [`query_for_instances`](Self::query_for_instances) for the blocking face.
    pub fn query_for_instances_blocking(&self, name: &str) -> Result<Vec<ServiceInstance>> {
        runtime::try_block_on(self.query_for_instances(name))?
    }

    /// [`query_for_instance`](Self::query_for_instance) for the blocking face.
    pub fn query_for_instance_blocking(
        &self,
        name: &str,
        id: &str,
    ) -> Result<Option<ServiceInstance>> {
        runtime::try_block_on(self.query_for_instance(name, id))?
    }

    /// [`close`](Self::close) for the blocking face.
    pub fn close_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.close())?
    }
}

/// One registered instance (cheap to clone): update it, enable or disable it, unregister it.
#[derive(Clone)]
pub struct Registration {
    inner: Arc<RegInner>,
}

struct RegInner {
    discovery: ServiceDiscovery,
    node: PersistentNode,
    instance: Mutex<ServiceInstance>,
    unregistered: AtomicBool,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("path", &self.path())
            .finish()
    }
}

impl Registration {
    /// The instance as registered (its last update).
    pub fn instance(&self) -> ServiceInstance {
        self.inner
            .instance
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The node's path: `base/name/id`, with the sequence number of a DYNAMIC_SEQUENTIAL
    /// instance (which changes if the node is made again after a session expiry).
    pub fn path(&self) -> String {
        self.inner
            .node
            .actual_path()
            .unwrap_or_else(|| self.inner.node.path().to_string())
    }

    /// The node's name: the instance id, with its sequence number if DYNAMIC_SEQUENTIAL.
    pub fn node_name(&self) -> String {
        path::node_name(&self.path()).to_string()
    }

    /// Whether the node is on the server as far as this client knows.
    pub fn is_registered(&self) -> bool {
        self.inner.node.is_registered()
    }

    /// Replaces the registered instance (Curator's `updateService`): written now when
    /// connected, else at the next reconnection. Returns at once.
    ///
    /// Errors: `InvalidArgument` when `instance` has another name, id or service type;
    /// `Closed` once unregistered; `Conflict` once the registration ended in a conflict (its
    /// CONFLICT event: nothing is written any more; register the instance again).
    pub fn update(&self, instance: ServiceInstance) -> Result<()> {
        self.update_with(|_| instance)
    }

    /// [`update`](Self::update) with the instance `change` makes of the current one, under the
    /// registration's lock: no other update comes in between (a read-modify-write of the
    /// caller's would lose one made meanwhile).
    fn update_with(&self, change: impl FnOnce(&ServiceInstance) -> ServiceInstance) -> Result<()> {
        let mut current = self
            .inner
            .instance
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let instance = change(&current);
        instance.validate()?;
        if (&instance.name, &instance.id, instance.service_type)
            != (&current.name, &current.id, current.service_type)
        {
            return Err(Error::invalid(format!(
                "update {}: the instance's name, id and service type must stay {}/{} {}",
                self.path(),
                current.name,
                current.id,
                current.service_type.name()
            )));
        }
        if self.inner.unregistered.load(Ordering::SeqCst) {
            return Err(Error::Closed(
                format!("{} is unregistered", self.path()).into(),
            ));
        }
        if let Some(e) = self.inner.node.conflict() {
            return Err(e.context(format!(
                "update {}: the registration ended in a conflict; register the instance again",
                self.path()
            )));
        }
        self.inner
            .node
            .set_data(&self.inner.discovery.json(&instance))?;
        *current = instance;
        Ok(())
    }

    /// Enables or disables the instance: a disabled one is never picked by a provider
    /// (Curator's `enabled`; written even in Curator's compatible mode, see
    /// [`ServiceDiscovery::set_write_enabled`]). Errors as [`update`](Self::update).
    pub fn set_enabled(&self, enabled: bool) -> Result<()> {
        self.update_with(|current| {
            let mut instance = current.clone();
            instance.enabled = enabled;
            instance
        })
    }

    /// Adds a listener for the node's events: REGISTERED (made or found again), UNREGISTERED
    /// (gone: being made again), CONFLICT (another session took the id after our session
    /// expired; left untouched, and this registration stops: `update` fails with `Conflict`,
    /// and registering the instance again tries afresh). Under the
    /// [`dispatch`](crate::dispatch) threading guarantee.
    pub fn add_listener(
        &self,
        listener: impl Fn(&PersistentNodeEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        self.inner.node.add_listener(listener)
    }

    /// Removes a listener; whether it was there.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.inner.node.remove_listener(id)
    }

    /// Waits until the node is on the server again (`Ok(true)`) or `timeout` passes.
    pub async fn wait_registered(&self, timeout: Option<Duration>) -> Result<bool> {
        self.inner.node.wait_for_initial_create(timeout).await
    }

    /// Deletes the node and stops keeping it: our own node only (never another session's),
    /// a create still waiting for its reply included, and a PERMANENT node too, even after
    /// [`ServiceDiscovery::close`] left it. Calling it again is fine (`Ok`).
    ///
    /// The delete is guaranteed (Curator's `guaranteed()`, and CURATOR-617): when it cannot be
    /// done now (no connection within the retry policy), the error is returned
    /// (`ConnectionLoss`) and the delete goes on in the background, after the reconnect, until
    /// it succeeds, the node is gone or no longer ours, or the client closes.
    pub async fn unregister(&self) -> Result<()> {
        let key = {
            let i = self
                .inner
                .instance
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            (i.name.clone(), i.id.clone())
        };
        // In the key's turn, as a register of the same id: a register running alongside
        // either finds this registration before it is forgotten and stopped, and updates it
        // while it still stands (and it goes now), or registers afresh after it.
        let turn = Turn::take(&self.inner.discovery.inner.registering, key.clone());
        let _turn = turn.mutex.lock().await;
        self.inner.discovery.forget(&key, self);
        // A PERMANENT node outlives `close`, not an explicit unregister.
        self.inner.node.set_delete_on_close(true);
        let stopped = self.stop().await;
        // Stopped already by `close` (now or before), which may have kept it: delete it now.
        let kept = self
            .inner
            .node
            .delete_kept()
            .await
            .map_err(|e| e.context(format!("unregister {}", self.path())));
        stopped.and(kept)
    }

    /// Stops keeping the node: deleted unless PERMANENT and registered. Its error: the
    /// delete's first try (it goes on in the background after a connection loss).
    async fn stop(&self) -> Result<()> {
        if self.inner.unregistered.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        tracing::info!(path = %self.path(), "service instance unregistered");
        self.inner
            .node
            .close_reporting()
            .await
            .map_err(|e| e.context(format!("unregister {}", self.path())))
    }

    /// [`unregister`](Self::unregister) for the blocking face.
    pub fn unregister_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.unregister())?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register given up (its future dropped) before it ended leaves no entry in the
    /// per-key line: the map must not grow with every cancelled register of a new id.
    #[test]
    fn a_cancelled_register_leaves_no_turn_behind() {
        let server = zkrecipes_testing::TestingServer::start();
        let client = crate::ClientBuilder::new(server.connect_string())
            .connect_blocking()
            .unwrap();
        let discovery = ServiceDiscovery::new(&client, "/turn-test").unwrap();
        let entries = || {
            discovery
                .inner
                .registering
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .len()
        };
        for i in 0..3 {
            let mut instance = ServiceInstance::new("svc");
            instance.id = format!("id-{i}");
            // Polled once (the create is sent, its reply is a round trip away), then dropped.
            let cut = runtime::try_block_on(async {
                tokio::time::timeout(std::time::Duration::ZERO, discovery.register(instance)).await
            })
            .unwrap();
            assert!(cut.is_err(), "the register ended within its first poll");
        }
        assert_eq!(entries(), 0, "cancelled registers left their turns behind");
        // One that ends leaves none either, and is registered.
        let mut instance = ServiceInstance::new("svc");
        instance.id = "kept".to_string();
        runtime::try_block_on(discovery.register(instance))
            .unwrap()
            .unwrap();
        assert_eq!(entries(), 0);
        runtime::try_block_on(discovery.close()).unwrap().unwrap();
        client.close_blocking();
    }
}
