//! `zkr inspect`: what lives at a recipe path, read from Curator 5.x's node layout (DESIGN.md §
//! Wire compatibility), which zkrecipes shares, so Curator's recipes and ours read the same.
//!
//! This reads and presents; it decides nothing for a recipe. The roles it shows follow the
//! documented rules: a mutex's (and LeaderSelector's) first node holds; a read/write lock's
//! readers hold until the first writer, a writer only at the head; a latch's first node leads.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use zkrecipes::{path, Client, Error, Result, Stat};

use crate::connect::session_hex;
use crate::output::Printer;

/// What a node name says it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Lock,
    Read,
    Write,
    Latch,
    Lease,
}

impl NodeKind {
    /// The kind of a participant node name, by Curator's lock names.
    pub fn of(name: &str) -> Option<NodeKind> {
        // `__READ__`/`__WRIT__` first: their names never contain "lock-" (a uuid is hex).
        [
            ("__READ__", NodeKind::Read),
            ("__WRIT__", NodeKind::Write),
            ("latch-", NodeKind::Latch),
            ("lease-", NodeKind::Lease),
            ("lock-", NodeKind::Lock),
        ]
        .into_iter()
        .find(|(marker, _)| name.contains(marker))
        .map(|(_, k)| k)
    }

    fn marker(self) -> &'static str {
        match self {
            NodeKind::Lock => "lock-",
            NodeKind::Read => "__READ__",
            NodeKind::Write => "__WRIT__",
            NodeKind::Latch => "latch-",
            NodeKind::Lease => "lease-",
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            NodeKind::Lock => "lock",
            NodeKind::Read => "read",
            NodeKind::Write => "write",
            NodeKind::Latch => "latch",
            NodeKind::Lease => "lease",
        }
    }
}

/// Curator's sort key: the text after the last lock name (the sequence number).
fn sort_key(name: &str) -> &str {
    match NodeKind::of(name) {
        Some(k) => name.rsplit(k.marker()).next().unwrap_or(name),
        None => name,
    }
}

/// One participant node: a holder, waiter, leader, participant or lease.
#[derive(Clone, Debug)]
pub struct Member {
    pub node: String,
    pub kind: Option<NodeKind>,
    pub role: &'static str,
    pub stat: Stat,
    pub data: Vec<u8>,
}

impl Member {
    pub fn session(&self) -> i64 {
        self.stat.ephemeral_owner
    }

    /// The participant id / lock data as text (UTF-8, else hex).
    pub fn data_text(&self) -> String {
        data_text(&self.data)
    }

    fn age_ms(&self, now_ms: i64) -> i64 {
        (now_ms - self.stat.ctime).max(0)
    }

    fn to_json(&self, position: usize, now_ms: i64) -> Value {
        json!({
            "position": position,
            "role": self.role,
            "type": self.kind.map(NodeKind::as_str),
            "node": self.node,
            "session": session_hex(self.session()),
            "fencing_token": self.stat.czxid,
            "age_ms": self.age_ms(now_ms),
            "data": self.data_text(),
        })
    }
}

/// What a path holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recipe {
    /// `lock-` nodes: InterProcessMutex, or LeaderSelector (the same layout).
    Mutex,
    ReadWrite,
    /// `leases/` and `locks/` children: InterProcessSemaphoreV2 (and SemaphoreMutex).
    Semaphore,
    Latch,
    /// 8 bytes of data: DistributedAtomicLong.
    Counter(i64),
    /// 4 bytes of data: SharedCount (or DistributedAtomicInteger).
    SharedCount(i32),
    /// No children, no data.
    Empty,
    /// Something else.
    Unknown,
}

