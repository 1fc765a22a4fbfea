//! The client's own data types (ZooKeeper's vocabulary, independent of the wire crate): node
//! metadata, ACLs, create modes, watch events. Each enum has one spelling for every face:
//! [`CreateMode::name`], [`NodeEventKind::name`] (and `ConnectionState::as_str`), parsed back
//! by `from_name`.

use std::fmt;
use std::time::Duration;

use crate::{Error, Result};

/// A node's metadata (ZooKeeper's `Stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stat {
    /// The zxid of the change that created the node (our fencing token for lock nodes).
    pub czxid: i64,
    /// The zxid of the change that last modified its data.
    pub mzxid: i64,
    /// The zxid of the change that last modified its children.
    pub pzxid: i64,
    /// Creation time, ms since the epoch.
    pub ctime: i64,
    /// Last modification time, ms since the epoch.
    pub mtime: i64,
    /// The number of changes to its data.
    pub version: i32,
    /// The number of changes to its children.
    pub cversion: i32,
    /// The number of changes to its ACL.
    pub aversion: i32,
    /// The session owning it if it is ephemeral, else 0.
    pub ephemeral_owner: i64,
    /// The length of its data.
    pub data_length: i32,
    /// The number of its children.
    pub num_children: i32,
}

/// ZooKeeper's permission bits (READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Permission(u32);

impl Permission {
    /// No permission.
    pub const NONE: Permission = Permission(0);
    /// Read data and list children.
    pub const READ: Permission = Permission(1);
    /// Set data.
    pub const WRITE: Permission = Permission(2);
    /// Create children.
    pub const CREATE: Permission = Permission(4);
    /// Delete children.
    pub const DELETE: Permission = Permission(8);
    /// Set the ACL.
    pub const ADMIN: Permission = Permission(16);
    /// All of them.
    pub const ALL: Permission = Permission(31);

    /// The permission of these bits; `InvalidArgument` unless `bits` is a non-empty combination
    /// of ZooKeeper's (1..=31). For faces, which take ACLs as plain numbers.
    pub fn from_bits(bits: u32) -> Result<Permission> {
        if bits == 0 || bits > 31 {
            return Err(Error::invalid(format!(
                "acl perms {bits} is not a set of ZooKeeper permission bits (1..31)"
            )));
        }
        Ok(Permission(bits))
    }

    /// The bits as they travel on the wire.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set here.
    pub const fn contains(self, other: Permission) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Permission {
    type Output = Permission;
    fn bitor(self, rhs: Permission) -> Permission {
        Permission(self.0 | rhs.0)
    }
}

/// One ACL entry: permissions for an identity (`scheme:id`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Acl {
    /// What the identity may do.
    pub perms: Permission,
    /// The scheme: `world`, `auth`, `digest`, `ip`, ...
    pub scheme: String,
    /// The identity in that scheme (`anyone`, `user:base64(sha1)`, `10.0.0.0/8`, ...).
    pub id: String,
}

impl Acl {
    /// An entry.
    pub fn new(perms: Permission, scheme: impl Into<String>, id: impl Into<String>) -> Acl {
        Acl {
            perms,
            scheme: scheme.into(),
            id: id.into(),
        }
    }

    /// ZooKeeper's `OPEN_ACL_UNSAFE`: everyone may do everything (the default).
    pub fn open() -> Vec<Acl> {
        vec![Acl::new(Permission::ALL, "world", "anyone")]
    }

    /// ZooKeeper's `CREATOR_ALL_ACL`: only the identities the creating session authenticated as.
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl::new(Permission::ALL, "auth", "")]
    }

    /// ZooKeeper's `READ_ACL_UNSAFE`: everyone may read.
    pub fn read_only() -> Vec<Acl> {
        vec![Acl::new(Permission::READ, "world", "anyone")]
    }

    /// An entry for the `digest` user `username` with `password`: the id is
    /// `username:base64(sha1("username:password"))`, as ZooKeeper's
    /// `DigestAuthenticationProvider.generateDigest` (and kazoo's `make_digest_acl`) make it. A
    /// client authenticated with `auth("digest", "username:password")` matches it.
    pub fn digest(perms: Permission, username: &str, password: &str) -> Acl {
        let hash = sha1_smol::Sha1::from(format!("{username}:{password}")).digest();
        Acl::new(
            perms,
            "digest",
            format!("{username}:{}", base64(&hash.bytes())),
        )
    }
}

