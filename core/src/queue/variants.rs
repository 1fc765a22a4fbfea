//! Curator's `DistributedIdQueue`, `DistributedPriorityQueue` and `DistributedDelayQueue`: a
//! [`DistributedQueue`] of their kind, put with their key.

use std::time::Duration;

use super::distributed::{DistributedQueue, QueueOptions};
use super::item::{Consumer, Item};
use super::names::{ItemKey, QueueKind};
use crate::{runtime, Client, Result};

macro_rules! variant_common {
    ($t:ident, $kind:expr, $what:literal) => {
        #[doc = concat!($what, " at `path` (validated) with `options`. Refuses a closed client.")]
        pub fn new(client: &Client, path: &str, options: QueueOptions) -> Result<$t> {
            let queue =
                DistributedQueue::with_layout(client, path, options, $kind, stringify!($t))?;
            Ok($t { queue })
        }

        /// The underlying queue (consume, listeners, put listeners, error mode, length).
        pub fn queue(&self) -> &DistributedQueue {
            &self.queue
        }

        /// A consumer (see [`DistributedQueue::consume`]).
        pub fn consume(&self) -> Consumer {
            self.queue.consume()
        }

        /// Takes the next item (see [`DistributedQueue::take`]).
        pub async fn take(&self, timeout: Option<Duration>) -> Result<Option<Item>> {
            self.queue.take(timeout).await
        }
    };
}

/// Curator's `DistributedIdQueue`: items carry an id (`queue-|<id>|<seq>`) and can be removed
/// by it; ordered by sequence.
#[derive(Clone, Debug)]
pub struct DistributedIdQueue {
    queue: DistributedQueue,
}

impl DistributedIdQueue {
    variant_common!(DistributedIdQueue, QueueKind::Id, "An id queue");

    /// Puts `data` with `id` (not empty; `/` and `|` become `_`, as Curator's `fixId`).
    pub async fn put(&self, data: &[u8], id: &str, timeout: Option<Duration>) -> Result<bool> {
        self.queue.put_with(data, ItemKey::Id(id), timeout).await
    }

    /// Removes every item with `id` that no consumer holds; how many.
    pub async fn remove(&self, id: &str) -> Result<usize> {
        self.queue.remove_id(id).await
    }

    /// [`put`](Self::put) for the blocking face.
    pub fn put_blocking(&self, data: &[u8], id: &str, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.put(data, id, timeout))?
    }

    /// [`remove`](Self::remove) for the blocking face.
    pub fn remove_blocking(&self, id: &str) -> Result<usize> {
        runtime::try_block_on(self.remove(id))?
    }
}

/// Curator's `DistributedPriorityQueue`: lower priorities come out first
/// (`queue-<0|1><8 hex digits><seq>`).
#[derive(Clone, Debug)]
pub struct DistributedPriorityQueue {
    queue: DistributedQueue,
}

impl DistributedPriorityQueue {
    variant_common!(
        DistributedPriorityQueue,
        QueueKind::Priority,
        "A priority queue"
    );

    /// Puts `data` with `priority` (lower first).
    pub async fn put(&self, data: &[u8], priority: i32, timeout: Option<Duration>) -> Result<bool> {
        self.queue
            .put_with(data, ItemKey::Priority(priority), timeout)
            .await
    }

    /// Puts several messages as one item with `priority` (Curator's `putMulti(items,
    /// priority)`), handed to one consumer together.
    pub async fn put_multi(
        &self,
        messages: &[&[u8]],
        priority: i32,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        self.queue
            .put_multi_with(messages, ItemKey::Priority(priority), timeout)
            .await
    }

    /// [`put`](Self::put) for the blocking face.
    pub fn put_blocking(
        &self,
        data: &[u8],
        priority: i32,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        runtime::try_block_on(self.put(data, priority, timeout))?
    }

    /// [`put_multi`](Self::put_multi) for the blocking face.
    pub fn put_multi_blocking(
        &self,
        messages: &[&[u8]],
        priority: i32,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        runtime::try_block_on(self.put_multi(messages, priority, timeout))?
    }
}

/// Curator's `DistributedDelayQueue`: an item is handed out once its time (epoch
/// milliseconds) has passed, earliest first (`queue-|<hex epoch>|<seq>`).
#[derive(Clone, Debug)]
pub struct DistributedDelayQueue {
    queue: DistributedQueue,
}

impl DistributedDelayQueue {
    variant_common!(DistributedDelayQueue, QueueKind::Delay, "A delay queue");

    /// Puts `data`, to be handed out from `delay_until_epoch_ms` (milliseconds since the Unix
    /// epoch, positive) on.
    pub async fn put(
        &self,
        data: &[u8],
        delay_until_epoch_ms: i64,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        self.queue
            .put_with(data, ItemKey::DelayUntil(delay_until_epoch_ms), timeout)
            .await
    }

    /// Puts several messages as one item, handed out together from `delay_until_epoch_ms` on
    /// (Curator's `putMulti(items, delayUntilEpoch)`).
    pub async fn put_multi(
        &self,
        messages: &[&[u8]],
        delay_until_epoch_ms: i64,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        self.queue
            .put_multi_with(messages, ItemKey::DelayUntil(delay_until_epoch_ms), timeout)
            .await
    }

    /// [`put`](Self::put) for the blocking face.
    pub fn put_blocking(
        &self,
        data: &[u8],
        delay_until_epoch_ms: i64,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        runtime::try_block_on(self.put(data, delay_until_epoch_ms, timeout))?
    }

    /// [`put_multi`](Self::put_multi) for the blocking face.
    pub fn put_multi_blocking(
        &self,
        messages: &[&[u8]],
        delay_until_epoch_ms: i64,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        runtime::try_block_on(self.put_multi(messages, delay_until_epoch_ms, timeout))?
    }
}
