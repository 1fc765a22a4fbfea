//! Dynamic ensembles: the ensemble's configuration (`/zookeeper/config`, Curator's
//! `getConfig().forEnsemble()`), ZooKeeper's `reconfig` (Curator's `reconfig()`), and the
//! ensemble tracker (Curator's `EnsembleTracker`), which follows the configuration and gives the
//! session the new members' addresses without ending it.
//!
//! Protocol facts (ZooKeeper 3.5+ dynamic reconfiguration, tested against 3.8 in
//! `core/tests/ensemble.rs`):
//! - `/zookeeper/config` holds one `server.ID=HOST:QUORUM:ELECTION[:ROLE][;[CLIENTHOST:]CLIENTPORT]`
//!   line per member (ROLE `participant` by default; several `|`-separated quorum addresses
//!   since 3.6) and `version=HEX`, the zxid that made the configuration. Readable by anyone.
//! - `reconfig` is refused (`ReconfigDisabled`) unless the servers run with
//!   `reconfigEnabled=true`, and (`NoAuth`) unless the session may write `/zookeeper/config`:
//!   a superuser, or a server with `skipACL`. A joiner must already be running and synced with
//!   the leader (else `NewConfigNoQuorum`, -13); one reconfiguration runs at a time
//!   (`ReconfigInProgress`, -14).
//! - A member that leaves, or a leader that hands over, may drop its clients' connections before
//!   the reply is sent: after a connection loss `reconfig` reads the configuration again and
//!   sends the change again only if it is not in effect.
//! - The configuration names only the plaintext client port (`secureClientPort` is not in it),
//!   so the tracker cannot follow a TLS ensemble: the option is refused with TLS.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::broadcast;

use super::builder::split_connect_string;
use super::{Client, ConnectionState};
use crate::{runtime, Error, Result};

/// ZooKeeper's configuration node.
pub(crate) const CONFIG_NODE: &str = "/zookeeper/config";

/// A member's role in the ensemble.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerRole {
    /// A voting member.
    Participant,
    /// A non-voting member that serves clients.
    Observer,
}

impl ServerRole {
    /// Both roles.
    pub const ALL: &'static [ServerRole] = &[ServerRole::Participant, ServerRole::Observer];

    /// `PARTICIPANT` or `OBSERVER` (the one spelling every face uses).
    pub const fn name(self) -> &'static str {
        match self {
            ServerRole::Participant => "PARTICIPANT",
            ServerRole::Observer => "OBSERVER",
        }
    }

    /// The role named `name` (as [`name`](Self::name) gives it, or in lower case as
    /// ZooKeeper's configuration writes it).
    pub fn from_name(name: &str) -> Option<ServerRole> {
        ServerRole::ALL
            .iter()
            .copied()
            .find(|r| r.name().eq_ignore_ascii_case(name))
    }
}

/// One member of the ensemble, from its `server.ID=` line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnsembleMember {
    /// The member's id (`myid`).
    pub id: u64,
    /// The host of its (first) quorum address.
    pub host: String,
    /// Its quorum (follower-to-leader) port.
    pub quorum_port: u16,
    /// Its leader-election port.
    pub election_port: u16,
    /// Participant or observer.
    pub role: ServerRole,
    /// The address it serves clients on, as written (`0.0.0.0` when only a port is given);
    /// `None` without a client port.
    pub client_host: Option<String>,
    /// Its client port (plaintext); `None` if the line has none.
    pub client_port: Option<u16>,
    /// The line's value as the server wrote it (`HOST:QUORUM:ELECTION:ROLE;HOST:PORT`);
    /// [`server_line`](Self::server_line) is what `reconfig` takes to add it.
    pub spec: String,
}

impl EnsembleMember {
    /// `server.ID=SPEC`: the member's line, as [`Reconfig::joining`] takes it.
    pub fn server_line(&self) -> String {
        format!("server.{}={}", self.id, self.spec)
    }

