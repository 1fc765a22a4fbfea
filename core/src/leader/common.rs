//! Pieces shared by the latch, the selector and the observer: participants, policies, node
//! naming and sorting (Curator's LockInternals), protected creation, listener dispatch.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use zookeeper_client as zk;

use crate::client::{Counters, CreateMode, CreateOptions, DeleteOptions};
use crate::{path, Client, Error, Result};

/// Curator's `LeaderLatch.LOCK_NAME`.
pub(crate) const LATCH_NAME: &str = "latch-";
/// Curator's `LockInternals` lock name, used by LeaderSelector's mutex.
pub(crate) const LOCK_NAME: &str = "lock-";

/// A member of a leadership group, as read from its node (Curator's `Participant`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Participant {
    /// The participant id: the node's data, decoded as UTF-8 (invalid bytes become U+FFFD, as
    /// Java's `new String(bytes, "UTF-8")` does).
    pub id: String,
    /// Whether this participant leads (its node sorts first).
    pub is_leader: bool,
}

impl Participant {
    /// Curator's dummy `Participant("", false)`: what [`get_leader`](crate::leader::LeaderLatch::get_leader)
    /// returns when nobody takes part.
    pub fn none() -> Participant {
        Participant::default()
    }
}

/// How [`LeaderLatch::close`](crate::leader::LeaderLatch::close) treats the listeners (Curator's
/// `LeaderLatch.CloseMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CloseMode {
    /// Closing does not call `not_leader` (Curator's default).
    #[default]
    Silent,
    /// Closing while leading calls `not_leader`.
    NotifyLeader,
}

/// Which connection states end leadership (Curator's `ConnectionStateErrorPolicy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LostPolicy {
    /// Curator's `StandardConnectionStateErrorPolicy`: SUSPENDED already ends leadership
    /// (another participant may lead by the time the connection is back), as does LOST.
    /// Leadership is re-checked on RECONNECTED — with the same node, if it survived.
    #[default]
    Standard,
    /// Curator's `SessionConnectionStateErrorPolicy`: only LOST ends leadership; a leader whose
    /// connection drops keeps leading while its session may still be alive. Cheaper
    /// failovers, weaker guarantee: fence writes with the leadership epoch.
    Session,
}

impl LostPolicy {
    /// Whether `state` ends leadership under this policy.
    pub fn is_error_state(self, state: crate::ConnectionState) -> bool {
        use crate::ConnectionState::*;
        match state {
            Lost => true,
            Suspended => self == LostPolicy::Standard,
            Connected | Reconnected | ReadOnly => false,
        }
    }
}

/// A change of leadership, for listeners (Curator's `LeaderLatchListener`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeadershipEvent {
    /// This participant became leader (`isLeader()`).
    IsLeader,
    /// This participant stopped being leader (`notLeader()`).
    NotLeader,
}

/// Checks a participant id: it is stored as node data and read back by every face, so it must
/// fit a node and must not contain NUL (C reads ids as NUL-terminated strings).
pub(crate) fn validate_id(id: &str) -> Result<()> {
    if id.len() > path::MAX_DATA_LEN {
        return Err(Error::invalid(format!(
            "participant id is {} bytes; the limit is {} bytes (it is stored as node data)",
            id.len(),
            path::MAX_DATA_LEN
        )));
    }
    if id.contains('\0') {
        return Err(Error::invalid(
            "participant id must not contain NUL characters",
        ));
    }
    Ok(())
}

/// Checks a leadership group path: a valid ZooKeeper path other than the root (the group's
/// nodes are its children, and the root's children are everyone's).
pub(crate) fn validate_group_path(what: &str, p: &str) -> Result<()> {
    path::validate_path(p).map_err(|e| Error::invalid(format!("{what} path: {}", e.message())))?;
    if p == "/" {
        return Err(Error::invalid(format!(
            "{what} path must not be the root \"/\": its participants are created as children of it"
        )));
    }
    Ok(())
}

/// Curator's `StandardLockInternalsDriver.standardFixForSorting`: the text after the last
/// `lock_name`, or the whole name when it does not contain it.
pub(crate) fn sort_key<'a>(name: &'a str, lock_name: &str) -> &'a str {
    match name.rfind(lock_name) {
        Some(i) => &name[i + lock_name.len()..],
        None => name,
    }
}

