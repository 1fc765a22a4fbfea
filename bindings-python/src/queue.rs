//! Queues: `SimpleDistributedQueue` and the `DistributedQueue` family (one native class, made
//! with the variant's name), with `QueueItem` for a taken item.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zkrecipes::queue::{
    DistributedQueue, Item, ItemKey, QueueKind, QueueOptions, SimpleDistributedQueue,
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
        Ok(Call::new(
            async move { q.take(timeout.0).await },
            bytes_or_none,
        ))
    }

    fn peek(&self, py: Python<'_>) -> PyResult<Call> {
        let q = self.q(py)?;
        Ok(Call::new(async move { q.peek().await }, bytes_or_none))
    }

    fn poll(&self, py: Python<'_>) -> PyResult<Call> {
        let q = self.q(py)?;
        Ok(Call::new(async move { q.poll().await }, bytes_or_none))
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

fn item_obj(py: Python<'_>, item: Option<Item>) -> PyResult<Py<PyAny>> {
    match item {
        Some(item) => Ok(Py::new(py, PyQueueItem::from(item))?.into_any()),
        None => Ok(py.None()),
    }
}

#[pymethods]
impl PyQueue {
    #[new]
    #[pyo3(signature = (client, path, kind, lock_path = None, max_items = None))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        kind: Text,
        lock_path: Option<Text>,
        max_items: Option<Int<usize>>,
    ) -> PyResult<PyQueue> {
        let c = client.core(py)?;
        let o = QueueOptions {
            lock_path: lock_path.map(String::from),
            max_items: max_items.map(|m| m.0),
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
        let key = match (q.kind(), key) {
            (_, None) => Key::None,
            (QueueKind::Id, Some(k)) => Key::Id(k.extract::<Text>()?.into()),
            (QueueKind::Priority, Some(k)) => Key::Priority(crate::args::int(&k, "priority")?),
            (QueueKind::Delay, Some(k)) => {
                Key::DelayUntil(crate::args::int(&k, "delay_until_epoch_ms")?)
            }
            (QueueKind::Queue, Some(_)) => {
                return Err(errors::invalid(py, "a plain queue's put takes no key"))
            }
        };
        Ok(Call::value(async move {
            let key = match &key {
                Key::None => ItemKey::None,
                Key::Id(id) => ItemKey::Id(id),
                Key::Priority(p) => ItemKey::Priority(*p),
                Key::DelayUntil(ms) => ItemKey::DelayUntil(*ms),
            };
            q.put_with(&data, key, timeout.0).await
        }))
    }

    fn remove(&self, py: Python<'_>, id: Text) -> PyResult<Call> {
        let q = self.q(py)?;
        Ok(Call::value(async move { q.remove_id(&id).await }))
    }

    #[pyo3(signature = (timeout = Timeout(None)))]
    fn take(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let q = self.q(py)?;
        Ok(Call::new(async move { q.take(timeout.0).await }, item_obj))
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

impl From<Item> for PyQueueItem {
    fn from(item: Item) -> Self {
        PyQueueItem {
            data: item.data().to_vec(),
            messages: item.messages().to_vec(),
            token: item.fencing_token(),
            node: item.node().to_string(),
            id: item.id().map(str::to_string),
            item: Arc::new(Mutex::new(Some(item))),
        }
    }
}

impl PyQueueItem {
    fn taken(&self, py: Python<'_>) -> PyResult<Item> {
        self.item
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| errors::invalid(py, "this item was already completed or released"))
    }
}

#[pymethods]
impl PyQueueItem {
    fn done(&self, py: Python<'_>) -> PyResult<Call> {
        let item = self.taken(py)?;
        Ok(Call::unit(async move { item.done().await }))
    }

    fn release(&self, py: Python<'_>) -> PyResult<Call> {
        let item = self.taken(py)?;
        Ok(Call::unit(async move { item.release().await }))
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
