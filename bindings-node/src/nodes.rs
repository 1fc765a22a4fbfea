//! Nodes and membership: `NativePersistentNode`, `NativePersistentTtlNode`,
//! `NativeGroupMember`, and the client operations they come with (create with a TTL,
//! persistent parents or compression; compressed reads and writes; transactions).

use std::collections::BTreeMap;
use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, Object};
use napi::Env;
use napi_derive::napi;
use zkrecipes::client::{CreateOptions, Op, OpResult};
use zkrecipes::nodes::{GroupMember, PersistentNode, PersistentNodeEventKind, PersistentTtlNode};
use zkrecipes::CreateMode;

use crate::args;
use crate::boundary::{promise, promise_on, promise_timed, sync};
use crate::client::{acl_list, AclOptions, NativeClient};
use crate::error::CoreResult;
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

/// A TTL in milliseconds for the TTL modes (`undefined`: none).
fn ttl(ttl_ms: Option<f64>) -> CoreResult<Option<std::time::Duration>> {
    ttl_ms
        .map(|t| args::positive_duration("ttlMs", t))
        .transpose()
}

/// Options of `createEx` (what `create` forwards when it has more than mode, createParents and
/// protected).
#[napi(object)]
pub struct CreateExOptions {
    /// The create mode's name.
    pub mode: String,
    /// Container parents.
    pub create_parents: bool,
    /// Persistent parents (wins over `create_parents`).
    pub persistent_parents: bool,
    /// Curator's protected mode.
    pub protected: bool,
    /// Curator's GZIP compression.
    pub compressed: bool,
    /// The TTL of the TTL modes, in milliseconds.
    pub ttl_ms: Option<f64>,
    /// The node's own ACL (instead of the client's provider's).
    pub acl: Option<Vec<crate::client::AclOptions>>,
}

/// Creates a node with every option; resolves to its actual path.
#[napi]
pub fn create_ex<'env>(
    env: &'env Env,
    client: &NativeClient,
    path: String,
    data: Option<Buffer>,
    options: CreateExOptions,
) -> napi::Result<Object<'env>> {
    promise(env, || {
        let mut opts = CreateOptions::new(CreateMode::from_name(&options.mode)?);
        opts.create_parents = options.create_parents;
        opts.persistent_parents = options.persistent_parents;
        opts.protected = options.protected;
        opts.compressed = options.compressed;
        opts.ttl = ttl(options.ttl_ms)?;
        let data = data.map(|b| b.to_vec()).unwrap_or_default();
        let acl = options.acl.map(crate::client::acl_list).transpose()?;
        let c = client.inner.clone();
        Ok(async move {
            let created = match acl {
                Some(acl) => c.create_with_acl(&path, &data, opts, &acl).await?,
                None => c.create(&path, &data, opts).await?,
            };
            Ok(Out::Str(created.path))
        })
    })
}

/// Resolves to `{ data, stat }` of data stored compressed (Curator's GZIP), decompressed.
#[napi]
pub fn get_data_decompressed<'env>(
    env: &'env Env,
    client: &NativeClient,
    path: String,
) -> napi::Result<Object<'env>> {
    promise_on(env, &client.inner, |c| async move {
        let (data, stat) = c.get_data_decompressed(&path).await?;
        Ok(Out::Object(vec![
            ("data", Out::Bytes(data)),
            ("stat", Out::stat(&stat)),
        ]))
    })
}

/// Sets data stored compressed (at `version` if given); resolves to the new stat.
#[napi]
pub fn set_data_compressed<'env>(
    env: &'env Env,
    client: &NativeClient,
    path: String,
    data: Buffer,
    version: Option<i32>,
) -> napi::Result<Object<'env>> {
    promise(env, || {
        // Copied on the JS thread: the Buffer is JS memory.
        let data = data.to_vec();
        let c = client.inner.clone();
        Ok(async move {
            Ok(Out::stat(
                &c.set_data_compressed(&path, &data, version).await?,
            ))
        })
    })
}

/// One operation of a transaction, as `lib/nodes.js` hands it over.
#[napi(object)]
pub struct TransactionOp {
    /// `'create'`, `'delete'`, `'setData'` or `'check'`.
    pub op: String,
    /// The node.
    pub path: String,
    /// The data of a create or setData.
    pub data: Option<Buffer>,
    /// The mode of a create.
    pub mode: Option<String>,
    /// The version (-1: any; required for a check).
    pub version: Option<i32>,
    /// The TTL of a create of a TTL mode, in milliseconds.
    pub ttl_ms: Option<f64>,
    /// A create's own ACL (none: the client's).
    pub acl: Option<Vec<AclOptions>>,
}

