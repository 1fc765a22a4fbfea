//! The one error type of zkrecipes, and the error half of the vocabulary every face maps from.
//!
//! An [`Error`] is a kind (the variant), a message that names the operation and the path, and,
//! where there is one, ZooKeeper's own error code and the underlying error
//! ([`std::error::Error::source`]). Faces map the kind once, from [`ErrorKind::name`] and
//! [`ErrorKind::code`]: C's `zkr_status` is `ZKR_` + name with the same number, Node's
//! `err.code` is `ZKR_` + name, Python's exception class is picked by name.

use std::fmt;
use std::sync::Arc;

/// The detail of an [`Error`]: its message, ZooKeeper's error code if the server (or the
/// protocol layer) gave one, and the error it came from.
#[derive(Clone)]
pub struct Detail {
    message: String,
    zk_code: Option<i32>,
    op_index: Option<usize>,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Detail {
    /// A detail with only a message.
    pub fn new(message: impl Into<String>) -> Detail {
        Detail {
            message: message.into(),
            zk_code: None,
            op_index: None,
            source: None,
        }
    }

    /// With ZooKeeper's error code (`KeeperException.Code`, e.g. -101 for NONODE).
    pub fn with_zk_code(mut self, code: i32) -> Detail {
        self.zk_code = Some(code);
        self
    }

    /// For a failed transaction: the index of the operation that failed.
    pub fn with_op_index(mut self, index: usize) -> Detail {
        self.op_index = Some(index);
        self
    }

    /// With the error this one came from.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Detail {
        self.source = Some(Arc::new(source));
        self
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Debug for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Detail");
        d.field("message", &self.message);
        if let Some(c) = self.zk_code {
            d.field("zk_code", &c);
        }
        if let Some(i) = self.op_index {
            d.field("op_index", &i);
        }
        if let Some(s) = &self.source {
            d.field("source", &format_args!("{s}"));
        }
        d.finish()
    }
}

/// Details compare by message and code (sources are not comparable).
impl PartialEq for Detail {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
            && self.zk_code == other.zk_code
            && self.op_index == other.op_index
    }
}

impl Eq for Detail {}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::ops::Deref for Detail {
    type Target = str;
    fn deref(&self) -> &str {
        &self.message
    }
}

impl From<String> for Detail {
    fn from(message: String) -> Detail {
        Detail::new(message)
    }
}

impl From<&str> for Detail {
    fn from(message: &str) -> Detail {
        Detail::new(message)
    }
}

