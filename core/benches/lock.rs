//! Lock benchmark (issue 3): `cargo bench -p zkrecipes --bench lock`.
//!
//! On one local ZooKeeper started by the harness, in one run:
//! 1. the raw-protocol floor on one session — create (protected ephemeral-sequential, the same
//!    node name as a lock node) + getChildren + delete, sent one after another (Curator's
//!    order) and with create and getChildren pipelined;
//! 2. our uncontended `acquire` + `release` (p50, p99);
//! 3. the same three through the harness's fault proxy with added latency, where pipelining
//!    shows;
//! 4. handoffs per second among 8 contending clients.
//!
//! `ZKR_BENCH_ITERS` (default 2000), `ZKR_BENCH_DELAY_MS` (one-way delay, default 2),
//! `ZKR_BENCH_SECS` (contention time, default 5) tune it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zkrecipes::lock::InterProcessMutex;
use zkrecipes::{ClientBuilder, Owner};
use zkrecipes_testing::{FaultProxy, TestingServer};
use zookeeper_client as zk;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Stats {
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    let n = v.len();
    let mean = v.iter().sum::<Duration>() / n as u32;
    Stats {
        p50: v[n / 2],
        p99: v[(n * 99 / 100).min(n - 1)],
        mean,
    }
}

fn line(name: &str, s: &Stats, floor: Option<&Stats>) {
    let ratio = floor.map(|f| {
        format!(
            "  ({:.2}x p50 of the floor)",
            s.p50.as_secs_f64() / f.p50.as_secs_f64()
        )
    });
    println!(
        "  {name:<44} p50 {:>8.1} us  p99 {:>8.1} us  mean {:>8.1} us{}",
        s.p50.as_secs_f64() * 1e6,
        s.p99.as_secs_f64() * 1e6,
        s.mean.as_secs_f64() * 1e6,
        ratio.unwrap_or_default()
    );
}

async fn raw_client(connect: &str) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(Duration::from_secs(30))
        .connect(connect)
        .await
        .expect("raw connect")
}

fn acl() -> zk::CreateOptions<'static> {
    zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all())
}

/// create, then getChildren, then delete: three round trips.
async fn raw_sequential(zk: &zk::Client, base: &str, iters: u64) -> Vec<Duration> {
    let opts = acl();
    let mut out = Vec::with_capacity(iters as usize);
    for _ in 0..iters {
        let prefix = format!("{base}/_c_{}-lock-", uuid::Uuid::new_v4());
        let t = Instant::now();
        let (_, seq) = zk.create(&prefix, &[], &opts).await.unwrap();
        let children = zk.list_children(base).await.unwrap();
        assert!(!children.is_empty());
        zk.delete(&format!("{prefix}{seq}"), None).await.unwrap();
        out.push(t.elapsed());
    }
    out
}

/// create and getChildren pipelined, then delete: two round trips.
async fn raw_pipelined(zk: &zk::Client, base: &str, iters: u64) -> Vec<Duration> {
    let opts = acl();
    let mut out = Vec::with_capacity(iters as usize);
    for _ in 0..iters {
        let prefix = format!("{base}/_c_{}-lock-", uuid::Uuid::new_v4());
        let t = Instant::now();
        let create = zk.create(&prefix, &[], &opts);
        let list = zk.list_children(base);
        let ((_, seq), children) = tokio::try_join!(create, list).unwrap();
        assert!(!children.is_empty());
        zk.delete(&format!("{prefix}{seq}"), None).await.unwrap();
        out.push(t.elapsed());
    }
    out
}

async fn ours(m: &InterProcessMutex, iters: u64) -> Vec<Duration> {
    let owner = Owner::new();
    let mut out = Vec::with_capacity(iters as usize);
    for _ in 0..iters {
        let t = Instant::now();
        assert!(m.acquire(owner, None).await.unwrap());
        m.release(owner).await.unwrap();
        out.push(t.elapsed());
    }
    out
}

async fn compare(title: &str, connect: &str, iters: u64) {
    println!("{title} ({iters} iterations each)");
    let zk = raw_client(connect).await;
    let base = format!("/bench-{}", uuid::Uuid::new_v4());
    zk.create(
        &base,
        &[],
        &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .unwrap();
    let client = ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    let m = InterProcessMutex::new(&client, &format!("{base}/ours")).unwrap();
    // Warm up every path (connections, JIT on the server, parents).
    let warm = (iters / 10).max(5);
    raw_sequential(&zk, &base, warm).await;
    raw_pipelined(&zk, &base, warm).await;
    ours(&m, warm).await;
    // Interleave rounds so drift on the machine hits all three alike.
    let (mut seq, mut pipe, mut our) = (Vec::new(), Vec::new(), Vec::new());
    let round = (iters / 10).max(1);
    for _ in 0..10 {
        seq.extend(raw_sequential(&zk, &base, round).await);
        pipe.extend(raw_pipelined(&zk, &base, round).await);
        our.extend(ours(&m, round).await);
    }
    let (seq, pipe, our) = (stats(seq), stats(pipe), stats(our));
    line(
        "raw floor, sequential (create; getChildren; delete)",
        &seq,
        None,
    );
    line(
        "raw floor, pipelined (create+getChildren; delete)",
        &pipe,
        None,
    );
    line(
        "InterProcessMutex acquire+release vs sequential",
        &our,
        Some(&seq),
    );
    line(
        "InterProcessMutex acquire+release vs pipelined",
        &our,
        Some(&pipe),
    );
    client.close().await;
}

async fn contention(connect: &str, clients: usize, secs: u64) {
    let mut cs = Vec::new();
    for _ in 0..clients {
        cs.push(
            ClientBuilder::new(connect)
                .session_timeout(Duration::from_secs(30))
                .connect()
                .await
                .unwrap(),
        );
    }
    let path = format!("/bench-contended-{}", uuid::Uuid::new_v4());
    let stop = Arc::new(AtomicBool::new(false));
    let handoffs = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for c in &cs {
        let m = InterProcessMutex::new(c, &path).unwrap();
        let (stop, handoffs) = (stop.clone(), handoffs.clone());
        tasks.push(tokio::spawn(async move {
            let me = Owner::new();
            while !stop.load(Ordering::Relaxed) {
                assert!(m.acquire(me, None).await.unwrap());
                handoffs.fetch_add(1, Ordering::Relaxed);
                m.release(me).await.unwrap();
            }
        }));
    }
    let t = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let n = handoffs.load(Ordering::Relaxed);
    let elapsed = t.elapsed();
    for t in tasks {
        t.await.unwrap();
    }
    println!(
        "{clients} contending clients on one mutex: {n} handoffs in {:.1} s = {:.0} handoffs/s",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64()
    );
    for c in cs {
        c.close().await;
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` would pass nothing: run only for bench.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let iters = env("ZKR_BENCH_ITERS", 2000);
    let delay = Duration::from_millis(env("ZKR_BENCH_DELAY_MS", 2));
    let secs = env("ZKR_BENCH_SECS", 5);
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    proxy.delay(delay);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        compare("local ZooKeeper, loopback", &server.connect_string(), iters).await;
        let delayed_iters = (iters / 10).max(50);
        compare(
            &format!(
                "through the fault proxy, +{} ms each way",
                delay.as_millis()
            ),
            &proxy.connect_string(),
            delayed_iters,
        )
        .await;
        contention(&server.connect_string(), 8, secs).await;
    });
    drop(proxy);
    drop(server);
}
