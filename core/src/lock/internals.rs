//! Curator's LockInternals: the node protocol shared by the whole lock family.
//!
//! A contender creates a protected ephemeral-sequential node `_c_<uuid>-<lockName><seq>` under
//! the lock path (parents as containers), lists the children, sorts them on the text after
//! the lock name, and either holds the lock (the driver's predicate says so) or watches the
//! one node it waits for with getData and re-checks when that node changes or vanishes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::client::protected::{ProtectedCreate, ProtectedGuard, ProtectedId};
use crate::client::{sequence, NodeEventKind, OrNone, Parents, Watch, WeakClient};
use crate::runtime::delay::DelayLine;
use crate::wait::{self, Deadline, Wake};
use crate::{path, runtime, Client, CreateMode, Error, Owner, Result};

/// What a holder's node receives to be asked to release (Curator's `LockInternals.REVOKE_MESSAGE`).
pub(crate) const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// How children are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sorter {
    /// On the text after the last occurrence of this lock name (`lock-`).
    Standard(&'static str),
    /// The read/write lock's: after `__READ__`, then after `__WRIT__`, so that both kinds of
    /// node share one sequence order.
    ReadWrite,
}

pub(crate) const READ_LOCK_NAME: &str = "__READ__";
pub(crate) const WRITE_LOCK_NAME: &str = "__WRIT__";

impl Sorter {
    fn key(self, name: &str) -> &str {
        match self {
            Sorter::Standard(lock_name) => sequence::key(name, lock_name),
            Sorter::ReadWrite => {
                sequence::key(sequence::key(name, READ_LOCK_NAME), WRITE_LOCK_NAME)
            }
        }
    }

    /// Sorts in place. A stable sort, like Java's `Collections.sort`, so that ties keep the
    /// server's order exactly as Curator would see them.
    pub(crate) fn sort(self, children: &mut [String]) {
        sequence::sort_by(children, |n| self.key(n));
    }
}

/// Curator's LockInternalsDriver predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Driver {
    /// Holds when our index is below `max_leases`; otherwise watches the node `max_leases`
    /// places ahead (the predecessor, for a mutex), so one release wakes one waiter.
    Standard { max_leases: usize },
    /// The read lock: holds when no write node precedes ours (or when the same owner holds the
    /// write lock); otherwise watches the first write node.
    Read,
}

/// The outcome of the predicate for one sorted listing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Predicate {
    Granted,
    /// Wait for this child (a node name) to change or go.
    Watch(String),
    /// Our node is not among the children ("Sequential path not found").
    Missing,
}

impl Driver {
    /// The predicate on one listing, in the server's order: Curator sorts the listing (a stable
    /// sort on `sorter`'s key) and looks at our index in it; this gives the same answer.
    ///
    /// For the standard driver without sorting, in O(n): our index is the number of children
    /// that sort before ours (on (key, position in the listing), which is exactly the stable
    /// order), and the node to watch is the one of rank `index - max_leases` among them. With
    /// 512 waiters the sort and the moves of a full sort were a large part of a waiter's CPU
    /// (two listings per handoff).
    pub(crate) fn gets_the_lock(
        self,
        sorter: Sorter,
        children: &mut [String],
        ours: &str,
        write_held_by_owner: bool,
    ) -> Predicate {
        match self {
            Driver::Standard { max_leases } => {
                let Some(at) = children.iter().position(|c| c == ours) else {
                    return Predicate::Missing;
                };
                let mine = (sorter.key(&children[at]), at);
                let mut ahead: Vec<(&str, usize)> = children
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (sorter.key(c), i))
                    .filter(|k| *k < mine)
                    .collect();
                if ahead.len() < max_leases {
                    return Predicate::Granted;
                }
                let rank = ahead.len() - max_leases;
                let (_, &mut (_, watched), _) = ahead.select_nth_unstable(rank);
                Predicate::Watch(children[watched].clone())
            }
            Driver::Read => {
                if write_held_by_owner {
                    return Predicate::Granted;
                }
                sorter.sort(children);
                let mut first_write = None;
                for (i, node) in children.iter().enumerate() {
                    if node.contains(WRITE_LOCK_NAME) {
                        first_write.get_or_insert(i);
                    } else if node.starts_with(ours) {
                        return match first_write {
                            Some(w) => Predicate::Watch(children[w].clone()),
                            None => Predicate::Granted,
                        };
                    }
                }
                Predicate::Missing
            }
        }
    }
}

