//! Barriers and queues: `NativeBarrier`, `NativeDoubleBarrier`, `NativeSimpleQueue` and
//! `NativeQueue` (the DistributedQueue family, made with the variant's name). A taken item stays
//! in its queue's table under an id until `itemDone` / `itemFail` / `itemRelease` /
//! `itemGiveBack` (or `close`, which gives every held item back).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{Buffer, Object};
use napi::Env;
use napi_derive::napi;
use zkrecipes::barriers::{DistributedBarrier, DistributedDoubleBarrier};
use zkrecipes::queue::{
    DistributedQueue, ErrorMode, Item, ItemKey, QueueKind, QueueOptions, QueueSharder,
    SharderOptions, SharderPolicies, SimpleDistributedQueue,
};
use zkrecipes::Error;

use crate::boundary::{promise, promise_on, promise_timed, sync, Outcome};
use crate::client::NativeClient;
use crate::error::CoreResult;
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

/// Curator's DistributedBarrier.
#[napi]
pub struct NativeBarrier {
    inner: Arc<DistributedBarrier>,
}

#[napi]
impl NativeBarrier {
    /// A barrier at `path`.
    #[napi(constructor)]
    pub fn new(env: Env, client: &NativeClient, path: String) -> napi::Result<Self> {
        sync(&env, || {
            Ok(NativeBarrier {
                inner: Arc::new(DistributedBarrier::new(&client.inner, &path)?),
            })
        })
    }

    /// Sets the barrier.
    #[napi]
    pub fn set_barrier<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |b| async move { b.set_barrier().await })
    }

    /// Removes the barrier.
    #[napi]
    pub fn remove_barrier<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(
            env,
            &self.inner,
            |b| async move { b.remove_barrier().await },
        )
    }

    /// Resolves to true once the barrier is removed, false on timeout.
    #[napi]
    pub fn wait_on_barrier<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |b, t| async move {
            b.wait_on_barrier(t).await
        })
    }
}

/// Curator's DistributedDoubleBarrier (one member).
#[napi]
pub struct NativeDoubleBarrier {
    inner: Arc<DistributedDoubleBarrier>,
}

#[napi]
impl NativeDoubleBarrier {
    /// A member of the double barrier at `path` for `member_qty` members.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        member_qty: u32,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let b = DistributedDoubleBarrier::new(&client.inner, &path, member_qty as usize)?;
            Ok(NativeDoubleBarrier { inner: Arc::new(b) })
        })
    }

    /// Resolves to true once in, false on timeout.
    #[napi]
    pub fn enter<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |b, t| async move {
            b.enter(t).await
        })
    }

    /// Resolves to true once every member has left, false on timeout.
    #[napi]
    pub fn leave<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |b, t| async move {
            b.leave(t).await
        })
    }

    /// This member's node name (a UUID).
    #[napi(getter)]
    pub fn member_name(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.member_name().to_string()))
    }
}

fn bytes_or_null(data: Option<Vec<u8>>) -> Out {
    data.map_or(Out::Null, Out::Bytes)
}

/// Curator's SimpleDistributedQueue.
#[napi]
pub struct NativeSimpleQueue {
    inner: Arc<SimpleDistributedQueue>,
}

#[napi]
impl NativeSimpleQueue {
    /// A simple queue at `path`.
    #[napi(constructor)]
    pub fn new(env: Env, client: &NativeClient, path: String) -> napi::Result<Self> {
        sync(&env, || {
            Ok(NativeSimpleQueue {
                inner: Arc::new(SimpleDistributedQueue::new(&client.inner, &path)?),
            })
        })
    }

    /// Adds `data`; resolves to the item's node path.
    #[napi]
    pub fn offer<'env>(&self, env: &'env Env, data: Buffer) -> napi::Result<Object<'env>> {
        promise(env, || {
            let (data, q) = (data.to_vec(), self.inner.clone());
            Ok(async move { q.offer(&data).await })
        })
    }

    /// Resolves to the head's bytes (removed), or null on timeout.
    #[napi]
    pub fn take<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |q, t| async move {
            Ok(bytes_or_null(q.take(t).await?))
        })
    }

    /// Resolves to the head's bytes (not removed), or null.
    #[napi]
    pub fn peek<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |q| async move {
            Ok(bytes_or_null(q.peek().await?))
        })
    }

    /// Resolves to the head's bytes (removed), or null at once.
    #[napi]
    pub fn poll<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |q| async move {
            Ok(bytes_or_null(q.poll().await?))
        })
    }
}

#[derive(Clone)]
struct Shared {
    queue: DistributedQueue,
    holds: Holds,
}

