//! Issue 16, acceptance 4: caches under load while the ensemble's leader is killed.
//!
//! Writers on three clients do random creates, sets and deletes (two levels) for the run while
//! the leader of a 3-server ensemble is killed and restarted. Three caches, each on its own
//! client, watch the tree; each listener rebuilds a map from the cache's events. At the end
//! every cache must equal the server's tree, and so must every rebuilt map (no missed event);
//! an event that does not fit the map (a Created for a node already there, a Changed or
//! Deleted for one that is not) is a phantom and fails the run.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::cache::{CacheEvent, CacheEventType, CuratorCache};
use zkrecipes::client::{CreateOptions, DeleteOptions};
use zkrecipes::Client;
use zkrecipes_testing::TestingCluster;

mod common;
use common::{client_to, kill_leaders, WAIT};

const ROOT: &str = "/fc";

/// (data, czxid, version) by path.
type Tree = BTreeMap<String, (Vec<u8>, i64, i32)>;

fn server_tree(c: &Client) -> Tree {
    let mut out = Tree::new();
    let mut todo = vec![ROOT.to_string()];
    while let Some(p) = todo.pop() {
        let Ok((data, stat)) = c.get_data_blocking(&p) else {
            continue;
        };
        out.insert(p.clone(), (data, stat.czxid, stat.version));
        if let Ok(kids) = c.get_children_blocking(&p) {
            todo.extend(kids.iter().map(|k| zkrecipes::path::join(&p, k)));
        }
    }
    out
}

/// The map a listener rebuilds from the events, and the phantoms it saw.
#[derive(Default)]
struct Rebuilt {
    tree: Tree,
    phantoms: Vec<String>,
    events: u64,
    resync_events: u64,
    resyncs: u64,
}

impl Rebuilt {
    fn apply(&mut self, e: &CacheEvent) {
        let node = |c: &Option<zkrecipes::cache::ChildData>| {
            let c = c.as_ref().expect("a node in the event");
            let d = c.data.as_deref().unwrap_or_default().to_vec();
            (d, c.stat.czxid, c.stat.version)
        };
        self.events += 1;
        self.resync_events += u64::from(e.resync);
        match e.kind {
            CacheEventType::Created => {
                if self.tree.insert(e.path.clone(), node(&e.new)).is_some() {
                    self.phantoms
                        .push(format!("Created for a node already there: {e:?}"));
                }
            }
            CacheEventType::Changed => {
                if self.tree.insert(e.path.clone(), node(&e.new)).is_none() {
                    self.phantoms
                        .push(format!("Changed for a node not there: {e:?}"));
                }
            }
            CacheEventType::Deleted => {
                if self.tree.remove(&e.path).is_none() {
                    self.phantoms
                        .push(format!("Deleted for a node not there: {e:?}"));
                }
            }
            CacheEventType::Resynced => self.resyncs += 1,
            CacheEventType::Initialized => {}
        }
    }
}

fn cache_tree(cache: &CuratorCache) -> Tree {
    cache
        .snapshot()
        .iter()
        .map(|n| {
            let d = n.data.as_deref().unwrap_or_default().to_vec();
            (n.path, (d, n.stat.czxid, n.stat.version))
        })
        .collect()
}

/// Lists the paths where two trees differ (at most 10).
fn diff(a: &Tree, b: &Tree) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in a {
        match b.get(k) {
            None => out.push(format!("{k} only in the first")),
            Some(w) if w != v => out.push(format!("{k}: {v:?} vs {w:?}")),
            _ => {}
        }
    }
    out.extend(
        b.keys()
            .filter(|k| !a.contains_key(*k))
            .map(|k| format!("{k} only in the second")),
    );
    out.truncate(10);
    out
}

