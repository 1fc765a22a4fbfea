//! [`Cache`], the one cache type, and its views with Curator's names.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::engine::{child_data, Cmd, Engine, Map, Shared};
use super::{CacheEvent, CacheEventType, CacheOptions, ChildData, StartMode};
use crate::client::AddWatchMode;
use crate::dispatch::ListenerId;
use crate::lifecycle::{Lifecycle, Phase};
use crate::{path, runtime, Client, Error, Result};

/// A cache of a subtree (Curator's `CuratorCache`; see [`crate::cache`] for what it does and
/// promises). Build it with [`CuratorCache::new`], [`NodeCache::new`],
/// [`PathChildrenCache::new`], [`TreeCache::new`] or [`Cache::new`] with any
/// [`CacheOptions`]; then [`start`](Self::start) it. Dropping it (or
/// [`close`](Self::close)) stops it; a cache never writes to ZooKeeper.
pub struct Cache {
    client: Client,
    sh: Arc<Shared>,
    kind: &'static str,
    wait_on_start: bool,
    life: Lifecycle,
    cmds: Mutex<Option<mpsc::UnboundedSender<Cmd>>>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(self.kind)
            .field("path", &self.sh.root)
            .field("options", &self.sh.opts)
            .field("phase", &self.life.phase())
            .finish()
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        self.close();
    }
}

impl Cache {
    /// A cache of `path` built as `opts` say (not started). The path need not exist: a missing
    /// root is an empty cache until it is created.
    pub fn new(client: &Client, path: &str, opts: CacheOptions) -> Result<Cache> {
        Self::make(client, path, opts, "CuratorCache", false)
    }

    fn make(
        client: &Client,
        path: &str,
        opts: CacheOptions,
        kind: &'static str,
        wait_on_start: bool,
    ) -> Result<Cache> {
        client.ensure_open_for(kind, path)?;
        path::validate_path(path)?;
        Ok(Cache {
            client: client.clone(),
            sh: Arc::new(Shared::new(path, opts)),
            kind,
            wait_on_start,
            life: Lifecycle::new(kind, path),
            cmds: Mutex::new(None),
        })
    }

    /// The cached root's path.
    pub fn path(&self) -> &str {
        &self.sh.root
    }

    /// The options it was built with.
    pub fn options(&self) -> &CacheOptions {
        &self.sh.opts
    }

