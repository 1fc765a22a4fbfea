//! Who takes part at a recipe path (Curator's `getParticipantNodes`, extended): every
//! participant node in line order with its role — a lock's holder and waiters, a read/write
//! lock's readers and writers, a semaphore's leases and the line for them, a latch's leader and
//! the others — read from Curator 5.x's node layouts with the recipes' own rules (their node
//! names, their sort keys, their lock drivers), so that a face only formats what it shows
//! (`zkr inspect` and the status line of `zkr lock`/`zkr elect`).
//!
//! A path holds one of the [`Layout`]s: participant nodes tell the lock family and the latch
//! apart (a LeaderSelector is a mutex on disk), `leases`/`locks` children a semaphore, and a
//! childless persistent node's data a counter (8 bytes) or a shared count (4 bytes).

use crate::client::{sequence, OrNone, Session};
use crate::leader::common::{LATCH_NAME, LOCK_NAME};
use crate::lock::internals::{Driver, Predicate, Sorter, READ_LOCK_NAME, WRITE_LOCK_NAME};
use crate::lock::semaphore::{LEASE_BASE_NAME, LEASE_PARENT, LOCK_PARENT};
use crate::{path, Client, Result, Stat};

/// What a participant node's name says it is (by Curator's node names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// `…lock-<seq>`: an InterProcessMutex's (or a LeaderSelector's) node.
    Lock,
    /// `…__READ__<seq>`: a read/write lock's reader.
    Read,
    /// `…__WRIT__<seq>`: a read/write lock's writer.
    Write,
    /// `…latch-<seq>`: a LeaderLatch participant.
    Latch,
    /// `…lease-<seq>`: a semaphore's lease.
    Lease,
}

impl NodeKind {
    /// Every kind.
    pub const ALL: &'static [NodeKind] = &[
        NodeKind::Lock,
        NodeKind::Read,
        NodeKind::Write,
        NodeKind::Latch,
        NodeKind::Lease,
    ];

    /// `lock`, `read`, `write`, `latch`, `lease`.
    pub const fn name(self) -> &'static str {
        match self {
            NodeKind::Lock => "lock",
            NodeKind::Read => "read",
            NodeKind::Write => "write",
            NodeKind::Latch => "latch",
            NodeKind::Lease => "lease",
        }
    }

    /// The kind of a node name, if it is a participant's. `__READ__`/`__WRIT__` first: a read
    /// or write node never contains `lock-` (the protected prefix is a hex UUID).
    pub fn of(name: &str) -> Option<NodeKind> {
        [
            NodeKind::Read,
            NodeKind::Write,
            NodeKind::Latch,
            NodeKind::Lease,
            NodeKind::Lock,
        ]
        .into_iter()
        .find(|k| name.contains(k.marker()))
    }

    /// The name the recipe gives its nodes (the sort key is the text after its last occurrence).
    fn marker(self) -> &'static str {
        match self {
            NodeKind::Lock => LOCK_NAME,
            NodeKind::Read => READ_LOCK_NAME,
            NodeKind::Write => WRITE_LOCK_NAME,
            NodeKind::Latch => LATCH_NAME,
            NodeKind::Lease => LEASE_BASE_NAME,
        }
    }

    /// Curator's sort key of a node of this kind: the sequence after its name.
    fn key(name: &str) -> &str {
        match NodeKind::of(name) {
            Some(k) => sequence::key(name, k.marker()),
            None => name,
        }
    }
}

/// A participant's part in its recipe now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Holds the lock (a mutex's first node; a writer at the head of a read/write lock; every
    /// reader before the first writer).
    Holder,
    /// Waits in line for the lock, or (a semaphore's `locks` line) for its turn to take a lease.
    Waiting,
    /// Leads (a latch's first node).
    Leader,
    /// Takes part in a latch without leading.
    Participant,
    /// Has (or is taking) a semaphore lease.
    Lease,
    /// First in a semaphore's `locks` line: taking a lease now.
    Acquiring,
}

impl Role {
    /// Every role.
    pub const ALL: &'static [Role] = &[
        Role::Holder,
        Role::Waiting,
        Role::Leader,
        Role::Participant,
        Role::Lease,
        Role::Acquiring,
    ];

    /// `holder`, `waiting`, `leader`, `participant`, `lease`, `acquiring`.
    pub const fn name(self) -> &'static str {
        match self {
            Role::Holder => "holder",
            Role::Waiting => "waiting",
            Role::Leader => "leader",
            Role::Participant => "participant",
            Role::Lease => "lease",
            Role::Acquiring => "acquiring",
        }
    }
}

