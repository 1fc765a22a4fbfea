//! Caches: one native class over the core's `Cache` (CuratorCache, NodeCache,
//! PathChildrenCache and TreeCache are Python classes choosing its scope), `ChildData`, and
//! events handed to a Python listener as a tuple.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zkrecipes::cache::{
    Cache, CacheEvent, CacheOptions, ChildData, CuratorCache, NodeCache, PathChildrenCache,
    StartMode, TreeCache,
};

use crate::args::{Int, Text, Timeout};
use crate::bridge::{self, Call};
use crate::client::{PyClient, PyStat};
use crate::errors::{self, IntoPyResult};
use crate::local::Local;
use zkrecipes::client::{PersistentWatcher, WatchEvent};

/// A cached node (Curator's ChildData): its path, data (``None`` for a stats-only cache) and
/// stat. Immutable.
#[pyclass(frozen, eq, module = "zkrecipes", name = "ChildData")]
#[derive(Clone, PartialEq)]
pub struct PyChildData {
    path: String,
    data: Option<Arc<[u8]>>,
    stat: PyStat,
}

#[pymethods]
impl PyChildData {
    /// The node's path (without the client's namespace).
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Its data, or None if the cache keeps stats only.
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.data.as_deref().map(|d| PyBytes::new(py, d))
    }

    /// Its stat.
    #[getter]
    fn stat(&self) -> PyStat {
        self.stat.clone()
    }

    fn __repr__(&self) -> String {
        let data = match &self.data {
            None => "None".to_string(),
            Some(d) if d.len() <= 32 => {
                format!("{} bytes: {:?}", d.len(), String::from_utf8_lossy(d))
            }
            Some(d) => format!("{} bytes", d.len()),
        };
        format!("ChildData(path={:?}, data={data})", self.path)
    }
}

impl From<ChildData> for PyChildData {
    fn from(c: ChildData) -> Self {
        PyChildData {
            path: c.path,
            data: c.data,
            stat: c.stat.into(),
        }
    }
}

fn child(py: Python<'_>, c: &Option<ChildData>) -> PyResult<Py<PyAny>> {
    match c {
        None => Ok(py.None()),
        Some(c) => Ok(Py::new(py, PyChildData::from(c.clone()))?.into_any()),
    }
}

/// The native cache.
#[pyclass(frozen, module = "zkrecipes._native", name = "Cache")]
pub struct PyCache {
    inner: Local<Arc<Cache>>,
}

impl PyCache {
    fn c(&self, py: Python<'_>) -> PyResult<Arc<Cache>> {
        self.inner.get(py, "cache").cloned()
    }
}

