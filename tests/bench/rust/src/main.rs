//! `bench-driver`: the Rust driver of the benchmark runner `tests/bench/run` (issue 10).
//!
//! ```text
//! bench-driver --impl rust|floor --scenario SCENARIO --connect HOST:PORT --path /bench/X
//!              [--iterations N] [--warmup W] [--clients C] [--threads T] [--seconds S] [--locks L]
//!              [--min-seconds S] [--cohort K] [--max-hold-ms M] [--remote 0|1] [--instances N]
//!              [--tls-ca F [--tls-cert F --tls-key F]]
//! ```
//!
//! `--tls-ca` connects `--impl rust` over TLS (the server's secure port in `--connect`), with
//! a client certificate if `--tls-cert`/`--tls-key` are given (mutual TLS). Scenario
//! `handshake` (rust only): W + N connections made one after the other, each timed from the
//! start of `connect()` to its return (TCP, the TLS handshake if any, the session's
//! ConnectRequest/Response and the first ping, which zkrecipes waits for before it calls a
//! session established), then closed; reports `handshake_p50_us`/`handshake_p99_us` (also as
//! the `p50_us`/`p99_us` keys) and `cpu_us_per_op` per connection.
//!
//! Scenario `discovery` (rust only; issue 31): `--instances N` instances of one service registered
//! (untimed); then W + K times a new `ServiceCache` on another client, timed from `new` + `start`
//! until `await_initialized` returns (all N loaded), and W + K registrations of a new instance on
//! one started cache, each timed from `register()` until the cache's listener hears its ADDED
//! (then unregistered, untimed). Reports `load_p50_us`/`load_p99_us` (also as `p50_us`/`p99_us`)
//! and `event_p50_us`/`event_p99_us`.
//!
//! Scenario `wakeups` (rust only; issue 34): `--clients C` sessions queue on one lock once each
//! (session 0 holds it until all C nodes exist); the window is the C − 1 handoffs that follow,
//! each waiter woken once, releasing at once and not queueing again. Reports `n` (wake-ups),
//! `ops_per_s`, `cpu_us_per_op` and the server's traffic over the window (`win_packets`,
//! `win_bytes_in`, `win_bytes_out`).
//!
//! Counter scenarios repeat each worker's N increments until the timed phase has lasted
//! `--min-seconds` (default 2) and report rates over the whole phase. `--impl floor` also has
//! `counter_chain` (one session, one versioned setData per increment, each conditional on the
//! version the previous one produced: the serialized chain of conditional writes that bounds
//! `counter_clients`) and `counter_blind` (C sessions doing unconditional setData on one node:
//! the server's write rate with C writers, for reference).
//!
//! `--impl rust` drives zkrecipes' async API on the library's own runtime (every scenario runs
//! as a task on it); counter_threads uses OS threads on the blocking face, as an application
//! with threads would, and so does `uncontended_blocking` (by hand only: `uncontended` on the
//! blocking face from the driver's main thread, the structure the C face and Python's sync
//! calls are built on). counter_clients uses one OS thread per session on the blocking face
//! too; `counter_clients_async` (by hand only) is the same through the async API, one task per
//! session. `--impl floor` sends the bare ZooKeeper operations each recipe needs on
//! `zookeeper-client`. The protocol (scenarios, JSON keys) is in tests/bench/drivers/README.md.
//! Prints exactly one JSON line on stdout; exit 1 with a message on stderr on failure.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zkrecipes::atomic::DistributedAtomicLong;
use zkrecipes::leader::LeaderLatch;
use zkrecipes::lock::InterProcessMutex;
use zkrecipes::{Client, ClientBuilder, Owner, TlsOptions};
use zookeeper_client as zk;

type Res<T> = Result<T, String>;

#[derive(Clone, Debug)]
struct Args {
    imp: String,
    scenario: String,
    connect: String,
    path: String,
    iterations: Option<usize>,
    warmup: Option<usize>,
    clients: usize,
    threads: usize,
    seconds: f64,
    locks: usize,
    /// Counter scenarios: repeat the N-increment loop until the timed phase lasted this long.
    min_seconds: f64,
    /// inproc: cohort handoffs with this many local handoffs per node (0: the plain mutex).
    cohort: u32,
    /// inproc: the cohort's max_hold, milliseconds.
    max_hold_ms: u64,
    /// inproc: a contender on another session (1) or none (0).
    remote: usize,
    /// discovery: how many instances the service has.
    instances: usize,
    /// TLS: the CA (PEM file); None: plaintext.
    tls_ca: Option<String>,
    /// Mutual TLS: this client's certificate and key (PEM files).
    tls_cert: Option<String>,
    tls_key: Option<String>,
}

