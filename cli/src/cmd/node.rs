//! `zkr node create|get|set|delete|ls PATH` (the plain operations, zkCli's) and
//! `zkr acl get|set|digest` (ACL administration, with zkCli's `scheme:id:perms` entries).

use std::io::{Read, Write};
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use zkrecipes::client::{Acl, CreateMode, CreateOptions, DeleteOptions, Permission, Stat};
use zkrecipes::Client;

use crate::args::{parse_duration, Global};
use crate::connect;
use crate::exit::{Failure, Outcome, OK};
use crate::output::{write_failure, Printer};

pub const NODE_AFTER_HELP: &str = "\
DATA is the node's data as text; - reads it from stdin (bytes as they are). get prints the data
as it is, then a newline; with --json one object {\"path\", \"data\" (text, or null when not
UTF-8), \"data_hex\", \"stat\"}. ls prints the children sorted, one per line; --stat adds the
node's stat after them (zkCli's ls -s). Stats print zkCli's way (cZxid = 0x…, one per line).

Exit codes: 1 for a missing node, an existing one (create), a version mismatch, a node with
children (delete without --recursive), no permission; 2 when ZooKeeper cannot be reached.

Examples:
  zkr node create /app/config '{\"debug\": false}' --parents
  zkr node create /app/job- --mode persistent_sequential      # prints /app/job-0000000007
  zkr node create /tmp/lease x --ttl 10m                      # a TTL node (zookeeper.extendedTypesEnabled)
  zkr node get /app/config --stat
  zkr node set /app/config - --version 3 < config.json
  zkr node ls /app --stat
  zkr node delete /app --recursive";

pub const ACL_AFTER_HELP: &str = "\
ACL entries are zkCli's: SCHEME:ID:PERMS, PERMS being letters of cdrwa (create, delete, read,
write, admin): world:anyone:r, digest:alice:<base64 sha1>:cdrwa, ip:10.0.0.0/8:rw, auth::cdrwa.
Give several as arguments or comma-separated. get prints one entry per line in that form (the
input of set); --json adds the ACL version (aversion). set --version N changes it only at that
ACL version (exit 1 otherwise). digest USER:PASSWORD prints the digest entry for that user
(ZooKeeper's DigestAuthenticationProvider.generateDigest), for set.

Examples:
  zkr acl get /app/config
  zkr acl set /app/config world:anyone:r,$(zkr acl digest alice:secret):cdrwa
  zkr --auth alice:secret node set /app/config 'new'";

#[derive(Subcommand, Debug)]
pub enum NodeCommand {
    /// Create a node (prints its path: with the sequence number for sequential modes)
    Create(CreateArgs),
    /// Print a node's data (and stat)
    Get(GetArgs),
    /// Set a node's data
    Set(SetArgs),
    /// Delete a node
    Delete(DeleteArgs),
    /// List a node's children
    Ls(LsArgs),
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    /// The node
    pub path: String,
    /// Its data (text; - reads stdin); none by default
    pub data: Option<String>,
    /// persistent, persistent_sequential, ephemeral (gone when zkr exits), ephemeral_sequential,
    /// container, persistent_with_ttl, persistent_sequential_with_ttl
    #[arg(long, default_value = "persistent", value_name = "MODE")]
    pub mode: String,
    /// Time to live of a TTL node (a persistent mode becomes its TTL mode)
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub ttl: Option<Duration>,
    /// Store the data GZIP-compressed (Curator's compression)
    #[arg(long)]
    pub compressed: bool,
    /// Create missing parents (persistent nodes)
    #[arg(long)]
    pub parents: bool,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// The node
    pub path: String,
    /// The data was stored compressed: print it decompressed
    #[arg(long)]
    pub compressed: bool,
    /// Print the node's stat after the data
    #[arg(long, short = 's')]
    pub stat: bool,
}

#[derive(Args, Debug)]
// Its --version is the node's version, not zkr's.
#[command(disable_version_flag = true)]
pub struct SetArgs {
    /// The node
    pub path: String,
    /// The new data (text; - reads stdin)
    pub data: String,
    /// Only if the node's data version is N (exit 1 otherwise)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub version: Option<i32>,
    /// Store the data GZIP-compressed
    #[arg(long)]
    pub compressed: bool,
}

#[derive(Args, Debug)]
// Its --version is the node's version, not zkr's.
#[command(disable_version_flag = true)]
pub struct DeleteArgs {
    /// The node
    pub path: String,
    /// Only if the node's data version is N (exit 1 otherwise)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub version: Option<i32>,
    /// Delete its children first (zkCli's deleteall)
    #[arg(long)]
    pub recursive: bool,
}

#[derive(Args, Debug)]
pub struct LsArgs {
    /// The node
    pub path: String,
    /// Print the node's stat after its children
    #[arg(long, short = 's')]
    pub stat: bool,
}

#[derive(Subcommand, Debug)]
pub enum AclCommand {
    /// Print a node's ACL, one SCHEME:ID:PERMS entry per line
    Get {
        /// The node
        path: String,
    },
    /// Replace a node's ACL
    #[command(disable_version_flag = true)]
    Set {
        /// The node
        path: String,
        /// SCHEME:ID:PERMS entries (several arguments, or comma-separated)
        #[arg(required = true, value_name = "ACL")]
        acl: Vec<String>,
        /// Only if the node's ACL version (aversion) is N (exit 1 otherwise)
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        version: Option<i32>,
    },
    /// Print the digest entry digest:USER:HASH for USER:PASSWORD (no server needed)
    Digest {
        /// USER:PASSWORD
        credentials: String,
    },
}

fn check_path(path: &str) -> Result<(), Failure> {
    super::check_path(path)
}

/// Connects, runs `f` with the client, closes it (the one-shot commands: node, acl, ensemble).
pub(crate) async fn with_client<F, Fut>(global: &Global, f: F) -> Outcome
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = Outcome>,
{
    connect::check(global)?;
    let client = connect::connect(global).await?;
    let outcome = f(client.clone()).await;
    connect::close(&client).await;
    outcome
}

fn data_arg(data: Option<&str>) -> Result<Vec<u8>, Failure> {
    match data {
        None => Ok(Vec::new()),
        Some("-") => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| Failure::usage(format!("cannot read the data from stdin: {e}")))?;
            Ok(buf)
        }
        Some(text) => Ok(text.as_bytes().to_vec()),
    }
}

