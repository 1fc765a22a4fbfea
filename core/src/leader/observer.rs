//! LeaderObserver: "who leads now" for processes that do not take part (etcd's Observe).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::common::{observer_key, read_leader_node, validate_group_path, ListenerId, Participant};
use crate::client::WeakClient;
use crate::dispatch::Dispatcher;
use crate::{runtime, Client, ConnectionState, Error, Result};

/// Follows the leader of a LeaderLatch or LeaderSelector group without joining it (etcd's
/// `Observe`). Built on a children watch of the group path: every join or leave costs one
/// `getChildren`, and a read of the first node's data when the first node changed.
///
/// It understands both layouts: latch nodes (`…latch-<seq>`) and selector/mutex nodes
/// (`…lock-<seq>`). The reported leader is the participant whose node sorts first, with
/// `is_leader == true`, or `Participant("", false)` when the group is empty.
///
/// ```no_run
/// # async fn demo(client: zkrecipes::Client) -> zkrecipes::Result<()> {
/// let mut observer = zkrecipes::leader::observe(&client, "/services/billing/leader").await?;
/// while let Some(leader) = observer.changed().await {
///     println!("leader now: {:?}", leader.id);
/// }
/// # Ok(()) }
/// ```
pub struct LeaderObserver {
    rx: watch::Receiver<Participant>,
    core: Arc<ObserverCore>,
    stop: Option<oneshot::Sender<()>>,
    path: String,
}

impl std::fmt::Debug for LeaderObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderObserver")
            .field("path", &self.path)
            .field("leader", &*self.rx.borrow())
            .finish()
    }
}

struct ObserverCore {
    dispatcher: Dispatcher<Participant>,
}

/// Starts a [`LeaderObserver`] on `path` (see [`LeaderObserver::start`]).
pub async fn observe(client: &Client, path: &str) -> Result<LeaderObserver> {
    LeaderObserver::start(client, path).await
}

impl LeaderObserver {
    /// Starts observing `path`; returns once the current leader is known (the group path need
    /// not exist yet: then nobody leads until it appears).
    ///
    /// Errors: `InvalidArgument` for a bad path, `Closed` for a closed client, or the error of
    /// the first read.
    pub async fn start(client: &Client, path: &str) -> Result<LeaderObserver> {
        client.ensure_open_for("LeaderObserver", path)?;
        validate_group_path("leader group", path)?;
        let first = read_and_watch(client, path).await?;
        let (tx, rx) = watch::channel(first.leader.clone().map(|(_, p)| p).unwrap_or_default());
        let core = Arc::new(ObserverCore {
            dispatcher: Dispatcher::new(),
        });
        let (stop_tx, stop_rx) = oneshot::channel();
        runtime::spawn(follow(
            client.downgrade(),
            path.to_string(),
            first,
            tx,
            core.clone(),
            stop_rx,
        ));
        Ok(LeaderObserver {
            rx,
            core,
            stop: Some(stop_tx),
            path: path.to_string(),
        })
    }

    /// [`start`](Self::start) for the blocking face.
    pub fn start_blocking(client: &Client, path: &str) -> Result<LeaderObserver> {
        runtime::try_block_on(Self::start(client, path))?
    }

    /// The group path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The leader as last seen (`Participant("", false)` when nobody leads).
    pub fn leader(&self) -> Participant {
        self.rx.borrow().clone()
    }

    /// Waits for the next change of leader and returns it; `None` once the observer is closed
    /// (or its client is).
    pub async fn changed(&mut self) -> Option<Participant> {
        self.rx.changed().await.ok()?;
        Some(self.rx.borrow_and_update().clone())
    }