fn op(o: TransactionOp) -> CoreResult<Op> {
    let data = o.data.map(|b| b.to_vec()).unwrap_or_default();
    let version = match o.version {
        None | Some(-1) => None,
        v => v,
    };
    Ok(match o.op.as_str() {
        "create" => Op::Create {
            path: o.path,
            data,
            mode: CreateMode::from_name(o.mode.as_deref().unwrap_or("PERSISTENT"))?,
            ttl: ttl(o.ttl_ms)?,
            acl: o.acl.map(acl_list).transpose()?,
        },
        "delete" => Op::Delete {
            path: o.path,
            version,
        },
        "setData" => Op::SetData {
            path: o.path,
            data,
            version,
        },
        "check" => Op::Check {
            path: o.path,
            version: o.version.unwrap_or(-1),
        },
        other => {
            return Err(zkrecipes::Error::new(
                zkrecipes::ErrorKind::InvalidArgument,
                format!("unknown transaction operation {other:?}"),
            ))
        }
    })
}

/// Commits the operations all together or not at all; resolves to one
/// `{ type, path?, stat? }` per operation, or rejects with the failing operation's error and
/// its `index`.
#[napi]
pub fn commit_transaction<'env>(
    env: &'env Env,
    client: &NativeClient,
    ops: Vec<TransactionOp>,
) -> napi::Result<Object<'env>> {
    promise(env, || {
        let ops = ops.into_iter().map(op).collect::<CoreResult<Vec<_>>>()?;
        let c = client.inner.clone();
        Ok(async move {
            let txn = ops.into_iter().fold(c.transaction(), |t, op| t.op(op));
            let results = txn.commit().await?;
            Ok(Out::Array(
                results
                    .into_iter()
                    .map(|r| match r {
                        OpResult::Created { path, stat } => Out::Object(vec![
                            ("type", Out::Str("create".into())),
                            ("path", Out::Str(path)),
                            ("stat", Out::stat(&stat)),
                        ]),
                        OpResult::Deleted => Out::Object(vec![("type", Out::Str("delete".into()))]),
                        OpResult::DataSet { stat } => Out::Object(vec![
                            ("type", Out::Str("setData".into())),
                            ("stat", Out::stat(&stat)),
                        ]),
                        OpResult::Checked => Out::Object(vec![("type", Out::Str("check".into()))]),
                    })
                    .collect(),
            ))
        })
    })
}

// ---------------------------------------------------------------------------------------------
// PersistentNode

fn node_event_name(kind: PersistentNodeEventKind) -> &'static str {
    match kind {
        PersistentNodeEventKind::Registered => "registered",
        PersistentNodeEventKind::Unregistered => "unregistered",
        PersistentNodeEventKind::Conflict => "conflict",
    }
}

/// Curator's PersistentNode; `emit` receives `'registered'`, `'unregistered'` and
/// `'conflict'` with the node's actual path.
#[napi]
pub struct NativePersistentNode {
    inner: Arc<PersistentNode>,
}

#[napi]
impl NativePersistentNode {
    /// A node at `path` of `mode` with `data`.
    #[allow(clippy::too_many_arguments)]
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        mode: String,
        data: Option<Buffer>,
        protected: bool,
        ttl_ms: Option<f64>,
        emit: EmitFn<'_>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let mode = CreateMode::from_name(&mode)?;
            let data = data.map(|b| b.to_vec()).unwrap_or_default();
            let c = &client.inner;
            let node = match ttl(ttl_ms)? {
                Some(t) => PersistentNode::new_with_ttl(c, &path, mode, t, &data, protected)?,
                None => PersistentNode::new(c, &path, mode, &data, protected)?,
            };
            let emitter = Emitter::new(emit)?;
            node.add_listener(move |e| {
                emitter.emit(Event::new(
                    node_event_name(e.kind),
                    Out::Str(e.path.clone()),
                ))
            });
            Ok(NativePersistentNode {
                inner: Arc::new(node),
            })
        })
    }

    /// Starts keeping the node (in the background).
    #[napi]
    pub fn start(&self, env: Env) -> napi::Result<()> {
        sync(&env, || Ok(self.inner.start()?))
    }

    /// Resolves to whether the node was first created within `timeoutMs`.
    #[napi]
    pub fn wait_for_initial_create<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |n, t| async move {
            n.wait_for_initial_create(t).await
        })
    }

    /// Sets the node's data (applied now, or on the next create or reconnect).
    #[napi]
    pub fn set_data(&self, env: Env, data: Buffer) -> napi::Result<()> {
        sync(&env, || Ok(self.inner.set_data(&data)?))
    }

    /// Stops keeping the node and deletes it (ours only).
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |n| async move { n.close().await })
    }

    /// The path given at construction.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path().to_string()))
    }

    /// The actual path once created, else `null`.
    #[napi(getter)]
    pub fn actual_path(&self, env: Env) -> napi::Result<Option<String>> {
        sync(&env, || Ok(self.inner.actual_path()))
    }

    /// The data the node keeps.
    #[napi(getter)]
    pub fn data(&self, env: Env) -> napi::Result<Buffer> {
        sync(&env, || Ok(self.inner.data().into()))
    }

    /// Whether the node is on the server as far as this client knows.
    #[napi(getter)]
    pub fn registered(&self, env: Env) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.is_registered()))
    }
}

