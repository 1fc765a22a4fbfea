//! Queues: `SimpleDistributedQueue` and the `DistributedQueue` family (one native class, made
//! with the variant's name), with `QueueItem` for a taken item.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zkrecipes::queue::{
    DistributedQueue, ErrorMode, Item, ItemKey, PutEvent, QueueKind, QueueOptions, QueueSharder,
    SharderOptions, SharderPolicies, SimpleDistributedQueue,
};

use crate::args::{Int, Text, Timeout};
use crate::bridge::{self, Call};
use crate::client::PyClient;
use crate::errors::{self, IntoPyResult};
use crate::local::Local;

fn bytes_or_none(py: Python<'_>, data: Option<Vec<u8>>) -> PyResult<Py<PyAny>> {
    match data {
        Some(d) => Ok(PyBytes::new(py, &d).into_any().unbind()),
        None => Ok(py.None()),
    }
}

/// The undo of a take or poll whose result nobody will see (its asyncio task was cancelled as
/// the item was delivered; a take dropped earlier, with its removal in flight, is the core's to
/// put back): the item is offered again (at the tail) rather than lost. Still at most once: it
/// was handed to nobody.
fn offer_again(q: Arc<SimpleDistributedQueue>) -> bridge::Undo<Option<Vec<u8>>> {
    Box::new(move |taken| {
        if let Some(data) = taken {
            // Runs as its own task, started here; a failure is the core's to log.
            drop(q.give_back(data));
        }
    })
}

/// The native SimpleDistributedQueue.
#[pyclass(frozen, module = "zkrecipes._native", name = "SimpleDistributedQueue")]
pub struct PySimpleQueue {
    inner: Local<Arc<SimpleDistributedQueue>>,
}

impl PySimpleQueue {
    fn q(&self, py: Python<'_>) -> PyResult<Arc<SimpleDistributedQueue>> {
        self.inner.get(py, "queue").cloned()
    }
}

#[pymethods]
impl PySimpleQueue {
    #[new]
    fn new(py: Python<'_>, client: &PyClient, path: Text) -> PyResult<PySimpleQueue> {
        let c = client.core(py)?;
        let q = SimpleDistributedQueue::new(&c, &path).py_err(py)?;
        Ok(PySimpleQueue {
            inner: Local::new(Arc::new(q)),
        })
    }

    fn offer(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<Call> {
        let q = self.q(py)?;
        Ok(Call::value(async move { q.offer(&data).await }))
    }

    #[pyo3(signature = (timeout = Timeout(None)))]
    fn take(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let q = self.q(py)?;
        let back = q.clone();
        Ok(Call::undoable(
            async move { q.take(timeout.0).await },
            bytes_or_none,
            offer_again(back),
        ))
    }

    fn peek(&self, py: Python<'_>) -> PyResult<Call> {
        let q = self.q(py)?;
        Ok(Call::new(async move { q.peek().await }, bytes_or_none))
    }

    fn poll(&self, py: Python<'_>) -> PyResult<Call> {
        let q = self.q(py)?;
        let back = q.clone();
        Ok(Call::undoable(
            async move { q.poll().await },
            bytes_or_none,
            offer_again(back),
        ))
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.q(py)?.path().to_string())
    }
}

/// The native DistributedQueue family (`kind`: "queue", "id", "priority", "delay").
#[pyclass(frozen, module = "zkrecipes._native", name = "DistributedQueue")]
pub struct PyQueue {
    inner: Local<DistributedQueue>,
}

impl From<DistributedQueue> for PyQueue {
    fn from(q: DistributedQueue) -> Self {
        PyQueue {
            inner: Local::new(q),
        }
    }
}

