//! The plain operations (Curator's create/getData/setData/delete/checkExists/getChildren
//! builders) and the recipe API's composite steps: parents, guaranteed delete, deleting our own
//! node. Each runs under the retry policy, with validation and the namespace.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::compression;
use super::protected::{ProtectedCreate, ProtectedGuard, ProtectedId};
use super::session::{OrNone, Watch};
use super::types::{
    check_ttl, Acl, CreateMode, CreateOptions, Created, DeleteOptions, Parents, Stat,
};
use super::Client;
use crate::{path, runtime, Error, Result};

impl Client {
    /// `Closed` if the client is closed: a recipe made on a closed client could never work, so
    /// every recipe's constructor refuses it at once, in every face.
    pub(crate) fn ensure_open_for(&self, recipe: &str, path: &str) -> Result<()> {
        if self.is_closed() {
            return Err(Error::Closed(
                format!("cannot make a {recipe} on {path}: the client is closed").into(),
            ));
        }
        Ok(())
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
        self.create_inner(path, data, options, None).await
    }

    /// [`create`](Self::create) with the node's own ACL instead of the client's
    /// [`AclProvider`](crate::AclProvider)'s for its path (Curator's `withACL`; parents made on
    /// the way keep the provider's).
    pub async fn create_with_acl(
        &self,
        path: &str,
        data: &[u8],
        options: CreateOptions,
        acl: &[Acl],
    ) -> Result<Created> {
        self.create_inner(path, data, options, Some(acl)).await
    }

    async fn create_inner(
        &self,
        path: &str,
        data: &[u8],
        options: CreateOptions,
        acl: Option<&[Acl]>,
    ) -> Result<Created> {
        self.check_open()?;
        if options.mode.is_sequential() {
            path::validate_sequential_path(path)?;
        } else {
            path::validate_path(path)?;
        }
        if path == "/" {
            return Err(Error::invalid("cannot create the root node"));
        }
        check_ttl(path, options.mode, options.ttl)?;
        if acl.is_some_and(<[Acl]>::is_empty) {
            return Err(Error::invalid(format!(
                "create {path}: the ACL must not be empty"
            )));
        }
        let compressed;
        let data = if options.compressed {
            compressed = compression::gzip(data);
            &compressed[..]
        } else {
            data
        };
        let (parents, ttl) = (options.parent_mode(), options.ttl);
        if options.protected {
            let id = ProtectedId::new();
            let parent = path::parent(path);
            let mut guard = ProtectedGuard::new(self, parent, &id);
            let req = ProtectedCreate {
                parent,
                name: path::node_name(path),
                data,
                mode: options.mode,
                parents,
                list_parent: false,
            };
            let result = self.create_protected_with(&id, req, ttl, acl).await;
            guard.settle(&result);
            return result.map(|n| Created {
                path: n.path,
                stat: n.stat,
            });
        }
        let mode = options.mode;
        self.retry(|s| async move {
            s.create_with_parents_acl(path, data, mode, ttl, parents, acl)
                .await
        })
        .await
    }

    /// Makes `path` and its missing ancestors (containers or persistent nodes, as `parents`
    /// says; nothing for [`Parents::None`]). Nodes that exist already are fine.
    pub(crate) async fn ensure_path(&self, path: &str, parents: Parents) -> Result<()> {
        let mode = match parents {
            Parents::None => return Ok(()),
            Parents::Containers => CreateMode::Container,
            Parents::Persistent => CreateMode::Persistent,
        };
        if path == "/" {
            if self.namespace().is_empty() {
                return Ok(());
            }
            return self
                .retry(|s| async move { s.create_namespace(mode).await })
                .await;
        }
        self.retry(|s| async move {
            let mut missing = vec![path];
            let mut made_namespace = false;
            // Walk up until a create succeeds or finds the node, then come back down.
            while let Some(&p) = missing.last() {
                match s.create(p, &[], mode).await {
                    Ok(_) | Err(Error::NodeExists(_)) => {
                        missing.pop();
                    }
                    Err(Error::NoNode(_)) => {
                        let up = path::parent(p);
                        if up != "/" {
                            missing.push(up);
                        } else if !self.namespace().is_empty() && !made_namespace {
                            made_namespace = true;
                            s.create_namespace(mode).await?;
                        } else {
                            return Err(Error::NoNode(
                                format!("create parents of {path}: the root refused").into(),
                            ));
                        }
                    }
                    Err(e) => return Err(e.context("create parent")),
                }
            }
            Ok(())
        })
        .await
    }