    /// Where a client reaches it, as a connect string writes it (`host:port`, `[v6]:port`): its
    /// client address, or its quorum host when the client address is a wildcard (`0.0.0.0`,
    /// `::`), as Curator's `EnsembleTracker` does. `None` without a client port.
    pub fn client_address(&self) -> Option<String> {
        let port = self.client_port?;
        let host = match self.client_host.as_deref() {
            Some(h) if !is_wildcard(h) => h,
            _ => &self.host,
        };
        Some(if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        })
    }
}

fn is_wildcard(host: &str) -> bool {
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified())
}

/// The ensemble's configuration (`/zookeeper/config`): its members and its version.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnsembleConfig {
    /// The members, by id.
    pub members: Vec<EnsembleMember>,
    /// The configuration's version: the zxid of the reconfiguration that made it (`version=`
    /// in hexadecimal in the node; 0 for a configuration never changed). `reconfig`'s
    /// `from_config` takes it.
    pub version: i64,
    /// The node's text as read.
    pub data: String,
}

impl EnsembleConfig {
    /// Parses the text of `/zookeeper/config`. Lines other than `server.N=` and `version=`
    /// (hierarchical quorums' `group.`/`weight.`) are kept in [`data`](Self::data) only.
    /// `CorruptedData` for a line that cannot be read.
    pub fn parse(data: &str) -> Result<EnsembleConfig> {
        let bad = |line: &str, why: &str| {
            Error::CorruptedData(
                format!("{CONFIG_NODE}: cannot read the line {line:?}: {why}").into(),
            )
        };
        let mut members = Vec::new();
        let mut version = 0;
        for line in data.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let Some((key, value)) = line.split_once('=') else {
                return Err(bad(line, "no `=`"));
            };
            if let Some(id) = key.strip_prefix("server.") {
                let id: u64 = id
                    .parse()
                    .map_err(|_| bad(line, "the id is not a number"))?;
                members.push(member(id, value).map_err(|why| bad(line, &why))?);
            } else if key == "version" {
                version = i64::from_str_radix(value, 16)
                    .map_err(|_| bad(line, "the version is not hexadecimal"))?;
            }
        }
        members.sort_by_key(|m| m.id);
        Ok(EnsembleConfig {
            members,
            version,
            data: data.to_string(),
        })
    }

    /// The member with this id.
    pub fn member(&self, id: u64) -> Option<&EnsembleMember> {
        self.members.iter().find(|m| m.id == id)
    }

    /// The members' client addresses, by id, as a connect string (`host:port,...`, no
    /// chroot): what the ensemble tracker gives the session. Members without a client port
    /// are left out; `""` if none has one.
    pub fn connect_string(&self) -> String {
        self.members
            .iter()
            .filter_map(EnsembleMember::client_address)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `host:port` with an IPv6 host in brackets; the host without them.
fn host_port(s: &str) -> std::result::Result<(String, &str), String> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) = rest
            .split_once(']')
            .ok_or_else(|| format!("no `]` in {s:?}"))?;
        Ok((host.to_string(), tail.strip_prefix(':').unwrap_or(tail)))
    } else {
        match s.split_once(':') {
            Some((h, tail)) => Ok((h.to_string(), tail)),
            None => Ok((s.to_string(), "")),
        }
    }
}

fn port(s: &str, what: &str) -> std::result::Result<u16, String> {
    s.parse::<u16>()
        .map_err(|_| format!("the {what} port {s:?} is not a port"))
}

