//! Nodes and membership: `PersistentNode`, `PersistentTtlNode`, `GroupMember`, and the
//! client's transactions.

use std::collections::BTreeMap;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use zkrecipes::client::{Op, OpResult};
use zkrecipes::nodes::{GroupMember, PersistentNode, PersistentTtlNode};
use zkrecipes::CreateMode;

use crate::args::{duration, Int, Text, Timeout};
use crate::bridge::{self, Call};
use crate::client::{acl_list, AclSpec, PyClient, PyStat};
use crate::errors::{self, IntoPyResult};
use crate::local::Local;

/// A TTL in seconds for the TTL modes (None: no TTL).
fn ttl_arg(py: Python<'_>, ttl: Option<f64>) -> PyResult<Option<std::time::Duration>> {
    ttl.map(|t| duration(py, "ttl", t)).transpose()
}

/// The native PersistentNode.
#[pyclass(frozen, module = "zkrecipes._native", name = "PersistentNode")]
pub struct PyPersistentNode {
    inner: Local<Arc<PersistentNode>>,
}

impl PyPersistentNode {
    fn n(&self, py: Python<'_>) -> PyResult<Arc<PersistentNode>> {
        self.inner.get(py, "persistent node").cloned()
    }
}

#[pymethods]
impl PyPersistentNode {
    #[new]
    #[pyo3(signature = (client, path, mode, data, protected, ttl))]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        mode: Text,
        data: Vec<u8>,
        protected: bool,
        ttl: Option<f64>,
    ) -> PyResult<PyPersistentNode> {
        let c = client.core(py)?;
        let mode = CreateMode::from_name(&mode).py_err(py)?;
        let node = match ttl_arg(py, ttl)? {
            Some(t) => PersistentNode::new_with_ttl(&c, &path, mode, t, &data, protected),
            None => PersistentNode::new(&c, &path, mode, &data, protected),
        }
        .py_err(py)?;
        Ok(PyPersistentNode {
            inner: Local::new(Arc::new(node)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<()> {
        self.n(py)?.start().py_err(py)
    }

    fn wait_for_initial_create(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let n = self.n(py)?;
        Ok(Call::value(async move {
            n.wait_for_initial_create(timeout.0).await
        }))
    }

    fn set_data(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        self.n(py)?.set_data(&data).py_err(py)
    }

    /// `callback(kind, path)` with kind "REGISTERED", "UNREGISTERED" or "CONFLICT", on the
    /// node's dispatcher thread, one at a time, in order.
    fn add_listener(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        Ok(self
            .n(py)?
            .add_listener(move |e: &zkrecipes::nodes::PersistentNodeEvent| {
                bridge::invoke(&callback, (e.kind.name(), e.path.clone()))
            }))
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.n(py)?.remove_listener(id).py_err(py)
    }

    fn close(&self, py: Python<'_>) -> PyResult<Call> {
        let n = self.n(py)?;
        Ok(Call::unit(async move { n.close().await }))
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.n(py)?.path().to_string())
    }

    #[getter]
    fn actual_path(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.n(py)?.actual_path())
    }

    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.n(py)?.data()))
    }

    #[getter]
    fn registered(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.n(py)?.is_registered())
    }
}

/// The native PersistentTtlNode.
#[pyclass(frozen, module = "zkrecipes._native", name = "PersistentTtlNode")]
pub struct PyPersistentTtlNode {
    inner: Local<Arc<PersistentTtlNode>>,
}

impl PyPersistentTtlNode {
    fn n(&self, py: Python<'_>) -> PyResult<Arc<PersistentTtlNode>> {
        self.inner.get(py, "persistent TTL node").cloned()
    }
}

#[pymethods]
impl PyPersistentTtlNode {
    #[new]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        ttl: f64,
        data: Vec<u8>,
    ) -> PyResult<PyPersistentTtlNode> {
        let c = client.core(py)?;
        let ttl = duration(py, "ttl", ttl)?;
        let node = PersistentTtlNode::new(&c, &path, ttl, &data).py_err(py)?;
        Ok(PyPersistentTtlNode {
            inner: Local::new(Arc::new(node)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<()> {
        self.n(py)?.start().py_err(py)
    }

    fn wait_for_initial_create(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let n = self.n(py)?;
        Ok(Call::value(async move {
            n.wait_for_initial_create(timeout.0).await
        }))
    }

    fn set_data(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        self.n(py)?.set_data(&data).py_err(py)
    }

    fn close(&self, py: Python<'_>) -> PyResult<Call> {
        let n = self.n(py)?;
        Ok(Call::unit(async move { n.close().await }))
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.n(py)?.path().to_string())
    }

    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.n(py)?.data()))
    }
}

fn members_dict(py: Python<'_>, members: &BTreeMap<String, Vec<u8>>) -> PyResult<Py<PyDict>> {
    let d = PyDict::new(py);
    for (id, payload) in members {
        d.set_item(id, PyBytes::new(py, payload))?;
    }
    Ok(d.unbind())
}

