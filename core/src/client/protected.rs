//! Curator's protected create — the one implementation every recipe and the plain `create` use.
//!
//! The node's name gets a `_c_<uuid v4>-` prefix. If a create's reply is lost, the retry first
//! looks for a child with that prefix owned by the current session (after a `sync`) and takes
//! it instead of creating a second node. A caller that gives up while a create may have been
//! applied hands the prefix to [`ProtectedId::cleanup`], which finds the node and deletes it in
//! the background, so an abandoned attempt never leaves a node in a live session (Curator's
//! `findAndDeleteProtectedNodeInBackground`). A cleanup that cannot finish says so at WARN,
//! naming what may be left.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::session::{OrNone, Session};
use super::types::{Acl, CreateMode, Parents, Stat};
use super::Client;
use crate::{path, runtime, Error, Result};

/// The protected prefix of one logical create, and whether a create carrying it may have
/// reached the server. Clones share the flag. Keep it across tries of the same logical create
/// (the latch keeps it across its retries); drop it once the node is known.
#[derive(Clone, Debug)]
pub(crate) struct ProtectedId {
    prefix: Arc<str>,
    /// The mode of the first create sent with this prefix (none sent: empty).
    sent: Arc<OnceLock<CreateMode>>,
}

/// How many rounds a cleanup makes before it gives up (a round: look, delete, 200 ms).
const CLEANUP_ROUNDS: u32 = 30;

impl ProtectedId {
    /// A fresh `_c_<uuid v4>-` prefix.
    pub(crate) fn new() -> ProtectedId {
        // Written in place: one allocation (the `Arc`), not a growing `String` copied into it.
        let mut buf = *b"_c_00000000-0000-0000-0000-000000000000-";
        uuid::Uuid::new_v4()
            .hyphenated()
            .encode_lower(&mut buf[3..39]);
        let prefix = std::str::from_utf8(&buf).expect("a uuid's text is ASCII");
        ProtectedId {
            prefix: prefix.into(),
            sent: Arc::default(),
        }
    }

    /// `_c_<uuid>-`.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether a create with this prefix may have reached the server.
    pub(crate) fn maybe_sent(&self) -> bool {
        self.sent.get().is_some()
    }

    fn mark_sent(&self, mode: CreateMode) {
        let _ = self.sent.set(mode);
    }

    /// Finds the node this prefix may have created under `parent` and deletes it, in the
    /// background; nothing if no create was sent. A miss is looked at three times (after a
    /// `sync` each), because a request from a connection that just ended may still be on its
    /// way to the leader, where the session's move then refuses it.
    /// The handle resolves when the cleanup is over (for a caller that wants to wait for it).
    ///
    /// A cleanup that ends without deleting the node — [`CLEANUP_ROUNDS`] failed rounds, or the
    /// client closed or dropped before a persistent node was found — logs a WARN naming the
    /// node (`parent/_c_<uuid>-…`), its mode and the last error: an ephemeral one goes with the
    /// session, a persistent one stays until someone deletes it.
    pub(crate) fn cleanup(
        &self,
        client: &Client,
        parent: &str,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let mode = *self.sent.get()?;
        let weak = client.downgrade();
        let (parent, prefix) = (parent.to_string(), self.prefix.clone());
        Some(runtime::spawn(async move {
            let node = format!("{}…", path::join(&parent, &prefix));
            let left = if mode.is_ephemeral() {
                "an ephemeral node goes with its session"
            } else {
                "a persistent node stays until someone deletes it"
            };
            let mut misses = 0;
            let mut last_error: Option<Error> = None;
            for _ in 0..CLEANUP_ROUNDS {
                let client = weak.upgrade().filter(|c| !c.is_closed());
                let Some(client) = client else {
                    // The session's close removes an ephemeral node; a persistent one stays.
                    if !mode.is_ephemeral() {
                        tracing::warn!(%node, mode = mode.name(), left, "protected create: the client closed before the node of an abandoned create was found; it may be left");
                    }
                    return;
                };
                let round = async {
                    let s = client.session().await?;
                    let Some(found) =
                        find_protected(&s, &parent, &prefix, CreateMode::Persistent).await?
                    else {
                        return Ok(None);
                    };
                    s.delete(&found.path, None).await.or_none()?;
                    Ok(Some(found.path))
                };
                match round.await {
                    Ok(Some(path)) => {
                        tracing::info!(%path, "deleted the node of an abandoned protected create");
                        return;
                    }
                    Ok(None) => {
                        misses += 1;
                        if misses >= 3 {
                            return;
                        }
                    }
                    Err(e) => last_error = Some(e),
                }
                drop(client);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            let error = last_error.map(|e| e.to_string()).unwrap_or_default();
            tracing::warn!(%node, mode = mode.name(), left, %error, rounds = CLEANUP_ROUNDS, "protected create: gave up deleting the node of an abandoned create; it may be left");
        }))
    }
}

/// A protected create: `parent/_c_<uuid>-<name>[seq]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProtectedCreate<'a> {
    /// The parent (caller's path).
    pub(crate) parent: &'a str,
    /// The name after the prefix (`lock-`, `latch-`, `__READ__`, ...); the server appends the
    /// sequence number for sequential modes.
    pub(crate) name: &'a str,
    pub(crate) data: &'a [u8],
    pub(crate) mode: CreateMode,
    pub(crate) parents: Parents,
    /// Also list `parent`'s children, pipelined right behind the create on the same session:
    /// the listing already shows the new node, and an uncontended lock or latch is decided
    /// after one round trip.
    pub(crate) list_parent: bool,
}

