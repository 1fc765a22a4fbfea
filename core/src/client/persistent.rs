//! [`PersistentWatch`]: ZooKeeper 3.6+'s `addWatch` (Curator's `PersistentWatcher`), kept across
//! reconnects and sessions.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::types::{AddWatchMode, NodeEvent};
use super::watches::Watches;
use super::Client;
use crate::dispatch::{Dispatcher, ListenerId};
use crate::lifecycle::{Lifecycle, Phase};
use crate::{path, runtime, Result};

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
    /// The watch was removed ([`Client::remove_watches`]): nothing follows.
    Removed,
}

/// A persistent watch (see [`Client::add_watch`]): one consumer of its path's shared watch.
/// Events arrive in the order the server sent them; [`next`](Self::next) returns `None` once
/// the client is closed or dropped, or after `WATCH_REMOVED`. Dropping it leaves the path's
/// watch, which goes from the server with its last consumer.
pub struct PersistentWatch {
    watches: Weak<Watches>,
    path: String,
    mode: AddWatchMode,
    id: u64,
    rx: mpsc::UnboundedReceiver<WatchEvent>,
}

impl std::fmt::Debug for PersistentWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentWatch")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .finish()
    }
}

impl Drop for PersistentWatch {
    fn drop(&mut self) {
        if let Some(w) = self.watches.upgrade() {
            w.leave(&self.path, self.id);
        }
    }
}

impl PersistentWatch {
    pub(crate) fn new(
        watches: Weak<Watches>,
        path: &str,
        mode: AddWatchMode,
        id: u64,
        rx: mpsc::UnboundedReceiver<WatchEvent>,
    ) -> PersistentWatch {
        PersistentWatch {
            watches,
            path: path.to_string(),
            mode,
            id,
            rx,
        }
    }

    /// The watched path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The mode it was set with.
    pub fn mode(&self) -> AddWatchMode {
        self.mode
    }

    /// The next event; `None` once the client is closed or dropped, or after
    /// [`WatchEvent::Removed`].
    pub async fn next(&mut self) -> Option<WatchEvent> {
        self.rx.recv().await
    }

    /// The next event if one is queued, without waiting (`None` otherwise).
    pub(crate) fn try_next(&mut self) -> Option<Option<WatchEvent>> {
        match self.rx.try_recv() {
            Ok(e) => Some(Some(e)),
            Err(mpsc::error::TryRecvError::Empty) => None,
            Err(mpsc::error::TryRecvError::Disconnected) => Some(None),
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
            WatchEvent::Removed => "WATCH_REMOVED",
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
        "WATCH_REMOVED",
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
/// Watchers, caches and [`PersistentWatch`]es on one path of one client share one watch on the
/// server, whatever their modes ([`Client::add_watch`]): each hears what its own mode would.
/// [`Client::remove_watches`] of its kind ends it: listeners hear `WATCH_REMOVED`, last.
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
                // Leaves the path's shared watch (the last consumer's leaving removes it).
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

    /// Removes the watch: listeners hear nothing more (events queued are not delivered; a call
    /// already begun finishes), streams end. Idempotent.
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
