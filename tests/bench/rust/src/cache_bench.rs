//! The zkrecipes side of the cache benchmark (`tests/bench/cache_run`, issue 16): a CuratorCache
//! on a 10,101-node tree.
//!
//! `cache-bench --mode populate|load|floor|latency|resync --connect HOST:PORT --path P [--nodes N]
//!  [--iterations M]` prints one JSON line on stdout (`resync` prints `LOADED` first and waits
//! for the runner to restart the server). Every wait has a 60 s limit.
//!
//! `floor` (issue 34, part 3) is the load's protocol floor: the same reads a cache's first walk
//! sends (getData of every node, getChildren of every node whose stat has children), with the
//! same 1,024 in flight, on the bare vendored `zookeeper-client` on the library's runtime, and
//! nothing else (no snapshot, no events, no bookkeeping).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use zkrecipes::cache::{CacheEventType, CuratorCache};
use zkrecipes::client::{ConnectionState, CreateMode, CreateOptions};
use zkrecipes::{Client, ClientBuilder};

const WAIT: Duration = Duration::from_secs(60);

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p / 100.0).round() as usize]
}

fn connect(s: &str) -> Client {
    ClientBuilder::new(s)
        .session_timeout(Duration::from_secs(30))
        .connect_blocking()
        .expect("connect")
}

fn fail(msg: &str) -> ! {
    eprintln!("cache-bench: {msg}");
    std::process::exit(1)
}

/// The reads of a cache's first walk, pipelined 1,024 at a time on a bare `zookeeper-client`
/// session: (nodes read, reads sent, milliseconds).
fn floor_load(conn: &str, root: &str) -> (u64, u64, f64) {
    use zookeeper_client as zk;
    const IN_FLIGHT: usize = 1024;
    enum Read {
        Data(String, Result<(Vec<u8>, zk::Stat), zk::Error>),
        Children(String, Result<Vec<String>, zk::Error>),
    }
    let (conn, root) = (conn.to_string(), root.to_string());
    let task = zkrecipes::runtime::spawn(async move {
        let zk = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .connect(&conn)
            .await
            .unwrap_or_else(|e| fail(&format!("raw connect: {e}")));
        let t = Instant::now();
        let mut want = std::collections::VecDeque::from([(root, false)]);
        let mut set = tokio::task::JoinSet::new();
        let (mut nodes, mut reads) = (0u64, 0u64);
        loop {
            while set.len() < IN_FLIGHT {
                let Some((path, children)) = want.pop_front() else {
                    break;
                };
                reads += 1;
                let zk = zk.clone();
                set.spawn(async move {
                    if children {
                        let r = zk.list_children(&path).await;
                        Read::Children(path, r)
                    } else {
                        let r = zk.get_data(&path).await;
                        Read::Data(path, r)
                    }
                });
            }
            let Some(done) = set.join_next().await else {
                break;
            };
            match done.unwrap_or_else(|e| fail(&format!("read task: {e}"))) {
                Read::Data(path, Ok((_, stat))) => {
                    nodes += 1;
                    if stat.num_children > 0 {
                        want.push_back((path, true));
                    }
                }
                Read::Children(path, Ok(kids)) => {
                    want.extend(kids.into_iter().map(|k| (format!("{path}/{k}"), false)));
                }
                Read::Data(path, Err(e)) | Read::Children(path, Err(e)) => {
                    fail(&format!("read {path}: {e}"))
                }
            }
        }
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        (nodes, reads, ms)
    });
    zkrecipes::runtime::block_on(task).unwrap_or_else(|e| fail(&format!("floor task: {e}")))
}