/// What a path holds, by its layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `lock-` nodes: an InterProcessMutex, or a LeaderSelector (the same layout).
    Mutex,
    /// `__READ__`/`__WRIT__` nodes: an InterProcessReadWriteLock.
    ReadWrite,
    /// Only `leases` and `locks` children: an InterProcessSemaphoreV2 (or SemaphoreMutex).
    Semaphore,
    /// `latch-` nodes: a LeaderLatch.
    Latch,
    /// No children, 8 bytes of data: a DistributedAtomicLong with this value.
    Counter(i64),
    /// No children, 4 bytes of data: a SharedCount (or DistributedAtomicInteger).
    SharedCount(i32),
    /// No children, no data (an idle lock, latch or semaphore path, or a counter never written).
    Empty,
    /// Something else.
    Unknown,
}

impl Layout {
    /// `mutex`, `read_write_lock`, `semaphore`, `leader_latch`, `counter`, `shared_count`,
    /// `empty`, `unknown`.
    pub const fn name(self) -> &'static str {
        match self {
            Layout::Mutex => "mutex",
            Layout::ReadWrite => "read_write_lock",
            Layout::Semaphore => "semaphore",
            Layout::Latch => "leader_latch",
            Layout::Counter(_) => "counter",
            Layout::SharedCount(_) => "shared_count",
            Layout::Empty => "empty",
            Layout::Unknown => "unknown",
        }
    }
}

/// One participant node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParticipantNode {
    /// Its name (the last segment).
    pub name: String,
    /// Its path (the caller's: without the namespace).
    pub path: String,
    /// What its name says it is.
    pub kind: Option<NodeKind>,
    /// Its part in the recipe now.
    pub role: Role,
    /// Its stat: `czxid` is the participant's fencing token or epoch, `ephemeral_owner` its
    /// session, `ctime` when it joined.
    pub stat: Stat,
    /// Its data (the participant id of a latch or selector; a lock's data).
    pub data: Vec<u8>,
}

impl ParticipantNode {
    /// The session the node lives and dies with.
    pub fn session(&self) -> i64 {
        self.stat.ephemeral_owner
    }
}

/// Who takes part at a path, read at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Participants {
    /// The path read.
    pub path: String,
    /// What it holds.
    pub layout: Layout,
    /// Its participants in line order (a semaphore's leases).
    pub nodes: Vec<ParticipantNode>,
    /// A semaphore's line for its internal lock (`locks`): who takes a lease next.
    pub queue: Vec<ParticipantNode>,
    /// Children that are not participants.
    pub others: Vec<String>,
    /// The path's own data.
    pub data: Vec<u8>,
}

impl Participants {
    /// The place (0-based) of the first node of `session` in the line: the nodes, then (a
    /// semaphore) the queue.
    pub fn position_of(&self, session: i64) -> Option<usize> {
        self.nodes
            .iter()
            .chain(&self.queue)
            .position(|n| n.session() == session)
    }
}

/// Reads who takes part at `path` and in which role (`NoNode` if there is no node).
pub async fn participants(client: &Client, path: &str) -> Result<Participants> {
    path::validate_path(path)?;
    let (data, stat) = client.get_data(path).await?;
    let children = client.get_children(path).await?;
    let has = |kind: NodeKind| children.iter().any(|c| NodeKind::of(c) == Some(kind));
    let layout = if has(NodeKind::Read) || has(NodeKind::Write) {
        Layout::ReadWrite
    } else if has(NodeKind::Latch) {
        Layout::Latch
    } else if has(NodeKind::Lock) {
        Layout::Mutex
    } else if !children.is_empty()
        && children
            .iter()
            .all(|c| c == LEASE_PARENT || c == LOCK_PARENT)
    {
        Layout::Semaphore
    } else if children.is_empty() && stat.ephemeral_owner == 0 {
        match <[u8; 8]>::try_from(&data[..]) {
            Ok(b) => Layout::Counter(i64::from_be_bytes(b)),
            Err(_) => match <[u8; 4]>::try_from(&data[..]) {
                Ok(b) => Layout::SharedCount(i32::from_be_bytes(b)),
                Err(_) if data.is_empty() => Layout::Empty,
                Err(_) => Layout::Unknown,
            },
        }
    } else {
        Layout::Unknown
    };
    let mut report = Participants {
        path: path.to_string(),
        layout,
        nodes: Vec::new(),
        queue: Vec::new(),
        others: Vec::new(),
        data,
    };
    match layout {
        Layout::Mutex | Layout::ReadWrite | Layout::Latch => {
            let (nodes, others): (Vec<_>, Vec<_>) = children
                .into_iter()
                .partition(|c| NodeKind::of(c).is_some());
            report.nodes = read_nodes(client, path, nodes, layout).await?;
            report.others = others;
        }
        Layout::Semaphore => {
            report.nodes = read_line(client, &path::join(path, LEASE_PARENT), layout).await?;
            report.queue = read_line(client, &path::join(path, LOCK_PARENT), layout).await?;
            for (i, n) in report.queue.iter_mut().enumerate() {
                n.role = if i == 0 {
                    Role::Acquiring
                } else {
                    Role::Waiting
                };
            }
        }
        _ => report.others = children,
    }
    Ok(report)
}

