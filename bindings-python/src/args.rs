//! Arguments from Python, checked in one place: integers, text and timeouts.
//!
//! Each type here is a `FromPyObject` used directly as a `#[pymethods]` parameter type. A value
//! of the right Python type that does not fit (an int out of range, a `str` with a lone
//! surrogate, a negative timeout) is an `InvalidArgumentError` — never the builtin
//! `OverflowError` or `UnicodeEncodeError`. The message starts with "must be" / "is": PyO3
//! names the parameter in a note (`while processing 'delta'`) and `InvalidArgumentError.add_note`
//! (zkrecipes/errors.py) puts that name at the front of the message. A value of the wrong type
//! stays a `TypeError`.

use std::ops::Deref;
use std::time::Duration;

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyUnicodeEncodeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};

use crate::errors;

/// An integer type a parameter can have, with its range spelled for messages.
pub trait IntKind: Copy + TryFrom<i128> {
    /// The range, as Python would write it.
    const RANGE: &'static str;
}

impl IntKind for i64 {
    const RANGE: &'static str = "-2**63..2**63-1";
}
impl IntKind for i32 {
    const RANGE: &'static str = "-2**31..2**31-1";
}
impl IntKind for u32 {
    const RANGE: &'static str = "0..2**32-1";
}
impl IntKind for usize {
    const RANGE: &'static str = "0..2**64-1";
}

/// An `int` parameter that must fit `T`.
#[derive(Clone, Copy, Debug)]
pub struct Int<T>(pub T);

/// The message of an unnamed argument error; `errors.py` prefixes the parameter's name.
fn unnamed(py: Python<'_>, message: String) -> PyErr {
    let err = errors::invalid(py, message);
    let _ = err.value(py).setattr("_unnamed", true);
    err
}

fn not_a(kind: &str, obj: &Borrowed<'_, '_, PyAny>) -> PyErr {
    let type_name = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!("must be {kind}, not {type_name}"))
}

impl<'a, 'py, T: IntKind> FromPyObject<'a, 'py> for Int<T> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        extract_int(obj, None).map(Int)
    }
}

/// An `int` argument named `name` that must fit `T` (for a parameter whose meaning depends on
/// another argument, such as a counter operation's operands).
pub fn int<T: IntKind>(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<T> {
    extract_int(obj.as_borrowed(), Some(name))
}

fn extract_int<T: IntKind>(obj: Borrowed<'_, '_, PyAny>, name: Option<&str>) -> PyResult<T> {
    let py = obj.py();
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        let e = not_a("an int", &obj);
        return Err(match name {
            Some(n) => PyTypeError::new_err(format!("{n} {}", e.value(py))),
            None => e,
        });
    }
    let out_of_range = || {
        let shown = obj.str().map(|s| s.to_string()).unwrap_or_default();
        let message = format!("must be an int in {}, not {shown}", T::RANGE);
        match name {
            Some(n) => errors::invalid(py, format!("{n} {message}")),
            None => unnamed(py, message),
        }
    };
    match obj.extract::<i128>() {
        Ok(v) => T::try_from(v).map_err(|_| out_of_range()),
        Err(e) if e.is_instance_of::<PyOverflowError>(py) => Err(out_of_range()),
        Err(e) => Err(e),
    }
}

/// A `str` parameter: any text that is valid Unicode (no lone surrogates), as UTF-8.
#[derive(Clone, Debug)]
pub struct Text(pub String);

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.0
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Text {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        let s = obj.cast::<PyString>().map_err(|_| not_a("a str", &obj))?;
        match s.to_cow() {
            Ok(s) => Ok(Text(s.into_owned())),
            Err(e) if e.is_instance_of::<PyUnicodeEncodeError>(py) => {
                let shown = obj.repr().map(|r| r.to_string()).unwrap_or_default();
                Err(unnamed(
                    py,
                    format!("is not valid Unicode text (it has a lone surrogate): {shown}"),
                ))
            }
            Err(e) => Err(e),
        }
    }
}

/// A timeout in seconds, under the core's contract (`zkrecipes::timeout::from_secs_f64`):
/// `None` or `math.inf` waits without limit, 0 tries once, negative or NaN is
/// `InvalidArgumentError`, and a number too large to represent waits without limit.
#[derive(Clone, Copy, Debug)]
pub struct Timeout(pub Option<Duration>);

impl<'a, 'py> FromPyObject<'a, 'py> for Timeout {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        if obj.is_none() {
            return Ok(Timeout(None));
        }
        if obj.is_instance_of::<PyBool>()
            || !(obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>())
        {
            return Err(not_a("a number of seconds or None", &obj));
        }
        let seconds = match obj.extract::<f64>() {
            Ok(s) => s,
            // An int beyond f64: as large (or as negative) as infinity.
            Err(e) if e.is_instance_of::<PyOverflowError>(py) => {
                if obj.lt(0)? {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }
            }
            Err(e) => return Err(e),
        };
        zkrecipes::timeout::from_secs_f64(Some(seconds))
            .map(Timeout)
            .map_err(|e| errors::to_py(py, e))
    }
}

/// A duration in seconds that must be finite and >= 0 (a session timeout, a retry sleep):
/// `what` names it.
pub fn duration(py: Python<'_>, what: &str, seconds: f64) -> PyResult<Duration> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(errors::invalid(
            py,
            format!("{what} must be a finite number of seconds >= 0, not {seconds}"),
        ));
    }
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| errors::invalid(py, format!("{what} is too large: {seconds} s")))
}