/// A member from the value of its `server.ID=` line.
fn member(id: u64, value: &str) -> std::result::Result<EnsembleMember, String> {
    let (servers, client) = match value.split_once(';') {
        Some((s, c)) => (s.trim(), Some(c.trim())),
        None => (value.trim(), None),
    };
    let mut first = None;
    let mut role = ServerRole::Participant;
    for address in servers.split('|') {
        let (host, rest) = host_port(address.trim())?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (quorum, election) = match parts.as_slice() {
            [q, e] => (port(q, "quorum")?, port(e, "election")?),
            [q, e, r] => {
                role = ServerRole::from_name(r).ok_or_else(|| format!("unknown role {r:?}"))?;
                (port(q, "quorum")?, port(e, "election")?)
            }
            _ => return Err(format!("{address:?} is not HOST:QUORUM:ELECTION[:ROLE]")),
        };
        first.get_or_insert((host, quorum, election));
    }
    let (host, quorum_port, election_port) = first.ok_or("no quorum address")?;
    let (client_host, client_port) = match client.filter(|c| !c.is_empty()) {
        None => (None, None),
        Some(c) if !c.contains(':') => (Some("0.0.0.0".to_string()), Some(port(c, "client")?)),
        Some(c) => {
            let (h, p) = host_port(c)?;
            (Some(h), Some(port(p, "client")?))
        }
    };
    Ok(EnsembleMember {
        id,
        host,
        quorum_port,
        election_port,
        role,
        client_host,
        client_port,
        spec: value.trim().to_string(),
    })
}

/// A change of the ensemble's members, for [`Client::reconfig`] (Curator's `reconfig()`
/// builder): incremental (servers joining, members leaving) or a whole new member list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reconfig {
    joining: Vec<String>,
    leaving: Vec<u64>,
    new_members: Option<Vec<String>>,
    from_config: Option<i64>,
}

impl Reconfig {
    /// An incremental change: add [`joining`](Self::joining) servers, remove
    /// [`leaving`](Self::leaving) members (both empty: a change that changes nothing but the
    /// version, as ZooKeeper allows).
    pub fn incremental() -> Reconfig {
        Reconfig::default()
    }

    /// The ensemble becomes exactly these servers (`server.ID=SPEC` lines, as
    /// [`EnsembleMember::server_line`] gives them).
    pub fn new_members<S: Into<String>>(members: impl IntoIterator<Item = S>) -> Reconfig {
        Reconfig {
            new_members: Some(members.into_iter().map(Into::into).collect()),
            ..Reconfig::default()
        }
    }

    /// Servers to add (or whose line changes, e.g. to another role): `server.ID=SPEC` lines,
    /// `SPEC` being `HOST:QUORUM:ELECTION[:ROLE];[HOST:]CLIENTPORT`.
    pub fn joining<S: Into<String>>(mut self, servers: impl IntoIterator<Item = S>) -> Reconfig {
        self.joining.extend(servers.into_iter().map(Into::into));
        self
    }

    /// Members to remove, by id.
    pub fn leaving(mut self, ids: impl IntoIterator<Item = u64>) -> Reconfig {
        self.leaving.extend(ids);
        self
    }

    /// Only if the configuration is still this version (a [`EnsembleConfig::version`]);
    /// `BadVersion` otherwise. Default: whatever the current one is.
    pub fn from_config(mut self, version: i64) -> Reconfig {
        self.from_config = Some(version);
        self
    }

    /// The joining servers' lines.
    pub fn joining_servers(&self) -> &[String] {
        &self.joining
    }

    /// The leaving members' ids.
    pub fn leaving_ids(&self) -> &[u64] {
        &self.leaving
    }

    /// The new member list, for a non-incremental change.
    pub fn new_member_list(&self) -> Option<&[String]> {
        self.new_members.as_deref()
    }

    /// The version the change applies to, if one was given.
    pub fn from_version(&self) -> Option<i64> {
        self.from_config
    }