fn mode_arg(mode: &str, ttl: Option<Duration>) -> Result<CreateMode, Failure> {
    let m = CreateMode::from_name(&mode.replace('-', "_"))
        .map_err(|e| Failure::usage(format!("--mode: {}", e.message())))?;
    match (m, ttl) {
        (CreateMode::Persistent, Some(_)) => Ok(CreateMode::PersistentWithTtl),
        (CreateMode::PersistentSequential, Some(_)) => Ok(CreateMode::PersistentSequentialWithTtl),
        (m, Some(_)) if !m.is_ttl() => Err(Failure::usage(format!(
            "--ttl is for persistent nodes; a {} node cannot have one",
            m.name().to_ascii_lowercase()
        ))),
        (m, None) if m.is_ttl() => Err(Failure::usage(format!(
            "a {} node needs --ttl",
            m.name().to_ascii_lowercase()
        ))),
        (m, _) => Ok(m),
    }
}

pub async fn run_node(global: &Global, command: NodeCommand) -> Outcome {
    match command {
        NodeCommand::Create(a) => {
            check_path(&a.path)?;
            let mode = mode_arg(&a.mode, a.ttl)?;
            let data = data_arg(a.data.as_deref())?;
            with_client(global, |c| async move {
                let fail = |e| Failure::from_core(&format!("create {}", a.path), e);
                let mut options = CreateOptions::new(mode);
                if let Some(ttl) = a.ttl {
                    options = options.ttl(ttl);
                }
                if a.compressed {
                    options = options.compressed();
                }
                if a.parents {
                    options = options.persistent_parents();
                }
                let created = c.create(&a.path, &data, options).await.map_err(fail)?;
                let mut out = Printer::new();
                if global.json {
                    out.json(&json!({ "path": created.path, "stat": stat_json(&created.stat) }))
                } else {
                    out.line(&created.path)
                }
                .map_err(write_failure)?;
                Ok(OK)
            })
            .await
        }
        NodeCommand::Get(a) => {
            check_path(&a.path)?;
            with_client(global, |c| async move {
                let fail = |e| Failure::from_core(&format!("get {}", a.path), e);
                let (data, stat) = if a.compressed {
                    c.get_data_decompressed(&a.path).await
                } else {
                    c.get_data(&a.path).await
                }
                .map_err(fail)?;
                if global.json {
                    let text = std::str::from_utf8(&data).ok();
                    Printer::new()
                        .json(&json!({
                            "path": a.path,
                            "data": text,
                            "data_hex": hex(&data),
                            "stat": stat_json(&stat),
                        }))
                        .map_err(write_failure)?;
                } else {
                    let mut out = std::io::stdout().lock();
                    out.write_all(&data)
                        .and_then(|()| out.write_all(b"\n"))
                        .and_then(|()| out.flush())
                        .map_err(write_failure)?;
                    drop(out);
                    if a.stat {
                        print_stat(&stat)?;
                    }
                }
                Ok(OK)
            })
            .await
        }
        NodeCommand::Set(a) => {
            check_path(&a.path)?;
            let data = data_arg(Some(&a.data))?;
            with_client(global, |c| async move {
                let fail = |e| Failure::from_core(&format!("set {}", a.path), e);
                let stat = if a.compressed {
                    c.set_data_compressed(&a.path, &data, a.version).await
                } else {
                    c.set_data(&a.path, &data, a.version).await
                }
                .map_err(fail)?;
                if global.json {
                    Printer::new()
                        .json(&json!({ "path": a.path, "stat": stat_json(&stat) }))
                        .map_err(write_failure)?;
                }
                Ok(OK)
            })
            .await
        }
        NodeCommand::Delete(a) => {
            check_path(&a.path)?;
            if a.path == "/" {
                return Err(Failure::usage("the root \"/\" cannot be deleted"));
            }
            with_client(global, |c| async move {
                let fail = |e| Failure::from_core(&format!("delete {}", a.path), e);
                let options = DeleteOptions {
                    version: a.version,
                    guaranteed: false,
                    recursive: a.recursive,
                };
                c.delete(&a.path, options).await.map_err(fail)?;
                if global.json {
                    Printer::new()
                        .json(&json!({ "path": a.path, "deleted": true }))
                        .map_err(write_failure)?;
                }
                Ok(OK)
            })
            .await
        }
        NodeCommand::Ls(a) => {
            check_path(&a.path)?;
            with_client(global, |c| async move {
                let fail = |e| Failure::from_core(&format!("ls {}", a.path), e);
                let mut children = c.get_children(&a.path).await.map_err(fail)?;
                children.sort();
                let stat = if a.stat || global.json {
                    Some(c.exists(&a.path).await.map_err(fail)?.ok_or_else(|| {
                        Failure::usage(format!("ls {}: the node is gone", a.path))
                    })?)
                } else {
                    None
                };
                let mut out = Printer::new();
                if global.json {
                    out.json(&json!({
                        "path": a.path,
                        "children": children,
                        "stat": stat.as_ref().map(stat_json),
                    }))
                    .map_err(write_failure)?;
                } else {
                    for child in &children {
                        out.line(child).map_err(write_failure)?;
                    }
                    if let Some(stat) = &stat {
                        print_stat(stat)?;
                    }
                }
                Ok(OK)
            })
            .await
        }
    }
}

