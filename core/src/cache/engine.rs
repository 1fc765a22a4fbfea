//! The cache engine: one task per cache owning the watch, the reads in flight and the walk
//! state; the snapshot it publishes is shared with the cache's readers (see the module notes
//! of [`crate::cache`]).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::{CacheEvent, CacheEventType, CacheOptions, ChildData};
use crate::client::{
    AddWatchMode, NodeEventKind, NodeRead, PersistentWatch, Session, Stat, WatchEvent, WeakClient,
};
use crate::dispatch::Dispatcher;
use crate::{path, runtime, Error, Result};

/// The snapshot: path → node, sorted by path.
pub(crate) type Map = BTreeMap<String, Node>;

/// A cached node (its path is the map's key).
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub(crate) data: Option<Arc<[u8]>>,
    pub(crate) stat: Stat,
}

/// Reads in flight at most: enough to hide the round trip, bounded so that a huge tree does
/// not queue its whole load in the client at once.
const IN_FLIGHT: usize = 1024;

/// The pause before asking for a session again after a read failed on the old one.
const SESSION_RETRY: Duration = Duration::from_millis(200);

/// What the cache's waiters watch.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Progress {
    pub(crate) initialized: bool,
    pub(crate) resyncs: u64,
    pub(crate) ended: bool,
}

/// What the engine task and the cache's readers share.
pub(crate) struct Shared {
    pub(crate) root: String,
    pub(crate) opts: CacheOptions,
    pub(crate) map: RwLock<Arc<Map>>,
    pub(crate) dispatcher: Dispatcher<CacheEvent>,
    pub(crate) progress: watch::Sender<Progress>,
}

impl Shared {
    pub(crate) fn new(root: &str, opts: CacheOptions) -> Shared {
        Shared {
            root: root.to_string(),
            opts,
            map: RwLock::new(Arc::new(Map::new())),
            dispatcher: Dispatcher::new(),
            progress: watch::channel(Progress::default()).0,
        }
    }

    /// The current snapshot.
    pub(crate) fn snapshot(&self) -> Arc<Map> {
        self.map.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How far below the root `p` is (the root is 0).
    fn depth(&self, p: &str) -> usize {
        let rest = if self.root == "/" {
            &p[1..]
        } else {
            p.get(self.root.len()..).unwrap_or("")
        };
        rest.split('/').filter(|s| !s.is_empty()).count()
    }

    /// Whether `p` (the root or below it) belongs in the cache: within the depth limit and
    /// accepted by the filter with all its ancestors below the root.
    fn in_scope(&self, p: &str) -> bool {
        let below = p == self.root
            || (p.starts_with(&self.root)
                && (self.root == "/" || p.as_bytes().get(self.root.len()) == Some(&b'/')));
        if !below {
            return false;
        }
        if self.opts.max_depth.is_some_and(|m| self.depth(p) > m) {
            return false;
        }
        match &self.opts.path_filter {
            None => true,
            Some(f) => {
                let mut end = if self.root == "/" { 0 } else { self.root.len() };
                if !f(&self.root) {
                    return false;
                }
                while end < p.len() {
                    end = p[end + 1..].find('/').map_or(p.len(), |i| end + 1 + i);
                    if !f(&p[..end]) {
                        return false;
                    }
                }
                true
            }
        }
    }
}

/// `ChildData` of a snapshot entry.
pub(crate) fn child_data(path: &str, node: &Node) -> ChildData {
    ChildData {
        path: path.to_string(),
        data: node.data.clone(),
        stat: node.stat,
    }
}

/// What a cache asks its engine.
pub(crate) enum Cmd {
    /// Answer once every change committed before this was asked has been applied.
    Fence(oneshot::Sender<()>),
}

type ReadFuture = Pin<Box<dyn Future<Output = Result<Option<NodeRead>>> + Send>>;
type ChildrenFuture = Pin<Box<dyn Future<Output = Result<Option<Vec<String>>>> + Send>>;
type SessionFuture = Pin<Box<dyn Future<Output = Result<Session>> + Send>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A watch event asked for it.
    Event,
    /// Walk number n asked for it (and wants its children).
    Walk(u64),
}