    /// Checks the lines and ids before anything is sent.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.new_members.is_some() && (!self.joining.is_empty() || !self.leaving.is_empty()) {
            return Err(Error::invalid(
                "reconfig: new members replace the whole ensemble and cannot be combined with joining or leaving servers",
            ));
        }
        if self.from_config.is_some_and(|v| v < 0) {
            return Err(Error::invalid(format!(
                "reconfig: from_config {} is not a configuration version (they are zxids, >= 0; -1 means any)",
                self.from_config.unwrap_or_default()
            )));
        }
        let lines = self.joining.iter().chain(self.new_members.iter().flatten());
        let mut ids = std::collections::HashSet::new();
        for line in lines {
            let (id, spec) = server_line(line)?;
            if !ids.insert(id) {
                return Err(Error::invalid(format!(
                    "reconfig: server {id} is given twice"
                )));
            }
            member(id, spec).map_err(|why| {
                Error::invalid(format!("reconfig: the server line {line:?}: {why}"))
            })?;
        }
        if let Some(id) = self.leaving.iter().find(|id| ids.contains(id)) {
            return Err(Error::invalid(format!(
                "reconfig: server {id} cannot both join and leave"
            )));
        }
        Ok(())
    }

    /// Whether the change changes nothing but the version (no joining, no leaving servers).
    fn is_vacuous(&self) -> bool {
        self.new_members.is_none() && self.joining.is_empty() && self.leaving.is_empty()
    }

    /// Whether `config` has this change in effect: the joining servers are members with the
    /// roles asked, the leaving ones are not (incremental); exactly the new members (otherwise).
    pub(crate) fn in_effect(&self, config: &EnsembleConfig) -> bool {
        let wanted = |line: &String| {
            server_line(line)
                .ok()
                .and_then(|(id, spec)| member(id, spec).ok())
        };
        match &self.new_members {
            Some(members) => {
                let mut want: Vec<u64> = members.iter().filter_map(wanted).map(|m| m.id).collect();
                want.sort_unstable();
                let have: Vec<u64> = config.members.iter().map(|m| m.id).collect();
                want == have
            }
            None => {
                self.joining.iter().filter_map(wanted).all(|w| {
                    config
                        .member(w.id)
                        .is_some_and(|m| m.role == w.role && m.quorum_port == w.quorum_port)
                }) && self.leaving.iter().all(|id| config.member(*id).is_none())
            }
        }
    }
}

/// The error for a `from_config` that is no longer the configuration's version.
fn stale(from: i64, now: i64) -> Error {
    Error::BadVersion(
        format!(
            "reconfig: the configuration is version {now:#x}, not {from:#x} (from_config); nothing was sent"
        )
        .into(),
    )
}

/// `(id, spec)` of a `server.ID=SPEC` line.
fn server_line(line: &str) -> Result<(u64, &str)> {
    let bad = |why: &str| {
        Error::invalid(format!(
            "reconfig: {line:?} is not a server line (server.ID=HOST:QUORUM:ELECTION[:ROLE];[HOST:]CLIENTPORT): {why}"
        ))
    };
    let (key, spec) = line.trim().split_once('=').ok_or_else(|| bad("no `=`"))?;
    let id = key
        .trim()
        .strip_prefix("server.")
        .ok_or_else(|| bad("it does not start with `server.`"))?;
    let id: u64 = id.parse().map_err(|_| bad("the id is not a number"))?;
    if spec.contains(',') || spec.trim().is_empty() {
        return Err(bad("one server per line, with its address"));
    }
    Ok((id, spec.trim()))
}

/// What ZooKeeper's reconfiguration errors mean, said for a user.
fn explain(e: Error) -> Error {
    let why = match e.zk_code() {
        Some(-123) => "reconfiguration is disabled on this ensemble (its servers need reconfigEnabled=true)",
        Some(-102) => "this session may not reconfigure the ensemble: authenticate as a superuser (digest), or run the servers with skipACL",
        Some(-13) => "the new configuration has no quorum of servers connected and synced with the leader (start the joining servers first)",
        Some(-14) => "another reconfiguration is in progress",
        Some(-103) => "the configuration is no longer the version given (from_config)",
        Some(-8) => "the server refused the change (a joining line it cannot read, a member that is not there, or a change that leaves no quorum)",
        _ => return e,
    };
    e.context(why)
}

impl Client {
    /// The ensemble's configuration, `/zookeeper/config` parsed (Curator's
    /// `getConfig().forEnsemble()`): its members with their ids, addresses, roles and client
    /// ports, and its version. Readable by any session; on a server without dynamic
    /// configuration it lists the static members (without client ports where the
    /// configuration names none).
    pub async fn get_config(&self) -> Result<EnsembleConfig> {
        let (data, _) = self.retry(|s| async move { s.get_config().await }).await?;
        EnsembleConfig::parse(&String::from_utf8_lossy(&data))
    }

