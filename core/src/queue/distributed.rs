//! [`DistributedQueue`]: Curator's `queue-` items with its framing, put by producers and
//! taken by consumers, exactly once through lock nodes (see the [module notes](super)). The
//! names are in `names.rs`, one take of an item in `take.rs`, the taken item in `item.rs`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::item::{Consumer, Item};
use super::names::{
    self, epoch_of, fix_id, id_of, now_ms, ErrorMode, ItemKey, QueueKind, ITEM_NAME,
};
use super::take::Taking;
use super::{framing, put_sequential, sorted_items, QueueNode};
use crate::client::{OrNone, Watch};
use crate::dispatch::Dispatcher;
use crate::wait::{self, Deadline, Wake};
use crate::{path, runtime, Client, ConnectionState, Error, ListenerId, Result};

/// Options of a [`DistributedQueue`] (Curator's `QueueBuilder`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueOptions {
    /// Curator's `lockPath`: consumers lock an item at `lock_path/<item node>` before taking
    /// it, and consumption is exactly once. `None`: Curator's at-most-once consumption.
    pub lock_path: Option<String>,
    /// Curator's `maxItems`: a put waits while the queue holds this many items (a bound that
    /// concurrent producers may overshoot by a few, as Curator's). `None`: unbounded.
    pub max_items: Option<usize>,
    /// Curator's `setErrorMode`: what [`Item::fail`] does with the item. Needs a lock path
    /// (Curator's rule: without one an item is deleted when it is taken). `None`: Curator's
    /// default, [`ErrorMode::Requeue`].
    pub error_mode: Option<ErrorMode>,
}

impl QueueOptions {
    /// With a lock path (exactly-once consumption).
    pub fn lock_path(mut self, lock_path: impl Into<String>) -> Self {
        self.lock_path = Some(lock_path.into());
        self
    }

    /// With a bound on the number of items.
    pub fn max_items(mut self, max_items: usize) -> Self {
        self.max_items = Some(max_items);
        self
    }

    /// With an error mode (needs a lock path).
    pub fn error_mode(mut self, mode: ErrorMode) -> Self {
        self.error_mode = Some(mode);
        self
    }
}

impl QueueOptions {
    /// The options' rules for a queue at `path` (`recipe` names it in errors): the lock path
    /// neither the root nor the queue or inside it, an error mode only with a lock path, a
    /// bound of at least 1. The sharder checks them against its queue path, then its own.
    pub(crate) fn check(&self, recipe: &str, path: &str) -> Result<()> {
        if let Some(lock) = &self.lock_path {
            path::validate_path(lock)?;
            if lock == "/" || lock == path || lock.starts_with(&format!("{path}/")) {
                return Err(Error::invalid(format!(
                    "{recipe} {path}: the lock path {lock} must be neither the root nor inside the queue"
                )));
            }
        }
        if self.error_mode.is_some() && self.lock_path.is_none() {
            return Err(error_mode_needs_a_lock_path(recipe, path));
        }
        if self.max_items == Some(0) {
            return Err(Error::invalid(format!(
                "{recipe} {path}: max_items must be at least 1"
            )));
        }
        Ok(())
    }
}

/// Curator's rule: without a lock path an item is deleted when it is taken, so no error mode.
fn error_mode_needs_a_lock_path(recipe: &str, path: &str) -> Error {
    Error::invalid(format!(
        "{recipe} {path}: an error mode needs a lock path (without one an item is deleted when it is taken)"
    ))
}

/// A completed put, for put listeners (Curator's `QueuePutListener`): `putCompleted` when
/// `multi` is false, `putMultiCompleted` when it is true.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutEvent {
    /// The item's node path (with its sequence number).
    pub node: String,
    /// The messages put in it: one for a put, every one of a put_multi.
    pub messages: Vec<Vec<u8>>,
    /// Whether it was a put_multi.
    pub multi: bool,
}

pub(super) struct Shared {
    pub(super) client: Client,
    pub(super) path: String,
    pub(super) lock_path: Option<String>,
    pub(super) max_items: Option<usize>,
    pub(super) layout: QueueKind,
    pub(super) error_mode: Mutex<ErrorMode>,
    pub(super) listeners: Mutex<Vec<ListenerId>>,
    /// Put listeners, under the dispatcher's guarantee ([`crate::dispatch`]).
    pub(super) puts: Dispatcher<PutEvent>,
    /// Items whose data is not Curator's framing: reported once, then passed over.
    pub(super) corrupt: Mutex<HashSet<String>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        for id in self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = self.client.remove_state_listener(id); // ids it added there
        }
    }
}

