//! Distributed counters: `DistributedAtomicLong` / `DistributedAtomicInteger` (one native class
//! for both widths) and `SharedCount`, with `AtomicValue` and `VersionedValue` as small frozen
//! objects whose values are ints or bytes (Curator's `AtomicValue<T>`, `VersionedValue<T>`: the
//! bytes recipes in `values.rs` use them too).

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zkrecipes::atomic::{
    AtomicStats, AtomicValue, DistributedAtomicInteger, DistributedAtomicLong, PromotedToLock,
    SharedCount, SharedCountEvent, VersionedValue,
};

use crate::args::{self, duration, Int, IntKind, Text, Timeout};
use crate::bridge::{self, Call};
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

/// A value of a counter (an int) or of a bytes recipe (bytes, or None for a missing node:
/// Curator's `null`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Val {
    Int(i64),
    Bytes(Option<Vec<u8>>),
}

impl<'py> IntoPyObject<'py> for Val {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            Val::Int(v) => v.into_pyobject(py)?.into_any(),
            Val::Bytes(Some(b)) => PyBytes::new(py, &b).into_any(),
            Val::Bytes(None) => py.None().into_bound(py),
        })
    }
}

impl Val {
    fn repr(&self, py: Python<'_>) -> String {
        match self {
            Val::Int(v) => v.to_string(),
            Val::Bytes(None) => "None".to_string(),
            Val::Bytes(Some(b)) => PyBytes::new(py, b)
                .repr()
                .map(|r| r.to_string())
                .unwrap_or_else(|_| format!("{b:?}")),
        }
    }
}

/// The result of a Curator-style counter or value operation (Curator's AtomicValue). When
/// `succeeded` is False nothing was written: `pre_value` is the last value read and
/// `post_value` is 0 (None for a DistributedAtomicValue, whose values are bytes or None).
#[pyclass(frozen, get_all, eq, module = "zkrecipes", name = "AtomicValue")]
#[derive(Clone, PartialEq)]
pub struct PyAtomicValue {
    /// Whether the write was applied. Always check it (or use `add_and_get`).
    succeeded: bool,
    /// The value before the operation.
    pre_value: Val,
    /// The value after the operation (0 if it did not succeed).
    post_value: Val,
    /// Tries and times.
    stats: PyAtomicStats,
}

#[pymethods]
impl PyAtomicValue {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "AtomicValue(succeeded={}, pre_value={}, post_value={})",
            if self.succeeded { "True" } else { "False" },
            self.pre_value.repr(py),
            self.post_value.repr(py)
        )
    }

    fn __bool__(&self) -> bool {
        self.succeeded
    }
}

fn value<T: Into<i64>>(v: AtomicValue<T>) -> PyAtomicValue {
    PyAtomicValue {
        succeeded: v.succeeded,
        pre_value: Val::Int(v.pre_value.into()),
        post_value: Val::Int(v.post_value.into()),
        stats: v.stats.into(),
    }
}

/// A bytes recipe's result (DistributedAtomicValue).
pub fn bytes_value(v: AtomicValue<Option<Vec<u8>>>) -> PyAtomicValue {
    PyAtomicValue {
        succeeded: v.succeeded,
        pre_value: Val::Bytes(v.pre_value),
        post_value: Val::Bytes(v.post_value),
        stats: v.stats.into(),
    }
}

/// A counter's result as a Python object (the cached counters' `next` too).
pub fn value_obj<T: Into<i64>>(py: Python<'_>, v: AtomicValue<T>) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, value(v))?.into_any())
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
    /// The value: an int (SharedCount) or bytes (SharedValue).
    value: Val,
}

#[pymethods]
impl PyVersionedValue {
    #[new]
    fn new(version: Int<i32>, value: Bound<'_, PyAny>) -> PyResult<Self> {
        let value = match value.cast::<PyBytes>() {
            Ok(b) => Val::Bytes(Some(b.as_bytes().to_vec())),
            Err(_) => Val::Int(i64::from(args::int::<i32>(&value, "value")?)),
        };
        Ok(PyVersionedValue {
            version: version.0,
            value,
        })
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "VersionedValue(version={}, value={})",
            self.version,
            self.value.repr(py)
        )
    }
}

impl From<VersionedValue<i32>> for PyVersionedValue {
    fn from(v: VersionedValue<i32>) -> Self {
        PyVersionedValue {
            version: v.version,
            value: Val::Int(i64::from(v.value)),
        }
    }
}

impl From<VersionedValue<Vec<u8>>> for PyVersionedValue {
    fn from(v: VersionedValue<Vec<u8>>) -> Self {
        PyVersionedValue {
            version: v.version,
            value: Val::Bytes(Some(v.value)),
        }
    }
}