/// The items taken and not yet completed or given back, by handle.
#[derive(Clone, Default)]
struct Holds {
    held: Arc<Mutex<HashMap<u32, Item>>>,
    next: Arc<AtomicU32>,
}

impl Holds {
    fn hold(&self, item: Item) -> Out {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let out = Out::Object(vec![
            ("handle", Out::Number(id as f64)),
            ("data", Out::Bytes(item.data().to_vec())),
            (
                "messages",
                Out::Array(item.messages().iter().cloned().map(Out::Bytes).collect()),
            ),
            ("fencingToken", Out::BigInt(item.fencing_token())),
            ("node", Out::Str(item.node().to_string())),
            (
                "id",
                item.id().map_or(Out::Null, |i| Out::Str(i.to_string())),
            ),
        ]);
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, item);
        out
    }

    fn taken(&self, handle: u32) -> CoreResult<Item> {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&handle)
            .ok_or_else(|| {
                Error::InvalidArgument(
                    "this item was already completed, released or given back".into(),
                )
            })
    }
}

/// Options of `NativeQueue`.
#[napi(object)]
pub struct NativeQueueOptions {
    /// Curator's lock path (exactly-once consumption).
    pub lock_path: Option<String>,
    /// The bound on items (none: unbounded).
    pub max_items: Option<u32>,
    /// Curator's ErrorMode: "REQUEUE" or "DELETE" (needs a lock path).
    pub error_mode: Option<String>,
}

fn error_mode(mode: Option<String>) -> CoreResult<Option<ErrorMode>> {
    mode.map(|m| ErrorMode::from_name(&m)).transpose()
}

/// The key of the queue's kind from the JS arguments (id, or a number: priority or epoch ms).
fn item_key(kind: QueueKind, id: Option<String>, number: Option<f64>) -> CoreResult<Key> {
    Ok(match (kind, id, number) {
        (_, Some(id), _) => Key::Id(id),
        (QueueKind::Priority, None, Some(n)) => {
            Key::Priority(crate::args::i32_value("priority", n)?)
        }
        (_, None, Some(n)) => Key::DelayUntil(n as i64),
        (_, None, None) => Key::None,
    })
}

/// An item key, owned.
enum Key {
    None,
    Id(String),
    Priority(i32),
    DelayUntil(i64),
}

impl Key {
    fn item_key(&self) -> ItemKey<'_> {
        match self {
            Key::None => ItemKey::None,
            Key::Id(id) => ItemKey::Id(id),
            Key::Priority(p) => ItemKey::Priority(*p),
            Key::DelayUntil(ms) => ItemKey::DelayUntil(*ms),
        }
    }
}

impl NativeQueue {
    /// The native queue over `queue`: `emit('state', name)` on connection-state changes and
    /// `emit('put', { node, messages, multi })` after every completed put.
    fn over(queue: DistributedQueue, emit: EmitFn<'_>) -> Outcome<NativeQueue> {
        let emitter = Emitter::new(emit)?;
        let states = emitter.clone();
        let state_id = queue
            .add_listener(move |s| states.emit(Event::new("state", Out::Str(s.name().into()))));
        let put_id = queue.add_put_listener(move |e| {
            emitter.emit(Event::new(
                "put",
                Out::Object(vec![
                    ("node", Out::Str(e.node.clone())),
                    (
                        "messages",
                        Out::Array(e.messages.iter().cloned().map(Out::Bytes).collect()),
                    ),
                    ("multi", Out::Bool(e.multi)),
                ]),
            ))
        });
        Ok(NativeQueue {
            shared: Shared {
                queue,
                holds: Holds::default(),
            },
            listeners: [state_id, put_id],
        })
    }
}

impl Drop for NativeQueue {
    /// A sharder's shard outlives the JS objects over it: their listeners go with them.
    fn drop(&mut self) {
        let [state, put] = self.listeners;
        let _ = self.shared.queue.remove_listener(state);
        let _ = self.shared.queue.remove_put_listener(put);
    }
}

/// The DistributedQueue family (`kind`: "queue", "id", "priority", "delay").
#[napi]
pub struct NativeQueue {
    shared: Shared,
    /// Our state and put listeners on the core queue.
    listeners: [zkrecipes::ListenerId; 2],
}

