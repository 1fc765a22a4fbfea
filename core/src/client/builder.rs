//! [`ClientBuilder`]: Curator's CuratorFrameworkFactory.builder(), with every option checked
//! before anything connects.

use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use zookeeper_client as zk;

use super::connection::open_session;
use super::security::{AclProvider, SaslOptions, TlsOptions};
use super::types::Acl;
use super::{wire, Client, Config};
use crate::retry::RetryPolicy;
use crate::{path, runtime, Error, Result};

/// The server's default `jute.maxbuffer`: the largest request it reads (0xfffff bytes).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 0xfffff;

/// Builder for a [`Client`] (Curator's CuratorFrameworkFactory.builder()). Its `Debug` shows
/// no secret: credentials as their length, PEM text as its length, no SASL password.
#[derive(Clone)]
pub struct ClientBuilder {
    connect_string: String,
    session_timeout: Duration,
    connection_timeout: Duration,
    retry: RetryPolicy,
    namespace: Option<String>,
    auth: Vec<(String, Vec<u8>)>,
    acl: AclProvider,
    can_be_read_only: bool,
    max_request_bytes: usize,
    tls: Option<TlsOptions>,
    sasl: Option<SaslOptions>,
    track_ensemble: bool,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct Hidden(usize);
        impl std::fmt::Debug for Hidden {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "<{} bytes>", self.0)
            }
        }
        let auth: Vec<(&str, Hidden)> = self
            .auth
            .iter()
            .map(|(scheme, credentials)| (scheme.as_str(), Hidden(credentials.len())))
            .collect();
        f.debug_struct("ClientBuilder")
            .field("connect_string", &self.connect_string)
            .field("session_timeout", &self.session_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .field("retry", &self.retry)
            .field("namespace", &self.namespace)
            .field("auth", &auth)
            .field("acl", &self.acl)
            .field("can_be_read_only", &self.can_be_read_only)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .field("track_ensemble", &self.track_ensemble)
            .finish()
    }
}