enum Want {
    Read {
        path: String,
        origin: Origin,
    },
    /// A walk lists a node's children (only nodes that have some, and only when the child set
    /// may have changed). `pzxid`: the walk's read of the node found it so.
    Children {
        path: String,
        epoch: u64,
        pzxid: i64,
    },
    Fence(Fence),
}

/// A fence in the queue, and the reads failed (`Engine::failed_reads`) when it was queued.
struct Fence {
    tx: oneshot::Sender<()>,
    failed_reads: u64,
}

enum Pending {
    Read {
        path: String,
        origin: Origin,
        /// The engine's walk epoch when the read was sent: a reply to a read sent before the
        /// current walk began may tell of the time before a disconnect.
        sent: u64,
        fut: ReadFuture,
    },
    Children {
        path: String,
        epoch: u64,
        pzxid: i64,
        fut: ChildrenFuture,
    },
    Fence(Fence),
}

struct Walk {
    epoch: u64,
    resync: bool,
    seen: HashSet<String>,
    outstanding: usize,
    /// The nodes whose children this walk listed (or found unchanged), at the pzxid its read of
    /// the node found: once the walk is complete, the cache holds exactly those children.
    listed: HashMap<String, i64>,
}

enum Step {
    Cmd(Option<Cmd>),
    Watch(Option<WatchEvent>),
    Synced(bool, oneshot::Sender<()>),
    Read(Result<Option<NodeRead>>),
    Children(Result<Option<Vec<String>>>),
    Fence,
    Session(Result<Session>),
}

/// The engine task's state.
pub(crate) struct Engine {
    sh: Arc<Shared>,
    client: WeakClient,
    session: Option<Session>,
    session_fut: Option<SessionFuture>,
    want: VecDeque<Want>,
    pending: VecDeque<Pending>,
    walk: Option<Walk>,
    epoch: u64,
    /// The last complete walk's [`Walk::listed`]: a node read again at the same pzxid (the
    /// zxid of the last change to its child set) has exactly the children the cache holds, and
    /// is not listed again. Only a complete walk says so: a node's stat stored by a read that
    /// listed nothing (a watch event's, or a walk's whose listing was lost with the
    /// connection) says nothing of the children the cache holds.
    listed: HashMap<String, i64>,
    initialized: bool,
    /// Fences to fence once there is a session: asked for without one, or their sync failed.
    fences_waiting: Vec<oneshot::Sender<()>>,
    /// Fences that reached the front of the queue during a walk, or between a disconnect and
    /// the resync walk it calls for: answered when that walk completes.
    fences_after_walk: Vec<Fence>,
    /// Reads and listings that failed with the connection or the session so far. Each was
    /// queued again at the back, behind the fences queued before it failed: those are fenced
    /// again instead of answered (`answer`).
    failed_reads: u64,
    /// Changes may have been missed (a disconnect) and no resync walk has completed since.
    stale: bool,
    /// The watch was removed (seen while draining): set it again.
    removed: bool,
    synced_tx: mpsc::UnboundedSender<(bool, oneshot::Sender<()>)>,
    synced_rx: mpsc::UnboundedReceiver<(bool, oneshot::Sender<()>)>,
}

impl Engine {
    pub(crate) fn new(sh: Arc<Shared>, client: WeakClient) -> Engine {
        let (synced_tx, synced_rx) = mpsc::unbounded_channel();
        Engine {
            sh,
            client,
            session: None,
            session_fut: None,
            want: VecDeque::new(),
            pending: VecDeque::new(),
            walk: None,
            epoch: 0,
            listed: HashMap::new(),
            initialized: false,
            fences_waiting: Vec::new(),
            fences_after_walk: Vec::new(),
            failed_reads: 0,
            stale: false,
            removed: false,
            synced_tx,
            synced_rx,
        }
    }

