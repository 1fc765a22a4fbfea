//! `zkr inspect`: what lives at a recipe path. The core reads it — the layout, the participants
//! in line order and their roles, by the recipes' own rules ([`zkrecipes::participants`]); this
//! module only formats it, as text for people or as JSON.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use zkrecipes::participants::{Layout, NodeKind, ParticipantNode, Participants};

use crate::connect::session_hex;
use crate::output::Printer;

/// What `inspect` shows about a path.
pub type Report = Participants;

/// The participant id / lock data of `node` as text (UTF-8, else hex).
pub fn node_data(node: &ParticipantNode) -> String {
    data_text(&node.data)
}

fn age_ms(node: &ParticipantNode, now_ms: i64) -> i64 {
    (now_ms - node.stat.ctime).max(0)
}

fn node_json(node: &ParticipantNode, position: usize, now_ms: i64) -> Value {
    json!({
        "position": position,
        "role": node.role.name(),
        "type": node.kind.map(NodeKind::name),
        "node": node.name,
        "session": session_hex(node.session()),
        "fencing_token": node.stat.czxid,
        "age_ms": age_ms(node, now_ms),
        "data": node_data(node),
    })
}

/// How a layout is named for people.
fn title(layout: Layout) -> &'static str {
    match layout {
        Layout::Mutex => "InterProcessMutex (LeaderSelector uses the same layout)",
        Layout::ReadWrite => "InterProcessReadWriteLock",
        Layout::Semaphore => "InterProcessSemaphoreV2",
        Layout::Latch => "LeaderLatch",
        Layout::Counter(_) => "DistributedAtomicLong",
        Layout::SharedCount(_) => "SharedCount (or DistributedAtomicInteger)",
        Layout::Empty => {
            "empty node (an idle lock, latch or semaphore path, or a counter never written)"
        }
        Layout::Unknown => "not a recipe layout zkr knows",
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
    let line = |nodes: &[ParticipantNode]| -> Vec<Value> {
        nodes
            .iter()
            .enumerate()
            .map(|(i, n)| node_json(n, i, now))
            .collect()
    };
    let mut v = json!({
        "path": r.path,
        "kind": r.layout.name(),
        "description": title(r.layout),
    });
    let obj = v.as_object_mut().expect("an object");
    match r.layout {
        Layout::Counter(n) => {
            obj.insert("value".into(), json!(n));
        }
        Layout::SharedCount(n) => {
            obj.insert("value".into(), json!(n));
        }
        Layout::Unknown | Layout::Empty => {
            obj.insert("data".into(), json!(data_text(&r.data)));
            obj.insert("children".into(), json!(r.others));
        }
        Layout::Semaphore => {
            obj.insert("leases".into(), json!(line(&r.nodes)));
            obj.insert("queue".into(), json!(line(&r.queue)));
        }
        Layout::Mutex | Layout::ReadWrite | Layout::Latch => {
            obj.insert("members".into(), json!(line(&r.nodes)));
            if !r.others.is_empty() {
                obj.insert("other_children".into(), json!(r.others));
            }
        }
    }
    v
}

fn table(
    out: &mut Printer,
    title: &str,
    nodes: &[ParticipantNode],
    now: i64,
) -> std::io::Result<()> {
    out.line(title)?;
    if nodes.is_empty() {
        return out.line("  (none)");
    }
    let rows: Vec<[String; 7]> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            [
                i.to_string(),
                format!(
                    "{}{}",
                    n.role.name(),
                    n.kind
                        .filter(|k| matches!(k, NodeKind::Read | NodeKind::Write))
                        .map(|k| format!(" ({})", k.name()))
                        .unwrap_or_default()
                ),
                session_hex(n.session()),
                n.stat.czxid.to_string(),
                age_text(age_ms(n, now)),
                node_data(n),
                n.name.clone(),
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
    out.line(&format!("{}: {}", r.path, title(r.layout)))?;
    match r.layout {
        Layout::Counter(n) => out.line(&format!("value: {n}")),
        Layout::SharedCount(n) => out.line(&format!("value: {n}")),
        Layout::Empty => Ok(()),
        Layout::Unknown => {
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
        Layout::Semaphore => {
            table(out, "leases (held):", &r.nodes, now)?;
            table(out, "queue (the first takes a lease next):", &r.queue, now)
        }
        Layout::Latch => table(out, "participants (the first leads):", &r.nodes, now),
        Layout::Mutex | Layout::ReadWrite => {
            table(out, "holders and waiters, in queue order:", &r.nodes, now)?;
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
    fn data_and_ages_read_well() {
        assert_eq!(data_text(b"host-a"), "host-a");
        assert_eq!(data_text(&[0, 1, 0xff]), "0x0001ff");
        assert_eq!(age_text(850), "850ms");
        assert_eq!(age_text(12_340), "12.3s");
        assert_eq!(age_text(245_000), "4m05s");
    }
}