#[napi]
impl NativeQueue {
    /// A queue at `path`; `emit('state', name)` on connection-state changes.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        kind: String,
        options: NativeQueueOptions,
        emit: EmitFn<'_>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let o = QueueOptions {
                lock_path: options.lock_path,
                max_items: options.max_items.map(|m| m as usize),
                error_mode: error_mode(options.error_mode)?,
            };
            let kind = QueueKind::from_name(&kind)?;
            let queue = DistributedQueue::with_kind(&client.inner, &path, kind, o)?;
            NativeQueue::over(queue, emit)
        })
    }

    /// Puts `data` (`key`: the id, priority or delay epoch in ms of the variant); resolves to
    /// false if a bounded queue had no room in time.
    #[napi]
    pub fn put<'env>(
        &self,
        env: &'env Env,
        data: Buffer,
        id: Option<String>,
        number: Option<f64>,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let (data, q) = (data.to_vec(), self.shared.queue.clone());
            let t = crate::args::timeout("timeoutMs", timeout_ms)?;
            let key = item_key(q.kind(), id, number)?;
            Ok(async move { q.put_with(&data, key.item_key(), t).await })
        })
    }

    /// Puts `messages` as one item (Curator's putMulti; key as for `put`).
    #[napi]
    pub fn put_multi<'env>(
        &self,
        env: &'env Env,
        messages: Vec<Buffer>,
        number: Option<f64>,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let q = self.shared.queue.clone();
            let messages: Vec<Vec<u8>> = messages.iter().map(|m| m.to_vec()).collect();
            let t = crate::args::timeout("timeoutMs", timeout_ms)?;
            let key = item_key(q.kind(), None, number)?;
            Ok(async move {
                let slices: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
                q.put_multi_with(&slices, key.item_key(), t).await
            })
        })
    }

    /// Sets the error mode ("REQUEUE" or "DELETE"; needs a lock path).
    #[napi]
    pub fn set_error_mode(&self, env: Env, mode: String) -> napi::Result<()> {
        sync(&env, || {
            let mode = ErrorMode::from_name(&mode)?;
            Ok(self.shared.queue.set_error_mode(mode)?)
        })
    }

    /// The error mode's name.
    #[napi(getter)]
    pub fn error_mode(&self, env: Env) -> napi::Result<String> {
        sync(&env, || {
            Ok(self.shared.queue.error_mode().name().to_string())
        })
    }

    /// The queue's path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.shared.queue.path().to_string()))
    }

    /// Removes the items with `id` (id queue); resolves to how many.
    #[napi]
    pub fn remove<'env>(&self, env: &'env Env, id: String) -> napi::Result<Object<'env>> {
        promise_on(env, &self.shared.queue, |q| async move {
            Ok(q.remove_id(&id).await? as u32)
        })
    }

    /// Resolves to `{ handle, data, messages, fencingToken, node, id }` or null on timeout.
    #[napi]
    pub fn take<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.shared, timeout_ms, |s, t| async move {
            Ok(match s.queue.take(t).await? {
                Some(item) => s.holds.hold(item),
                None => Out::Null,
            })
        })
    }

    /// Completes a taken item.
    #[napi]
    pub fn item_done<'env>(&self, env: &'env Env, handle: u32) -> napi::Result<Object<'env>> {
        promise(env, || {
            let item = self.shared.holds.taken(handle)?;
            Ok(async move { item.done().await })
        })
    }

    /// Fails a taken item (the queue's error mode).
    #[napi]
    pub fn item_fail<'env>(&self, env: &'env Env, handle: u32) -> napi::Result<Object<'env>> {
        promise(env, || {
            let item = self.shared.holds.taken(handle)?;
            Ok(async move { item.fail().await })
        })
    }

    /// Gives a taken item back.
    #[napi]
    pub fn item_release<'env>(&self, env: &'env Env, handle: u32) -> napi::Result<Object<'env>> {
        promise(env, || {
            let item = self.shared.holds.taken(handle)?;
            Ok(async move { item.release().await })
        })
    }

    /// Gives a taken item back for another take, whatever the queue (`Item::give_back`).
    #[napi]
    pub fn item_give_back<'env>(&self, env: &'env Env, handle: u32) -> napi::Result<Object<'env>> {
        promise(env, || {
            let item = self.shared.holds.taken(handle)?;
            Ok(async move { item.give_back().await })
        })
    }

    /// Resolves to the number of items now.
    #[napi]
    pub fn len<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.shared, |s| async move {
            Ok(s.queue.len().await? as u32)
        })
    }

    /// Gives back every item still held (in the background).
    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            self.shared
                .holds
                .held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            Ok(())
        })
    }
}