/// The key of the queue's kind from a Python value (None: no key).
fn key_of(py: Python<'_>, kind: QueueKind, key: Option<Bound<'_, PyAny>>) -> PyResult<Key> {
    Ok(match (kind, key) {
        (_, None) => Key::None,
        (QueueKind::Id, Some(k)) => Key::Id(k.extract::<Text>()?.into()),
        (QueueKind::Priority, Some(k)) => Key::Priority(crate::args::int(&k, "priority")?),
        (QueueKind::Delay, Some(k)) => {
            Key::DelayUntil(crate::args::int(&k, "delay_until_epoch_ms")?)
        }
        (QueueKind::Queue, Some(_)) => {
            return Err(errors::invalid(py, "a plain queue's put takes no key"))
        }
    })
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

fn error_mode(py: Python<'_>, mode: &str) -> PyResult<ErrorMode> {
    ErrorMode::from_name(mode).py_err(py)
}

impl PyQueue {
    fn q(&self, py: Python<'_>) -> PyResult<DistributedQueue> {
        self.inner.get(py, "queue").cloned()
    }
}

/// An item's key, owned: the id, priority or delay epoch of the queue's kind.
enum Key {
    None,
    Id(String),
    Priority(i32),
    DelayUntil(i64),
}

/// A taken item, shared by the `QueueItem` made of it and the take's undo ([`give_back`]).
type Shared = Arc<Mutex<Option<Item>>>;

fn item_obj(py: Python<'_>, item: Option<Shared>) -> PyResult<Py<PyAny>> {
    match item {
        Some(item) => Ok(Py::new(py, PyQueueItem::new(py, item)?)?.into_any()),
        None => Ok(py.None()),
    }
}

/// The undo of a take whose item nobody will see (its asyncio task was cancelled as the item was
/// delivered; a take dropped earlier is the core's to undo): the item is given back
/// ([`Item::give_back`]: its lock goes, or, without a lock path, it is put back at the tail)
/// rather than lost or kept from every consumer.
fn give_back() -> bridge::Undo<Option<Shared>> {
    Box::new(|taken| {
        let item = taken.and_then(|s| s.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(item) = item {
            // Runs as its own task, started here (a lock's release when the item is dropped);
            // a failure is the core's to log.
            drop(item.give_back());
        }
    })
}

/// A take of the queue or the sharder, given back if nobody sees its item.
fn take_call<F>(take: F) -> Call
where
    F: std::future::Future<Output = zkrecipes::Result<Option<Item>>> + Send + 'static,
{
    let shared = async move { Ok(take.await?.map(|i| Arc::new(Mutex::new(Some(i))))) };
    Call::undoable(shared, item_obj, give_back())
}

#[pymethods]
impl PyQueue {
    #[new]
    #[pyo3(signature = (client, path, kind, lock_path = None, max_items = None, error_mode = None))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        kind: Text,
        lock_path: Option<Text>,
        max_items: Option<Int<usize>>,
        error_mode: Option<Text>,
    ) -> PyResult<PyQueue> {
        let c = client.core(py)?;
        let o = QueueOptions {
            lock_path: lock_path.map(String::from),
            max_items: max_items.map(|m| m.0),
            error_mode: error_mode.map(|m| self::error_mode(py, &m)).transpose()?,
        };
        let kind = QueueKind::from_name(&kind).py_err(py)?;
        let q = DistributedQueue::with_kind(&c, &path, kind, o).py_err(py)?;
        Ok(PyQueue {
            inner: Local::new(q),
        })
    }

    /// Puts one item; `key` is the id, priority or delay epoch (ms) of the queue's kind.
    #[pyo3(signature = (data, key = None, timeout = Timeout(None)))]
    fn put(
        &self,
        py: Python<'_>,
        data: Vec<u8>,
        key: Option<Bound<'_, PyAny>>,
        timeout: Timeout,
    ) -> PyResult<Call> {
        let q = self.q(py)?;
        let key = key_of(py, q.kind(), key)?;
        Ok(Call::value(async move {
            q.put_with(&data, key.item_key(), timeout.0).await
        }))
    }

    /// Puts `messages` as one item (Curator's putMulti); `key` as for `put`.
    #[pyo3(signature = (messages, key = None, timeout = Timeout(None)))]
    fn put_multi(
        &self,
        py: Python<'_>,
        messages: Vec<Vec<u8>>,
        key: Option<Bound<'_, PyAny>>,
        timeout: Timeout,
    ) -> PyResult<Call> {
        let q = self.q(py)?;
        let key = key_of(py, q.kind(), key)?;
        Ok(Call::value(async move {
            let slices: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            q.put_multi_with(&slices, key.item_key(), timeout.0).await
        }))
    }

    /// Calls `listener(node, messages, multi)` after every completed put; returns an id.
    fn add_put_listener(&self, py: Python<'_>, listener: Py<PyAny>) -> PyResult<u64> {
        let q = self.q(py)?;
        Ok(q.add_put_listener(move |e: &PutEvent| {
            let messages = bridge::attach(|py| {
                e.messages
                    .iter()
                    .map(|m| PyBytes::new(py, m).unbind())
                    .collect::<Vec<Py<PyBytes>>>()
            });
            if let Some(messages) = messages {
                bridge::invoke(&listener, (e.node.clone(), messages, e.multi));
            }
        }))
    }

    fn remove_put_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.q(py)?.remove_put_listener(id).py_err(py)
    }

    #[getter]
    fn get_error_mode(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(self.q(py)?.error_mode().name())
    }

    #[setter]
    fn set_error_mode(&self, py: Python<'_>, mode: Text) -> PyResult<()> {
        let q = self.q(py)?;
        let mode = error_mode(py, &mode)?;
        q.set_error_mode(mode).py_err(py)
    }

    #[getter]
    fn kind(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(self.q(py)?.kind().name())
    }

    fn remove(&self, py: Python<'_>, id: Text) -> PyResult<Call> {
        let q = self.q(py)?;
        Ok(Call::value(async move { q.remove_id(&id).await }))
    }

    #[pyo3(signature = (timeout = Timeout(None)))]
    fn take(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let q = self.q(py)?;
        Ok(take_call(async move { q.take(timeout.0).await }))
    }

    fn len(&self, py: Python<'_>) -> PyResult<Call> {
        let q = self.q(py)?;
        Ok(Call::value(async move { q.len().await }))
    }

    /// Calls `listener(state_name)` on every connection-state change; returns an id.
    fn add_listener(&self, py: Python<'_>, listener: Py<PyAny>) -> PyResult<u64> {
        let q = self.q(py)?;
        Ok(q.add_listener(bridge::listener(
            listener,
            |s: zkrecipes::ConnectionState| (s.name(),),
        )))
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.q(py)?.remove_listener(id).py_err(py)
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.q(py)?.path().to_string())
    }

    #[getter]
    fn lock_path(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.q(py)?.lock_path().map(str::to_string))
    }
}

