//! Barriers and queues: `NativeBarrier`, `NativeDoubleBarrier`, `NativeSimpleQueue` and
//! `NativeQueue` (the DistributedQueue family, made with the variant's name). A taken item stays
//! in its queue's table under an id until `itemDone` / `itemRelease` (or `close`, which gives
//! every held item back).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{Buffer, Object};
use napi::Env;
use napi_derive::napi;
use zkrecipes::barriers::{DistributedBarrier, DistributedDoubleBarrier};
use zkrecipes::queue::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue, Item,
    QueueOptions, SimpleDistributedQueue,
};
use zkrecipes::Error;

use crate::boundary::{promise, promise_on, promise_timed, sync};
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

enum Variant {
    Plain(DistributedQueue),
    Id(DistributedIdQueue),
    Priority(DistributedPriorityQueue),
    Delay(DistributedDelayQueue),
}

impl Variant {
    fn queue(&self) -> &DistributedQueue {
        match self {
            Variant::Plain(q) => q,
            Variant::Id(q) => q.queue(),
            Variant::Priority(q) => q.queue(),
            Variant::Delay(q) => q.queue(),
        }
    }
}

#[derive(Clone)]
struct Shared {
    variant: Arc<Variant>,
    held: Arc<Mutex<HashMap<u32, Item>>>,
    next: Arc<AtomicU32>,
}

impl Shared {
    fn hold(&self, item: Item) -> Out {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
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
                Error::InvalidArgument("this item was already completed or released".into())
            })
    }
}

fn wrong(what: &str) -> Error {
    Error::InvalidArgument(format!("{what} needs the matching queue variant").into())
}

/// Options of `NativeQueue`.
#[napi(object)]
pub struct NativeQueueOptions {
    /// Curator's lock path (exactly-once consumption).
    pub lock_path: Option<String>,
    /// The bound on items (none: unbounded).
    pub max_items: Option<u32>,
}

/// The DistributedQueue family (`kind`: "queue", "id", "priority", "delay").
#[napi]
pub struct NativeQueue {
    shared: Shared,
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
            };
            let c = &client.inner;
            let variant = match kind.as_str() {
                "queue" => Variant::Plain(DistributedQueue::new(c, &path, o)?),
                "id" => Variant::Id(DistributedIdQueue::new(c, &path, o)?),
                "priority" => Variant::Priority(DistributedPriorityQueue::new(c, &path, o)?),
                "delay" => Variant::Delay(DistributedDelayQueue::new(c, &path, o)?),
                other => {
                    return Err(Error::InvalidArgument(
                        format!("unknown queue kind {other:?}").into(),
                    )
                    .into())
                }
            };
            let emitter = Emitter::new(emit)?;
            variant.queue().add_listener(move |s| {
                emitter.emit(Event::new("state", Out::Str(s.name().into())))
            });
            Ok(NativeQueue {
                shared: Shared {
                    variant: Arc::new(variant),
                    held: Arc::default(),
                    next: Arc::new(AtomicU32::new(1)),
                },
            })
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
            let (data, v) = (data.to_vec(), self.shared.variant.clone());
            let t = crate::args::timeout("timeoutMs", timeout_ms)?;
            let check = match (&*v, &id, number) {
                (Variant::Plain(_), None, None) | (Variant::Id(_), Some(_), None) => Ok(()),
                (Variant::Priority(_), None, Some(n)) => {
                    crate::args::i32_value("priority", n).map(drop)
                }
                (Variant::Delay(_), None, Some(n)) if n.fract() == 0.0 && n.is_finite() => Ok(()),
                _ => Err(wrong("put's key (id, priority or delay)")),
            };
            check?;
            Ok(async move {
                match &*v {
                    Variant::Plain(q) => q.put(&data, t).await,
                    Variant::Id(q) => q.put(&data, id.as_deref().unwrap_or(""), t).await,
                    Variant::Priority(q) => q.put(&data, number.unwrap_or(0.0) as i32, t).await,
                    Variant::Delay(q) => q.put(&data, number.unwrap_or(0.0) as i64, t).await,
                }
            })
        })
    }

    /// Removes the items with `id` (id queue); resolves to how many.
    #[napi]
    pub fn remove<'env>(&self, env: &'env Env, id: String) -> napi::Result<Object<'env>> {
        promise(env, || {
            let v = self.shared.variant.clone();
            if !matches!(&*v, Variant::Id(_)) {
                return Err(wrong("remove(id)").into());
            }
            Ok(async move {
                let Variant::Id(q) = &*v else { unreachable!() };
                Ok(q.remove(&id).await? as u32)
            })
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
            Ok(match s.variant.queue().take(t).await? {
                Some(item) => s.hold(item),
                None => Out::Null,
            })
        })
    }

    /// Completes a taken item.
    #[napi]
    pub fn item_done<'env>(&self, env: &'env Env, handle: u32) -> napi::Result<Object<'env>> {
        promise(env, || {
            let item = self.shared.taken(handle)?;
            Ok(async move { item.done().await })
        })
    }

    /// Gives a taken item back.
    #[napi]
    pub fn item_release<'env>(&self, env: &'env Env, handle: u32) -> napi::Result<Object<'env>> {
        promise(env, || {
            let item = self.shared.taken(handle)?;
            Ok(async move { item.release().await })
        })
    }

    /// Resolves to the number of items now.
    #[napi]
    pub fn len<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.shared, |s| async move {
            Ok(s.variant.queue().len().await? as u32)
        })
    }

    /// Gives back every item still held (in the background).
    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            self.shared
                .held
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            Ok(())
        })
    }
}
