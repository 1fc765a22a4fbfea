//! Caches: Curator 5.x's [`CuratorCache`] — one engine keeping a consistent local copy of a
//! subtree — and the older [`NodeCache`], [`PathChildrenCache`] and [`TreeCache`] as views of
//! it.
//!
//! # What the engine does (and where Curator's caches fail)
//!
//! * **One persistent recursive watch** on the root (a plain persistent one for a
//!   [`NodeCache`]), set before anything is read, so no change after the start is missed.
//! * **Reads decide, events only ask.** Every watch event makes the engine read the node again;
//!   the cache changes only from read replies, applied in the order they were sent (one
//!   session's replies come in order, each a later state of the server than the one before).
//!   A delete and a recreate between two reads is seen through the node's identity
//!   (`czxid`): [`CacheEventType::Deleted`] then [`CacheEventType::Created`], never a silent
//!   "changed" (Curator compares data versions only).
//! * **Pipelined loads.** The initial load and every resync walk the tree breadth-first with
//!   many reads in flight (getData and getChildren of a node sent together), not one at a time;
//!   65,540 children load like any other number (CURATOR-690).
//! * **Exact resync.** After a reconnect within the session (ZooKeeper does not replay
//!   persistent-watch events missed while disconnected, ZOOKEEPER-4698) or on a new session the
//!   tree is walked again and compared with the snapshot: exactly the missed changes are
//!   emitted, flagged `resync`, then one [`CacheEventType::Resynced`].
//! * **Initialized once**, and a way to tell "missing" from "not loaded yet"
//!   ([`Cache::await_initialized`]); read-your-writes with [`Cache::await_zxid`].
//! * **Never writes** to ZooKeeper: a missing root is an empty cache, not a node to create
//!   (CURATOR-319).
//! * An immutable snapshot (`Arc<BTreeMap>`, copied on write only while someone iterates an
//!   older one), so iteration is consistent and sorted by path.
//!
//! Listeners run under the [`dispatch`](crate::dispatch) threading guarantee; a listener added
//! after the start hears only what happens after it was added unless it asks for a replay
//! ([`Cache::listen_with_replay`]). [`Cache::events`] is the same as a stream.

mod engine;
mod views;

use std::sync::Arc;

pub use self::views::{
    Cache, CacheEventStream, CuratorCache, NodeCache, PathChildrenCache, Snapshot, TreeCache,
};
use crate::client::Stat;
use crate::{Error, Result};

/// A cached node: its path, data (`None` when the cache keeps stats only) and stat
/// (Curator's `ChildData`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildData {
    /// The node's path (the caller's, without the client's namespace).
    pub path: String,
    /// Its data, or `None` if the cache was built with `data: false`.
    pub data: Option<Arc<[u8]>>,
    /// Its stat as last read.
    pub stat: Stat,
}

/// The kind of a [`CacheEvent`] (Curator's `CuratorCacheListener.Type` plus the two
/// lifecycle events).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CacheEventType {
    /// A node appeared (or was recreated: then a `Deleted` came first).
    Created,
    /// A node's data changed (same node: same `czxid`).
    Changed,
    /// A node went away.
    Deleted,
    /// The initial load is complete (once per cache).
    Initialized,
    /// A resync after a reconnect or a new session is complete; its differences were emitted
    /// just before, flagged `resync`.
    Resynced,
}

impl CacheEventType {
    /// Every value, in declaration order.
    pub const ALL: &'static [CacheEventType] = &[
        CacheEventType::Created,
        CacheEventType::Changed,
        CacheEventType::Deleted,
        CacheEventType::Initialized,
        CacheEventType::Resynced,
    ];

    /// The one spelling every face uses (upper snake case).
    pub const fn name(self) -> &'static str {
        match self {
            CacheEventType::Created => "CREATED",
            CacheEventType::Changed => "CHANGED",
            CacheEventType::Deleted => "DELETED",
            CacheEventType::Initialized => "INITIALIZED",
            CacheEventType::Resynced => "RESYNCED",
        }
    }

    /// The value with this [`name`](Self::name) (ASCII case-insensitive).
    pub fn from_name(name: &str) -> Result<CacheEventType> {
        Self::ALL
            .iter()
            .copied()
            .find(|t| t.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                let all: Vec<&str> = Self::ALL.iter().map(|t| t.name()).collect();
                Error::invalid(format!(
                    "unknown cache event type {name:?} (one of {})",
                    all.join(", ")
                ))
            })
    }
}