/// The node a protected create made, or found again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProtectedNode {
    /// Its path (caller's).
    pub(crate) path: String,
    /// Its name (last segment).
    pub(crate) name: String,
    pub(crate) stat: Stat,
    /// The session the create (or the find) ran in.
    pub(crate) session: i64,
    /// The parent's children, listed right after the create (`None` when not asked, when the
    /// node was found again, or when the listing failed).
    pub(crate) listing: Option<Vec<String>>,
}

impl Client {
    /// Curator's protected create, under the retry policy (see the module notes). `id` says
    /// which prefix to use and remembers whether a create may have been sent, across tries and
    /// across calls with the same `id`.
    pub(crate) async fn create_protected(
        &self,
        id: &ProtectedId,
        req: ProtectedCreate<'_>,
    ) -> Result<ProtectedNode> {
        self.create_protected_ttl(id, req, None).await
    }

    /// [`create_protected`](Self::create_protected) with the TTL of a TTL mode.
    pub(crate) async fn create_protected_ttl(
        &self,
        id: &ProtectedId,
        req: ProtectedCreate<'_>,
        ttl: Option<Duration>,
    ) -> Result<ProtectedNode> {
        self.create_protected_with(id, req, ttl, None).await
    }

    /// [`create_protected_ttl`](Self::create_protected_ttl) with the node's own ACL (`None`:
    /// the client's provider's).
    pub(crate) async fn create_protected_with(
        &self,
        id: &ProtectedId,
        req: ProtectedCreate<'_>,
        ttl: Option<Duration>,
        acl: Option<&[Acl]>,
    ) -> Result<ProtectedNode> {
        let node_path = path::join_parts(req.parent, &[id.prefix(), req.name]);
        self.retry(|s| {
            let node_path = &node_path;
            async move {
                if id.maybe_sent() {
                    if let Some(found) = find_protected(&s, req.parent, id.prefix(), req.mode).await? {
                        tracing::info!(path = %found.path, "protected create: found our node after a lost reply (not created twice)");
                        return Ok(found);
                    }
                }
                id.mark_sent(req.mode);
                let create =
                    s.create_with_parents_acl(node_path, req.data, req.mode, ttl, req.parents, acl);
                // Sent right behind the first create: it lists the new node — unless that
                // create found no parent (made now, and the node created again after it): then
                // the listing, taken in between, may show other nodes but not ours, and the
                // caller lists for itself.
                let listing = req.list_parent.then(|| s.children(req.parent));
                let (created, listed) = match listing {
                    Some(l) => {
                        let (c, l) = tokio::join!(create, l);
                        (c, l.ok())
                    }
                    None => (create.await, None),
                };
                let c = created?;
                let name = path::node_name(&c.path).to_string();
                Ok(ProtectedNode {
                    listing: listed.filter(|l| l.contains(&name)),
                    name,
                    path: c.path,
                    stat: c.stat,
                    session: s.id(),
                })
            }
        })
        .await
    }
}

/// Finds a child of `parent` named with `prefix` that a protected create made: for ephemeral
/// modes, only one owned by this session.
///
/// `sync`s first. The create whose outcome we are looking for may have been sent through
/// another server (before a reconnect), and the server we are on now may not have applied it
/// yet: the client's last-seen zxid does not cover a create whose reply was lost, so ZooKeeper
/// lets us reconnect to a server that is behind. Without the `sync`, a lagging listing says
/// "not there", we create a second node, and the first one, ours but unknown to us, sits at the
/// head of the lock or election until the session ends (the fault suite's stalls after an
/// ensemble leader kill and a server pause). The leader answers a `sync` only after every
/// proposal it had when the `sync` arrived is committed, and a request still on its way from
/// the old connection is refused once the session has moved (`SessionMoved`), so after the
/// `sync` the listing is the truth.
pub(crate) async fn find_protected(
    s: &Session,
    parent: &str,
    prefix: &str,
    mode: CreateMode,
) -> Result<Option<ProtectedNode>> {
    s.sync(parent).await?;
    let Some(children) = s.children(parent).await.or_none()? else {
        return Ok(None);
    };
    for child in children.into_iter().filter(|c| c.starts_with(prefix)) {
        let p = path::join(parent, &child);
        match s.exists(&p).await? {
            Some(stat) if !mode.is_ephemeral() || s.owns(&stat) => {
                return Ok(Some(ProtectedNode {
                    path: p,
                    name: child,
                    stat,
                    session: s.id(),
                    listing: None,
                }))
            }
            _ => {}
        }
    }
    Ok(None)
}

/// Cleans up after a one-shot protected create unless [`settle`](Self::settle)d with an
/// outcome that is known: dropped while armed (the caller's future was dropped, or it gave up
/// on a connection loss), it runs [`ProtectedId::cleanup`].
pub(crate) struct ProtectedGuard {
    client: Client,
    parent: String,
    id: ProtectedId,
    armed: bool,
}

impl ProtectedGuard {
    pub(crate) fn new(client: &Client, parent: &str, id: &ProtectedId) -> ProtectedGuard {
        ProtectedGuard {
            client: client.clone(),
            parent: parent.to_string(),
            id: id.clone(),
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

impl Drop for ProtectedGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.id.cleanup(&self.client, &self.parent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_curators_c_uuid_dash() {
        let a = ProtectedId::new();
        let b = ProtectedId::new();
        for id in [&a, &b] {
            let p = id.prefix();
            assert_eq!(p.len(), 40, "{p}");
            assert!(p.starts_with("_c_") && p.ends_with('-'), "{p}");
            let uuid = uuid::Uuid::parse_str(&p[3..39]).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert_eq!(uuid.get_version_num(), 4, "{p}");
            assert_eq!(
                &p[3..39],
                uuid.hyphenated().to_string(),
                "lower case, hyphenated"
            );
            assert!(!id.maybe_sent());
        }
        assert_ne!(a.prefix(), b.prefix());
    }
}