/// A lock node we created.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    /// The caller's path (without the namespace).
    pub(crate) path: String,
    /// The node's name (its last segment).
    pub(crate) name: String,
    /// Its czxid: the fencing token.
    pub(crate) czxid: i64,
    /// Its ephemeralOwner: the session it lives and dies with.
    pub(crate) session: i64,
}

/// A granted attempt.
pub(crate) struct Acquired {
    pub(crate) node: Node,
    /// Dropping it stops the watcher of this node (revocation requests, deletion), if any.
    pub(crate) node_watch: Option<watch::Sender<()>>,
}

/// Revocation: who to tell when `__REVOKE__` lands on our node. Called on an async worker: it
/// must only queue the user's listener (on the lock's dispatcher), never run it.
pub(crate) type RevokeListener = Arc<dyn Fn(Owner) + Send + Sync>;

/// How long a hold lasts before the watch on its own node is set (see
/// `Internals::watch_own_node`): short holds cost no request, and a deletion by someone else
/// is found at most this much later than with an immediate watch.
pub(crate) const OWN_NODE_WATCH_DELAY: Duration = Duration::from_millis(100);

/// How long the watcher of a held node waits before reading it again after a read failed on a
/// connection loss (the retry policy gave up): a hold may outlive the disconnection (the
/// session lost policy), and the watch on its node must too.
const OWN_NODE_REWATCH_AFTER: Duration = Duration::from_millis(500);

/// Who to tell when a node we hold is deleted by someone else (its path). Called on an async
/// worker: it must only mark the hold lost and queue the listeners.
pub(crate) type DeletedListener = Arc<dyn Fn(&str) + Send + Sync>;

/// What one attempt needs besides the lock itself.
pub(crate) struct AttemptOptions<'a> {
    pub(crate) owner: Owner,
    pub(crate) data: &'a [u8],
    pub(crate) deadline: Deadline,
    /// Create a plain EPHEMERAL node with this sequence text instead of a sequential one
    /// (the read lock taken by the write lock's holder, Curator 5.5+'s downgrade). Asked again
    /// for each node the attempt makes: the owner's write hold may have ended, or been lost
    /// (an error: the acquire is refused), since the last one.
    pub(crate) sequence: &'a (dyn Fn() -> Result<Option<String>> + Send + Sync),
    /// Whether the same owner holds the write lock (read-lock driver only).
    pub(crate) write_held: &'a (dyn Fn() -> bool + Send + Sync),
    pub(crate) revocable: Option<RevokeListener>,
    /// Told when our node is deleted while we hold it.
    pub(crate) deleted: Option<DeletedListener>,
}

/// The lock path, the node naming and the predicate of one lock.
#[derive(Clone)]
pub(crate) struct Internals {
    pub(crate) client: Client,
    /// The lock path (the caller's, validated).
    pub(crate) base: String,
    pub(crate) lock_name: &'static str,
    pub(crate) sorter: Sorter,
    pub(crate) driver: Driver,
}

enum Outcome {
    Granted(Acquired),
    TimedOut,
    /// Our node vanished or belongs to a dead session: try again with a new one.
    NodeMissing(String),
    /// Our node borrowed the sequence of the owner's write node, and that write hold is over:
    /// the node may sort ahead of a writer granted since. Deleted; try again at once.
    Misplaced,
    /// The attempt may not make a node (the owner's write hold was lost): this error.
    Refused(Error),
}

/// Deletes a node we created unless disarmed: a failed, timed-out or cancelled (dropped)
/// attempt leaves nothing behind.
pub(crate) struct NodeGuard {
    client: Client,
    path: Option<String>,
}

impl NodeGuard {
    pub(crate) fn new(client: &Client, path: &str) -> NodeGuard {
        NodeGuard {
            client: client.clone(),
            path: Some(path.to_string()),
        }
    }

