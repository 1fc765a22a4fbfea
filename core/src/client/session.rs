//! [`Session`]: the recipe API's primitive operations, on one connected session.
//!
//! A recipe runs its steps inside [`Client::retry`], which hands each try a `Session`. Every
//! operation takes the caller's path (the namespace is applied here), checks the whole request
//! against the size limit, counts the request, gives created nodes the client's ACL, and maps
//! errors into [`Error`] naming the operation and path (ZooKeeper's code and the wire error
//! kept). A request is sent when the method is called, not when its future is first polled, so
//! calls made one after another are pipelined: one session's requests are executed in order,
//! so a read sent right behind a write sees it, and both replies take one round trip.

use std::borrow::Cow;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::Duration;

use zookeeper_client as zk;

use super::types::{
    check_ttl, Acl, AddWatchMode, CreateMode, Created, NodeEvent, Op, OpResult, Parents, Stat,
};
use super::watches::{OneshotKind, OneshotReg};
use super::{wire, Client};
use crate::{Error, Result};

/// The request header (xid, type) and a length prefix per variable field: what a request adds
/// to its path and data on the wire, before the ACL.
const HEADER: usize = 8;

/// How many times a create makes its missing parents before it gives up with `NoNode`:
/// container parents may be reaped by the server between our making them and our create.
const PARENT_ROUNDS: u32 = 3;

/// A connected session, for one try of an operation (see the module notes).
#[derive(Clone)]
pub(crate) struct Session {
    client: Client,
    zk: zk::Client,
}

/// `Result<T>` whose `NoNode` means "absent": `.or_none()` turns it into `Ok(None)`.
pub(crate) trait OrNone<T> {
    fn or_none(self) -> Result<Option<T>>;
}

impl<T> OrNone<T> for Result<T> {
    fn or_none(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(Error::NoNode(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl Session {
    pub(crate) fn new(client: Client, zk: zk::Client) -> Session {
        Session { client, zk }
    }

    /// The session id.
    pub(crate) fn id(&self) -> i64 {
        self.zk.session_id().0
    }

    fn check_size(&self, op: &str, path: &str, full: &str, data: usize, acl: usize) -> Result<()> {
        let len = HEADER + 4 + full.len() + 4 + data + acl + 8;
        let limit = self.client.cfg().max_request_bytes;
        if len > limit {
            return Err(Error::invalid(format!(
                "{op} {}: the request would be {len} bytes on the wire (path {} + data {data} + ACL and framing {}), over the {limit}-byte limit (the server's jute.maxbuffer; ClientBuilder::max_request_bytes); it was not sent",
                abbreviate(path),
                full.len(),
                len - full.len() - data
            )));
        }
        Ok(())
    }

    /// The ACL of a node created at server path `full`: `explicit` if given, else the client's
    /// [`AclProvider`](super::AclProvider)'s for that path (Curator's ACLing).
    fn acl_for(&self, full: &str, explicit: Option<&[Acl]>) -> Result<Cow<'_, [zk::Acl]>> {
        let cfg = self.client.cfg();
        Ok(match explicit {
            Some(acl) => Cow::Owned(wire::acls(acl)),
            None if cfg.acl.is_default_only() => Cow::Borrowed(&cfg.wire_acl),
            None => Cow::Owned(wire::acls(&cfg.acl.acl_for_path(full)?)),
        })
    }

    /// The bytes an ACL list takes on the wire.
    fn acl_len(acl: &[zk::Acl]) -> usize {
        4 + acl
            .iter()
            .map(|a| 12 + a.scheme().len() + a.id().len())
            .sum::<usize>()
    }

    /// Creates a node (no parents, not protected: see [`Client::create_protected`] and
    /// [`Client::create`] for those). Returns the actual path (with the sequence number).
    pub(crate) fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> impl Future<Output = Result<Created>> + Send + '_ {
        self.create_ttl(path, data, mode, None)
    }

    /// [`create`](Self::create) with the TTL of a TTL mode (checked against the mode here).
    pub(crate) fn create_ttl(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        ttl: Option<Duration>,
    ) -> impl Future<Output = Result<Created>> + Send + '_ {
        self.create_with(path, data, mode, ttl, None)
    }

    /// [`create_ttl`](Self::create_ttl) with an ACL of its own (`None`: the provider's).
    pub(crate) fn create_with(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        ttl: Option<Duration>,
        acl: Option<&[Acl]>,
    ) -> impl Future<Output = Result<Created>> + Send + '_ {
        let full = self.client.full_path(path);
        let checked = check_ttl(path, mode, ttl)
            .and_then(|()| self.acl_for(&full, acl))
            .and_then(|acl| {
                self.check_size("create", path, &full, data.len(), Self::acl_len(&acl))
                    .map(|()| acl)
            });
        let sent = match checked {
            Ok(acl) => {
                self.client
                    .counters()
                    .create
                    .fetch_add(1, Ordering::Relaxed);
                Ok(self.zk.create(
                    &full,
                    data,
                    &wire::create_options(mode, zk::Acls::new(&acl), ttl),
                ))
            }
            Err(e) => Err(e),
        };
        // Room for the sequence a sequential node's name gets: one allocation for its path.
        let mut user =
            String::with_capacity(path.len() + if mode.is_sequential() { 10 } else { 0 });
        user.push_str(path);
        async move {
            let (stat, seq) = sent?.await.map_err(|e| wire::error(e, "create", &user))?;
            if mode.is_sequential() {
                push_sequence(&mut user, seq.into_i64());
            }
            Ok(Created {
                path: user,
                stat: wire::stat(stat),
            })
        }
    }