impl Recipe {
    fn kind(&self) -> &'static str {
        match self {
            Recipe::Mutex => "mutex",
            Recipe::ReadWrite => "read_write_lock",
            Recipe::Semaphore => "semaphore",
            Recipe::Latch => "leader_latch",
            Recipe::Counter(_) => "counter",
            Recipe::SharedCount(_) => "shared_count",
            Recipe::Empty => "empty",
            Recipe::Unknown => "unknown",
        }
    }

    fn title(&self) -> &'static str {
        match self {
            Recipe::Mutex => "InterProcessMutex (LeaderSelector uses the same layout)",
            Recipe::ReadWrite => "InterProcessReadWriteLock",
            Recipe::Semaphore => "InterProcessSemaphoreV2",
            Recipe::Latch => "LeaderLatch",
            Recipe::Counter(_) => "DistributedAtomicLong",
            Recipe::SharedCount(_) => "SharedCount (or DistributedAtomicInteger)",
            Recipe::Empty => {
                "empty node (an idle lock, latch or semaphore path, or a counter never written)"
            }
            Recipe::Unknown => "not a recipe layout zkr knows",
        }
    }
}

/// Everything `inspect` shows about a path.
#[derive(Clone, Debug)]
pub struct Report {
    pub path: String,
    pub recipe: Recipe,
    /// Participants in queue order (a semaphore's leases).
    pub members: Vec<Member>,
    /// A semaphore's line for its internal lock (`locks/`): who takes a lease next.
    pub queue: Vec<Member>,
    /// Children that are not participants.
    pub others: Vec<String>,
    pub data: Vec<u8>,
}

impl Report {
    /// The position (0-based) of the first node owned by `session` in the line: the members,
    /// then (semaphore) the queue.
    pub fn position_of(&self, session: i64) -> Option<usize> {
        self.members
            .iter()
            .chain(&self.queue)
            .position(|m| m.session() == session)
    }
}

/// Reads `path`: the node, its children and each participant's data and stat.
pub async fn read(client: &Client, path: &str) -> Result<Report> {
    let (data, stat) = client.get_data(path).await?;
    let children = client.get_children(path).await?;
    let has = |kind: NodeKind| children.iter().any(|c| NodeKind::of(c) == Some(kind));
    let recipe = if has(NodeKind::Read) || has(NodeKind::Write) {
        Recipe::ReadWrite
    } else if has(NodeKind::Latch) {
        Recipe::Latch
    } else if has(NodeKind::Lock) {
        Recipe::Mutex
    } else if !children.is_empty() && children.iter().all(|c| c == "leases" || c == "locks") {
        Recipe::Semaphore
    } else if children.is_empty() && stat.ephemeral_owner == 0 {
        match data.len() {
            0 => Recipe::Empty,
            8 => Recipe::Counter(i64::from_be_bytes(data[..].try_into().expect("8 bytes"))),
            4 => Recipe::SharedCount(i32::from_be_bytes(data[..].try_into().expect("4 bytes"))),
            _ => Recipe::Unknown,
        }
    } else {
        Recipe::Unknown
    };
    let mut report = Report {
        path: path.to_string(),
        recipe,
        members: Vec::new(),
        queue: Vec::new(),
        others: Vec::new(),
        data,
    };
    match report.recipe {
        Recipe::Mutex | Recipe::ReadWrite | Recipe::Latch => {
            let (participants, others): (Vec<_>, Vec<_>) = children
                .into_iter()
                .partition(|c| NodeKind::of(c).is_some());
            report.members = read_members(client, path, participants).await?;
            report.others = others;
            assign_roles(&report.recipe, &mut report.members);
        }
        Recipe::Semaphore => {
            report.members = read_line(client, &path::join(path, "leases")).await?;
            for m in &mut report.members {
                m.role = "lease";
            }
            report.queue = read_line(client, &path::join(path, "locks")).await?;
            for (i, m) in report.queue.iter_mut().enumerate() {
                m.role = if i == 0 { "acquiring" } else { "waiting" };
            }
        }
        _ => report.others = children,
    }
    Ok(report)
}

