//! kazoo's Lock layout, for the partitioner's partitions and the lease: the lock family's node
//! protocol ([`Internals`]) with kazoo's node name `__lock__`.
//!
//! A kazoo contender creates `<32 hex>__lock__<10 digits>` (EPHEMERAL_SEQUENTIAL) under the lock
//! path; it holds when no child matching `__lock__(-?\d{10})$` has a smaller sequence, and
//! otherwise watches the nearest smaller one. Ours are `_c_<uuid>-__lock__<10 digits>`: kazoo's
//! pattern matches them, and our sort key (the text after the last `__lock__`) is the same
//! sequence, so both sides see one line. Children without `__lock__` (a lease's `lease_holder`)
//! sort after every sequence and never stand in front of a contender.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::client::Parents;
use crate::lock::internals::{AttemptOptions, DeletedListener, Driver, Internals, Node, Sorter};
use crate::wait::Deadline;
use crate::{Client, Owner, Result};

/// kazoo's `Lock._NODE_NAME`.
pub(crate) const LOCK_NAME: &str = "__lock__";

/// A kazoo-layout lock at one path.
pub(crate) struct KazooLock {
    internals: Internals,
}

/// A hold; [`release`](Self::release) deletes the node (dropping it deletes the node in the
/// background).
pub(crate) struct HeldLock {
    client: Client,
    node: Option<Node>,
    node_watch: Option<watch::Sender<()>>,
    /// Cleared before our own delete, so that `deleted` hears only someone else's.
    live: Arc<AtomicBool>,
}

impl KazooLock {
    /// The lock at `path` (validated by the caller).
    pub(crate) fn new(client: &Client, path: &str) -> KazooLock {
        KazooLock {
            internals: Internals {
                client: client.clone(),
                base: path.to_string(),
                lock_name: LOCK_NAME,
                sorter: Sorter::Standard(LOCK_NAME),
                driver: Driver::Standard { max_leases: 1 },
            },
        }
    }

    /// Acquires within `timeout` (`None`: until acquired), with `data` in the node; `Ok(None)`
    /// when it timed out. The lock path and its parents are made PERSISTENT first, as kazoo's
    /// `ensure_path` makes them (a container could be reaped under a kazoo contender between
    /// its `ensure_path` and its create, which kazoo does not retry). `deleted` hears the
    /// deletion of the held node by someone else.
    pub(crate) async fn acquire(
        &self,
        data: &[u8],
        timeout: Option<Duration>,
        deleted: Option<DeletedListener>,
    ) -> Result<Option<HeldLock>> {
        let deadline = Deadline::after(timeout);
        let client = &self.internals.client;
        client
            .ensure_path(&self.internals.base, Parents::Persistent)
            .await?;
        let live = Arc::new(AtomicBool::new(true));
        let deleted = deleted.map(|inner| {
            let live = live.clone();
            Arc::new(move |node: &str| {
                if live.load(Ordering::SeqCst) {
                    inner(node)
                }
            }) as DeletedListener
        });
        let never = || false;
        let sequential = || Ok(None);
        let opts = AttemptOptions {
            owner: Owner::new(),
            data,
            deadline,
            sequence: &sequential,
            write_held: &never,
            revocable: None,
            deleted,
        };
        Ok(self
            .internals
            .attempt(&opts)
            .await?
            .map(|acquired| HeldLock {
                client: client.clone(),
                node: Some(acquired.node),
                node_watch: acquired.node_watch,
                live,
            }))
    }
}

impl HeldLock {
    /// The held node's path.
    pub(crate) fn path(&self) -> &str {
        self.node.as_ref().map(|n| n.path.as_str()).unwrap_or("")
    }

    /// Deletes the node (a guaranteed delete: kept trying in the background if it fails now).
    pub(crate) async fn release(mut self) -> Result<()> {
        self.live.store(false, Ordering::SeqCst);
        self.node_watch = None;
        match self.node.take() {
            Some(node) => self.client.delete_ours(&node.path).await,
            None => Ok(()),
        }
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        self.live.store(false, Ordering::SeqCst);
        if let Some(node) = self.node.take() {
            self.client.delete_ours_in_background(&node.path);
        }
    }
}
