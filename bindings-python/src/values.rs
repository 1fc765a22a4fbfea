//! The bytes recipes and cached counters: `SharedValue`, `DistributedAtomicValue`,
//! `CachedAtomicLong` / `CachedAtomicInteger` (one native class for both widths).

use std::sync::Arc;

use pyo3::prelude::*;
use zkrecipes::atomic::{
    CachedAtomicInteger, CachedAtomicLong, DistributedAtomicValue, SharedValue, SharedValueEvent,
};

use crate::args::{Int, Text};
use crate::atomic::{
    bytes_value, promoted, value_obj, Counter, PyAtomicNumber, PyVersionedValue, RetrySpec,
};
use crate::bridge::{self, Call};
use crate::client::{retry_policy, PyClient};
use crate::errors::{self, IntoPyResult};
use crate::local::Local;

/// The native SharedValue.
#[pyclass(frozen, module = "zkrecipes._native", name = "SharedValue")]
pub struct PySharedValue {
    inner: Local<Arc<SharedValue>>,
}

impl PySharedValue {
    fn s(&self, py: Python<'_>) -> PyResult<Arc<SharedValue>> {
        self.inner.get(py, "shared value").cloned()
    }
}

#[pymethods]
impl PySharedValue {
    #[new]
    fn new(py: Python<'_>, client: &PyClient, path: Text, seed: Vec<u8>) -> PyResult<Self> {
        let c = client.core(py)?;
        Ok(PySharedValue {
            inner: Local::new(Arc::new(SharedValue::new(&c, &path, &seed).py_err(py)?)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<Call> {
        let s = self.s(py)?;
        Ok(Call::unit(async move { s.start().await }))
    }

    fn get_versioned_value(&self, py: Python<'_>) -> PyResult<PyVersionedValue> {
        Ok(self.s(py)?.get_versioned_value().into())
    }

    fn set_value(&self, py: Python<'_>, value: Vec<u8>) -> PyResult<Call> {
        let s = self.s(py)?;
        Ok(Call::unit(async move { s.set_value(&value).await }))
    }

    fn try_set_value(
        &self,
        py: Python<'_>,
        previous: &PyVersionedValue,
        value: Vec<u8>,
    ) -> PyResult<Call> {
        let s = self.s(py)?;
        let prev = previous.as_bytes(py)?;
        Ok(Call::value(
            async move { s.try_set_value(&prev, &value).await },
        ))
    }

    /// `callback("value", VersionedValue)` on a change, `callback("state", name)` on a
    /// connection-state change; on the value's dispatcher thread, one at a time, in order.
    fn add_listener(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        Ok(self.s(py)?.add_listener(move |event| {
            let _ = bridge::attach(|py| {
                let args = match event {
                    SharedValueEvent::ValueChanged(v) => {
                        Py::new(py, PyVersionedValue::from(v)).map(|v| ("value", v.into_any()))
                    }
                    SharedValueEvent::StateChanged(s) => {
                        bridge::obj(py, s.name()).map(|n| ("state", n))
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

/// The native DistributedAtomicValue.
#[pyclass(frozen, module = "zkrecipes._native", name = "DistributedAtomicValue")]
pub struct PyAtomicBytes {
    inner: Local<DistributedAtomicValue>,
}

impl PyAtomicBytes {
    fn v(&self, py: Python<'_>) -> PyResult<DistributedAtomicValue> {
        self.inner.get(py, "atomic value").cloned()
    }
}

fn bytes_obj(
    py: Python<'_>,
    v: zkrecipes::atomic::AtomicValue<Option<Vec<u8>>>,
) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, bytes_value(v))?.into_any())
}

#[pymethods]
impl PyAtomicBytes {
    #[new]
    #[pyo3(signature = (client, path, retry, promoted_path, promoted_timeout, promoted_retry))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        retry: Option<RetrySpec>,
        promoted_path: Option<Text>,
        promoted_timeout: Option<f64>,
        promoted_retry: Option<RetrySpec>,
    ) -> PyResult<Self> {
        let c = client.core(py)?;
        let retry = retry.map(|r| retry_policy(py, r)).transpose()?;
        let promoted = promoted(py, promoted_path, promoted_timeout, promoted_retry)?;
        Ok(PyAtomicBytes {
            inner: Local::new(DistributedAtomicValue::new(&c, &path, retry, promoted).py_err(py)?),
        })
    }

    fn get(&self, py: Python<'_>) -> PyResult<Call> {
        let v = self.v(py)?;
        Ok(Call::new(async move { v.get().await }, bytes_obj))
    }

    fn compare_and_set(&self, py: Python<'_>, expected: Vec<u8>, new: Vec<u8>) -> PyResult<Call> {
        let v = self.v(py)?;
        Ok(Call::new(
            async move { v.compare_and_set(&expected, &new).await },
            bytes_obj,
        ))
    }

    fn try_set(&self, py: Python<'_>, value: Vec<u8>) -> PyResult<Call> {
        let v = self.v(py)?;
        Ok(Call::new(async move { v.try_set(&value).await }, bytes_obj))
    }

    fn force_set(&self, py: Python<'_>, value: Vec<u8>) -> PyResult<Call> {
        let v = self.v(py)?;
        Ok(Call::unit(async move { v.force_set(&value).await }))
    }

    fn initialize(&self, py: Python<'_>, value: Vec<u8>) -> PyResult<Call> {
        let v = self.v(py)?;
        Ok(Call::value(async move { v.initialize(&value).await }))
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.v(py)?.path().to_string())
    }
}

#[derive(Clone)]
enum Cached {
    Long(Arc<CachedAtomicLong>),
    Int(Arc<CachedAtomicInteger>),
}

/// The native cached counter (over an 8-byte Long or a 4-byte Integer).
#[pyclass(frozen, module = "zkrecipes._native", name = "CachedAtomicNumber")]
pub struct PyCachedNumber {
    inner: Local<Cached>,
}

#[pymethods]
impl PyCachedNumber {
    /// Over the counter of a native DistributedAtomicNumber (the same node, options and
    /// combining).
    #[new]
    fn new(py: Python<'_>, counter: &PyAtomicNumber, cache_factor: Int<i64>) -> PyResult<Self> {
        let cached = match counter.core(py)? {
            Counter::Long(c) => Cached::Long(Arc::new(
                CachedAtomicLong::new((*c).clone(), cache_factor.0).py_err(py)?,
            )),
            Counter::Int(c) => {
                let factor = i32::try_from(cache_factor.0).map_err(|_| {
                    errors::invalid(py, "cache_factor must fit in 32 bits for an integer")
                })?;
                Cached::Int(Arc::new(
                    CachedAtomicInteger::new((*c).clone(), factor).py_err(py)?,
                ))
            }
        };
        Ok(PyCachedNumber {
            inner: Local::new(cached),
        })
    }

    fn next(&self, py: Python<'_>) -> PyResult<Call> {
        Ok(match self.inner.get(py, "cached counter")?.clone() {
            Cached::Long(c) => Call::new(async move { c.next().await }, value_obj),
            Cached::Int(c) => Call::new(async move { c.next().await }, value_obj),
        })
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(match self.inner.get(py, "cached counter")? {
            Cached::Long(c) => c.counter().path().to_string(),
            Cached::Int(c) => c.counter().path().to_string(),
        })
    }

    #[getter]
    fn cache_factor(&self, py: Python<'_>) -> PyResult<i64> {
        Ok(match self.inner.get(py, "cached counter")? {
            Cached::Long(c) => c.cache_factor(),
            Cached::Int(c) => i64::from(c.cache_factor()),
        })
    }
}
