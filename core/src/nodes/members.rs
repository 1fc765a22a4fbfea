//! The group's membership as [`GroupMember`](super::GroupMember) sees it: a map child name →
//! data of the group node's children, kept up to date in the background.
//!
//! The small interface (`start`, `current`, `stop`, a change callback) is all `GroupMember`
//! uses. Behind it is the cache engine, as Curator's GroupMember uses CuratorCache: a
//! [`PathChildrenCache`] of the group path (one persistent recursive watch; a member's
//! `set_this_data` is a Changed event; after a reconnect or a new session the engine resyncs
//! exactly). The initial load and each resync are published once, when complete, so a
//! listener never sees a half-read group.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cache::{CacheEvent, CacheEventType, PathChildrenCache, StartMode};
use crate::{path, runtime, Client, Error, Result};

/// Member id → payload.
pub(crate) type Members = BTreeMap<String, Vec<u8>>;

/// The membership view (see the module notes).
pub(crate) struct MembersView {
    cache: Arc<PathChildrenCache>,
    members: Arc<Mutex<Members>>,
    starter: tokio::task::JoinHandle<()>,
}

/// What the cache listener keeps: the members, and whether a load or resync is under way.
struct Tracker {
    members: Arc<Mutex<Members>>,
    settled: Mutex<bool>,
    on_change: Box<dyn Fn(&Members) + Send + Sync>,
}

impl Tracker {
    fn apply(&self, ev: &CacheEvent) {
        let mut settled = self.settled.lock().unwrap_or_else(|e| e.into_inner());
        let mut members = self.members.lock().unwrap_or_else(|e| e.into_inner());
        let before = members.clone();
        match ev.kind {
            CacheEventType::Created | CacheEventType::Changed => {
                if let Some(n) = &ev.new {
                    let data = n.data.as_deref().unwrap_or_default().to_vec();
                    members.insert(path::node_name(&n.path).to_string(), data);
                }
            }
            CacheEventType::Deleted => {
                members.remove(path::node_name(&ev.path));
            }
            CacheEventType::Initialized | CacheEventType::Resynced => *settled = true,
        }
        // The differences a resync finds are published once, at its Resynced (which carries
        // `resync` too: it settles the view again, for good).
        if ev.resync
            && !matches!(
                ev.kind,
                CacheEventType::Initialized | CacheEventType::Resynced
            )
        {
            *settled = false;
        }
        let publish = *settled
            && (matches!(
                ev.kind,
                CacheEventType::Initialized | CacheEventType::Resynced
            ) || *members != before);
        let snapshot = members.clone();
        drop(members);
        drop(settled);
        if publish {
            (self.on_change)(&snapshot);
        }
    }
}

impl MembersView {
    /// Starts following `path`'s children; `on_change` gets each new membership (called from
    /// the cache's dispatcher: it must only hand the value on, to a dispatcher).
    pub(crate) fn start(
        client: &Client,
        path: &str,
        on_change: impl Fn(&Members) + Send + Sync + 'static,
    ) -> Result<MembersView> {
        let cache = Arc::new(PathChildrenCache::new(
            client,
            path,
            true,
            StartMode::PostInitializedEvent,
        )?);
        let members = Arc::new(Mutex::new(Members::new()));
        let tracker = Tracker {
            members: members.clone(),
            settled: Mutex::new(false),
            on_change: Box::new(on_change),
        };
        cache.listen(move |ev| tracker.apply(ev));
        // Setting the watch needs a connection: keep trying in the background.
        let starting = cache.clone();
        let group = path.to_string();
        let starter = runtime::spawn(async move {
            let mut backoff = Duration::from_millis(50);
            loop {
                match starting.start().await {
                    Ok(()) | Err(Error::Closed(_) | Error::InvalidArgument(_)) => return,
                    Err(e) => {
                        tracing::debug!(group = %group, error = %e, "group members: cache not started yet; retrying");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                }
            }
        });
        Ok(MembersView {
            cache,
            members,
            starter,
        })
    }

    /// The membership as last read.
    pub(crate) fn current(&self) -> Members {
        self.members
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stops following (the cache's watch goes with it).
    pub(crate) fn stop(self) {
        self.starter.abort();
        self.cache.close();
    }
}
