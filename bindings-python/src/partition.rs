//! kazoo's recipes: `SetPartitioner`, and the leases (`non_blocking_lease`,
//! `multi_non_blocking_lease`), on kazoo's node layout.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pyo3::prelude::*;
use zkrecipes::partition::{
    LeaseOptions, MultiNonBlockingLease, NonBlockingLease, PartitionState, PartitionerOptions,
    SetPartitioner,
};

use crate::args::{duration, Int, Text, Timeout};
use crate::bridge::{self, Call};
use crate::client::PyClient;
use crate::errors::{self, IntoPyResult};
use crate::local::Local;

/// The native SetPartitioner.
#[pyclass(frozen, module = "zkrecipes._native", name = "SetPartitioner")]
pub struct PySetPartitioner {
    inner: Local<Arc<SetPartitioner>>,
}

impl PySetPartitioner {
    fn p(&self, py: Python<'_>) -> PyResult<Arc<SetPartitioner>> {
        self.inner.get(py, "set partitioner").cloned()
    }
}

fn state_arg(py: Python<'_>, name: &str) -> PyResult<PartitionState> {
    PartitionState::from_name(name).ok_or_else(|| {
        errors::invalid(
            py,
            format!("{name:?} is not a partition state (ALLOCATING, ACQUIRED, RELEASE, FAILURE)"),
        )
    })
}

/// A positive number of seconds.
fn positive(py: Python<'_>, what: &str, seconds: f64) -> PyResult<Duration> {
    let d = duration(py, what, seconds)?;
    if d.is_zero() {
        return Err(errors::invalid(
            py,
            format!("{what} must be more than 0 seconds"),
        ));
    }
    Ok(d)
}

#[pymethods]
impl PySetPartitioner {
    /// `partition_func`: kazoo's, `(identifier, members, set) -> list of str` (zkrecipes'
    /// wrapper makes the answer a list), called with the GIL on the library's blocking pool.
    #[new]
    #[pyo3(signature = (client, path, partitions, identifier, time_boundary, max_reaction_time, partition_func = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        partitions: Vec<Text>,
        identifier: Option<Text>,
        time_boundary: f64,
        max_reaction_time: f64,
        partition_func: Option<Py<PyAny>>,
    ) -> PyResult<PySetPartitioner> {
        let c = client.core(py)?;
        let mut options = PartitionerOptions {
            identifier: identifier.map(String::from),
            time_boundary: positive(py, "time_boundary", time_boundary)?,
            max_reaction_time: positive(py, "max_reaction_time", max_reaction_time)?,
            partition_func: None,
        };
        if let Some(func) = partition_func {
            options = options.partition_func(move |me, members, set| {
                bridge::attach(|py| {
                    let failed = |e: String| {
                        zkrecipes::Error::InvalidArgument(
                            format!("partition_func failed: {e}").into(),
                        )
                    };
                    let answer = func
                        .call1(py, (me, members.to_vec(), set.to_vec()))
                        .map_err(|e| failed(e.to_string()))?;
                    answer
                        .extract::<Vec<String>>(py)
                        .map_err(|e| failed(format!("expected a list of partition names ({e})")))
                })
                .unwrap_or_else(|| {
                    Err(zkrecipes::Error::Closed(
                        "partition_func: the Python interpreter is exiting".into(),
                    ))
                })
            });
        }
        let set: Vec<String> = partitions.into_iter().map(String::from).collect();
        let p = SetPartitioner::new(&c, &path, &set, options).py_err(py)?;
        Ok(PySetPartitioner {
            inner: Local::new(Arc::new(p)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<Call> {
        let p = self.p(py)?;
        Ok(Call::unit(async move { p.start().await }))
    }

    /// (state name, partitions) in one reading.
    fn snapshot(&self, py: Python<'_>) -> PyResult<(&'static str, Vec<String>)> {
        let (state, parts) = self.p(py)?.snapshot();
        Ok((state.name(), parts))
    }

    #[getter]
    fn state(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(self.p(py)?.state().name())
    }

    #[getter]
    fn identifier(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.p(py)?.identifier().to_string())
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.p(py)?.path().to_string())
    }

    fn wait_for_acquire(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let p = self.p(py)?;
        Ok(Call::value(
            async move { p.wait_for_acquire(timeout.0).await },
        ))
    }

    fn wait_for_change(&self, py: Python<'_>, seen: Text, timeout: Timeout) -> PyResult<Call> {
        let p = self.p(py)?;
        let seen = state_arg(py, &seen)?;
        Ok(Call::value(async move {
            Ok(p.wait_for_change(seen, timeout.0).await.name())
        }))
    }

    fn release_set(&self, py: Python<'_>) -> PyResult<Call> {
        let p = self.p(py)?;
        Ok(Call::unit(async move { p.release_set().await }))
    }

    fn finish(&self, py: Python<'_>) -> PyResult<Call> {
        let p = self.p(py)?;
        Ok(Call::unit(async move { p.finish().await }))
    }

    /// `callback(state_name)` with each new state, on the partitioner's dispatcher thread, one
    /// at a time, in order.
    fn add_listener(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        Ok(self
            .p(py)?
            .add_listener(move |state| bridge::invoke(&callback, (state.name(),))))
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.p(py)?.remove_listener(id).py_err(py)
    }
}

fn lease_options(
    py: Python<'_>,
    identifier: Option<Text>,
    now: Option<f64>,
    timeout: Timeout,
) -> PyResult<LeaseOptions> {
    let now = match now {
        Some(s) if !s.is_finite() || s < 0.0 => {
            return Err(errors::invalid(
                py,
                format!("utcnow() must be a time after 1970, not {s} s since then"),
            ))
        }
        Some(s) => Some(UNIX_EPOCH + Duration::from_secs_f64(s)),
        None => None,
    };
    Ok(LeaseOptions {
        identifier: identifier.map(String::from),
        now,
        lock_timeout: timeout.0,
    })
}

fn unix_seconds(t: Option<SystemTime>) -> Option<f64> {
    t.and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64())
}

