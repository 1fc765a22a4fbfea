//! The plain operations the recipes are built from (Curator's create/getData/setData/delete/
//! checkExists/getChildren builders), under the retry policy, with namespace and validation.

use std::sync::atomic::Ordering;
use std::time::Duration;

use zookeeper_client as zk;

use super::{Client, Counters, WeakClient};
use crate::{path, runtime, Error, Result};

/// Node types (ZooKeeper's CreateMode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CreateMode {
    Persistent,
    PersistentSequential,
    Ephemeral,
    EphemeralSequential,
    /// Deleted by the server once its last child is gone (ZooKeeper 3.5.3+).
    Container,
}

impl CreateMode {
    fn to_zk(self) -> zk::CreateMode {
        match self {
            CreateMode::Persistent => zk::CreateMode::Persistent,
            CreateMode::PersistentSequential => zk::CreateMode::PersistentSequential,
            CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
            CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
            CreateMode::Container => zk::CreateMode::Container,
        }
    }

    /// Whether the server appends a sequence number.
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
        )
    }

    /// Whether the node dies with the session.
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }
}

/// How to create a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreateOptions {
    pub mode: CreateMode,
    /// Create missing parents, as CONTAINER nodes (Curator's creatingParentContainersIfNeeded).
    pub create_parents: bool,
    /// Curator's protected mode: the name gets a `_c_<uuid>-` prefix so that, after a connection
    /// loss during the create, the node can be found again instead of created twice.
    pub protected: bool,
}

impl CreateOptions {
    /// Options with `mode`, no parents, not protected.
    pub const fn new(mode: CreateMode) -> CreateOptions {
        CreateOptions {
            mode,
            create_parents: false,
            protected: false,
        }
    }

    /// Also create missing parents as containers.
    pub const fn parents(mut self) -> Self {
        self.create_parents = true;
        self
    }

    /// Use protected mode.
    pub const fn protected(mut self) -> Self {
        self.protected = true;
        self
    }
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions::new(CreateMode::Persistent)
    }
}

/// A created node: its path (as the caller sees it, without the namespace) and stat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    pub path: String,
    pub stat: zk::Stat,
}

/// How to delete a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// Delete only at this data version.
    pub version: Option<i32>,
    /// If the delete fails for connection reasons, keep retrying in the background until the
    /// node is gone (Curator's guaranteed()).
    pub guaranteed: bool,
    /// Delete the children first (Curator's deletingChildrenIfNeeded()).
    pub recursive: bool,
}

/// What a watch saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeEventKind {
    Created,
    Deleted,
    DataChanged,
    ChildrenChanged,
    /// The session ended (expired or closed) before the node changed.
    SessionEnded,
}

/// A watch notification; `path` is relative to the namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeEvent {
    pub kind: NodeEventKind,
    pub path: String,
}

/// A one-shot watch. Dropping it removes it from the server (no leaked watches).
pub struct Watch {
    inner: zk::OneshotWatcher,
    prefix_len: usize,
}

impl Watch {
    pub(crate) fn new(client: &Client, inner: zk::OneshotWatcher) -> Watch {
        Watch {
            inner,
            prefix_len: client.cfg().prefix.len(),
        }
    }

    /// Waits for the event.
    pub async fn changed(self) -> NodeEvent {
        let e = self.inner.changed().await;
        let kind = match e.event_type {
            zk::EventType::NodeCreated => NodeEventKind::Created,
            zk::EventType::NodeDeleted => NodeEventKind::Deleted,
            zk::EventType::NodeDataChanged => NodeEventKind::DataChanged,
            zk::EventType::NodeChildrenChanged => NodeEventKind::ChildrenChanged,
            zk::EventType::Session => NodeEventKind::SessionEnded,
        };
        let path = if e.path.len() >= self.prefix_len {
            e.path[self.prefix_len..].to_string()
        } else {
            e.path
        };
        NodeEvent {
            kind,
            path: if path.is_empty() { "/".into() } else { path },
        }
    }
}

fn acls(client: &Client) -> zk::Acls<'_> {
    zk::Acls::new(&client.cfg().acl)
}

impl Client {
    /// The server-side path of a caller's path (namespace applied).
    pub(crate) fn full_path(&self, path: &str) -> String {
        let prefix = &self.cfg().prefix;
        if prefix.is_empty() {
            path.to_string()
        } else if path == "/" {
            prefix.clone()
        } else {
            format!("{prefix}{path}")
        }
    }