    pub(crate) fn disarm(&mut self) {
        self.path = None;
    }

    /// Deletes now and waits for it (the delete runs as its own task, so dropping this future
    /// does not abort it).
    pub(crate) async fn delete_now(&mut self) -> Result<()> {
        match self.path.take() {
            Some(p) => self.client.delete_ours(&p).await,
            None => Ok(()),
        }
    }
}

impl Drop for NodeGuard {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            self.client.delete_ours_in_background(&p);
        }
    }
}

/// Creates a protected node of ours under `parent` (parents as containers), optionally with
/// `parent`'s children listed in the same round trip. If this future is dropped, or gives up,
/// while a create's outcome is unknown, the node is found and deleted in the background.
pub(crate) async fn create_lock_node(
    client: &Client,
    parent: &str,
    name: &str,
    data: &[u8],
    mode: CreateMode,
    list_parent: bool,
) -> Result<(Node, Option<Vec<String>>)> {
    let id = ProtectedId::new();
    let mut guard = ProtectedGuard::new(client, parent, &id);
    let req = ProtectedCreate {
        parent,
        name,
        data,
        mode,
        parents: Parents::Containers,
        list_parent,
    };
    let result = client.create_protected(&id, req).await;
    guard.settle(&result);
    let created = result?;
    let node = Node {
        path: created.path,
        name: created.name,
        czxid: created.stat.czxid,
        session: created.stat.ephemeral_owner,
    };
    Ok((node, created.listing))
}

impl Internals {
    /// Curator's attemptLock: create our node and run the lock loop; when our node vanishes
    /// (session expiry), try again under the client's retry policy. `Ok(None)` = timed out.
    pub(crate) async fn attempt(&self, opts: &AttemptOptions<'_>) -> Result<Option<Acquired>> {
        let start = std::time::Instant::now();
        let mut retries = 0u32;
        loop {
            if self.client.is_closed() {
                return Err(Error::closed());
            }
            let outcome = match opts.deadline.bounding(self.attempt_once(opts)).await {
                // The connection was lost and the deadline passed before it came back: timed
                // out (the retry policy's pauses are not waited out past the caller's timeout).
                Err(e) if e.is_retryable() && opts.deadline.passed() => {
                    tracing::debug!(lock = %self.base, error = %e, "the acquire's deadline passed while the connection was lost");
                    return Ok(None);
                }
                // A request in flight when the session expired: our node went with the session,
                // and the client opens a new one. Curator's retry loop retries SESSIONEXPIRED
                // too: a waiter queued behind a holder of the same client must get the lock on
                // the new session (Curator's testKilledSession), not fail.
                Err(Error::SessionExpired(d)) => Outcome::NodeMissing(d.message().to_string()),
                other => other?,
            };
            match outcome {
                Outcome::Granted(a) => return Ok(Some(a)),
                Outcome::TimedOut => return Ok(None),
                Outcome::Misplaced => continue,
                Outcome::Refused(e) => return Err(e),
                Outcome::NodeMissing(why) => match self
                    .client
                    .retry_policy()
                    .next_sleep(retries, start.elapsed())
                {
                    Some(sleep) => {
                        retries += 1;
                        wait::pause(&self.client, sleep, opts.deadline).await?;
                        if opts.deadline.passed() {
                            return Ok(None);
                        }
                    }
                    None => {
                        return Err(Error::NoNode(
                            format!(
                                "acquire lock {}: {why}; the retry policy gave up",
                                self.base
                            )
                            .into(),
                        ))
                    }
                },
            }
        }
    }