    /// Runs until the cache is closed (its command channel dropped) or the client is.
    pub(crate) async fn run(
        mut self,
        mut watch: PersistentWatch,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
    ) {
        self.want_session(Duration::ZERO);
        self.begin_walk();
        loop {
            self.issue();
            let step = {
                let pending = &mut self.pending;
                let session_fut = &mut self.session_fut;
                let synced = &mut self.synced_rx;
                tokio::select! {
                    biased;
                    c = cmds.recv() => Step::Cmd(c),
                    e = watch.next() => Step::Watch(e),
                    Some((ok, tx)) = synced.recv() => Step::Synced(ok, tx),
                    s = async { session_fut.as_mut().expect("guarded").await }, if session_fut.is_some() => Step::Session(s),
                    r = front(pending), if !pending.is_empty() => r,
                }
            };
            if self.removed {
                // A drain took WATCH_REMOVED (while a reply was handled): the old watch ends
                // after it, and this step may be that end, read from the old watch. It is not
                // the new watch's end: only the other steps are handled (the end had stopped
                // the cache, which then never resynced).
                self.removed = false;
                match self.watch_again().await {
                    Some(w) => watch = w,
                    None => break,
                }
                if matches!(step, Step::Watch(_)) {
                    continue;
                }
            }
            match step {
                Step::Cmd(None) | Step::Watch(None) => break,
                Step::Cmd(Some(Cmd::Fence(tx))) => self.fence(tx),
                Step::Watch(Some(WatchEvent::Removed)) => match self.watch_again().await {
                    Some(w) => watch = w,
                    None => break,
                },
                Step::Watch(Some(e)) => self.on_watch(e),
                Step::Synced(ok, tx) => {
                    if ok {
                        // The pump has handed on every event sent before the exists reply
                        // (see `fence`): take them, then queue the fence behind their reads.
                        if !self.drain(&mut watch) {
                            break;
                        }
                        self.want.push_back(Want::Fence(Fence {
                            tx,
                            failed_reads: self.failed_reads,
                        }));
                    } else {
                        self.fences_waiting.push(tx);
                        self.lost_session();
                    }
                }
                Step::Session(Ok(s)) => {
                    self.session_fut = None;
                    self.session = Some(s);
                    for tx in std::mem::take(&mut self.fences_waiting) {
                        self.fence(tx);
                    }
                }
                Step::Session(Err(e)) => {
                    self.session_fut = None;
                    if matches!(e, Error::Closed(_)) {
                        break;
                    }
                    self.want_session(SESSION_RETRY);
                }
                Step::Fence => {
                    if let Some(Pending::Fence(f)) = self.pending.pop_front() {
                        if self.walk.is_some() || self.stale {
                            // A walk in progress (a resync) queues reads behind this fence as
                            // it finds children, and after a disconnect one is due: the
                            // snapshot is only current once it is done.
                            self.fences_after_walk.push(f);
                        } else {
                            self.answer(f);
                        }
                    }
                }
                Step::Read(r) => {
                    // Events that arrived before this reply are queued: take them first.
                    if !self.drain(&mut watch) {
                        break;
                    }
                    if let Some(Pending::Read {
                        path, origin, sent, ..
                    }) = self.pending.pop_front()
                    {
                        self.apply(path, origin, sent, r);
                    }
                }
                Step::Children(r) => {
                    if let Some(Pending::Children {
                        path, epoch, pzxid, ..
                    }) = self.pending.pop_front()
                    {
                        self.apply_children(path, epoch, pzxid, r);
                    }
                }
            }
        }
        self.sh.progress.send_modify(|p| p.ended = true);
        tracing::debug!(path = %self.sh.root, "cache engine stopped");
    }

    /// Takes the watch events already received, without waiting; false if the watch ended.
    fn drain(&mut self, watch: &mut PersistentWatch) -> bool {
        loop {
            match watch.try_next() {
                Some(Some(WatchEvent::Removed)) => {
                    self.removed = true;
                    return true;
                }
                Some(Some(e)) => self.on_watch(e),
                Some(None) => return false,
                None => return true,
            }
        }
    }