#[pymethods]
impl PyCache {
    /// `view` is "curator", "node", "path_children" or "tree"; `start_mode` a StartMode name
    /// (path_children only); `path_filter(path) -> bool` runs on a library thread.
    #[new]
    #[pyo3(signature = (client, path, view, data = true, max_depth = None, path_filter = None, start_mode = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        view: Text,
        data: bool,
        max_depth: Option<Int<u32>>,
        path_filter: Option<Py<PyAny>>,
        start_mode: Option<Text>,
    ) -> PyResult<PyCache> {
        let c = client.core(py)?;
        let depth = max_depth.map(|d| d.0 as usize);
        let cache: Cache = match &*view {
            "node" => NodeCache::new(&c, &path).py_err(py)?.into(),
            "path_children" => {
                let mode = match start_mode {
                    None => StartMode::Normal,
                    Some(m) => StartMode::from_name(&m).py_err(py)?,
                };
                PathChildrenCache::new(&c, &path, data, mode)
                    .py_err(py)?
                    .into()
            }
            "tree" => TreeCache::new(&c, &path, depth).py_err(py)?.into(),
            "curator" => {
                let mut opts = CacheOptions {
                    data,
                    max_depth: depth,
                    ..CacheOptions::default()
                };
                if let Some(f) = path_filter {
                    opts = opts.path_filter(move |p| {
                        bridge::attach(|py| {
                            f.call1(py, (p,))
                                .and_then(|r| r.is_truthy(py))
                                .unwrap_or_else(|e| {
                                    e.write_unraisable(py, Some(f.bind(py)));
                                    true
                                })
                        })
                        .unwrap_or(true)
                    });
                }
                CuratorCache::with_options(&c, &path, opts)
                    .py_err(py)?
                    .into()
            }
            other => return Err(errors::invalid(py, format!("unknown cache view {other:?}"))),
        };
        Ok(PyCache {
            inner: Local::new(Arc::new(cache)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<Call> {
        let c = self.c(py)?;
        Ok(Call::unit(async move { c.start().await }))
    }

    #[pyo3(signature = (timeout = Timeout(None)))]
    fn await_initialized(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let c = self.c(py)?;
        Ok(Call::value(
            async move { c.await_initialized(timeout.0).await },
        ))
    }

    #[pyo3(signature = (zxid, timeout = Timeout(None)))]
    fn await_zxid(&self, py: Python<'_>, zxid: Int<i64>, timeout: Timeout) -> PyResult<Call> {
        let c = self.c(py)?;
        Ok(Call::value(
            async move { c.await_zxid(zxid.0, timeout.0).await },
        ))
    }

    fn get(&self, py: Python<'_>, path: Text) -> PyResult<Option<PyChildData>> {
        Ok(self.c(py)?.get(&path).map(Into::into))
    }

    fn size(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.c(py)?.size())
    }

    /// The snapshot as a list sorted by path.
    fn snapshot(&self, py: Python<'_>) -> PyResult<Vec<PyChildData>> {
        Ok(self.c(py)?.snapshot().iter().map(Into::into).collect())
    }

    fn is_initialized(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.c(py)?.is_initialized())
    }

    fn resyncs(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.c(py)?.resyncs())
    }

    /// `callback(type, path, old, new, resync)` for each event, on the cache's dispatcher
    /// thread, one at a time, in order; with `replay`, the snapshot first.
    #[pyo3(signature = (callback, replay = false))]
    fn listen(&self, py: Python<'_>, callback: Py<PyAny>, replay: bool) -> PyResult<u64> {
        let c = self.c(py)?;
        let f = move |e: &CacheEvent| {
            let _ = bridge::attach(|py| {
                let args = (|| -> PyResult<_> {
                    Ok((
                        e.kind.name(),
                        e.path.as_str(),
                        child(py, &e.old)?,
                        child(py, &e.new)?,
                        e.resync,
                    ))
                })();
                match args {
                    Ok(args) => bridge::invoke(&callback, args),
                    Err(err) => err.write_unraisable(py, None),
                }
            });
        };
        Ok(if replay {
            c.listen_with_replay(f)
        } else {
            c.listen(f)
        })
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.c(py)?.remove_listener(id).py_err(py)
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let c = self.c(py)?;
        py.detach(move || c.close());
        Ok(())
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.c(py)?.path().to_string())
    }
}

/// The native persistent watcher (Curator's PersistentWatcher).
#[pyclass(frozen, module = "zkrecipes._native", name = "PersistentWatcher")]
pub struct PyPersistentWatcher {
    inner: Local<Arc<PersistentWatcher>>,
}

impl PyPersistentWatcher {
    fn w(&self, py: Python<'_>) -> PyResult<Arc<PersistentWatcher>> {
        self.inner.get(py, "persistent watcher").cloned()
    }
}

#[pymethods]
impl PyPersistentWatcher {
    #[new]
    fn new(py: Python<'_>, client: &PyClient, path: Text, recursive: bool) -> PyResult<Self> {
        let c = client.core(py)?;
        let w = PersistentWatcher::new(&c, &path, recursive).py_err(py)?;
        Ok(PyPersistentWatcher {
            inner: Local::new(Arc::new(w)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<Call> {
        let w = self.w(py)?;
        Ok(Call::unit(async move { w.start().await }))
    }

    fn is_started(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.w(py)?.is_started())
    }

    /// `callback(type, path)` for each event (`path` None for connection events), on the
    /// watcher's dispatcher thread, one at a time, in order.
    fn listen(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        Ok(self.w(py)?.listen(move |e: &WatchEvent| {
            bridge::invoke(&callback, (e.name(), e.path()));
        }))
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.w(py)?.remove_listener(id).py_err(py)
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let w = self.w(py)?;
        py.detach(move || w.close());
        Ok(())
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.w(py)?.path().to_string())
    }

    #[getter]
    fn recursive(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.w(py)?.recursive())
    }
}
