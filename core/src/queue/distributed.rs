//! The [`DistributedQueue`] family: Curator's `queue-` items with its framing, consumed
//! exactly once through lock nodes (see the [module notes](super)).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{framing, put_sequential, sorted_items};
use crate::client::{Op, OrNone, Parents, Session, Watch};
use crate::wait::{self, Deadline, Wake};
use crate::{path, runtime, Client, ConnectionState, CreateMode, Error, ListenerId, Result};

const ITEM_NAME: &str = "queue-";
const SEPARATOR: char = '|';

/// Options of a [`DistributedQueue`] (Curator's `QueueBuilder`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueOptions {
    /// Curator's `lockPath`: consumers lock an item at `lock_path/<item node>` before taking
    /// it, and consumption is exactly once. `None`: Curator's at-most-once consumption.
    pub lock_path: Option<String>,
    /// Curator's `maxItems`: a put waits while the queue holds this many items (a bound that
    /// concurrent producers may overshoot by a few, as Curator's). `None`: unbounded.
    pub max_items: Option<usize>,
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
}

/// Which of Curator's queues: the item names and their order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueKind {
    /// `DistributedQueue`: `queue-<seq>`, by sequence.
    Queue,
    /// `DistributedIdQueue`: `queue-|<id>|<seq>`, by sequence.
    Id,
    /// `DistributedPriorityQueue`: `queue-<0|1><8 hex><seq>`, lower priority first.
    Priority,
    /// `DistributedDelayQueue`: `queue-|<hex epoch ms>|<seq>`, handed out once due.
    Delay,
}

impl QueueKind {
    /// Every kind.
    pub const ALL: &'static [QueueKind] = &[
        QueueKind::Queue,
        QueueKind::Id,
        QueueKind::Priority,
        QueueKind::Delay,
    ];

    /// The name every face uses: `QUEUE`, `ID`, `PRIORITY`, `DELAY`.
    pub const fn name(self) -> &'static str {
        match self {
            QueueKind::Queue => "QUEUE",
            QueueKind::Id => "ID",
            QueueKind::Priority => "PRIORITY",
            QueueKind::Delay => "DELAY",
        }
    }

    /// The kind with this name (ASCII case-insensitive).
    pub fn from_name(name: &str) -> Result<QueueKind> {
        QueueKind::ALL
            .iter()
            .copied()
            .find(|k| k.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{name:?} is not a queue kind; expected QUEUE, ID, PRIORITY or DELAY"
                ))
            })
    }
}

/// What an item is put with: nothing (a plain queue), or its kind's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKey<'a> {
    /// A [`QueueKind::Queue`] item.
    None,
    /// A [`QueueKind::Id`] item's id (not empty; `/` and `|` become `_`).
    Id(&'a str),
    /// A [`QueueKind::Priority`] item's priority (lower first).
    Priority(i32),
    /// A [`QueueKind::Delay`] item's time: milliseconds since the Unix epoch (positive).
    DelayUntil(i64),
}

struct Shared {
    client: Client,
    path: String,
    lock_path: Option<String>,
    max_items: Option<usize>,
    layout: QueueKind,
    listeners: Mutex<Vec<ListenerId>>,
    /// Items whose data is not Curator's framing: reported once, then passed over.
    corrupt: Mutex<HashSet<String>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        for id in self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            self.client.remove_state_listener(id);
        }
    }
}

/// Curator's `DistributedQueue`: producers [`put`](Self::put) items, consumers take them
/// through [`consume`](Self::consume) or [`take`](Self::take). Items are handed out in order
/// (lowest sequence first) and, with a lock path, consumed exactly once (see the
/// [module notes](super)). Cheap to clone; clones share one queue.
#[derive(Clone)]
pub struct DistributedQueue {
    shared: Arc<Shared>,
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