/// What one look at a queue found ([`DistributedQueue::pass`]).
pub(super) enum Pass {
    /// An item, taken.
    Item(Box<Item>),
    /// Nothing to take now: look again when one of `watches` fires or at `due`.
    Wait { watches: Vec<Watch>, due: Deadline },
}

/// Curator's `DistributedQueue`: producers [`put`](Self::put) items, consumers take them
/// through [`consume`](Self::consume) or [`take`](Self::take). Items are handed out in order
/// (lowest sequence first) and, with a lock path, consumed exactly once (see the
/// [module notes](super)). Cheap to clone; clones share one queue.
#[derive(Clone)]
pub struct DistributedQueue {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for DistributedQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedQueue")
            .field("path", &self.shared.path)
            .field("lock_path", &self.shared.lock_path)
            .field("max_items", &self.shared.max_items)
            .field("kind", &self.shared.layout)
            .finish()
    }
}

impl DistributedQueue {
    /// A queue at `path` (validated) with `options`. Refuses a closed client.
    pub fn new(client: &Client, path: &str, options: QueueOptions) -> Result<DistributedQueue> {
        DistributedQueue::with_layout(client, path, options, QueueKind::Queue, "DistributedQueue")
    }

    pub(super) fn with_layout(
        client: &Client,
        path: &str,
        options: QueueOptions,
        layout: QueueKind,
        recipe: &str,
    ) -> Result<DistributedQueue> {
        path::validate_path(path)?;
        if path == "/" {
            return Err(Error::invalid("a queue cannot be the root node"));
        }
        options.check(recipe, path)?;
        client.ensure_open_for(recipe, path)?;
        Ok(DistributedQueue {
            shared: Arc::new(Shared {
                client: client.clone(),
                path: path.to_string(),
                lock_path: options.lock_path,
                max_items: options.max_items,
                layout,
                error_mode: Mutex::new(options.error_mode.unwrap_or_default()),
                listeners: Mutex::default(),
                puts: Dispatcher::new(),
                corrupt: Mutex::default(),
            }),
        })
    }

    /// A queue of `kind` at `path` (validated) with `options`: the one constructor behind the
    /// variants, for faces that pick the kind at run time.
    pub fn with_kind(
        client: &Client,
        path: &str,
        kind: QueueKind,
        options: QueueOptions,
    ) -> Result<DistributedQueue> {
        DistributedQueue::with_layout(client, path, options, kind, kind.recipe())
    }

    /// The queue's kind.
    pub fn kind(&self) -> QueueKind {
        self.shared.layout
    }

    /// Puts `data` with `key`, which must be the kind's (`InvalidArgument` otherwise); see
    /// [`put`](Self::put) and the variants' `put` for the rest.
    pub async fn put_with(
        &self,
        data: &[u8],
        key: ItemKey<'_>,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        let name = names::item_name(self.shared.layout, key, &self.shared.path)?;
        self.put_named(name, &[data], false, timeout).await
    }

