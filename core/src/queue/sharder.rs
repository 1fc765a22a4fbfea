//! [`QueueSharder`]: Curator's `QueueSharder` and `QueueSharderPolicies` — several queues
//! (shards) under one path, a new shard added when the shards grow past a threshold.
//!
//! # Layout (Curator's)
//! * `queue_path/queue-<UUID>`: one shard, a queue of the sharder's kind (`queue_path` is a
//!   container; a shard node is persistent, as Curator's `DistributedQueue.start` makes it).
//!   Every child of `queue_path` is taken for a shard, so nothing else may live there.
//! * `leader_path`: a [`LeaderLatch`] (Curator's, with the empty id) among the sharders; only
//!   its leader adds shards.
//! * With a lock path `L`, shard `S` locks its items under `L/S` (our convention; Curator's
//!   allocator decides each shard's lock path, and our Curator interop worker follows it).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use super::distributed::{DistributedQueue, Pass, QueueOptions};
use super::item::Item;
use super::names::QueueKind;
use crate::client::{CreateOptions, OrNone, Parents};
use crate::leader::LeaderLatch;
use crate::lifecycle::Lifecycle;
use crate::wait::{self, Deadline, Wake};
use crate::{path, runtime, Client, CreateMode, Error, Result};

/// The name every shard starts with (Curator's `QUEUE_PREFIX`).
const SHARD_PREFIX: &str = "queue-";

/// Curator's `QueueSharderPolicies`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharderPolicies {
    /// A shard holding this many items (children) or more makes the leader add a shard, and
    /// is no longer preferred for puts until it is down to half. Curator's default: 10000.
    pub new_queue_threshold: usize,
    /// How often the shards are counted. Curator's default: 30 s.
    pub threshold_check: Duration,
    /// The most shards the leader adds up to. Curator's default: 10.
    pub max_queues: usize,
}

impl Default for SharderPolicies {
    fn default() -> Self {
        SharderPolicies {
            new_queue_threshold: 10_000,
            threshold_check: Duration::from_secs(30),
            max_queues: 10,
        }
    }
}

/// What a [`QueueSharder`] makes its shards with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharderOptions {
    /// The kind of every shard.
    pub kind: QueueKind,
    /// Every shard's options; a lock path is the parent of the shards' lock paths (shard `S`
    /// locks under `lock_path/S`).
    pub queue: QueueOptions,
    /// When shards are added.
    pub policies: SharderPolicies,
}

impl Default for SharderOptions {
    fn default() -> Self {
        SharderOptions {
            kind: QueueKind::Queue,
            queue: QueueOptions::default(),
            policies: SharderPolicies::default(),
        }
    }
}

struct Inner {
    client: Client,
    queue_path: String,
    options: SharderOptions,
    /// Every shard known, by path.
    shards: Mutex<BTreeMap<String, DistributedQueue>>,
    /// The shards preferred for puts (under the threshold).
    preferred: Mutex<HashSet<String>>,
    latch: LeaderLatch,
    life: Lifecycle,
    stop: watch::Sender<bool>,
    /// Where the next take starts among the shards (so that none is starved).
    next: Mutex<usize>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Curator's `QueueSharder`: a facade over several queues (shards) under `queue_path`, for a
/// queue that would otherwise grow past what one ZooKeeper node's children list can carry
/// (Curator: "10K-ish items"). [`get_queue`](Self::get_queue) picks a shard for puts;
/// [`take`](Self::take) takes from any shard. Every `threshold_check` each sharder counts the
/// shards' items; when one holds `new_queue_threshold` or more, the sharders' leader (a
/// [`LeaderLatch`] at `leader_path`) adds a shard, up to `max_queues`. Items keep their order
/// within a shard only.
///
/// Beyond Curator: a sharder's consumers follow new shards at once (a take watches
/// `queue_path`), not at the next threshold check; consumption is exactly once with a lock path
/// (see the [module notes](super)).
pub struct QueueSharder {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for QueueSharder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueSharder")
            .field("queue_path", &self.inner.queue_path)
            .field("leader_path", &self.inner.latch.path())
            .field("shards", &locked(&self.inner.shards).len())
            .finish()
    }
}