    /// [`create_ttl`](Self::create_ttl), making the missing parents as `parents` says when the
    /// server finds none (Curator's `creatingParentsIfNeeded` /
    /// `creatingParentContainersIfNeeded`), for a few rounds against reaped containers. The
    /// first create is sent at the call, like every request of a session.
    pub(crate) fn create_with_parents<'a>(
        &'a self,
        path: &'a str,
        data: &'a [u8],
        mode: CreateMode,
        ttl: Option<Duration>,
        parents: Parents,
    ) -> impl Future<Output = Result<Created>> + Send + 'a {
        self.create_with_parents_acl(path, data, mode, ttl, parents, None)
    }

    /// [`create_with_parents`](Self::create_with_parents) with the node's own ACL (`None`: the
    /// provider's; parents always get the provider's).
    pub(crate) fn create_with_parents_acl<'a>(
        &'a self,
        path: &'a str,
        data: &'a [u8],
        mode: CreateMode,
        ttl: Option<Duration>,
        parents: Parents,
        acl: Option<&'a [Acl]>,
    ) -> impl Future<Output = Result<Created>> + Send + 'a {
        let first = self.create_with(path, data, mode, ttl, acl);
        async move {
            let mut created = first.await;
            let mut rounds = 0;
            loop {
                match created {
                    Err(Error::NoNode(_)) if parents != Parents::None && rounds < PARENT_ROUNDS => {
                        rounds += 1;
                        self.client
                            .ensure_path(crate::path::parent(path), parents)
                            .await?;
                        created = self.create_with(path, data, mode, ttl, acl).await;
                    }
                    other => return other,
                }
            }
        }
    }

    /// Whether the node with `stat` is an ephemeral node of this session: ours, whatever reply
    /// we lost on the way (a retried create that finds its own node, CURATOR-330).
    pub(crate) fn owns(&self, stat: &Stat) -> bool {
        stat.ephemeral_owner == self.id()
    }

    /// Makes the namespace's own nodes (`/app`, or `/a` then `/a/b`) with `mode`, top down;
    /// nodes that exist already are fine. Curator creates the namespace on demand too.
    pub(crate) async fn create_namespace(&self, mode: CreateMode) -> Result<()> {
        let prefix = self.client.cfg().prefix.clone();
        let mut node = String::new();
        for segment in prefix.split('/').skip(1) {
            node.push('/');
            node.push_str(segment);
            self.client
                .counters()
                .create
                .fetch_add(1, Ordering::Relaxed);
            let acl = self.acl_for(&node, None)?;
            match self
                .zk
                .create(
                    &node,
                    &[],
                    &wire::create_mode(mode).with_acls(zk::Acls::new(&acl)),
                )
                .await
            {
                Ok(_) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(wire::error(e, "create namespace", &node)),
            }
        }
        Ok(())
    }

    /// Whether the connect string's chroot exists (the session's root, before the namespace).
    pub(crate) async fn chroot_exists(&self) -> Result<bool> {
        self.client
            .counters()
            .exists
            .fetch_add(1, Ordering::Relaxed);
        match self.zk.check_stat("/").await {
            Ok(s) => Ok(s.is_some()),
            Err(e) => Err(wire::error(e, "exists", "/ (the chroot)")),
        }
    }

    /// Data and stat.
    pub(crate) fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + '_ {
        self.client
            .counters()
            .get_data
            .fetch_add(1, Ordering::Relaxed);
        let f = self.zk.get_data(&self.client.full_path(path));
        let user = path.to_string();
        async move {
            let (d, s) = f.await.map_err(|e| wire::error(e, "get data", &user))?;
            Ok((d, wire::stat(s)))
        }
    }

    /// Data and stat, and a one-shot watch on the node (change or delete).
    pub(crate) fn get_data_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, Watch)>> + Send + '_ {
        self.client
            .counters()
            .get_data
            .fetch_add(1, Ordering::Relaxed);
        let f = self.zk.get_and_watch_data(&self.client.full_path(path));
        let user = path.to_string();
        async move {
            let (d, s, w) = f.await.map_err(|e| wire::error(e, "get data", &user))?;
            Ok((
                d,
                wire::stat(s),
                Watch::new(&self.client, w, &user, OneshotKind::Data),
            ))
        }
    }

    /// The stat, or `None` if there is no node.
    pub(crate) fn exists(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Stat>>> + Send + '_ {
        self.client
            .counters()
            .exists
            .fetch_add(1, Ordering::Relaxed);
        let f = self.zk.check_stat(&self.client.full_path(path));
        let user = path.to_string();
        async move {
            let s = f.await.map_err(|e| wire::error(e, "exists", &user))?;
            Ok(s.map(wire::stat))
        }
    }

    /// [`exists`](Self::exists) with a one-shot watch (create, change or delete).
    pub(crate) fn exists_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, Watch)>> + Send + '_ {
        self.client
            .counters()
            .exists
            .fetch_add(1, Ordering::Relaxed);
        let f = self.zk.check_and_watch_stat(&self.client.full_path(path));
        let user = path.to_string();
        async move {
            let (s, w) = f.await.map_err(|e| wire::error(e, "exists", &user))?;
            Ok((
                s.map(wire::stat),
                Watch::new(&self.client, w, &user, OneshotKind::Data),
            ))
        }
    }

    /// The names of the children (unsorted, as the server returns them).
    pub(crate) fn children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + '_ {
        self.client
            .counters()
            .get_children
            .fetch_add(1, Ordering::Relaxed);
        let f = self.zk.list_children(&self.client.full_path(path));
        let user = path.to_string();
        async move { f.await.map_err(|e| wire::error(e, "get children", &user)) }
    }

    /// The children and a one-shot watch on them (a child added or removed, or the node deleted).
    pub(crate) fn children_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Watch)>> + Send + '_ {
        self.client
            .counters()
            .get_children
            .fetch_add(1, Ordering::Relaxed);
        let f = self
            .zk
            .list_and_watch_children(&self.client.full_path(path));
        let user = path.to_string();
        async move {
            let (c, w) = f.await.map_err(|e| wire::error(e, "get children", &user))?;
            Ok((c, Watch::new(&self.client, w, &user, OneshotKind::Children)))
        }
    }

    /// Sets data, at `version` if given; the new stat.
    pub(crate) fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + '_ {
        let full = self.client.full_path(path);
        let checked = self.check_size("set data", path, &full, data.len(), 4);
        let sent = match checked {
            Ok(()) => {
                self.client
                    .counters()
                    .set_data
                    .fetch_add(1, Ordering::Relaxed);
                Ok(self.zk.set_data(&full, data, version))
            }
            Err(e) => Err(e),
        };
        let user = path.to_string();
        async move {
            let s = sent?.await.map_err(|e| wire::error(e, "set data", &user))?;
            Ok(wire::stat(s))
        }
    }

    /// A node's ACL and stat.
    pub(crate) fn get_acl(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + '_ {
        let full = self.client.full_path(path);
        self.client
            .counters()
            .get_acl
            .fetch_add(1, Ordering::Relaxed);
        let sent = self.zk.get_acl(&full);
        let user = path.to_string();
        async move {
            let (acl, stat) = sent.await.map_err(|e| wire::error(e, "get ACL", &user))?;
            Ok((wire::acls_from(&acl), wire::stat(stat)))
        }
    }

    /// The ensemble's configuration node (`/zookeeper/config`, never under the namespace).
    pub(crate) fn get_config(&self) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + '_ {
        self.client
            .counters()
            .get_config
            .fetch_add(1, Ordering::Relaxed);
        let sent = self.zk.get_config();
        async move {
            let (data, stat) = sent
                .await
                .map_err(|e| wire::error(e, "get config", super::ensemble::CONFIG_NODE))?;
            Ok((data, wire::stat(stat)))
        }
    }

    /// [`get_config`](Self::get_config) with a watch on the node.
    pub(crate) fn get_config_watch(
        &self,
    ) -> impl Future<Output = Result<(Vec<u8>, Watch)>> + Send + '_ {
        self.client
            .counters()
            .get_config
            .fetch_add(1, Ordering::Relaxed);
        let sent = self.zk.get_and_watch_config();
        async move {
            let (data, _, watcher) = sent
                .await
                .map_err(|e| wire::error(e, "get config", super::ensemble::CONFIG_NODE))?;
            Ok((data, Watch::absolute(watcher)))
        }
    }

    /// ZooKeeper's `reconfig`: the new configuration's data and stat.
    pub(crate) fn reconfig<'a>(
        &'a self,
        change: &'a super::ensemble::Reconfig,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + 'a {
        self.client
            .counters()
            .reconfig
            .fetch_add(1, Ordering::Relaxed);
        let as_str: fn(&String) -> &str = String::as_str;
        async move {
            let leaving: Vec<String> = change.leaving_ids().iter().map(u64::to_string).collect();
            let from = change.from_version();
            let reply = match change.new_member_list() {
                Some(members) => {
                    let ensemble = members.iter().map(as_str);
                    self.zk
                        .update_ensemble(zk::EnsembleUpdate::New { ensemble }, from)
                        .await
                }
                None => {
                    let joinings = change.joining_servers().iter().map(as_str);
                    let leavings = leaving.iter().map(as_str);
                    self.zk
                        .update_ensemble(
                            zk::EnsembleUpdate::Incremental { joinings, leavings },
                            from,
                        )
                        .await
                }
            };
            let (data, stat) =
                reply.map_err(|e| wire::error(e, "reconfig", super::ensemble::CONFIG_NODE))?;
            Ok((data, wire::stat(stat)))
        }
    }

    /// Replaces a node's ACL, at ACL `version` if given.
    pub(crate) fn set_acl(
        &self,
        path: &str,
        acl: &[Acl],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + '_ {
        let full = self.client.full_path(path).into_owned();
        let wire_acl = wire::acls(acl);
        let checked = self.check_size("set ACL", path, &full, 0, Self::acl_len(&wire_acl));
        let user = path.to_string();
        let client = self.client.clone();
        let zk = self.zk.clone();
        async move {
            checked?;
            client.counters().set_acl.fetch_add(1, Ordering::Relaxed);
            let stat = zk
                .set_acl(&full, &wire_acl, version)
                .await
                .map_err(|e| wire::error(e, "set ACL", &user))?;
            Ok(wire::stat(stat))
        }
    }

    /// Deletes a node, at `version` if given.
    pub(crate) fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + '_ {
        self.client
            .counters()
            .delete
            .fetch_add(1, Ordering::Relaxed);
        let f = self.zk.delete(&self.client.full_path(path), version);
        let user = path.to_string();
        async move { f.await.map_err(|e| wire::error(e, "delete", &user)) }
    }

    /// `sync`: the server we talk to catches up with the leader before answering, and before
    /// answering anything this session sends after it. A node missing there is fine.
    pub(crate) fn sync(&self, path: &str) -> impl Future<Output = Result<()>> + Send + '_ {
        self.client.counters().sync.fetch_add(1, Ordering::Relaxed);
        let f = self.zk.sync(&self.client.full_path(path));
        let user = path.to_string();
        async move {
            match f.await {
                Ok(()) | Err(zk::Error::NoNode) => Ok(()),
                Err(e) => Err(wire::error(e, "sync", &user)),
            }
        }
    }
}