    /// Sets the watch and starts loading; returns once the watch is set (a
    /// [`PathChildrenCache`] in [`StartMode::BuildInitialCache`]: once loaded). Events of the
    /// initial load go to the listeners added before this. `InvalidArgument` if started
    /// before, `Closed` once closed.
    pub async fn start(&self) -> Result<()> {
        let mode = if self.sh.opts.max_depth == Some(0) {
            AddWatchMode::Persistent
        } else {
            AddWatchMode::PersistentRecursive
        };
        let starting = self.life.begin_start(&self.client)?;
        let watch = self.client.add_watch(&self.sh.root, mode).await?;
        starting.finish(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            *self.cmds.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
            let engine = Engine::new(self.sh.clone(), self.client.downgrade());
            runtime::spawn(engine.run(watch, rx));
        })?;
        tracing::debug!(path = %self.sh.root, kind = self.kind, "cache started");
        if self.wait_on_start {
            self.await_initialized(None).await?;
        }
        Ok(())
    }

    /// [`start`](Self::start), blocking.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }

    /// Stops the cache: the engine ends, listeners hear nothing more (events queued are not
    /// delivered; a call already begun finishes), waiters return. The snapshot stays readable. Idempotent.
    pub fn close(&self) {
        if self.life.close() != Phase::Closed {
            self.cmds.lock().unwrap_or_else(|e| e.into_inner()).take();
            self.sh.dispatcher.clear();
            self.sh.progress.send_modify(|p| p.ended = true);
        }
    }

    fn closed_error(&self, op: &str) -> Error {
        self.life.closed_error(op)
    }

    fn started(&self, op: &str) -> Result<()> {
        self.life.check_started(op)
    }

    /// Whether the initial load is complete.
    pub fn is_initialized(&self) -> bool {
        self.sh.progress.borrow().initialized
    }

    /// How many resyncs (after reconnects or new sessions) have completed.
    pub fn resyncs(&self) -> u64 {
        self.sh.progress.borrow().resyncs
    }

    /// Waits until the initial load is complete (`true`) or `timeout` passes (`false`; `None`
    /// waits without limit). Before it returns true a missing node may just not be loaded yet.
    pub async fn await_initialized(&self, timeout: Option<Duration>) -> Result<bool> {
        self.started("await_initialized")?;
        let mut rx = self.sh.progress.subscribe();
        let wait = rx.wait_for(|p| p.initialized || p.ended);
        let p = match timeout {
            None => wait.await.map(|p| *p),
            Some(t) => match tokio::time::timeout(t, wait).await {
                Ok(r) => r.map(|p| *p),
                Err(_) => return Ok(false),
            },
        };
        match p {
            Ok(p) if p.initialized => Ok(true),
            _ => Err(self.closed_error("await_initialized")),
        }
    }

    /// [`await_initialized`](Self::await_initialized), blocking.
    pub fn await_initialized_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.await_initialized(timeout))?
    }

    /// Read-your-writes: waits until the cache has applied every change up to `zxid` (`true`),
    /// or `timeout` passes (`false`). `zxid` is one already committed — the `mzxid` or
    /// `czxid` of the stat your write returned — from any client: the engine asks its server
    /// to catch up with the leader (`sync`) and waits until it has applied the changes whose
    /// events came before the answer (reading again, first, any whose read failed with the
    /// connection). Also waits for the initial load.
    pub async fn await_zxid(&self, zxid: i64, timeout: Option<Duration>) -> Result<bool> {
        self.started("await_zxid")?;
        let work = async {
            if !self.await_initialized(None).await? {
                return Ok(false);
            }
            let (tx, rx) = oneshot::channel();
            let sent = self
                .cmds
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_some_and(|c| c.send(Cmd::Fence(tx)).is_ok());
            if !sent || rx.await.is_err() {
                return Err(self.closed_error("await_zxid"));
            }
            tracing::trace!(path = %self.sh.root, zxid, "cache caught up");
            Ok(true)
        };
        match timeout {
            None => work.await,
            Some(t) => tokio::time::timeout(t, work).await.unwrap_or(Ok(false)),
        }
    }

    /// [`await_zxid`](Self::await_zxid), blocking.
    pub fn await_zxid_blocking(&self, zxid: i64, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.await_zxid(zxid, timeout))?
    }

    /// The cached node at `path`, or `None` (not there, out of scope, or not loaded yet:
    /// see [`await_initialized`](Self::await_initialized)).
    pub fn get(&self, path: &str) -> Option<ChildData> {
        let map = self.sh.map.read().unwrap_or_else(|e| e.into_inner());
        map.get(path).map(|n| child_data(path, n))
    }

    /// How many nodes are cached.
    pub fn size(&self) -> usize {
        self.sh.map.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The current snapshot: an immutable, consistent view, sorted by path; the cache goes on
    /// changing without it.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            map: self.sh.snapshot(),
        }
    }

    /// The cached children of `path` (one level below it), sorted.
    pub fn children(&self, path: &str) -> Vec<ChildData> {
        let depth = path.matches('/').count() + usize::from(path != "/");
        self.snapshot()
            .iter()
            .filter(|c| {
                c.path.len() > path.len()
                    && c.path.starts_with(path)
                    && (path == "/" || c.path.as_bytes()[path.len()] == b'/')
                    && c.path.matches('/').count() == depth
            })
            .collect()
    }

    /// Adds a listener; it hears the events that happen after this returns — no replay of
    /// what is cached already (see [`listen_with_replay`](Self::listen_with_replay)). Runs
    /// under the [`dispatch`](crate::dispatch) threading guarantee.
    pub fn listen(&self, f: impl Fn(&CacheEvent) + Send + Sync + 'static) -> ListenerId {
        self.listen_inner(f, false)
    }

    /// Adds a listener that first hears the snapshot as Created events (flagged neither resync
    /// nor otherwise special) and, if the cache is initialized, Initialized; then what happens
    /// after, with nothing missed or repeated in between.
    pub fn listen_with_replay(
        &self,
        f: impl Fn(&CacheEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        self.listen_inner(f, true)
    }

    fn listen_inner(
        &self,
        f: impl Fn(&CacheEvent) + Send + Sync + 'static,
        replay: bool,
    ) -> ListenerId {
        let f = Arc::new(f);
        let armed = Arc::new(AtomicBool::new(false));
        let (l, a) = (f.clone(), armed.clone());
        let id = self.sh.dispatcher.add(move |e| {
            if a.load(Ordering::SeqCst) {
                l(e)
            }
        });
        // The engine changes the snapshot and queues its events under the write lock: holding
        // the read lock, the snapshot and the place in the queue agree.
        let guard = self.sh.map.read().unwrap_or_else(|e| e.into_inner());
        let snap: Option<Arc<Map>> = replay.then(|| guard.clone());
        let initialized = self.is_initialized();
        let root = self.sh.root.clone();
        self.sh.dispatcher.call(move || {
            if let Some(snap) = snap {
                for (p, n) in snap.iter() {
                    f(&CacheEvent {
                        kind: CacheEventType::Created,
                        path: p.clone(),
                        old: None,
                        new: Some(child_data(p, n)),
                        resync: false,
                    });
                }
                if initialized {
                    f(&CacheEvent {
                        kind: CacheEventType::Initialized,
                        path: root,
                        old: None,
                        new: None,
                        resync: false,
                    });
                }
            }
            armed.store(true, Ordering::SeqCst);
        });
        drop(guard);
        // Added after close cleared the listeners (close sets the phase first): it would hear
        // nothing, and an event stream fed by it would never end. It gets its replay only.
        if self.life.phase() == Phase::Closed {
            let _ = self.sh.dispatcher.remove(id);
        }
        id
    }

    /// Removes a listener; whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.sh.dispatcher.remove(id)
    }

    /// The events from now on as a stream (a listener feeding a channel; dropping the stream
    /// removes it). With `replay`, the snapshot first, as for
    /// [`listen_with_replay`](Self::listen_with_replay).
    pub fn events(&self, replay: bool) -> CacheEventStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self.listen_inner(
            move |e| {
                let _ = tx.send(e.clone());
            },
            replay,
        );
        CacheEventStream {
            rx,
            id,
            sh: Arc::downgrade(&self.sh),
        }
    }
}