pub async fn run_acl(global: &Global, command: AclCommand) -> Outcome {
    match command {
        AclCommand::Get { path } => {
            check_path(&path)?;
            with_client(global, |c| async move {
                let fail = |e| Failure::from_core(&format!("get the ACL of {path}"), e);
                let (acl, stat) = c.get_acl(&path).await.map_err(fail)?;
                let mut out = Printer::new();
                if global.json {
                    let entries: Vec<Value> = acl
                        .iter()
                        .map(|a| json!({ "scheme": a.scheme, "id": a.id, "perms": perms_text(a.perms) }))
                        .collect();
                    out.json(&json!({ "path": path, "acl": entries, "aversion": stat.aversion }))
                        .map_err(write_failure)?;
                } else {
                    for a in &acl {
                        out.line(&format_acl(a)).map_err(write_failure)?;
                    }
                }
                Ok(OK)
            })
            .await
        }
        AclCommand::Set { path, acl, version } => {
            check_path(&path)?;
            let entries = parse_acl_args(&acl)?;
            with_client(global, |c| async move {
                let fail = |e| Failure::from_core(&format!("set the ACL of {path}"), e);
                let stat = c.set_acl(&path, &entries, version).await.map_err(fail)?;
                if global.json {
                    Printer::new()
                        .json(&json!({ "path": path, "aversion": stat.aversion }))
                        .map_err(write_failure)?;
                }
                Ok(OK)
            })
            .await
        }
        AclCommand::Digest { credentials } => {
            let Some((user, password)) = credentials.split_once(':') else {
                return Err(Failure::usage(
                    "digest: expected USER:PASSWORD (the user may not contain ':')",
                ));
            };
            if user.is_empty() {
                return Err(Failure::usage("digest: the user is empty"));
            }
            let a = Acl::digest(Permission::ALL, user, password);
            let mut out = Printer::new();
            if global.json {
                out.json(&json!({ "scheme": a.scheme, "id": a.id }))
            } else {
                out.line(&format!("{}:{}", a.scheme, a.id))
            }
            .map_err(write_failure)?;
            Ok(OK)
        }
    }
}

/// zkCli's permission letters, in its order (cdrwa).
const LETTERS: [(char, Permission); 5] = [
    ('c', Permission::CREATE),
    ('d', Permission::DELETE),
    ('r', Permission::READ),
    ('w', Permission::WRITE),
    ('a', Permission::ADMIN),
];

fn perms_text(p: Permission) -> String {
    LETTERS
        .iter()
        .filter(|(_, bit)| p.contains(*bit))
        .map(|(c, _)| *c)
        .collect()
}