impl Session {
    /// Runs `ops` as one transaction (ZooKeeper's `multi`): all applied, or none. A failed
    /// operation's error names its index (`Error::failed_op`).
    pub(crate) fn multi(
        &self,
        ops: &[Op],
    ) -> impl Future<Output = Result<Vec<OpResult>>> + Send + '_ {
        let sent = self.send_multi(ops);
        let names: Vec<(&'static str, String)> = ops
            .iter()
            .map(|o| (o.name(), o.path().to_string()))
            .collect();
        let client = self.client.clone();
        async move {
            let results = match sent?.await {
                Ok(r) => r,
                Err(zk::MultiWriteError::RequestFailed { source }) => {
                    return Err(wire::error(source, "transaction", &describe(&names)))
                }
                Err(zk::MultiWriteError::OperationFailed { index, source }) => {
                    let (op, path) = names
                        .get(index)
                        .cloned()
                        .unwrap_or(("operation", String::new()));
                    let e = wire::error(
                        source,
                        &format!("transaction operation {index} ({op})"),
                        &path,
                    );
                    let detail = e.detail().clone().with_op_index(index);
                    return Err(crate::Error::new(e.kind(), detail));
                }
            };
            Ok(results
                .into_iter()
                .map(|r| match r {
                    zk::MultiWriteResult::Create { path, stat } => OpResult::Created {
                        path: client.user_path(&path),
                        stat: wire::stat(stat),
                    },
                    zk::MultiWriteResult::Delete => OpResult::Deleted,
                    zk::MultiWriteResult::SetData { stat } => OpResult::DataSet {
                        stat: wire::stat(stat),
                    },
                    _ => OpResult::Checked,
                })
                .collect())
        }
    }

