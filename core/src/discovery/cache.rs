//! [`ServiceCache`] (Curator's `ServiceCache`) on the cache engine, and [`ServiceProvider`]
//! (Curator's `ServiceProvider`) on a service cache.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::discovery::ServiceDiscovery;
use super::instance::ServiceInstance;
use super::strategy::{DownInstancePolicy, Picker, ProviderStrategy};
use crate::cache::{Cache, CacheEvent, CacheEventType, CacheOptions, ChildData, Snapshot};
use crate::dispatch::ListenerId;
use crate::{path, runtime, Error, Result};

/// What a [`ServiceCache`] tells its listeners.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServiceCacheEventKind {
    /// An instance appeared (`instance`).
    Added,
    /// An instance's node changed (`old` before, `instance` after).
    Updated,
    /// An instance went away (`instance`, as last known).
    Removed,
    /// A node under the service does not decode (`error` says why; Curator drops it
    /// silently). It is left out of [`ServiceCache::instances`] until it decodes.
    Invalid,
    /// The initial load is complete (once).
    Initialized,
}

impl ServiceCacheEventKind {
    /// Every kind.
    pub const ALL: &'static [ServiceCacheEventKind] = &[
        ServiceCacheEventKind::Added,
        ServiceCacheEventKind::Updated,
        ServiceCacheEventKind::Removed,
        ServiceCacheEventKind::Invalid,
        ServiceCacheEventKind::Initialized,
    ];

    /// The one spelling every face uses.
    pub const fn name(self) -> &'static str {
        match self {
            ServiceCacheEventKind::Added => "ADDED",
            ServiceCacheEventKind::Updated => "UPDATED",
            ServiceCacheEventKind::Removed => "REMOVED",
            ServiceCacheEventKind::Invalid => "INVALID",
            ServiceCacheEventKind::Initialized => "INITIALIZED",
        }
    }
}

/// A [`ServiceCache`] event.
#[derive(Clone, Debug)]
pub struct ServiceCacheEvent {
    /// What happened.
    pub kind: ServiceCacheEventKind,
    /// The node's path.
    pub path: String,
    /// The instance (after, for Added and Updated; as last known, for Removed).
    pub instance: Option<Arc<ServiceInstance>>,
    /// The instance before (Updated).
    pub old: Option<Arc<ServiceInstance>>,
    /// Why the node does not decode (Invalid).
    pub error: Option<Error>,
    /// Found by a resync after a reconnect or a new session (a change the watch could not
    /// report as it happened).
    pub resync: bool,
}

/// Decoded instances by node, tagged with the node's identity (czxid, version), so each node
/// version is decoded once. Only nodes that are (or were just) in the cache: an entry goes
/// when its node's delete is translated for a listener, or when [`ServiceCache::instances`]
/// finds it out of the cache.
type Decoded = HashMap<String, (i64, i32, std::result::Result<Arc<ServiceInstance>, Error>)>;

struct Shared {
    decoded: Mutex<Decoded>,
}

impl Shared {
    fn decode(&self, node: &ChildData) -> std::result::Result<Arc<ServiceInstance>, Error> {
        let mut decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((czxid, version, r)) = decoded.get(&node.path) {
            if (*czxid, *version) == (node.stat.czxid, node.stat.version) {
                return r.clone();
            }
        }
        let r = ServiceInstance::from_json(node.data.as_deref().unwrap_or_default())
            .map(Arc::new)
            .map_err(|e| e.context(&node.path));
        decoded.insert(
            node.path.clone(),
            (node.stat.czxid, node.stat.version, r.clone()),
        );
        r
    }