    /// The watch was removed (`Client::remove_watches`): a cache lives until closed, so it
    /// sets its watch again and walks the tree (changes meanwhile were not heard). `None` once
    /// the client is closed or gone.
    async fn watch_again(&mut self) -> Option<PersistentWatch> {
        let mode = if self.sh.opts.max_depth == Some(0) {
            AddWatchMode::Persistent
        } else {
            AddWatchMode::PersistentRecursive
        };
        loop {
            let client = self.client.upgrade()?;
            match client.add_watch(&self.sh.root, mode).await {
                Ok(w) => {
                    tracing::debug!(path = %self.sh.root, "cache watch removed; set again, resyncing");
                    self.on_watch(WatchEvent::Reconnected);
                    return Some(w);
                }
                Err(Error::Closed(_)) => return None,
                Err(e) => {
                    tracing::debug!(path = %self.sh.root, error = %e, "could not set the cache's watch again; trying again");
                    let closed = client.closed();
                    drop(client);
                    tokio::select! {
                        _ = tokio::time::sleep(SESSION_RETRY) => {}
                        _ = closed => return None,
                    }
                }
            }
        }
    }

    fn on_watch(&mut self, e: WatchEvent) {
        match e {
            WatchEvent::Node(ev) => {
                let relevant = matches!(
                    ev.kind,
                    NodeEventKind::Created | NodeEventKind::Deleted | NodeEventKind::DataChanged
                );
                if relevant && self.sh.in_scope(&ev.path) {
                    self.want.push_back(Want::Read {
                        path: ev.path,
                        origin: Origin::Event,
                    });
                }
            }
            WatchEvent::Disconnected | WatchEvent::SessionLost => {
                tracing::debug!(path = %self.sh.root, event = ?e, "cache watch interrupted");
                self.stale = true;
                self.session = None;
                self.session_fut = None;
            }
            WatchEvent::Removed => self.removed = true,
            WatchEvent::Reconnected => {
                // Changes made while disconnected were not reported: walk the tree again.
                tracing::debug!(path = %self.sh.root, "cache resyncing after a reconnect");
                self.session = None;
                self.want_session(Duration::ZERO);
                self.begin_walk();
            }
        }
    }

