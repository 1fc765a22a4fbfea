//! [`PersistentWatch`]: ZooKeeper 3.6+'s `addWatch` (Curator's `PersistentWatcher`), kept across
//! reconnects and sessions.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use zookeeper_client as zk;

use super::types::{AddWatchMode, NodeEvent};
use super::{wire, Client, WeakClient};
use crate::dispatch::{Dispatcher, ListenerId};
use crate::lifecycle::{Lifecycle, Phase};
use crate::{path, runtime, Error, Result};

/// What a [`PersistentWatch`] hears.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEvent {
    /// A node changed: created, deleted, data changed, or (non-recursive mode) children changed.
    Node(NodeEvent),
    /// The connection was lost; the session may still be alive. Changes made from now on until
    /// [`Reconnected`](Self::Reconnected) may never be reported.
    Disconnected,
    /// Connected again, the watch active again. Changes made while disconnected were **not**
    /// reported (ZooKeeper does not replay them to persistent watches, ZOOKEEPER-4698): read
    /// again what matters.
    Reconnected,
    /// The session ended (expired or replaced): the watch is set again on the client's next
    /// session, and [`Reconnected`](Self::Reconnected) follows once it is. Everything may
    /// have changed meanwhile.
    SessionLost,
}

/// A persistent watch (see [`Client::add_watch`]). Events arrive in the order the server sent
/// them; [`next`](Self::next) returns `None` once the client is closed or dropped. Dropping
/// the watch asks the server to remove it: ZooKeeper 3.9+ does; 3.8 keeps a persistent watch
/// until the session ends (ZOOKEEPER-4472), sending events nobody reads.
pub struct PersistentWatch {
    client: WeakClient,
    path: String,
    mode: AddWatchMode,
    prefix_len: usize,
    inner: Option<zk::PersistentWatcher>,
}

impl std::fmt::Debug for PersistentWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentWatch")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .finish()
    }
}

impl Client {
    /// Sets a persistent watch on `path` — [`AddWatchMode::PersistentRecursive`] also covers
    /// every node below it — and returns once the server has it. Unlike a one-shot watch it
    /// stays until dropped, and is set again by itself after a session loss.
    ///
    /// ZooKeeper keeps one persistent-watch mode per path per session (a second `addWatch` with
    /// the other mode replaces the first, which then goes deaf below its path), so while a
    /// watch of one mode is alive on a path in this client — a cache sets a recursive one on its
    /// root — asking for the other mode there is refused with `Conflict`. The same mode again
    /// is fine.
    pub async fn add_watch(&self, path: &str, mode: AddWatchMode) -> Result<PersistentWatch> {
        if self.is_closed() {
            return Err(Error::closed());
        }
        path::validate_path(path)?;
        self.reserve_watch_mode(path, mode)?;
        let watcher = match self
            .retry(|s| async move { s.add_watch(path, mode).await })
            .await
        {
            Ok(w) => w,
            Err(e) => {
                self.release_watch_mode(path);
                return Err(e);
            }
        };
        Ok(PersistentWatch {
            client: self.downgrade(),
            path: path.to_string(),
            mode,
            prefix_len: self.namespace().len(),
            inner: Some(watcher),
        })
    }
}

impl Client {
    /// Counts a persistent watch of `mode` on `path`, or refuses the other mode there.
    fn reserve_watch_mode(&self, path: &str, mode: AddWatchMode) -> Result<()> {
        let mut modes = self
            .inner
            .persistent_modes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match modes.get_mut(path) {
            Some((m, n)) if *m == mode => *n += 1,
            Some((m, _)) => {
                let name = |m: AddWatchMode| match m {
                    AddWatchMode::Persistent => "persistent",
                    AddWatchMode::PersistentRecursive => "persistent recursive",
                };
                return Err(Error::Conflict(
                    format!(
                        "add a {} watch on {path}: this client already has a {} watch there (a \
                         watcher, or a cache on that root); ZooKeeper keeps one mode per path per \
                         session, so one of them would stop hearing events. Use the same mode, \
                         another path, or another client",
                        name(mode),
                        name(*m)
                    )
                    .into(),
                ));
            }
            None => {
                modes.insert(path.to_string(), (mode, 1));
            }
        }
        Ok(())
    }

    fn release_watch_mode(&self, path: &str) {
        let mut modes = self
            .inner
            .persistent_modes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, n)) = modes.get_mut(path) {
            *n -= 1;
            if *n == 0 {
                modes.remove(path);
            }
        }
    }
}

impl Drop for PersistentWatch {
    fn drop(&mut self) {
        if let Some(c) = self.client.upgrade() {
            c.release_watch_mode(&self.path);
        }
    }
}

impl PersistentWatch {
    /// The watched path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The mode it was set with.
    pub fn mode(&self) -> AddWatchMode {
        self.mode
    }