    fn with_layout(
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
        if let Some(lock) = &options.lock_path {
            path::validate_path(lock)?;
            if lock == "/" || lock == path || lock.starts_with(&format!("{path}/")) {
                return Err(Error::invalid(format!(
                    "{recipe} {path}: the lock path {lock} must be neither the root nor inside the queue"
                )));
            }
        }
        if options.max_items == Some(0) {
            return Err(Error::invalid(format!(
                "{recipe} {path}: max_items must be at least 1"
            )));
        }
        client.ensure_open_for(recipe, path)?;
        Ok(DistributedQueue {
            shared: Arc::new(Shared {
                client: client.clone(),
                path: path.to_string(),
                lock_path: options.lock_path,
                max_items: options.max_items,
                layout,
                listeners: Mutex::default(),
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
        let recipe = match kind {
            QueueKind::Queue => "DistributedQueue",
            QueueKind::Id => "DistributedIdQueue",
            QueueKind::Priority => "DistributedPriorityQueue",
            QueueKind::Delay => "DistributedDelayQueue",
        };
        DistributedQueue::with_layout(client, path, options, kind, recipe)
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
        let name = match (self.shared.layout, key) {
            (QueueKind::Queue, ItemKey::None) => ITEM_NAME.to_string(),
            (QueueKind::Id, ItemKey::Id(id)) => {
                if id.is_empty() {
                    return Err(Error::invalid("an item id must not be empty"));
                }
                let fixed = fix_id(id);
                path::validate_path(&format!("/{fixed}"))?;
                format!("{ITEM_NAME}{SEPARATOR}{fixed}{SEPARATOR}")
            }
            (QueueKind::Priority, ItemKey::Priority(p)) => {
                let sign = if p >= 0 { '1' } else { '0' };
                format!("{ITEM_NAME}{sign}{:08X}", p as u32)
            }
            (QueueKind::Delay, ItemKey::DelayUntil(ms)) => {
                if ms <= 0 {
                    return Err(Error::invalid(format!(
                        "delay_until_epoch_ms must be positive, not {ms}"
                    )));
                }
                format!("{ITEM_NAME}{SEPARATOR}{ms:08X}{SEPARATOR}")
            }
            (kind, key) => {
                return Err(Error::invalid(format!(
                    "queue {}: a {} queue's items are not put with {key:?}",
                    self.shared.path,
                    kind.name()
                )))
            }
        };
        self.put_named(name, &[data], timeout).await
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
        self.put_named(ITEM_NAME.to_string(), &[data], timeout)
            .await
    }

    /// Puts several messages as one item (Curator's `putMulti`): consumed together.
    pub async fn put_multi(&self, messages: &[&[u8]], timeout: Option<Duration>) -> Result<bool> {
        self.put_named(ITEM_NAME.to_string(), messages, timeout)
            .await
    }

    async fn put_named(
        &self,
        name: String,
        messages: &[&[u8]],
        timeout: Option<Duration>,
    ) -> Result<bool> {
        let sh = &self.shared;
        let data = framing::encode(messages.iter().copied());
        path::validate_data(&sh.path, &data)?;
        let context = |e: Error| e.context(format!("put to queue {}", sh.path));
        if !self
            .wait_for_room(Deadline::after(timeout))
            .await
            .map_err(context)?
        {
            return Ok(false);
        }
        put_sequential(&sh.client, &sh.path, &name, &data)
            .await
            .map_err(context)?;
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

    /// Removes a listener; whether it was there.
    pub fn remove_listener(&self, id: ListenerId) -> bool {
        let mut l = self
            .shared
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let before = l.len();
        l.retain(|i| *i != id);
        l.len() != before && self.shared.client.remove_state_listener(id)
    }

    /// Takes the next item, waiting at most `timeout` (`None`: no limit); `None` when the
    /// timeout passed first.
    pub async fn take(&self, timeout: Option<Duration>) -> Result<Option<Item>> {
        let sh = &self.shared;
        let deadline = Deadline::after(timeout);
        let path = sh.path.as_str();
        loop {
            let mut states = wait::states(&sh.client);
            let listed = sh
                .client
                .retry(|s| async move { s.children_watch(path).await.or_none() })
                .await
                .map_err(|e| e.context(format!("take from queue {path}")))?;
            let Some((children, watch)) = listed else {
                sh.client.ensure_path(path, Parents::Containers).await?;
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
                    Taking::Item(item) => return Ok(Some(item)),
                    Taking::Gone => {}
                    Taking::Locked => locked.push(node),
                }
            }
            if deadline.passed() {
                return Ok(None);
            }
            // An item given back, or left by a consumer whose session ended, loses only its
            // lock: the queue's children do not change, so the locks are watched too.
            let Some(mut watches) = self.lock_watches(&locked).await? else {
                continue; // a lock went meanwhile: look again at once
            };
            watches.push(watch);
            let wake_at = deadline.earliest(due);
            match wait::wait(&sh.client, watches, wake_at, &mut states).await {
                Wake::Again => {}
                Wake::Deadline if deadline.passed() => return Ok(None),
                Wake::Deadline => {}
                Wake::Closed => return Err(Error::closed()),
            }
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
        match self.shared.layout {
            QueueKind::Queue | QueueKind::Priority => {}
            QueueKind::Id => items.sort_by_cached_key(|n| without_id(n)),
            QueueKind::Delay => items.sort_by_cached_key(|n| epoch_of(n)),
        }
        items
    }

    /// Tries to take `node`.
    async fn try_take(&self, node: &str) -> Result<Taking> {
        let sh = &self.shared;
        let item_path = path::join(&sh.path, node);
        let taken = match &sh.lock_path {
            Some(lock_path) => self.take_locked(lock_path, node, &item_path).await,
            None => self.take_unlocked(&item_path).await,
        }
        .map_err(|e| e.context(format!("take {item_path}")))?;
        let (data, token, hold) = match taken {
            Taking::Item(taken) => taken,
            Taking::Gone => return Ok(Taking::Gone),
            Taking::Locked => return Ok(Taking::Locked),
        };
        let messages = match framing::decode(&item_path, &data) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(item = %item_path, error = %e, "queue item is not Curator's framing; left in place and passed over");
                sh.corrupt
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(node.to_string());
                if let Some(hold) = hold {
                    hold.release_in_background();
                }
                return Err(e);
            }
        };
        Ok(Taking::Item(Item {
            queue: self.clone(),
            node: node.to_string(),
            item_path,
            messages,
            token,
            hold,
        }))
    }

    /// Curator's `processNormally`: read, delete at the version read (at most once).
    async fn take_unlocked(&self, item_path: &str) -> Result<Taking<Taken>> {
        self.shared
            .client
            .retry(|s| async move {
                let Some((data, stat)) = s.get_data(item_path).await.or_none()? else {
                    return Ok(Taking::Gone);
                };
                if framing::decode(item_path, &data).is_err() {
                    return Ok(Taking::Item((data, stat.czxid, None))); // reported, left in place
                }
                match s.delete(item_path, Some(stat.version)).await {
                    Ok(()) => Ok(Taking::Item((data, stat.czxid, None))),
                    Err(Error::NoNode(_)) | Err(Error::BadVersion(_)) => Ok(Taking::Gone),
                    Err(e) => Err(e),
                }
            })
            .await
    }

    /// Curator's `processWithLockSafety`, first half: our lock node, then the item's data, on
    /// one session. The lock node holds a fresh id, so a retried create finds it ours.
    async fn take_locked(
        &self,
        lock_path: &str,
        node: &str,
        item_path: &str,
    ) -> Result<Taking<Taken>> {
        let sh = &self.shared;
        let lock = path::join(lock_path, node);
        let lock = lock.as_str();
        let attempt = uuid::Uuid::new_v4().to_string();
        let attempt = attempt.as_bytes();
        sh.client
            .retry(|s: Session| async move {
                let mut rounds = 0;
                let czxid = loop {
                    rounds += 1;
                    match s.create(lock, attempt, CreateMode::Ephemeral).await {
                        Ok(c) => break c.stat.czxid,
                        Err(Error::NoNode(_)) if rounds <= 3 => {
                            sh.client
                                .ensure_path(lock_path, Parents::Containers)
                                .await?;
                        }
                        Err(Error::NodeExists(_)) => match s.get_data(lock).await.or_none()? {
                            Some((d, st)) if d == attempt && st.ephemeral_owner == s.id() => {
                                break st.czxid
                            }
                            Some(_) => return Ok(Taking::Locked),
                            None if rounds <= 3 => {}
                            // A lock that keeps coming and going: its watch says when to retry.
                            None => return Ok(Taking::Locked),
                        },
                        Err(e) => return Err(e),
                    }
                };
                let hold = Hold {
                    client: sh.client.clone(),
                    session: s.clone(),
                    lock: lock.to_string(),
                };
                match s.get_data(item_path).await {
                    Ok((data, _)) => Ok(Taking::Item((data, czxid, Some(hold)))),
                    Err(Error::NoNode(_)) => {
                        // Completed by another consumer between our listing and our lock.
                        hold.release_in_background();
                        Ok(Taking::Gone)
                    }
                    Err(e) => {
                        hold.release_in_background();
                        Err(e)
                    }
                }
            })
            .await
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

/// What one attempt to take an item found.
enum Taking<T = Item> {
    /// Taken.
    Item(T),
    /// Gone: completed or taken by another consumer.
    Gone,
    /// Held by another consumer (its lock exists).
    Locked,
}

/// A taken item's data, fencing token and lock.
type Taken = (Vec<u8>, i64, Option<Hold>);

/// A lock on one item: the node and the session that made it.
struct Hold {
    client: Client,
    session: Session,
    lock: String,
}

impl Hold {
    /// Deletes the lock node on its own session (a lock of an ended session is gone already),
    /// retrying connection losses under the client's retry policy.
    async fn release(self) -> Result<()> {
        let client = self.session_client();
        let start = Instant::now();
        let mut retries = 0;
        loop {
            match self.session.delete(&self.lock, None).await {
                Ok(()) | Err(Error::NoNode(_)) | Err(Error::SessionExpired(_)) => return Ok(()),
                Err(e) if e.is_retryable() => {
                    match client.retry_policy().next_sleep(retries, start.elapsed()) {
                        Some(d) if !client.is_closed() => {
                            retries += 1;
                            tokio::time::sleep(d).await;
                        }
                        _ => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn release_in_background(self) {
        runtime::spawn(async move {
            if let Err(e) = self.release().await {
                tracing::warn!(error = %e, "could not delete a queue item's lock node (it goes with the session)");
            }
        });
    }

    fn session_client(&self) -> Client {
        self.client.clone()
    }
}

/// Takes items one after the other: `next().await`, or iterate (blocking face; each step
/// waits with no limit).
#[derive(Clone, Debug)]
pub struct Consumer {
    queue: DistributedQueue,
}

impl Consumer {
    /// The next item, waiting at most `timeout` (`None`: no limit).
    pub async fn next(&self, timeout: Option<Duration>) -> Result<Option<Item>> {
        self.queue.take(timeout).await
    }

    /// [`next`](Self::next) for the blocking face.
    pub fn next_blocking(&self, timeout: Option<Duration>) -> Result<Option<Item>> {
        self.queue.take_blocking(timeout)
    }
}

impl Iterator for Consumer {
    type Item = Result<Item>;

    fn next(&mut self) -> Option<Result<Item>> {
        match self.queue.take_blocking(None) {
            Ok(Some(item)) => Some(Ok(item)),
            Ok(None) => None,
            Err(e) if e.kind() == crate::ErrorKind::Closed => None,
            Err(e) => Some(Err(e)),
        }
    }
}

/// One taken item: its messages and fencing token are valid until [`done`](Self::done) (or
/// [`release`](Self::release)). Dropping it without either gives it back.
pub struct Item {
    queue: DistributedQueue,
    node: String,
    item_path: String,
    messages: Vec<Vec<u8>>,
    token: i64,
    hold: Option<Hold>,
}

impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Item")
            .field("node", &self.node)
            .field("messages", &self.messages.len())
            .field("fencing_token", &self.token)
            .finish()
    }
}

impl Item {
    /// The item's (first) message; empty for an item with none.
    pub fn data(&self) -> &[u8] {
        self.messages.first().map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every message of the item (several for Curator's `putMulti`).
    pub fn messages(&self) -> &[Vec<u8>] {
        &self.messages
    }

    /// The fencing token: the czxid of this consumer's lock node (with a lock path; a later
    /// taker of the same item gets a larger one), or of the item node (without one). Pass it
    /// to the sink, which refuses a token lower than one it has seen for the item.
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// The item's node name (`queue-…`).
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The item's id (an id queue's), or `None`.
    pub fn id(&self) -> Option<&str> {
        (self.queue.shared.layout == QueueKind::Id).then(|| id_of(&self.node))?
    }

    /// Completes the item: with a lock path, one transaction on the session holding the lock
    /// checks the lock, deletes the item and deletes the lock. An error means the item was not
    /// completed by us: the lock went with an ended session (`SessionExpired`; another consumer
    /// may take the item), or the item was removed by someone else (`NoNode`). A lost reply is
    /// resolved by reading back on the same session. Without a lock path, nothing to do.
    pub async fn done(mut self) -> Result<()> {
        let Some(hold) = self.hold.take() else {
            return Ok(());
        };
        let ops = [
            Op::Check {
                path: hold.lock.clone(),
                version: 0,
            },
            Op::Delete {
                path: self.item_path.clone(),
                version: None,
            },
            Op::Delete {
                path: hold.lock.clone(),
                version: None,
            },
        ];
        let client = hold.session_client();
        let start = Instant::now();
        let mut retries = 0;
        let context = |e: Error| e.context(format!("complete queue item {}", self.item_path));
        loop {
            let err = match hold.session.multi(&ops).await {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            match err {
                Error::NoNode(_) if err.failed_op() == Some(1) => {
                    hold.release_in_background();
                    return Err(context(Error::NoNode(
                        "the item was removed by another process while we held it".into(),
                    )));
                }
                Error::NoNode(_) | Error::BadVersion(_) => {
                    return Err(context(Error::SessionExpired(
                        "our lock node on the item is gone; another consumer may take the item"
                            .into(),
                    )));
                }
                Error::SessionExpired(_) => {
                    return Err(context(Error::SessionExpired(
                        "the session holding the item's lock ended; another consumer may take the item"
                            .into(),
                    )));
                }
                e if e.is_retryable() => {
                    match client.retry_policy().next_sleep(retries, start.elapsed()) {
                        Some(d) if !client.is_closed() => {
                            retries += 1;
                            tokio::time::sleep(d).await;
                        }
                        _ => return Err(context(e)),
                    }
                    // Applied already? Both nodes went in one transaction.
                    let lock = hold.session.exists(&hold.lock).await;
                    let item = hold.session.exists(&self.item_path).await;
                    if let (Ok(None), Ok(None)) = (lock, item) {
                        return Ok(());
                    }
                }
                e => return Err(context(e)),
            }
        }
    }

    /// Gives the item back without completing it: deletes our lock, so another consumer (or
    /// this one) takes it again. Without a lock path the item is gone already.
    pub async fn release(mut self) -> Result<()> {
        match self.hold.take() {
            Some(hold) => hold.release().await,
            None => Ok(()),
        }
    }

    /// [`done`](Self::done) for the blocking face.
    pub fn done_blocking(self) -> Result<()> {
        runtime::try_block_on(self.done())?
    }

    /// [`release`](Self::release) for the blocking face.
    pub fn release_blocking(self) -> Result<()> {
        runtime::try_block_on(self.release())?
    }
}

impl Drop for Item {
    fn drop(&mut self) {
        if let Some(hold) = self.hold.take() {
            hold.release_in_background();
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Curator's `DistributedIdQueue.parseId`: the text between the first two separators.
fn id_of(node: &str) -> Option<&str> {
    let first = node.find(SEPARATOR)?;
    let second = node[first + 1..].find(SEPARATOR)? + first + 1;
    Some(&node[first + 1..second])
}

/// Curator's `fixId`: `/` and `|` become `_`.
fn fix_id(id: &str) -> String {
    id.replace(['/', SEPARATOR], "_")
}

/// The node name with `|id|` left out (the id queue's sort key).
fn without_id(node: &str) -> String {
    match id_of(node) {
        Some(id) => node.replacen(&format!("{SEPARATOR}{id}{SEPARATOR}"), "", 1),
        None => node.to_string(),
    }
}

/// Curator's `DistributedDelayQueue.getEpoch`: the hex between the last two separators, or 0.
fn epoch_of(node: &str) -> i64 {
    let Some(last) = node.rfind(SEPARATOR) else {
        return 0;
    };
    let Some(first) = node[..last].rfind(SEPARATOR) else {
        return 0;
    };
    if first == 0 || last <= first + 1 {
        return 0;
    }
    i64::from_str_radix(&node[first + 1..last], 16).unwrap_or(0)
}

macro_rules! variant_common {
    ($t:ident, $kind:expr, $what:literal) => {
        #[doc = concat!($what, " at `path` (validated) with `options`. Refuses a closed client.")]
        pub fn new(client: &Client, path: &str, options: QueueOptions) -> Result<$t> {
            let queue =
                DistributedQueue::with_layout(client, path, options, $kind, stringify!($t))?;
            Ok($t { queue })
        }

        /// The underlying queue (consume, listeners, length).
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

    /// [`put`](Self::put) for the blocking face.
    pub fn put_blocking(
        &self,
        data: &[u8],
        priority: i32,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        runtime::try_block_on(self.put(data, priority, timeout))?
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

    /// [`put`](Self::put) for the blocking face.
    pub fn put_blocking(
        &self,
        data: &[u8],
        delay_until_epoch_ms: i64,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        runtime::try_block_on(self.put(data, delay_until_epoch_ms, timeout))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_curators_names() {
        assert_eq!(id_of("queue-|job-7|0000000003"), Some("job-7"));
        assert_eq!(id_of("queue-0000000003"), None);
        assert_eq!(without_id("queue-|b|0000000001"), "queue-0000000001");
        assert_eq!(epoch_of("queue-|18C5F3A2B00|0000000004"), 0x18C5F3A2B00);
        assert_eq!(epoch_of("queue-0000000004"), 0);
        assert_eq!(epoch_of("queue-|zz|0000000004"), 0);
    }
}