/// Standard base64 with padding (for digest ids).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

macro_rules! named_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $( $(#[$doc:meta])* $variant:ident = $text:literal, )* }) => {
        $(#[$meta])*
        $vis enum $name { $( $(#[$doc])* $variant, )* }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The one spelling every face uses (upper snake case).
            pub const fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            /// The value with this [`name`](Self::name) (ASCII case-insensitive).
            pub fn from_name(name: &str) -> Result<$name> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name().eq_ignore_ascii_case(name))
                    .ok_or_else(|| {
                        let all: Vec<&str> = $name::ALL.iter().map(|v| v.name()).collect();
                        Error::invalid(format!(
                            "{name:?} is not a {}; expected one of {}",
                            stringify!($name),
                            all.join(", ")
                        ))
                    })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum! {
    /// Node types (ZooKeeper's CreateMode).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum CreateMode {
        /// Stays until deleted.
        Persistent = "PERSISTENT",
        /// Persistent, with a 10-digit sequence number appended by the server.
        PersistentSequential = "PERSISTENT_SEQUENTIAL",
        /// Deleted when the creating session ends.
        Ephemeral = "EPHEMERAL",
        /// Ephemeral, with a sequence number appended.
        EphemeralSequential = "EPHEMERAL_SEQUENTIAL",
        /// Deleted by the server once its last child is gone (ZooKeeper 3.5.3+).
        Container = "CONTAINER",
        /// Persistent, deleted by the server once it has had no change and no child for its
        /// TTL ([`CreateOptions::ttl`]; the server needs `zookeeper.extendedTypesEnabled`).
        PersistentWithTtl = "PERSISTENT_WITH_TTL",
        /// [`PersistentWithTtl`](Self::PersistentWithTtl), with a sequence number appended.
        PersistentSequentialWithTtl = "PERSISTENT_SEQUENTIAL_WITH_TTL",
    }
}

impl CreateMode {
    /// Whether the server appends a sequence number.
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// Whether the node needs a TTL ([`CreateOptions::ttl`]).
    pub fn is_ttl(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// The same type without the sequence number (how a sequential node is created again at
    /// the path it got, as Curator's PersistentNode does).
    pub fn without_sequence(self) -> CreateMode {
        match self {
            CreateMode::PersistentSequential => CreateMode::Persistent,
            CreateMode::EphemeralSequential => CreateMode::Ephemeral,
            CreateMode::PersistentSequentialWithTtl => CreateMode::PersistentWithTtl,
            other => other,
        }
    }

    /// Whether the node dies with the session.
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }
}

/// The largest TTL ZooKeeper takes: 40 bits of milliseconds (its `EphemeralType.TTL`).
pub(crate) const MAX_TTL_MS: u128 = (1 << 40) - 1;

/// `InvalidArgument` unless `ttl` fits `mode`: required (1 ms to 2^40 - 1 ms) for a TTL mode,
/// absent for any other.
pub(crate) fn check_ttl(path: &str, mode: CreateMode, ttl: Option<Duration>) -> Result<()> {
    match (mode.is_ttl(), ttl) {
        (true, None) => Err(Error::invalid(format!(
            "create {path}: mode {mode} needs a ttl"
        ))),
        (false, Some(_)) => Err(Error::invalid(format!(
            "create {path}: a ttl needs mode PERSISTENT_WITH_TTL or PERSISTENT_SEQUENTIAL_WITH_TTL, not {mode}"
        ))),
        (true, Some(t)) if t.as_millis() == 0 || t.as_millis() > MAX_TTL_MS => {
            Err(Error::invalid(format!(
                "create {path}: ttl {t:?} is out of range (1 ms to {MAX_TTL_MS} ms)"
            )))
        }
        _ => Ok(()),
    }
}

/// How missing parents of a node are created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Parents {
    /// Not at all: a missing parent is a `NoNode` error.
    #[default]
    None,
    /// As CONTAINER nodes, reaped by the server once empty (Curator's
    /// `creatingParentContainersIfNeeded`; what every recipe uses).
    Containers,
    /// As PERSISTENT nodes (Curator's `creatingParentsIfNeeded`).
    Persistent,
}

/// How to create a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreateOptions {
    /// The node type.
    pub mode: CreateMode,
    /// Create missing parents, as CONTAINER nodes (Curator's creatingParentContainersIfNeeded).
    pub create_parents: bool,
    /// Curator's protected mode: the name gets a `_c_<uuid>-` prefix so that, after a connection
    /// loss during the create, the node can be found again instead of created twice.
    pub protected: bool,
    /// Create missing parents as PERSISTENT nodes (Curator's `creatingParentsIfNeeded`); wins
    /// over `create_parents`.
    pub persistent_parents: bool,
    /// The time to live of a TTL mode ([`CreateMode::is_ttl`]): required there (1 ms up to
    /// 2^40 - 1 ms), refused with any other mode.
    pub ttl: Option<Duration>,
    /// Store the data GZIP-compressed, byte for byte as Curator's default
    /// `GzipCompressionProvider` (`.compressed()`); read it back with
    /// [`Client::get_data_decompressed`](crate::Client::get_data_decompressed).
    pub compressed: bool,
}

impl CreateOptions {
    /// Options with `mode`, no parents, not protected.
    pub const fn new(mode: CreateMode) -> CreateOptions {
        CreateOptions {
            mode,
            create_parents: false,
            protected: false,
            persistent_parents: false,
            ttl: None,
            compressed: false,
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

    /// Also create missing parents, as PERSISTENT nodes.
    pub const fn persistent_parents(mut self) -> Self {
        self.persistent_parents = true;
        self
    }

    /// The TTL of a TTL mode.
    pub const fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Store the data compressed (Curator's GZIP provider).
    pub const fn compressed(mut self) -> Self {
        self.compressed = true;
        self
    }

    pub(crate) fn parent_mode(&self) -> Parents {
        if self.persistent_parents {
            Parents::Persistent
        } else if self.create_parents {
            Parents::Containers
        } else {
            Parents::None
        }
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
    /// The actual path: with the sequence number and the protected prefix, if any.
    pub path: String,
    /// The new node's stat.
    pub stat: Stat,
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

named_enum! {
    /// What a watch saw.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum NodeEventKind {
        /// The node was created.
        Created = "CREATED",
        /// The node was deleted.
        Deleted = "DELETED",
        /// Its data changed.
        DataChanged = "DATA_CHANGED",
        /// Its children changed.
        ChildrenChanged = "CHILDREN_CHANGED",
        /// The session ended (expired or closed) before the node changed.
        SessionEnded = "SESSION_ENDED",
        /// The watch was removed ([`Client::remove_watches`](crate::Client::remove_watches))
        /// before the node changed (ZooKeeper's `DataWatchRemoved`/`ChildWatchRemoved`).
        WatchRemoved = "WATCH_REMOVED",
    }
}

named_enum! {
    /// The kinds of watches [`Client::remove_watches`](crate::Client::remove_watches) removes
    /// (ZooKeeper's `Watcher.WatcherType`, Curator's `watchers().remove(...).ofType(...)`), in
    /// ZooKeeper's order (its numbers 1 to 5).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum WatcherType {
        /// One-shot child watches (set by a children read with a watch).
        Children = "CHILDREN",
        /// One-shot data watches (set by a data read or an exists check with a watch).
        Data = "DATA",
        /// Every kind below and above.
        Any = "ANY",
        /// Persistent (non-recursive) watches: [`PersistentWatcher`](crate::client::PersistentWatcher)s,
        /// [`Client::add_watch`](crate::Client::add_watch) handles and `NodeCache`s on the path.
        Persistent = "PERSISTENT",
        /// Persistent recursive watches: recursive watchers and the caches rooted at the path.
        PersistentRecursive = "PERSISTENT_RECURSIVE",
    }
}

/// A watch notification; `path` is relative to the namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeEvent {
    /// What happened.
    pub kind: NodeEventKind,
    /// To which node.
    pub path: String,
}

/// One operation of a transaction (ZooKeeper's `multi`; Curator's `transaction()`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Create a node (no parents, not protected: a transaction cannot look before it leaps).
    Create {
        /// Its path (with a sequence number appended for sequential modes).
        path: String,
        /// Its data.
        data: Vec<u8>,
        /// Its type.
        mode: CreateMode,
        /// The time to live of a TTL mode (required there, refused otherwise).
        ttl: Option<Duration>,
        /// Its ACL (`None`: the client's [`AclProvider`](crate::AclProvider)'s for the path).
        acl: Option<Vec<Acl>>,
    },
    /// Delete a node, at `version` if given.
    Delete {
        /// The node.
        path: String,
        /// Only at this data version.
        version: Option<i32>,
    },
    /// Set a node's data, at `version` if given.
    SetData {
        /// The node.
        path: String,
        /// The new data.
        data: Vec<u8>,
        /// Only at this data version.
        version: Option<i32>,
    },
    /// Require a node to be at this data version (fails the whole transaction otherwise).
    Check {
        /// The node.
        path: String,
        /// The data version it must have.
        version: i32,
    },
}

impl Op {
    /// `create`, `delete`, `set data` or `check`, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Create { .. } => "create",
            Op::Delete { .. } => "delete",
            Op::SetData { .. } => "set data",
            Op::Check { .. } => "check",
        }
    }

    /// The node the operation is about.
    pub fn path(&self) -> &str {
        match self {
            Op::Create { path, .. }
            | Op::Delete { path, .. }
            | Op::SetData { path, .. }
            | Op::Check { path, .. } => path,
        }
    }

    /// Whether it writes (everything but a check).
    pub fn writes(&self) -> bool {
        !matches!(self, Op::Check { .. })
    }
}

/// What one operation of a committed transaction did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpResult {
    /// The node was created at this path (with its sequence number), with this stat.
    Created {
        /// The actual path.
        path: String,
        /// The new node's stat.
        stat: Stat,
    },
    /// The node was deleted.
    Deleted,
    /// The node's data was set; its new stat.
    DataSet {
        /// The new stat.
        stat: Stat,
    },
    /// The version check held.
    Checked,
}