impl QueueSharder {
    /// A sharder of the queues under `queue_path`, electing its leader at `leader_path` (which
    /// must be neither `queue_path` nor inside it). Refuses a closed client; nothing is sent
    /// before [`start`](Self::start).
    pub fn new(
        client: &Client,
        queue_path: &str,
        leader_path: &str,
        options: SharderOptions,
    ) -> Result<QueueSharder> {
        path::validate_path(queue_path)?;
        path::validate_path(leader_path)?;
        let inside = |p: &str| p == queue_path || p.starts_with(&format!("{queue_path}/"));
        if queue_path == "/" {
            return Err(Error::invalid(
                "QueueSharder: the queues cannot be under the root node",
            ));
        }
        if inside(leader_path) {
            return Err(Error::invalid(format!(
                "QueueSharder {queue_path}: the leader path {leader_path} must be outside the queue path (every child there is a shard)"
            )));
        }
        // The queues' own rules, against the queue path (every shard is inside it).
        options.queue.check("QueueSharder", queue_path)?;
        if let Some(lock) = options
            .queue
            .lock_path
            .as_deref()
            .filter(|l| *l == leader_path)
        {
            return Err(Error::invalid(format!(
                "QueueSharder {queue_path}: the lock path {lock} must not be the leader path"
            )));
        }
        let p = options.policies;
        if p.new_queue_threshold == 0 || p.max_queues == 0 || p.threshold_check.is_zero() {
            return Err(Error::invalid(format!(
                "QueueSharder {queue_path}: new_queue_threshold, max_queues and threshold_check must be positive, not {}, {} and {:?}",
                p.new_queue_threshold, p.max_queues, p.threshold_check
            )));
        }
        client.ensure_open_for("QueueSharder", queue_path)?;
        let latch = LeaderLatch::new(client, leader_path, "")?;
        Ok(QueueSharder {
            inner: Arc::new(Inner {
                client: client.clone(),
                queue_path: queue_path.to_string(),
                options,
                shards: Mutex::default(),
                preferred: Mutex::default(),
                latch,
                life: Lifecycle::new("QueueSharder", queue_path),
                stop: watch::channel(false).0,
                next: Mutex::new(0),
            }),
        })
    }

    /// Starts: makes `queue_path`, takes up the shards there (or adds the first), joins the
    /// leader election and starts counting. Once only (`InvalidArgument` the second time). A
    /// start whose caller stops waiting (a timeout around it, a cancelled task) goes on to its
    /// end: dropped half way it would leave the election joined and the sharder not started,
    /// for good.
    pub async fn start(&self) -> Result<()> {
        let inner = self.inner.clone();
        runtime::run_to_end(async move { Self::start_as_task(&inner).await }).await
    }

    async fn start_as_task(inner: &Arc<Inner>) -> Result<()> {
        let starting = inner.life.begin_start(&inner.client)?;
        inner
            .client
            .ensure_path(&inner.queue_path, Parents::Containers)
            .await
            .map_err(|e| e.context(format!("start QueueSharder {}", inner.queue_path)))?;
        let children = inner.list().await?;
        for child in &children {
            inner.follow(child)?;
        }
        if children.is_empty() {
            inner.add_shard().await?;
        }
        inner.latch.start().await?;
        let task_inner = inner.clone();
        starting.finish(|| {
            runtime::spawn(check_thresholds(task_inner));
        })
    }

    /// Stops counting, leaves the election. Closing twice does nothing. The shards and their
    /// items stay; queues got from [`get_queue`](Self::get_queue) still work.
    pub async fn close(&self) -> Result<()> {
        if self.inner.life.close() == crate::lifecycle::Phase::Closed {
            return Ok(());
        }
        self.inner.stop.send_replace(true);
        self.inner.latch.close().await
    }