/// Sorts children as Curator's `LockInternals.getSortedChildren` (stable, no filtering).
pub(crate) fn sort_children(children: &mut [String], lock_name: &str) {
    children.sort_by(|a, b| sort_key(a, lock_name).cmp(sort_key(b, lock_name)));
}

/// The sort key for an observer, who may look at a latch (`latch-`) or a selector (`lock-`).
pub(crate) fn observer_key(name: &str) -> &str {
    if name.contains(LATCH_NAME) {
        sort_key(name, LATCH_NAME)
    } else {
        sort_key(name, LOCK_NAME)
    }
}

fn decode_id(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// Reads the participants of a group from its nodes' data, in node order, with pipelined reads.
/// The first node still present is flagged leader (Curator flags the first listed node even if
/// it vanished in between, leaving nobody flagged; the next node is the one about to lead).
pub(crate) async fn read_participants(
    client: &Client,
    group: &str,
    key: fn(&str) -> &str,
) -> Result<Vec<Participant>> {
    if client.is_closed() {
        return Err(Error::closed());
    }
    let full_group = client.full_path(group);
    client
        .retry(|zk| {
            let full_group = full_group.clone();
            async move {
                Counters::bump(&client.counters().get_children);
                let mut children = match zk.list_children(&full_group).await {
                    Ok(c) => c,
                    Err(zk::Error::NoNode) => return Ok(Vec::new()),
                    Err(e) => return Err(Error::from_zk(e, "get children", group)),
                };
                children.sort_by(|a, b| key(a).cmp(key(b)));
                // Requests go out in call order and one session's replies come back in order:
                // all the reads cost about one round trip.
                let reads: Vec<_> = children
                    .iter()
                    .map(|c| {
                        Counters::bump(&client.counters().get_data);
                        zk.get_data(&path::join(&full_group, c))
                    })
                    .collect();
                let mut out = Vec::with_capacity(children.len());
                for (read, child) in reads.into_iter().zip(&children) {
                    match read.await {
                        Ok((data, _)) => out.push(Participant {
                            id: decode_id(&data),
                            is_leader: out.is_empty(),
                        }),
                        Err(zk::Error::NoNode) => {}
                        Err(e) => {
                            return Err(Error::from_zk(e, "get data", &path::join(group, child)))
                        }
                    }
                }
                Ok(out)
            }
        })
        .await
}

/// The leader of a group: the first node (in sort order) still present, or
/// `Participant("", false)` when there is none.
pub(crate) async fn read_leader(
    client: &Client,
    group: &str,
    key: fn(&str) -> &str,
) -> Result<Participant> {
    Ok(read_leader_node(client, group, key)
        .await?
        .map(|(_, p)| p)
        .unwrap_or_default())
}

/// Like [`read_leader`], also naming the leader's node.
pub(crate) async fn read_leader_node(
    client: &Client,
    group: &str,
    key: fn(&str) -> &str,
) -> Result<Option<(String, Participant)>> {
    if client.is_closed() {
        return Err(Error::closed());
    }
    let full_group = client.full_path(group);
    client
        .retry(|zk| {
            let full_group = full_group.clone();
            async move {
                Counters::bump(&client.counters().get_children);
                let mut children = match zk.list_children(&full_group).await {
                    Ok(c) => c,
                    Err(zk::Error::NoNode) => return Ok(None),
                    Err(e) => return Err(Error::from_zk(e, "get children", group)),
                };
                children.sort_by(|a, b| key(a).cmp(key(b)));
                for child in children {
                    Counters::bump(&client.counters().get_data);
                    match zk.get_data(&path::join(&full_group, &child)).await {
                        Ok((data, _)) => {
                            return Ok(Some((
                                child,
                                Participant {
                                    id: decode_id(&data),
                                    is_leader: true,
                                },
                            )))
                        }
                        Err(zk::Error::NoNode) => continue,
                        Err(e) => {
                            return Err(Error::from_zk(e, "get data", &path::join(group, &child)))
                        }
                    }
                }
                Ok(None)
            }
        })
        .await
}

/// Our node in a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OurNode {
    /// The node name (no parent).
    pub(crate) name: String,
    /// Its czxid: the leadership epoch / fencing token.
    pub(crate) czxid: i64,
    /// The session that owns it.
    pub(crate) owner: i64,
}

