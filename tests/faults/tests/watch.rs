//! Persistent watchers (Curator's PersistentWatcher) while the ensemble's leader is killed.
//!
//! Writers on three clients create unique nodes under a root and set each one's data once,
//! while the leader of a 3-server ensemble is killed and restarted. Three recursive watchers,
//! each on its own client, record what they hear. At the end the server's tree says what
//! happened (a node with version v was created once and set v times), and for every watcher:
//! - nothing heard that did not happen (no phantom) and nothing heard twice;
//! - changes it missed are allowed only if it was told it might miss some (DISCONNECTED or
//!   SESSION_LOST: ZooKeeper does not replay changes to a persistent watch after a reconnect,
//!   ZOOKEEPER-4698) — a silent miss fails the run;
//! - the watch survived: markers written after the faults are all heard.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::client::{CreateOptions, PersistentWatcher, WatchEvent};
use zkrecipes::Client;
use zkrecipes_testing::TestingCluster;

mod common;
use common::{client_to, kill_leaders, WAIT};

const ROOT: &str = "/fw";
const MARKERS: usize = 20;

/// What a watcher heard: node events by (type, path) with their count, and connection events.
#[derive(Default)]
struct Heard {
    nodes: BTreeMap<(String, String), u32>,
    disconnects: u32,
    session_losses: u32,
    reconnects: u32,
    /// WATCH_REMOVED: nobody removes these watches, so any is a violation.
    removed: u32,
}

impl Heard {
    fn hear(&mut self, e: &WatchEvent) {
        match e {
            WatchEvent::Disconnected => self.disconnects += 1,
            WatchEvent::SessionLost => self.session_losses += 1,
            WatchEvent::Reconnected => self.reconnects += 1,
            WatchEvent::Removed => self.removed += 1,
            WatchEvent::Node(_) => {
                let path = e.path().unwrap_or_default().to_string();
                if path != ROOT {
                    *self.nodes.entry((e.name().to_string(), path)).or_default() += 1;
                }
            }
        }
    }
}

/// What happened, from the server: (type, path) → how many times.
fn expected(c: &Client) -> BTreeMap<(String, String), u32> {
    let mut out = BTreeMap::new();
    for kid in c.get_children_blocking(ROOT).expect("list the root") {
        let p = zkrecipes::path::join(ROOT, &kid);
        let (_, stat) = c.get_data_blocking(&p).expect("read a node");
        out.insert(("CREATED".to_string(), p.clone()), 1);
        if stat.version > 0 {
            out.insert(("DATA_CHANGED".to_string(), p), stat.version as u32);
        }
    }
    out
}

#[test]
fn persistent_watchers_hear_everything_or_say_so_under_leader_kills() {
    let start = Instant::now();
    let cluster = TestingCluster::start(3);
    let connect = cluster.connect_string();
    let admin = client_to(&connect);
    admin
        .create_blocking(ROOT, b"", CreateOptions::default())
        .unwrap();

    let mut watchers = Vec::new();
    for _ in 0..3 {
        let c = client_to(&connect);
        let w = PersistentWatcher::new(&c, ROOT, true).unwrap();
        let heard = Arc::new(Mutex::new(Heard::default()));
        let h = heard.clone();
        w.listen(move |e| h.lock().unwrap().hear(e));
        w.start_blocking().unwrap();
        watchers.push((c, w, heard));
    }

    // Writers: unique nodes, each created then set once; errors tolerated (a connection loss
    // or an unknown outcome during a kill is what the run is about: the server decides).
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..3u64)
        .map(|w| {
            let (stop, ops, connect) = (stop.clone(), ops.clone(), connect.clone());
            thread::spawn(move || {
                let c = client_to(&connect);
                let mut i = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let p = format!("{ROOT}/w{w}-{i}");
                    i += 1;
                    if c.create_blocking(&p, b"", CreateOptions::default()).is_ok() {
                        let _ = c.set_data_blocking(&p, format!("{w}").as_bytes(), None);
                    }
                    ops.fetch_add(2, Ordering::Relaxed);
                }
                c.close_blocking();
            })
        })
        .collect();

    let kills = kill_leaders(&cluster);
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().unwrap();
    }

    // Markers after the faults: every watcher must hear them all (its watch survived).
    for k in 0..MARKERS {
        admin
            .create_blocking(&format!("{ROOT}/marker-{k}"), b"", CreateOptions::default())
            .unwrap();
    }
    let want = expected(&admin);
    let mut summary = Vec::new();
    for (i, (c, w, heard)) in watchers.iter().enumerate() {
        let deadline = Instant::now() + WAIT;
        loop {
            let h = heard.lock().unwrap();
            let markers = (0..MARKERS)
                .filter(|k| {
                    h.nodes
                        .contains_key(&("CREATED".to_string(), format!("{ROOT}/marker-{k}")))
                })
                .count();
            if markers == MARKERS || Instant::now() > deadline {
                assert_eq!(
                    markers, MARKERS,
                    "watcher {i} heard {markers} of the {MARKERS} markers written after the faults"
                );
                break;
            }
            drop(h);
            thread::sleep(Duration::from_millis(20));
        }
        let h = heard.lock().unwrap();
        let phantoms: Vec<_> = h
            .nodes
            .iter()
            .filter(|(k, n)| want.get(*k).is_none_or(|w| *n > w))
            .take(10)
            .collect();
        assert!(
            phantoms.is_empty(),
            "watcher {i} heard what did not happen (or twice): {phantoms:?}"
        );
        let missed: u32 = want
            .iter()
            .map(|(k, n)| n - h.nodes.get(k).copied().unwrap_or(0))
            .sum();
        assert_eq!(
            h.removed, 0,
            "watcher {i} heard WATCH_REMOVED, but nothing removed its watch"
        );
        let told = h.disconnects + h.session_losses;
        assert!(
            missed == 0 || told > 0,
            "watcher {i} missed {missed} events without a DISCONNECTED or SESSION_LOST"
        );
        summary.push(format!(
            "{} heard, {missed} missed after {} disconnects/{} session losses, {} reconnects",
            h.nodes.values().sum::<u32>(),
            h.disconnects,
            h.session_losses,
            h.reconnects
        ));
        drop(h);
        w.close();
        c.close_blocking();
    }
    eprintln!(
        "FAULTS | 13 persistent watchers under {kills} leader kills | Rust (3 writers, 3 recursive watchers) | {} writes; {} events happened; watchers: {}; 0 phantom, 0 duplicate, 0 silent miss, all {MARKERS} markers heard | violations 0 | {:.1} s",
        ops.load(Ordering::Relaxed),
        want.values().sum::<u32>(),
        summary.join("; "),
        start.elapsed().as_secs_f64()
    );
    admin.close_blocking();
}