    /// An id queue's Curator `remove(id)`: removes every item with `id` that no consumer holds;
    /// how many. `InvalidArgument` on another kind of queue.
    pub async fn remove_id(&self, id: &str) -> Result<usize> {
        let sh = &self.shared;
        if sh.layout != QueueKind::Id {
            return Err(Error::invalid(format!(
                "queue {}: remove by id needs an id queue",
                sh.path
            )));
        }
        let path = sh.path.as_str();
        let fixed = fix_id(id);
        let children = sh
            .client
            .retry(|s| async move { s.children(path).await.or_none() })
            .await?
            .unwrap_or_default();
        let mut removed = 0;
        for node in children.iter().filter(|n| id_of(n) == Some(fixed.as_str())) {
            if let Taking::Item(item) = self.try_take(node).await? {
                item.done().await?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The lock path, if consumption is exactly once.
    pub fn lock_path(&self) -> Option<&str> {
        self.shared.lock_path.as_deref()
    }

    /// Puts one item (Curator's framing of `data`). With `max_items`, waits at most `timeout`
    /// (`None`: no limit) for room: `false` when there was none in time. A create whose reply
    /// is lost is not resent (it would put the item twice): that is `OutcomeUnknown`.
    pub async fn put(&self, data: &[u8], timeout: Option<Duration>) -> Result<bool> {
        self.put_named(ITEM_NAME.to_string(), &[data], false, timeout)
            .await
    }

    /// Puts several messages as one item (Curator's `putMulti`: one node in its `MultiItem`
    /// framing), handed to one consumer together: [`Item::messages`]. At least one message.
    pub async fn put_multi(&self, messages: &[&[u8]], timeout: Option<Duration>) -> Result<bool> {
        self.put_multi_with(messages, ItemKey::None, timeout).await
    }

    /// [`put_multi`](Self::put_multi) with `key`, which must be the kind's (`InvalidArgument`
    /// otherwise): Curator has `putMulti` on the plain, priority and delay queues.
    pub async fn put_multi_with(
        &self,
        messages: &[&[u8]],
        key: ItemKey<'_>,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        if messages.is_empty() {
            return Err(Error::invalid(format!(
                "put_multi to queue {}: no messages (an item needs at least one)",
                self.shared.path
            )));
        }
        let name = names::item_name(self.shared.layout, key, &self.shared.path)?;
        self.put_named(name, messages, true, timeout).await
    }

    /// Adds a put listener (Curator's `QueuePutListener`): it hears every put and put_multi
    /// made through this queue (or a clone) that succeeded, after the item is in ZooKeeper. It
    /// runs on the queue's dispatcher (see [`crate::dispatch`]).
    pub fn add_put_listener(
        &self,
        listener: impl Fn(&PutEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        self.shared.puts.add(listener)
    }

    /// Removes a put listener; whether it was there. `InvalidArgument` for an id another
    /// recipe gave out.
    pub fn remove_put_listener(&self, id: ListenerId) -> Result<bool> {
        self.shared.puts.remove(id)
    }

    /// Curator's `setErrorMode`: what [`Item::fail`] does from now on. `InvalidArgument`
    /// without a lock path.
    pub fn set_error_mode(&self, mode: ErrorMode) -> Result<()> {
        if self.shared.lock_path.is_none() {
            return Err(error_mode_needs_a_lock_path("queue", &self.shared.path));
        }
        *self
            .shared
            .error_mode
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = mode;
        Ok(())
    }

    /// The error mode ([`ErrorMode::Requeue`] unless set).
    pub fn error_mode(&self) -> ErrorMode {
        *self
            .shared
            .error_mode
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    async fn put_named(
        &self,
        name: String,
        messages: &[&[u8]],
        multi: bool,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        let sh = &self.shared;
        let data = framing::encode(messages.iter().copied());
        path::validate_data(&sh.path, &data)?;
        let context = |e: Error| e.context(format!("put to queue {}", sh.path));
        let deadline = Deadline::after(timeout);
        if !deadline
            .bounding(self.wait_for_room(deadline))
            .await
            .map_err(context)?
        {
            return Ok(false);
        }
        let node = put_sequential(&sh.client, &sh.path, &name, &data, QueueNode::Persistent)
            .await
            .map_err(context)?;
        if sh.puts.has_listeners() {
            sh.puts.emit(PutEvent {
                node,
                messages: messages.iter().map(|m| m.to_vec()).collect(),
                multi,
            });
        }
        Ok(true)
    }

    /// Curator's `blockIfMaxed`.
    async fn wait_for_room(&self, deadline: Deadline) -> Result<bool> {
        let sh = &self.shared;
        let Some(max) = sh.max_items else {
            return Ok(true);
        };
        let path = sh.path.as_str();
        loop {
            let mut states = wait::states(&sh.client);
            let listed = sh
                .client
                .retry(|s| async move { s.children_watch(path).await.or_none() })
                .await?;
            let Some((children, watch)) = listed else {
                return Ok(true);
            };
            if children.iter().filter(|c| c.starts_with(ITEM_NAME)).count() < max {
                return Ok(true);
            }
            if deadline.passed() {
                return Ok(false);
            }
            match wait::wait(&sh.client, vec![watch], deadline, &mut states).await {
                Wake::Again => {}
                Wake::Deadline => return Ok(false),
                Wake::Closed => return Err(Error::closed()),
            }
        }
    }

    /// The number of items in the queue now (for information: it changes at once).
    pub async fn len(&self) -> Result<usize> {
        let path = self.shared.path.as_str();
        let children = self
            .shared
            .client
            .retry(|s| async move { s.children(path).await.or_none() })
            .await?
            .unwrap_or_default();
        Ok(children.iter().filter(|c| c.starts_with(ITEM_NAME)).count())
    }

    /// A consumer: takes items one after the other ([`Consumer::next`], or as an iterator in
    /// the blocking face).
    pub fn consume(&self) -> Consumer {
        Consumer {
            queue: self.clone(),
        }
    }

    /// Adds a connection-state listener (Curator's consumers are never told: CURATOR-336). It
    /// runs on the client's dispatcher (see [`crate::dispatch`]); it is removed when the last
    /// clone of the queue is dropped.
    pub fn add_listener(
        &self,
        listener: impl Fn(ConnectionState) + Send + Sync + 'static,
    ) -> ListenerId {
        let id = self.shared.client.add_state_listener(listener);
        self.shared
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(id);
        id
    }

    /// Removes a listener; whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        let mut l = self
            .shared
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let before = l.len();
        l.retain(|i| *i != id);
        if l.len() == before {
            self.shared.client.check_listener_id(id)?;
            return Ok(false);
        }
        self.shared.client.remove_state_listener(id)
    }

    /// Takes the next item, waiting at most `timeout` (`None`: no limit); `None` when the
    /// timeout passed first.
    pub async fn take(&self, timeout: Option<Duration>) -> Result<Option<Item>> {
        let sh = &self.shared;
        let deadline = Deadline::after(timeout);
        deadline
            .bounding(async move {
                loop {
                    let mut states = wait::states(&sh.client);
                    let (watches, due) = match self.pass().await? {
                        Pass::Item(item) => return Ok(Some(*item)),
                        Pass::Wait { watches, due } => (watches, due),
                    };
                    if deadline.passed() {
                        return Ok(None);
                    }
                    let wake_at = deadline.earliest(due);
                    match wait::wait(&sh.client, watches, wake_at, &mut states).await {
                        Wake::Again => {}
                        Wake::Deadline if deadline.passed() => return Ok(None),
                        Wake::Deadline => {}
                        Wake::Closed => return Err(Error::closed()),
                    }
                }
            })
            .await
    }

    /// One look at the queue: an item taken, or what to wait on before the next look (the
    /// queue's children, the locks of the items other consumers hold, the next delay item's
    /// time). Subscribe to the connection states before calling it.
    pub(super) async fn pass(&self) -> Result<Pass> {
        let sh = &self.shared;
        let path = sh.path.as_str();
        loop {
            let listed = sh
                .client
                .retry(|s| async move { s.children_watch(path).await.or_none() })
                .await
                .map_err(|e| e.context(format!("take from queue {path}")))?;
            let Some((children, watch)) = listed else {
                super::ensure_persistent(&sh.client, path).await?;
                continue;
            };
            let mut due = Deadline::NEVER;
            let mut locked = Vec::new();
            for node in self.ordered(children) {
                if sh.layout == QueueKind::Delay {
                    let wait_ms = epoch_of(&node) - now_ms();
                    if wait_ms > 0 {
                        // Sorted by epoch: nothing after this one is due either.
                        due = Deadline::after(Some(Duration::from_millis(wait_ms as u64)));
                        break;
                    }
                }
                match self.try_take(&node).await? {
                    Taking::Item(item) => return Ok(Pass::Item(Box::new(item))),
                    Taking::Gone => {}
                    Taking::Locked => locked.push(node),
                }
            }
            // An item given back, or left by a consumer whose session ended, loses only its
            // lock: the queue's children do not change, so the locks are watched too.
            let Some(mut watches) = self.lock_watches(&locked).await? else {
                continue; // a lock went meanwhile: look again at once
            };
            watches.push(watch);
            return Ok(Pass::Wait { watches, due });
        }
    }

    /// Watches on the locks of `nodes`, items other consumers hold (set only before a wait, so
    /// a take that finds an item sends nothing more); `None` if one of them is gone already.
    async fn lock_watches(&self, nodes: &[String]) -> Result<Option<Vec<Watch>>> {
        let sh = &self.shared;
        let mut watches = Vec::with_capacity(nodes.len() + 1);
        let Some(lock_path) = &sh.lock_path else {
            return Ok(Some(watches));
        };
        for node in nodes {
            let lock = path::join(lock_path, node);
            let lock = lock.as_str();
            match sh
                .client
                .retry(|s| async move { s.get_data_watch(lock).await.or_none() })
                .await?
            {
                Some((_, _, w)) => watches.push(w),
                None => return Ok(None),
            }
        }
        Ok(Some(watches))
    }

    /// The item nodes in the layout's order, corrupt ones left out.
    fn ordered(&self, children: Vec<String>) -> Vec<String> {
        let mut items = sorted_items(children, ITEM_NAME, &self.shared.path);
        {
            let corrupt = self
                .shared
                .corrupt
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            items.retain(|n| !corrupt.contains(n));
        }
        names::order(self.shared.layout, &mut items);
        items
    }

    /// [`put`](Self::put) for the blocking face.
    pub fn put_blocking(&self, data: &[u8], timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.put(data, timeout))?
    }

    /// [`put_multi`](Self::put_multi) for the blocking face.
    pub fn put_multi_blocking(
        &self,
        messages: &[&[u8]],
        timeout: Option<Duration>,
    ) -> Result<bool> {
        runtime::try_block_on(self.put_multi(messages, timeout))?
    }

    /// [`take`](Self::take) for the blocking face.
    pub fn take_blocking(&self, timeout: Option<Duration>) -> Result<Option<Item>> {
        runtime::try_block_on(self.take(timeout))?
    }

    /// [`len`](Self::len) for the blocking face.
    pub fn len_blocking(&self) -> Result<usize> {
        runtime::try_block_on(self.len())?
    }
}