impl PyVersionedValue {
    /// A SharedCount's view: `InvalidArgumentError` for a bytes value.
    fn as_count(&self, py: Python<'_>) -> PyResult<VersionedValue<i32>> {
        match self.value {
            Val::Int(v) => Ok(VersionedValue {
                version: self.version,
                value: i32::try_from(v)
                    .map_err(|_| errors::invalid(py, "previous.value must fit in 32 bits"))?,
            }),
            Val::Bytes(_) => Err(errors::invalid(
                py,
                "previous must be a SharedCount's VersionedValue (an int value), not bytes",
            )),
        }
    }

    /// A SharedValue's view: `InvalidArgumentError` for an int value.
    pub fn as_bytes(&self, py: Python<'_>) -> PyResult<VersionedValue<Vec<u8>>> {
        match &self.value {
            Val::Bytes(Some(b)) => Ok(VersionedValue {
                version: self.version,
                value: b.clone(),
            }),
            _ => Err(errors::invalid(
                py,
                "previous must be a SharedValue's VersionedValue (a bytes value), not an int",
            )),
        }
    }
}

/// A retry policy spec as `client.rs` takes it: (kind, base, max, n).
pub type RetrySpec = (Text, f64, f64, u32);

/// Curator's PromotedToLock from the Python dataclass's fields.
pub fn promoted(
    py: Python<'_>,
    path: Option<Text>,
    timeout: Option<f64>,
    retry: Option<RetrySpec>,
) -> PyResult<Option<PromotedToLock>> {
    let Some(p) = path else {
        return Ok(None);
    };
    let mut b = PromotedToLock::builder().lock_path(&p);
    if let Some(t) = timeout {
        b = b.timeout(duration(py, "max_lock_time", t)?);
    }
    if let Some(r) = retry {
        b = b.retry_policy(retry_policy(py, r)?);
    }
    Ok(Some(b.build().py_err(py)?))
}

/// A native counter of either width.
#[derive(Clone)]
pub enum Counter {
    Long(Arc<DistributedAtomicLong>),
    Int(Arc<DistributedAtomicInteger>),
}

fn int_obj<T: Into<i64>>(py: Python<'_>, v: T) -> PyResult<Py<PyAny>> {
    bridge::obj(py, v.into())
}

/// The names of a counter operation's operands, for messages.
fn operands(op: &str) -> (&'static str, &'static str) {
    match op {
        "compare_and_set" => ("expected", "new"),
        "add" | "subtract" | "add_and_get" => ("delta", ""),
        _ => ("value", ""),
    }
}

/// One counter operation on a counter of either width (`$T` its value type).
macro_rules! counter_op {
    ($c:expr, $T:ty, $op:expr, $a:expr, $b:expr, $t:expr) => {{
        let c = $c;
        let (a, b): ($T, $T) = ($a, $b);
        let t: Option<Duration> = $t;
        match $op {
            "get" => Call::new(async move { c.get().await }, value_obj),
            "add" => Call::new(async move { c.add(a).await }, value_obj),
            "subtract" => Call::new(async move { c.subtract(a).await }, value_obj),
            "increment" => Call::new(async move { c.increment().await }, value_obj),
            "decrement" => Call::new(async move { c.decrement().await }, value_obj),
            "compare_and_set" => Call::new(async move { c.compare_and_set(a, b).await }, value_obj),
            "try_set" => Call::new(async move { c.try_set(a).await }, value_obj),
            "force_set" => Call::unit(async move { c.force_set(a).await }),
            "initialize" => Call::value(async move { c.initialize(a).await }),
            _ => Call::new(async move { c.add_and_get(a, t).await }, int_obj),
        }
    }};
}

const OPS: &[&str] = &[
    "get",
    "add",
    "subtract",
    "increment",
    "decrement",
    "compare_and_set",
    "try_set",
    "force_set",
    "initialize",
    "add_and_get",
];

/// The native counter (8-byte Long or 4-byte Integer).
#[pyclass(frozen, module = "zkrecipes._native", name = "DistributedAtomicNumber")]
pub struct PyAtomicNumber {
    inner: Local<Counter>,
}