    /// [`get_config`](Self::get_config), blocking.
    pub fn get_config_blocking(&self) -> Result<EnsembleConfig> {
        runtime::try_block_on(self.get_config())?
    }

    /// Changes the ensemble's members (ZooKeeper's `reconfig`, Curator's `reconfig()`) and
    /// returns the new configuration. Needs servers with `reconfigEnabled=true` and a session
    /// allowed to write `/zookeeper/config` (a superuser, or servers with `skipACL`). Joining
    /// servers must be running and synced with the leader first.
    ///
    /// Safe to repeat: when the reply is lost (a leaving member or a leader handing over may
    /// drop the connection first), it reads the configuration on the next connection and
    /// returns it if the change is in effect, else sends the change again. With
    /// [`from_config`](Reconfig::from_config), a version that is no longer the configuration's
    /// is refused with `BadVersion` before anything is sent (so a lost reply can never make a
    /// stale change look applied), and after a lost reply the change is resent only if the
    /// version did not move; a change of nothing but the version whose reply was lost while the
    /// version moved is `OutcomeUnknown` (it cannot be told apart from another session's).
    /// Errors: the kind of
    /// ZooKeeper's answer (`NoAuth`, `BadVersion` for a stale `from_config`, `InvalidArgument`
    /// for lines it refuses, `Server` with ZooKeeper's code for a disabled reconfiguration
    /// (-123), no quorum (-13) or one in progress (-14)), with a message saying which.
    pub async fn reconfig(&self, change: Reconfig) -> Result<EnsembleConfig> {
        if self.is_closed() {
            return Err(Error::closed());
        }
        change.validate()?;
        let change = &change;
        // Whether a try has been sent (its reply may have been lost).
        let sent = AtomicBool::new(false);
        let sent = &sent;
        let (data, _) = self
            .retry(|s| async move {
                let from = change.from_config;
                if !sent.load(Ordering::SeqCst) {
                    if let Some(v) = from {
                        // A stale version is refused before anything is sent, so that a
                        // lost reply can never make a stale change look applied.
                        let (data, _) = s.get_config().await?;
                        let now = EnsembleConfig::parse(&String::from_utf8_lossy(&data))?;
                        if now.version != v {
                            return Err(stale(v, now.version));
                        }
                    }
                } else {
                    // The reply of a try was lost: what is in effect now?
                    let (data, stat) = s.get_config().await?;
                    let now = EnsembleConfig::parse(&String::from_utf8_lossy(&data))?;
                    match from {
                        // Not applied: the version did not move (resent below, still
                        // conditional on it).
                        Some(v) if now.version == v => {}
                        // A change of nothing but the version cannot be told apart from
                        // another one that moved it.
                        Some(v) if change.is_vacuous() => {
                            return Err(Error::OutcomeUnknown(
                                format!(
                                    "reconfig from version {v:#x}: the reply was lost and the configuration is now version {:#x}; \
                                     a change of nothing but the version cannot be told apart from another session's",
                                    now.version
                                )
                                .into(),
                            ))
                        }
                        // Applied (ours, or the same change by another session: what was asked
                        // is in effect).
                        _ if !change.is_vacuous() && change.in_effect(&now) => {
                            return Ok((data, stat))
                        }
                        // Not in effect: resent (refused with BadVersion if `from` is stale now);
                        // a vacuous change without `from` is harmless to repeat.
                        _ => {}
                    }
                }
                sent.store(true, Ordering::SeqCst);
                s.reconfig(change).await
            })
            .await
            .map_err(explain)?;
        EnsembleConfig::parse(&String::from_utf8_lossy(&data))
    }

    /// [`reconfig`](Self::reconfig), blocking.
    pub fn reconfig_blocking(&self, change: Reconfig) -> Result<EnsembleConfig> {
        runtime::try_block_on(self.reconfig(change))?
    }

