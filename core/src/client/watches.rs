//! The client's watches: one shared persistent watch per path, the one-shot watches it holds,
//! and [`Client::remove_watches`].
//!
//! # One persistent watch per path, shared
//!
//! ZooKeeper 3.8 keeps one persistent-watch mode per path per session: a second `addWatch`
//! with the other mode replaces the first (ZOOKEEPER-4466, fixed in 3.9), and the first then
//! hears nothing below its path — Curator's silent loss when a NodeCache and a TreeCache share
//! a path. A client here sets at most one persistent watch per path on the server, shared by
//! every consumer on that path ([`Client::add_watch`] handles, [`PersistentWatcher`]s, caches),
//! reference-counted:
//!
//! - plain consumers alone are served by a `PERSISTENT` watch;
//! - once a recursive consumer joins, the path's watch becomes `PERSISTENT_RECURSIVE` and it
//!   serves the plain consumers too, filtered here: the node's own creation, deletion and data
//!   changes as they are, and the creation or deletion of a direct child as
//!   `CHILDREN_CHANGED` on the node (what a plain watch reports). It stays recursive until the
//!   path's last consumer leaves (no narrowing back: it would cost the plain consumers a
//!   reset). While the watch widens, a plain consumer may hear a notification about the node
//!   itself twice; it misses none;
//! - one task per path (the pump) reads the wire watch and hands each event to every consumer
//!   in the order the server sent them; it sets the watch again on a new session (consumers
//!   hear `SESSION_LOST`, then `RECONNECTED`);
//! - when the last consumer leaves, the wire watch is dropped (the wire client asks the
//!   server to remove it).
//!
//! [`PersistentWatcher`]: super::PersistentWatcher

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use zookeeper_client as zk;

use super::persistent::{PersistentWatch, WatchEvent};
use super::types::{AddWatchMode, NodeEvent, NodeEventKind, WatcherType};
use super::{wire, Client, WeakClient};
use crate::{path, runtime, Error, Result};

/// The pause before setting a persistent watch again after a failed try on a new session.
const SET_AGAIN_AFTER: Duration = Duration::from_millis(200);

/// What a one-shot watch watches (ZooKeeper's `WatcherType` for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OneshotKind {
    /// A data read or an exists check with a watch.
    Data,
    /// A children read with a watch.
    Children,
}

struct Oneshot {
    id: u64,
    kind: OneshotKind,
    removed: Option<oneshot::Sender<()>>,
}

struct Consumer {
    id: u64,
    mode: AddWatchMode,
    tx: mpsc::UnboundedSender<WatchEvent>,
}

/// A path's shared persistent watch: its consumers and its pump.
struct PathWatch {
    gen: u64,
    consumers: Vec<Consumer>,
    cmds: mpsc::UnboundedSender<Cmd>,
}

enum Cmd {
    /// Make the server watch cover this mode; answer once it does.
    Need(AddWatchMode, oneshot::Sender<Result<()>>),
    /// Set the watch again (a one-shot removal may have stripped it on the server) and tell
    /// the consumers to read again.
    Reset,
    /// Hand the consumers every event the wire watch holds, then answer (see
    /// [`Watches::flush`]).
    Flush(oneshot::Sender<()>),
}

/// The client's watch registry (one per client, in `Inner`).
#[derive(Default)]
pub(crate) struct Watches {
    next_id: AtomicU64,
    oneshots: Mutex<HashMap<String, Vec<Oneshot>>>,
    persistent: Mutex<HashMap<String, PathWatch>>,
}

/// A one-shot watch's place in the registry (held by [`super::Watch`]).
pub(crate) struct OneshotReg {
    watches: Weak<Watches>,
    path: String,
    id: u64,
    kind: OneshotKind,
    removed: oneshot::Receiver<()>,
    fired: bool,
}

impl OneshotReg {
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The server delivered the watch's event: it left the server by firing, not by removal.
    pub(crate) fn fired(&mut self) {
        self.fired = true;
    }