/// kazoo's NonBlockingLease: `(obtained, end as Unix seconds or None)`.
#[pyfunction]
#[pyo3(signature = (client, path, duration_s, identifier, now, timeout))]
pub fn non_blocking_lease(
    py: Python<'_>,
    client: &PyClient,
    path: Text,
    duration_s: f64,
    identifier: Option<Text>,
    now: Option<f64>,
    timeout: Timeout,
) -> PyResult<Call> {
    let c = client.core(py)?;
    let d = duration(py, "duration", duration_s)?;
    let options = lease_options(py, identifier, now, timeout)?;
    Ok(Call::value(async move {
        let l = NonBlockingLease::obtain(&c, &path, d, options).await?;
        Ok((l.obtained(), unix_seconds(l.end())))
    }))
}

/// kazoo's MultiNonBlockingLease: `(obtained, index or None, end as Unix seconds or None)`.
#[pyfunction]
#[pyo3(signature = (client, count, path, duration_s, identifier, now, timeout))]
#[allow(clippy::too_many_arguments)]
pub fn multi_non_blocking_lease(
    py: Python<'_>,
    client: &PyClient,
    count: Int<u32>,
    path: Text,
    duration_s: f64,
    identifier: Option<Text>,
    now: Option<f64>,
    timeout: Timeout,
) -> PyResult<Call> {
    let c = client.core(py)?;
    let d = duration(py, "duration", duration_s)?;
    let options = lease_options(py, identifier, now, timeout)?;
    Ok(Call::value(async move {
        let l = MultiNonBlockingLease::obtain(&c, count.0, &path, d, options).await?;
        Ok((
            l.obtained(),
            l.index(),
            unix_seconds(l.lease().and_then(|l| l.end())),
        ))
    }))
}

/// The state names, in the core's order.
pub fn states() -> Vec<&'static str> {
    PartitionState::ALL.iter().map(|s| s.name()).collect()
}
