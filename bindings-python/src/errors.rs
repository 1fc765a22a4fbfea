//! The one place where the core's [`zkrecipes::Error`] becomes a Python exception.
//!
//! The classes live in the hand-written `zkrecipes.errors` module (so that `InvalidArgumentError`
//! can also be a `ValueError` and `TimeoutError` the builtin one), one per kind of the core's
//! vocabulary ([`ErrorKind::ALL`], exported as `ERROR_KINDS`; a test checks that every kind has
//! its class). This file picks the class by `kind.name()` and writes the message: the core's
//! text (which names the operation and the path) followed by the kind's name and number and,
//! where ZooKeeper gave one, the server's own error code, also set as the exception's `zk_code`.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use zkrecipes::{Detail, Error, ErrorKind};

static BY_CODE: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

fn class(py: Python<'_>, kind: ErrorKind) -> PyResult<Bound<'_, PyType>> {
    let by_code = BY_CODE
        .get_or_try_init(py, || -> PyResult<Py<PyDict>> {
            let module = py.import("zkrecipes.errors")?;
            Ok(module.getattr("BY_CODE")?.cast_into::<PyDict>()?.unbind())
        })?
        .bind(py);
    Ok(by_code
        .get_item(kind.name())?
        .ok_or_else(|| {
            pyo3::exceptions::PyKeyError::new_err(format!(
                "zkrecipes.errors has no class for {}",
                kind.name()
            ))
        })?
        .cast_into::<PyType>()?)
}

/// The Python exception for a core error.
pub fn to_py(py: Python<'_>, err: Error) -> PyErr {
    let kind = err.kind();
    let message = match err.zk_code() {
        Some(z) => format!(
            "{} ({} {}, ZooKeeper code {z})",
            err.message(),
            kind.name(),
            kind.code()
        ),
        None => format!("{} ({} {})", err.message(), kind.name(), kind.code()),
    };
    let class = match class(py, kind) {
        Ok(c) => c,
        // Only if the hand-written package is broken: say so, with the error itself.
        Err(broken) => return broken,
    };
    let exc = PyErr::from_type(class, message);
    if let Some(z) = err.zk_code() {
        let _ = exc.value(py).setattr("zk_code", z);
    }
    if let Some(i) = err.failed_op() {
        let _ = exc.value(py).setattr("index", i);
    }
    exc
}

/// A bad argument detected by this face (same class as the core's `InvalidArgument`).
pub fn invalid(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py(py, Error::InvalidArgument(Detail::new(message)))
}

/// `ClosedError` raised by this face.
pub fn closed(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py(py, Error::Closed(Detail::new(message)))
}

/// Every kind of the core's error vocabulary as `(name, code)`, most general first.
pub fn kinds() -> Vec<(&'static str, u32)> {
    ErrorKind::ALL
        .iter()
        .map(|k| (k.name(), k.code()))
        .collect()
}

/// Maps `Result<T, zkrecipes::Error>` onto `PyResult<T>`.
pub trait IntoPyResult<T> {
    /// Converts the error with [`to_py`].
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for zkrecipes::Result<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