impl ClientBuilder {
    /// A builder for `host:port[,host:port...][/chroot]`, with API.md's defaults: session
    /// timeout 60 s, connection timeout 15 s, exponential backoff (1 s base, 3 retries), open ACL.
    pub fn new(connect_string: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            connect_string: connect_string.into(),
            session_timeout: Duration::from_secs(60),
            connection_timeout: Duration::from_secs(15),
            retry: RetryPolicy::default(),
            namespace: None,
            auth: Vec::new(),
            acl: AclProvider::default(),
            can_be_read_only: false,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            tls: None,
            sasl: None,
            track_ensemble: false,
        }
    }

    /// Session timeout asked of the server (the server may negotiate it into its bounds).
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long to wait for a connection: at start, and before each try of an operation.
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// The retry policy for operations.
    pub fn retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Curator's namespace: every path is relative to `/namespace` (created on demand).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Adds authentication, e.g. `("digest", b"user:password")`.
    pub fn auth(mut self, scheme: impl Into<String>, credentials: impl Into<Vec<u8>>) -> Self {
        self.auth.push((scheme.into(), credentials.into()));
        self
    }

    /// The ACL given to every node this client creates (default: world:anyone, all): an
    /// [`AclProvider`] with only this default (it replaces an earlier provider).
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = AclProvider::new(acl);
        self
    }

    /// Curator's ACLProvider: the ACL of each node this client creates, by path.
    pub fn acl_provider(mut self, provider: AclProvider) -> Self {
        self.acl = provider;
        self
    }

    /// Connects over TLS (see [`TlsOptions`]); every PEM input is checked when connecting,
    /// before any connection is tried, and read again for each new connection. Every host
    /// spoken to over TLS must be an IP address or a DNS name (not `127.1`, not an IPv6 zone
    /// id): `InvalidArgument` otherwise.
    ///
    /// A certificate refused by every server (theirs by us, or ours by them) fails
    /// [`connect`](Self::connect) at once with [`Error::AuthFailed`]. After LOST, the same
    /// refusal is retried instead (see [`Client::failure`]): certificates expire, and a client
    /// must pick up the renewed ones without a restart.
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Authenticates each connection with SASL (see [`SaslOptions`]). A refusal is
    /// [`Error::AuthFailed`], at once and never retried.
    pub fn sasl(mut self, sasl: SaslOptions) -> Self {
        self.sasl = Some(sasl);
        self
    }

    /// Allows connecting to a read-only server (state READ_ONLY).
    pub fn can_be_read_only(mut self, yes: bool) -> Self {
        self.can_be_read_only = yes;
        self
    }

    /// The largest request the client sends, in bytes on the wire (path, data, ACL and
    /// framing). Default: 0xfffff, the server's default `jute.maxbuffer`. A bigger request is
    /// refused with `InvalidArgument` before it is sent: the server would drop the connection,
    /// and with it every lock and leadership of this client. Raise it only together with the
    /// servers' `jute.maxbuffer`.
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// Follows the ensemble's membership (Curator's `EnsembleTracker`): the client reads the
    /// ensemble's configuration (`/zookeeper/config`) at each connection and each change, and
    /// gives the session the members' client addresses as its servers, keeping the session
    /// (see [`Client::reconfig`] and [`Client::current_connect_string`]). A connection to a
    /// member that leaves moves to one that stays (SUSPENDED, then RECONNECTED, same session);
    /// when members are added, a share of clients moves to them (the Java client's
    /// rebalancing), also through SUSPENDED and RECONNECTED. After LOST, the new session starts
    /// from the members last read. Off by default; refused with TLS (the configuration names
    /// only plaintext client ports).
    pub fn track_ensemble(mut self, yes: bool) -> Self {
        self.track_ensemble = yes;
        self
    }

    fn validate(&self) -> Result<String> {
        validate_connect_string(&self.connect_string)?;
        if self.session_timeout.is_zero() {
            return Err(Error::invalid("session timeout must be positive"));
        }
        if self.session_timeout > Duration::from_millis(i32::MAX as u64) {
            return Err(Error::invalid("session timeout must be below 2^31 ms"));
        }
        if self.connection_timeout.is_zero() {
            return Err(Error::invalid("connection timeout must be positive"));
        }
        self.acl.validate()?;
        if let Some(sasl) = &self.sasl {
            sasl.validate()?;
        }
        for (scheme, _) in &self.auth {
            if scheme.is_empty() {
                return Err(Error::invalid("auth scheme must not be empty"));
            }
        }
        if self.max_request_bytes < 1024 {
            return Err(Error::invalid(format!(
                "max request bytes {} is below 1024: not even a lock node's request fits",
                self.max_request_bytes
            )));
        }
        self.retry.validate()?;
        let hosts = split_connect_string(&self.connect_string).0;
        let tls_host = hosts.iter().any(|h| h.tls == Some(true));
        // No silent plaintext: TLS options that no connection would use, a host written
        // `tcp://` while every host is to speak TLS, or a `tcp+tls://` host with nothing to
        // speak TLS with (that one timed out after the connection timeout).
        match &self.tls {
            None if tls_host => {
                return Err(Error::invalid(format!(
                    "connect string {:?} has tcp+tls:// hosts but the client has no TLS options: give it TLS options (the CA, and a certificate if the servers ask for one)",
                    self.connect_string
                )))
            }
            Some(t) if t.is_every_host() => {
                if let Some(h) = hosts.iter().find(|h| h.tls == Some(false)) {
                    return Err(Error::invalid(format!(
                        "connect string host {:?} is written tcp:// (plaintext) while TLS is on for every host: drop tcp://, or turn every_host off and write the TLS hosts tcp+tls://",
                        h.address
                    )));
                }
            }
            Some(_) if !tls_host => {
                return Err(Error::invalid(format!(
                    "TLS is on for tcp+tls:// hosts only (every_host off), and connect string {:?} has none: every connection would be plaintext",
                    self.connect_string
                )))
            }
            _ => {}
        }
        if self.track_ensemble && (self.tls.is_some() || tls_host) {
            return Err(Error::invalid(
                "track_ensemble cannot be used with TLS: the ensemble's configuration names only its members' plaintext client ports",
            ));
        }
        // Each host spoken to over TLS is the name its certificate is checked against (and
        // sent as SNI): one rustls cannot read would fail every connection to it.
        let every_host = self.tls.as_ref().is_some_and(TlsOptions::is_every_host);
        for host in hosts {
            if host.tls == Some(true) || (every_host && host.tls.is_none()) {
                zk::TlsOptions::check_server_name(host.name()).map_err(|e| {
                    Error::invalid(format!(
                        "TLS to {:?} of the connect string: {e}; write the host as an IP address (127.0.0.1, not 127.1) or a DNS name (IPv6 zone ids such as %eth0 are not supported with TLS)",
                        host.address
                    ))
                })?;
            }
        }
        let prefix = match self.namespace.as_deref() {
            None | Some("") => String::new(),
            Some(ns) => {
                let p = if ns.starts_with('/') {
                    ns.to_string()
                } else {
                    format!("/{ns}")
                };
                path::validate_path(&p)
                    .map_err(|e| Error::invalid(format!("namespace {ns:?}: {}", e.message())))?;
                if p == "/" {
                    String::new()
                } else {
                    p
                }
            }
        };
        Ok(prefix)
    }

    /// Connects: validates every option, then waits up to the connection timeout for a session.
    pub async fn connect(self) -> Result<Client> {
        let prefix = self.validate()?;
        let tls = self.tls.as_ref().map(TlsOptions::wire).transpose()?;
        static KEYS: once_cell::sync::Lazy<std::collections::hash_map::RandomState> =
            once_cell::sync::Lazy::new(Default::default);
        let identity = KEYS.hash_one((
            &self.connect_string,
            &self.auth,
            &self.sasl,
            self.tls.as_ref().map(TlsOptions::certificate),
        ));
        let cfg = Arc::new(Config {
            connect_string: self.connect_string,
            session_timeout: self.session_timeout,
            connection_timeout: self.connection_timeout,
            retry: self.retry,
            prefix,
            auth: self.auth,
            wire_acl: wire::acls(self.acl.default_acl()),
            acl: self.acl,
            can_be_read_only: self.can_be_read_only,
            max_request_bytes: self.max_request_bytes,
            tls_every_host: self.tls.as_ref().is_some_and(TlsOptions::is_every_host),
            tls_client_cert: self.tls.as_ref().is_some_and(TlsOptions::has_identity),
            tls,
            sasl: self.sasl,
            track_ensemble: self.track_ensemble,
            identity,
        });
        // The session task of zookeeper-client is spawned on the current runtime: make sure that
        // is ours, whatever runtime the caller polls this future on.
        let opened = runtime::spawn(open_session(cfg.clone(), cfg.connect_string.clone()))
            .await
            .map_err(super::join_error)?
            .map_err(|failure| failure.error)?;
        let client = Client::start(cfg, opened);
        client.check_chroot().await?;
        Ok(client)
    }

    /// [`connect`](Self::connect) for the blocking face.
    pub fn connect_blocking(self) -> Result<Client> {
        runtime::try_block_on(self.connect())?
    }
}