    /// Builds and sends the multi request (sent now, awaited later).
    #[allow(clippy::type_complexity)]
    fn send_multi(
        &self,
        ops: &[Op],
    ) -> Result<
        impl Future<Output = std::result::Result<Vec<zk::MultiWriteResult>, zk::MultiWriteError>>
            + Send
            + '_,
    > {
        let cfg = self.client.cfg();
        let mut len = HEADER;
        let mut acls = Vec::with_capacity(ops.len());
        for op in ops {
            let full = self.client.full_path(op.path());
            len += 12 + full.len();
            if let Op::Create { data, .. } | Op::SetData { data, .. } = op {
                len += 4 + data.len();
            }
            if let Op::Create { acl, .. } = op {
                let acl = self.acl_for(&full, acl.as_deref())?;
                len += Self::acl_len(&acl);
                acls.push(acl);
            }
        }
        if len > cfg.max_request_bytes {
            return Err(Error::invalid(format!(
                "transaction of {} operations: the request would be {len} bytes on the wire, over the {}-byte limit (the server's jute.maxbuffer; max_request_bytes); it was not sent",
                ops.len(),
                cfg.max_request_bytes
            )));
        }
        let mut writer = self.zk.new_multi_writer();
        let mut acls = acls.iter();
        for (i, op) in ops.iter().enumerate() {
            let full = self.client.full_path(op.path());
            let added = match op {
                Op::Create {
                    data, mode, ttl, ..
                } => {
                    let acl = acls.next().map_or(&[][..], |a| &a[..]);
                    writer.add_create(
                        &full,
                        data,
                        &wire::create_options(*mode, zk::Acls::new(acl), *ttl),
                    )
                }
                Op::Delete { version, .. } => writer.add_delete(&full, *version),
                Op::SetData { data, version, .. } => writer.add_set_data(&full, data, *version),
                Op::Check { version, .. } => writer.add_check_version(&full, *version),
            };
            added.map_err(|e| {
                wire::error(
                    e,
                    &format!("transaction operation {i} ({})", op.name()),
                    op.path(),
                )
            })?;
        }
        self.client.counters().multi.fetch_add(1, Ordering::Relaxed);
        Ok(writer.commit())
    }

