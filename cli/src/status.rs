//! While `lock` or `elect` waits on a terminal, one status line on stderr says what it waits
//! for: its place in the line and who holds or leads, updated when the line changes (a children
//! watch) and every second (the holder's age). Nothing is printed when stderr is not a terminal.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use zkrecipes::{path, Client};

use crate::connect::session_hex;
use zkrecipes::participants::{self, Layout, ParticipantNode};

use crate::inspect::{self, age_text, now_ms};

/// What is waited for, for the words of the line.
#[derive(Clone, Copy, Debug)]
pub enum Waiting {
    Lock,
    Lease,
    Leadership,
}

/// Follows the line at `path` and shows where we stand in it; never returns (drop it to stop:
/// the line is then cleared).
pub async fn follow(client: Client, path: String, waiting: Waiting) {
    if !std::io::stderr().is_terminal() {
        return std::future::pending().await;
    }
    let mut line = Line { shown: false };
    let watched = match waiting {
        Waiting::Lease => path::join(&path, "leases"),
        _ => path.clone(),
    };
    loop {
        let watch = client
            .get_children_watch(&watched)
            .await
            .ok()
            .map(|(_, w)| w);
        if let Ok(report) = participants::participants(&client, &path).await {
            line.show(&describe(&report, client.session_id(), waiting));
        }
        let changed = async move {
            match watch {
                Some(w) => drop(w.changed().await),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = changed => {},
            _ = tokio::time::sleep(Duration::from_secs(1)) => {},
        }
    }
}

fn describe(r: &inspect::Report, session: i64, waiting: Waiting) -> String {
    let now = now_ms();
    let what = match waiting {
        Waiting::Lock => "lock",
        Waiting::Lease => "a lease of",
        Waiting::Leadership => "leadership of",
    };
    let total = r.nodes.len() + r.queue.len();
    let place = match r.position_of(session) {
        Some(p) => format!("{} of {total} in line", p + 1),
        None => format!("joining a line of {total}"),
    };
    let first = r.nodes.first().filter(|m| m.session() != session);
    let who = match (first, r.layout) {
        (None, _) => String::new(),
        (Some(m), Layout::Semaphore) => format!(
            ", {} leases held, the oldest by {} for {}",
            r.nodes.len(),
            name(m),
            age_text(now - m.stat.ctime)
        ),
        (Some(m), _) => format!(
            ", {} {} for {} (session {})",
            if matches!(r.layout, Layout::Latch) || matches!(waiting, Waiting::Leadership) {
                "led by"
            } else {
                "held by"
            },
            name(m),
            age_text(now - m.stat.ctime),
            session_hex(m.session())
        ),
    };
    format!("zkr: waiting for {what} {}: {place}{who}", r.path)
}

fn name(m: &ParticipantNode) -> String {
    match inspect::node_data(m) {
        s if s.is_empty() => "?".into(),
        s => s,
    }
}

/// The status line on stderr.
struct Line {
    shown: bool,
}

impl Line {
    fn show(&mut self, text: &str) {
        // One terminal row: a wrapped line could not be rewritten in place.
        let text: String = text.chars().take(79).collect();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{text}");
        let _ = err.flush();
        self.shown = true;
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
