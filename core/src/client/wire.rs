//! The border with the wire crate (`zookeeper-client`): its types become ours here, and its
//! errors become [`Error`]s that keep ZooKeeper's code and the original error. Nothing outside
//! `client/` names the wire crate.

use zookeeper_client as zk;

use super::types::{Acl, AddWatchMode, CreateMode, NodeEventKind, Permission, Stat};
use crate::error::Detail;
use crate::Error;

pub(crate) fn stat(s: zk::Stat) -> Stat {
    Stat {
        czxid: s.czxid,
        mzxid: s.mzxid,
        pzxid: s.pzxid,
        ctime: s.ctime,
        mtime: s.mtime,
        version: s.version,
        cversion: s.cversion,
        aversion: s.aversion,
        ephemeral_owner: s.ephemeral_owner,
        data_length: s.data_length,
        num_children: s.num_children,
    }
}

pub(crate) fn create_mode(m: CreateMode) -> zk::CreateMode {
    match m {
        // The wire crate makes a TTL mode of a persistent one given a TTL (`create_options`).
        CreateMode::Persistent | CreateMode::PersistentWithTtl => zk::CreateMode::Persistent,
        CreateMode::PersistentSequential | CreateMode::PersistentSequentialWithTtl => {
            zk::CreateMode::PersistentSequential
        }
        CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
        CreateMode::Container => zk::CreateMode::Container,
    }
}

/// The wire crate's create options: mode, ACL and (TTL modes) the TTL.
pub(crate) fn create_options<'a>(
    m: CreateMode,
    acl: zk::Acls<'a>,
    ttl: Option<std::time::Duration>,
) -> zk::CreateOptions<'a> {
    let options = create_mode(m).with_acls(acl);
    match ttl {
        Some(ttl) if m.is_ttl() => options.with_ttl(ttl),
        _ => options,
    }
}

pub(crate) fn acls(list: &[Acl]) -> Vec<zk::Acl> {
    list.iter()
        .map(|a| {
            zk::Acl::new(
                permission(a.perms.bits()),
                zk::AuthId::new(&a.scheme, &a.id),
            )
        })
        .collect()
}

/// The wire crate's ACL entries as ours.
pub(crate) fn acls_from(list: &[zk::Acl]) -> Vec<Acl> {
    list.iter()
        .map(|a| {
            let bits = PERMISSION_BITS
                .iter()
                .enumerate()
                .filter(|(_, p)| a.permission().has(**p))
                .fold(0u32, |acc, (i, _)| acc | (1 << i));
            // Five known bits at most: always a valid permission.
            Acl::new(
                Permission::from_bits(bits).unwrap_or(Permission::NONE),
                a.scheme(),
                a.id(),
            )
        })
        .collect()
}

/// ZooKeeper's permissions, bit `i` of ours (READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16).
const PERMISSION_BITS: [zk::Permission; 5] = [
    zk::Permission::READ,
    zk::Permission::WRITE,
    zk::Permission::CREATE,
    zk::Permission::DELETE,
    zk::Permission::ADMIN,
];

fn permission(bits: u32) -> zk::Permission {
    PERMISSION_BITS
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .fold(zk::Permission::NONE, |acc, (_, p)| acc | *p)
}

pub(crate) fn add_watch_mode(m: AddWatchMode) -> zk::AddWatchMode {
    match m {
        AddWatchMode::Persistent => zk::AddWatchMode::Persistent,
        AddWatchMode::PersistentRecursive => zk::AddWatchMode::PersistentRecursive,
    }
}

/// The kind of a watch event; `None` for a session event that does not end the watch (a
/// persistent watcher hears the connection come and go).
pub(crate) fn event_kind(e: &zk::WatchedEvent) -> NodeEventKind {
    match e.event_type {
        zk::EventType::NodeCreated => NodeEventKind::Created,
        zk::EventType::NodeDeleted => NodeEventKind::Deleted,
        zk::EventType::NodeDataChanged => NodeEventKind::DataChanged,
        zk::EventType::NodeChildrenChanged => NodeEventKind::ChildrenChanged,
        zk::EventType::Session => NodeEventKind::SessionEnded,
    }
}

/// ZooKeeper's `KeeperException.Code` for a wire error, where it has one.
fn zk_code(e: &zk::Error) -> Option<i32> {
    use zk::Error as Z;
    Some(match e {
        Z::ConnectionLoss => -4,
        Z::MarshallingError => -5,
        Z::Unimplemented => -6,
        Z::Timeout => -7,
        Z::BadArguments(_) => -8,
        Z::NoNode => -101,
        Z::NoAuth => -102,
        Z::BadVersion => -103,
        Z::NoChildrenForEphemerals => -108,
        Z::NodeExists => -110,
        Z::NotEmpty => -111,
        Z::SessionExpired => -112,
        Z::InvalidAcl => -114,
        Z::AuthFailed => -115,
        Z::SessionMoved => -118,
        Z::NotReadOnly => -119,
        Z::NoWatcher => -121,
        Z::ReconfigDisabled => -123,
        Z::QuotaExceeded => -125,
        Z::Throttled => -127,
        Z::UnexpectedErrorCode(c) => *c,
        _ => return None,
    })
}

/// Maps a wire error of operation `op` on caller path `path`, keeping code and source.
pub(crate) fn error(err: zk::Error, op: &str, path: &str) -> Error {
    use zk::Error as Z;
    let mut detail = Detail::new(format!("{op} {path}: {err}"));
    if let Some(c) = zk_code(&err) {
        detail = detail.with_zk_code(c);
    }
    let kind = match &err {
        Z::NoNode => Error::NoNode,
        Z::NodeExists => Error::NodeExists,
        Z::BadVersion => Error::BadVersion,
        Z::NoAuth => Error::NoAuth,
        Z::AuthFailed => Error::AuthFailed,
        Z::NotEmpty => Error::NotEmpty,
        Z::NoWatcher => Error::NoWatcher,
        // Session moved and a server-side operation timeout are retried like a connection
        // loss (Curator's RetryLoop.shouldRetry).
        Z::ConnectionLoss | Z::SessionMoved | Z::Timeout | Z::Throttled => Error::ConnectionLoss,
        // zookeeper-client fails every request in flight with the error that ended its
        // connection: an I/O error (a server killed: ECONNRESET), "no response from
        // connection" (a server paused or partitioned), "encounter writable server". Each is a
        // connection loss: the request may or may not have been applied. (As `Server` errors
        // nothing retried them: a protected create's cleanup and a guaranteed delete both gave
        // up, and the node left in the live session stalled the lock or the election — found
        // by the fault suite.)
        Z::Custom(_) => Error::ConnectionLoss,
        Z::SessionExpired => Error::SessionExpired,
        Z::ClientClosed => Error::Closed,
        Z::BadArguments(_) | Z::InvalidAcl | Z::NoChildrenForEphemerals => Error::InvalidArgument,
        _ => Error::Server,
    };
    kind(detail.with_source(err))
}