/// Curator's PersistentTtlNode.
#[napi]
pub struct NativePersistentTtlNode {
    inner: Arc<PersistentTtlNode>,
}

#[napi]
impl NativePersistentTtlNode {
    /// A TTL node at `path` with `data`, touched every `ttlMs / 2`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        ttl_ms: f64,
        data: Option<Buffer>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let ttl = args::positive_duration("ttlMs", ttl_ms)?;
            let data = data.map(|b| b.to_vec()).unwrap_or_default();
            Ok(NativePersistentTtlNode {
                inner: Arc::new(PersistentTtlNode::new(&client.inner, &path, ttl, &data)?),
            })
        })
    }

    /// Starts keeping the node and touching its child.
    #[napi]
    pub fn start(&self, env: Env) -> napi::Result<()> {
        sync(&env, || Ok(self.inner.start()?))
    }

    /// Resolves to whether the node was first created within `timeoutMs`.
    #[napi]
    pub fn wait_for_initial_create<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |n, t| async move {
            n.wait_for_initial_create(t).await
        })
    }

    /// Sets the node's data.
    #[napi]
    pub fn set_data(&self, env: Env, data: Buffer) -> napi::Result<()> {
        sync(&env, || Ok(self.inner.set_data(&data)?))
    }

    /// Stops touching and keeping the node (it goes once its TTL passes).
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |n| async move { n.close().await })
    }

    /// The path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path().to_string()))
    }
}

// ---------------------------------------------------------------------------------------------
// GroupMember

/// Members as `[[id, Buffer], ...]` sorted by id (`lib/nodes.js` makes a Map of it).
fn members(m: &BTreeMap<String, Vec<u8>>) -> Out {
    Out::Array(
        m.iter()
            .map(|(id, data)| Out::Array(vec![Out::Str(id.clone()), Out::Bytes(data.clone())]))
            .collect(),
    )
}

/// Curator's GroupMember; `emit` receives `'change'` with each new membership.
#[napi]
pub struct NativeGroupMember {
    inner: Arc<GroupMember>,
}

#[napi]
impl NativeGroupMember {
    /// Member `id` of the group at `path` with `payload`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        id: String,
        payload: Option<Buffer>,
        emit: EmitFn<'_>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let payload = payload.map(|b| b.to_vec()).unwrap_or_default();
            let member = GroupMember::new(&client.inner, &path, &id, &payload)?;
            let emitter = Emitter::new(emit)?;
            member.add_listener(move |m| emitter.emit(Event::new("change", members(m))));
            Ok(NativeGroupMember {
                inner: Arc::new(member),
            })
        })
    }

    /// Joins the group; resolves once registered.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |m| async move { m.start().await })
    }

    /// Every member as `[[id, Buffer], ...]`.
    #[napi]
    pub fn current_members(&self, env: Env) -> napi::Result<Out> {
        sync(&env, || Ok(members(&self.inner.current_members())))
    }

    /// Changes this member's payload.
    #[napi]
    pub fn set_this_data(&self, env: Env, payload: Buffer) -> napi::Result<()> {
        sync(&env, || Ok(self.inner.set_this_data(&payload)?))
    }

    /// Leaves the group.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |m| async move { m.close().await })
    }

    /// The group path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path().to_string()))
    }

    /// This member's id.
    #[napi(getter)]
    pub fn id(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.id().to_string()))
    }
}
