//! `zkr ensemble config` (the ensemble's members and version, from `/zookeeper/config`) and
//! `zkr ensemble reconfig --add LINE --remove ID --members LINE,… --from-version V` (ZooKeeper's
//! reconfig, Curator's `reconfig()`).

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use zkrecipes::{EnsembleConfig, ErrorKind, Reconfig};

use super::node::with_client;
use crate::args::Global;
use crate::exit::{Failure, Outcome, OK, USAGE};
use crate::output::{write_failure, Printer};

pub const ENSEMBLE_AFTER_HELP: &str = "\
config prints one line per member: ID ROLE HOST:QUORUM:ELECTION CLIENT (CLIENT is - without a
client port), then version=0x…; with --json one object {\"version\", \"connect_string\",
\"members\": [{\"id\", \"role\", \"host\", \"quorum_port\", \"election_port\", \"client_address\",
\"server_line\"}]}. A standalone server lists no members.

reconfig changes the members and prints the new configuration the same way: --add a
server.ID=HOST:QUORUM:ELECTION[:ROLE];[HOST:]CLIENTPORT line (repeatable; the server must be
running and synced with the leader), --remove a member ID (repeatable), or --members the whole new
list (comma-separated lines; not with --add/--remove). --from-version V applies it only if the
configuration is still version V (decimal or 0x…; exit 1 otherwise). It needs servers with
reconfigEnabled=true and a superuser: --auth USER:PASSWORD of the servers' digest superuser (or
servers with skipACL). A refusal (reconfiguration disabled, not allowed, no quorum for the new
members, a stale version, a bad line) exits 1 with ZooKeeper's reason.

Examples:
  zkr ensemble config
  zkr ensemble config --json | jq -r .connect_string
  zkr --auth super:secret ensemble reconfig --add 'server.4=10.0.0.4:2888:3888;2181'
  zkr --auth super:secret ensemble reconfig --remove 2 --from-version 0x100000003";

#[derive(Subcommand, Debug)]
pub enum EnsembleCommand {
    /// Print the ensemble's members and configuration version
    Config,
    /// Change the ensemble's members (needs a superuser and reconfigEnabled=true)
    Reconfig(ReconfigArgs),
}

#[derive(Args, Debug)]
pub struct ReconfigArgs {
    /// A server to add (repeatable): a `server.ID=…` line, see `help`.
    #[arg(
        long = "add",
        value_name = "LINE",
        help = "A server to add: server.ID=HOST:QUORUM:ELECTION[:ROLE];[HOST:]CLIENTPORT (repeatable)"
    )]
    pub add: Vec<String>,
    /// A member to remove, by id (repeatable)
    #[arg(long = "remove", value_name = "ID")]
    pub remove: Vec<u64>,
    /// The whole new member list: server lines, comma-separated
    #[arg(long, value_name = "LINE,...", value_delimiter = ',', conflicts_with_all = ["add", "remove"])]
    pub members: Option<Vec<String>>,
    /// Only if the configuration is still this version (decimal or 0x…)
    #[arg(long, value_name = "V", value_parser = parse_version)]
    pub from_version: Option<i64>,
}

fn parse_version(s: &str) -> Result<i64, String> {
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    match parsed {
        Ok(v) if v >= 0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a configuration version (a zxid: decimal or 0x…, >= 0)"
        )),
    }
}

fn member_json(config: &EnsembleConfig) -> Value {
    json!({
        "version": config.version,
        "version_hex": format!("{:#x}", config.version),
        "connect_string": config.connect_string(),
        "members": config.members.iter().map(|m| json!({
            "id": m.id,
            "role": m.role.name(),
            "host": m.host,
            "quorum_port": m.quorum_port,
            "election_port": m.election_port,
            "client_address": m.client_address(),
            "server_line": m.server_line(),
        })).collect::<Vec<_>>(),
    })
}

fn print(global: &Global, config: &EnsembleConfig) -> Result<(), Failure> {
    let mut out = Printer::new();
    if global.json {
        return out.json(&member_json(config)).map_err(write_failure);
    }
    for m in &config.members {
        let client = m.client_address().unwrap_or_else(|| "-".into());
        let line = format!(
            "{} {} {}:{}:{} {client}",
            m.id,
            m.role.name(),
            m.host,
            m.quorum_port,
            m.election_port
        );
        out.line(&line).map_err(write_failure)?;
    }
    out.line(&format!("version={:#x}", config.version))
        .map_err(write_failure)
}

pub async fn run(global: &Global, command: EnsembleCommand) -> Outcome {
    match command {
        EnsembleCommand::Config => {
            with_client(global, |c| async move {
                let config = c
                    .get_config()
                    .await
                    .map_err(|e| Failure::from_core("ensemble config", e))?;
                print(global, &config)?;
                Ok(OK)
            })
            .await
        }
        EnsembleCommand::Reconfig(a) => {
            let mut change = match a.members {
                Some(members) => Reconfig::new_members(members),
                None => {
                    if a.add.is_empty() && a.remove.is_empty() && a.from_version.is_none() {
                        return Err(Failure::usage(
                            "ensemble reconfig: say what changes: --add, --remove or --members (or --from-version alone for a new version with the same members)",
                        ));
                    }
                    Reconfig::incremental().joining(a.add).leaving(a.remove)
                }
            };
            if let Some(v) = a.from_version {
                change = change.from_config(v);
            }
            with_client(global, |c| async move {
                let config = c.reconfig(change).await.map_err(|e| {
                    let refused = e.kind() == ErrorKind::Server;
                    let mut f = Failure::from_core("ensemble reconfig", e);
                    if refused {
                        // ZooKeeper refused the change (disabled, no quorum, one in progress):
                        // not a connection problem.
                        f.code = USAGE;
                    }
                    f
                })?;
                print(global, &config)?;
                Ok(OK)
            })
            .await
        }
    }
}