    /// A shard for puts (Curator's `getQueue`): one of the shards under the threshold at the
    /// last count, at random, or of all the shards if none is. `InvalidArgument` before
    /// [`start`](Self::start), `Closed` after [`close`](Self::close).
    pub fn get_queue(&self) -> Result<DistributedQueue> {
        let inner = &self.inner;
        inner.life.check_started("get_queue")?;
        let shards = locked(&inner.shards);
        let preferred: Vec<String> = locked(&inner.preferred)
            .iter()
            .filter(|p| shards.contains_key(*p))
            .cloned()
            .collect();
        let key = if preferred.is_empty() {
            shards.keys().nth(fastrand::usize(..shards.len().max(1)))
        } else {
            preferred.get(fastrand::usize(..preferred.len()))
        };
        key.and_then(|k| shards.get(k))
            .cloned()
            .ok_or_else(|| Error::invalid("QueueSharder: no shard yet"))
    }

    /// The number of shards this sharder knows (Curator's `getShardQty`).
    pub fn shard_qty(&self) -> usize {
        locked(&self.inner.shards).len()
    }

    /// The paths of the shards this sharder knows (Curator's `getQueuePaths`), sorted.
    pub fn queue_paths(&self) -> Vec<String> {
        locked(&self.inner.shards).keys().cloned().collect()
    }

    /// Whether this sharder is the leader that adds shards.
    pub fn is_leader(&self) -> bool {
        self.inner.latch.has_leadership()
    }

    /// The path of the queues.
    pub fn path(&self) -> &str {
        &self.inner.queue_path
    }

    /// Takes the next item of any shard (starting with a different shard each time, so none
    /// is starved), waiting at most `timeout` (`None`: no limit); `None` when the timeout
    /// passed first. New shards are followed at once. See [`DistributedQueue::take`].
    pub async fn take(&self, timeout: Option<Duration>) -> Result<Option<Item>> {
        let inner = &self.inner;
        inner.life.check_started("take")?;
        let deadline = Deadline::after(timeout);
        deadline
            .bounding(async move {
                let path = inner.queue_path.as_str();
                loop {
                    let mut states = wait::states(&inner.client);
                    let mut stopped = inner.stop.subscribe();
                    let listed = inner
                        .client
                        .retry(|s| async move { s.children_watch(path).await.or_none() })
                        .await
                        .map_err(|e| e.context(format!("take from QueueSharder {path}")))?;
                    let mut watches = Vec::new();
                    if let Some((children, watch)) = listed {
                        for child in &children {
                            inner.follow(child)?;
                        }
                        watches.push(watch);
                    }
                    let shards: Vec<DistributedQueue> = locked(&inner.shards).values().cloned().collect();
                    let start = {
                        let mut next = locked(&inner.next);
                        *next = next.wrapping_add(1);
                        *next
                    };
                    let mut due = Deadline::NEVER;
                    for i in 0..shards.len() {
                        match shards[(start + i) % shards.len()].pass().await? {
                            Pass::Item(item) => return Ok(Some(*item)),
                            Pass::Wait { watches: w, due: d } => {
                                watches.extend(w);
                                due = due.earliest(d);
                            }
                        }
                    }
                    if deadline.passed() {
                        return Ok(None);
                    }
                    if *stopped.borrow_and_update() {
                        return Err(inner.life.closed_error("take"));
                    }
                    let wake = tokio::select! {
                        w = wait::wait(&inner.client, watches, deadline.earliest(due), &mut states) => w,
                        _ = stopped.changed() => Wake::Again,
                    };
                    match wake {
                        Wake::Again | Wake::Deadline => {}
                        Wake::Closed => return Err(Error::closed()),
                    }
                }
            })
            .await
    }

    /// [`start`](Self::start) for the blocking face.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }

    /// [`close`](Self::close) for the blocking face.
    pub fn close_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.close())?
    }

    /// [`take`](Self::take) for the blocking face.
    pub fn take_blocking(&self, timeout: Option<Duration>) -> Result<Option<Item>> {
        runtime::try_block_on(self.take(timeout))?
    }
}