fn main() {
    let mut a = std::collections::HashMap::new();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for kv in argv.chunks(2) {
        let [k, v] = kv else {
            fail("options come in pairs")
        };
        a.insert(k.trim_start_matches("--").to_string(), v.clone());
    }
    let get = |k: &str| {
        a.get(k)
            .cloned()
            .unwrap_or_else(|| fail(&format!("--{k} is required")))
    };
    let (mode, conn, root) = (get("mode"), get("connect"), get("path"));
    let nodes: usize = a
        .get("nodes")
        .map_or(10_000, |v| v.parse().expect("--nodes"));
    let iterations: usize = a
        .get("iterations")
        .map_or(500, |v| v.parse().expect("--iterations"));
    let client = connect(&conn);
    let start = Instant::now();
    let out = match mode.as_str() {
        "populate" => {
            // 100 children of the root, each with nodes/100 children: 32-byte payloads.
            client
                .create_blocking(&root, b"", CreateOptions::default().parents())
                .expect("root");
            let per = nodes / 100;
            let data = [b'x'; 32];
            for c in 0..100 {
                let mut tx = client.transaction().create(
                    &format!("{root}/c{c:02}"),
                    &data,
                    CreateMode::Persistent,
                );
                for g in 0..per {
                    tx = tx.create(
                        &format!("{root}/c{c:02}/g{g:03}"),
                        &data,
                        CreateMode::Persistent,
                    );
                }
                tx.commit_blocking().expect("populate");
            }
            format!(r#"{{"mode":"populate","nodes":{}}}"#, 1 + 100 + per * 100)
        }
        "floor" => {
            let (n, reads, ms) = floor_load(&conn, &root);
            format!(
                r#"{{"mode":"floor","impl":"floor (zookeeper-client)","nodes":{n},"load_ms":{ms:.1},"client_reads":{reads}}}"#
            )
        }
        "load" => {
            let before = rss_kb();
            let reqs = client.request_counts();
            let t = Instant::now();
            let cache = CuratorCache::new(&client, &root).expect("cache");
            cache.start_blocking().expect("start");
            if !cache.await_initialized_blocking(Some(WAIT)).expect("load") {
                fail("not loaded in 60 s");
            }
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            let after = rss_kb();
            let r = client.request_counts();
            let sent = (r.get_data - reqs.get_data) + (r.get_children - reqs.get_children);
            format!(
                r#"{{"mode":"load","impl":"zkrecipes (rust)","nodes":{},"load_ms":{ms:.1},"rss_delta_kb":{},"bytes_per_node":{},"client_reads":{sent}}}"#,
                cache.size(),
                after.saturating_sub(before),
                after.saturating_sub(before) * 1024 / cache.size().max(1) as u64
            )
        }
        "latency" => {
            let cache = CuratorCache::new(&client, &root).expect("cache");
            let (tx, rx) = mpsc::channel::<u64>();
            let t0 = Instant::now();
            cache.listen(move |e| {
                if e.kind == CacheEventType::Changed {
                    if let Some(d) = e.new.as_ref().and_then(|n| n.data.clone()) {
                        if let Ok(sent) = std::str::from_utf8(&d).unwrap_or("").parse::<u64>() {
                            let now = t0.elapsed().as_nanos() as u64;
                            let _ = tx.send(now.saturating_sub(sent) / 1000);
                        }
                    }
                }
            });
            cache.start_blocking().expect("start");
            cache.await_initialized_blocking(Some(WAIT)).expect("load");
            let writer = connect(&conn);
            let mut lat = Vec::with_capacity(iterations);
            for i in 0..iterations + 50 {
                let p = format!("{root}/c{:02}", i % 100);
                let now = t0.elapsed().as_nanos() as u64;
                writer
                    .set_data_blocking(&p, now.to_string().as_bytes(), None)
                    .expect("write");
                let us = rx.recv_timeout(WAIT).unwrap_or_else(|_| fail("no event"));
                if i >= 50 {
                    lat.push(us);
                }
            }
            lat.sort_unstable();
            writer.close_blocking();
            format!(
                r#"{{"mode":"latency","impl":"zkrecipes (rust)","n":{},"p50_us":{},"p99_us":{}}}"#,
                lat.len(),
                pct(&lat, 50.0),
                pct(&lat, 99.0)
            )
        }
        "resync" => {
            let cache = CuratorCache::new(&client, &root).expect("cache");
            cache.start_blocking().expect("start");
            cache.await_initialized_blocking(Some(WAIT)).expect("load");
            let reconnected = Arc::new(AtomicU64::new(0));
            let t0 = Instant::now();
            let r = reconnected.clone();
            client.add_state_listener(move |s| {
                if s == ConnectionState::Reconnected {
                    r.store(t0.elapsed().as_nanos() as u64, Ordering::SeqCst);
                }
            });
            let reqs = client.request_counts();
            println!("LOADED");
            std::io::stdout().flush().unwrap();
            let deadline = Instant::now() + Duration::from_secs(120);
            while cache.resyncs() == 0 {
                if Instant::now() > deadline {
                    fail("no resync within 120 s");
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let done = t0.elapsed().as_nanos() as u64;
            let back = reconnected.load(Ordering::SeqCst);
            let r2 = client.request_counts();
            format!(
                r#"{{"mode":"resync","impl":"zkrecipes (rust)","nodes":{},"resync_ms":{:.1},"client_reads":{}}}"#,
                cache.size(),
                done.saturating_sub(back) as f64 / 1e6,
                (r2.get_data - reqs.get_data) + (r2.get_children - reqs.get_children)
            )
        }
        other => fail(&format!("unknown mode {other}")),
    };
    eprintln!(
        "cache-bench: {mode} in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    client.close_blocking();
    println!("{out}");
}