    async fn attempt_once(&self, opts: &AttemptOptions<'_>) -> Result<Outcome> {
        let sequence = match (opts.sequence)() {
            Ok(s) => s,
            // Returned as it is: a SessionExpired here is not a request's, to retry.
            Err(e) => return Ok(Outcome::Refused(e)),
        };
        let borrowed = sequence.is_some();
        let (node, first_listing) = self.create_node(opts.data, sequence.as_deref()).await?;
        let mut guard = NodeGuard::new(&self.client, &node.path);
        // Curator sets the revocation watch right after the create, while waiting too.
        let mut node_watch = opts.revocable.as_ref().map(|l| {
            self.watch_own_node(
                &node.path,
                opts.owner,
                Some(l.clone()),
                opts.deleted.clone(),
                false,
            )
        });
        let mut listing = first_listing.map(|c| (c, node.session));
        loop {
            let (mut children, session) = match listing.take() {
                Some(l) => l,
                None => self.children_with_session().await?,
            };
            // Grant only to a node of the current session: a node of an expired session is
            // gone or going, and its position means nothing.
            if session != node.session {
                return Ok(Outcome::NodeMissing(format!(
                    "our lock node {} belongs to session {:#x}, the client is now on session {session:#x}",
                    node.path, node.session
                )));
            }
            let write_held = (opts.write_held)();
            // A node with the write node's sequence keeps its place only while that write hold
            // lasts. Made after it ended (the owner released it, or its session went, while
            // this create was retried), it sorts ahead of any writer granted since.
            if borrowed && !write_held {
                let _ = guard.delete_now().await;
                return Ok(Outcome::Misplaced);
            }
            let watch_name =
                match self
                    .driver
                    .gets_the_lock(self.sorter, &mut children, &node.name, write_held)
                {
                    Predicate::Granted => {
                        guard.disarm();
                        if node_watch.is_none() && opts.deleted.is_some() {
                            node_watch = Some(self.watch_own_node(
                                &node.path,
                                opts.owner,
                                None,
                                opts.deleted.clone(),
                                true,
                            ));
                        }
                        return Ok(Outcome::Granted(Acquired { node, node_watch }));
                    }
                    Predicate::Missing => {
                        return Ok(Outcome::NodeMissing(format!(
                            "sequential path not found: {}",
                            node.path
                        )));
                    }
                    Predicate::Watch(name) => name,
                };
            if opts.deadline.passed() {
                let _ = guard.delete_now().await;
                return Ok(Outcome::TimedOut);
            }
            // getData, not exists: a watch on a node that is already gone would never fire
            // and would stay on the server.
            let watched = path::join(&self.base, &watch_name);
            match self.get_data_watch_with_session(&watched).await {
                Err(Error::NoNode(_)) => continue, // released meanwhile: look again at once
                Err(e) => return Err(e),
                Ok((_, s)) if s != node.session => {
                    return Ok(Outcome::NodeMissing(format!(
                        "session changed from {:#x} to {s:#x} while waiting for {}",
                        node.session, node.path
                    )))
                }
                Ok((w, _)) => match wait::watch(&self.client, w, opts.deadline).await {
                    Wake::Again => {}
                    Wake::Deadline => {
                        let _ = guard.delete_now().await;
                        return Ok(Outcome::TimedOut);
                    }
                    Wake::Closed => return Err(Error::closed()),
                },
            }
        }
    }

    /// Creates our protected node, with the lock's children listed in the same round trip.
    async fn create_node(
        &self,
        data: &[u8],
        sequence: Option<&str>,
    ) -> Result<(Node, Option<Vec<String>>)> {
        let name = [self.lock_name, sequence.unwrap_or("")].concat();
        let mode = if sequence.is_none() {
            CreateMode::EphemeralSequential
        } else {
            CreateMode::Ephemeral
        };
        create_lock_node(&self.client, &self.base, &name, data, mode, true).await
    }

    /// The lock's children and the session that listed them (none if the lock path is gone).
    async fn children_with_session(&self) -> Result<(Vec<String>, i64)> {
        let base = self.base.as_str();
        self.client
            .retry(|s| async move {
                let children = s.children(base).await.or_none()?.unwrap_or_default();
                Ok((children, s.id()))
            })
            .await
    }

    /// getData with a watch, and the session the watch lives in.
    async fn get_data_watch_with_session(&self, path: &str) -> Result<(Watch, i64)> {
        self.client
            .retry(|s| async move {
                let (_, _, w) = s.get_data_watch(path).await?;
                Ok((w, s.id()))
            })
            .await
    }

