//! Distributed counters: `DistributedAtomicLong` / `DistributedAtomicInteger` (one native class
//! for both widths) and `SharedCount`, with `AtomicValue` as a small frozen object.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use zkrecipes::atomic::{
    AtomicStats, AtomicValue, DistributedAtomicInteger, DistributedAtomicLong, PromotedToLock,
    SharedCount, SharedCountEvent, VersionedValue,
};

use crate::bridge::{self, duration, timeout};
use crate::client::{retry_policy, PyClient};
use crate::errors::{self, IntoPyResult};
use crate::local::Local;

/// Tries and times of a counter operation (Curator's AtomicStats); times in seconds.
#[pyclass(frozen, get_all, eq, module = "zkrecipes", name = "AtomicStats")]
#[derive(Clone, PartialEq)]
pub struct PyAtomicStats {
    /// Compare-and-set tries in optimistic mode.
    optimistic_tries: u32,
    /// Tries made while holding the promoted lock.
    promoted_lock_tries: u32,
    /// Seconds spent in optimistic mode.
    optimistic_time: f64,
    /// Seconds spent in promoted mode (including the wait for the lock).
    promoted_time: f64,
}

#[pymethods]
impl PyAtomicStats {
    fn __repr__(&self) -> String {
        format!(
            "AtomicStats(optimistic_tries={}, promoted_lock_tries={}, optimistic_time={:.6}, promoted_time={:.6})",
            self.optimistic_tries, self.promoted_lock_tries, self.optimistic_time, self.promoted_time
        )
    }
}

impl From<AtomicStats> for PyAtomicStats {
    fn from(s: AtomicStats) -> Self {
        PyAtomicStats {
            optimistic_tries: s.optimistic_tries,
            promoted_lock_tries: s.promoted_lock_tries,
            optimistic_time: s.optimistic_time.as_secs_f64(),
            promoted_time: s.promoted_time.as_secs_f64(),
        }
    }
}

/// The result of a Curator-style counter operation (Curator's AtomicValue). When `succeeded` is
/// False nothing was written: `pre_value` is the last value read and `post_value` is 0.
#[pyclass(frozen, get_all, eq, module = "zkrecipes", name = "AtomicValue")]
#[derive(Clone, PartialEq)]
pub struct PyAtomicValue {
    /// Whether the write was applied. Always check it (or use `add_and_get`).
    succeeded: bool,
    /// The value before the operation.
    pre_value: i64,
    /// The value after the operation (0 if it did not succeed).
    post_value: i64,
    /// Tries and times.
    stats: PyAtomicStats,
}

#[pymethods]
impl PyAtomicValue {
    fn __repr__(&self) -> String {
        format!(
            "AtomicValue(succeeded={}, pre_value={}, post_value={})",
            if self.succeeded { "True" } else { "False" },
            self.pre_value,
            self.post_value
        )
    }

    fn __bool__(&self) -> bool {
        self.succeeded
    }
}

fn value<T: Into<i64>>(v: AtomicValue<T>) -> PyAtomicValue {
    PyAtomicValue {
        succeeded: v.succeeded,
        pre_value: v.pre_value.into(),
        post_value: v.post_value.into(),
        stats: v.stats.into(),
    }
}

/// A value with the data version it was read at (Curator's VersionedValue).
#[pyclass(
    frozen,
    get_all,
    eq,
    hash,
    module = "zkrecipes",
    name = "VersionedValue"
)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyVersionedValue {
    /// The node's data version.
    version: i32,
    /// The value.
    value: i32,
}

#[pymethods]
impl PyVersionedValue {
    #[new]
    fn new(version: i32, value: i32) -> Self {
        PyVersionedValue { version, value }
    }

    fn __repr__(&self) -> String {
        format!(
            "VersionedValue(version={}, value={})",
            self.version, self.value
        )
    }
}

impl From<VersionedValue<i32>> for PyVersionedValue {
    fn from(v: VersionedValue<i32>) -> Self {
        PyVersionedValue {
            version: v.version,
            value: v.value,
        }
    }
}

#[derive(Clone)]
enum Counter {
    Long(Arc<DistributedAtomicLong>),
    Int(Arc<DistributedAtomicInteger>),
}

enum Out {
    Value(PyAtomicValue),
    Unit,
    Bool(bool),
    Int(i64),
}

impl Out {
    fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match self {
            Out::Value(v) => Py::new(py, v)?.into_any(),
            Out::Unit => py.None(),
            Out::Bool(b) => pyo3::types::PyBool::new(py, b)
                .to_owned()
                .into_any()
                .unbind(),
            Out::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        })
    }
}

type OpFuture = Pin<Box<dyn Future<Output = zkrecipes::Result<Out>> + Send>>;