    /// The servers the client connects to now: the connect string it was built with, or, with
    /// [`track_ensemble`](super::ClientBuilder::track_ensemble), the ensemble's members as last
    /// read from its configuration (with the connect string's chroot).
    pub fn current_connect_string(&self) -> String {
        self.inner
            .hosts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Gives the session the members of `config` (the ensemble tracker's step): the new
    /// connect string (with our chroot) becomes the current one and the session's server list
    /// (see the wire client's `update_server_list`: the session is kept; a connection to a
    /// server no longer listed moves to one that is; a share moves to new servers).
    fn follow(&self, config: &EnsembleConfig) {
        let hosts = config.connect_string();
        if hosts.is_empty() {
            tracing::debug!(
                version = config.version,
                "ensemble configuration without client addresses: not followed"
            );
            return;
        }
        let chroot = split_connect_string(self.connect_string()).1.unwrap_or("");
        let next = format!("{hosts}{chroot}");
        {
            let mut current = self.inner.hosts.lock().unwrap_or_else(|e| e.into_inner());
            if *current == next {
                return;
            }
            tracing::info!(from = %*current, to = %next, version = %format_args!("{:#x}", config.version), "the ensemble changed: following its members");
            current.clone_from(&next);
        }
        let zk = self
            .inner
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(zk) = zk {
            if let Err(e) = zk.update_server_list(&next) {
                tracing::warn!(error = %e, hosts = %next, "could not give the session the ensemble's new members");
            }
        }
    }
}

/// Starts the ensemble tracker of `client` (Curator's `EnsembleTracker`): it reads
/// `/zookeeper/config` with a watch at each connection and each change, and follows it
/// ([`Client::follow`]). It ends when the client is closed or dropped.
pub(crate) fn track(client: &Client) {
    let weak = client.downgrade();
    let mut states = client.subscribe_events();
    let closed = client.closed();
    runtime::spawn(async move {
        tokio::pin!(closed);
        let mut backoff = Duration::from_millis(100);
        loop {
            let Some(client) = weak.upgrade() else { return };
            if client.is_closed() {
                return;
            }
            let read = async {
                let s = client.session().await?;
                s.get_config_watch().await
            };
            let outcome = tokio::select! {
                r = read => r,
                _ = &mut closed => return,
            };
            let watch = match outcome {
                Ok((data, watch)) => {
                    backoff = Duration::from_millis(100);
                    match EnsembleConfig::parse(&String::from_utf8_lossy(&data)) {
                        Ok(config) => client.follow(&config),
                        Err(e) => {
                            tracing::warn!(error = %e, "the ensemble's configuration cannot be read: not followed")
                        }
                    }
                    Some(watch)
                }
                Err(e) => {
                    tracing::debug!(error = %e, retry_in = ?backoff, "could not read the ensemble's configuration yet");
                    None
                }
            };
            drop(client);
            // Read again when the node changes, at each (re)connection (Curator re-reads on
            // CONNECTED and RECONNECTED), or after a backoff when the read failed.
            let failed = watch.is_none();
            let wait = async {
                match watch {
                    Some(w) => {
                        w.changed().await;
                    }
                    None => tokio::time::sleep(backoff).await,
                }
            };
            tokio::select! {
                () = wait => {}
                () = reconnected(&mut states) => {}
                _ = &mut closed => return,
            }
            if failed {
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    });
}

/// Resolves at the next CONNECTED, RECONNECTED or READ_ONLY.
async fn reconnected(states: &mut broadcast::Receiver<ConnectionState>) {
    loop {
        match states.recv().await {
            Ok(s) if s.is_connected() => return,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_are_read_like_curators_ensemble_tracker() {
        let config = EnsembleConfig::parse(
            "server.2=127.0.0.2:3001:4001:observer;127.0.0.2:2182\n\
             server.1=127.0.0.1:3000:4000:participant;127.0.0.1:2181\nversion=10000000a\n",
        )
        .unwrap();
        assert_eq!(config.version, 0x10000000a);
        assert_eq!(
            config.members.iter().map(|m| m.id).collect::<Vec<_>>(),
            [1, 2]
        );
        let observer = config.member(2).unwrap();
        assert_eq!(observer.role, ServerRole::Observer);
        assert_eq!((observer.quorum_port, observer.election_port), (3001, 4001));
        assert_eq!(
            observer.server_line(),
            "server.2=127.0.0.2:3001:4001:observer;127.0.0.2:2182"
        );
        assert_eq!(config.connect_string(), "127.0.0.1:2181,127.0.0.2:2182");
        // Curator's TestReconfiguration cases.
        let one = |line: &str| EnsembleConfig::parse(line).unwrap().connect_string();
        assert_eq!(
            one("server.1=10.1.2.3:2888:3888:participant;10.2.3.4:2181"),
            "10.2.3.4:2181"
        );
        assert_eq!(
            one("server.1=10.1.2.3:2888:3888:participant;2181"),
            "10.1.2.3:2181"
        );
        assert_eq!(
            one("server.1=10.1.2.3:2888:3888:participant;0.0.0.0:2181"),
            "10.1.2.3:2181"
        );
        assert_eq!(one("server.1=10.1.2.3:2888:3888:participant"), "");
        assert_eq!(
            one("server.1=server.addr:2888:3888:participant;client.addr:2181"),
            "client.addr:2181"
        );
        assert_eq!(
            one("server.1=server.addr:2888:3888:participant;[::]:2181"),
            "server.addr:2181"
        );
        assert_eq!(
            one("server.1=[2001:db8::7334]:2888:3888:participant;[::0]:2181"),
            "[2001:db8::7334]:2181"
        );
        assert_eq!(
            one("server.1=[1010::7]:2888:3888:participant;[2001:db8::1]:2181"),
            "[2001:db8::1]:2181"
        );
        // ZooKeeper 3.6's multiple quorum addresses; no role means participant.
        let multi = EnsembleConfig::parse("server.3=a:1:2|b:3:4;5\nversion=0").unwrap();
        let m = multi.member(3).unwrap();
        assert_eq!((m.host.as_str(), m.role), ("a", ServerRole::Participant));
        assert_eq!(multi.connect_string(), "a:5");
        for bad in [
            "server.x=a:1:2",
            "server.1=a:1",
            "version=zz",
            "server.1",
            "server.1=a:1:2:boss",
        ] {
            assert_eq!(
                EnsembleConfig::parse(bad).unwrap_err().kind(),
                crate::ErrorKind::CorruptedData,
                "{bad}"
            );
        }
    }

    #[test]
    fn changes_are_checked_before_they_are_sent_and_recognized_once_in_effect() {
        let line = "server.4=127.0.0.4:1:2:participant;127.0.0.4:3";
        assert!(Reconfig::incremental()
            .joining([line])
            .leaving([2])
            .validate()
            .is_ok());
        assert!(Reconfig::incremental().validate().is_ok());
        for bad in [
            Reconfig::new_members([line]).leaving([1]),
            Reconfig::incremental().joining(["4=127.0.0.4:1:2;3"]),
            Reconfig::incremental().joining(["server.4=a:1:2;3,server.5=b:1:2;3"]),
            Reconfig::incremental().joining(["server.4=a:1"]),
            Reconfig::incremental().joining([line, line]),
            Reconfig::incremental().joining([line]).leaving([4]),
            Reconfig::incremental().from_config(-2),
        ] {
            assert_eq!(
                bad.validate().unwrap_err().kind(),
                crate::ErrorKind::InvalidArgument,
                "{bad:?}"
            );
        }
        let config = EnsembleConfig::parse(
            "server.1=127.0.0.1:5:6:participant;127.0.0.1:7\n\
             server.4=127.0.0.4:1:2:participant;127.0.0.4:3\nversion=1",
        )
        .unwrap();
        assert!(Reconfig::incremental()
            .joining([line])
            .leaving([2])
            .in_effect(&config));
        assert!(!Reconfig::incremental().leaving([4]).in_effect(&config));
        assert!(!Reconfig::incremental()
            .joining(["server.4=127.0.0.4:1:2:observer;127.0.0.4:3"])
            .in_effect(&config));
        assert!(Reconfig::new_members([line, "server.1=127.0.0.1:5:6;7"]).in_effect(&config));
        assert!(!Reconfig::new_members([line]).in_effect(&config));
    }
}