/// An operand: absent is 0, otherwise an int of the counter's width.
fn operand<T: IntKind + Default>(a: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<T> {
    a.map_or(Ok(T::default()), |a| args::int(a, name))
}

impl PyAtomicNumber {
    /// The core counter (a cached counter takes a clone of it).
    pub fn core(&self, py: Python<'_>) -> PyResult<Counter> {
        self.inner.get(py, "counter").cloned()
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
        path: Text,
        bits: u32,
        retry: Option<RetrySpec>,
        promoted_path: Option<Text>,
        promoted_timeout: Option<f64>,
        promoted_retry: Option<RetrySpec>,
    ) -> PyResult<PyAtomicNumber> {
        let c = client.core(py)?;
        let retry = retry.map(|r| retry_policy(py, r)).transpose()?;
        let promoted = promoted(py, promoted_path, promoted_timeout, promoted_retry)?;
        let counter = match bits {
            64 => Counter::Long(Arc::new(
                DistributedAtomicLong::new(&c, &path, retry, promoted).py_err(py)?,
            )),
            32 => Counter::Int(Arc::new(
                DistributedAtomicInteger::new(&c, &path, retry, promoted).py_err(py)?,
            )),
            _ => return Err(errors::invalid(py, "bits must be 32 or 64")),
        };
        Ok(PyAtomicNumber {
            inner: Local::new(counter),
        })
    }

    /// A counter operation (`get`, `add`, `subtract`, `increment`, `decrement`,
    /// `compare_and_set`, `try_set`, `force_set`, `initialize`, `add_and_get`).
    #[pyo3(signature = (op, a = None, b = None, timeout = Timeout(None)))]
    fn call(
        &self,
        py: Python<'_>,
        op: Text,
        a: Option<Bound<'_, PyAny>>,
        b: Option<Bound<'_, PyAny>>,
        timeout: Timeout,
    ) -> PyResult<Call> {
        if !OPS.contains(&&*op) {
            return Err(errors::invalid(
                py,
                format!("unknown counter operation {:?}", &*op),
            ));
        }
        let (na, nb) = operands(&op);
        Ok(match self.inner.get(py, "counter")?.clone() {
            Counter::Long(c) => counter_op!(
                c,
                i64,
                &*op,
                operand(a.as_ref(), na)?,
                operand(b.as_ref(), nb)?,
                timeout.0
            ),
            Counter::Int(c) => counter_op!(
                c,
                i32,
                &*op,
                operand(a.as_ref(), na)?,
                operand(b.as_ref(), nb)?,
                timeout.0
            ),
        })
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(match self.inner.get(py, "counter")? {
            Counter::Long(c) => c.path().to_string(),
            Counter::Int(c) => c.path().to_string(),
        })
    }
}

/// The native SharedCount.
#[pyclass(frozen, module = "zkrecipes._native", name = "SharedCount")]
pub struct PySharedCount {
    inner: Local<Arc<SharedCount>>,
}

impl PySharedCount {
    /// The core count (the count-driven semaphore reads it).
    pub fn s(&self, py: Python<'_>) -> PyResult<Arc<SharedCount>> {
        self.inner.get(py, "shared count").cloned()
    }
}

#[pymethods]
impl PySharedCount {
    #[new]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        seed: Int<i32>,
    ) -> PyResult<PySharedCount> {
        let c = client.core(py)?;
        Ok(PySharedCount {
            inner: Local::new(Arc::new(SharedCount::new(&c, &path, seed.0).py_err(py)?)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<Call> {
        let s = self.s(py)?;
        Ok(Call::unit(async move { s.start().await }))
    }

    fn get_count(&self, py: Python<'_>) -> PyResult<i32> {
        self.s(py)?.get_count().py_err(py)
    }

    fn get_versioned_value(&self, py: Python<'_>) -> PyResult<PyVersionedValue> {
        self.s(py)?.get_versioned_value().py_err(py).map(Into::into)
    }

    fn set_count(&self, py: Python<'_>, count: Int<i32>) -> PyResult<Call> {
        let s = self.s(py)?;
        Ok(Call::unit(async move { s.set_count(count.0).await }))
    }

    fn try_set_count(
        &self,
        py: Python<'_>,
        previous: &PyVersionedValue,
        count: Int<i32>,
    ) -> PyResult<Call> {
        let s = self.s(py)?;
        let prev = previous.as_count(py)?;
        Ok(Call::value(
            async move { s.try_set_count(&prev, count.0).await },
        ))
    }

    /// `callback("count", VersionedValue)` on a change, `callback("state", name)` on a
    /// connection-state change, `callback("error", CorruptedDataError)` when the node holds
    /// data that is not a count; on the count's dispatcher thread, one at a time, in order.
    fn add_listener(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        let shared = self.s(py)?;
        let path = shared.path().to_string();
        Ok(shared.add_listener(move |event| {
            let _ = bridge::attach(|py| {
                let args = match event {
                    SharedCountEvent::CountChanged(v) => {
                        Py::new(py, PyVersionedValue::from(v)).map(|v| ("count", v.into_any()))
                    }
                    SharedCountEvent::StateChanged(s) => {
                        bridge::obj(py, s.name()).map(|n| ("state", n))
                    }
                    SharedCountEvent::CorruptedData { version } => {
                        let e = zkrecipes::Error::CorruptedData(
                            format!(
                                "shared count {path}: the data at version {version} is not a count (4 bytes)"
                            )
                            .into(),
                        );
                        Ok(("error", errors::to_py(py, e).into_value(py).into_any()))
                    }
                };
                match args {
                    Ok(args) => bridge::invoke(&callback, args),
                    Err(e) => e.write_unraisable(py, None),
                }
            });
        }))
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.s(py)?.remove_listener(id).py_err(py)
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