    /// Sets a persistent (optionally recursive) watch on `path` (ZooKeeper 3.6+'s `addWatch`).
    pub(crate) fn add_watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<zk::PersistentWatcher>> + Send + '_ {
        self.client
            .counters()
            .add_watch
            .fetch_add(1, Ordering::Relaxed);
        let f = self
            .zk
            .watch(&self.client.full_path(path), wire::add_watch_mode(mode));
        let user = path.to_string();
        async move { f.await.map_err(|e| wire::error(e, "add watch", &user)) }
    }
}

impl Session {
    /// ZooKeeper's `removeWatches` of `kind` on `path`, at the server only (see
    /// `Client::remove_watches`).
    pub(crate) fn remove_watches(
        &self,
        path: &str,
        kind: zk::WatcherType,
    ) -> impl Future<Output = Result<()>> + Send + '_ {
        self.client
            .counters()
            .remove_watches
            .fetch_add(1, Ordering::Relaxed);
        let f = self.zk.remove_watches(&self.client.full_path(path), kind);
        let user = path.to_string();
        async move { f.await.map_err(|e| wire::error(e, "remove watches", &user)) }
    }
}

fn describe(ops: &[(&'static str, String)]) -> String {
    let shown: Vec<String> = ops
        .iter()
        .take(4)
        .map(|(o, p)| format!("{o} {p}"))
        .collect();
    let more = if ops.len() > 4 {
        format!(", … ({} in all)", ops.len())
    } else {
        String::new()
    };
    format!("[{}{more}]", shown.join(", "))
}

/// The first 64 characters of a long path, for messages.
fn abbreviate(p: &str) -> String {
    if p.chars().count() <= 64 {
        p.to_string()
    } else {
        let head: String = p.chars().take(64).collect();
        format!("{head}… ({} bytes)", p.len())
    }
}

/// A one-shot watch. Dropping it removes it from the server (no leaked watches).
pub struct Watch {
    inner: zk::OneshotWatcher,
    prefix_len: usize,
    /// Its place in the client's registry (`None`: outside the namespace).
    reg: Option<OneshotReg>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("path", &self.reg.as_ref().map(OneshotReg::path))
            .finish()
    }
}

impl Watch {
    pub(crate) fn new(
        client: &Client,
        inner: zk::OneshotWatcher,
        path: &str,
        kind: OneshotKind,
    ) -> Watch {
        Watch {
            inner,
            prefix_len: client.cfg().prefix.len(),
            reg: Some(client.watches().register_oneshot(client, path, kind)),
        }
    }

    /// A watch on a node outside the namespace (`/zookeeper/config`): its path as is, outside
    /// the registry (`remove_watches` names namespace paths).
    pub(crate) fn absolute(inner: zk::OneshotWatcher) -> Watch {
        Watch {
            inner,
            prefix_len: 0,
            reg: None,
        }
    }

    /// Waits for the event: the node's change, `SessionEnded`, or `WatchRemoved` once
    /// [`Client::remove_watches`] removed it.
    pub async fn changed(self) -> NodeEvent {
        let Watch {
            inner,
            prefix_len,
            mut reg,
        } = self;
        let removed = async {
            match reg.as_mut() {
                Some(r) => r.removed().await,
                None => std::future::pending().await,
            }
        };
        let e = tokio::select! {
            e = inner.changed() => {
                if let Some(r) = reg.as_mut() {
                    r.fired();
                }
                e
            }
            () = removed => {
                let path = reg.as_ref().map_or("", |r| r.path()).to_string();
                return NodeEvent {
                    kind: super::types::NodeEventKind::WatchRemoved,
                    path,
                };
            }
        };
        let kind = wire::event_kind(&e);
        let path = if e.path.len() >= prefix_len {
            e.path[prefix_len..].to_string()
        } else {
            e.path
        };
        NodeEvent {
            kind,
            path: if path.is_empty() { "/".into() } else { path },
        }
    }
}

/// What one cache read found: the node's data (`None` when only the stat was asked for) and
/// its stat.
pub(crate) struct NodeRead {
    pub(crate) data: Option<Vec<u8>>,
    pub(crate) stat: Stat,
}

impl Session {
    /// Reads a node for a cache, sent now and owning nothing of `self` (a cache keeps many in
    /// flight, in order): getData (or exists, when `data` is false). `Ok(None)` when there is
    /// no node.
    pub(crate) fn read_node(
        &self,
        path: &str,
        data: bool,
    ) -> impl Future<Output = Result<Option<NodeRead>>> + Send + 'static {
        let full = self.client.full_path(path);
        let counters = self.client.counters();
        let node = if data {
            counters.get_data.fetch_add(1, Ordering::Relaxed);
            let f = self.zk.get_data(&full);
            let b: std::pin::Pin<Box<dyn Future<Output = _> + Send>> = Box::pin(async move {
                match f.await {
                    Ok((d, s)) => Ok(Some((Some(d), s))),
                    Err(zk::Error::NoNode) => Ok(None),
                    Err(e) => Err(e),
                }
            });
            b
        } else {
            counters.exists.fetch_add(1, Ordering::Relaxed);
            let f = self.zk.check_stat(&full);
            Box::pin(async move { f.await.map(|s| s.map(|s| (None, s))) })
        };
        let user = path.to_string();
        async move {
            let Some((data, stat)) = node.await.map_err(|e| wire::error(e, "get data", &user))?
            else {
                return Ok(None);
            };
            Ok(Some(NodeRead {
                data,
                stat: wire::stat(stat),
            }))
        }
    }
}

