//! Queues (issue 18): [`SimpleDistributedQueue`] and the [`DistributedQueue`] family
//! ([`DistributedIdQueue`], [`DistributedPriorityQueue`], [`DistributedDelayQueue`]), with
//! Curator 5.x's node names and item framing, so that Curator processes and ours share a queue.
//!
//! # What these queues are for
//! Handing work from producers to consumers at modest rates (tens to hundreds of items a
//! second), where each item must be processed **exactly once** even when a consumer dies
//! mid-item. ZooKeeper keeps every item in memory on every server and every take costs several
//! writes through the ensemble's leader: Curator's own tech note calls ZooKeeper a poor
//! high-volume queue, and it is. For a firehose use a message broker.
//!
//! # Wire layout (Curator's)
//! * Simple queue: `path/qn-<seq>` (persistent sequential) holding the raw bytes.
//! * `DistributedQueue`: `path/queue-<seq>` holding Curator's `ItemSerializer` framing (see
//!   `framing.rs`); with a lock path, a consumer first creates the ephemeral `lock_path/<item
//!   node>`. Id queue: `queue-|<id>|<seq>` (`/` and `|` in the id become `_`), ordered with the
//!   id left out. Priority queue: `queue-<0|1><8 hex digits><seq>` (the sign digit, then the
//!   priority's 32-bit two's complement), lower first. Delay queue: `queue-|<hex epoch ms>|<seq>`,
//!   handed out once the epoch has passed, earliest first.
//! * Node kinds: a `DistributedQueue`'s path and lock path are persistent (their missing parents
//!   containers), as Curator's `start` makes them: Curator's producers and lock-safety consumers
//!   create below them without making parents, so a container reaped once the queue drained would
//!   make their next put fail. A simple queue's path is a container, as Curator's.
//!
//! Several messages may share one item (`put_multi`, Curator's `putMulti`/`MultiItem`), and put
//! listeners hear every completed put (Curator's `QueuePutListener`). [`QueueSharder`] spreads
//! one logical queue over several (Curator's `QueueSharder`).
//!
//! # Exactly-once consumption (with a lock path)
//! A consumer takes an item by creating its lock node, then reads it and hands it out as an
//! [`Item`] whose [`fencing_token`](Item::fencing_token) is the lock node's czxid (a later
//! taker of the same item always gets a larger one). [`Item::done`] removes the item with one
//! transaction, on the session that holds the lock, that checks the lock node, deletes the item
//! and deletes the lock (as CURATOR-605 proposes): two consumers can never both complete one
//! item, and a consumer whose session ended is told so instead of completing it. A consumer that
//! dies mid-item leaves the item in place; its lock goes with its session and another consumer
//! takes the item. An item dropped without `done` is given back at once. Neither changes the
//! queue's children, so a waiting consumer also watches the locks of the items it passed over:
//! it takes such an item as soon as its lock goes.
//!
//! A consumer that fails an item calls [`Item::fail`]: the queue's [`ErrorMode`] (Curator's,
//! honoured only with a lock path, as Curator's) puts the item back at the tail
//! (`Requeue`, the default) or deletes it (`Delete`), in the same kind of transaction, so a
//! consumer whose session ended fails nothing and the item is taken once by another.
//!
//! Without a lock path, consumption is Curator's: the item is deleted when it is taken (at most
//! once: a consumer that dies mid-item loses it, and so does a take whose delete was applied
//! with its reply lost, since the retry cannot tell our delete from another consumer's) and
//! `done` has nothing to do. A take dropped while its delete is in flight (a `timeout()`
//! around it, a cancelled task) does not lose the item: the delete goes on to its end and the
//! item, handed to nobody, is put back at the tail with its key. [`Item::give_back`] does the
//! same for an item taken and not wanted.
//!
//! # Curator's failures we avoid
//! Consumers hear connection-state changes ([`DistributedQueue::add_listener`]; CURATOR-336);
//! a consumer's wait reads again after every state change, so it never stalls after a long
//! disconnect (CURATOR-623); a take makes a reaped queue node again and carries on
//! (CURATOR-308); two consumers never both get one item (CURATOR-605).

mod distributed;
mod framing;
mod item;
mod names;
mod sharder;
mod simple;
mod take;
mod variants;

pub use self::distributed::{DistributedQueue, PutEvent, QueueOptions};
pub use self::item::{Consumer, Item};
pub use self::names::{ErrorMode, ItemKey, QueueKind};
pub use self::sharder::{QueueSharder, SharderOptions, SharderPolicies};
pub use self::simple::SimpleDistributedQueue;
pub use self::variants::{DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue};

use std::future::Future;
use std::pin::Pin;

use crate::client::{Parents, Session};
use crate::{path, runtime, Client, CreateMode, Error, Result};

/// What a queue's own node is when a put or a take has to make it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueueNode {
    /// Persistent, its missing parents containers: Curator's `DistributedQueue.start` makes its
    /// queue and lock paths so, and Curator's producers and lock-safety consumers create below
    /// them without parents. A container there would be reaped once the queue is drained, and
    /// a Curator producer's next put would fail (silently, in the background).
    Persistent,
    /// A container, as Curator's `SimpleDistributedQueue` makes its path (its puts make it
    /// again when it was reaped).
    Container,
}