    fn want_session(&mut self, delay: Duration) {
        let Some(client) = self.client.upgrade() else {
            return;
        };
        self.session_fut = Some(Box::pin(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            client.session().await
        }));
    }

    /// A read failed with the session's connection: stop sending until we have one again.
    fn lost_session(&mut self) {
        if self.session.take().is_some() && self.session_fut.is_none() {
            self.want_session(SESSION_RETRY);
        }
    }

    fn begin_walk(&mut self) {
        self.epoch += 1;
        let epoch = self.epoch;
        // Reads an older walk still wanted are covered by this one.
        self.want.retain(|w| {
            !matches!(
                w,
                Want::Read {
                    origin: Origin::Walk(_),
                    ..
                } | Want::Children { .. }
            )
        });
        self.walk = Some(Walk {
            epoch,
            resync: self.initialized,
            seen: HashSet::new(),
            outstanding: 1,
            listed: HashMap::new(),
        });
        self.want.push_back(Want::Read {
            path: self.sh.root.clone(),
            origin: Origin::Walk(epoch),
        });
    }

    /// Queues fence `tx` (answered once it reaches the front of the queue, see `Step::Fence`)
    /// behind the reads of every change committed before now.
    fn fence(&mut self, tx: oneshot::Sender<()>) {
        let Some(s) = self.session.clone() else {
            self.fences_waiting.push(tx);
            return;
        };
        let Some(client) = self.client.upgrade() else {
            return; // the client is gone: so is the cache (the waiter hears Closed)
        };
        let watches = Arc::downgrade(client.watches());
        drop(client);
        let root = self.sh.root.clone();
        let done = self.synced_tx.clone();
        runtime::spawn(async move {
            // sync: the server catches up with the leader; the read after it is answered only
            // after every watch event of a change before the sync has been sent to us. The
            // wire client has given those events to the watch when the reply comes, but the
            // path's pump (another task) may not have handed them on yet: the flush has it do
            // so, and the engine takes them (`Step::Synced`) before it queues the fence.
            let ok = s.sync(&root).await.is_ok()
                && s.exists(&root).await.is_ok()
                && match watches.upgrade().map(|w| w.flush(&root)) {
                    Some(flushed) => flushed.await,
                    None => false,
                };
            let _ = done.send((ok, tx));
        });
    }

    /// A read or listing failed with the connection or the session: it is wanted again, on
    /// the next connection, at the back of the queue (a walk, if one follows, covers it too).
    fn read_again(&mut self, w: Want) {
        self.want.push_back(w);
        self.failed_reads += 1;
        self.lost_session();
    }

    /// Answers a fence that has reached the front of the queue (and waited for the walk, if
    /// one was due) — unless a read failed since it was queued: that read went to the back of
    /// the queue, behind the fence, and is not applied yet. Then it is fenced again, which
    /// queues it behind that read.
    fn answer(&mut self, f: Fence) {
        if f.failed_reads == self.failed_reads {
            let _ = f.tx.send(());
        } else {
            self.fence(f.tx);
        }
    }

    /// Sends wanted reads while there is a session and room in flight.
    fn issue(&mut self) {
        let Some(s) = self.session.as_ref() else {
            return;
        };
        while self.pending.len() < IN_FLIGHT {
            let Some(w) = self.want.pop_front() else {
                break;
            };
            match w {
                Want::Fence(f) => self.pending.push_back(Pending::Fence(f)),
                Want::Read { path, origin } => {
                    // Data (or the stat) only: its stat says whether there are children to list.
                    let fut = Box::pin(s.read_node(&path, self.sh.opts.data));
                    self.pending.push_back(Pending::Read {
                        path,
                        origin,
                        sent: self.epoch,
                        fut,
                    });
                }
                Want::Children { path, epoch, pzxid } => {
                    let fut = Box::pin(s.read_children(&path));
                    self.pending.push_back(Pending::Children {
                        path,
                        epoch,
                        pzxid,
                        fut,
                    });
                }
            }
        }
    }

    fn apply(&mut self, path: String, origin: Origin, sent: u64, r: Result<Option<NodeRead>>) {
        let current = match (origin, self.walk.as_ref()) {
            (Origin::Walk(e), Some(w)) => w.epoch == e,
            _ => false,
        };
        let resync = current && self.walk.as_ref().is_some_and(|w| w.resync);
        // Only a read sent during the current walk tells the walk that the node is there: one
        // sent before it (before the disconnect that called for it) may have been answered
        // before the node was deleted, and the walk then keeps a node its parent's listing
        // no longer has.
        let this_walk = self.walk.as_ref().is_some_and(|w| w.epoch == sent);
        match r {
            Err(e @ (Error::ConnectionLoss(_) | Error::SessionExpired(_))) => {
                tracing::debug!(path = %path, error = %e, "cache read failed; read again later");
                self.read_again(Want::Read { path, origin });
                return;
            }
            Err(Error::Closed(_)) => return,
            Err(e) => {
                tracing::warn!(path = %path, error = %e, "cache could not read a node; keeping what it had");
                if let Some(w) = self.walk.as_mut().filter(|_| this_walk) {
                    let snap = self.sh.snapshot();
                    for (p, _) in subtree(&snap, &path) {
                        w.seen.insert(p.clone());
                    }
                }
            }
            Ok(None) => self.remove(&path, resync),
            Ok(Some(read)) => {
                let stat = read.stat;
                self.put(&path, read.data, stat, resync);
                if let Some(w) = self.walk.as_mut().filter(|_| this_walk) {
                    w.seen.insert(path.clone());
                }
                let deeper = self
                    .sh
                    .opts
                    .max_depth
                    .map_or(true, |m| self.sh.depth(&path) < m);
                if current && deeper && stat.num_children > 0 {
                    let epoch = self.epoch;
                    if self.listed.get(&path) == Some(&stat.pzxid) {
                        // The child set the last complete walk listed, unchanged since (pzxid
                        // is the zxid of the last child created or deleted); the cache has
                        // followed those children since: read them, no listing needed.
                        self.walk
                            .as_mut()
                            .expect("current walk")
                            .listed
                            .insert(path.clone(), stat.pzxid);
                        let snap = self.sh.snapshot();
                        let depth = self.sh.depth(&path) + 1;
                        let kids: Vec<String> = subtree(&snap, &path)
                            .map(|(k, _)| k)
                            .filter(|k| self.sh.depth(k) == depth)
                            .cloned()
                            .collect();
                        self.walk_into(kids, epoch);
                    } else {
                        self.walk.as_mut().expect("current walk").outstanding += 1;
                        self.want.push_back(Want::Children {
                            path,
                            epoch,
                            pzxid: stat.pzxid,
                        });
                    }
                }
            }
        }
        if current {
            self.walk_done();
        }
    }

    /// Queues walk reads of `paths` (those in scope) for walk `epoch`.
    fn walk_into(&mut self, paths: Vec<String>, epoch: u64) {
        for p in paths {
            if self.sh.in_scope(&p) {
                self.walk.as_mut().expect("current walk").outstanding += 1;
                self.want.push_back(Want::Read {
                    path: p,
                    origin: Origin::Walk(epoch),
                });
            }
        }
    }

    /// One read of the current walk is done; the walk ends with its last.
    fn walk_done(&mut self) {
        let w = self.walk.as_mut().expect("current walk");
        w.outstanding -= 1;
        if w.outstanding == 0 {
            self.finish_walk();
        }
    }

    fn apply_children(
        &mut self,
        path: String,
        epoch: u64,
        pzxid: i64,
        r: Result<Option<Vec<String>>>,
    ) {
        let current = self.walk.as_ref().is_some_and(|w| w.epoch == epoch);
        if !current {
            return; // an older walk's listing: the current walk lists again
        }
        let resync = self.walk.as_ref().is_some_and(|w| w.resync);
        match r {
            Err(e @ (Error::ConnectionLoss(_) | Error::SessionExpired(_))) => {
                tracing::debug!(path = %path, error = %e, "cache listing failed; list again later");
                self.read_again(Want::Children { path, epoch, pzxid });
                return;
            }
            Err(Error::Closed(_)) => return,
            Err(e) => {
                tracing::warn!(path = %path, error = %e, "cache could not list children; keeping what it had");
                let snap = self.sh.snapshot();
                let w = self.walk.as_mut().expect("current walk");
                for (p, _) in subtree(&snap, &path) {
                    w.seen.insert(p.clone());
                }
            }
            Ok(None) => self.remove(&path, resync),
            Ok(Some(names)) => {
                let kids = names.iter().map(|c| path::join(&path, c)).collect();
                let w = self.walk.as_mut().expect("current walk");
                w.listed.insert(path, pzxid);
                self.walk_into(kids, epoch);
            }
        }
        self.walk_done();
    }

    /// Emits `events` and applies `change` to the snapshot under one write lock, so that a
    /// listener taking a snapshot for a replay sees either both or neither.
    fn publish(&self, change: impl FnOnce(&mut Map, &mut Vec<CacheEvent>)) {
        let mut guard = self.sh.map.write().unwrap_or_else(|e| e.into_inner());
        let mut events = Vec::new();
        change(Arc::make_mut(&mut guard), &mut events);
        let quiet = !self.initialized && !self.sh.opts.initial_events;
        for ev in events {
            if !quiet || matches!(ev.kind, CacheEventType::Initialized) {
                self.sh.dispatcher.emit(ev);
            }
        }
    }

    fn put(&self, p: &str, data: Option<Vec<u8>>, stat: Stat, resync: bool) {
        if p == self.sh.root && !self.sh.opts.include_root {
            return;
        }
        let new = Node {
            data: data.map(Arc::from),
            stat,
        };
        self.publish(|map, events| {
            let ev = |kind, old: Option<&Node>, new: Option<&Node>| CacheEvent {
                kind,
                path: p.to_string(),
                old: old.map(|n| child_data(p, n)),
                new: new.map(|n| child_data(p, n)),
                resync,
            };
            match map.get(p).cloned() {
                None => events.push(ev(CacheEventType::Created, None, Some(&new))),
                Some(old) if old.stat.czxid != stat.czxid => {
                    // Another node by the same path: the old one (and whatever of its subtree
                    // is older than the new node) is gone.
                    let gone: Vec<String> = subtree(map, p)
                        .filter(|(q, n)| q.as_str() != p && n.stat.czxid < stat.czxid)
                        .map(|(q, _)| q.clone())
                        .collect();
                    delete_all(map, events, &gone, resync);
                    events.push(ev(CacheEventType::Deleted, Some(&old), None));
                    events.push(ev(CacheEventType::Created, None, Some(&new)));
                }
                Some(old) if old.stat.mzxid != stat.mzxid || old.stat.version != stat.version => {
                    events.push(ev(CacheEventType::Changed, Some(&old), Some(&new)));
                }
                Some(_) => {} // same data; the stat may say more children
            }
            map.insert(p.to_string(), new);
        });
    }

    /// `p` is gone, and with it everything below it.
    fn remove(&self, p: &str, resync: bool) {
        self.publish(|map, events| {
            let gone: Vec<String> = subtree(map, p).map(|(q, _)| q.clone()).collect();
            delete_all(map, events, &gone, resync);
        });
    }

    fn finish_walk(&mut self) {
        let Some(w) = self.walk.take() else {
            return;
        };
        self.stale = false;
        let was_initialized = self.initialized;
        let root = self.sh.root.clone();
        let opts_initialized = self.sh.opts.initialized_event;
        // A node the walk did not find was not there when its parent was listed.
        self.publish(|map, events| {
            let gone: Vec<String> = map
                .keys()
                .filter(|k| !w.seen.contains(k.as_str()))
                .cloned()
                .collect();
            delete_all(map, events, &gone, w.resync);
            let kind = if was_initialized {
                Some(CacheEventType::Resynced)
            } else if opts_initialized {
                Some(CacheEventType::Initialized)
            } else {
                None
            };
            if let Some(kind) = kind {
                events.push(CacheEvent {
                    kind,
                    path: root.clone(),
                    old: None,
                    new: None,
                    resync: was_initialized,
                });
            }
        });
        // Only now: the first walk's removals (nodes it stored, gone when their parent was
        // listed again after a disconnect) are part of the initial load, as quiet as its
        // creations when initial events are off.
        self.initialized = true;
        self.listed = w.listed;
        self.sh.progress.send_modify(|p| {
            if was_initialized {
                p.resyncs += 1;
            }
            p.initialized = true;
        });
        tracing::debug!(path = %self.sh.root, resync = was_initialized, "cache walk complete");
        for f in std::mem::take(&mut self.fences_after_walk) {
            self.answer(f);
        }
    }
}