    /// The caller's path of a server-side path.
    pub(crate) fn user_path(&self, full: &str) -> String {
        let prefix = &self.cfg().prefix;
        match full.strip_prefix(prefix.as_str()) {
            Some("") => "/".into(),
            Some(rest) => rest.to_string(),
            None => full.to_string(),
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::closed())
        } else {
            Ok(())
        }
    }

    /// Creates a node; returns its actual path (with the sequence number, and the protected
    /// prefix, if any).
    pub async fn create(&self, path: &str, data: &[u8], options: CreateOptions) -> Result<Created> {
        self.check_open()?;
        if options.mode.is_sequential() {
            path::validate_sequential_path(path)?;
        } else {
            path::validate_path(path)?;
        }
        if path == "/" {
            return Err(Error::invalid("cannot create the root node"));
        }
        path::validate_data(path, data)?;
        if options.protected {
            return self.create_protected(path, data, options).await;
        }
        let full = self.full_path(path);
        let created = self
            .retry(|zk| self.create_once(zk, full.clone(), data, options))
            .await?;
        Ok(created)
    }

    /// One try of a create, making parents on NoNode if asked.
    async fn create_once(
        &self,
        zk: zk::Client,
        full: String,
        data: &[u8],
        options: CreateOptions,
    ) -> Result<Created> {
        let mut made_parents = false;
        loop {
            Counters::bump(&self.counters().create);
            let result = zk
                .create(&full, data, &options.mode.to_zk().with_acls(acls(self)))
                .await;
            match result {
                Ok((stat, seq)) => {
                    let actual = if options.mode.is_sequential() {
                        format!("{full}{seq}")
                    } else {
                        full.clone()
                    };
                    return Ok(Created {
                        path: self.user_path(&actual),
                        stat,
                    });
                }
                Err(zk::Error::NoNode) if options.create_parents && !made_parents => {
                    self.make_parents(&zk, path::parent(&full)).await?;
                    made_parents = true;
                }
                Err(e) => return Err(Error::from_zk(e, "create", &self.user_path(&full))),
            }
        }
    }

    /// Creates `full` and its missing ancestors as CONTAINER nodes.
    async fn make_parents(&self, zk: &zk::Client, full: &str) -> Result<()> {
        if full == "/" {
            return Ok(());
        }
        let mut missing = vec![full];
        // Walk up until a create succeeds or finds the node, then come back down.
        while let Some(&p) = missing.last() {
            Counters::bump(&self.counters().create);
            match zk
                .create(p, &[], &zk::CreateMode::Container.with_acls(acls(self)))
                .await
            {
                Ok(_) | Err(zk::Error::NodeExists) => {
                    missing.pop();
                }
                Err(zk::Error::NoNode) => {
                    let up = path::parent(p);
                    if up == "/" {
                        return Err(Error::NoNode(format!(
                            "create parents of {full}: the root refused"
                        )));
                    }
                    missing.push(up);
                }
                Err(e) => return Err(Error::from_zk(e, "create parent", &self.user_path(p))),
            }
        }
        Ok(())
    }

    /// Curator's protected create: `_c_<uuid>-name`, and after a connection loss, look for our
    /// node before creating again; a node found must belong to the current session (for
    /// ephemerals), so one attempt never leaves two nodes.
    async fn create_protected(
        &self,
        path: &str,
        data: &[u8],
        options: CreateOptions,
    ) -> Result<Created> {
        let id = uuid::Uuid::new_v4().to_string();
        let parent = path::parent(path).to_string();
        let name = path::node_name(path);
        let protected_prefix = format!("_c_{id}-");
        let user_path = path::join(&parent, &format!("{protected_prefix}{name}"));
        let full = self.full_path(&user_path);
        let mut lost_once = false;
        // Armed until the outcome is known: if this future is dropped, or gives up, while a
        // create may have been applied, the node is found and deleted in the background.
        let mut unknown = ProtectedCleanup::new(self, &parent, &protected_prefix);
        let result = self
            .retry(|zk| {
                let full = full.clone();
                let parent = parent.clone();
                let prefix = protected_prefix.clone();
                let first = !lost_once;
                lost_once = true;
                async move {
                    if !first {
                        if let Some(found) = self
                            .find_protected(&zk, &parent, &prefix, options.mode)
                            .await?
                        {
                            return Ok(found);
                        }
                    }
                    self.create_once(zk, full, data, options).await
                }
            })
            .await;
        unknown.settle(&result);
        result
    }

    /// Finds a child of `parent` named with `prefix`, owned by the current session.
    ///
    /// `sync`s first. The create whose outcome we are looking for may have been sent through
    /// another server (before a reconnect), and the server we are on now may not have applied
    /// it yet: the client's last-seen zxid does not cover a create whose reply was lost, so
    /// ZooKeeper lets us reconnect to a server that is behind. Without the `sync`, a lagging
    /// listing says "not there", we create a second node, and the first one, ours but
    /// unknown to us, sits at the head of the lock or election until the session ends (the
    /// fault suite's stalls after an ensemble leader kill and a server pause). The leader
    /// answers a `sync` only after every proposal it had when the `sync` arrived is committed,
    /// and a request still on its way from the old connection is refused once the session has
    /// moved (`SessionMoved`), so after the `sync` the listing is the truth.
    pub(crate) async fn find_protected(
        &self,
        zk: &zk::Client,
        parent: &str,
        prefix: &str,
        mode: CreateMode,
    ) -> Result<Option<Created>> {
        let full_parent = self.full_path(parent);
        Counters::bump(&self.counters().sync);
        match zk.sync(&full_parent).await {
            Ok(()) | Err(zk::Error::NoNode) => {}
            Err(e) => return Err(Error::from_zk(e, "sync", parent)),
        }
        Counters::bump(&self.counters().get_children);
        let children = match zk.list_children(&full_parent).await {
            Ok(c) => c,
            Err(zk::Error::NoNode) => return Ok(None),
            Err(e) => return Err(Error::from_zk(e, "get children", parent)),
        };
        for child in children.into_iter().filter(|c| c.starts_with(prefix)) {
            let full = path::join(&full_parent, &child);
            Counters::bump(&self.counters().exists);
            match zk.check_stat(&full).await {
                Ok(Some(stat))
                    if !mode.is_ephemeral() || stat.ephemeral_owner == zk.session_id().0 =>
                {
                    return Ok(Some(Created {
                        path: self.user_path(&full),
                        stat,
                    }))
                }
                Ok(_) => {}
                Err(e) => return Err(Error::from_zk(e, "exists", &self.user_path(&full))),
            }
        }
        Ok(None)
    }

    /// Data and stat of a node.
    pub async fn get_data(&self, path: &str) -> Result<(Vec<u8>, zk::Stat)> {
        self.check_open()?;
        path::validate_path(path)?;
        let full = self.full_path(path);
        self.retry(|zk| {
            let full = full.clone();
            async move {
                Counters::bump(&self.counters().get_data);
                zk.get_data(&full)
                    .await
                    .map_err(|e| Error::from_zk(e, "get data", path))
            }
        })
        .await
    }

    /// Data and stat of a node, and a watch on it (fires on change or delete).
    pub async fn get_data_watch(&self, path: &str) -> Result<(Vec<u8>, zk::Stat, Watch)> {
        self.check_open()?;
        path::validate_path(path)?;
        let full = self.full_path(path);
        self.retry(|zk| {
            let full = full.clone();
            async move {
                Counters::bump(&self.counters().get_data);
                let (d, s, w) = zk
                    .get_and_watch_data(&full)
                    .await
                    .map_err(|e| Error::from_zk(e, "get data", path))?;
                Ok((d, s, Watch::new(self, w)))
            }
        })
        .await
    }

    /// Sets data, at `version` if given; returns the new stat.
    pub async fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<zk::Stat> {
        self.check_open()?;
        path::validate_path(path)?;
        path::validate_data(path, data)?;
        if let Some(v) = version {
            if v < -1 {
                return Err(Error::invalid(format!(
                    "set data {path}: version {v} is negative"
                )));
            }
        }
        let full = self.full_path(path);
        self.retry(|zk| {
            let full = full.clone();
            async move {
                Counters::bump(&self.counters().set_data);
                zk.set_data(&full, data, version)
                    .await
                    .map_err(|e| Error::from_zk(e, "set data", path))
            }
        })
        .await
    }

    /// The stat of a node, or `None` if it does not exist.
    pub async fn exists(&self, path: &str) -> Result<Option<zk::Stat>> {
        self.check_open()?;
        path::validate_path(path)?;
        let full = self.full_path(path);
        self.retry(|zk| {
            let full = full.clone();
            async move {
                Counters::bump(&self.counters().exists);
                zk.check_stat(&full)
                    .await
                    .map_err(|e| Error::from_zk(e, "exists", path))
            }
        })
        .await
    }

    /// Like [`exists`](Self::exists), with a watch that fires on create, change or delete.
    pub async fn exists_watch(&self, path: &str) -> Result<(Option<zk::Stat>, Watch)> {
        self.check_open()?;
        path::validate_path(path)?;
        let full = self.full_path(path);
        self.retry(|zk| {
            let full = full.clone();
            async move {
                Counters::bump(&self.counters().exists);
                let (s, w) = zk
                    .check_and_watch_stat(&full)
                    .await
                    .map_err(|e| Error::from_zk(e, "exists", path))?;
                Ok((s, Watch::new(self, w)))
            }
        })
        .await
    }

    /// The names of a node's children (unsorted, as the server returns them).
    pub async fn get_children(&self, path: &str) -> Result<Vec<String>> {
        self.check_open()?;
        path::validate_path(path)?;
        let full = self.full_path(path);
        self.retry(|zk| {
            let full = full.clone();
            async move {
                Counters::bump(&self.counters().get_children);
                zk.list_children(&full)
                    .await
                    .map_err(|e| Error::from_zk(e, "get children", path))
            }
        })
        .await
    }

    /// Children and a watch that fires when they change (or the node is deleted).
    pub async fn get_children_watch(&self, path: &str) -> Result<(Vec<String>, Watch)> {
        self.check_open()?;
        path::validate_path(path)?;
        let full = self.full_path(path);
        self.retry(|zk| {
            let full = full.clone();
            async move {
                Counters::bump(&self.counters().get_children);
                let (c, w) = zk
                    .list_and_watch_children(&full)
                    .await
                    .map_err(|e| Error::from_zk(e, "get children", path))?;
                Ok((c, Watch::new(self, w)))
            }
        })
        .await
    }

    /// Deletes a node (see [`DeleteOptions`]).
    pub async fn delete(&self, path: &str, options: DeleteOptions) -> Result<()> {
        self.check_open()?;
        path::validate_path(path)?;
        if path == "/" {
            return Err(Error::invalid("cannot delete the root node"));
        }
        if let Some(v) = options.version {
            if v < -1 {
                return Err(Error::invalid(format!(
                    "delete {path}: version {v} is negative"
                )));
            }
        }
        let result = if options.recursive {
            self.delete_recursive(path, options.version).await
        } else {
            self.delete_one(path, options.version).await
        };
        match result {
            Err(e)
                if options.guaranteed && (e.is_retryable() || matches!(e, Error::Timeout(_))) =>
            {
                self.guaranteed_delete_in_background(path.to_string(), options);
                Err(e)
            }
            other => other,
        }
    }

    async fn delete_one(&self, path: &str, version: Option<i32>) -> Result<()> {
        let full = self.full_path(path);
        self.retry(|zk| {
            let full = full.clone();
            async move {
                Counters::bump(&self.counters().delete);
                zk.delete(&full, version)
                    .await
                    .map_err(|e| Error::from_zk(e, "delete", path))
            }
        })
        .await
    }

    async fn delete_recursive(&self, path: &str, version: Option<i32>) -> Result<()> {
        // Depth-first, children before parents; nodes that vanish meanwhile are fine.
        let mut stack = vec![(path.to_string(), false)];
        while let Some((p, expanded)) = stack.pop() {
            if !expanded {
                stack.push((p.clone(), true));
                match self.get_children(&p).await {
                    Ok(children) => {
                        stack.extend(children.into_iter().map(|c| (path::join(&p, &c), false)))
                    }
                    Err(Error::NoNode(_)) => {}
                    Err(e) => return Err(e),
                }
            } else {
                let v = if p == path { version } else { None };
                match self.delete_one(&p, v).await {
                    Ok(()) => {}
                    Err(Error::NoNode(_)) if p != path => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    fn guaranteed_delete_in_background(&self, path: String, options: DeleteOptions) {
        let client = self.clone();
        client
            .inner
            .guaranteed_deletes
            .fetch_add(1, Ordering::SeqCst);
        runtime::spawn(async move {
            let mut backoff = Duration::from_millis(100);
            loop {
                if client.is_closed() {
                    break;
                }
                let r = if options.recursive {
                    client.delete_recursive(&path, options.version).await
                } else {
                    client.delete_one(&path, options.version).await
                };
                match r {
                    Ok(()) | Err(Error::NoNode(_)) => break,
                    Err(e) if e.is_retryable() || matches!(e, Error::Timeout(_)) => {
                        tokio::select! {
                            _ = tokio::time::sleep(backoff) => {},
                            _ = client.closed() => break,
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(2));
                    }
                    Err(_) => break,
                }
            }
            client
                .inner
                .guaranteed_deletes
                .fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// The blocking face of the plain operations (each runs on the shared runtime; calling one
/// from inside an async context is refused with `Error::Internal`).
impl Client {
    /// [`create`](Self::create), blocking.
    pub fn create_blocking(
        &self,
        path: &str,
        data: &[u8],
        options: CreateOptions,
    ) -> Result<Created> {
        runtime::try_block_on(self.create(path, data, options))?
    }

    /// [`get_data`](Self::get_data), blocking.
    pub fn get_data_blocking(&self, path: &str) -> Result<(Vec<u8>, zk::Stat)> {
        runtime::try_block_on(self.get_data(path))?
    }

    /// [`set_data`](Self::set_data), blocking.
    pub fn set_data_blocking(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<zk::Stat> {
        runtime::try_block_on(self.set_data(path, data, version))?
    }

    /// [`exists`](Self::exists), blocking.
    pub fn exists_blocking(&self, path: &str) -> Result<Option<zk::Stat>> {
        runtime::try_block_on(self.exists(path))?
    }

    /// [`get_children`](Self::get_children), blocking.
    pub fn get_children_blocking(&self, path: &str) -> Result<Vec<String>> {
        runtime::try_block_on(self.get_children(path))?
    }

    /// [`delete`](Self::delete), blocking.
    pub fn delete_blocking(&self, path: &str, options: DeleteOptions) -> Result<()> {
        runtime::try_block_on(self.delete(path, options))?
    }
}

/// Armed while a protected create may have been sent and its outcome is unknown to the caller
/// (Curator's findAndDeleteProtectedNodeInBackground): dropped while armed (the caller's
/// future was dropped, or it gave up on a connection loss), it finds the node by its
/// `_c_<uuid>-` prefix and deletes it in the background, so one abandoned attempt never leaves
/// a node behind in a live session.
pub(crate) struct ProtectedCleanup {
    client: WeakClient,
    parent: String,
    prefix: String,
    armed: bool,
}

impl ProtectedCleanup {
    pub(crate) fn new(client: &Client, parent: &str, prefix: &str) -> ProtectedCleanup {
        ProtectedCleanup {
            client: client.downgrade(),
            parent: parent.to_string(),
            prefix: prefix.to_string(),
            armed: true,
        }
    }

    /// Disarms unless `result` leaves the create's outcome unknown (a connection loss, or the
    /// client closed while a create was in flight).
    pub(crate) fn settle<T>(&mut self, result: &Result<T>) {
        if !matches!(result, Err(e) if e.is_retryable() || matches!(e, Error::Closed(_))) {
            self.armed = false;
        }
    }
}

impl Drop for ProtectedCleanup {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let weak = self.client.clone();
        let (parent, prefix) = (
            std::mem::take(&mut self.parent),
            std::mem::take(&mut self.prefix),
        );
        runtime::spawn(async move {
            let mut misses = 0;
            for _ in 0..30 {
                let Some(client) = weak.upgrade() else { return };
                if client.is_closed() {
                    return; // the session's close removes an ephemeral anyway
                }
                if let Ok(zk) = client.zk().await {
                    // `find_protected` syncs first, so a create the leader already has is seen.
                    // One miss is still not proof (the old connection's request may be on its
                    // way to the leader, where the session's move then refuses it), so look
                    // three times before giving up.
                    match client
                        .find_protected(&zk, &parent, &prefix, CreateMode::Persistent)
                        .await
                    {
                        Ok(None) => {
                            misses += 1;
                            if misses >= 3 {
                                return;
                            }
                        }
                        Ok(Some(found)) => {
                            match client.delete(&found.path, DeleteOptions::default()).await {
                                Ok(()) | Err(Error::NoNode(_)) => return,
                                Err(_) => {}
                            }
                        }
                        Err(_) => {}
                    }
                }
                drop(client);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
    }
}