macro_rules! kinds {
    ($( $(#[$doc:meta])* $variant:ident = $code:literal, $name:literal; )*) => {
        /// Every failure zkrecipes reports. The payload says what failed, where, and why.
        #[derive(Clone, Debug, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Error {
            $( $(#[$doc])* $variant(Detail), )*
        }

        /// The kind of an [`Error`], without its detail: what faces map to their own codes.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorKind {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorKind {
            /// Every kind, in code order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$variant),*];

            /// The kind's stable number: C's `zkr_status` value. Grouped in ranges (1xx misuse,
            /// 2xx connection and session, 3xx refused by the server, 4xx data, 9xx our bugs);
            /// never renumbered, and a retired number is never reused.
            pub const fn code(self) -> u32 {
                match self { $(ErrorKind::$variant => $code,)* }
            }

            /// The kind's name in upper snake case (`NO_NODE`): C's status is `ZKR_NO_NODE`,
            /// Node's `err.code` is `"ZKR_NO_NODE"`, Python's class is found by it.
            pub const fn name(self) -> &'static str {
                match self { $(ErrorKind::$variant => $name,)* }
            }

            /// The kind with this [`code`](Self::code).
            pub fn from_code(code: u32) -> Option<ErrorKind> {
                ErrorKind::ALL.iter().copied().find(|k| k.code() == code)
            }

            /// The kind with this [`name`](Self::name) (with or without the `ZKR_` prefix).
            pub fn from_name(name: &str) -> Option<ErrorKind> {
                let name = name.strip_prefix("ZKR_").unwrap_or(name);
                ErrorKind::ALL.iter().copied().find(|k| k.name() == name)
            }
        }

        impl Error {
            /// The kind of this error.
            pub fn kind(&self) -> ErrorKind {
                match self { $(Error::$variant(_) => ErrorKind::$variant,)* }
            }

            /// The detail: message, ZooKeeper code, source.
            pub fn detail(&self) -> &Detail {
                match self { $(Error::$variant(d) => d,)* }
            }

            /// An error of `kind` with `detail`.
            pub fn new(kind: ErrorKind, detail: impl Into<Detail>) -> Error {
                let d = detail.into();
                match kind { $(ErrorKind::$variant => Error::$variant(d),)* }
            }
        }
    };
}

kinds! {
    /// A bad argument: path, timeout, option, connect string, data size, NULL, non UTF-8.
    InvalidArgument = 100, "INVALID_ARGUMENT";
    /// A release or operation by an owner that does not hold the lock.
    NotOwner = 101, "NOT_OWNER";
    /// The client or the recipe was closed.
    Closed = 102, "CLOSED";
    /// The connection to ZooKeeper was lost; the operation may be retried.
    ConnectionLoss = 200, "CONNECTION_LOSS";
    /// The ZooKeeper session expired.
    SessionExpired = 201, "SESSION_EXPIRED";
    /// A write may or may not have been applied (its reply was lost); it was not retried.
    OutcomeUnknown = 202, "OUTCOME_UNKNOWN";
    /// Timed out where a boolean is not the answer.
    Timeout = 203, "TIMEOUT";
    /// Authentication failed: the server refused the SASL credentials (wrong password, unknown
    /// user), requires SASL and none is configured, or a TLS peer's certificate was refused
    /// (the server's by us, or ours by the server). Returned from connect and never retried;
    /// a session refused later ends LOST with this reason: for good for SASL, while a new
    /// session after LOST that is refused for a TLS certificate is tried again until one is
    /// accepted (`Client::failure`).
    AuthFailed = 204, "AUTH_FAILED";
    /// The server said the node does not exist.
    NoNode = 300, "NO_NODE";
    /// The server said the node exists already.
    NodeExists = 301, "NODE_EXISTS";
    /// The server said the expected version did not match.
    BadVersion = 302, "BAD_VERSION";
    /// The server refused for lack of authorization.
    NoAuth = 303, "NO_AUTH";
    /// The server refused to delete a node that has children.
    NotEmpty = 304, "NOT_EMPTY";
    /// A node we would take over belongs to another live session (a member id or a persistent
    /// node registered by someone else); it was left untouched.
    Conflict = 305, "CONFLICT";
    /// There is no watch of the kind asked for on that path in this client (ZooKeeper's
    /// `NoWatcherException`, from `remove_watches`).
    NoWatcher = 306, "NO_WATCHER";
    /// Any other error code from the server or the protocol layer.
    Server = 399, "SERVER";
    /// A node's data cannot be decoded (a counter with too few bytes, say).
    CorruptedData = 400, "CORRUPTED_DATA";
    /// An arithmetic result does not fit (checked counter operations).
    Overflow = 401, "OVERFLOW";
    /// A bug of ours: a caught panic or a broken invariant.
    Internal = 900, "INTERNAL";
}

/// `Result` with zkrecipes' [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The message, without the kind's prefix.
    pub fn message(&self) -> &str {
        &self.detail().message
    }

    /// ZooKeeper's own error code (`KeeperException.Code`: -4 connection loss, -101 no node,
    /// ...) when the failure came from the server or the protocol layer.
    pub fn zk_code(&self) -> Option<i32> {
        self.detail().zk_code
    }

    /// For a failed transaction ([`crate::client::Transaction`]): the index of the operation
    /// that failed (nothing of the transaction was applied).
    pub fn failed_op(&self) -> Option<usize> {
        self.detail().op_index
    }

    /// Errors after which Curator's retry loop tries again: the request never reached a
    /// decision we know of, and the session is still alive.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::ConnectionLoss(_))
    }

    /// Whether the server (or our own validation, before sending) refused the request itself,
    /// so a write was certainly not applied: ZooKeeper's answers NoNode, NoAuth, BadVersion,
    /// NodeExists, NotEmpty, ... and our `InvalidArgument`. Everything else — a connection
    /// loss, an operation timeout, an I/O error, a session expiry, a closed client — leaves
    /// the outcome of a write open.
    pub fn is_refusal(&self) -> bool {
        const REFUSALS: &[i32] = &[
            -5,   // MarshallingError
            -6,   // Unimplemented
            -8,   // BadArguments
            -101, // NoNode
            -102, // NoAuth
            -103, // BadVersion
            -108, // NoChildrenForEphemerals
            -110, // NodeExists
            -111, // NotEmpty
            -114, // InvalidACL
            -119, // NotReadOnly
            -121, // NoWatcher
            -123, // ReconfigDisabled
            -125, // QuotaExceeded
            -127, // Throttled: refused unprocessed by a loaded server
        ];
        matches!(self, Error::InvalidArgument(_))
            || self.zk_code().is_some_and(|c| REFUSALS.contains(&c))
    }

    /// Whether the server refused the request unprocessed because it is overloaded
    /// (ZooKeeper's Throttled): certainly not applied, worth trying again later.
    pub fn is_throttled(&self) -> bool {
        self.zk_code() == Some(-127)
    }

    /// The same error with `context: ` put before its message (kind, code and source kept).
    pub fn context(self, context: impl fmt::Display) -> Error {
        let kind = self.kind();
        let mut d = self.detail().clone();
        d.message = format!("{context}: {}", d.message);
        Error::new(kind, d)
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(Detail::new(msg))
    }

    pub(crate) fn closed() -> Error {
        Error::Closed("the client is closed".into())
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())?;
        if let Some(c) = self.zk_code() {
            write!(f, " (ZooKeeper code {c})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.detail()
            .source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_unique_codes_and_names_that_round_trip() {
        let mut codes = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for &k in ErrorKind::ALL {
            assert!(codes.insert(k.code()), "{k:?}");
            assert!(names.insert(k.name()), "{k:?}");
            assert_eq!(ErrorKind::from_code(k.code()), Some(k));
            assert_eq!(ErrorKind::from_name(k.name()), Some(k));
            assert_eq!(ErrorKind::from_name(&format!("ZKR_{}", k.name())), Some(k));
            assert_eq!(Error::new(k, "m").kind(), k);
        }
        assert_eq!(ErrorKind::NoNode.code(), 300);
        assert_eq!(ErrorKind::from_code(7), None);
    }

    #[test]
    fn an_error_keeps_its_code_and_source_through_context() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let e = Error::ConnectionLoss(Detail::new("get data /a").with_zk_code(-4).with_source(io))
            .context("acquire lock /a");
        assert_eq!(e.kind(), ErrorKind::ConnectionLoss);
        assert_eq!(e.message(), "acquire lock /a: get data /a");
        assert_eq!(e.zk_code(), Some(-4));
        let src = std::error::Error::source(&e).expect("source kept");
        assert_eq!(src.to_string(), "reset by peer");
        assert_eq!(
            e.to_string(),
            "ConnectionLoss: acquire lock /a: get data /a (ZooKeeper code -4)"
        );
    }
}