fn parse_args() -> Res<Args> {
    let mut a = Args {
        imp: String::new(),
        scenario: String::new(),
        connect: String::new(),
        path: String::new(),
        iterations: None,
        warmup: None,
        clients: 0,
        threads: 10,
        seconds: 10.0,
        locks: 1000,
        min_seconds: 2.0,
        cohort: 0,
        max_hold_ms: 20,
        remote: 0,
        instances: 1000,
        tls_ca: None,
        tls_cert: None,
        tls_key: None,
    };
    let mut clients = None;
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let mut it = raw.iter();
    while let Some(flag) = it.next() {
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .clone();
        let num =
            |v: &str| -> Res<usize> { v.parse().map_err(|_| format!("{flag}: bad number {v}")) };
        match flag.as_str() {
            "--impl" => a.imp = v,
            "--scenario" => a.scenario = v,
            "--connect" => a.connect = v,
            "--path" => a.path = v,
            "--iterations" => a.iterations = Some(num(&v)?),
            "--warmup" => a.warmup = Some(num(&v)?),
            "--clients" => clients = Some(num(&v)?),
            "--threads" => a.threads = num(&v)?,
            "--seconds" => a.seconds = v.parse().map_err(|_| format!("--seconds: bad {v}"))?,
            "--locks" => a.locks = num(&v)?,
            "--cohort" => a.cohort = num(&v)? as u32,
            "--max-hold-ms" => a.max_hold_ms = num(&v)? as u64,
            "--remote" => a.remote = num(&v)?,
            "--instances" => a.instances = num(&v)?,
            "--tls-ca" => a.tls_ca = Some(v),
            "--tls-cert" => a.tls_cert = Some(v),
            "--tls-key" => a.tls_key = Some(v),
            "--min-seconds" => {
                a.min_seconds = v.parse().map_err(|_| format!("--min-seconds: bad {v}"))?
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if a.imp.is_empty() || a.scenario.is_empty() || a.connect.is_empty() || a.path.is_empty() {
        return Err("--impl, --scenario, --connect and --path are required".into());
    }
    if !a.path.starts_with('/') || a.path.len() < 2 {
        return Err(format!("--path must be an absolute znode path: {}", a.path));
    }
    // contended: 8 clients; counter_clients: 10; failover: 3 members.
    a.clients = clients.unwrap_or(match a.scenario.as_str() {
        "contended" => 8,
        "failover" => 3,
        _ => 10,
    });
    Ok(a)
}

/// Latency summary in microseconds.
struct Stats {
    p50: f64,
    p99: f64,
    mean: f64,
}

fn stats(v: &[Duration]) -> Stats {
    let mut us: Vec<f64> = v.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if us.is_empty() {
        return Stats {
            p50: f64::NAN,
            p99: f64::NAN,
            mean: f64::NAN,
        };
    }
    let pick = |q: f64| us[(((us.len() - 1) as f64) * q).round() as usize];
    Stats {
        p50: pick(0.5),
        p99: pick(0.99),
        mean: us.iter().sum::<f64>() / us.len() as f64,
    }
}

/// Process CPU time (user + system).
fn cpu_time() -> Duration {
    // SAFETY: rusage is plain old data (integers and timevals): all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into `ru`, a valid, exclusively borrowed struct.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// The JSON object: keys in a stable order, numbers or strings.
#[derive(Default)]
struct Out(BTreeMap<&'static str, String>);

impl Out {
    fn num(&mut self, k: &'static str, v: f64) -> &mut Self {
        let s = if v.is_finite() {
            format!("{v:.3}")
        } else {
            "null".into()
        };
        self.0.insert(k, s);
        self
    }
    fn int(&mut self, k: &'static str, v: i64) -> &mut Self {
        self.0.insert(k, v.to_string());
        self
    }
    fn str(&mut self, k: &'static str, v: &str) -> &mut Self {
        let escaped: String = v
            .chars()
            .flat_map(|c| match c {
                '"' => vec!['\\', '"'],
                '\\' => vec!['\\', '\\'],
                c if (c as u32) < 0x20 => vec![' '],
                c => vec![c],
            })
            .collect();
        self.0.insert(k, format!("\"{escaped}\""));
        self
    }
    fn latency(&mut self, s: &Stats) -> &mut Self {
        self.num("p50_us", s.p50)
            .num("p99_us", s.p99)
            .num("mean_us", s.mean)
    }
    fn line(&self) -> String {
        let body: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("\"{k}\": {v}"))
            .collect();
        format!("{{{}}}", body.join(", "))
    }
}

fn e<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |err| format!("{what}: {err}")
}

async fn connect(a: &Args) -> Res<Client> {
    let mut b = ClientBuilder::new(a.connect.as_str())
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(15));
    if let Some(ca) = &a.tls_ca {
        let mut tls = TlsOptions::new().ca(ca.as_str());
        if let (Some(cert), Some(key)) = (&a.tls_cert, &a.tls_key) {
            tls = tls.identity(cert.as_str(), key.as_str());
        }
        b = b.tls(tls);
    }
    b.connect().await.map_err(e("connect"))
}

/// `handshake`: W + N connections one after the other, each timed until `connect()` returns
/// (the session established), then closed.
async fn rust_handshake(a: &Args, out: &mut Out) -> Res<()> {
    let n = a.iterations.unwrap_or(100);
    let w = a.warmup.unwrap_or(10);
    for _ in 0..w {
        connect(a).await?.close().await;
    }
    let cpu = cpu_time();
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        let client = connect(a).await?;
        times.push(t0.elapsed());
        client.close().await;
    }
    let cpu = cpu_time() - cpu;
    let s = stats(&times);
    out.int("n", n as i64)
        .latency(&s)
        .num("handshake_p50_us", s.p50)
        .num("handshake_p99_us", s.p99)
        .num("cpu_us_per_op", cpu.as_secs_f64() * 1e6 / n.max(1) as f64);
    Ok(())
}

async fn raw_connect(a: &Args) -> Res<zk::Client> {
    zk::Client::connector()
        .with_session_timeout(Duration::from_secs(30))
        .connect(&a.connect)
        .await
        .map_err(e("raw connect"))
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

/// Creates `path` and its parents (persistent, empty) if missing.
async fn mkdirs(zk: &zk::Client, path: &str) -> Res<()> {
    let mut cur = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        cur.push('/');
        cur.push_str(part);
        match zk.create(&cur, &[], &persistent()).await {
            Ok(_) | Err(zk::Error::NodeExists) => {}
            Err(err) => return Err(format!("create {cur}: {err}")),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// zkrecipes (Rust, async API on the library runtime)

async fn rust_uncontended(a: &Args, out: &mut Out) -> Res<()> {
    let n = a.iterations.unwrap_or(2000);
    let w = a.warmup.unwrap_or(200);
    let client = connect(a).await?;
    let m = InterProcessMutex::new(&client, &format!("{}/lock", a.path)).map_err(e("mutex"))?;
    let owner = Owner::new();
    for _ in 0..w {
        m.acquire(owner, None).await.map_err(e("acquire"))?;
        m.release(owner).await.map_err(e("release"))?;
    }
    let mut phase = Cycles::start(a, n);
    loop {
        for _ in 0..n {
            let t0 = Instant::now();
            if !m.acquire(owner, None).await.map_err(e("acquire"))? {
                return Err("acquire returned false".into());
            }
            let t1 = Instant::now();
            m.release(owner).await.map_err(e("release"))?;
            phase.record(t0, t1, Instant::now());
        }
        if phase.done() {
            break;
        }
    }
    phase.report(out);
    client.close().await;
    Ok(())
}

/// The timed phase of `uncontended`: rounds of n cycles until it has lasted --min-seconds,
/// each cycle's acquire, release and whole recorded, and the process's CPU time over it.
struct Cycles {
    n: usize,
    min_seconds: f64,
    started: Instant,
    cpu: Duration,
    acq: Vec<Duration>,
    rel: Vec<Duration>,
    cyc: Vec<Duration>,
}

impl Cycles {
    fn start(a: &Args, n: usize) -> Cycles {
        Cycles {
            n,
            min_seconds: a.min_seconds,
            started: Instant::now(),
            cpu: cpu_time(),
            acq: Vec::with_capacity(n),
            rel: Vec::with_capacity(n),
            cyc: Vec::with_capacity(n),
        }
    }

    /// One cycle: acquire from `t0` to `t1`, release from `t1` to `t2`.
    fn record(&mut self, t0: Instant, t1: Instant, t2: Instant) {
        self.acq.push(t1 - t0);
        self.rel.push(t2 - t1);
        self.cyc.push(t2 - t0);
    }

    /// After a round: whether the phase has lasted long enough.
    fn done(&self) -> bool {
        self.n == 0 || self.started.elapsed().as_secs_f64() >= self.min_seconds
    }

    fn report(self, out: &mut Out) {
        let cpu = cpu_time() - self.cpu;
        let n = self.cyc.len().max(1);
        out.int("n", n as i64)
            .latency(&stats(&self.cyc))
            .num("acquire_p50_us", stats(&self.acq).p50)
            .num("release_p50_us", stats(&self.rel).p50)
            .num("cpu_us_per_op", cpu.as_secs_f64() * 1e6 / n as f64);
    }
}

/// `mntr` (four-letter word over TCP) from every host of the connect string; None if a server
/// does not answer (4lw not whitelisted).
fn mntr_texts(connect: &str) -> Option<Vec<String>> {
    use std::io::{Read, Write};
    let hosts = connect.split('/').next()?;
    let mut texts = Vec::new();
    for host in hosts.split(',').filter(|h| !h.is_empty()) {
        let mut s = std::net::TcpStream::connect(host).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        s.write_all(b"mntr").ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        texts.push(text);
    }
    Some(texts)
}

/// One `mntr` value, summed over the texts of `mntr_texts`.
fn mntr_get(texts: &[String], key: &str) -> Option<u64> {
    texts.iter().try_fold(0, |total, text| {
        let v = text.lines().find_map(|l| {
            let (k, v) = l.split_once('\t')?;
            (k == key).then(|| v.trim().parse::<f64>().ok().map(|x| x as u64))?
        })?;
        Some(total + v)
    })
}

/// One `mntr` value summed over every host of the connect string.
fn mntr_sum(connect: &str, key: &str) -> Option<u64> {
    mntr_get(&mntr_texts(connect)?, key)
}

/// The servers' traffic counters, summed over every host of the connect string: [packets
/// received, bytes received, bytes sent (responses + watch notifications)].
fn mntr_totals(connect: &str) -> Option<[u64; 3]> {
    let t = mntr_texts(connect)?;
    let watch_bytes = mntr_get(&t, "zk_watch_bytes").unwrap_or(0);
    Some([
        mntr_get(&t, "zk_packets_received")?,
        mntr_get(&t, "zk_bytes_received_count")?,
        mntr_get(&t, "zk_response_bytes")? + watch_bytes,
    ])
}

/// The measured window's server traffic: `win_packets`, `win_bytes_in`, `win_bytes_out`.
fn put_window(out: &mut Out, before: Option<[u64; 3]>, after: Option<[u64; 3]>) {
    if let (Some(b), Some(a)) = (before, after) {
        out.int("win_packets", (a[0] - b[0]) as i64)
            .int("win_bytes_in", (a[1] - b[1]) as i64)
            .int("win_bytes_out", (a[2] - b[2]) as i64);
    }
}

/// The timed phase of `contended` and `inproc`: 1 s untimed, then `--seconds` with `measuring`
/// set, then `stop`; the server's counters over the window go into `out`. Returns the window's
/// length in seconds, the process CPU time spent in it and the operations `count`ed.
async fn timed_window(
    a: &Args,
    out: &mut Out,
    measuring: &AtomicBool,
    stop: &AtomicBool,
    count: &AtomicU64,
) -> (f64, Duration, u64) {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mntr0 = mntr_totals(&a.connect);
    let cpu = cpu_time();
    measuring.store(true, Ordering::Relaxed);
    let t = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(a.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_time() - cpu;
    let n = count.load(Ordering::Relaxed);
    put_window(out, mntr0, mntr_totals(&a.connect));
    (secs, cpu, n)
}

async fn rust_contended(a: &Args, out: &mut Out) -> Res<()> {
    let mut clients = Vec::new();
    for _ in 0..a.clients {
        clients.push(connect(a).await?);
    }
    let path = format!("{}/lock", a.path);
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let waits = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for c in &clients {
        let m = InterProcessMutex::new(c, &path).map_err(e("mutex"))?;
        let (measuring, stop, count, waits) = (
            measuring.clone(),
            stop.clone(),
            count.clone(),
            waits.clone(),
        );
        tasks.push(zkrecipes::runtime::spawn(async move {
            let me = Owner::new();
            let mut mine = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                match m.acquire(me, None).await {
                    Ok(true) => {}
                    Ok(false) => return Err("acquire returned false".to_string()),
                    Err(err) => return Err(format!("acquire: {err}")),
                }
                let waited = t.elapsed();
                if measuring.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                    count.fetch_add(1, Ordering::Relaxed);
                    mine.push(waited);
                }
                m.release(me).await.map_err(e("release"))?;
            }
            waits.lock().unwrap().extend(mine);
            Ok(())
        }));
    }
    let (secs, cpu, n) = timed_window(a, out, &measuring, &stop, &count).await;
    for t in tasks {
        t.await.map_err(e("task"))??;
    }
    for c in clients {
        c.close().await;
    }
    let waits = waits.lock().unwrap().clone();
    let s = stats(&waits);
    out.int("n", n as i64)
        .num("ops_per_s", n as f64 / secs)
        .num("wait_p99_us", s.p99)
        .num("p50_us", s.p50)
        .num("cpu_us_per_op", cpu.as_secs_f64() * 1e6 / n.max(1) as f64);
    Ok(())
}

/// wakeups (issue 34, part 2): C sessions queue on one lock ONCE each and do not loop. Session 0
/// holds the lock until all C nodes are there; then, in the measured window, every holder
/// releases as soon as it has acquired, so each of the C − 1 waiters is woken exactly once.
/// Reports `n` = the wake-ups (C − 1), their rate, and the server's traffic over the window
/// (`win_*`, divided by `n` in the runner: requests and bytes per wake-up).
async fn rust_wakeups(a: &Args, out: &mut Out) -> Res<()> {
    let mut clients = Vec::new();
    for _ in 0..a.clients.max(2) {
        clients.push(connect(a).await?);
    }
    let path = format!("{}/lock", a.path);
    let first = InterProcessMutex::new(&clients[0], &path).map_err(e("mutex"))?;
    let holder = Owner::new();
    if !first.acquire(holder, None).await.map_err(e("acquire"))? {
        return Err("the first acquire returned false".into());
    }
    let watches0 = mntr_sum(&a.connect, "zk_watch_count").ok_or("mntr does not answer")?;
    let woken = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for c in &clients[1..] {
        let m = InterProcessMutex::new(c, &path).map_err(e("mutex"))?;
        let woken = woken.clone();
        tasks.push(zkrecipes::runtime::spawn(async move {
            let me = Owner::new();
            match m.acquire(me, None).await {
                Ok(true) => {}
                Ok(false) => return Err("acquire returned false".to_string()),
                Err(err) => return Err(format!("acquire: {err}")),
            }
            woken.fetch_add(1, Ordering::Relaxed);
            m.release(me).await.map_err(e("release"))
        }));
    }
    // Every waiter queued (its node created, its predecessor watched): C nodes, and the
    // server's watch count no longer rising. Polled: this is set-up, outside the window.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let kids = clients[0]
            .get_children(&path)
            .await
            .map_err(e("getChildren"))?;
        if kids.len() == clients.len() {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "only {} of {} nodes queued after 120 s",
                kids.len(),
                clients.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // ... and every waiter's watch on its predecessor set (the servers' watch count).
    while mntr_sum(&a.connect, "zk_watch_count").unwrap_or(0) < watches0 + clients.len() as u64 - 1
    {
        if Instant::now() > deadline {
            return Err("the waiters' watches were not all set after 120 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if woken.load(Ordering::Relaxed) != 0 {
        return Err("a waiter acquired while the first session held the lock".into());
    }
    let mntr0 = mntr_totals(&a.connect);
    let cpu = cpu_time();
    let t = Instant::now();
    first.release(holder).await.map_err(e("release"))?;
    for task in tasks {
        task.await.map_err(e("task"))??;
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_time() - cpu;
    put_window(out, mntr0, mntr_totals(&a.connect));
    let n = woken.load(Ordering::Relaxed);
    for c in clients {
        c.close().await;
    }
    out.int("n", n as i64)
        .int("clients", (n + 1) as i64)
        .num("ops_per_s", n as f64 / secs)
        .num("cpu_us_per_op", cpu.as_secs_f64() * 1e6 / n.max(1) as f64);
    Ok(())
}

/// inproc (issue 21, part 1: the seeds' scenario): T owners (tasks) of ONE process share one
/// mutex object on one session; with `--remote 1` a plain mutex on a second session contends
/// the whole time (1 ms hold, 1 ms gap). Every hold passes a fencing check: no two holders at
/// once, and each wide token above the last. Reports local handoffs/s, the remote contender's
/// acquires and waits, and the server's requests in the window.
async fn rust_inproc(a: &Args, out: &mut Out) -> Res<()> {
    use zkrecipes::lock::{CohortOptions, FencingToken};
    let local = connect(a).await?;
    let path = format!("{}/lock", a.path);
    let mut m = InterProcessMutex::new(&local, &path).map_err(e("mutex"))?;
    if a.cohort > 0 {
        m = m
            .with_cohort(CohortOptions {
                max_handoffs: a.cohort,
                max_hold: Duration::from_millis(a.max_hold_ms),
            })
            .map_err(e("with_cohort"))?;
    }
    struct Ledger {
        inside: AtomicBool,
        last: Mutex<Option<FencingToken>>,
        violations: AtomicU64,
    }
    let ledger = Arc::new(Ledger {
        inside: AtomicBool::new(false),
        last: Mutex::new(None),
        violations: AtomicU64::new(0),
    });
    let check = |l: &Ledger, t: Option<FencingToken>| {
        if l.inside.swap(true, Ordering::SeqCst) {
            l.violations.fetch_add(1, Ordering::Relaxed);
        }
        let mut last = l.last.lock().unwrap();
        match (t, *last) {
            (Some(t), Some(prev)) if t <= prev => {
                l.violations.fetch_add(1, Ordering::Relaxed);
            }
            (None, _) => {
                l.violations.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
        *last = t.or(*last);
    };
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..a.threads {
        let (m, ledger, measuring, stop, count) = (
            m.clone(),
            ledger.clone(),
            measuring.clone(),
            stop.clone(),
            count.clone(),
        );
        tasks.push(zkrecipes::runtime::spawn(async move {
            let me = Owner::new();
            while !stop.load(Ordering::Relaxed) {
                match m.acquire(me, None).await {
                    Ok(true) => {}
                    Ok(false) => return Err("acquire returned false".to_string()),
                    Err(err) => return Err(format!("acquire: {err}")),
                }
                check(&ledger, m.fencing_token_wide(me));
                ledger.inside.store(false, Ordering::SeqCst);
                if measuring.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                m.release(me).await.map_err(e("release"))?;
            }
            Ok(())
        }));
    }
    let remote = if a.remote > 0 {
        let rc = connect(a).await?;
        let rm = InterProcessMutex::new(&rc, &path).map_err(e("remote mutex"))?;
        let (ledger, measuring, stop) = (ledger.clone(), measuring.clone(), stop.clone());
        Some((
            rc,
            zkrecipes::runtime::spawn(async move {
                let me = Owner::new();
                let mut waits = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    if !rm.acquire(me, None).await.map_err(e("remote acquire"))? {
                        return Err("remote acquire returned false".to_string());
                    }
                    let waited = t.elapsed();
                    check(&ledger, rm.fencing_token_wide(me));
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    ledger.inside.store(false, Ordering::SeqCst);
                    if measuring.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                        waits.push(waited);
                    }
                    rm.release(me).await.map_err(e("remote release"))?;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                Ok::<Vec<Duration>, String>(waits)
            }),
        ))
    } else {
        None
    };
    let (secs, cpu, n) = timed_window(a, out, &measuring, &stop, &count).await;
    for t in tasks {
        t.await.map_err(e("task"))??;
    }
    if let Some((rc, task)) = remote {
        let waits = task.await.map_err(e("remote task"))??;
        let s = stats(&waits);
        let max = waits
            .iter()
            .max()
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1e6);
        out.int("remote_n", waits.len() as i64)
            .num("remote_wait_p50_us", s.p50)
            .num("remote_wait_p99_us", s.p99)
            .num("remote_wait_max_us", max);
        rc.close().await;
    }
    local.close().await;
    out.int("n", n as i64)
        .num("ops_per_s", n as f64 / secs)
        .int(
            "fencing_violations",
            ledger.violations.load(Ordering::Relaxed) as i64,
        )
        .num("cpu_us_per_op", cpu.as_secs_f64() * 1e6 / n.max(1) as f64);
    Ok(())
}

/// uncontended through the core's own blocking face, from this plain thread (run by hand:
/// `--impl rust --scenario uncontended_blocking`): what every foreign-thread face (C, Python's
/// sync calls) is built on, so the faces' cost splits into this structure's and their own.
fn rust_uncontended_blocking(a: &Args, out: &mut Out) -> Res<()> {
    let n = a.iterations.unwrap_or(2000);
    let w = a.warmup.unwrap_or(200);
    let client = ClientBuilder::new(a.connect.as_str())
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(15))
        .connect_blocking()
        .map_err(e("connect"))?;
    let m = InterProcessMutex::new(&client, &format!("{}/lock", a.path)).map_err(e("mutex"))?;
    for _ in 0..w {
        m.acquire_blocking(None).map_err(e("acquire"))?;
        m.release_blocking().map_err(e("release"))?;
    }
    let mut phase = Cycles::start(a, n);
    loop {
        for _ in 0..n {
            let t0 = Instant::now();
            if !m.acquire_blocking(None).map_err(e("acquire"))? {
                return Err("acquire returned false".into());
            }
            let t1 = Instant::now();
            m.release_blocking().map_err(e("release"))?;
            phase.record(t0, t1, Instant::now());
        }
        if phase.done() {
            break;
        }
    }
    phase.report(out);
    client.close_blocking();
    Ok(())
}

/// The counter drivers' client-side request counts, summed over `clients`: (writes, all
/// requests), where writes are setData and create.
fn counter_requests(clients: &[Client]) -> (u64, u64) {
    clients.iter().fold((0, 0), |(w, r), c| {
        let q = c.request_counts();
        let writes = q.set_data + q.create;
        (
            w + writes,
            r + writes + q.get_data + q.exists + q.delete + q.get_children,
        )
    })
}

/// counter_threads (one client, T OS threads on the blocking face) and counter_clients
/// (C clients, each on its own thread).
fn rust_counter(a: &Args, out: &mut Out, separate: bool) -> Res<()> {
    let n = a.iterations.unwrap_or(100);
    let workers = if separate { a.clients } else { a.threads };
    let path = format!("{}/counter", a.path);
    let connect_blocking = || {
        ClientBuilder::new(a.connect.as_str())
            .session_timeout(Duration::from_secs(30))
            .connect_blocking()
            .map_err(e("connect"))
    };
    let main = connect_blocking()?;
    let counter = DistributedAtomicLong::new(&main, &path, None, None).map_err(e("counter"))?;
    counter.initialize_blocking(0).map_err(e("initialize"))?;
    let initial = counter.get_blocking().map_err(e("get"))?.post_value;
    let clients: Vec<Client> = if separate {
        (0..workers)
            .map(|_| connect_blocking())
            .collect::<Res<_>>()?
    } else {
        vec![main.clone()]
    };
    let (w0, r0) = counter_requests(&clients);
    let min = Duration::from_secs_f64(a.min_seconds);
    let cpu = cpu_time();
    let t = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|i| {
            let client = clients[i % clients.len()].clone();
            let path = path.clone();
            std::thread::spawn(move || -> Res<u64> {
                let c =
                    DistributedAtomicLong::new(&client, &path, None, None).map_err(e("counter"))?;
                let mut done = 0u64;
                // Rounds of n increments until the phase has lasted --min-seconds.
                loop {
                    for _ in 0..n {
                        c.add_and_get_blocking(1, None).map_err(e("add_and_get"))?;
                    }
                    done += n as u64;
                    if n == 0 || t.elapsed() >= min {
                        return Ok(done);
                    }
                }
            })
        })
        .collect();
    let mut ok = 0;
    for h in handles {
        ok += h.join().map_err(|_| "worker panicked".to_string())??;
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_time() - cpu;
    let (w1, r1) = counter_requests(&clients);
    let (w, r) = (w1 - w0, r1 - r0);
    // On an ensemble, this session's server may not have applied the other sessions' last
    // writes yet (ZooKeeper reads are not linearizable): re-read for up to 5 s before a
    // shortfall counts as lost.
    let mut fin = counter.get_blocking().map_err(e("get"))?.post_value;
    let mut final_reads = 1;
    while fin - initial < ok as i64 && final_reads < 10 {
        std::thread::sleep(Duration::from_millis(500));
        fin = counter.get_blocking().map_err(e("get"))?.post_value;
        final_reads += 1;
    }
    out.int("final_reads", final_reads);
    if separate {
        clients.iter().for_each(Client::close_blocking);
    }
    main.close_blocking();
    out.int("n", ok as i64)
        .num("ops_per_s", ok as f64 / secs)
        .int("final", fin)
        .int("expected", initial + ok as i64)
        .int("lost", ok as i64 - (fin - initial))
        .num("writes_per_op", w as f64 / ok.max(1) as f64)
        .num("client_requests_per_op", r as f64 / ok.max(1) as f64)
        .num("cpu_us_per_op", cpu.as_secs_f64() * 1e6 / ok.max(1) as f64);
    Ok(())
}

/// `counter_clients_async` (run by hand, not by `tests/bench/run`; issue 34's counter question):
/// `counter_clients` through the async API, one task per session on the core's runtime, so no
/// increment crosses a thread between its reply and the next write. Same keys.
async fn rust_counter_async(a: &Args, out: &mut Out) -> Res<()> {
    let n = a.iterations.unwrap_or(100);
    let path = format!("{}/counter", a.path);
    let connect = || async {
        ClientBuilder::new(a.connect.as_str())
            .session_timeout(Duration::from_secs(30))
            .connect()
            .await
            .map_err(e("connect"))
    };
    let main = connect().await?;
    let counter = DistributedAtomicLong::new(&main, &path, None, None).map_err(e("counter"))?;
    counter.initialize(0).await.map_err(e("initialize"))?;
    let initial = counter.get().await.map_err(e("get"))?.post_value;
    let mut clients = Vec::new();
    for _ in 0..a.clients {
        clients.push(connect().await?);
    }
    let (w0, r0) = counter_requests(&clients);
    let min = Duration::from_secs_f64(a.min_seconds);
    let cpu = cpu_time();
    let t = Instant::now();
    let tasks: Vec<_> = clients
        .iter()
        .map(|client| {
            let (client, path) = (client.clone(), path.clone());
            tokio::spawn(async move {
                let c =
                    DistributedAtomicLong::new(&client, &path, None, None).map_err(e("counter"))?;
                let mut done = 0u64;
                loop {
                    for _ in 0..n {
                        c.add_and_get(1, None).await.map_err(e("add_and_get"))?;
                    }
                    done += n as u64;
                    if n == 0 || t.elapsed() >= min {
                        return Ok::<u64, String>(done);
                    }
                }
            })
        })
        .collect();
    let mut ok = 0;
    for task in tasks {
        ok += task.await.map_err(|_| "worker panicked".to_string())??;
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_time() - cpu;
    let (w1, r1) = counter_requests(&clients);
    let fin = counter.get().await.map_err(e("get"))?.post_value;
    for c in &clients {
        c.close().await;
    }
    main.close().await;
    out.int("n", ok as i64)
        .num("ops_per_s", ok as f64 / secs)
        .int("lost", ok as i64 - (fin - initial))
        .num("writes_per_op", (w1 - w0) as f64 / ok.max(1) as f64)
        .num(
            "client_requests_per_op",
            (r1 - r0) as f64 / ok.max(1) as f64,
        )
        .num("cpu_us_per_op", cpu.as_secs_f64() * 1e6 / ok.max(1) as f64);
    Ok(())
}

/// Waits until `latch` leads; the instant its leadership watch said so.
async fn lead_instant(latch: Arc<LeaderLatch>) -> Instant {
    let mut w = latch.leadership_watch();
    if w.is_leader() {
        return Instant::now();
    }
    loop {
        match w.changed().await {
            Some(true) => return Instant::now(),
            Some(false) => continue,
            None => std::future::pending::<()>().await,
        }
    }
}

async fn rust_failover(a: &Args, out: &mut Out) -> Res<()> {
    let n = a.iterations.unwrap_or(200);
    let w = a.warmup.unwrap_or(10);
    let path = format!("{}/latch", a.path);
    let mut clients = Vec::new();
    let mut latches = Vec::new();
    for i in 0..a.clients {
        let c = connect(a).await?;
        let l = Arc::new(LeaderLatch::new(&c, &path, &format!("m{i}")).map_err(e("latch"))?);
        l.start().await.map_err(e("start"))?;
        clients.push(c);
        latches.push(l);
    }
    let mut samples = Vec::new();
    let cpu = cpu_time();
    for round in 0..w + n {
        // Some member leads (untimed).
        let leader = tokio::time::timeout(Duration::from_secs(30), async {
            let waits: Vec<_> = latches
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let l = l.clone();
                    Box::pin(async move {
                        lead_instant(l).await;
                        i
                    })
                })
                .collect();
            futures_select_first(waits).await
        })
        .await
        .map_err(|_| "no member leads after 30 s".to_string())?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut watchers = Vec::new();
        for (i, l) in latches.iter().enumerate() {
            if i != leader {
                let (l, tx) = (l.clone(), tx.clone());
                watchers.push(tokio::spawn(async move {
                    let _ = tx.send(lead_instant(l).await);
                }));
            }
        }
        let t = Instant::now();
        latches[leader].close().await.map_err(e("close"))?;
        let led = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .map_err(|_| "no member took over within 30 s".to_string())?
            .ok_or("watchers gone")?;
        watchers.iter().for_each(|w| w.abort());
        if round >= w {
            samples.push(led.saturating_duration_since(t));
        }
        let fresh = Arc::new(
            LeaderLatch::new(&clients[leader], &path, &format!("m{leader}")).map_err(e("latch"))?,
        );
        fresh.start().await.map_err(e("start"))?;
        latches[leader] = fresh;
    }
    let cpu = cpu_time() - cpu;
    for l in &latches {
        l.close().await.map_err(e("close"))?;
    }
    for c in clients {
        c.close().await;
    }
    out.int("n", n as i64)
        .latency(&stats(&samples))
        .num("cpu_us_per_op", cpu.as_secs_f64() * 1e6 / (w + n) as f64);
    Ok(())
}

/// The index of the first future to finish.
async fn futures_select_first<F>(futs: Vec<std::pin::Pin<Box<F>>>) -> usize
where
    F: std::future::Future<Output = usize> + Send,
{
    let mut futs = futs;
    std::future::poll_fn(move |cx| {
        for f in futs.iter_mut() {
            if let std::task::Poll::Ready(i) = f.as_mut().poll(cx) {
                return std::task::Poll::Ready(i);
            }
        }
        std::task::Poll::Pending
    })
    .await
}

async fn rust_memory(a: &Args, out: &mut Out) -> Res<()> {
    let client = connect(a).await?;
    let owner = Owner::new();
    let warm = InterProcessMutex::new(&client, &format!("{}/warm", a.path)).map_err(e("mutex"))?;
    for _ in 0..a.warmup.unwrap_or(20) {
        warm.acquire(owner, None).await.map_err(e("acquire"))?;
        warm.release(owner).await.map_err(e("release"))?;
    }
    let before = rss_kb();
    let cpu = cpu_time();
    let mut held = Vec::with_capacity(a.locks);
    for i in 0..a.locks {
        let m =
            InterProcessMutex::new(&client, &format!("{}/m/{i}", a.path)).map_err(e("mutex"))?;
        if !m.acquire(owner, None).await.map_err(e("acquire"))? {
            return Err("acquire returned false".into());
        }
        held.push(m);
    }
    let cpu = cpu_time() - cpu;
    let after = rss_kb();
    for m in &held {
        m.release(owner).await.map_err(e("release"))?;
    }
    client.close().await;
    out.int("n", a.locks as i64)
        .int("rss_kb", after as i64)
        .int("rss_delta_kb", after as i64 - before as i64)
        .num(
            "cpu_us_per_op",
            cpu.as_secs_f64() * 1e6 / a.locks.max(1) as f64,
        );
    Ok(())
}

/// An instance of the discovery scenario: a small map payload and a URI spec, as services register.
fn bench_instance(id: String, i: usize) -> zkrecipes::discovery::ServiceInstance {
    let mut x = zkrecipes::discovery::ServiceInstance::new("svc");
    x.id = id;
    x.address = Some(format!("10.0.{}.{}", i / 250, i % 250));
    x.port = Some(8000 + (i % 1000) as i32);
    let mut payload = serde_json::Map::new();
    payload.insert("zone".into(), format!("z{}", i % 3).into());
    payload.insert("weight".into(), 1.5.into());
    x.payload = Some(payload.into());
    x.payload_class = Some("java.util.LinkedHashMap".into());
    x.uri_spec =
        Some(zkrecipes::discovery::UriSpec::new("{scheme}://{address}:{port}/api").unwrap());
    x
}

async fn rust_discovery(a: &Args, out: &mut Out) -> Res<()> {
    use zkrecipes::discovery::{ServiceCache, ServiceCacheEventKind, ServiceDiscovery};
    let (n, w, count) = (
        a.iterations.unwrap_or(20),
        a.warmup.unwrap_or(20),
        a.instances,
    );
    let reg = connect(a).await?;
    let watcher = connect(a).await?;
    let d = ServiceDiscovery::new(&reg, &a.path).map_err(e("discovery"))?;
    // Registered 50 at a time (each register waits for its node).
    for chunk in (0..count).collect::<Vec<_>>().chunks(50) {
        let tasks: Vec<_> = chunk
            .iter()
            .map(|&i| {
                let d = d.clone();
                zkrecipes::runtime::spawn(async move {
                    d.register(bench_instance(format!("i{i}"), i)).await
                })
            })
            .collect();
        for t in tasks {
            t.await
                .map_err(e("register task"))?
                .map_err(e("register"))?;
        }
    }
    let reader = ServiceDiscovery::new(&watcher, &a.path).map_err(e("discovery"))?;
    let mut loads = Vec::with_capacity(n);
    let mut cpu = cpu_time();
    for i in 0..w + n {
        if i == w {
            cpu = cpu_time();
        }
        let t0 = Instant::now();
        let c = ServiceCache::new(&reader, "svc").map_err(e("cache"))?;
        c.start().await.map_err(e("cache start"))?;
        if !c
            .await_initialized(Some(Duration::from_secs(60)))
            .await
            .map_err(e("load"))?
        {
            return Err("the cache did not load within 60 s".into());
        }
        let t1 = t0.elapsed();
        if c.instances().len() != count {
            return Err(format!(
                "a loaded cache holds {} of {count}",
                c.instances().len()
            ));
        }
        c.close();
        if i >= w {
            loads.push(t1);
        }
    }
    let cpu = cpu_time() - cpu;
    let c = ServiceCache::new(&reader, "svc").map_err(e("cache"))?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, Instant)>();
    c.listen(false, move |ev| {
        if ev.kind == ServiceCacheEventKind::Added {
            if let Some(i) = &ev.instance {
                let _ = tx.send((i.id.clone(), Instant::now()));
            }
        }
    });
    c.start().await.map_err(e("cache start"))?;
    c.await_initialized(Some(Duration::from_secs(60)))
        .await
        .map_err(e("load"))?;
    while rx.try_recv().is_ok() {}
    let mut events = Vec::with_capacity(n);
    for i in 0..w + n {
        let id = format!("new{i}");
        let t0 = Instant::now();
        let r = d
            .register(bench_instance(id.clone(), count + i))
            .await
            .map_err(e("register"))?;
        let seen = loop {
            let (got, at) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .map_err(|_| format!("the cache never saw {id}"))?
                .ok_or("listener gone")?;
            if got == id {
                break at;
            }
        };
        if i >= w {
            events.push(seen - t0);
        }
        r.unregister().await.map_err(e("unregister"))?;
    }
    c.close();
    d.close().await.map_err(e("close"))?;
    reg.close().await;
    watcher.close().await;
    let (l, ev) = (stats(&loads), stats(&events));
    out.int("n", loads.len() as i64)
        .int("instances", count as i64)
        .num("p50_us", l.p50)
        .num("p99_us", l.p99)
        .num("load_p50_us", l.p50)
        .num("load_p99_us", l.p99)
        .num("event_p50_us", ev.p50)
        .num("event_p99_us", ev.p99)
        .num(
            "cpu_us_per_op",
            cpu.as_secs_f64() * 1e6 / loads.len().max(1) as f64,
        );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The raw protocol floor (zookeeper-client)

fn ephemeral_seq() -> zk::CreateOptions<'static> {
    zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all())
}

async fn floor_uncontended(a: &Args, out: &mut Out) -> Res<()> {
    let n = a.iterations.unwrap_or(2000);
    let w = a.warmup.unwrap_or(200);
    let zk = raw_connect(a).await?;
    let base = format!("{}/lock", a.path);
    mkdirs(&zk, &base).await?;
    let opts = ephemeral_seq();
    // Sequential: create, then getChildren (acquire); delete (release).
    let sequential = |count: usize| {
        let (zk, base, opts) = (&zk, &base, &opts);
        async move {
            let (mut acq, mut rel) = (Vec::with_capacity(count), Vec::with_capacity(count));
            for _ in 0..count {
                let prefix = format!("{base}/_c_{}-lock-", uuid::Uuid::new_v4());
                let t0 = Instant::now();
                let (_, seq) = zk.create(&prefix, &[], opts).await.map_err(e("create"))?;
                let children = zk.list_children(base).await.map_err(e("getChildren"))?;
                if children.is_empty() {
                    return Err("no children".to_string());
                }
                let t1 = Instant::now();
                zk.delete(&format!("{prefix}{seq}"), None)
                    .await
                    .map_err(e("delete"))?;
                acq.push(t1 - t0);
                rel.push(t1.elapsed());
            }
            Ok::<_, String>((acq, rel))
        }
    };
    sequential(w).await?;
    let cpu = cpu_time();
    let phase = Instant::now();
    // Rounds of n cycles until the phase has lasted --min-seconds.
    let (mut acq, mut rel) = (Vec::new(), Vec::new());
    loop {
        let (a1, r1) = sequential(n).await?;
        acq.extend(a1);
        rel.extend(r1);
        if n == 0 || phase.elapsed().as_secs_f64() >= a.min_seconds {
            break;
        }
    }
    let n_seq = acq.len();
    let cpu = cpu_time() - cpu;
    let cyc: Vec<Duration> = acq.iter().zip(&rel).map(|(a, r)| *a + *r).collect();
    // Pipelined: create and getChildren issued together, then delete.
    let mut pipelined = Vec::with_capacity(n);
    let mut pipelined_acquire = Vec::with_capacity(n);
    for i in 0..w + n {
        let prefix = format!("{base}/_c_{}-lock-", uuid::Uuid::new_v4());
        let t = Instant::now();
        let create = zk.create(&prefix, &[], &opts);
        let list = zk.list_children(&base);
        let ((_, seq), _children) =
            tokio::try_join!(create, list).map_err(e("create+getChildren"))?;
        let acquired = t.elapsed();
        zk.delete(&format!("{prefix}{seq}"), None)
            .await
            .map_err(e("delete"))?;
        if i >= w {
            pipelined.push(t.elapsed());
            pipelined_acquire.push(acquired);
        }
    }
    out.int("n", n_seq as i64)
        .latency(&stats(&cyc))
        .num("acquire_p50_us", stats(&acq).p50)
        .num("release_p50_us", stats(&rel).p50)
        .num("pipelined_p50_us", stats(&pipelined).p50)
        .num("pipelined_acquire_p50_us", stats(&pipelined_acquire).p50)
        // Sequential and pipelined cycles, warm-up included: for requests per cycle.
        .int("ops_total", (w + n_seq + w + n) as i64)
        .num(
            "cpu_us_per_op",
            cpu.as_secs_f64() * 1e6 / n_seq.max(1) as f64,
        );
    Ok(())
}

async fn floor_rtt(a: &Args, out: &mut Out) -> Res<()> {
    let n = a.iterations.unwrap_or(300);
    let zk = raw_connect(a).await?;
    mkdirs(&zk, &a.path).await?;
    let mut v = Vec::with_capacity(n);
    for i in 0..n + a.warmup.unwrap_or(50) {
        let t = Instant::now();
        zk.check_stat(&a.path).await.map_err(e("exists"))?;
        if i >= a.warmup.unwrap_or(50) {
            v.push(t.elapsed());
        }
    }
    let s = stats(&v);
    out.int("n", n as i64).latency(&s).num("rtt_p50_us", s.p50);
    Ok(())
}

/// get + versioned setData until it sticks; returns the number of setData attempts.
async fn raw_increment(zk: &zk::Client, path: &str) -> Res<u64> {
    let mut tries = 0;
    loop {
        tries += 1;
        let (data, stat) = zk.get_data(path).await.map_err(e("getData"))?;
        let value = i64::from_be_bytes(
            data.as_slice()
                .try_into()
                .map_err(|_| "not 8 bytes".to_string())?,
        );
        match zk
            .set_data(path, &(value + 1).to_be_bytes(), Some(stat.version))
            .await
        {
            Ok(_) => return Ok(tries),
            Err(zk::Error::BadVersion) => continue,
            Err(err) => return Err(format!("setData: {err}")),
        }
    }
}

async fn floor_counter(a: &Args, out: &mut Out, separate: bool) -> Res<()> {
    let n = a.iterations.unwrap_or(100);
    let workers = if separate { a.clients } else { a.threads };
    let path = format!("{}/counter", a.path);
    let main = raw_connect(a).await?;
    mkdirs(&main, &a.path).await?;
    match main.create(&path, &0i64.to_be_bytes(), &persistent()).await {
        Ok(_) | Err(zk::Error::NodeExists) => {}
        Err(err) => return Err(format!("create counter: {err}")),
    }
    let read = |zk: zk::Client, path: String| async move {
        let (d, _) = zk.get_data(&path).await.map_err(e("getData"))?;
        Ok::<i64, String>(i64::from_be_bytes(
            d.as_slice()
                .try_into()
                .map_err(|_| "not 8 bytes".to_string())?,
        ))
    };
    let initial = read(main.clone(), path.clone()).await?;
    let mut clients = Vec::new();
    if separate {
        for _ in 0..workers {
            clients.push(raw_connect(a).await?);
        }
    } else {
        clients.push(main.clone());
    }
    let min = Duration::from_secs_f64(a.min_seconds);
    let cpu = cpu_time();
    let t = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|i| {
            let (zk, path) = (clients[i % clients.len()].clone(), path.clone());
            tokio::spawn(async move {
                let (mut writes, mut done) = (0, 0u64);
                loop {
                    for _ in 0..n {
                        writes += raw_increment(&zk, &path).await?;
                    }
                    done += n as u64;
                    if n == 0 || t.elapsed() >= min {
                        return Ok::<(u64, u64), String>((writes, done));
                    }
                }
            })
        })
        .collect();
    let (mut writes, mut done) = (0, 0);
    for t in tasks {
        let (w, d) = t.await.map_err(e("task"))??;
        writes += w;
        done += d;
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_time() - cpu;
    let ok = done as i64;
    // On an ensemble, main's server may lag the other sessions' last writes: re-read for up
    // to 5 s before a shortfall counts as lost.
    let mut fin = read(main.clone(), path.clone()).await?;
    let mut final_reads = 1;
    while fin - initial < ok && final_reads < 10 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        fin = read(main.clone(), path.clone()).await?;
        final_reads += 1;
    }
    out.int("final_reads", final_reads);
    out.int("n", ok)
        .num("ops_per_s", ok as f64 / secs)
        .int("final", fin)
        .int("expected", initial + ok)
        .int("lost", ok - (fin - initial))
        .num("writes_per_op", writes as f64 / ok as f64)
        .num("client_requests_per_op", 2.0 * writes as f64 / ok as f64)
        .num("cpu_us_per_op", cpu.as_secs_f64() * 1e6 / ok as f64);
    Ok(())
}

/// counter_chain: one session, one node; every increment is one setData conditional on the
/// version the previous setData returned (no reads: the value and version are known), one
/// after the other. This is the chain a shared counter's increments form, whoever issues them:
/// each must see the previous one. Rounds of N until --min-seconds have passed.
async fn floor_counter_chain(a: &Args, out: &mut Out) -> Res<()> {
    let n = a.iterations.unwrap_or(100).max(1);
    let w = a.warmup.unwrap_or(20);
    let path = format!("{}/counter", a.path);
    let zk = raw_connect(a).await?;
    mkdirs(&zk, &a.path).await?;
    match zk.create(&path, &0i64.to_be_bytes(), &persistent()).await {
        Ok(_) | Err(zk::Error::NodeExists) => {}
        Err(err) => return Err(format!("create counter: {err}")),
    }
    let (data, stat) = zk.get_data(&path).await.map_err(e("getData"))?;
    let mut value = i64::from_be_bytes(
        data.as_slice()
            .try_into()
            .map_err(|_| "not 8 bytes".to_string())?,
    );
    let mut version = stat.version;
    let step = |value: i64, version: i32| {
        let zk = &zk;
        let path = &path;
        async move {
            let stat = zk
                .set_data(path, &(value + 1).to_be_bytes(), Some(version))
                .await
                .map_err(e("conditional setData"))?;
            Ok::<i32, String>(stat.version)
        }
    };
    for _ in 0..w {
        version = step(value, version).await?;
        value += 1;
    }
    let initial = value;
    let min = Duration::from_secs_f64(a.min_seconds);
    let mut lat = Vec::new();
    let cpu = cpu_time();
    let t = Instant::now();
    let mut done = 0u64;
    loop {
        for _ in 0..n {
            let t0 = Instant::now();
            version = step(value, version).await?;
            lat.push(t0.elapsed());
            value += 1;
        }
        done += n as u64;
        if t.elapsed() >= min {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_time() - cpu;
    let (data, _) = zk.get_data(&path).await.map_err(e("getData"))?;
    let fin = i64::from_be_bytes(
        data.as_slice()
            .try_into()
            .map_err(|_| "not 8 bytes".to_string())?,
    );
    out.int("n", done as i64)
        .latency(&stats(&lat))
        .num("ops_per_s", done as f64 / secs)
        .int("final", fin)
        .int("expected", initial + done as i64)
        .int("lost", done as i64 - (fin - initial))
        .num("writes_per_op", 1.0)
        .num(
            "cpu_us_per_op",
            cpu.as_secs_f64() * 1e6 / done.max(1) as f64,
        );
    Ok(())
}

/// counter_blind: C sessions, each writing one node with unconditional setData (8 bytes), one
/// write after the other per session, all sessions at once. Rounds of N per session until
/// --min-seconds have passed. The server's write rate with C writers: for reference.
async fn floor_counter_blind(a: &Args, out: &mut Out) -> Res<()> {
    let n = a.iterations.unwrap_or(100).max(1);
    let w = a.warmup.unwrap_or(20);
    let path = format!("{}/counter", a.path);
    let mut clients = Vec::new();
    for _ in 0..a.clients.max(1) {
        clients.push(raw_connect(a).await?);
    }
    mkdirs(&clients[0], &a.path).await?;
    match clients[0]
        .create(&path, &0i64.to_be_bytes(), &persistent())
        .await
    {
        Ok(_) | Err(zk::Error::NodeExists) => {}
        Err(err) => return Err(format!("create counter: {err}")),
    }
    for i in 0..w {
        clients[0]
            .set_data(&path, &(i as i64).to_be_bytes(), None)
            .await
            .map_err(e("setData"))?;
    }
    let min = Duration::from_secs_f64(a.min_seconds);
    let cpu = cpu_time();
    let t = Instant::now();
    let tasks: Vec<_> = clients
        .iter()
        .map(|zk| {
            let (zk, path) = (zk.clone(), path.clone());
            tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut done = 0u64;
                loop {
                    for i in 0..n {
                        let t0 = Instant::now();
                        zk.set_data(&path, &(i as i64).to_be_bytes(), None)
                            .await
                            .map_err(e("setData"))?;
                        lat.push(t0.elapsed());
                    }
                    done += n as u64;
                    if t.elapsed() >= min {
                        return Ok::<_, String>((done, lat));
                    }
                }
            })
        })
        .collect();
    let (mut done, mut lat) = (0u64, Vec::new());
    for task in tasks {
        let (d, l) = task.await.map_err(e("task"))??;
        done += d;
        lat.extend(l);
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_time() - cpu;
    out.int("n", done as i64)
        .int("ops_total", (done + w as u64) as i64)
        .latency(&stats(&lat))
        .num("ops_per_s", done as f64 / secs)
        .num("writes_per_op", 1.0)
        .int("clients", clients.len() as i64)
        .num(
            "cpu_us_per_op",
            cpu.as_secs_f64() * 1e6 / done.max(1) as f64,
        );
    Ok(())
}

/// K members each own an ephemeral-sequential node; the lowest leads. Per round the leader
/// deletes its node; its successor's watch on it fires, the successor lists the children and
/// sees it is lowest (timed from the delete call); the old leader rejoins at the end.
async fn floor_failover(a: &Args, out: &mut Out) -> Res<()> {
    let n = a.iterations.unwrap_or(200);
    let w = a.warmup.unwrap_or(10);
    let base = format!("{}/latch", a.path);
    let mut members = Vec::new();
    for _ in 0..a.clients.max(2) {
        members.push(raw_connect(a).await?);
    }
    mkdirs(&members[0], &base).await?;
    // (member index, full node path), in sequence order.
    let mut queue: std::collections::VecDeque<(usize, String)> = Default::default();
    let join = |zk: zk::Client, base: String| async move {
        let prefix = format!("{base}/_c_{}-latch-", uuid::Uuid::new_v4());
        let (_, seq) = zk
            .create(&prefix, &[], &ephemeral_seq())
            .await
            .map_err(e("create"))?;
        Ok::<String, String>(format!("{prefix}{seq}"))
    };
    for (i, zk) in members.iter().enumerate() {
        queue.push_back((i, join(zk.clone(), base.clone()).await?));
    }
    let seq_of = |p: &str| p.rsplit('-').next().unwrap_or("").to_string();
    let mut samples = Vec::new();
    for round in 0..w + n {
        let (leader, leader_node) = queue.pop_front().ok_or("empty queue")?;
        let (next, _) = queue.front().cloned().ok_or("no successor")?;
        let successor = members[next].clone();
        // The successor's existing watch on its predecessor.
        let (_, _, watch) = successor
            .get_and_watch_data(&leader_node)
            .await
            .map_err(e("getData watch"))?;
        let (b, base2, me) = (
            successor.clone(),
            base.clone(),
            queue.front().unwrap().1.clone(),
        );
        let decided = tokio::spawn(async move {
            watch.changed().await;
            let children = b.list_children(&base2).await.map_err(e("getChildren"))?;
            let lowest = children.iter().map(|c| seq_of(c)).min().unwrap_or_default();
            if lowest != seq_of(&me) {
                return Err(format!("successor is not lowest: {lowest} vs {me}"));
            }
            Ok::<Instant, String>(Instant::now())
        });
        let t = Instant::now();
        members[leader]
            .delete(&leader_node, None)
            .await
            .map_err(e("delete"))?;
        let at = tokio::time::timeout(Duration::from_secs(30), decided)
            .await
            .map_err(|_| "successor never decided".to_string())?
            .map_err(e("task"))??;
        if round >= w {
            samples.push(at - t);
        }
        queue.push_back((leader, join(members[leader].clone(), base.clone()).await?));
    }
    out.int("n", n as i64).latency(&stats(&samples));
    Ok(())
}

// ---------------------------------------------------------------------------------------------

fn run(a: Args) -> Res<String> {
    let mut out = Out::default();
    out.str("impl", &a.imp).str("scenario", &a.scenario);
    let scenario = a.scenario.clone();
    let blocking = scenario == "uncontended_blocking";
    match (a.imp.as_str(), scenario.as_str()) {
        ("rust", "counter_threads") => rust_counter(&a, &mut out, false)?,
        ("rust", "counter_clients") => rust_counter(&a, &mut out, true)?,
        ("rust", "uncontended_blocking") => rust_uncontended_blocking(&a, &mut out)?,
        ("rust" | "floor", _) => {
            let task = zkrecipes::runtime::spawn(async move {
                let mut out = out;
                match (a.imp.as_str(), a.scenario.as_str()) {
                    ("rust", "uncontended") => rust_uncontended(&a, &mut out).await?,
                    ("rust", "handshake") => rust_handshake(&a, &mut out).await?,
                    ("rust", "contended") => rust_contended(&a, &mut out).await?,
                    ("rust", "wakeups") => rust_wakeups(&a, &mut out).await?,
                    ("rust", "counter_clients_async") => rust_counter_async(&a, &mut out).await?,
                    ("rust", "inproc") => rust_inproc(&a, &mut out).await?,
                    ("rust", "failover") => rust_failover(&a, &mut out).await?,
                    ("rust", "memory") => rust_memory(&a, &mut out).await?,
                    ("rust", "discovery") => rust_discovery(&a, &mut out).await?,
                    ("floor", "uncontended") => floor_uncontended(&a, &mut out).await?,
                    ("floor", "rtt") => floor_rtt(&a, &mut out).await?,
                    ("floor", "counter_threads") => floor_counter(&a, &mut out, false).await?,
                    ("floor", "counter_clients") => floor_counter(&a, &mut out, true).await?,
                    ("floor", "failover") => floor_failover(&a, &mut out).await?,
                    ("floor", "counter_chain") => floor_counter_chain(&a, &mut out).await?,
                    ("floor", "counter_blind") => floor_counter_blind(&a, &mut out).await?,
                    (i, s) => return Err(format!("scenario {s} is not implemented for impl {i}")),
                }
                Ok::<Out, String>(out)
            });
            out = zkrecipes::runtime::block_on(task).map_err(e("scenario task"))??;
        }
        (i, _) => return Err(format!("this driver has impls rust and floor, not {i}")),
    }
    let version = match out.0.get("impl").map(String::as_str) {
        Some("\"floor\"") => "zookeeper-client 0.11.2 (vendored)".to_string(),
        _ if blocking => format!("zkrecipes {} (Rust, blocking API)", zkrecipes::VERSION),
        _ => format!("zkrecipes {} (Rust, async API)", zkrecipes::VERSION),
    };
    out.str("version", &version);
    Ok(out.line())
}

fn main() {
    let result = parse_args().and_then(run);
    match result {
        Ok(line) => {
            println!("{line}");
            // Background tasks of the shared runtime must not hold the exit.
            std::process::exit(0);
        }
        Err(err) => {
            eprintln!("bench-driver: {err}");
            std::process::exit(1);
        }
    }
}