    /// The next event; `None` once the client is closed or dropped.
    pub async fn next(&mut self) -> Option<WatchEvent> {
        loop {
            let Some(watcher) = self.inner.as_mut() else {
                // The session ended: set the watch again on the next one.
                let client = self.client.upgrade()?;
                let (path, mode) = (self.path.as_str(), self.mode);
                match client
                    .retry(|s| async move { s.add_watch(path, mode).await })
                    .await
                {
                    Ok(w) => {
                        self.inner = Some(w);
                        return Some(WatchEvent::Reconnected);
                    }
                    Err(Error::Closed(_)) => return None,
                    Err(_) => {
                        let closed = client.closed();
                        drop(client);
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(200)) => continue,
                            _ = closed => return None,
                        }
                    }
                }
            };
            let event = watcher.changed().await;
            if event.event_type != zk::EventType::Session {
                let path = if event.path.len() >= self.prefix_len {
                    &event.path[self.prefix_len..]
                } else {
                    &event.path
                };
                return Some(WatchEvent::Node(NodeEvent {
                    kind: wire::event_kind(&event),
                    path: if path.is_empty() {
                        "/".into()
                    } else {
                        path.to_string()
                    },
                }));
            }
            match event.session_state {
                zk::SessionState::Disconnected => return Some(WatchEvent::Disconnected),
                zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
                    return Some(WatchEvent::Reconnected)
                }
                // Terminal: this watcher hears nothing more (and must not be polled again).
                _ => {
                    self.inner = None;
                    let gone = self.client.upgrade().map_or(true, |c| c.is_closed());
                    if gone {
                        return None;
                    }
                    return Some(WatchEvent::SessionLost);
                }
            }
        }
    }
}

impl WatchEvent {
    /// The one spelling every face uses: a node event's kind (`CREATED`, `DELETED`,
    /// `DATA_CHANGED`, `CHILDREN_CHANGED`), or `DISCONNECTED`, `RECONNECTED`, `SESSION_LOST`.
    pub fn name(&self) -> &'static str {
        match self {
            WatchEvent::Node(e) if e.kind == super::types::NodeEventKind::SessionEnded => {
                "SESSION_LOST"
            }
            WatchEvent::Node(e) => e.kind.name(),
            WatchEvent::Disconnected => "DISCONNECTED",
            WatchEvent::Reconnected => "RECONNECTED",
            WatchEvent::SessionLost => "SESSION_LOST",
        }
    }

    /// The node's path (relative to the namespace) for a node event; `None` otherwise.
    pub fn path(&self) -> Option<&str> {
        match self {
            WatchEvent::Node(e) => Some(&e.path),
            _ => None,
        }
    }

    /// Every name [`name`](Self::name) can return.
    pub const NAMES: &'static [&'static str] = &[
        "CREATED",
        "DELETED",
        "DATA_CHANGED",
        "CHILDREN_CHANGED",
        "DISCONNECTED",
        "RECONNECTED",
        "SESSION_LOST",
    ];
}

/// Curator's `PersistentWatcher`: a persistent (optionally recursive) watch with listeners,
/// for the faces and for anyone who prefers callbacks to [`PersistentWatch::next`].
///
/// Build it, add listeners ([`listen`](Self::listen)) or take a stream
/// ([`events`](Self::events)), then [`start`](Self::start) it. Listeners run under the
/// [`dispatch`](crate::dispatch) threading guarantee, in the order the server sent the events.
/// `RECONNECTED` after `DISCONNECTED` or `SESSION_LOST` is Curator's "reset" signal: changes
/// made meanwhile were not reported, read again what matters (or use a
/// [`Cache`](crate::cache::Cache), which does that for you). [`close`](Self::close) (or
/// dropping it) removes the watch.
///
/// ZooKeeper keeps one persistent-watch mode per path per session, so while a recursive watcher
/// (or a cache, which sets a recursive watch on its root) lives on a path, starting a plain
/// one there in the same client is refused with `Conflict`, and the other way round.
pub struct PersistentWatcher {
    client: Client,
    path: String,
    mode: AddWatchMode,
    dispatcher: Arc<Dispatcher<WatchEvent>>,
    life: Lifecycle,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    ended: Arc<tokio::sync::watch::Sender<bool>>,
}

impl std::fmt::Debug for PersistentWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentWatcher")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("phase", &self.life.phase())
            .finish()
    }
}

impl Drop for PersistentWatcher {
    fn drop(&mut self) {
        self.close();
    }
}

impl PersistentWatcher {
    /// A watcher of `path` (not started); `recursive` also covers every node below it.
    /// `InvalidArgument` for a bad path, `Closed` on a closed client.
    pub fn new(client: &Client, path: &str, recursive: bool) -> Result<PersistentWatcher> {
        client.ensure_open_for("PersistentWatcher", path)?;
        path::validate_path(path)?;
        Ok(PersistentWatcher {
            client: client.clone(),
            path: path.to_string(),
            mode: if recursive {
                AddWatchMode::PersistentRecursive
            } else {
                AddWatchMode::Persistent
            },
            dispatcher: Arc::new(Dispatcher::new()),
            life: Lifecycle::new("PersistentWatcher", path),
            stop: Mutex::new(None),
            ended: Arc::new(tokio::sync::watch::channel(false).0),
        })
    }