impl Drop for QueueSharder {
    fn drop(&mut self) {
        if self.inner.life.close() != crate::lifecycle::Phase::Closed {
            self.inner.stop.send_replace(true);
            let inner = self.inner.clone();
            runtime::spawn(async move {
                let _ = inner.latch.close().await;
            });
        }
    }
}

impl Inner {
    /// The children of the queue path (none when it is gone).
    async fn list(&self) -> Result<Vec<String>> {
        let path = self.queue_path.as_str();
        Ok(self
            .client
            .retry(|s| async move { s.children(path).await.or_none() })
            .await?
            .unwrap_or_default())
    }

    /// Takes up the shard `child` of the queue path if it is new (Curator's
    /// `addNewQueueIfNeeded`); a new shard is preferred until counted.
    fn follow(&self, child: &str) -> Result<()> {
        let shard = path::join(&self.queue_path, child);
        let mut shards = locked(&self.shards);
        if shards.contains_key(&shard) {
            return Ok(());
        }
        if !child.starts_with(SHARD_PREFIX) {
            tracing::debug!(queues = %self.queue_path, node = %child, "a child not named like Curator's shards, taken for a shard all the same");
        }
        let mut options = self.options.queue.clone();
        options.lock_path = options.lock_path.map(|l| path::join(&l, child));
        let queue = DistributedQueue::with_kind(&self.client, &shard, self.options.kind, options)?;
        shards.insert(shard.clone(), queue);
        locked(&self.preferred).insert(shard.clone());
        tracing::info!(queues = %self.queue_path, shard = %shard, "following a queue shard");
        Ok(())
    }

    /// Adds a shard: `queue_path/queue-<UUID>`, a persistent node.
    async fn add_shard(&self) -> Result<()> {
        let name = format!("{SHARD_PREFIX}{}", uuid::Uuid::new_v4());
        let shard = path::join(&self.queue_path, &name);
        let created = self
            .client
            .create(
                &shard,
                &[],
                CreateOptions::new(CreateMode::Persistent).parents(),
            )
            .await;
        match created {
            Ok(_) | Err(Error::NodeExists(_)) => {}
            Err(e) => return Err(e.context(format!("add a shard to {}", self.queue_path))),
        }
        self.follow(&name)
    }

    /// Curator's `checkThreshold`: takes up new shards, counts each shard's items, prefers the
    /// small ones, and (as the leader) adds a shard when one is at the threshold.
    async fn check_threshold(&self) -> Result<()> {
        let threshold = self.options.policies.new_queue_threshold;
        let mut over = None;
        for child in self.list().await? {
            self.follow(&child)?;
            let shard = path::join(&self.queue_path, &child);
            let s = shard.as_str();
            let Some(stat) = self
                .client
                .retry(|x| async move { x.exists(s).await })
                .await?
            else {
                continue;
            };
            let count = stat.num_children.max(0) as usize;
            if count >= threshold {
                over = Some(count);
                locked(&self.preferred).remove(&shard);
            } else if count <= threshold / 2 {
                locked(&self.preferred).insert(shard);
            }
        }
        let Some(count) = over else {
            return Ok(());
        };
        if !self.latch.has_leadership() {
            return Ok(());
        }
        let qty = locked(&self.shards).len();
        if qty < self.options.policies.max_queues {
            tracing::info!(queues = %self.queue_path, size = count, threshold, "adding a queue shard: a shard is at the threshold");
            self.add_shard().await
        } else {
            tracing::warn!(queues = %self.queue_path, max = qty, "a shard is at the threshold but the sharder has its maximum number of shards");
            Ok(())
        }
    }
}

/// Counts the shards every `threshold_check` until the sharder is closed.
async fn check_thresholds(inner: Arc<Inner>) {
    let mut stop = inner.stop.subscribe();
    let every = inner.options.policies.threshold_check;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.changed() => return,
            _ = inner.client.closed() => return,
        }
        if *stop.borrow() {
            return;
        }
        if let Err(e) = inner.check_threshold().await {
            tracing::warn!(queues = %inner.queue_path, error = %e, "could not count the queue shards");
        }
    }
}