    /// [`changed`](Self::changed) with a deadline, for the blocking face: `Ok(None)` when closed,
    /// `Err(Timeout)` when nothing changed in time.
    pub fn changed_blocking(&mut self, timeout: Duration) -> Result<Option<Participant>> {
        let path = self.path.clone();
        runtime::try_block_on(async {
            tokio::time::timeout(timeout, self.changed())
                .await
                .map_err(|_| {
                    Error::Timeout(
                        format!("leader of {path} did not change within {timeout:?}").into(),
                    )
                })
        })?
    }

    /// A tokio watch of the leader, for `select!` loops.
    pub fn subscribe(&self) -> watch::Receiver<Participant> {
        self.rx.clone()
    }

    /// Calls `listener` with each new leader, on the observer's dispatcher
    /// ([`crate::dispatch`]: one at a time, in order; it may block).
    pub fn add_listener(
        &self,
        listener: impl Fn(Participant) + Send + Sync + 'static,
    ) -> ListenerId {
        self.core
            .dispatcher
            .add(move |p: &Participant| listener(p.clone()))
    }

    /// Removes a listener; whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.core.dispatcher.remove(id)
    }

    /// Stops observing (its watch is removed from the server). Closing twice is a no-op;
    /// dropping the observer closes it too.
    pub fn close(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for LeaderObserver {
    fn drop(&mut self) {
        self.close();
    }
}

struct Seen {
    leader: Option<(String, Participant)>,
    watch: Option<crate::client::Watch>,
}

/// Reads the leader and leaves a watch that fires when the group's children change (or, when
/// the group does not exist, when it is created).
async fn read_and_watch(client: &Client, path: &str) -> Result<Seen> {
    loop {
        // The watch goes first: a change after it is set cannot be missed.
        let watch = match client.get_children_watch(path).await {
            Ok((_, w)) => Some(w),
            Err(Error::NoNode(_)) => match client.exists_watch(path).await? {
                (None, w) => {
                    return Ok(Seen {
                        leader: None,
                        watch: Some(w),
                    });
                }
                // Created in between: watch its children.
                (Some(_), _) => continue,
            },
            Err(e) => return Err(e),
        };
        let leader = read_leader_node(client, path, observer_key).await?;
        return Ok(Seen { leader, watch });
    }
}

async fn follow(
    client: WeakClient,
    path: String,
    mut seen: Seen,
    tx: watch::Sender<Participant>,
    core: Arc<ObserverCore>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut last_node = seen.leader.as_ref().map(|(n, _)| n.clone());
    let mut backoff = Duration::from_millis(50);
    let (mut conn, closed) = match client.upgrade() {
        Some(c) => (c.subscribe_events(), c.closed()),
        None => return,
    };
    tokio::pin!(closed);
    loop {
        let watch = seen.watch.take();
        let wait_watch = async move {
            match watch {
                Some(w) => {
                    w.changed().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(wait_watch);
        // Wait for the watch, or a reconnect (a new session's view), or the end.
        loop {
            tokio::select! {
                biased;
                _ = &mut stop => return,
                _ = &mut closed => return,
                ev = conn.recv() => match ev {
                    Ok(ConnectionState::Reconnected | ConnectionState::Connected) => break,
                    Ok(_) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                _ = &mut wait_watch => break,
            }
        }
        loop {
            let Some(c) = client.upgrade() else { return };
            let read = tokio::select! {
                _ = &mut stop => return,
                r = read_and_watch(&c, &path) => r,
            };
            drop(c);
            match read {
                Ok(s) => {
                    seen = s;
                    backoff = Duration::from_millis(50);
                    break;
                }
                Err(Error::Closed(_)) => return,
                Err(_) => {
                    tokio::select! {
                        _ = &mut stop => return,
                        _ = tokio::time::sleep(backoff) => {},
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
        let node = seen.leader.as_ref().map(|(n, _)| n.clone());
        if node != last_node {
            last_node = node;
            let p = seen
                .leader
                .as_ref()
                .map(|(_, p)| p.clone())
                .unwrap_or_default();
            tx.send_replace(p.clone());
            core.dispatcher.emit(p);
        }
    }
}