impl Session {
    /// The children's names of a node for a cache (sent now, owning nothing of `self`);
    /// `Ok(None)` when there is no node.
    pub(crate) fn read_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Vec<String>>>> + Send + 'static {
        self.client
            .counters()
            .get_children
            .fetch_add(1, Ordering::Relaxed);
        let f = self.zk.get_children(&self.client.full_path(path));
        let user = path.to_string();
        async move {
            match f.await {
                Ok((c, _)) => Ok(Some(c)),
                Err(zk::Error::NoNode) => Ok(None),
                Err(e) => Err(wire::error(e, "get children", &user)),
            }
        }
    }
}

/// Appends a sequential node's sequence as the server wrote it into the name, and as the wire
/// client prints it: ten digits with leading zeros (`%010d`; 19 digits for a 64-bit sequence
/// above 2^31 - 1). The usual case (0 to 2^31 - 1) in one pass: `format!` took 1,350
/// instructions per lock cycle for this (2026-12-06).
fn push_sequence(out: &mut String, seq: i64) {
    match u32::try_from(seq) {
        Ok(mut v) if v <= i32::MAX as u32 => {
            let mut digits = [b'0'; 10];
            for d in digits.iter_mut().rev() {
                *d = b'0' + (v % 10) as u8;
                v /= 10;
            }
            out.extend(digits.iter().map(|&d| char::from(d)));
        }
        _ => {
            use std::fmt::Write;
            let _ = if seq <= i64::from(i32::MAX) {
                write!(out, "{seq:010}")
            } else {
                write!(out, "{seq:019}")
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::push_sequence;

    #[test]
    fn a_sequence_is_written_as_the_wire_client_prints_it() {
        for seq in [
            0,
            7,
            42,
            1_000_000_000,
            i64::from(i32::MAX),
            i64::from(i32::MAX) + 1,
            i64::MAX,
            -1,
            i64::from(i32::MIN),
        ] {
            let want = if seq <= i64::from(i32::MAX) {
                format!("/a/lock-{seq:010}")
            } else {
                format!("/a/lock-{seq:019}")
            };
            let mut got = String::from("/a/lock-");
            push_sequence(&mut got, seq);
            assert_eq!(got, want, "sequence {seq}");
        }
        let mut got = String::new();
        push_sequence(&mut got, 123);
        assert_eq!(got, "0000000123");
    }
}
