//! The core's log records into Python's `logging`: logger `zkrecipes` and a child logger per
//! target (`zkrecipes::client::connection` -> `zkrecipes.client.connection`; the wire client's
//! `zookeeper_client` -> `zkrecipes.zookeeper_client`).
//!
//! Records arrive one at a time, in order, on the core's logging dispatcher thread
//! (`zkrecipes::log`), which takes the GIL to hand each to its logger. `zkrecipes` sets the
//! level from the `zkrecipes` logger's effective level (at import, at every client start, and
//! in `zkrecipes.set_log_level`); levels that are off cost nothing in the core.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;
use zkrecipes::log::{self, Level, Record};

use crate::args::Text;
use crate::bridge;
use crate::errors::IntoPyResult;

static LOGGING: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Python's level number for a core level (TRACE is 5, below DEBUG).
fn levelno(level: Level) -> u32 {
    match level {
        Level::Error => 40,
        Level::Warn => 30,
        Level::Info => 20,
        Level::Debug => 10,
        Level::Trace => 5,
    }
}

/// The Python logger name for a `tracing` target.
fn logger_name(target: &str) -> String {
    let dotted = target.replace("::", ".");
    if dotted == "zkrecipes" || dotted.starts_with("zkrecipes.") {
        dotted
    } else {
        format!("zkrecipes.{dotted}")
    }
}

fn emit(record: &Record) {
    let _ = bridge::attach(|py| {
        let sent = (|| -> PyResult<()> {
            let logging = LOGGING
                .get_or_try_init(py, || py.import("logging").map(|m| m.unbind()))?
                .bind(py);
            let logger = logging.call_method1("getLogger", (logger_name(&record.target),))?;
            // `%s` keeps a `%` in the message from being read as a format.
            logger.call_method1("log", (levelno(record.level), "%s", &record.message))?;
            Ok(())
        })();
        if let Err(e) = sent {
            e.write_unraisable(py, None);
        }
    });
}

/// Passes the core's records of `level` (`"ERROR"`, `"WARN"`, `"INFO"`, `"DEBUG"`, `"TRACE"`)
/// and more severe to Python's `logging`; `None` turns them off. The first call installs the
/// bridge.
#[pyfunction]
#[pyo3(signature = (level))]
pub fn set_log_level(py: Python<'_>, level: Option<Text>) -> PyResult<()> {
    let level = level.map(|l| Level::from_name(&l)).transpose().py_err(py)?;
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if INSTALLED.get().is_none() {
        log::set_logger(level, emit).py_err(py)?;
        let _ = INSTALLED.set(());
    } else {
        log::set_max_level(level);
    }
    Ok(())
}