    /// The instance of a node that is gone (a delete's last known node), its entry removed.
    fn decode_gone(&self, node: &ChildData) -> std::result::Result<Arc<ServiceInstance>, Error> {
        let cached = self
            .decoded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&node.path);
        match cached {
            Some((czxid, version, r))
                if (czxid, version) == (node.stat.czxid, node.stat.version) =>
            {
                r
            }
            _ => ServiceInstance::from_json(node.data.as_deref().unwrap_or_default())
                .map(Arc::new)
                .map_err(|e| e.context(&node.path)),
        }
    }

    /// Drops the entries of nodes not in `snapshot` (every node of it was just decoded: more
    /// entries than nodes means some are stale).
    fn prune(&self, snapshot: &Snapshot) {
        let mut decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        if decoded.len() > snapshot.len() {
            let live: HashSet<&str> = snapshot.paths().collect();
            decoded.retain(|path, _| live.contains(path.as_str()));
        }
    }
}

/// Curator's `ServiceCache`: the instances of one service, kept by one persistent recursive
/// watch (the cache engine: exact resync after reconnects and new sessions, read-your-writes
/// with [`await_zxid`](Self::await_zxid)); never writes. Dropping it (or
/// [`close`](Self::close)) stops it.
pub struct ServiceCache {
    name: String,
    /// Shared with the discovery, which closes it on its own close.
    cache: Arc<Cache>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ServiceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceCache")
            .field("path", &self.cache.path())
            .finish()
    }
}

impl ServiceCache {
    /// A cache of service `name` under `discovery`'s base path (not started). `Closed` once
    /// the discovery is closed; closing the discovery closes the cache (Curator's
    /// `ServiceDiscovery.close`).
    pub fn new(discovery: &ServiceDiscovery, name: &str) -> Result<ServiceCache> {
        discovery.check_open()?;
        let p = discovery.path_for_name(name);
        path::validate_path(&p)?;
        if name.is_empty() || name.contains('/') {
            return Err(Error::invalid(format!(
                "service name {name:?} must be one node name"
            )));
        }
        let opts = CacheOptions {
            max_depth: Some(1),
            include_root: false,
            ..CacheOptions::default()
        };
        let cache = Arc::new(Cache::new(discovery.client(), &p, opts)?);
        discovery.track_cache(&cache)?;
        Ok(ServiceCache {
            name: name.to_string(),
            cache,
            shared: Arc::new(Shared {
                decoded: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The service's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Starts watching (returns once the watch is set; see
    /// [`await_initialized`](Self::await_initialized)).
    pub async fn start(&self) -> Result<()> {
        self.cache.start().await
    }

    /// Stops the cache. Idempotent.
    pub fn close(&self) {
        self.cache.close()
    }

    /// Waits until the initial load is complete (`true`) or `timeout` passes (`false`).
    pub async fn await_initialized(&self, timeout: Option<Duration>) -> Result<bool> {
        self.cache.await_initialized(timeout).await
    }

    /// Read-your-writes: waits until the cache has applied every change up to `zxid`.
    pub async fn await_zxid(&self, zxid: i64, timeout: Option<Duration>) -> Result<bool> {
        self.cache.await_zxid(zxid, timeout).await
    }

    /// The instances now (Curator's `getInstances`), sorted by node name; nodes that do not
    /// decode are left out (an Invalid event told).
    pub fn instances(&self) -> Vec<Arc<ServiceInstance>> {
        let snapshot = self.cache.snapshot();
        let all = snapshot
            .iter()
            .filter_map(|node| self.shared.decode(&node).ok())
            .collect();
        self.shared.prune(&snapshot);
        all
    }

    /// Adds a listener (under the [`dispatch`](crate::dispatch) threading guarantee); with
    /// `replay`, the instances cached now come first as Added events (and Initialized, if the
    /// cache is initialized), with nothing missed or repeated in between.
    pub fn listen(
        &self,
        replay: bool,
        f: impl Fn(&ServiceCacheEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        let shared = self.shared.clone();
        let listener = move |e: &CacheEvent| {
            if let Some(event) = translate(&shared, e) {
                f(&event)
            }
        };
        if replay {
            self.cache.listen_with_replay(listener)
        } else {
            self.cache.listen(listener)
        }
    }

    /// Removes a listener; whether it was there.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.cache.remove_listener(id)
    }

    /// [`start`](Self::start) for the blocking face.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }

    /// [`await_initialized`](Self::await_initialized) for the blocking face.
    pub fn await_initialized_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.await_initialized(timeout))?
    }

    /// [`await_zxid`](Self::await_zxid) for the blocking face.
    pub fn await_zxid_blocking(&self, zxid: i64, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.await_zxid(zxid, timeout))?
    }
}

fn translate(shared: &Shared, e: &CacheEvent) -> Option<ServiceCacheEvent> {
    use ServiceCacheEventKind as K;
    let event = |kind, instance, old, error| ServiceCacheEvent {
        kind,
        path: e.path.clone(),
        instance,
        old,
        error,
        resync: e.resync,
    };
    let decode = |n: &Option<ChildData>| n.as_ref().map(|n| shared.decode(n));
    let old = if e.kind == CacheEventType::Deleted {
        // Gone: its entry goes too.
        e.old.as_ref().map(|n| shared.decode_gone(n))
    } else {
        decode(&e.old)
    };
    Some(match (e.kind, old, decode(&e.new)) {
        (CacheEventType::Initialized, ..) => event(K::Initialized, None, None, None),
        (CacheEventType::Resynced, ..) => return None,
        (_, _, Some(Err(err))) => event(K::Invalid, None, None, Some(err)),
        (CacheEventType::Created, _, Some(Ok(i))) => event(K::Added, Some(i), None, None),
        (CacheEventType::Changed, Some(Ok(old)), Some(Ok(i))) => {
            event(K::Updated, Some(i), Some(old), None)
        }
        // It decodes again after an Invalid: it is back.
        (CacheEventType::Changed, _, Some(Ok(i))) => event(K::Added, Some(i), None, None),
        (CacheEventType::Deleted, Some(Ok(old)), _) => event(K::Removed, Some(old), None, None),
        // An invalid node went away: it never was an instance.
        _ => return None,
    })
}

type InstanceFilter = Arc<dyn Fn(&ServiceInstance) -> bool + Send + Sync>;

/// Curator's `ServiceProvider`: picks an instance of one service from its
/// [`ServiceCache`] by a [`ProviderStrategy`], never a disabled one, nor one noted down
/// ([`note_error`](Self::note_error), Curator's [`DownInstancePolicy`]), nor one an instance
/// filter refuses.
pub struct ServiceProvider {
    cache: ServiceCache,
    picker: Picker,
    filter: Option<InstanceFilter>,
}

impl std::fmt::Debug for ServiceProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceProvider")
            .field("cache", &self.cache)
            .finish()
    }
}