/// One host of a connect string, as written (`host:port`, `[v6]:port` or `host`), and whether
/// its scheme asked for TLS (`tcp+tls://`: `Some(true)`, `tcp://`: `Some(false)`, none: `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HostSpec<'a> {
    pub(crate) address: &'a str,
    pub(crate) tls: Option<bool>,
}

impl<'a> HostSpec<'a> {
    /// The host without its port, and without the brackets of an IPv6 address.
    pub(crate) fn name(&self) -> &'a str {
        let address = self.address;
        if let Some(rest) = address.strip_prefix('[') {
            return rest.split_once(']').map_or(rest, |(name, _)| name);
        }
        address.rsplit_once(':').map_or(address, |(name, _)| name)
    }

    /// `host:port`, with ZooKeeper's default port where none is written.
    pub(crate) fn with_port(&self) -> String {
        let has_port = if let Some(rest) = self.address.strip_prefix('[') {
            rest.split_once(']')
                .is_some_and(|(_, tail)| tail.starts_with(':'))
        } else {
            self.address.contains(':')
        };
        if has_port {
            self.address.to_string()
        } else {
            format!("{}:2181", self.address)
        }
    }
}

/// Splits `[scheme://]host:port[,...][/chroot]` the way the wire client reads it: hosts with
/// their scheme stripped, and the chroot after the first `/` of the last host.
pub(crate) fn split_connect_string(s: &str) -> (Vec<HostSpec<'_>>, Option<&str>) {
    let segments: Vec<&str> = s.split(',').collect();
    let last = segments.len() - 1;
    let mut chroot = None;
    let hosts = segments
        .into_iter()
        .enumerate()
        .map(|(i, seg)| {
            let seg = seg.trim();
            let (mut address, tls) = if let Some(rest) = seg.strip_prefix("tcp+tls://") {
                (rest, Some(true))
            } else if let Some(rest) = seg.strip_prefix("tcp://") {
                (rest, Some(false))
            } else {
                (seg, None)
            };
            if i == last {
                if let Some(j) = address.find('/') {
                    chroot = Some(&address[j..]);
                    address = &address[..j];
                }
            }
            HostSpec { address, tls }
        })
        .collect();
    (hosts, chroot)
}

