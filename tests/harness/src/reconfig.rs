//! Reconfigurable ensembles: ZooKeeper's dynamic reconfiguration (3.5+), with members in a
//! dynamic configuration file, and servers added while the ensemble runs.
//!
//! [`TestingCluster::start_reconfigurable`] writes, for each server, `reconfigEnabled=true`,
//! `standaloneEnabled=false` and `dynamicConfigFile=<dir>/zoo.cfg.dynamic` in `zoo.cfg`, and the
//! members in the dynamic file, one `server.ID=HOST:QUORUM:ELECTION:ROLE;HOST:CLIENTPORT` line
//! each (the client address is part of the member, as `/zookeeper/config` reports it). ZooKeeper
//! itself rewrites both files at each reconfiguration (`zoo.cfg.dynamic.<version>`), so a
//! restarted server comes back with the last configuration it knew.
//!
//! [`TestingCluster::add_server`] starts a joiner the way ZooKeeper's reconfiguration guide
//! recommends: its initial configuration is the ensemble's committed one (as a member answers
//! `conf`) plus itself listed as an observer, so it can only find and sync with the current
//! leader, never form a quorum of its own; it becomes a member (participant or observer) when a
//! client's `reconfig` adds its [`reconfig_spec`](crate::TestingServerHandle::reconfig_spec).

use std::fs;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use crate::ports::{self, Reservation};
use crate::server::{four_letter, TestingCluster, TestingServerHandle};
use crate::wait_until;

/// The dynamic configuration file of each server, in its directory.
pub(crate) const DYNAMIC_FILE: &str = "zoo.cfg.dynamic";

const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// A member's role in a reconfigurable ensemble.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerRole {
    /// A voting member.
    Participant,
    /// A non-voting member that serves clients.
    Observer,
}

impl ServerRole {
    /// `"participant"` or `"observer"`, as ZooKeeper's configuration writes it.
    pub fn name(self) -> &'static str {
        match self {
            ServerRole::Participant => "participant",
            ServerRole::Observer => "observer",
        }
    }

    /// The role named `name` (`"participant"` or `"observer"`).
    pub fn from_name(name: &str) -> Option<ServerRole> {
        match name {
            "participant" => Some(ServerRole::Participant),
            "observer" => Some(ServerRole::Observer),
            _ => None,
        }
    }
}

/// What a server of a reconfigurable ensemble is as a member: its id, its quorum and
/// election ports and its role.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub(crate) id: u64,
    pub(crate) quorum_port: u16,
    pub(crate) election_port: u16,
    pub(crate) role: ServerRole,
}

impl Member {
    pub(crate) fn participant(index: usize, quorum_port: u16, election_port: u16) -> Member {
        Member {
            id: index as u64 + 1,
            quorum_port,
            election_port,
            role: ServerRole::Participant,
        }
    }

    /// `server.ID=HOST:QUORUM:ELECTION:ROLE;HOST:CLIENTPORT`.
    pub(crate) fn spec(&self, host: Ipv4Addr, client_port: u16) -> String {
        self.spec_as(host, client_port, self.role)
    }

    fn spec_as(&self, host: Ipv4Addr, client_port: u16, role: ServerRole) -> String {
        format!(
            "server.{}={host}:{}:{}:{};{host}:{client_port}",
            self.id,
            self.quorum_port,
            self.election_port,
            role.name()
        )
    }
}

/// The `zoo.cfg` lines of a server of a reconfigurable ensemble living in `dir` (its client
/// address is in the dynamic file).
pub(crate) fn static_lines(dir: &Path) -> String {
    format!(
        "reconfigEnabled=true\nstandaloneEnabled=false\ndynamicConfigFile={}\n",
        dir.join(DYNAMIC_FILE).display()
    )
}

/// The `server.N=` lines and the `version=` line of a `conf` answer (a server of a
/// reconfigurable ensemble lists its current configuration there).
fn config_lines(conf: &str) -> Option<(Vec<String>, String)> {
    let servers: Vec<String> = conf
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("server."))
        .map(str::to_owned)
        .collect();
    let version = conf
        .lines()
        .find_map(|l| l.trim().strip_prefix("version="))?
        .to_owned();
    (!servers.is_empty()).then_some((servers, version))
}