/// What a cache tells its listeners. `old` is the node before (Changed, Deleted), `new` after
/// (Created, Changed); both `None` for Initialized and Resynced. `resync` marks a difference
/// found by a resync walk, i.e. a change that happened while the watch could not report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheEvent {
    /// What happened.
    pub kind: CacheEventType,
    /// The node's path (the root's for Initialized and Resynced).
    pub path: String,
    /// The node before.
    pub old: Option<ChildData>,
    /// The node after.
    pub new: Option<ChildData>,
    /// Found by a resync walk after a reconnect or a new session.
    pub resync: bool,
}

/// A path filter: `false` leaves the node and everything below it out of the cache.
pub type PathFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// PathChildrenCache's start modes (Curator's `PathChildrenCache.StartMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StartMode {
    /// Created events for the children found by the initial load, and no Initialized event.
    #[default]
    Normal,
    /// `start` returns once the initial load is complete; no events for what it found.
    BuildInitialCache,
    /// Created events for the initial children, then Initialized.
    PostInitializedEvent,
}

impl StartMode {
    /// Every value, in declaration order.
    pub const ALL: &'static [StartMode] = &[
        StartMode::Normal,
        StartMode::BuildInitialCache,
        StartMode::PostInitializedEvent,
    ];

    /// The one spelling every face uses.
    pub const fn name(self) -> &'static str {
        match self {
            StartMode::Normal => "NORMAL",
            StartMode::BuildInitialCache => "BUILD_INITIAL_CACHE",
            StartMode::PostInitializedEvent => "POST_INITIALIZED_EVENT",
        }
    }

    /// The value with this [`name`](Self::name) (ASCII case-insensitive).
    pub fn from_name(name: &str) -> Result<StartMode> {
        Self::ALL
            .iter()
            .copied()
            .find(|t| t.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                let all: Vec<&str> = Self::ALL.iter().map(|t| t.name()).collect();
                Error::invalid(format!(
                    "unknown start mode {name:?} (one of {})",
                    all.join(", ")
                ))
            })
    }
}

/// How a cache is built. `CacheOptions::default()` is a [`CuratorCache`]'s: the whole subtree
/// with data.
#[derive(Clone)]
pub struct CacheOptions {
    /// Keep each node's data (else its stat only, read with `exists`).
    pub data: bool,
    /// The deepest level kept: 0 is the root alone, 1 its children, ...; `None` for no limit.
    pub max_depth: Option<usize>,
    /// Leaves out the nodes it returns `false` for, with everything below them.
    pub path_filter: Option<PathFilter>,
    /// Whether the root itself is part of the cache (not for a [`PathChildrenCache`]).
    pub include_root: bool,
    /// Created events for what the initial load finds.
    pub initial_events: bool,
    /// One Initialized event when the initial load is complete.
    pub initialized_event: bool,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            data: true,
            max_depth: None,
            path_filter: None,
            include_root: true,
            initial_events: true,
            initialized_event: true,
        }
    }
}

impl std::fmt::Debug for CacheOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheOptions")
            .field("data", &self.data)
            .field("max_depth", &self.max_depth)
            .field("path_filter", &self.path_filter.is_some())
            .field("include_root", &self.include_root)
            .field("initial_events", &self.initial_events)
            .field("initialized_event", &self.initialized_event)
            .finish()
    }
}

impl CacheOptions {
    /// Stats only ([`data`](Self::data) false).
    pub fn stat_only(mut self) -> Self {
        self.data = false;
        self
    }

    /// A depth limit.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// A path filter.
    pub fn path_filter(mut self, f: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.path_filter = Some(Arc::new(f));
        self
    }
}