/// The native GroupMember.
#[pyclass(frozen, module = "zkrecipes._native", name = "GroupMember")]
pub struct PyGroupMember {
    inner: Local<Arc<GroupMember>>,
}

impl PyGroupMember {
    fn m(&self, py: Python<'_>) -> PyResult<Arc<GroupMember>> {
        self.inner.get(py, "group member").cloned()
    }
}

#[pymethods]
impl PyGroupMember {
    #[new]
    fn new(
        py: Python<'_>,
        client: &PyClient,
        path: Text,
        member_id: Text,
        payload: Vec<u8>,
    ) -> PyResult<PyGroupMember> {
        let c = client.core(py)?;
        let m = GroupMember::new(&c, &path, &member_id, &payload).py_err(py)?;
        Ok(PyGroupMember {
            inner: Local::new(Arc::new(m)),
        })
    }

    fn start(&self, py: Python<'_>) -> PyResult<Call> {
        let m = self.m(py)?;
        Ok(Call::unit(async move { m.start().await }))
    }

    fn current_members(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        members_dict(py, &self.m(py)?.current_members())
    }

    fn set_this_data(&self, py: Python<'_>, payload: Vec<u8>) -> PyResult<()> {
        self.m(py)?.set_this_data(&payload).py_err(py)
    }

    /// `callback(members)` with each new membership (dict id → bytes), on the member's
    /// dispatcher thread, one at a time, in order.
    fn add_listener(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<u64> {
        Ok(self.m(py)?.add_listener(move |members| {
            let _ = bridge::attach(|py| match members_dict(py, members) {
                Ok(d) => bridge::invoke(&callback, (d,)),
                Err(e) => e.write_unraisable(py, None),
            });
        }))
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.m(py)?.remove_listener(id).py_err(py)
    }

    fn close(&self, py: Python<'_>) -> PyResult<Call> {
        let m = self.m(py)?;
        Ok(Call::unit(async move { m.close().await }))
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.m(py)?.path().to_string())
    }

    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.m(py)?.id().to_string())
    }

    #[getter]
    fn actual_path(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.m(py)?.node().actual_path())
    }
}

/// One operation of a transaction as the Python builder hands it over:
/// `(kind, path, data, mode, version, ttl, acl)` with kind "create", "delete", "set_data",
/// "check"; `acl` (a create's own ACL) is None for the client's.
type OpSpec = (
    Text,
    Text,
    Vec<u8>,
    Text,
    Int<i64>,
    Option<f64>,
    Option<Vec<AclSpec>>,
);

fn version(py: Python<'_>, v: i64) -> PyResult<Option<i32>> {
    match v {
        -1 => Ok(None),
        v if (0..=i32::MAX as i64).contains(&v) => Ok(Some(v as i32)),
        v => Err(errors::invalid(
            py,
            format!("version must be -1 (any) or 0..2**31-1, not {v}"),
        )),
    }
}

fn op(py: Python<'_>, (kind, path, data, mode, v, ttl, acl): OpSpec) -> PyResult<Op> {
    let path = path.0;
    Ok(match kind.0.as_str() {
        "create" => Op::Create {
            path,
            data,
            mode: CreateMode::from_name(&mode).py_err(py)?,
            ttl: ttl_arg(py, ttl)?,
            acl: acl.map(|a| acl_list(py, "acl", a)).transpose()?,
        },
        "delete" => Op::Delete {
            path,
            version: version(py, v.0)?,
        },
        "set_data" => Op::SetData {
            path,
            data,
            version: version(py, v.0)?,
        },
        "check" => Op::Check {
            path,
            version: i32::try_from(v.0)
                .map_err(|_| errors::invalid(py, format!("version {} is out of range", v.0)))?,
        },
        other => return Err(errors::invalid(py, format!("unknown operation {other:?}"))),
    })
}

/// Commits `ops` on `client` as one transaction; a `Call` of a list of
/// `(kind, path or None, Stat or None)`, one per operation.
#[pyfunction]
pub fn commit_transaction(py: Python<'_>, client: &PyClient, ops: Vec<OpSpec>) -> PyResult<Call> {
    let c = client.core(py)?;
    let ops = ops
        .into_iter()
        .map(|o| op(py, o))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Call::new(
        async move {
            let txn = ops.into_iter().fold(c.transaction(), |t, op| t.op(op));
            txn.commit().await
        },
        |py, results: Vec<OpResult>| {
            let list: Vec<(&str, Option<String>, Option<PyStat>)> = results
                .into_iter()
                .map(|r| match r {
                    OpResult::Created { path, stat } => ("create", Some(path), Some(stat.into())),
                    OpResult::Deleted => ("delete", None, None),
                    OpResult::DataSet { stat } => ("set_data", None, Some(stat.into())),
                    OpResult::Checked => ("check", None, None),
                })
                .collect();
            bridge::obj(py, list)
        },
    ))
}