/// Options of `NativeQueueSharder`.
#[napi(object)]
pub struct NativeSharderOptions {
    /// The parent of the shards' lock paths.
    pub lock_path: Option<String>,
    /// The shards' error mode.
    pub error_mode: Option<String>,
    /// Curator's newQueueThreshold.
    pub new_queue_threshold: Option<u32>,
    /// Curator's thresholdCheckMs.
    pub threshold_check_ms: Option<f64>,
    /// Curator's maxQueues.
    pub max_queues: Option<u32>,
}

/// Curator's QueueSharder (DistributedQueue shards). A sharder's take holds items like a
/// queue's: in the table of the native queue it owns for them.
#[napi]
pub struct NativeQueueSharder {
    inner: Arc<QueueSharder>,
    holds: Holds,
}

#[napi]
impl NativeQueueSharder {
    /// A sharder of `queue_path`, electing at `leader_path`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        queue_path: String,
        leader_path: String,
        options: NativeSharderOptions,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let d = SharderPolicies::default();
            let threshold_check = match options.threshold_check_ms {
                None => d.threshold_check,
                Some(ms) => crate::args::timeout("thresholdCheckMs", Some(ms))?
                    .ok_or_else(|| crate::error::invalid("thresholdCheckMs must be finite"))?,
            };
            let o = SharderOptions {
                kind: QueueKind::Queue,
                queue: QueueOptions {
                    lock_path: options.lock_path,
                    max_items: None,
                    error_mode: error_mode(options.error_mode)?,
                },
                policies: SharderPolicies {
                    new_queue_threshold: options
                        .new_queue_threshold
                        .map_or(d.new_queue_threshold, |v| v as usize),
                    threshold_check,
                    max_queues: options.max_queues.map_or(d.max_queues, |v| v as usize),
                },
            };
            let sharder = QueueSharder::new(&client.inner, &queue_path, &leader_path, o)?;
            Ok(NativeQueueSharder {
                inner: Arc::new(sharder),
                holds: Holds::default(),
            })
        })
    }

    /// Starts.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |s| async move { s.start().await })
    }

    /// Closes (shards and items stay); gives back every item still held.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise(env, || {
            self.holds
                .held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            let s = self.inner.clone();
            Ok(async move { s.close().await })
        })
    }

    /// A shard for puts, as a native queue emitting through `emit`.
    #[napi]
    pub fn get_queue(&self, env: Env, emit: EmitFn<'_>) -> napi::Result<NativeQueue> {
        sync(&env, || {
            let q = self.inner.get_queue()?;
            NativeQueue::over(q, emit)
        })
    }

    /// Resolves to `{ handle, data, messages, fencingToken, node, id }` or null on timeout.
    #[napi]
    pub fn take<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(
            env,
            &(self.inner.clone(), self.holds.clone()),
            timeout_ms,
            |(s, holds), t| async move {
                Ok(match s.take(t).await? {
                    Some(item) => holds.hold(item),
                    None => Out::Null,
                })
            },
        )
    }

    /// Completes a taken item.
    #[napi]
    pub fn item_done<'env>(&self, env: &'env Env, handle: u32) -> napi::Result<Object<'env>> {
        promise(env, || {
            let item = self.holds.taken(handle)?;
            Ok(async move { item.done().await })
        })
    }

    /// Fails a taken item (the shard's error mode).
    #[napi]
    pub fn item_fail<'env>(&self, env: &'env Env, handle: u32) -> napi::Result<Object<'env>> {
        promise(env, || {
            let item = self.holds.taken(handle)?;
            Ok(async move { item.fail().await })
        })
    }

    /// Gives a taken item back.
    #[napi]
    pub fn item_release<'env>(&self, env: &'env Env, handle: u32) -> napi::Result<Object<'env>> {
        promise(env, || {
            let item = self.holds.taken(handle)?;
            Ok(async move { item.release().await })
        })
    }

    /// Gives a taken item back for another take, whatever the queue (`Item::give_back`).
    #[napi]
    pub fn item_give_back<'env>(&self, env: &'env Env, handle: u32) -> napi::Result<Object<'env>> {
        promise(env, || {
            let item = self.holds.taken(handle)?;
            Ok(async move { item.give_back().await })
        })
    }

    /// The number of shards known.
    #[napi(getter)]
    pub fn shard_qty(&self, env: Env) -> napi::Result<u32> {
        sync(&env, || Ok(self.inner.shard_qty() as u32))
    }

    /// The shards' paths, sorted.
    #[napi(getter)]
    pub fn queue_paths(&self, env: Env) -> napi::Result<Vec<String>> {
        sync(&env, || Ok(self.inner.queue_paths()))
    }

    /// Whether this sharder leads.
    #[napi(getter)]
    pub fn is_leader(&self, env: Env) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.is_leader()))
    }
}