/// Checks `host:port[,host:port...][/chroot]`; a host may be written `tcp://host:port` or
/// `tcp+tls://host:port` (TLS for that host, see [`TlsOptions::every_host`]).
pub fn validate_connect_string(s: &str) -> Result<()> {
    let bad = |why: String| {
        Err(Error::invalid(format!(
            "invalid connect string {s:?}: {why}"
        )))
    };
    if s.trim().is_empty() {
        return bad("it is empty; expected host:port[,host:port...][/chroot]".into());
    }
    let (hosts, chroot) = split_connect_string(s);
    if let Some(chroot) = chroot {
        if chroot != "/" {
            if let Err(e) = path::validate_path(chroot) {
                return bad(format!("bad chroot: {}", e.message()));
            }
        }
    }
    if hosts.len() == 1 && hosts[0].address.is_empty() && chroot.is_some() {
        return bad("no host before the chroot".into());
    }
    for HostSpec { address: host, .. } in hosts {
        if host.is_empty() {
            return bad("an empty host between commas".into());
        }
        if host.contains("://") {
            return bad(format!(
                "unknown scheme in {host:?} (expected tcp:// or tcp+tls://)"
            ));
        }
        let (name, port) = if let Some(rest) = host.strip_prefix('[') {
            match rest.split_once(']') {
                Some((n, "")) => (n, None),
                Some((n, tail)) if tail.starts_with(':') => (n, Some(&tail[1..])),
                _ => return bad(format!("bad IPv6 host {host:?} (expected [addr]:port)")),
            }
        } else {
            match host.rsplit_once(':') {
                Some((n, p)) => (n, Some(p)),
                None => (host, None),
            }
        };
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return bad(format!("bad host name in {host:?}"));
        }
        if let Some(port) = port {
            match port.parse::<u32>() {
                Ok(p) if (1..=65535).contains(&p) => {}
                _ => return bad(format!("bad port {port:?} in {host:?} (expected 1..65535)")),
            }
        }
    }
    Ok(())
}