impl ServiceProvider {
    /// A provider of service `name` (not started).
    pub fn new(
        discovery: &ServiceDiscovery,
        name: &str,
        strategy: ProviderStrategy,
    ) -> Result<ServiceProvider> {
        Ok(ServiceProvider {
            cache: ServiceCache::new(discovery, name)?,
            picker: Picker::new(strategy, DownInstancePolicy::default()),
            filter: None,
        })
    }

    /// With Curator's down-instance policy other than the default (2 errors, 30 s).
    pub fn with_down_instance_policy(mut self, policy: DownInstancePolicy) -> Self {
        let strategy = self.picker.strategy();
        self.picker = Picker::new(strategy, policy);
        self
    }

    /// Only instances `filter` accepts are picked (Curator's `additionalFilter`).
    pub fn with_filter(
        mut self,
        filter: impl Fn(&ServiceInstance) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.filter = Some(Arc::new(filter));
        self
    }

    /// Starts the provider's cache and waits for its initial load.
    pub async fn start(&self) -> Result<()> {
        self.cache.start().await?;
        self.cache.await_initialized(None).await.map(drop)
    }

    /// The provider's cache.
    pub fn cache(&self) -> &ServiceCache {
        &self.cache
    }

    /// An instance by the strategy, or `None` when none is usable.
    pub fn get_instance(&self) -> Option<Arc<ServiceInstance>> {
        self.picker.pick(&self.get_all_instances())
    }

    /// Every usable instance (enabled, not down, accepted by the filter), sorted by id.
    pub fn get_all_instances(&self) -> Vec<Arc<ServiceInstance>> {
        self.picker
            .usable(self.cache.instances(), self.filter.as_deref())
    }