/// The two kinds of watch `addWatch` sets (ZooKeeper 3.6+; Curator's `PersistentWatcher`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddWatchMode {
    /// Data and children changes of the node itself, until removed.
    Persistent,
    /// Creation, deletion and data changes of the node and every node below it, until removed.
    PersistentRecursive,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_say_what_is_expected() {
        for &m in CreateMode::ALL {
            assert_eq!(CreateMode::from_name(m.name()).unwrap(), m);
        }
        assert_eq!(
            CreateMode::from_name("ephemeral_sequential").unwrap(),
            CreateMode::EphemeralSequential
        );
        let e = CreateMode::from_name("EPHEMERAL_SEQ").unwrap_err();
        assert!(
            e.message().contains("PERSISTENT, PERSISTENT_SEQUENTIAL"),
            "{e}"
        );
        for &k in NodeEventKind::ALL {
            assert_eq!(NodeEventKind::from_name(k.name()).unwrap(), k);
        }
    }

    #[test]
    fn permission_bits_map_to_zookeepers_and_bad_ones_are_refused() {
        assert_eq!(Permission::from_bits(1).unwrap(), Permission::READ);
        assert_eq!(Permission::from_bits(31).unwrap(), Permission::ALL);
        assert_eq!(
            Permission::from_bits(1 | 8).unwrap(),
            Permission::READ | Permission::DELETE
        );
        for bad in [0, 32, u32::MAX] {
            assert!(matches!(
                Permission::from_bits(bad),
                Err(Error::InvalidArgument(_))
            ));
        }
    }
}

#[cfg(test)]
mod acl_tests {
    use super::*;

    #[test]
    fn digest_ids_are_zookeepers() {
        // base64(sha1("super:superpw")); the integration tests check a server agrees.
        assert_eq!(
            Acl::digest(Permission::ALL, "super", "superpw").id,
            "super:g9oN2HttPfn8MMWJZ2r45Np/LIA="
        );
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"abc"), "YWJj");
    }
}