#[test]
fn caches_equal_the_server_under_leader_kills() {
    let start = Instant::now();
    let cluster = TestingCluster::start(3);
    let connect = cluster.connect_string();
    let admin = client_to(&connect);
    admin
        .create_blocking(ROOT, b"", CreateOptions::default())
        .unwrap();

    // Three caches, each on its own client, each with a map rebuilt from its events.
    let mut caches = Vec::new();
    for _ in 0..3 {
        let c = client_to(&connect);
        let cache = CuratorCache::new(&c, ROOT).unwrap();
        let rebuilt = Arc::new(Mutex::new(Rebuilt::default()));
        let r = rebuilt.clone();
        cache.listen(move |e| r.lock().unwrap().apply(e));
        cache.start_blocking().unwrap();
        assert!(cache.await_initialized_blocking(Some(WAIT)).unwrap());
        caches.push((c, cache, rebuilt));
    }

    // Writers: random creates, sets and deletes on two levels, errors tolerated (a connection
    // loss or an unknown outcome during a kill is what the run is about).
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..3u64)
        .map(|w| {
            let (stop, ops, connect) = (stop.clone(), ops.clone(), connect.clone());
            thread::spawn(move || {
                let c = client_to(&connect);
                let mut rng = fastrand_like(w + 1);
                while !stop.load(Ordering::SeqCst) {
                    let top = format!("{ROOT}/n{}", rng.next() % 16);
                    let p = if rng.next() % 2 == 0 {
                        top
                    } else {
                        format!("{top}/c{}", rng.next() % 4)
                    };
                    let data = format!("{w}-{}", rng.next() % 1000);
                    let r = match rng.next() % 3 {
                        0 => c
                            .create_blocking(&p, data.as_bytes(), CreateOptions::default())
                            .map(|_| ()),
                        1 => c.set_data_blocking(&p, data.as_bytes(), None).map(|_| ()),
                        _ => c.delete_blocking(&p, DeleteOptions::default()),
                    };
                    let _ = r;
                    ops.fetch_add(1, Ordering::Relaxed);
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

    // Settle: one last write; every cache shows it (and so everything before it).
    let last = admin.set_data_blocking(ROOT, b"end", None).unwrap();
    let server = server_tree(&admin);
    let mut summary = Vec::new();
    for (i, (c, cache, rebuilt)) in caches.iter().enumerate() {
        assert!(
            cache.await_zxid_blocking(last.mzxid, Some(WAIT)).unwrap(),
            "cache {i} never caught up"
        );
        assert_eq!(
            cache_tree(cache),
            server,
            "cache {i} differs from the server: {:?}",
            diff(&cache_tree(cache), &server)
        );
        // The listener runs after the change is applied: wait (bounded) for it to catch up.
        let deadline = Instant::now() + WAIT;
        loop {
            let r = rebuilt.lock().unwrap();
            if r.tree == server || Instant::now() > deadline {
                assert!(
                    r.phantoms.is_empty(),
                    "cache {i}: phantom events {:?}",
                    r.phantoms
                );
                assert_eq!(
                    r.tree,
                    server,
                    "cache {i}: the map rebuilt from its events misses changes: {:?}",
                    diff(&r.tree, &server)
                );
                summary.push(format!(
                    "{} events ({} resync, {} resyncs)",
                    r.events, r.resync_events, r.resyncs
                ));
                break;
            }
            drop(r);
            thread::sleep(Duration::from_millis(20));
        }
        cache.close();
        c.close_blocking();
    }
    eprintln!(
        "FAULTS | 12 caches under {kills} leader kills | Rust (3 writers, 3 caches) | {} writes; {} nodes at the end; caches: {}; 0 missed, 0 phantom | violations 0 | {:.1} s",
        ops.load(Ordering::Relaxed),
        server.len(),
        summary.join("; "),
        start.elapsed().as_secs_f64()
    );
    admin.close_blocking();
}

/// A tiny xorshift (the faults crate has no random dependency).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

fn fastrand_like(seed: u64) -> XorShift {
    XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
}
