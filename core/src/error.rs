//! The one error type of zkrecipes. Every face maps it once, keeping the kind.

use std::fmt;

/// Every failure zkrecipes reports. The payload is a human-readable message that names the
/// path (and the server's error) where one is involved.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A bad argument: path, timeout, option, connect string, data size, NULL, non UTF-8.
    InvalidArgument(String),
    /// A release or operation by an owner that does not hold the lock.
    NotOwner(String),
    /// The connection to ZooKeeper was lost; the operation may be retried.
    ConnectionLoss(String),
    /// The ZooKeeper session expired.
    SessionExpired(String),
    /// A write may or may not have been applied (its reply was lost); it was not retried.
    OutcomeUnknown(String),
    /// The client or the recipe was closed.
    Closed(String),
    /// The server said the node does not exist.
    NoNode(String),
    /// The server said the node exists already.
    NodeExists(String),
    /// The server said the expected version did not match.
    BadVersion(String),
    /// The server refused for lack of authorization.
    NoAuth(String),
    /// The server refused to delete a node that has children.
    NotEmpty(String),
    /// Timed out where a boolean is not the answer.
    Timeout(String),
    /// A node's data cannot be decoded (a counter with too few bytes, say).
    CorruptedData(String),
    /// An arithmetic result does not fit (checked counter operations).
    Overflow(String),
    /// Any other error code from the server or the protocol layer.
    Server(String),
    /// A bug of ours: a caught panic or a broken invariant.
    Internal(String),
}

/// The kind of an [`Error`], without its message: what faces map to their own codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    InvalidArgument,
    NotOwner,
    ConnectionLoss,
    SessionExpired,
    OutcomeUnknown,
    Closed,
    NoNode,
    NodeExists,
    BadVersion,
    NoAuth,
    NotEmpty,
    Timeout,
    CorruptedData,
    Overflow,
    Server,
    Internal,
}

/// `Result` with zkrecipes' [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        use Error::*;
        match self {
            InvalidArgument(_) => ErrorKind::InvalidArgument,
            NotOwner(_) => ErrorKind::NotOwner,
            ConnectionLoss(_) => ErrorKind::ConnectionLoss,
            SessionExpired(_) => ErrorKind::SessionExpired,
            OutcomeUnknown(_) => ErrorKind::OutcomeUnknown,
            Closed(_) => ErrorKind::Closed,
            NoNode(_) => ErrorKind::NoNode,
            NodeExists(_) => ErrorKind::NodeExists,
            BadVersion(_) => ErrorKind::BadVersion,
            NoAuth(_) => ErrorKind::NoAuth,
            NotEmpty(_) => ErrorKind::NotEmpty,
            Timeout(_) => ErrorKind::Timeout,
            CorruptedData(_) => ErrorKind::CorruptedData,
            Overflow(_) => ErrorKind::Overflow,
            Server(_) => ErrorKind::Server,
            Internal(_) => ErrorKind::Internal,
        }
    }

    /// The message, without the kind's prefix.
    pub fn message(&self) -> &str {
        use Error::*;
        match self {
            InvalidArgument(m) | NotOwner(m) | ConnectionLoss(m) | SessionExpired(m)
            | OutcomeUnknown(m) | Closed(m) | NoNode(m) | NodeExists(m) | BadVersion(m)
            | NoAuth(m) | NotEmpty(m) | Timeout(m) | CorruptedData(m) | Overflow(m) | Server(m)
            | Internal(m) => m,
        }
    }

    /// Errors after which Curator's retry loop tries again: the request never reached a
    /// decision we know of, and the session is still alive.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::ConnectionLoss(_))
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(msg.into())
    }

    pub(crate) fn closed() -> Error {
        Error::Closed("the client is closed".into())
    }

    /// Maps an error of the protocol layer, naming the operation and the path.
    pub(crate) fn from_zk(err: zookeeper_client::Error, op: &str, path: &str) -> Error {
        use zookeeper_client::Error as Z;
        let msg = format!("{op} {path}: {err}");
        match err {
            Z::NoNode => Error::NoNode(msg),
            Z::NodeExists => Error::NodeExists(msg),
            Z::BadVersion => Error::BadVersion(msg),
            Z::NoAuth | Z::AuthFailed => Error::NoAuth(msg),
            Z::NotEmpty => Error::NotEmpty(msg),
            // Session moved and a server-side operation timeout are retried like a
            // connection loss (Curator's RetryLoop.shouldRetry).
            Z::ConnectionLoss | Z::SessionMoved | Z::Timeout | Z::Throttled => {
                Error::ConnectionLoss(msg)
            }
            // zookeeper-client fails every request in flight with the error that ended its
            // connection: an I/O error (a server killed: ECONNRESET), "no response from
            // connection" (a server paused or partitioned), "encounter writable server". Each
            // is a connection loss: the request may or may not have been applied. Before this
            // arm they became `Server` errors, which nothing retried: a protected create's
            // cleanup and a guaranteed delete both gave up, and the node they left in the live
            // session stalled the lock or the election (found by the fault suite).
            Z::Custom(_) => Error::ConnectionLoss(msg),
            Z::SessionExpired => Error::SessionExpired(msg),
            Z::ClientClosed => Error::Closed(msg),
            Z::BadArguments(_) | Z::InvalidAcl | Z::NoChildrenForEphemerals => {
                Error::InvalidArgument(msg)
            }
            _ => Error::Server(msg),
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

impl std::error::Error for Error {}