/// The member ids of `server.N=` lines.
fn member_ids(lines: &[String]) -> Vec<u64> {
    let mut ids: Vec<u64> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("server.")?.split('=').next()?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

impl TestingServerHandle {
    /// The member id (`myid`): `index + 1`.
    pub fn server_id(&self) -> u64 {
        self.index() as u64 + 1
    }

    /// In a reconfigurable ensemble, this server's member line as a `reconfig` takes it to
    /// add the server (`joining`): `server.ID=127.0.0.x:QUORUM:ELECTION:ROLE;127.0.0.x:PORT`,
    /// with the role it was started for (a first member: participant). `None` in an ensemble
    /// started by [`TestingCluster::start`].
    pub fn reconfig_spec(&self) -> Option<String> {
        self.member
            .as_ref()
            .map(|m| m.spec(self.host(), self.port()))
    }

    /// The role this server was started for in a reconfigurable ensemble (`None` otherwise).
    pub fn role(&self) -> Option<ServerRole> {
        self.member.as_ref().map(|m| m.role)
    }

    /// The configuration this server holds now (its `conf` answer): its members' `server.N=`
    /// lines and the configuration's `version` (hexadecimal, as `/zookeeper/config` writes
    /// it). `None` if it does not answer or lists no members.
    pub fn current_config(&self) -> Option<(Vec<String>, String)> {
        config_lines(&self.four_letter("conf"))
    }
}

impl TestingCluster {
    /// Whether the ensemble was started by [`start_reconfigurable`](Self::start_reconfigurable).
    pub fn is_reconfigurable(&self) -> bool {
        self.servers().iter().any(|s| s.member.is_some())
    }

    /// Adds a server to a reconfigurable ensemble, ready to be made a member: server `i` (the
    /// index returned; `myid` `i + 1`) on `127.0.0.(i+1)` and free ports, started with the
    /// committed configuration of the running members plus itself as an observer, and waited
    /// for until it has synced with the leader (a `Mode:` in its `srvr`). It is not a member
    /// yet: a client's `reconfig` with `joining = [server(i).reconfig_spec()]` makes it one,
    /// as `role` says. Panics on an ensemble not started reconfigurable, with TLS, SASL or
    /// Kerberos (their material is made for the first servers), or if the server does not
    /// sync within 30 s (with its log).
    pub fn add_server(&mut self, role: ServerRole) -> usize {
        assert!(
            self.is_reconfigurable(),
            "zkrecipes-testing: add_server needs an ensemble started with TestingCluster::start_reconfigurable"
        );
        let security = self.security();
        assert!(
            security.tls.is_none() && security.sasl_users.is_empty() && !security.kerberos,
            "zkrecipes-testing: add_server cannot secure a new server with TLS, SASL or Kerberos yet"
        );
        let index = self.servers().len();
        let flags = self.deployment_jvm_flags(index);
        let server = start_joiner(self.root(), self.servers(), &flags, role, false);
        self.push_server(server);
        index
    }

    /// Waits until every running, unpaused member of the ensemble reports the members with
    /// exactly these ids in its configuration (`conf`), e.g. after a `reconfig`, and one of
    /// them leads. Returns whether they did within `timeout`.
    pub fn wait_for_members(&self, ids: &[u64], timeout: Duration) -> bool {
        let mut want = ids.to_vec();
        want.sort_unstable();
        wait_until(timeout, Duration::from_millis(20), || {
            let members: Vec<&TestingServerHandle> = self
                .servers()
                .iter()
                .filter(|s| want.contains(&s.server_id()) && s.is_running() && !s.is_paused())
                .collect();
            members.len() == want.len()
                && members.iter().all(|s| {
                    s.current_config()
                        .is_some_and(|(lines, _)| member_ids(&lines) == want)
                })
                && self.leader_index().is_some()
        })
    }
}

/// Configures and starts the next server of a reconfigurable ensemble (index `servers.len()`,
/// under `root`, with these extra JVM flags) as a joiner, and waits until it has synced with
/// the leader: see [`TestingCluster::add_server`]. `detached`: in its own session, outliving
/// this process (`zk-harness add-server`).
pub(crate) fn start_joiner(
    root: &Path,
    servers: &[TestingServerHandle],
    flags: &[String],
    role: ServerRole,
    detached: bool,
) -> TestingServerHandle {
    let (committed, _version) = servers
        .iter()
        .filter(|s| s.is_running() && !s.is_paused())
        .find_map(TestingServerHandle::current_config)
        .expect("zkrecipes-testing: no running member answers `conf` with a configuration");
    let index = servers.len();
    assert!(index < 254, "an ensemble has at most 254 servers");
    let host = Ipv4Addr::new(127, 0, 0, index as u8 + 1);
    let reserved: Vec<Reservation> = (0..3).map(|_| ports::reserve(host, false)).collect();
    let (port, quorum_port, election_port) =
        (reserved[0].port(), reserved[1].port(), reserved[2].port());
    let member = Member {
        id: index as u64 + 1,
        quorum_port,
        election_port,
        role,
    };
    let dir = root.join(format!("server{index}"));
    let data = dir.join("data");
    let _ = fs::remove_dir_all(&dir);
    let initial: String = committed
        .iter()
        .map(|l| format!("{l}\n"))
        .chain([format!(
            "{}\n",
            member.spec_as(host, port, ServerRole::Observer)
        )])
        .collect();
    let config = format!(
        "tickTime=200\ninitLimit=10\nsyncLimit=5\ndataDir={}\n{}\
             minSessionTimeout=400\nmaxSessionTimeout=120000\nmaxClientCnxns=0\n\
             4lw.commands.whitelist=*\nadmin.enableServer=false\nforceSync=no\npreAllocSize=1024\n",
        data.display(),
        static_lines(&dir),
    );
    let flags: String = flags.iter().map(|f| format!("{f}\n")).collect();
    let written = fs::create_dir_all(&data)
        .and_then(|()| fs::write(data.join("myid"), format!("{}\n", member.id)))
        .and_then(|()| fs::write(dir.join(DYNAMIC_FILE), initial))
        .and_then(|()| fs::write(dir.join("zoo.cfg"), config))
        .and_then(|()| fs::write(dir.join(crate::server::JVM_FLAGS_FILE), flags));
    if let Err(e) = written {
        panic!(
            "zkrecipes-testing: cannot write the configuration in {}: {e}",
            dir.display()
        );
    }
    let server = TestingServerHandle::member(index, host, port, dir, member, detached, reserved);
    server.start();
    let synced = wait_until(SYNC_TIMEOUT, Duration::from_millis(20), || {
        crate::server::mode(&four_letter(&server.connect_string(), "srvr")).is_some()
    });
    if !synced {
        let log = fs::read_to_string(server.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        server.kill();
        panic!(
                "zkrecipes-testing: the new server {index} ({}) did not sync with the ensemble's leader within 30 s; last lines of its log:\n{tail}",
                server.connect_string()
            );
    }
    server
}

/// `QUORUM:ELECTION:ROLE` of a member of a reconfigurable ensemble, as `zk-harness` records it
/// in its state file (`None` for a server of another ensemble).
pub fn member_record(server: &TestingServerHandle) -> Option<String> {
    server
        .member
        .as_ref()
        .map(|m| format!("{}:{}:{}", m.quorum_port, m.election_port, m.role.name()))
}

/// `server` (from [`attach`](crate::server::attach)) as the member of a reconfigurable
/// ensemble that [`member_record`] recorded; `None` if `record` is not `QUORUM:ELECTION:ROLE`.
pub fn attach_member(mut server: TestingServerHandle, record: &str) -> Option<TestingServerHandle> {
    let mut parts = record.split(':');
    let (quorum, election, role) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    server.member = Some(Member {
        id: server.server_id(),
        quorum_port: quorum.parse().ok()?,
        election_port: election.parse().ok()?,
        role: ServerRole::from_name(role)?,
    });
    server.set_standalone(false);
    Some(server)
}

/// [`TestingCluster::add_server`] for detached servers (`zk-harness add-server`): starts server
/// `servers.len()` of the reconfigurable ensemble `servers` under `root`, detached, with the
/// first server's extra JVM flags (its superuser), and waits until it has synced with the
/// leader. Errors on servers not started reconfigurable or secured with TLS, SASL or Kerberos.
pub fn add_detached_member(
    root: &Path,
    servers: &[TestingServerHandle],
    role: ServerRole,
) -> Result<TestingServerHandle, String> {
    if servers.is_empty() || servers.iter().any(|s| s.member.is_none()) {
        return Err("add-server needs servers started with --reconfigurable".into());
    }
    let flags_file = servers[0].dir().join(crate::server::JVM_FLAGS_FILE);
    let flags: Vec<String> = fs::read_to_string(&flags_file)
        .map_err(|e| format!("{}: {e}", flags_file.display()))?
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    let secured = servers.iter().any(|s| s.secure_port().is_some())
        || flags
            .iter()
            .any(|f| f.contains("login.config") || f.contains("krb5"));
    if secured {
        return Err("add-server cannot secure a new server with TLS, SASL or Kerberos yet".into());
    }
    Ok(start_joiner(root, servers, &flags, role, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conf_answer_gives_its_members_and_version() {
        let conf = "clientPort=0\nsecureClientPort=-1\ndataDir=/tmp/x\nmembership: \n\
                    server.1=127.0.0.1:1:2:participant;127.0.0.1:3\n\
                    server.2=127.0.0.2:4:5:observer;127.0.0.2:6\nversion=100000003\n";
        let (lines, version) = config_lines(conf).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(version, "100000003");
        assert_eq!(member_ids(&lines), vec![1, 2]);
        assert!(config_lines("clientPort=1\n").is_none());
        let m = Member::participant(3, 10, 11);
        assert_eq!(
            m.spec(Ipv4Addr::new(127, 0, 0, 4), 12),
            "server.4=127.0.0.4:10:11:participant;127.0.0.4:12"
        );
        assert_eq!(
            ServerRole::from_name("observer"),
            Some(ServerRole::Observer)
        );
        assert_eq!(ServerRole::from_name("leader"), None);
    }
}