/// Removes `gone` (deepest first: children sort after their parent) with a Deleted event each.
fn delete_all(map: &mut Map, events: &mut Vec<CacheEvent>, gone: &[String], resync: bool) {
    for q in gone.iter().rev() {
        if let Some(n) = map.remove(q) {
            events.push(CacheEvent {
                kind: CacheEventType::Deleted,
                path: q.clone(),
                old: Some(child_data(q, &n)),
                new: None,
                resync,
            });
        }
    }
}

/// The entries at `p` and below it, in path order.
pub(crate) fn subtree<'a>(
    map: &'a Map,
    p: &'a str,
) -> impl Iterator<Item = (&'a String, &'a Node)> + 'a {
    let exact = map.get_key_value(p);
    let prefix = if p == "/" {
        String::from("/")
    } else {
        format!("{p}/")
    };
    let below = map
        .range(prefix.clone()..)
        .take_while(move |(k, _)| k.starts_with(&prefix))
        .filter(move |(k, _)| k.as_str() != p);
    exact.into_iter().chain(below)
}

/// The front of the queue: its reply, or at once for a fence (which waits for nothing but its
/// place).
async fn front(pending: &mut VecDeque<Pending>) -> Step {
    match pending.front_mut() {
        Some(Pending::Read { fut, .. }) => Step::Read(fut.as_mut().await),
        Some(Pending::Children { fut, .. }) => Step::Children(fut.as_mut().await),
        Some(Pending::Fence(_)) => Step::Fence,
        None => std::future::pending().await,
    }
}
