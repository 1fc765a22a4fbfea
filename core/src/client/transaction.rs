//! [`Transaction`]: Curator's `transaction()` — several writes and checks, all or nothing.

use std::time::Duration;

use super::types::{check_ttl, Acl, CreateMode, Op, OpResult};
use super::Client;
use crate::{path, Error, Result};

/// Operations applied all together or not at all (ZooKeeper's `multi`; Curator's
/// `CuratorFramework.transaction()`). Build with [`Client::transaction`], commit once.
///
/// A failed commit applied nothing; its error is the failing operation's (`NoNode`,
/// `BadVersion`, `NodeExists`, ...) and [`Error::failed_op`] gives that operation's index. A
/// reply lost with the connection is `OutcomeUnknown`: the transaction may or may not have
/// been applied, and it is never resent blindly (a resend of an applied transaction of creates
/// would fail with `NodeExists` and hide that it succeeded). Paths are relative to the
/// namespace; parents are not created.
#[derive(Clone, Debug)]
#[must_use = "a transaction does nothing until committed"]
pub struct Transaction<'c> {
    client: &'c Client,
    ops: Vec<Op>,
    invalid: Option<Error>,
}

impl Client {
    /// A new, empty transaction.
    pub fn transaction(&self) -> Transaction<'_> {
        Transaction {
            client: self,
            ops: Vec::new(),
            invalid: None,
        }
    }
}

impl<'c> Transaction<'c> {
    fn push(mut self, op: Op) -> Self {
        if self.invalid.is_none() {
            if let Err(e) = check(&op) {
                let index = self.ops.len();
                let e = e.context(format!("transaction operation {index} ({})", op.name()));
                let detail = e.detail().clone().with_op_index(index);
                self.invalid = Some(Error::new(e.kind(), detail));
            }
        }
        self.ops.push(op);
        self
    }

    /// Creates `path` with `data` and `mode`.
    pub fn create(self, path: &str, data: &[u8], mode: CreateMode) -> Self {
        self.push(Op::Create {
            path: path.to_string(),
            data: data.to_vec(),
            mode,
            ttl: None,
            acl: None,
        })
    }

    /// Creates `path` with its own ACL (instead of the client's provider's).
    pub fn create_with_acl(self, path: &str, data: &[u8], mode: CreateMode, acl: Vec<Acl>) -> Self {
        self.push(Op::Create {
            path: path.to_string(),
            data: data.to_vec(),
            mode,
            ttl: None,
            acl: Some(acl),
        })
    }

    /// Creates `path` with a TTL mode ([`CreateMode::PersistentWithTtl`] or
    /// [`CreateMode::PersistentSequentialWithTtl`]) and its `ttl`.
    pub fn create_with_ttl(self, path: &str, data: &[u8], mode: CreateMode, ttl: Duration) -> Self {
        self.push(Op::Create {
            path: path.to_string(),
            data: data.to_vec(),
            mode,
            ttl: Some(ttl),
            acl: None,
        })
    }

    /// Deletes `path`, at `version` if given.
    pub fn delete(self, path: &str, version: Option<i32>) -> Self {
        self.push(Op::Delete {
            path: path.to_string(),
            version,
        })
    }

    /// Sets `path`'s data, at `version` if given.
    pub fn set_data(self, path: &str, data: &[u8], version: Option<i32>) -> Self {
        self.push(Op::SetData {
            path: path.to_string(),
            data: data.to_vec(),
            version,
        })
    }

    /// Requires `path` to be at data `version`.
    pub fn check(self, path: &str, version: i32) -> Self {
        self.push(Op::Check {
            path: path.to_string(),
            version,
        })
    }

    /// Adds an operation built elsewhere.
    pub fn op(self, op: Op) -> Self {
        self.push(op)
    }

    /// The operations so far.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// Commits: every operation applied, in order, or none. One result per operation.
    pub async fn commit(self) -> Result<Vec<OpResult>> {
        if let Some(e) = self.invalid {
            return Err(e);
        }
        if self.client.is_closed() {
            return Err(Error::closed());
        }
        if self.ops.is_empty() {
            return Ok(Vec::new());
        }
        // Waiting for a connection sends nothing: the retry policy applies to that part only.
        let session = self.client.retry(|s| async move { Ok(s) }).await?;
        match session.multi(&self.ops).await {
            Err(e) if e.is_retryable() && self.ops.iter().any(Op::writes) => Err(Error::OutcomeUnknown(
                format!(
                    "the reply of a transaction of {} operations was lost ({}); it may or may not have been applied, and was not resent",
                    self.ops.len(),
                    e.message()
                )
                .into(),
            )),
            other => other,
        }
    }

    /// [`commit`](Self::commit) for the blocking face.
    pub fn commit_blocking(self) -> Result<Vec<OpResult>> {
        crate::runtime::try_block_on(self.commit())?
    }
}

fn check(op: &Op) -> Result<()> {
    match op {
        Op::Create {
            path,
            mode,
            ttl,
            acl,
            ..
        } => {
            check_ttl(path, *mode, *ttl)?;
            if acl.as_ref().is_some_and(Vec::is_empty) {
                return Err(Error::invalid(format!(
                    "create {path}: the ACL must not be empty"
                )));
            }
            if mode.is_sequential() {
                path::validate_sequential_path(path)?;
            } else {
                path::validate_path(path)?;
            }
            if path == "/" {
                return Err(Error::invalid("cannot create the root node"));
            }
        }
        Op::Delete { path, version } | Op::SetData { path, version, .. } => {
            path::validate_path(path)?;
            if matches!(version, Some(v) if *v < -1) {
                return Err(Error::invalid(format!("version {version:?} is negative")));
            }
        }
        Op::Check { path, version } => {
            path::validate_path(path)?;
            if *version < -1 {
                return Err(Error::invalid(format!("version {version} is negative")));
            }
        }
    }
    Ok(())
}