/// The participant children of `parent` (none if it is gone), in line order.
async fn read_line(client: &Client, parent: &str) -> Result<Vec<Member>> {
    let children = match client.get_children(parent).await {
        Ok(c) => c,
        Err(Error::NoNode(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let participants = children
        .into_iter()
        .filter(|c| NodeKind::of(c).is_some())
        .collect();
    read_members(client, parent, participants).await
}

/// Reads each node's data and stat, all requests in flight together (one session answers in
/// order, so this costs about one round trip); nodes gone meanwhile are left out.
async fn read_members(
    client: &Client,
    parent: &str,
    mut names: Vec<String>,
) -> Result<Vec<Member>> {
    names.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
    let mut reads = tokio::task::JoinSet::new();
    for (i, name) in names.iter().enumerate() {
        let (client, node) = (client.clone(), path::join(parent, name));
        reads.spawn(async move { (i, client.get_data(&node).await) });
    }
    let mut found: Vec<Option<Member>> = vec![None; names.len()];
    while let Some(joined) = reads.join_next().await {
        let (i, read) = joined.map_err(|e| Error::Internal(format!("read task: {e}").into()))?;
        match read {
            Ok((data, stat)) => {
                found[i] = Some(Member {
                    node: names[i].clone(),
                    kind: NodeKind::of(&names[i]),
                    role: "",
                    stat,
                    data,
                })
            }
            Err(Error::NoNode(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(found.into_iter().flatten().collect())
}

fn assign_roles(recipe: &Recipe, members: &mut [Member]) {
    let mut writer_before = false;
    for (i, m) in members.iter_mut().enumerate() {
        m.role = match recipe {
            Recipe::Latch => {
                if i == 0 {
                    "leader"
                } else {
                    "participant"
                }
            }
            Recipe::ReadWrite => {
                let role = match m.kind {
                    Some(NodeKind::Write) if i == 0 => "holder",
                    Some(NodeKind::Read) if !writer_before => "holder",
                    _ => "waiting",
                };
                writer_before |= m.kind == Some(NodeKind::Write);
                role
            }
            _ => {
                if i == 0 {
                    "holder"
                } else {
                    "waiting"
                }
            }
        };
    }
}

/// Node data as text: UTF-8 without control characters, else hex.
pub fn data_text(data: &[u8]) -> String {
    match std::str::from_utf8(data) {
        Ok(s) if !s.chars().any(char::is_control) => s.to_string(),
        _ => {
            let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
            format!("0x{hex}")
        }
    }
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A node age for people: `850ms`, `12.3s`, `4m05s`, `2h03m`.
pub fn age_text(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60)
    }
}

pub fn to_json(r: &Report) -> Value {
    let now = now_ms();
    let mut v = json!({
        "path": r.path,
        "kind": r.recipe.kind(),
        "description": r.recipe.title(),
    });
    let obj = v.as_object_mut().expect("an object");
    match &r.recipe {
        Recipe::Counter(n) => {
            obj.insert("value".into(), json!(n));
        }
        Recipe::SharedCount(n) => {
            obj.insert("value".into(), json!(n));
        }
        Recipe::Unknown | Recipe::Empty => {
            obj.insert("data".into(), json!(data_text(&r.data)));
            obj.insert("children".into(), json!(r.others));
        }
        Recipe::Semaphore => {
            let leases: Vec<Value> = r
                .members
                .iter()
                .enumerate()
                .map(|(i, m)| m.to_json(i, now))
                .collect();
            let queue: Vec<Value> = r
                .queue
                .iter()
                .enumerate()
                .map(|(i, m)| m.to_json(i, now))
                .collect();
            obj.insert("leases".into(), json!(leases));
            obj.insert("queue".into(), json!(queue));
        }
        Recipe::Mutex | Recipe::ReadWrite | Recipe::Latch => {
            let members: Vec<Value> = r
                .members
                .iter()
                .enumerate()
                .map(|(i, m)| m.to_json(i, now))
                .collect();
            obj.insert("members".into(), json!(members));
            if !r.others.is_empty() {
                obj.insert("other_children".into(), json!(r.others));
            }
        }
    }
    v
}

fn table(out: &mut Printer, title: &str, members: &[Member], now: i64) -> std::io::Result<()> {
    out.line(title)?;
    if members.is_empty() {
        return out.line("  (none)");
    }
    let rows: Vec<[String; 7]> = members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            [
                i.to_string(),
                format!(
                    "{}{}",
                    m.role,
                    m.kind
                        .filter(|k| matches!(k, NodeKind::Read | NodeKind::Write))
                        .map(|k| format!(" ({})", k.as_str()))
                        .unwrap_or_default()
                ),
                session_hex(m.session()),
                m.stat.czxid.to_string(),
                age_text(m.age_ms(now)),
                m.data_text(),
                m.node.clone(),
            ]
        })
        .collect();
    let header = ["#", "ROLE", "SESSION", "TOKEN", "AGE", "DATA", "NODE"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let fmt_row = |cells: [&str; 7]| {
        let mut s = String::from(" ");
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(&format!(" {cell}"));
            } else {
                s.push_str(&format!(" {cell:<w$}"));
            }
        }
        s
    };
    out.line(&fmt_row(header))?;
    for row in &rows {
        out.line(&fmt_row(row.each_ref().map(String::as_str)))?;
    }
    Ok(())
}

/// Prints a report for people.
pub fn print_text(out: &mut Printer, r: &Report) -> std::io::Result<()> {
    let now = now_ms();
    out.line(&format!("{}: {}", r.path, r.recipe.title()))?;
    match &r.recipe {
        Recipe::Counter(n) => out.line(&format!("value: {n}")),
        Recipe::SharedCount(n) => out.line(&format!("value: {n}")),
        Recipe::Empty => Ok(()),
        Recipe::Unknown => {
            out.line(&format!(
                "data: {} ({} bytes)",
                data_text(&r.data),
                r.data.len()
            ))?;
            out.line(&format!("children: {}", r.others.len()))?;
            for c in &r.others {
                out.line(&format!("  {c}"))?;
            }
            Ok(())
        }
        Recipe::Semaphore => {
            table(out, "leases (held):", &r.members, now)?;
            table(out, "queue (the first takes a lease next):", &r.queue, now)
        }
        Recipe::Latch => table(out, "participants (the first leads):", &r.members, now),
        Recipe::Mutex | Recipe::ReadWrite => {
            table(out, "holders and waiters, in queue order:", &r.members, now)?;
            if !r.others.is_empty() {
                out.line(&format!("other children: {}", r.others.join(", ")))?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_kinds_and_sort_keys_follow_curators_names() {
        let n = "_c_0b4cbd2c-6a2a-4d4c-9b2f-2e9b0ad1a7a1-lock-0000000012";
        assert_eq!(NodeKind::of(n), Some(NodeKind::Lock));
        assert_eq!(sort_key(n), "0000000012");
        assert_eq!(
            NodeKind::of("_c_x-__READ__0000000003"),
            Some(NodeKind::Read)
        );
        assert_eq!(sort_key("_c_x-__WRIT__0000000004"), "0000000004");
        assert_eq!(NodeKind::of("_c_x-latch-0000000001"), Some(NodeKind::Latch));
        assert_eq!(NodeKind::of("leases"), None);
    }

    #[test]
    fn readers_hold_until_the_first_writer() {
        let m = |name: &str| Member {
            node: name.into(),
            kind: NodeKind::of(name),
            role: "",
            stat: Stat {
                czxid: 0,
                mzxid: 0,
                pzxid: 0,
                ctime: 0,
                mtime: 0,
                version: 0,
                cversion: 0,
                aversion: 0,
                ephemeral_owner: 0,
                data_length: 0,
                num_children: 0,
            },
            data: vec![],
        };
        let mut ms = vec![
            m("a__READ__1"),
            m("b__READ__2"),
            m("c__WRIT__3"),
            m("d__READ__4"),
        ];
        assign_roles(&Recipe::ReadWrite, &mut ms);
        let roles: Vec<_> = ms.iter().map(|m| m.role).collect();
        assert_eq!(roles, ["holder", "holder", "waiting", "waiting"]);
    }

    #[test]
    fn data_and_ages_read_well() {
        assert_eq!(data_text(b"host-a"), "host-a");
        assert_eq!(data_text(&[0, 1, 0xff]), "0x0001ff");
        assert_eq!(age_text(850), "850ms");
        assert_eq!(age_text(12_340), "12.3s");
        assert_eq!(age_text(245_000), "4m05s");
    }
}
