//! Barriers: `DistributedBarrier` and `DistributedDoubleBarrier`.

use std::sync::Arc;

use pyo3::prelude::*;
use zkrecipes::barriers::{DistributedBarrier, DistributedDoubleBarrier};

use crate::args::{Int, Text, Timeout};
use crate::bridge::{self, Call};
use crate::client::PyClient;
use crate::errors::IntoPyResult;
use crate::local::Local;

/// The native DistributedBarrier.
#[pyclass(frozen, module = "zkrecipes._native", name = "DistributedBarrier")]
pub struct PyBarrier {
    inner: Local<Arc<DistributedBarrier>>,
}

impl PyBarrier {
    fn b(&self, py: Python<'_>) -> PyResult<Arc<DistributedBarrier>> {
        self.inner.get(py, "barrier").cloned()
    }
}

#[pymethods]
impl PyBarrier {
    #[new]
    fn new(py: Python<'_>, client: &PyClient, path: Text) -> PyResult<PyBarrier> {
        let c = client.core(py)?;
        Ok(PyBarrier {
            inner: Local::new(Arc::new(DistributedBarrier::new(&c, &path).py_err(py)?)),
        })
    }

    fn set_barrier(&self, py: Python<'_>) -> PyResult<Call> {
        let b = self.b(py)?;
        Ok(Call::unit(async move { b.set_barrier().await }))
    }

    fn remove_barrier(&self, py: Python<'_>) -> PyResult<Call> {
        let b = self.b(py)?;
        Ok(Call::unit(async move { b.remove_barrier().await }))
    }

    #[pyo3(signature = (timeout = Timeout(None)))]
    fn wait_on_barrier(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let b = self.b(py)?;
        Ok(Call::value(
            async move { b.wait_on_barrier(timeout.0).await },
        ))
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.b(py)?.path().to_string())
    }
}

/// The native DistributedDoubleBarrier (one member).
#[pyclass(
    frozen,
    module = "zkrecipes._native",
    name = "DistributedDoubleBarrier"
)]
pub struct PyDoubleBarrier {
    inner: Local<Arc<DistributedDoubleBarrier>>,
}

impl PyDoubleBarrier {
    fn b(&self, py: Python<'_>) -> PyResult<Arc<DistributedDoubleBarrier>> {
        self.inner.get(py, "double barrier").cloned()
    }
}

#[pymethods]
impl PyDoubleBarrier {
    #[new]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        member_qty: Int<usize>,
    ) -> PyResult<PyDoubleBarrier> {
        let c = client.core(py)?;
        let b = DistributedDoubleBarrier::new(&c, &path, member_qty.0).py_err(py)?;
        Ok(PyDoubleBarrier {
            inner: Local::new(Arc::new(b)),
        })
    }

    /// An entry delivered to a Task that was cancelled in the same instant is undone (the
    /// member leaves at once): its `__aexit__` never runs, and the other members' `leave` would
    /// wait for this member until its session ended.
    #[pyo3(signature = (timeout = Timeout(None)))]
    fn enter(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let b = self.b(py)?;
        let undo_b = b.clone();
        Ok(Call::undoable(
            async move { b.enter(timeout.0).await },
            bridge::to_obj(),
            Box::new(move |entered| {
                if entered {
                    drop(zkrecipes::runtime::spawn(async move {
                        let _ = undo_b.leave(Some(std::time::Duration::ZERO)).await;
                    }));
                }
            }),
        ))
    }

    #[pyo3(signature = (timeout = Timeout(None)))]
    fn leave(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let b = self.b(py)?;
        Ok(Call::value(async move { b.leave(timeout.0).await }))
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.b(py)?.path().to_string())
    }

    #[getter]
    fn member_qty(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.b(py)?.member_qty())
    }

    #[getter]
    fn member_name(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.b(py)?.member_name().to_string())
    }
}