    /// The sorted children, as full caller paths; none when the lock path does not exist.
    pub(crate) async fn participant_nodes(&self, only_own_kind: bool) -> Result<Vec<String>> {
        let mut children = match self.client.get_children(&self.base).await {
            Ok(c) => c,
            Err(Error::NoNode(_)) => Vec::new(),
            Err(e) => return Err(e),
        };
        self.sorter.sort(&mut children);
        Ok(children
            .into_iter()
            .filter(|c| !only_own_kind || c.contains(self.lock_name))
            .map(|c| path::join(&self.base, &c))
            .collect())
    }

    /// A getData watch on our own node, kept until the returned sender is dropped or the node
    /// goes: Curator's revocable watcher (when `__REVOKE__` is written there, `revoke` hears
    /// it), and the deletion of a held node by someone else (`deleted` hears it: a holder must
    /// not go on believing a lock whose node is gone — another client may hold it already).
    /// `delayed`: set in the background (one request, no round trip added to the acquire) once
    /// [`OWN_NODE_WATCH_DELAY`] has passed with the hold still on: a hold released sooner sends
    /// nothing (an uncontended acquire + release stays at Curator's three requests) and costs
    /// only an entry in [`OWN_NODE_WATCHES`], and a deletion in its first delay is found when the
    /// watch is set (its getData sees no node). On release the node's own deletion ends the
    /// watch, so no removal request is sent.
    ///
    /// The watch lasts as long as the node can: a read that fails on a connection loss is tried
    /// again (the hold may be kept through the disconnection), and a watch event that is not
    /// the node's deletion is followed by a new read. It ends only when the node is gone
    /// (reported), the session ended or the client was closed (the node went with the session;
    /// the lock's monitor reports the hold lost), or the hold ends.
    fn watch_own_node(
        &self,
        node: &str,
        owner: Owner,
        revoke: Option<RevokeListener>,
        deleted: Option<DeletedListener>,
        delayed: bool,
    ) -> watch::Sender<()> {
        let (stop_tx, stop_rx) = watch::channel(());
        let weak = self.client.downgrade();
        let node = node.to_string();
        let watching = move |stop: watch::Receiver<()>| {
            runtime::spawn(watch_held_node(weak, node, owner, revoke, deleted, stop));
        };
        if delayed {
            OWN_NODE_WATCHES.schedule(&stop_tx, watching);
        } else {
            watching(stop_rx);
        }
        stop_tx
    }
}

/// The held nodes whose watch waits for [`OWN_NODE_WATCH_DELAY`] (one line for the process).
static OWN_NODE_WATCHES: DelayLine = DelayLine::new(OWN_NODE_WATCH_DELAY);

/// The body of [`Internals::watch_own_node`]'s watch, until `stop_rx` closes.
async fn watch_held_node(
    weak: WeakClient,
    node: String,
    owner: Owner,
    revoke: Option<RevokeListener>,
    deleted: Option<DeletedListener>,
    mut stop_rx: watch::Receiver<()>,
) {
    let gone = |node: &str| {
        if let Some(d) = &deleted {
            d(node);
        }
    };
    loop {
        let Some(client) = weak.upgrade() else { return };
        let read = tokio::select! {
            r = client.get_data_watch(&node) => r,
            _ = stop_rx.changed() => return,
        };
        drop(client);
        let (data, w) = match read {
            Ok((data, _, w)) => (data, w),
            Err(Error::NoNode(_)) => return gone(&node),
            Err(Error::Closed(_) | Error::SessionExpired(_)) => return,
            Err(e) => {
                tracing::debug!(%node, error = %e, "could not watch our held lock node; trying again");
                tokio::select! {
                    _ = tokio::time::sleep(OWN_NODE_REWATCH_AFTER) => continue,
                    _ = stop_rx.changed() => return,
                }
            }
        };
        if let (Some(listener), true) = (&revoke, data == REVOKE_MESSAGE) {
            // Queues the user's listener on the lock's dispatcher.
            listener(owner);
        }
        tokio::select! {
            e = w.changed() => match e.kind {
                NodeEventKind::Deleted => return gone(&node),
                NodeEventKind::SessionEnded => return,
                // Changed data (a revocation request, say): read and watch again.
                _ => continue,
            },
            _ = stop_rx.changed() => return,
        }
    }
}