/// What a creation returned: our node, and the group's children when they could be read in the
/// same round trip (pipelined after the create, so they include our node).
pub(crate) struct CreatedNode {
    pub(crate) node: OurNode,
    pub(crate) children: Option<Vec<String>>,
    pub(crate) session: i64,
}

/// Creates `<group>/<prefix><lock_name><seq>` (prefix = `_c_<uuid>-`), ephemeral-sequential,
/// parents as containers, with Curator's protection: a retry after a connection loss first
/// looks for a node with our prefix owned by this session. `sent` records whether a create may
/// have reached the server (so that an abandoned attempt knows to look for a node to delete).
pub(crate) async fn create_protected_node(
    client: &Client,
    group: &str,
    prefix: &str,
    lock_name: &str,
    data: &[u8],
    sent: &AtomicBool,
) -> Result<CreatedNode> {
    let full_group = client.full_path(group);
    let full_node = path::join(&full_group, &format!("{prefix}{lock_name}"));
    let acl = client.cfg().acl.clone();
    client
        .retry(|zk| {
            let full_group = full_group.clone();
            let full_node = full_node.clone();
            let acl = acl.clone();
            async move {
                let session = zk.session_id().0;
                if sent.load(Ordering::SeqCst) {
                    if let Some(found) = client
                        .find_protected(&zk, group, prefix, CreateMode::EphemeralSequential)
                        .await?
                    {
                        let node = OurNode {
                            name: path::node_name(&found.path).to_string(),
                            czxid: found.stat.czxid,
                            owner: found.stat.ephemeral_owner,
                        };
                        return Ok(CreatedNode {
                            node,
                            children: None,
                            session,
                        });
                    }
                }
                let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::new(&acl));
                let mut made_parents = false;
                loop {
                    sent.store(true, Ordering::SeqCst);
                    Counters::bump(&client.counters().create);
                    Counters::bump(&client.counters().get_children);
                    // The server runs one session's requests in order: the listing sees our node,
                    // and leadership is known after one round trip.
                    let create = zk.create(&full_node, data, &options);
                    let list = zk.list_children(&full_group);
                    let (created, listed) = tokio::join!(create, list);
                    match created {
                        Ok((stat, seq)) => {
                            let node = OurNode {
                                name: format!("{prefix}{lock_name}{seq}"),
                                czxid: stat.czxid,
                                owner: stat.ephemeral_owner,
                            };
                            return Ok(CreatedNode {
                                node,
                                children: listed.ok(),
                                session,
                            });
                        }
                        Err(zk::Error::NoNode) if !made_parents => {
                            made_parents = true;
                            match client
                                .create(
                                    group,
                                    &[],
                                    CreateOptions::new(CreateMode::Container).parents(),
                                )
                                .await
                            {
                                Ok(_) | Err(Error::NodeExists(_)) => {}
                                Err(e) => return Err(e),
                            }
                        }
                        Err(e) => {
                            return Err(Error::from_zk(
                                e,
                                "create",
                                &path::join(group, &format!("{prefix}{lock_name}")),
                            ))
                        }
                    }
                }
            }
        })
        .await
}

