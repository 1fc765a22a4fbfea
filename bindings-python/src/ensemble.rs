//! Dynamic ensembles on a client, as module functions the Python `Client` calls
//! (`get_config`, `reconfig`, `current_connect_string`): configurations cross as tuples that
//! `zkrecipes.ensemble` turns into dataclasses.

use pyo3::prelude::*;
use zkrecipes::{EnsembleConfig, Reconfig};

use crate::args::Text;
use crate::bridge::Call;
use crate::client::PyClient;
use crate::errors;

/// `(id, host, quorum_port, election_port, role, client_host, client_port, client_address,
/// server_line)`.
type MemberTuple = (
    u64,
    String,
    u16,
    u16,
    &'static str,
    Option<String>,
    Option<u16>,
    Option<String>,
    String,
);

/// `(members, version, connect_string, data)`.
type ConfigTuple = (Vec<MemberTuple>, i64, String, String);

fn tuple(config: EnsembleConfig) -> ConfigTuple {
    let members = config
        .members
        .iter()
        .map(|m| {
            (
                m.id,
                m.host.clone(),
                m.quorum_port,
                m.election_port,
                m.role.name(),
                m.client_host.clone(),
                m.client_port,
                m.client_address(),
                m.server_line(),
            )
        })
        .collect();
    let connect_string = config.connect_string();
    (members, config.version, connect_string, config.data)
}

/// `client.get_config()`.
#[pyfunction]
pub fn get_config(py: Python<'_>, client: &PyClient) -> PyResult<Call> {
    let c = client.core(py)?;
    Ok(Call::value(async move { c.get_config().await.map(tuple) }))
}

/// `client.reconfig(joining, leaving, new_members, from_config)`: `new_members` None for an
/// incremental change; `from_config` -1 for any version.
#[pyfunction]
#[pyo3(signature = (client, joining, leaving, new_members, from_config))]
pub fn reconfig(
    py: Python<'_>,
    client: &PyClient,
    joining: Vec<Text>,
    leaving: Vec<u64>,
    new_members: Option<Vec<Text>>,
    from_config: i64,
) -> PyResult<Call> {
    let lines = |v: Vec<Text>| v.into_iter().map(String::from).collect::<Vec<_>>();
    let mut change =
        match new_members {
            None => Reconfig::incremental(),
            Some(m) if m.is_empty() => return Err(errors::invalid(
                py,
                "new_members is empty: an ensemble needs members (None for an incremental change)",
            )),
            Some(m) => Reconfig::new_members(lines(m)),
        };
    change = change.joining(lines(joining)).leaving(leaving);
    match from_config {
        -1 => {}
        v if v < 0 => {
            return Err(errors::invalid(
                py,
                format!("from_config is {v}: a configuration version (>= 0), or -1 for any"),
            ))
        }
        v => change = change.from_config(v),
    }
    let c = client.core(py)?;
    Ok(Call::value(
        async move { c.reconfig(change).await.map(tuple) },
    ))
}

/// `client.current_connect_string`.
#[pyfunction]
pub fn current_connect_string(py: Python<'_>, client: &PyClient) -> PyResult<String> {
    Ok(client.core(py)?.current_connect_string())
}