/// Makes `path` a persistent node with container parents (see [`QueueNode::Persistent`]); one
/// that exists is fine.
pub(crate) async fn ensure_persistent(client: &Client, path: &str) -> Result<()> {
    client
        .retry(|s| async move { make_persistent(&s, path).await })
        .await
}

/// [`ensure_persistent`] on one session, once.
pub(crate) async fn make_persistent(s: &Session, path: &str) -> Result<()> {
    match s
        .create_with_parents(path, &[], CreateMode::Persistent, None, Parents::Containers)
        .await
    {
        Ok(_) | Err(Error::NodeExists(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Runs an at-most-once take's removal of an item (its read and its delete) so that a take
/// dropped while the removal is in flight (a caller's timeout around the take, a cancelled
/// task, Ctrl-C in a face) does not lose the item: the removal goes on in the background to its
/// end, and `put_back` gets its result, to put back ([`put_back`]) an item removed for nobody.
/// The client's close waits for both ([`Client::finishing`]). One dropped before its first
/// poll sent nothing and is dropped with it.
pub(super) async fn removal_outliving_the_take<F, P>(
    client: &Client,
    removal: F,
    put_back: P,
) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    P: FnOnce(F::Output) + Send + 'static,
{
    /// The removal, until it has answered, and what to do with its result if nobody waits.
    struct InFlight<F, P>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
        P: FnOnce(F::Output) + Send + 'static,
    {
        client: Client,
        removal: Option<Pin<Box<F>>>,
        put_back: Option<P>,
    }
    impl<F, P> Drop for InFlight<F, P>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
        P: FnOnce(F::Output) + Send + 'static,
    {
        fn drop(&mut self) {
            if let (Some(removal), Some(put_back)) = (self.removal.take(), self.put_back.take()) {
                let finishing = self.client.finishing();
                runtime::spawn(async move {
                    put_back(removal.await);
                    drop(finishing);
                });
            }
        }
    }
    let mut in_flight = InFlight {
        client: client.clone(),
        removal: Some(Box::pin(removal)),
        put_back: Some(put_back),
    };
    let removed = std::future::poll_fn(|cx| match in_flight.removal.as_mut() {
        Some(removal) => removal.as_mut().poll(cx),
        None => std::task::Poll::Pending, // never: set above, taken only after this
    })
    .await;
    in_flight.removal = None;
    removed
}

/// Puts back at the tail, as its own task, an item an at-most-once take removed and handed to
/// nobody (`data`: the node's bytes as read): it goes on when the caller stops waiting, and the
/// client's close waits for it ([`Client::finishing`]). A failure is logged (nothing else holds
/// the item then) and returned.
pub(super) fn put_back(
    client: &Client,
    parent: &str,
    name: &str,
    data: Vec<u8>,
    parent_node: QueueNode,
) -> impl Future<Output = Result<()>> + Send + 'static {
    let finishing = client.finishing();
    let (client, parent, name) = (client.clone(), parent.to_string(), name.to_string());
    let task = runtime::spawn(async move {
        let _finishing = finishing;
        let put = put_sequential(&client, &parent, &name, &data, parent_node).await;
        if let Err(e) = &put {
            let lost = match e {
                Error::OutcomeUnknown(_) => "may be lost",
                _ => "is lost",
            };
            tracing::error!(queue = %parent, bytes = data.len(), error = %e, "an item taken for nobody could not be put back: it {lost}");
        }
        put.map(drop)
            .map_err(|e| e.context(format!("put back an item taken from queue {parent}")))
    });
    async move { task.await.map_err(crate::client::join_error)? }
}

/// Creates `parent/<name><seq>` (persistent sequential), making a missing (or reaped) parent
/// as `parent_node` says. Not resent after a lost reply (a second item): `OutcomeUnknown` then.
pub(crate) async fn put_sequential(
    client: &Client,
    parent: &str,
    name: &str,
    data: &[u8],
    parent_node: QueueNode,
) -> Result<String> {
    let node = path::join(parent, name);
    // Waiting for a connection sends nothing: the retry policy covers that part only.
    let s = client.retry(|s| async move { Ok(s) }).await?;
    let parents = match parent_node {
        QueueNode::Container => Parents::Containers,
        QueueNode::Persistent => Parents::None,
    };
    let mut rounds = 0;
    loop {
        rounds += 1;
        let created =
            s.create_with_parents(&node, data, CreateMode::PersistentSequential, None, parents);
        match created.await {
            Ok(c) => return Ok(c.path),
            // No queue node: nothing was created; make it, then put (again if it keeps going).
            Err(Error::NoNode(_)) if parents == Parents::None && rounds <= 3 => {
                make_persistent(&s, parent).await?;
            }
            Err(e) if e.is_retryable() => {
                return Err(Error::OutcomeUnknown(
                    format!(
                        "the reply of the create of {node} was lost ({}); the item may or may not be in the queue, and was not put again",
                        e.message()
                    )
                    .into(),
                ))
            }
            Err(e) => return Err(e),
        }
    }
}

/// The children named `prefix…`, in Curator's order (by name); foreign nodes are logged and
/// left out.
pub(crate) fn sorted_items(children: Vec<String>, prefix: &str, path: &str) -> Vec<String> {
    let mut items: Vec<String> = children
        .into_iter()
        .filter(|c| {
            let ours = c.starts_with(prefix);
            if !ours {
                tracing::debug!(queue = path, node = %c, "foreign node in queue path");
            }
            ours
        })
        .collect();
    items.sort();
    items
}