/// Deletes a node of ours (Curator's guaranteed delete: on connection trouble it keeps trying
/// in the background). A node already gone is fine.
pub(crate) async fn delete_node(client: &Client, node_path: &str) -> Result<()> {
    match client
        .delete(
            node_path,
            DeleteOptions {
                guaranteed: true,
                ..Default::default()
            },
        )
        .await
    {
        Ok(()) | Err(Error::NoNode(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Finds and deletes the node of an abandoned protected create (Curator's
/// `findAndDeleteProtectedNodeInBackground`), best effort.
pub(crate) async fn delete_protected(client: &Client, group: &str, prefix: &str) {
    let _ = client
        .retry(|zk| async move {
            if let Some(found) = client
                .find_protected(&zk, group, prefix, CreateMode::EphemeralSequential)
                .await?
            {
                Counters::bump(&client.counters().delete);
                match zk.delete(&client.full_path(&found.path), None).await {
                    Ok(()) | Err(zk::Error::NoNode) => {}
                    Err(e) => return Err(Error::from_zk(e, "delete", &found.path)),
                }
            }
            Ok(())
        })
        .await;
}

/// A fresh protected prefix `_c_<uuid v4>-`.
pub(crate) fn protected_prefix() -> String {
    format!("_c_{}-", uuid::Uuid::new_v4())
}

/// A listener id, for removal.
pub type ListenerId = u64;

type Listener<E> = Arc<dyn Fn(E) + Send + Sync>;
type Listeners<E> = Arc<Mutex<Vec<(ListenerId, Listener<E>)>>>;

/// Runs listeners one at a time, in event order, on a thread of their own (started with the
/// first listener): a listener may block (a Python callback waiting for the GIL) or call back
/// into the blocking API without stalling the recipe's state machine.
pub(crate) struct Dispatcher<E: Clone + Send + 'static> {
    listeners: Listeners<E>,
    sender: Mutex<Option<mpsc::Sender<E>>>,
    next: AtomicU64,
    name: &'static str,
}

impl<E: Clone + Send + 'static> Dispatcher<E> {
    pub(crate) fn new(name: &'static str) -> Self {
        Dispatcher {
            listeners: Arc::default(),
            sender: Mutex::new(None),
            next: AtomicU64::new(1),
            name,
        }
    }

    pub(crate) fn add(&self, listener: impl Fn(E) + Send + Sync + 'static) -> ListenerId {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, Arc::new(listener)));
        let mut sender = self.sender.lock().unwrap_or_else(|e| e.into_inner());
        if sender.is_none() {
            let (tx, rx) = mpsc::channel::<E>();
            let listeners = self.listeners.clone();
            let spawned = std::thread::Builder::new()
                .name(self.name.into())
                .spawn(move || {
                    // Ends when the recipe (the sender's owner) is gone.
                    while let Ok(event) = rx.recv() {
                        let snapshot: Vec<Listener<E>> = listeners
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .iter()
                            .map(|(_, l)| l.clone())
                            .collect();
                        for l in snapshot {
                            let ev = event.clone();
                            let _ =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l(ev)));
                        }
                    }
                });
            if spawned.is_ok() {
                *sender = Some(tx);
            }
        }
        id
    }

    pub(crate) fn remove(&self, id: ListenerId) -> bool {
        let mut l = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        let before = l.len();
        l.retain(|(i, _)| *i != id);
        l.len() != before
    }

    pub(crate) fn emit(&self, event: E) {
        if let Some(tx) = self
            .sender
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            let _ = tx.send(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_on_the_text_after_the_last_lock_name() {
        let mut c = vec![
            "_c_b0000000-0000-4000-8000-000000000000-latch-0000000003".to_string(),
            "_c_a0000000-0000-4000-8000-000000000000-latch-0000000010".to_string(),
            "_c_f0000000-0000-4000-8000-000000000000-latch-0000000001".to_string(),
        ];
        sort_children(&mut c, LATCH_NAME);
        assert!(
            c[0].ends_with("0000000001")
                && c[1].ends_with("0000000003")
                && c[2].ends_with("0000000010")
        );
        // A uuid containing the lock name does not confuse the key: the *last* one counts.
        assert_eq!(
            sort_key("_c_x-latch-y-latch-0000000007", LATCH_NAME),
            "0000000007"
        );
        assert_eq!(sort_key("other", LATCH_NAME), "other");
        assert_eq!(observer_key("_c_x-lock-0000000002"), "0000000002");
        assert_eq!(observer_key("_c_x-latch-0000000002"), "0000000002");
    }

    #[test]
    fn rejects_bad_ids_and_group_paths() {
        assert!(validate_id("").is_ok());
        assert!(validate_id("node-1 ✓").is_ok());
        assert!(matches!(
            validate_id("a\0b"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            validate_id(&"x".repeat(path::MAX_DATA_LEN + 1)),
            Err(Error::InvalidArgument(_))
        ));
        for p in ["", "/", "rel", "/a/", "/a//b"] {
            assert!(
                matches!(
                    validate_group_path("latch", p),
                    Err(Error::InvalidArgument(_))
                ),
                "{p:?}"
            );
        }
        assert!(validate_group_path("latch", "/a/b").is_ok());
    }

    #[test]
    fn policies_follow_curator() {
        use crate::ConnectionState::*;
        assert!(LostPolicy::Standard.is_error_state(Suspended));
        assert!(!LostPolicy::Session.is_error_state(Suspended));
        assert!(LostPolicy::Session.is_error_state(Lost));
        assert!(!LostPolicy::Standard.is_error_state(Reconnected));
    }
}