/// A taken item.
#[pyclass(frozen, module = "zkrecipes._native", name = "QueueItem")]
pub struct PyQueueItem {
    item: Arc<Mutex<Option<Item>>>,
    data: Vec<u8>,
    messages: Vec<Vec<u8>>,
    token: i64,
    node: String,
    id: Option<String>,
}

impl PyQueueItem {
    fn new(py: Python<'_>, shared: Shared) -> PyResult<Self> {
        let made = {
            let guard = shared.lock().unwrap_or_else(|e| e.into_inner());
            let item = guard
                .as_ref()
                .ok_or_else(|| errors::invalid(py, "this item was given back"))?;
            PyQueueItem {
                data: item.data().to_vec(),
                messages: item.messages().to_vec(),
                token: item.fencing_token(),
                node: item.node().to_string(),
                id: item.id().map(str::to_string),
                item: shared.clone(),
            }
        };
        Ok(made)
    }

    fn taken(&self, py: Python<'_>) -> PyResult<Item> {
        self.item
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| {
                errors::invalid(
                    py,
                    "this item was already completed, released or given back",
                )
            })
    }
}

/// Each settle runs to its end (`Call::to_end`): the item is out of this object once the call
/// is made, so one stopped half way could neither finish nor be tried again.
#[pymethods]
impl PyQueueItem {
    fn done(&self, py: Python<'_>) -> PyResult<Call> {
        let item = self.taken(py)?;
        Ok(Call::to_end(async move { item.done().await }))
    }