    /// Data and stat of a node.
    pub async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.check_open()?;
        path::validate_path(path)?;
        self.retry(|s| async move { s.get_data(path).await }).await
    }

    /// Data and stat of a node whose data was stored compressed (Curator's
    /// `getData().decompressed()`; see [`CreateOptions::compressed`]). Data that is not
    /// Curator's GZIP is `CorruptedData`.
    pub async fn get_data_decompressed(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        let (data, stat) = self.get_data(path).await?;
        Ok((compression::gunzip(path, &data)?, stat))
    }

    /// Sets data stored compressed (Curator's `setData().compressed()`), at `version` if given.
    pub async fn set_data_compressed(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat> {
        self.set_data(path, &compression::gzip(data), version).await
    }

    /// Data and stat of a node, and a watch on it (fires on change or delete).
    pub async fn get_data_watch(&self, path: &str) -> Result<(Vec<u8>, Stat, Watch)> {
        self.check_open()?;
        path::validate_path(path)?;
        self.retry(|s| async move { s.get_data_watch(path).await })
            .await
    }

    /// Sets data, at `version` if given; returns the new stat.
    pub async fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        self.check_open()?;
        path::validate_path(path)?;
        check_version("set data", path, version)?;
        self.retry(|s| async move { s.set_data(path, data, version).await })
            .await
    }

    /// A node's ACL and stat (Curator's `getACL()`, kazoo's `get_acls`). Reading an ACL needs
    /// READ or ADMIN permission on the node.
    pub async fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        self.check_open()?;
        path::validate_path(path)?;
        self.retry(|s| async move { s.get_acl(path).await }).await
    }

    /// Replaces a node's ACL, at ACL `version` (the stat's `aversion`) if given; returns the new
    /// stat (Curator's `setACL()`, kazoo's `set_acls`). Needs ADMIN permission on the node.
    pub async fn set_acl(&self, path: &str, acl: &[Acl], version: Option<i32>) -> Result<Stat> {
        self.check_open()?;
        path::validate_path(path)?;
        check_version("set ACL", path, version)?;
        if acl.is_empty() {
            return Err(Error::invalid(format!(
                "set ACL {path}: the ACL must not be empty"
            )));
        }
        self.retry(|s| async move { s.set_acl(path, acl, version).await })
            .await
    }

    /// The stat of a node, or `None` if it does not exist.
    pub async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.check_open()?;
        path::validate_path(path)?;
        self.retry(|s| async move { s.exists(path).await }).await
    }

    /// Like [`exists`](Self::exists), with a watch that fires on create, change or delete.
    pub async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, Watch)> {
        self.check_open()?;
        path::validate_path(path)?;
        self.retry(|s| async move { s.exists_watch(path).await })
            .await
    }

    /// ZooKeeper's `sync` (Curator's `sync()`, kazoo's `sync`): the server this client talks
    /// to catches up with the leader before answering, so a read sent after this returns sees
    /// every write committed before the call, by any client — read-your-writes across
    /// sessions. A reconnection between the sync and the read (to another server) loses that:
    /// sync again after the connection comes back. A missing node is fine (`Ok`).
    pub async fn sync(&self, path: &str) -> Result<()> {
        self.check_open()?;
        path::validate_path(path)?;
        self.retry(|s| async move { s.sync(path).await }).await
    }

    /// The names of a node's children (unsorted, as the server returns them).
    pub async fn get_children(&self, path: &str) -> Result<Vec<String>> {
        self.check_open()?;
        path::validate_path(path)?;
        self.retry(|s| async move { s.children(path).await }).await
    }

    /// Children and a watch that fires when they change (or the node is deleted).
    pub async fn get_children_watch(&self, path: &str) -> Result<(Vec<String>, Watch)> {
        self.check_open()?;
        path::validate_path(path)?;
        self.retry(|s| async move { s.children_watch(path).await })
            .await
    }

    /// Deletes a node (see [`DeleteOptions`]).
    pub async fn delete(&self, path: &str, options: DeleteOptions) -> Result<()> {
        self.check_open()?;
        path::validate_path(path)?;
        if path == "/" {
            return Err(Error::invalid("cannot delete the root node"));
        }
        check_version("delete", path, options.version)?;
        if options.guaranteed {
            return self.delete_as_task(path, options).await;
        }
        self.delete_checked(path, options).await
    }

    /// [`delete_checked`](Self::delete_checked) as its own task, under the caller's deadline
    /// bound ([`Deadline::bounding`](crate::wait::Deadline::bounding)): a caller who stops
    /// waiting (a timeout around the call, a cancelled task) does not stop a guaranteed delete,
    /// as Curator's goes on through an interrupt.
    async fn delete_as_task(&self, path: &str, options: DeleteOptions) -> Result<()> {
        let (client, path) = (self.clone(), path.to_string());
        runtime::run_to_end(async move {
            client.check_open()?;
            client.delete_checked(&path, options).await
        })
        .await
    }

    /// [`delete`](Self::delete) of a path already checked: ours, made from a checked one (a
    /// lock node's path: checking it again cost 1,450 instructions per lock cycle, 2026-12-06).
    async fn delete_checked(&self, path: &str, options: DeleteOptions) -> Result<()> {
        let result = self.delete_now(path, options).await;
        match result {
            Err(e) if options.guaranteed && retry_later(&e) => {
                self.guaranteed_delete_in_background(path.to_string(), options);
                Err(e)
            }
            other => other,
        }
    }

    async fn delete_now(&self, path: &str, options: DeleteOptions) -> Result<()> {
        if options.recursive {
            self.delete_recursive(path, options.version).await
        } else {
            self.retry(|s| async move { s.delete(path, options.version).await })
                .await
        }
    }

    async fn delete_recursive(&self, path: &str, version: Option<i32>) -> Result<()> {
        // Depth-first, children before parents; nodes that vanish meanwhile are fine — the top
        // one too once it was seen (a container parent may be reaped by the server as soon as
        // its last child goes, before our delete of it arrives).
        let mut stack = vec![(path.to_string(), false)];
        let mut top_seen = false;
        while let Some((p, expanded)) = stack.pop() {
            if !expanded {
                stack.push((p.clone(), true));
                let p = &p;
                let children = self.retry(|s| async move { s.children(p).await.or_none() });
                if let Some(children) = children.await? {
                    top_seen |= p == path;
                    stack.extend(children.into_iter().map(|c| (path::join(p, &c), false)))
                }
            } else {
                let v = if p == path { version } else { None };
                let p = &p;
                match self.retry(|s| async move { s.delete(p, v).await }).await {
                    Ok(()) => {}
                    Err(Error::NoNode(_)) if p != path || (top_seen && v.is_none()) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Curator's `deleteOurPath`: deletes a node this client created (a lock, latch or lease
    /// node), as a guaranteed delete that runs as its own task, so a caller who stops waiting
    /// does not stop the delete. A node already gone is fine. `path` is not checked again: it
    /// is the path a create of ours took (the wire client and the server still check it).
    ///
    /// Under a caller's deadline ([`Deadline::bounding`](crate::wait::Deadline::bounding), an
    /// acquire that gives up), the task keeps that bound: once it has passed, a delete the
    /// connection cannot carry goes to the background loop at once instead of waiting out the
    /// connection timeout and the retry policy's pauses.
    pub(crate) async fn delete_ours(&self, path: &str) -> Result<()> {
        let options = DeleteOptions {
            guaranteed: true,
            ..Default::default()
        };
        match self.delete_as_task(path, options).await {
            Ok(()) | Err(Error::NoNode(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Deletes our node now when connected (awaited, a guaranteed delete), else leaves it to the
    /// guaranteed delete's background loop: for a close or a release that must not wait out a
    /// disconnection (Curator's close deletes in the background).
    pub(crate) async fn delete_ours_unless_disconnected(&self, path: &str) {
        if self.state().is_connected() {
            let _ = self.delete_ours(path).await;
        } else {
            self.delete_ours_in_background(path);
        }
    }

    /// [`delete_ours`](Self::delete_ours) without waiting for it.
    pub(crate) fn delete_ours_in_background(&self, path: &str) {
        let (client, path) = (self.clone(), path.to_string());
        runtime::spawn(async move {
            let _ = client.delete_ours(&path).await;
        });
    }

    fn guaranteed_delete_in_background(&self, path: String, options: DeleteOptions) {
        let p = path.clone();
        self.keep_deleting(
            path,
            Box::new(move |client| {
                let p = p.clone();
                Box::pin(async move { client.delete_now(&p, options).await })
            }),
        );
    }

    /// The background half of Curator's guaranteed delete, the one home of its rule (a plain
    /// guaranteed delete's, and a persistent node's delete on close): after a first try that
    /// failed for want of a connection, `attempt` is tried again as a task of its own, backing
    /// off from 100 ms to 2 s, until it succeeds (a node already gone, `NoNode`, too), fails
    /// for a reason that says something about the next try (logged), or the client closes.
    /// [`pending_guaranteed_deletes`](Client::pending_guaranteed_deletes) counts it while it
    /// runs.
    pub(crate) fn keep_deleting(&self, path: String, attempt: DeleteAttempt) {
        let client = self.clone();
        client
            .inner
            .guaranteed_deletes
            .fetch_add(1, Ordering::SeqCst);
        runtime::spawn(async move {
            let mut backoff = Duration::from_millis(100);
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {},
                    _ = client.closed() => break,
                }
                if client.is_closed() {
                    break;
                }
                match attempt(&client).await {
                    Ok(()) | Err(Error::NoNode(_)) => {
                        tracing::debug!(%path, "guaranteed delete done in the background");
                        break;
                    }
                    // A closed client deletes nothing more (its ephemeral nodes go with it).
                    Err(Error::Closed(_)) => break,
                    Err(e) if retry_later(&e) => {
                        tracing::debug!(%path, retry_in = ?backoff, error = %e, "guaranteed delete: retrying in the background");
                        backoff = (backoff * 2).min(Duration::from_secs(2));
                    }
                    Err(e) => {
                        tracing::warn!(%path, error = %e, "guaranteed delete gave up");
                        break;
                    }
                }
            }
            client
                .inner
                .guaranteed_deletes
                .fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// One try of a delete [`Client::keep_deleting`] goes on with: `Ok` once the node is deleted,
/// gone or no longer to delete.
pub(crate) type DeleteAttempt = Box<
    dyn for<'a> Fn(
            &'a Client,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>>
        + Send
        + Sync,
>;

/// A failure after which a guaranteed delete goes on in the background: one that says nothing
/// about the next try (connection trouble, or no connection in time), or a session expiry (the
/// next session deletes a persistent node; an ephemeral one is gone: `NoNode`).
pub(crate) fn retry_later(e: &Error) -> bool {
    e.is_retryable() || matches!(e, Error::Timeout(_) | Error::SessionExpired(_))
}

fn check_version(op: &str, path: &str, version: Option<i32>) -> Result<()> {
    match version {
        Some(v) if v < -1 => Err(Error::invalid(format!(
            "{op} {path}: version {v} is negative"
        ))),
        _ => Ok(()),
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

    /// [`create_with_acl`](Self::create_with_acl), blocking.
    pub fn create_with_acl_blocking(
        &self,
        path: &str,
        data: &[u8],
        options: CreateOptions,
        acl: &[Acl],
    ) -> Result<Created> {
        runtime::try_block_on(self.create_with_acl(path, data, options, acl))?
    }

    /// [`get_data`](Self::get_data), blocking.
    pub fn get_data_blocking(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        runtime::try_block_on(self.get_data(path))?
    }

    /// [`set_data`](Self::set_data), blocking.
    pub fn set_data_blocking(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        runtime::try_block_on(self.set_data(path, data, version))?
    }

    /// [`get_data_decompressed`](Self::get_data_decompressed), blocking.
    pub fn get_data_decompressed_blocking(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        runtime::try_block_on(self.get_data_decompressed(path))?
    }

    /// [`set_data_compressed`](Self::set_data_compressed), blocking.
    pub fn set_data_compressed_blocking(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat> {
        runtime::try_block_on(self.set_data_compressed(path, data, version))?
    }

    /// [`exists`](Self::exists), blocking.
    pub fn exists_blocking(&self, path: &str) -> Result<Option<Stat>> {
        runtime::try_block_on(self.exists(path))?
    }

    /// [`sync`](Self::sync), blocking.
    pub fn sync_blocking(&self, path: &str) -> Result<()> {
        runtime::try_block_on(self.sync(path))?
    }

    /// [`get_children`](Self::get_children), blocking.
    pub fn get_children_blocking(&self, path: &str) -> Result<Vec<String>> {
        runtime::try_block_on(self.get_children(path))?
    }

    /// [`delete`](Self::delete), blocking.
    pub fn delete_blocking(&self, path: &str, options: DeleteOptions) -> Result<()> {
        runtime::try_block_on(self.delete(path, options))?
    }

    /// [`get_acl`](Self::get_acl), blocking.
    pub fn get_acl_blocking(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        runtime::try_block_on(self.get_acl(path))?
    }

    /// [`set_acl`](Self::set_acl), blocking.
    pub fn set_acl_blocking(&self, path: &str, acl: &[Acl], version: Option<i32>) -> Result<Stat> {
        runtime::try_block_on(self.set_acl(path, acl, version))?
    }
}