macro_rules! counter_op {
    ($c:expr, $op:expr, $a:expr, $b:expr, $t:expr, $conv:expr) => {
        (|| {
            let c = $c;
            let a = $conv($a)?;
            let b = $conv($b)?;
            let t: Option<Duration> = $t;
            let fut: OpFuture = match $op {
                "get" => Box::pin(async move { c.get().await.map(|v| Out::Value(value(v))) }),
                "add" => Box::pin(async move { c.add(a).await.map(|v| Out::Value(value(v))) }),
                "subtract" => {
                    Box::pin(async move { c.subtract(a).await.map(|v| Out::Value(value(v))) })
                }
                "increment" => {
                    Box::pin(async move { c.increment().await.map(|v| Out::Value(value(v))) })
                }
                "decrement" => {
                    Box::pin(async move { c.decrement().await.map(|v| Out::Value(value(v))) })
                }
                "compare_and_set" => {
                    Box::pin(
                        async move { c.compare_and_set(a, b).await.map(|v| Out::Value(value(v))) },
                    )
                }
                "try_set" => {
                    Box::pin(async move { c.try_set(a).await.map(|v| Out::Value(value(v))) })
                }
                "force_set" => Box::pin(async move { c.force_set(a).await.map(|()| Out::Unit) }),
                "initialize" => Box::pin(async move { c.initialize(a).await.map(Out::Bool) }),
                "add_and_get" => {
                    Box::pin(async move { c.add_and_get(a, t).await.map(|v| Out::Int(v.into())) })
                }
                other => {
                    return Err(zkrecipes::Error::InvalidArgument(
                        format!("unknown counter operation {other:?}").into(),
                    ))
                }
            };
            Ok::<OpFuture, zkrecipes::Error>(fut)
        })()
    };
}

/// The native counter (8-byte Long or 4-byte Integer).
#[pyclass(frozen, module = "zkrecipes._native", name = "DistributedAtomicNumber")]
pub struct PyAtomicNumber {
    inner: Local<Counter>,
}

impl PyAtomicNumber {
    fn op(&self, py: Python<'_>, op: &str, a: i64, b: i64, t: Option<f64>) -> PyResult<OpFuture> {
        let c = self.inner.get(py, "counter")?.clone();
        let t = timeout(py, "timeout", t)?;
        let fut = match c {
            Counter::Long(c) => {
                counter_op!(c, op, a, b, t, |x: i64| Ok::<i64, zkrecipes::Error>(x))
            }
            Counter::Int(c) => {
                counter_op!(c, op, a, b, t, |x: i64| i32::try_from(x).map_err(|_| {
                    zkrecipes::Error::InvalidArgument(
                        format!("{x} does not fit a DistributedAtomicInteger (32 bits)").into(),
                    )
                }))
            }
        };
        fut.py_err(py)
    }
}

#[pymethods]
impl PyAtomicNumber {
    #[new]
    #[pyo3(signature = (client, path, bits, retry, promoted_path, promoted_timeout, promoted_retry))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: &str,
        bits: u32,
        retry: Option<(String, f64, f64, u32)>,
        promoted_path: Option<String>,
        promoted_timeout: Option<f64>,
        promoted_retry: Option<(String, f64, f64, u32)>,
    ) -> PyResult<PyAtomicNumber> {
        let c = client.core(py)?;
        let retry = retry.map(|r| retry_policy(py, r)).transpose()?;
        let promoted = match promoted_path {
            None => None,
            Some(p) => {
                let mut b = PromotedToLock::builder().lock_path(&p);
                if let Some(t) = promoted_timeout {
                    b = b.timeout(duration(py, "max_lock_time", t)?);
                }
                if let Some(r) = promoted_retry {
                    b = b.retry_policy(retry_policy(py, r)?);
                }
                Some(b.build().py_err(py)?)
            }
        };
        let counter = match bits {
            64 => Counter::Long(Arc::new(
                DistributedAtomicLong::new(&c, path, retry, promoted).py_err(py)?,
            )),
            32 => Counter::Int(Arc::new(
                DistributedAtomicInteger::new(&c, path, retry, promoted).py_err(py)?,
            )),
            _ => return Err(errors::invalid(py, "bits must be 32 or 64")),
        };
        Ok(PyAtomicNumber {
            inner: Local::new(counter),
        })
    }

    /// Runs a counter operation (`get`, `add`, `subtract`, `increment`, `decrement`,
    /// `compare_and_set`, `try_set`, `force_set`, `initialize`, `add_and_get`).
    #[pyo3(signature = (op, a = 0, b = 0, timeout = None))]
    fn call(
        &self,
        py: Python<'_>,
        op: &str,
        a: i64,
        b: i64,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let fut = self.op(py, op, a, b, timeout)?;
        bridge::block(py, fut)?.into_py(py)
    }

    /// `call` for asyncio.
    #[pyo3(signature = (event_loop, op, a = 0, b = 0, timeout = None))]
    fn call_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        op: &str,
        a: i64,
        b: i64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fut = self.op(py, op, a, b, timeout)?;
        bridge::future(
            py,
            event_loop,
            fut,
            Box::new(|py, out: Out| out.into_py(py)),
            None,
        )
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(match self.inner.get(py, "counter")? {
            Counter::Long(c) => c.path().to_string(),
            Counter::Int(c) => c.path().to_string(),
        })
    }
}

