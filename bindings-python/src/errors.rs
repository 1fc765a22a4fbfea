//! The one place where the core's [`zkrecipes::Error`] becomes a Python exception.
//!
//! The classes live in the hand-written `zkrecipes.errors` module (so that `InvalidArgumentError`
//! can also be a `ValueError` and `TimeoutError` the builtin one); this file picks the class by
//! the error's kind and writes the message: the core's text (which names the operation and the
//! path) followed by the kind's code and, where ZooKeeper has one, the server's error code.

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use zkrecipes::{Detail, Error, ErrorKind};

/// The code of a kind: the core's name in upper snake case (`NO_NODE`); C's status is
/// `ZKR_` + it.
pub fn code(kind: ErrorKind) -> &'static str {
    kind.name()
}

static BY_CODE: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    BY_CODE
        .get_or_try_init(py, || -> PyResult<Py<PyDict>> {
            let module = py.import("zkrecipes.errors")?;
            Ok(module.getattr("BY_CODE")?.cast_into::<PyDict>()?.unbind())
        })
        .map(|d| d.bind(py))
}

/// The Python exception for a core error.
pub fn to_py(py: Python<'_>, err: Error) -> PyErr {
    let code = code(err.kind());
    let class = match classes(py).and_then(|d| d.get_item(code)) {
        Ok(Some(class)) => class,
        // Only if the hand-written package is broken: still say what happened.
        _ => return PyRuntimeError::new_err(format!("{err} ({code})")),
    };
    let zk_code: Option<i64> = class.getattr("zk_code").ok().and_then(|c| c.extract().ok());
    let message = match zk_code {
        Some(z) => format!("{} ({code}, ZooKeeper code {z})", err.message()),
        None => format!("{} ({code})", err.message()),
    };
    match class.cast_into::<PyType>() {
        Ok(class) => PyErr::from_type(class, message),
        Err(_) => PyTypeError::new_err(message),
    }
}

/// A bad argument detected by this face (same class as the core's `InvalidArgument`).
pub fn invalid(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py(py, Error::InvalidArgument(Detail::new(message)))
}

/// `ClosedError` raised by this face.
pub fn closed(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py(py, Error::Closed(Detail::new(message)))
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
