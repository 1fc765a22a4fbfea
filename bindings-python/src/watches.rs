//! Watch removal and connection waiting on a client, as module functions the Python `Client`
//! calls (`remove_watches`, `wait_for_state`, `max_request_bytes`).

use pyo3::prelude::*;
use zkrecipes::WatcherType;

use crate::args::{Text, Timeout};
use crate::bridge::Call;
use crate::client::PyClient;
use crate::errors::IntoPyResult;

/// `client.remove_watches(path, kind, local)`: `kind` is a WatcherType name.
#[pyfunction]
pub fn remove_watches(
    py: Python<'_>,
    client: &PyClient,
    path: Text,
    kind: Text,
    local: bool,
) -> PyResult<Call> {
    let kind = WatcherType::from_name(&kind).py_err(py)?;
    let c = client.core(py)?;
    Ok(Call::unit(async move {
        c.remove_watches(&path, kind, local).await
    }))
}

/// Curator's blockUntilConnected(timeout): True once connected, False when the time ran out.
#[pyfunction]
#[pyo3(signature = (client, timeout = Timeout(None)))]
pub fn wait_for_state(py: Python<'_>, client: &PyClient, timeout: Timeout) -> PyResult<Call> {
    let c = client.core(py)?;
    Ok(Call::value(async move {
        c.block_until_connected(timeout.0).await
    }))
}

/// The largest request the client sends, in bytes.
#[pyfunction]
pub fn max_request_bytes(py: Python<'_>, client: &PyClient) -> PyResult<usize> {
    Ok(client.core(py)?.max_request_bytes())
}