    /// The watched path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether it covers the nodes below the path too.
    pub fn recursive(&self) -> bool {
        self.mode == AddWatchMode::PersistentRecursive
    }

    /// Sets the watch; returns once the server has it (events from then on reach the
    /// listeners). `InvalidArgument` if started before, `Closed` once closed.
    pub async fn start(&self) -> Result<()> {
        let starting = self.life.begin_start(&self.client)?;
        let mut watch = self.client.add_watch(&self.path, self.mode).await?;
        let dispatcher = Arc::downgrade(&self.dispatcher);
        let ended = self.ended.clone();
        starting.finish(|| {
            let (stop_tx, mut stop_rx) = oneshot::channel();
            *self.stop.lock().unwrap_or_else(|e| e.into_inner()) = Some(stop_tx);
            runtime::spawn(async move {
                loop {
                    let event = tokio::select! {
                        e = watch.next() => e,
                        _ = &mut stop_rx => None,
                    };
                    match (event, dispatcher.upgrade()) {
                        (Some(e), Some(d)) => d.emit(e),
                        _ => break,
                    }
                }
                // Dropping `watch` asks the server to remove it.
                drop(watch);
                ended.send_replace(true);
            });
            tracing::debug!(path = %self.path, mode = ?self.mode, "persistent watcher started");
        })
    }

    /// [`start`](Self::start), blocking.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }

    /// Whether it was started and is not closed.
    pub fn is_started(&self) -> bool {
        self.life.is_started()
    }

    /// Removes the watch: listeners hear nothing more (events already queued are still
    /// delivered), streams end. Idempotent.
    pub fn close(&self) {
        if self.life.close() != Phase::Closed {
            if let Some(stop) = self.stop.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = stop.send(());
            } else {
                self.ended.send_replace(true);
            }
            self.dispatcher.clear();
        }
    }

    /// Adds a listener; it hears the events that arrive after this returns.
    pub fn listen(&self, f: impl Fn(&WatchEvent) + Send + Sync + 'static) -> ListenerId {
        self.dispatcher.add(f)
    }

    /// Removes a listener; whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.dispatcher.remove(id)
    }

    /// The events from now on as a stream (a listener feeding a channel; dropping the stream
    /// removes it). It ends once the watcher is closed or dropped, or its client is closed.
    pub fn events(&self) -> WatchEventStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = self.dispatcher.add(move |e| {
            let _ = tx.send(e.clone());
        });
        WatchEventStream {
            rx,
            id,
            dispatcher: Arc::downgrade(&self.dispatcher),
            ended: self.ended.subscribe(),
        }
    }
}

/// A [`PersistentWatcher`]'s events as a stream.
pub struct WatchEventStream {
    rx: mpsc::UnboundedReceiver<WatchEvent>,
    id: ListenerId,
    dispatcher: Weak<Dispatcher<WatchEvent>>,
    ended: tokio::sync::watch::Receiver<bool>,
}

impl std::fmt::Debug for WatchEventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchEventStream")
            .field("id", &self.id)
            .finish()
    }
}

impl WatchEventStream {
    /// The next event; `None` once the watcher has ended and the events before that are taken.
    pub async fn next(&mut self) -> Option<WatchEvent> {
        loop {
            if let Ok(e) = self.rx.try_recv() {
                return Some(e);
            }
            if *self.ended.borrow() {
                // Events the watcher emitted before it ended may still be on the dispatcher's
                // queue: a marker queued after them tells when they are all here.
                let Some(d) = self.dispatcher.upgrade() else {
                    return self.rx.try_recv().ok();
                };
                let (tx, rx) = oneshot::channel();
                d.call(move || {
                    let _ = tx.send(());
                });
                drop(d);
                let _ = rx.await;
                return self.rx.try_recv().ok();
            }
            tokio::select! {
                e = self.rx.recv() => return e,
                r = self.ended.changed() => if r.is_err() { return self.rx.try_recv().ok() },
            }
        }
    }

    /// [`next`](Self::next) with a time limit: `Ok(None)` once ended, `Err` on timeout.
    pub async fn next_timeout(
        &mut self,
        timeout: Duration,
    ) -> std::result::Result<Option<WatchEvent>, tokio::time::error::Elapsed> {
        tokio::time::timeout(timeout, self.next()).await
    }

    /// The next event if one is queued, without waiting.
    pub fn try_next(&mut self) -> Option<WatchEvent> {
        self.rx.try_recv().ok()
    }
}

impl Drop for WatchEventStream {
    fn drop(&mut self) {
        if let Some(d) = self.dispatcher.upgrade() {
            let _ = d.remove(self.id); // our own id
        }
    }
}