/// `scheme:id:perms`, zkCli's entry form.
pub fn format_acl(a: &Acl) -> String {
    format!("{}:{}:{}", a.scheme, a.id, perms_text(a.perms))
}

/// One `scheme:id:perms` entry (the id may contain ':', as digest ids do).
pub fn parse_acl(entry: &str) -> Result<Acl, Failure> {
    let bad = |why: &str| {
        Failure::usage(format!(
            "ACL entry {entry:?}: {why}; expected SCHEME:ID:PERMS, e.g. world:anyone:r or digest:alice:HASH:cdrwa"
        ))
    };
    let (rest, letters) = entry.rsplit_once(':').ok_or_else(|| bad("no ':'"))?;
    let (scheme, id) = rest.split_once(':').ok_or_else(|| bad("no ID part"))?;
    if scheme.is_empty() {
        return Err(bad("the scheme is empty"));
    }
    let mut bits = 0u32;
    for ch in letters.chars() {
        let (_, p) = LETTERS
            .iter()
            .find(|(c, _)| *c == ch.to_ascii_lowercase())
            .ok_or_else(|| bad(&format!("{ch:?} is not a permission letter (cdrwa)")))?;
        bits |= p.bits();
    }
    let perms = Permission::from_bits(bits).map_err(|_| bad("no permission letters"))?;
    Ok(Acl::new(perms, scheme, id))
}

fn parse_acl_args(args: &[String]) -> Result<Vec<Acl>, Failure> {
    args.iter()
        .flat_map(|a| a.split(','))
        .filter(|e| !e.trim().is_empty())
        .map(|e| parse_acl(e.trim()))
        .collect()
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

fn stat_json(s: &Stat) -> Value {
    json!({
        "czxid": s.czxid,
        "mzxid": s.mzxid,
        "pzxid": s.pzxid,
        "ctime": s.ctime,
        "mtime": s.mtime,
        "version": s.version,
        "cversion": s.cversion,
        "aversion": s.aversion,
        "ephemeral_owner": s.ephemeral_owner,
        "data_length": s.data_length,
        "num_children": s.num_children,
    })
}

/// A stat as zkCli prints it.
fn print_stat(s: &Stat) -> Result<(), Failure> {
    let lines = [
        format!("cZxid = {:#x}", s.czxid),
        format!("ctime = {}", s.ctime),
        format!("mZxid = {:#x}", s.mzxid),
        format!("mtime = {}", s.mtime),
        format!("pZxid = {:#x}", s.pzxid),
        format!("cversion = {}", s.cversion),
        format!("dataVersion = {}", s.version),
        format!("aclVersion = {}", s.aversion),
        format!("ephemeralOwner = {:#x}", s.ephemeral_owner),
        format!("dataLength = {}", s.data_length),
        format!("numChildren = {}", s.num_children),
    ];
    let mut out = Printer::new();
    for l in lines {
        out.line(&l).map_err(write_failure)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_entries_parse_and_format_as_zkcli_does() {
        let a = parse_acl("digest:alice:abc=:cdrwa").unwrap();
        assert_eq!((a.scheme.as_str(), a.id.as_str()), ("digest", "alice:abc="));
        assert_eq!(a.perms, Permission::ALL);
        assert_eq!(format_acl(&a), "digest:alice:abc=:cdrwa");
        let r = parse_acl("world:anyone:r").unwrap();
        assert_eq!(r.perms, Permission::READ);
        assert_eq!(format_acl(&r), "world:anyone:r");
        let auth = parse_acl("auth::ra").unwrap();
        assert_eq!(
            (auth.id.as_str(), format_acl(&auth)),
            ("", "auth::ra".to_string())
        );
        for bad in [
            "world",
            "world:anyone",
            ":x:r",
            "world:anyone:",
            "world:anyone:rx",
        ] {
            assert!(parse_acl(bad).is_err(), "{bad}");
        }
        let list = parse_acl_args(&["world:anyone:r,ip:10.0.0.0/8:rw".into(), "auth::a".into()]);
        assert_eq!(list.unwrap().len(), 3);
    }

    #[test]
    fn ttl_turns_a_persistent_mode_into_its_ttl_mode() {
        let ttl = Some(Duration::from_secs(5));
        assert_eq!(
            mode_arg("persistent", ttl).unwrap(),
            CreateMode::PersistentWithTtl
        );
        assert_eq!(
            mode_arg("persistent-sequential", ttl).unwrap(),
            CreateMode::PersistentSequentialWithTtl
        );
        assert!(mode_arg("ephemeral", ttl).is_err());
        assert!(mode_arg("persistent_with_ttl", None).is_err());
        assert!(mode_arg("bogus", None).is_err());
        assert_eq!(mode_arg("CONTAINER", None).unwrap(), CreateMode::Container);
    }
}