impl Clone for Out {
    fn clone(&self) -> Self {
        match self {
            Out::Value(v) => Out::Value(v.clone()),
            Out::Unit => Out::Unit,
            Out::Bool(b) => Out::Bool(*b),
            Out::Int(i) => Out::Int(*i),
        }
    }
}

/// The native SharedCount.
#[pyclass(frozen, module = "zkrecipes._native", name = "SharedCount")]
pub struct PySharedCount {
    inner: Local<Arc<SharedCount>>,
}

impl PySharedCount {
    fn s(&self, py: Python<'_>) -> PyResult<Arc<SharedCount>> {
        self.inner.get(py, "shared count").cloned()
    }
}

fn none_obj(py: Python<'_>, (): ()) -> PyResult<Py<PyAny>> {
    Ok(py.None())
}

#[pymethods]
impl PySharedCount {
    #[new]
    fn new(py: Python<'_>, client: &PyClient, path: &str, seed: i32) -> PyResult<PySharedCount> {
        let c = client.core(py)?;
        Ok(PySharedCount {
            inner: Local::new(Arc::new(SharedCount::new(&c, path, seed).py_err(py)?)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<()> {
        let s = self.s(py)?;
        bridge::block(py, async move { s.start().await })
    }

    fn start_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = self.s(py)?;
        bridge::future(
            py,
            event_loop,
            async move { s.start().await },
            Box::new(none_obj),
            None,
        )
    }

    fn get_count(&self, py: Python<'_>) -> PyResult<i32> {
        self.s(py)?.get_count().py_err(py)
    }

    fn get_versioned_value(&self, py: Python<'_>) -> PyResult<PyVersionedValue> {
        self.s(py)?.get_versioned_value().py_err(py).map(Into::into)
    }

    fn set_count(&self, py: Python<'_>, count: i32) -> PyResult<()> {
        let s = self.s(py)?;
        bridge::block(py, async move { s.set_count(count).await })
    }

    fn set_count_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        count: i32,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = self.s(py)?;
        bridge::future(
            py,
            event_loop,
            async move { s.set_count(count).await },
            Box::new(none_obj),
            None,
        )
    }

    fn try_set_count(
        &self,
        py: Python<'_>,
        previous: &PyVersionedValue,
        count: i32,
    ) -> PyResult<bool> {
        let s = self.s(py)?;
        let prev = VersionedValue {
            version: previous.version,
            value: previous.value,
        };
        bridge::block(py, async move { s.try_set_count(&prev, count).await })
    }

    fn try_set_count_async<'py>(
        &self,
        py: Python<'py>,
        event_loop: &Bound<'py, PyAny>,
        previous: &PyVersionedValue,
        count: i32,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = self.s(py)?;
        let prev = VersionedValue {
            version: previous.version,
            value: previous.value,
        };
        bridge::future(
            py,
            event_loop,
            async move { s.try_set_count(&prev, count).await },
            Box::new(|py, b: bool| {
                Ok(pyo3::types::PyBool::new(py, b)
                    .to_owned()
                    .into_any()
                    .unbind())
            }),
            None,
        )
    }

    /// `callback("count", version, value)` on a change, `callback("state", name, None)` on a
    /// connection-state change; on a library thread, one at a time.
    fn add_listener(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        Ok(self.s(py)?.add_listener(move |event| {
            let _ = Python::try_attach(|py| {
                let result = match event {
                    SharedCountEvent::CountChanged(v) => {
                        callback.call1(py, ("count", PyVersionedValue::from(v)))
                    }
                    SharedCountEvent::StateChanged(s) => callback.call1(py, ("state", s.as_str())),
                    SharedCountEvent::CorruptedData { version } => {
                        callback.call1(py, ("corrupted", version))
                    }
                };
                if let Err(e) = result {
                    e.write_unraisable(py, Some(callback.bind(py)));
                }
            });
        }))
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        Ok(self.s(py)?.remove_listener(id))
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let s = self.s(py)?;
        py.detach(move || s.close());
        Ok(())
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.s(py)?.path().to_string())
    }
}