/// A consistent view of a cache at one moment (see [`Cache::snapshot`]).
#[derive(Clone)]
pub struct Snapshot {
    map: Arc<Map>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("len", &self.map.len())
            .finish()
    }
}

impl Snapshot {
    /// The nodes, sorted by path.
    pub fn iter(&self) -> impl Iterator<Item = ChildData> + '_ {
        self.map.iter().map(|(p, n)| child_data(p, n))
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<ChildData> {
        self.map.get(path).map(|n| child_data(path, n))
    }

    /// How many nodes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The paths, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> + '_ {
        self.map.keys().map(String::as_str)
    }
}

/// A cache's events as a stream ([`Cache::events`]). [`next`](Self::next) returns `None`
/// once the cache is closed or dropped and the events before that are taken.
pub struct CacheEventStream {
    rx: mpsc::UnboundedReceiver<CacheEvent>,
    id: ListenerId,
    sh: std::sync::Weak<Shared>,
}

impl std::fmt::Debug for CacheEventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheEventStream")
            .field("id", &self.id)
            .finish()
    }
}

impl CacheEventStream {
    /// The next event.
    pub async fn next(&mut self) -> Option<CacheEvent> {
        self.rx.recv().await
    }

    /// The next event if one is queued, without waiting.
    pub fn try_next(&mut self) -> Option<CacheEvent> {
        self.rx.try_recv().ok()
    }
}

impl Drop for CacheEventStream {
    fn drop(&mut self) {
        if let Some(sh) = self.sh.upgrade() {
            let _ = sh.dispatcher.remove(self.id); // our own id
        }
    }
}

macro_rules! view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(Cache);

        impl Deref for $name {
            type Target = Cache;
            fn deref(&self) -> &Cache {
                &self.0
            }
        }

        impl From<$name> for Cache {
            fn from(v: $name) -> Cache {
                v.0
            }
        }
    };
}

view! {
    /// Curator 5.x's `CuratorCache`: the whole subtree at a path, with data.
    CuratorCache
}
view! {
    /// Curator's `NodeCache`: one node (a plain persistent watch on it). `get(path())` is
    /// its current data; [`node`](NodeCache::node) says the same.
    NodeCache
}
view! {
    /// Curator's `PathChildrenCache`: the children of a path (one level; the path itself is
    /// not part of it), with Curator's [`StartMode`]s.
    PathChildrenCache
}
view! {
    /// Curator's `TreeCache`: the subtree to a depth limit (the root is depth 0).
    TreeCache
}

impl CuratorCache {
    /// The whole subtree at `path`, with data.
    pub fn new(client: &Client, path: &str) -> Result<CuratorCache> {
        Self::with_options(client, path, CacheOptions::default())
    }

    /// With options (stats only, a filter, a depth limit).
    pub fn with_options(client: &Client, path: &str, opts: CacheOptions) -> Result<CuratorCache> {
        Cache::make(client, path, opts, "CuratorCache", false).map(CuratorCache)
    }
}

impl NodeCache {
    /// The node at `path` alone.
    pub fn new(client: &Client, path: &str) -> Result<NodeCache> {
        let opts = CacheOptions::default().max_depth(0);
        Cache::make(client, path, opts, "NodeCache", false).map(NodeCache)
    }

    /// The node's current data and stat, or `None`.
    pub fn node(&self) -> Option<ChildData> {
        self.get(self.path())
    }
}

impl PathChildrenCache {
    /// The children of `path`; `cache_data` false keeps stats only. `mode` as Curator's
    /// `StartMode` (events of the initial load, an Initialized event, `start` waiting).
    pub fn new(
        client: &Client,
        path: &str,
        cache_data: bool,
        mode: StartMode,
    ) -> Result<PathChildrenCache> {
        let opts = CacheOptions {
            data: cache_data,
            max_depth: Some(1),
            include_root: false,
            initial_events: mode != StartMode::BuildInitialCache,
            initialized_event: mode == StartMode::PostInitializedEvent,
            ..CacheOptions::default()
        };
        let wait = mode == StartMode::BuildInitialCache;
        Cache::make(client, path, opts, "PathChildrenCache", wait).map(PathChildrenCache)
    }

    /// The current children, sorted by path (Curator's `getCurrentData`).
    pub fn current_data(&self) -> Vec<ChildData> {
        self.snapshot().iter().collect()
    }
}

impl TreeCache {
    /// The subtree at `path` down to `max_depth` (`None`: no limit).
    pub fn new(client: &Client, path: &str, max_depth: Option<usize>) -> Result<TreeCache> {
        let opts = CacheOptions {
            max_depth,
            ..CacheOptions::default()
        };
        Cache::make(client, path, opts, "TreeCache", false).map(TreeCache)
    }
}