    fn release(&self, py: Python<'_>) -> PyResult<Call> {
        let item = self.taken(py)?;
        Ok(Call::to_end(async move { item.release().await }))
    }

    fn fail(&self, py: Python<'_>) -> PyResult<Call> {
        let item = self.taken(py)?;
        Ok(Call::to_end(async move { item.fail().await }))
    }

    fn give_back(&self, py: Python<'_>) -> PyResult<Call> {
        let item = self.taken(py)?;
        Ok(Call::to_end(async move { item.give_back().await }))
    }

    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.data)
    }

    #[getter]
    fn messages<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        self.messages.iter().map(|m| PyBytes::new(py, m)).collect()
    }

    #[getter]
    fn fencing_token(&self) -> i64 {
        self.token
    }

    #[getter]
    fn node(&self) -> &str {
        &self.node
    }

    #[getter]
    fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    #[getter]
    fn settled(&self) -> bool {
        self.item
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }
}

/// The native QueueSharder (DistributedQueue shards).
#[pyclass(frozen, module = "zkrecipes._native", name = "QueueSharder")]
pub struct PyQueueSharder {
    inner: Local<Arc<QueueSharder>>,
}

impl PyQueueSharder {
    fn s(&self, py: Python<'_>) -> PyResult<Arc<QueueSharder>> {
        self.inner.get(py, "sharder").cloned()
    }
}

#[pymethods]
impl PyQueueSharder {
    #[new]
    #[pyo3(signature = (client, queue_path, leader_path, lock_path = None, error_mode = None, new_queue_threshold = None, threshold_check = Timeout(None), max_queues = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        queue_path: Text,
        leader_path: Text,
        lock_path: Option<Text>,
        error_mode: Option<Text>,
        new_queue_threshold: Option<Int<usize>>,
        threshold_check: Timeout,
        max_queues: Option<Int<usize>>,
    ) -> PyResult<PyQueueSharder> {
        let c = client.core(py)?;
        let d = SharderPolicies::default();
        let options = SharderOptions {
            kind: QueueKind::Queue,
            queue: QueueOptions {
                lock_path: lock_path.map(String::from),
                max_items: None,
                error_mode: error_mode.map(|m| self::error_mode(py, &m)).transpose()?,
            },
            policies: SharderPolicies {
                new_queue_threshold: new_queue_threshold.map_or(d.new_queue_threshold, |v| v.0),
                threshold_check: threshold_check.0.unwrap_or(d.threshold_check),
                max_queues: max_queues.map_or(d.max_queues, |v| v.0),
            },
        };
        let s = QueueSharder::new(&c, &queue_path, &leader_path, options).py_err(py)?;
        Ok(PyQueueSharder {
            inner: Local::new(Arc::new(s)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<Call> {
        let s = self.s(py)?;
        Ok(Call::unit(async move { s.start().await }))
    }

    fn close(&self, py: Python<'_>) -> PyResult<Call> {
        let s = self.s(py)?;
        Ok(Call::unit(async move { s.close().await }))
    }

    fn get_queue(&self, py: Python<'_>) -> PyResult<PyQueue> {
        Ok(PyQueue::from(self.s(py)?.get_queue().py_err(py)?))
    }

    #[pyo3(signature = (timeout = Timeout(None)))]
    fn take(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let s = self.s(py)?;
        Ok(take_call(async move { s.take(timeout.0).await }))
    }

    #[getter]
    fn shard_qty(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.s(py)?.shard_qty())
    }

    #[getter]
    fn queue_paths(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self.s(py)?.queue_paths())
    }

    #[getter]
    fn is_leader(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.s(py)?.is_leader())
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.s(py)?.path().to_string())
    }
}