/// The participant children of `parent` (none if it is gone), in line order.
async fn read_line(client: &Client, parent: &str, layout: Layout) -> Result<Vec<ParticipantNode>> {
    let children = client
        .retry(|s| async move { s.children(parent).await.or_none() })
        .await?
        .unwrap_or_default();
    let nodes = children
        .into_iter()
        .filter(|c| NodeKind::of(c).is_some())
        .collect();
    read_nodes(client, parent, nodes, layout).await
}

/// Each node's data and stat in line order (the reads pipelined on one session: about one
/// round trip), with their roles; nodes gone meanwhile are left out.
async fn read_nodes(
    client: &Client,
    parent: &str,
    mut names: Vec<String>,
    layout: Layout,
) -> Result<Vec<ParticipantNode>> {
    sequence::sort_by(&mut names, NodeKind::key);
    let names = &names;
    let read = client
        .retry(|s: Session| async move {
            let reads: Vec<_> = names
                .iter()
                .map(|n| s.get_data(&path::join(parent, n)))
                .collect();
            let mut found = Vec::with_capacity(names.len());
            for (name, read) in names.iter().zip(reads) {
                if let Some((data, stat)) = read.await.or_none()? {
                    found.push(ParticipantNode {
                        name: name.clone(),
                        path: path::join(parent, name),
                        kind: NodeKind::of(name),
                        role: Role::Waiting,
                        stat,
                        data,
                    });
                }
            }
            Ok(found)
        })
        .await?;
    Ok(with_roles(layout, read))
}

/// Gives each node (in line order) its role by the recipe's rule: the lock drivers' predicates
/// for the lock family, the first node for a latch.
fn with_roles(layout: Layout, mut nodes: Vec<ParticipantNode>) -> Vec<ParticipantNode> {
    let mut names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    for (i, n) in nodes.iter_mut().enumerate() {
        n.role = match layout {
            Layout::Latch if i == 0 => Role::Leader,
            Layout::Latch => Role::Participant,
            Layout::Semaphore => Role::Lease,
            Layout::Mutex | Layout::ReadWrite => {
                let (driver, sorter) = match (layout, n.kind) {
                    (Layout::Mutex, _) => (mutex_driver(), Sorter::Standard(LOCK_NAME)),
                    (_, Some(NodeKind::Read)) => (Driver::Read, Sorter::ReadWrite),
                    _ => (mutex_driver(), Sorter::ReadWrite),
                };
                match driver.gets_the_lock(sorter, &mut names, &n.name, false) {
                    Predicate::Granted => Role::Holder,
                    _ => Role::Waiting,
                }
            }
            _ => Role::Waiting,
        };
    }
    nodes
}

fn mutex_driver() -> Driver {
    Driver::Standard { max_leases: 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> ParticipantNode {
        ParticipantNode {
            name: name.into(),
            path: format!("/p/{name}"),
            kind: NodeKind::of(name),
            role: Role::Waiting,
            stat: Stat::default(),
            data: vec![],
        }
    }

    #[test]
    fn node_kinds_and_sort_keys_follow_curators_names() {
        let n = "_c_0b4cbd2c-6a2a-4d4c-9b2f-2e9b0ad1a7a1-lock-0000000012";
        assert_eq!(NodeKind::of(n), Some(NodeKind::Lock));
        assert_eq!(NodeKind::key(n), "0000000012");
        assert_eq!(
            NodeKind::of("_c_x-__READ__0000000003"),
            Some(NodeKind::Read)
        );
        assert_eq!(NodeKind::key("_c_x-__WRIT__0000000004"), "0000000004");
        assert_eq!(NodeKind::of("_c_x-latch-0000000001"), Some(NodeKind::Latch));
        assert_eq!(NodeKind::of("leases"), None);
    }

    #[test]
    fn readers_hold_until_the_first_writer_a_writer_only_at_the_head() {
        let roles = |names: &[&str]| -> Vec<&str> {
            with_roles(Layout::ReadWrite, names.iter().map(|n| node(n)).collect())
                .iter()
                .map(|n| n.role.name())
                .collect()
        };
        assert_eq!(
            roles(&["a__READ__1", "b__READ__2", "c__WRIT__3", "d__READ__4"]),
            ["holder", "holder", "waiting", "waiting"]
        );
        assert_eq!(roles(&["c__WRIT__1", "a__READ__2"]), ["holder", "waiting"]);
        let mutex = with_roles(Layout::Mutex, vec![node("x-lock-1"), node("y-lock-2")]);
        assert_eq!(mutex[0].role, Role::Holder);
        assert_eq!(mutex[1].role, Role::Waiting);
        let latch = with_roles(Layout::Latch, vec![node("x-latch-1"), node("y-latch-2")]);
        assert_eq!(
            (latch[0].role, latch[1].role),
            (Role::Leader, Role::Participant)
        );
    }
}