    /// Resolves once [`Client::remove_watches`] removed this watch (never otherwise).
    pub(crate) async fn removed(&mut self) {
        if (&mut self.removed).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for OneshotReg {
    fn drop(&mut self) {
        if let Some(w) = self.watches.upgrade() {
            {
                let mut map = lock(&w.oneshots);
                if let Some(list) = map.get_mut(&self.path) {
                    list.retain(|o| o.id != self.id);
                    if list.is_empty() {
                        map.remove(&self.path);
                    }
                }
            }
            // A one-shot watch dropped unfired is removed from the server by the wire client
            // (its drop, which runs before this one, queued the removal); before 3.9 that
            // strips the path's persistent watch of the same half (ZOOKEEPER-4471). Set it
            // again, after the removal on the same ordered connection.
            if !self.fired && w.shares_half(&self.path, self.kind) {
                w.reset(&self.path);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn wider(a: AddWatchMode, b: AddWatchMode) -> AddWatchMode {
    if a == AddWatchMode::PersistentRecursive || b == AddWatchMode::PersistentRecursive {
        AddWatchMode::PersistentRecursive
    } else {
        AddWatchMode::Persistent
    }
}

fn covers(have: AddWatchMode, need: AddWatchMode) -> bool {
    wider(have, need) == have
}

impl Watches {
    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(crate) fn register_oneshot(
        self: &Arc<Self>,
        _client: &Client,
        path: &str,
        kind: OneshotKind,
    ) -> OneshotReg {
        let id = self.id();
        let (tx, rx) = oneshot::channel();
        lock(&self.oneshots)
            .entry(path.to_string())
            .or_default()
            .push(Oneshot {
                id,
                kind,
                removed: Some(tx),
            });
        // Called once the server has set the one-shot watch. Before 3.9 a session keeps one
        // watch mode per path in each of the server's two watch tables (ZOOKEEPER-4466): a
        // one-shot watch set where this client holds a persistent one in the same table turned
        // it into a one-shot watch (deaf below the path, gone after its next event). Set the
        // persistent watch again; its consumers hear RECONNECTED and read again, so nothing
        // that changed in between is lost.
        if self.shares_half(path, kind) {
            self.reset(path);
        }
        OneshotReg {
            watches: Arc::downgrade(self),
            path: path.to_string(),
            id,
            kind,
            removed: rx,
            fired: false,
        }
    }

    /// Whether this client holds a persistent watch on `path` in the server's table where a
    /// one-shot watch of `kind` goes: the data table holds both persistent modes, the child
    /// table only the plain one (a recursive watch's wire mode is the widest its consumers ask).
    fn shares_half(&self, path: &str, kind: OneshotKind) -> bool {
        lock(&self.persistent)
            .get(path)
            .is_some_and(|e| match kind {
                OneshotKind::Data => !e.consumers.is_empty(),
                OneshotKind::Children => {
                    !e.consumers.is_empty()
                        && e.consumers
                            .iter()
                            .all(|c| c.mode == AddWatchMode::Persistent)
                }
            })
    }

    /// Registers a consumer of `mode` on `path` (starting the path's pump if it has none) and
    /// asks the pump to cover the mode; the consumer's handle and the pump's answer.
    pub(crate) fn join(
        self: &Arc<Self>,
        client: &Client,
        path: &str,
        mode: AddWatchMode,
    ) -> (PersistentWatch, oneshot::Receiver<Result<()>>) {
        let id = self.id();
        let (tx, rx) = mpsc::unbounded_channel();
        let (need_tx, need_rx) = oneshot::channel();
        let mut map = lock(&self.persistent);
        let entry = map.entry(path.to_string()).or_insert_with(|| {
            let (cmds, cmd_rx) = mpsc::unbounded_channel();
            let gen = self.id();
            runtime::spawn(pump(Pump {
                watches: Arc::downgrade(self),
                client: client.downgrade(),
                path: path.to_string(),
                prefix_len: client.namespace().len(),
                gen,
                cmds: cmd_rx,
            }));
            PathWatch {
                gen,
                consumers: Vec::new(),
                cmds,
            }
        });
        entry.consumers.push(Consumer { id, mode, tx });
        let _ = entry.cmds.send(Cmd::Need(mode, need_tx));
        drop(map);
        (
            PersistentWatch::new(Arc::downgrade(self), path, mode, id, rx),
            need_rx,
        )
    }

    /// A consumer leaves; the path's watch goes with its last consumer.
    pub(crate) fn leave(&self, path: &str, id: u64) {
        let mut map = lock(&self.persistent);
        if let Some(entry) = map.get_mut(path) {
            entry.consumers.retain(|c| c.id != id);
            if entry.consumers.is_empty() {
                // Dropping the command sender ends the pump, which drops the wire watch.
                map.remove(path);
            }
        }
    }

    fn has_persistent(&self, path: &str, modes: &[AddWatchMode]) -> bool {
        lock(&self.persistent)
            .get(path)
            .is_some_and(|e| e.consumers.iter().any(|c| modes.contains(&c.mode)))
    }

    fn has_oneshot(&self, path: &str, kinds: &[OneshotKind]) -> bool {
        lock(&self.oneshots)
            .get(path)
            .is_some_and(|l| l.iter().any(|o| kinds.contains(&o.kind)))
    }

    /// Ends the consumers of `modes` on `path`: each hears `WATCH_REMOVED`, then its stream
    /// ends. The path's watch goes if no consumer is left.
    fn remove_persistent(&self, path: &str, modes: &[AddWatchMode]) -> usize {
        let mut map = lock(&self.persistent);
        let Some(entry) = map.get_mut(path) else {
            return 0;
        };
        let (gone, kept): (Vec<Consumer>, Vec<Consumer>) = std::mem::take(&mut entry.consumers)
            .into_iter()
            .partition(|c| modes.contains(&c.mode));
        entry.consumers = kept;
        for c in &gone {
            let _ = c.tx.send(WatchEvent::Removed);
        }
        if entry.consumers.is_empty() {
            map.remove(path);
        }
        gone.len()
    }

    /// Wakes the one-shot watches of `kinds` on `path` with `WATCH_REMOVED`.
    fn remove_oneshots(&self, path: &str, kinds: &[OneshotKind]) -> usize {
        let mut map = lock(&self.oneshots);
        let Some(list) = map.get_mut(path) else {
            return 0;
        };
        let mut n = 0;
        for o in list.iter_mut().filter(|o| kinds.contains(&o.kind)) {
            if let Some(tx) = o.removed.take() {
                let _ = tx.send(());
                n += 1;
            }
        }
        list.retain(|o| o.removed.is_some());
        if list.is_empty() {
            map.remove(path);
        }
        n
    }

    /// Resolves once the pump of `path` has handed its consumers every event the wire client
    /// had given its watch when this was called (`true`; `false` if the pump ended first). A
    /// cache's fence (`Cache::await_zxid`) calls it after a reply: the wire client hands a
    /// watch an event before it completes the reply of any request the server answered after
    /// sending that event, so the events of every change the reply saw are then in the
    /// consumers' channels, whatever the order the tasks ran in. While the pump sets its watch
    /// (it does not read the wire watch then), the answer waits until the set is done.
    pub(crate) fn flush(&self, path: &str) -> impl Future<Output = bool> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        if let Some(e) = lock(&self.persistent).get(path) {
            let _ = e.cmds.send(Cmd::Flush(tx));
        }
        async move { rx.await.is_ok() }
    }

    /// Asks the pump of `path`, if there is one, to set its watch again.
    fn reset(&self, path: &str) {
        if let Some(e) = lock(&self.persistent).get(path) {
            let _ = e.cmds.send(Cmd::Reset);
        }
    }

    /// Hands `event` (from a watch of `source` mode) to the consumers of pump `gen` on `path`.
    fn emit(&self, path: &str, gen: u64, source: AddWatchMode, event: &WatchEvent) {
        let map = lock(&self.persistent);
        let Some(entry) = map.get(path).filter(|e| e.gen == gen) else {
            return;
        };
        for c in &entry.consumers {
            let e = match event {
                WatchEvent::Node(n) => match filter(path, c.mode, source, n) {
                    Some(n) => WatchEvent::Node(n),
                    None => continue,
                },
                other => other.clone(),
            };
            let _ = c.tx.send(e);
        }
    }

    /// The pump `gen` of `path` has ended: its consumers' streams end.
    fn ended(&self, path: &str, gen: u64) {
        let mut map = lock(&self.persistent);
        if map.get(path).is_some_and(|e| e.gen == gen) {
            map.remove(path);
        }
    }
}

/// What a consumer of `mode` hears of `e`, seen by a watch of `source` mode on `root`.
fn filter(
    root: &str,
    mode: AddWatchMode,
    source: AddWatchMode,
    e: &NodeEvent,
) -> Option<NodeEvent> {
    use AddWatchMode::{Persistent, PersistentRecursive};
    match (mode, source) {
        (PersistentRecursive, PersistentRecursive) | (Persistent, Persistent) => Some(e.clone()),
        // A recursive watch never reports CHILDREN_CHANGED (a plain one, being widened, may).
        (PersistentRecursive, Persistent) => {
            (e.kind != NodeEventKind::ChildrenChanged).then(|| e.clone())
        }
        (Persistent, PersistentRecursive) => {
            if e.path == root {
                Some(e.clone())
            } else if e.path != "/"
                && path::parent(&e.path) == root
                && matches!(e.kind, NodeEventKind::Created | NodeEventKind::Deleted)
            {
                Some(NodeEvent {
                    kind: NodeEventKind::ChildrenChanged,
                    path: root.to_string(),
                })
            } else {
                None
            }
        }
    }
}

/// The state of one path's pump task.
struct Pump {
    watches: Weak<Watches>,
    client: WeakClient,
    path: String,
    prefix_len: usize,
    gen: u64,
    cmds: mpsc::UnboundedReceiver<Cmd>,
}

/// The wire watch a pump reads, its mode, and the session it was set on.
struct Wire {
    mode: AddWatchMode,
    watcher: zk::PersistentWatcher,
    session: i64,
}

enum Got {
    Cmd(Option<Cmd>),
    Event(zk::WatchedEvent),
}

/// One path's pump: sets the watch, hands its events to the path's consumers, sets it again
/// on a new session; ends when the path's last consumer leaves or the client is closed.
async fn pump(mut p: Pump) {
    let mut wire: Option<Wire> = None;
    // The widest mode asked for, and who waits for it to be set.
    let mut want: Option<AddWatchMode> = None;
    let mut waiting: Vec<(AddWatchMode, oneshot::Sender<Result<()>>)> = Vec::new();
    // The session that ended with the watch on it: set the watch again on another one, then
    // tell the consumers.
    let mut lost: Option<i64> = None;
    let mut reset = false;
    // Flushes asked for and not answered yet (answered only here, before the pump reads its
    // wire watch again: not while a set runs).
    let mut flushes: Vec<oneshot::Sender<()>> = Vec::new();
    'pump: loop {
        let needs_set = match (want, wire.as_ref()) {
            (Some(w), Some(cur)) => reset || !covers(cur.mode, w),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !needs_set && !flushes.is_empty() {
            // What the wire watch holds now came before the flush was asked: hand it on first.
            while let Some(e) = wire.as_mut().and_then(|w| try_changed(&mut w.watcher)) {
                if !on_event(&p, &mut wire, &mut lost, &e) {
                    break 'pump;
                }
            }
            for tx in flushes.drain(..) {
                let _ = tx.send(());
            }
            continue;
        }
        if needs_set {
            let mode = want.expect("checked");
            let Some(client) = p.client.upgrade() else {
                break;
            };
            let path = p.path.as_str();
            // A reset asked for while this set runs needs a set after it.
            let mut reset_after = false;
            let r = {
                let client = &client;
                let set = async move {
                    if let Some(id) = lost {
                        client.session_after(id).await;
                    }
                    client
                        .retry(|s| async move {
                            let id = s.id();
                            s.add_watch(path, mode).await.map(|w| (w, id))
                        })
                        .await
                };
                tokio::pin!(set);
                loop {
                    tokio::select! {
                        r = &mut set => break r,
                        c = p.cmds.recv() => match c {
                            None => break 'pump,
                            Some(Cmd::Need(m, tx)) => {
                                // Answered once this (or a later, wider) set is done.
                                want = Some(wider(mode, m));
                                waiting.push((m, tx));
                            }
                            Some(Cmd::Reset) => reset_after = true,
                            Some(Cmd::Flush(tx)) => flushes.push(tx),
                        },
                    }
                }
            };
            let closed = client.is_closed();
            drop(client);
            match r {
                Ok((w, session)) => {
                    // Events the old watch got before the new one was set. A set (a widening)
                    // that straddled a connection change is a renewal: what changed meanwhile
                    // was not reported, and consumers resync on the Reconnected below.
                    let straddled = wire.take().is_some_and(|old| {
                        let other_session = old.session != session;
                        drain(&p, old) || other_session
                    });
                    wire = Some(Wire {
                        mode,
                        watcher: w,
                        session,
                    });
                    let renewed = lost.is_some() || reset || straddled;
                    lost = None;
                    reset = reset_after;
                    let (done, still): (Vec<_>, Vec<_>) =
                        waiting.drain(..).partition(|(m, _)| covers(mode, *m));
                    waiting = still;
                    for (_, tx) in done {
                        let _ = tx.send(Ok(()));
                    }
                    if renewed {
                        emit(&p, mode, &WatchEvent::Reconnected);
                    }
                    tracing::debug!(path = %p.path, ?mode, "persistent watch set");
                }
                Err(e) => {
                    if matches!(e, Error::Closed(_)) || closed {
                        break;
                    }
                    for (_, tx) in waiting.drain(..) {
                        let _ = tx.send(Err(e.clone()));
                    }
                    reset = reset || reset_after;
                    if lost.is_some() || reset {
                        // Consumers rely on it: try again after a pause.
                        tracing::debug!(path = %p.path, error = %e, "could not set the persistent watch again; trying again");
                        tokio::select! {
                            _ = tokio::time::sleep(SET_AGAIN_AFTER) => {}
                            c = p.cmds.recv() => match c {
                                None => break,
                                Some(Cmd::Need(m, tx)) => {
                                    want = Some(want.map_or(m, |w| wider(w, m)));
                                    waiting.push((m, tx));
                                }
                                Some(Cmd::Reset) => {}
                                Some(Cmd::Flush(tx)) => flushes.push(tx),
                            },
                        }
                    } else {
                        // A first set or a widening failed: its joiners got the error (and
                        // leave); the watch there is, if any, stays as it is.
                        want = wire.as_ref().map(|w| w.mode);
                    }
                }
            }
            continue;
        }
        let got = match wire.as_mut() {
            Some(w) => tokio::select! {
                biased;
                c = p.cmds.recv() => Got::Cmd(c),
                e = w.watcher.changed() => Got::Event(e),
            },
            None => Got::Cmd(p.cmds.recv().await),
        };
        match got {
            Got::Cmd(None) => break,
            Got::Cmd(Some(Cmd::Need(m, tx))) => {
                want = Some(want.map_or(m, |w| wider(w, m)));
                match wire.as_ref() {
                    Some(w) if covers(w.mode, m) => {
                        let _ = tx.send(Ok(()));
                    }
                    _ => waiting.push((m, tx)),
                }
            }
            Got::Cmd(Some(Cmd::Reset)) => reset = wire.is_some(),
            Got::Cmd(Some(Cmd::Flush(tx))) => flushes.push(tx),
            Got::Event(e) => {
                if !on_event(&p, &mut wire, &mut lost, &e) {
                    break;
                }
            }
        }
    }
    for (_, tx) in waiting {
        let _ = tx.send(Err(Error::closed()));
    }
    if let Some(w) = p.watches.upgrade() {
        w.ended(&p.path, p.gen);
    }
    // Dropping the wire watch asks the server to remove it.
    drop(wire);
    tracing::debug!(path = %p.path, "persistent watch pump ended");
}

/// Hands on event `e` of the current wire watch; false once the client is gone (the pump ends).
fn on_event(
    p: &Pump,
    wire: &mut Option<Wire>,
    lost: &mut Option<i64>,
    e: &zk::WatchedEvent,
) -> bool {
    let mode = wire.as_ref().expect("read from it").mode;
    match event(p, e) {
        Some(ev) => emit(p, mode, &ev),
        None => {
            // Terminal: this watcher hears nothing more (and must not be polled again). Set it
            // again on the client's next session.
            let ended = wire.take().expect("read from it").session;
            let gone = p.client.upgrade().map_or(true, |c| c.is_closed());
            if gone {
                return false;
            }
            *lost = Some(ended);
            emit(p, mode, &WatchEvent::SessionLost);
        }
    }
    true
}

fn emit(p: &Pump, mode: AddWatchMode, e: &WatchEvent) {
    if let Some(w) = p.watches.upgrade() {
        w.emit(&p.path, p.gen, mode, e);
    }
}

/// A wire event as ours; `None` for a terminal session state.
fn event(p: &Pump, e: &zk::WatchedEvent) -> Option<WatchEvent> {
    if e.event_type != zk::EventType::Session {
        let path = if e.path.len() >= p.prefix_len {
            &e.path[p.prefix_len..]
        } else {
            &e.path
        };
        return Some(WatchEvent::Node(NodeEvent {
            kind: wire::event_kind(e),
            path: if path.is_empty() {
                "/".into()
            } else {
                path.to_string()
            },
        }));
    }
    match e.session_state {
        zk::SessionState::Disconnected => Some(WatchEvent::Disconnected),
        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
            Some(WatchEvent::Reconnected)
        }
        _ => None,
    }
}

/// Hands on the events already queued on a watch being replaced, without waiting: node
/// events, and the interruptions (DISCONNECTED, a session's end) in their order. A reconnection
/// it saw is not handed on: the caller's Reconnected, once the new watch is set, tells it.
/// Whether it saw any change of the connection (the old watch was not read while the new one
/// was being set: a NodeCache there would otherwise never hear of an outage under it).
fn drain(p: &Pump, mut old: Wire) -> bool {
    let mut changed = false;
    loop {
        let Some(e) = try_changed(&mut old.watcher) else {
            return changed;
        };
        match event(p, &e) {
            Some(WatchEvent::Reconnected) => changed = true,
            Some(ev) => {
                changed |= matches!(ev, WatchEvent::Disconnected);
                emit(p, old.mode, &ev);
            }
            // Terminal: this watcher hears nothing more (and must not be polled again).
            None => {
                emit(p, old.mode, &WatchEvent::SessionLost);
                return true;
            }
        }
    }
}

/// The wire watch's next event if it has one already, without waiting. (Its channel is the
/// wire client's `futures` one: no task budget can make it look empty while it holds one.)
fn try_changed(w: &mut zk::PersistentWatcher) -> Option<zk::WatchedEvent> {
    let next = w.changed();
    tokio::pin!(next);
    let waker = std::task::Waker::from(Arc::new(NoWake));
    let mut cx = std::task::Context::from_waker(&waker);
    match next.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(e) => Some(e),
        std::task::Poll::Pending => None,
    }
}

struct NoWake;

impl std::task::Wake for NoWake {
    fn wake(self: Arc<Self>) {}
}

impl Client {
    /// Sets a persistent watch on `path` — [`AddWatchMode::PersistentRecursive`] also covers
    /// every node below it — and returns once the server has it. Unlike a one-shot watch it
    /// stays until dropped, and is set again by itself after a session loss.
    ///
    /// Every persistent consumer of a path in this client (these handles, persistent watchers,
    /// caches) shares one watch on the server, whatever their modes: the recursive one serves
    /// the plain ones too, filtered (see the module notes of `client::watches`), so independent
    /// parts of an application may watch the same path through one client.
    ///
    /// Before ZooKeeper 3.9 a session keeps one watch mode per path (ZOOKEEPER-4466): a one-shot
    /// watch this client sets on the very path (a data read or exists check with a watch; a
    /// children read with a watch when the watch is plain), or drops unfired, turns the
    /// persistent watch into a one-shot one on the server. The client then sets it again and
    /// its consumers hear `RECONNECTED` (read again: what changed in between is not lost).
    pub async fn add_watch(&self, path: &str, mode: AddWatchMode) -> Result<PersistentWatch> {
        if self.is_closed() {
            return Err(Error::closed());
        }
        path::validate_path(path)?;
        let (watch, set) = self.watches().join(self, path, mode);
        match set.await {
            Ok(Ok(())) => Ok(watch),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::closed()),
        }
    }

    /// Removes this client's watches of `kind` on `path` (ZooKeeper's `removeAllWatches`,
    /// Curator's `watchers().removeAll()`): each removed watch hears `WATCH_REMOVED` (a
    /// one-shot watch's event; a persistent watcher's or [`PersistentWatch`]'s last event, its
    /// stream then ends). `NoWatcher` when this client has no watch of that kind there.
    ///
    /// - One-shot kinds (`Data`: data reads and exists checks with a watch; `Children`; `Any`)
    ///   are removed on the server first (under the retry policy). With `local = false` a
    ///   failure to reach it is returned and nothing is removed; with `local = true` one try
    ///   is made and the watches are removed here whatever it says (Curator's `locally()`).
    ///   A server that no longer had them (they fired meanwhile) is fine.
    /// - Persistent kinds are removed here at once; the path's shared watch on the server goes
    ///   with its last consumer (with the connection, if the server cannot be reached: a new
    ///   connection sets only the watches still held). A recipe that waits on a one-shot watch
    ///   you remove reads again and sets a new one; a cache whose watch you remove sets it
    ///   again and resyncs (close the cache to stop it).
    ///
    /// ZooKeeper before 3.9 has no removal kind for persistent watches (ZOOKEEPER-4472): the
    /// only server-side removal of one is `Any`, which takes the path's one-shot watches too,
    /// and a `Data` or `Children` removal strips that half of a persistent watch on the path
    /// (ZOOKEEPER-4471). So this client never asks the server for a persistent kind, and after
    /// removing one-shot watches on a path that also has a persistent watch it sets that watch
    /// again and its consumers hear `RECONNECTED` (read again): nothing is lost silently, on
    /// any server version.
    ///
    /// The removal goes on to its end if this call is dropped (it runs as its own task): a
    /// removal the server applied always wakes the local waiters of what it removed.
    pub async fn remove_watches(&self, path: &str, kind: WatcherType, local: bool) -> Result<()> {
        self.check_open_for_watches()?;
        path::validate_path(path)?;
        let (client, path) = (self.clone(), path.to_string());
        runtime::run_to_end(async move { client.remove_watches_now(&path, kind, local).await })
            .await
    }

    async fn remove_watches_now(&self, path: &str, kind: WatcherType, local: bool) -> Result<()> {
        use AddWatchMode::{Persistent, PersistentRecursive};
        let (modes, kinds, server): (&[AddWatchMode], &[OneshotKind], zk::WatcherType) = match kind
        {
            WatcherType::Children => (&[], &[OneshotKind::Children], zk::WatcherType::Children),
            WatcherType::Data => (&[], &[OneshotKind::Data], zk::WatcherType::Data),
            WatcherType::Persistent => (&[Persistent], &[], zk::WatcherType::Any),
            WatcherType::PersistentRecursive => (&[PersistentRecursive], &[], zk::WatcherType::Any),
            WatcherType::Any => (
                &[Persistent, PersistentRecursive],
                &[OneshotKind::Data, OneshotKind::Children],
                zk::WatcherType::Any,
            ),
        };
        let watches = self.watches().clone();
        let has_oneshot = watches.has_oneshot(path, kinds);
        if !has_oneshot && !watches.has_persistent(path, modes) {
            return Err(Error::NoWatcher(
                format!("remove {kind} watches on {path}: this client has none there").into(),
            ));
        }
        if has_oneshot {
            let r = if local {
                let once = async {
                    let s = self.session().await?;
                    s.remove_watches(path, server).await
                };
                tokio::time::timeout(self.connection_timeout(), once)
                    .await
                    .unwrap_or_else(|_| {
                        Err(Error::ConnectionLoss(
                            "no answer from the server in time".into(),
                        ))
                    })
            } else {
                self.retry(|s| async move { s.remove_watches(path, server).await })
                    .await
            };
            match r {
                Ok(()) | Err(Error::NoWatcher(_)) => {}
                Err(e) if local => {
                    tracing::debug!(%path, %kind, error = %e, "removing watches locally only");
                }
                Err(e) => return Err(e),
            }
            watches.remove_oneshots(path, kinds);
        }
        let removed = watches.remove_persistent(path, modes);
        tracing::debug!(%path, %kind, local, persistent = removed, "watches removed");
        if has_oneshot {
            // The server may have stripped the path's persistent watch with them (before 3.9).
            watches.reset(path);
        }
        Ok(())
    }

    /// [`remove_watches`](Self::remove_watches), blocking.
    pub fn remove_watches_blocking(
        &self,
        path: &str,
        kind: WatcherType,
        local: bool,
    ) -> Result<()> {
        runtime::try_block_on(self.remove_watches(path, kind, local))?
    }

    fn check_open_for_watches(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::closed())
        } else {
            Ok(())
        }
    }
}