    /// Notes an error with `instance` (Curator's `noteError`): after the policy's threshold it
    /// is left out until the policy's timeout. That registration only, as Curator's
    /// `DownInstanceManager` (by instance equality): known by its name, id, address, ports,
    /// registration time and type, so DYNAMIC_SEQUENTIAL instances that share an id go down
    /// one at a time; an update (payload, enabled) does not bring it back.
    pub fn note_error(&self, instance: &ServiceInstance) {
        self.picker.note_error(instance)
    }

    /// [`note_error`](Self::note_error) by id: with every instance whose id is `id` (all the
    /// DYNAMIC_SEQUENTIAL instances that share it).
    pub fn note_error_id(&self, id: &str) {
        self.picker.note_error_id(id)
    }

    /// Stops the provider. Idempotent.
    pub fn close(&self) {
        self.cache.close()
    }

    /// [`start`](Self::start) for the blocking face.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    use super::*;
    use crate::client::{CreateMode, CreateOptions, DeleteOptions};

    const WAIT: Duration = Duration::from_secs(20);

    /// Creates and deletes 40 instances under `/decoded/s`, each seen by `cache` before its
    /// delete; returns once `cache` has applied the last delete.
    async fn churn(client: &crate::Client, cache: &ServiceCache, round: usize) {
        for i in 0..40 {
            let mut instance = ServiceInstance::new("s");
            instance.id = format!("r{round}-{i}");
            let path = format!("/decoded/s/{}", instance.id);
            let made = client
                .create(
                    &path,
                    &instance.to_json(true),
                    CreateOptions::new(CreateMode::Persistent).parents(),
                )
                .await
                .unwrap();
            assert!(cache.await_zxid(made.stat.czxid, Some(WAIT)).await.unwrap());
            if round == 0 {
                assert_eq!(cache.instances().len(), 1);
            }
            client
                .delete(&path, DeleteOptions::default())
                .await
                .unwrap();
        }
        let fence = client
            .create(
                &format!("/decoded-fence-{round}"),
                b"",
                CreateOptions::new(CreateMode::Persistent),
            )
            .await
            .unwrap();
        assert!(cache
            .await_zxid(fence.stat.czxid, Some(WAIT))
            .await
            .unwrap());
    }

    /// Review-discovery #5: the decoded instances go with their nodes, read through
    /// `instances()` (no listener) or by a listener: a service whose instances come and go
    /// does not grow the cache's memory.
    #[test]
    fn decoded_instances_go_with_their_nodes() {
        let server = zkrecipes_testing::TestingServer::start();
        let client = crate::ClientBuilder::new(server.connect_string())
            .connect_blocking()
            .unwrap();
        let discovery = ServiceDiscovery::new(&client, "/decoded").unwrap();
        let decoded = |cache: &ServiceCache| {
            cache
                .shared
                .decoded
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .len()
        };
        runtime::try_block_on(async {
            // Read through `instances()` only.
            let cache = ServiceCache::new(&discovery, "s").unwrap();
            cache.start().await.unwrap();
            assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
            churn(&client, &cache, 0).await;
            assert!(cache.instances().is_empty());
            assert_eq!(decoded(&cache), 0, "instances() kept the deleted nodes");
            cache.close();

            // Read by a listener only.
            let cache = ServiceCache::new(&discovery, "s").unwrap();
            let removed = Arc::new(AtomicUsize::new(0));
            let r = removed.clone();
            cache.listen(false, move |e| {
                if e.kind == ServiceCacheEventKind::Removed {
                    r.fetch_add(1, Ordering::SeqCst);
                }
            });
            cache.start().await.unwrap();
            assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
            churn(&client, &cache, 1).await;
            let deadline = Instant::now() + WAIT;
            while removed.load(Ordering::SeqCst) < 40 {
                assert!(
                    Instant::now() < deadline,
                    "the listener heard every removal"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(
                decoded(&cache),
                0,
                "the listener's events kept the deleted nodes"
            );
            cache.close();
        })
        .unwrap();
        client.close_blocking();
    }
}
