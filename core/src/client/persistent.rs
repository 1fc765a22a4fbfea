//! [`PersistentWatch`]: ZooKeeper 3.6+'s `addWatch` (Curator's `PersistentWatcher`), kept across
//! reconnects and sessions.

use std::time::Duration;

use zookeeper_client as zk;

use super::types::{AddWatchMode, NodeEvent};
use super::{wire, Client, WeakClient};
use crate::{path, Error, Result};

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
    pub async fn add_watch(&self, path: &str, mode: AddWatchMode) -> Result<PersistentWatch> {
        if self.is_closed() {
            return Err(Error::closed());
        }
        path::validate_path(path)?;
        let watcher = self
            .retry(|s| async move { s.add_watch(path, mode).await })
            .await?;
        Ok(PersistentWatch {
            client: self.downgrade(),
            path: path.to_string(),
            mode,
            prefix_len: self.namespace().len(),
            inner: Some(watcher),
        })
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
