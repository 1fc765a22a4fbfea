//! The group's membership as [`GroupMember`](super::GroupMember) sees it: a map child name →
//! data of the group node's children, kept up to date in the background.
//!
//! The small interface (`start`, `current`, `stop`, a change callback) is all `GroupMember`
//! uses, so the engine behind it can become the shared cache engine once that lands. Today it
//! is one persistent recursive watch on the group path (ZooKeeper 3.6+'s `addWatch`, what
//! Curator's GroupMember gets through CuratorCache): a child created or whose data changed is
//! read again, a child deleted is dropped, and after a reconnect or a new session (when
//! changes may have been missed) the whole group is read again. A plain children watch would
//! not see a member's `set_this_data`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::client::{AddWatchMode, NodeEventKind, OrNone, Session, WatchEvent};
use crate::{path, runtime, Client, Result};

/// Member id → payload.
pub(crate) type Members = BTreeMap<String, Vec<u8>>;

/// The membership view (see the module notes).
pub(crate) struct MembersView {
    snapshot: watch::Receiver<Arc<Members>>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl MembersView {
    /// Starts following `path`'s children; `on_change` gets each new membership (called from
    /// the view's task: it must only hand the value on, to a dispatcher).
    pub(crate) fn start(
        client: &Client,
        path: &str,
        on_change: impl Fn(&Members) + Send + Sync + 'static,
    ) -> MembersView {
        let (tx, snapshot) = watch::channel(Arc::new(Members::new()));
        let stop = watch::channel(false).0;
        let follower = Follower {
            client: client.clone(),
            path: path.to_string(),
            members: Members::new(),
            tx,
            on_change: Box::new(on_change),
        };
        let stopped = stop.subscribe();
        let task = runtime::spawn(follower.run(stopped));
        MembersView {
            snapshot,
            stop,
            task,
        }
    }

    /// The membership as last read.
    pub(crate) fn current(&self) -> Arc<Members> {
        self.snapshot.borrow().clone()
    }

    /// Stops following (the watch is dropped with the task).
    pub(crate) async fn stop(self) {
        self.stop.send_replace(true);
        let _ = self.task.await;
    }
}

struct Follower {
    client: Client,
    path: String,
    members: Members,
    tx: watch::Sender<Arc<Members>>,
    on_change: Box<dyn Fn(&Members) + Send + Sync>,
}

impl Follower {
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut backoff = Duration::from_millis(50);
        let mut watcher = loop {
            let set = tokio::select! {
                w = self.client.add_watch(&self.path, AddWatchMode::PersistentRecursive) => w,
                _ = stop.wait_for(|s| *s) => return,
            };
            match set {
                Ok(w) => break w,
                Err(crate::Error::Closed(_)) => return,
                Err(e) => {
                    tracing::debug!(group = %self.path, error = %e, "group members: watch not set yet; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.wait_for(|s| *s) => return,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        };
        let mut full = true;
        loop {
            if full {
                let read = tokio::select! {
                    r = self.read_all() => r,
                    _ = stop.wait_for(|s| *s) => return,
                };
                match read {
                    Ok(members) => {
                        full = false;
                        self.publish(members);
                    }
                    Err(crate::Error::Closed(_)) => return,
                    Err(e) => {
                        tracing::debug!(group = %self.path, error = %e, "group members: read failed; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(200)) => continue,
                            _ = stop.wait_for(|s| *s) => return,
                        }
                    }
                }
            }
            let event = tokio::select! {
                e = watcher.next() => e,
                _ = stop.wait_for(|s| *s) => return,
            };
            match event {
                None => return,
                Some(WatchEvent::Disconnected) => {}
                Some(WatchEvent::Reconnected | WatchEvent::SessionLost) => full = true,
                Some(WatchEvent::Node(ev)) => {
                    if path::parent(&ev.path) != self.path {
                        if ev.path == self.path && ev.kind == NodeEventKind::Created {
                            full = true;
                        } else if ev.path == self.path && ev.kind == NodeEventKind::Deleted {
                            self.publish(Members::new());
                        }
                        continue;
                    }
                    let id = path::node_name(&ev.path).to_string();
                    let mut members = self.members.clone();
                    match ev.kind {
                        NodeEventKind::Deleted => {
                            members.remove(&id);
                        }
                        NodeEventKind::Created | NodeEventKind::DataChanged => {
                            let p = ev.path.as_str();
                            let data = self
                                .client
                                .retry(|s: Session| async move { s.get_data(p).await.or_none() })
                                .await;
                            match data {
                                Ok(Some((d, _))) => {
                                    members.insert(id, d);
                                }
                                Ok(None) => {
                                    members.remove(&id);
                                }
                                Err(_) => full = true,
                            }
                        }
                        _ => {}
                    }
                    self.publish(members);
                }
            }
        }
    }

    /// Every child and its data, read in one round trip (the reads pipelined on one session).
    async fn read_all(&self) -> Result<Members> {
        let p = self.path.as_str();
        self.client
            .retry(|s: Session| async move {
                let Some(children) = s.children(p).await.or_none()? else {
                    return Ok(Members::new());
                };
                let reads: Vec<_> = children
                    .iter()
                    .map(|c| (c.clone(), s.get_data(&path::join(p, c))))
                    .collect();
                let mut members = Members::new();
                for (child, read) in reads {
                    if let Some((data, _)) = read.await.or_none()? {
                        members.insert(child, data);
                    }
                }
                Ok(members)
            })
            .await
    }

    fn publish(&mut self, members: Members) {
        if members != self.members {
            self.members = members;
            self.tx.send_replace(Arc::new(self.members.clone()));
            (self.on_change)(&self.members);
        }
    }
}
