//! The Rust worker of the cross-runtime interop runner (`tests/interop/run`).
//!
//! `cargo run -p zkrecipes --example interop_worker -- --role ROLE --connect HOST:PORT --path P
//!     --iterations N --id ID --log FILE [--go FILE] [--expect K] [--peers DIR] [--max-leases M]`
//!
//! ROLE: mutex, cohort, counter, latch, selector, sharedcount, rwlock, semaphore, semcount, queue,
//! simplequeue, doublebarrier, group, gzip, cache, watch, discovery, partition, lease, putmulti,
//! sharder, values, ensemble (workloads), or reconfig, counter-get, sharedcount-get, values-get, children, acls,
//! discovery-golden, sharder-init, sharder-check (one-shot steps for the runner).
//!
//! Log lines (one file per worker, merged by the runner):
//! * mutex:   `start rust ID TOKEN NS` / `end rust ID TOKEN NS` around each critical section,
//!   NS from CLOCK_MONOTONIC (comparable with every other worker on the machine), TOKEN the
//!   hold's fencing token (the lock node's czxid);
//! * cohort:  like mutex, from 4 threads sharing one mutex object with cohort handoffs (8 / 5
//!   ms), N sections in all; TOKEN is the wide fencing token (`zxid << 32 | handoff`);
//! * counter: `inc rust ID VALUE` per successful `add_and_get(1)`, `fail rust ID` otherwise;
//! * latch, selector: `participants rust ID id,...` once every runtime is listed, then per term
//!   `lead rust ID NS` / `unlead rust ID NS`;
//! * sharedcount: `inc rust ID VALUE` per successful `try_set_count` (a CAS loop; `retries rust
//!   ID K` counts the stale attempts);
//! * rwlock, semaphore: `start rust ID TAG NS` / `end rust ID TAG NS` around each section, TAG
//!   `read`/`write` (rwlock) or `lease` (semaphore). The first section is held until another
//!   worker has entered its own (a file per worker in `--peers DIR`), so that sharing is shown;
//! * cache: a CuratorCache on P; creates N nodes `P/ID-i`, waits until every runtime's are
//!   cached, then `node rust ID PATH DATA` per cached child and `events rust ID NET SIZE`
//!   (Σcreated − Σdeleted and the cache's size);
//! * watch: a recursive PersistentWatcher on P; creates N nodes `P/ID-i` and sets each once,
//!   waits until it heard every runtime's creates and sets, then `heard rust ID TYPE PATH` each;
//! * discovery: a ServiceCache and a ServiceProvider per runtime's service under P; registers
//!   this worker's instances under service `rust` (`registered rust SERVICE/ID CANON`), waits
//!   until the caches hold `--expect` instances, then `found rust SERVICE/ID CANON` per cached
//!   instance, `picked rust SERVICE/ID` per pick (2 × the service's instances) and `usable rust
//!   SERVICE ids` (see tests/interop/README.md; CANON is the instance's fields as one JSON object);
//! * partition, lease: kazoo's SetPartitioner and MultiNonBlockingLease, the loops of
//!   `py_worker.py` and `kazoo_worker.py` (tests/interop/README.md);
//! * putmulti: a DistributedQueue (lock path P-locks); puts items `rust:i` three at a time with
//!   put_multi, then takes until idle: `got rust ID ITEM TOKEN` per message;
//! * sharder: a QueueSharder (P/queues, leader P/leader, lock paths P-locks/SHARD, threshold 3,
//!   checks every 200 ms, at most 4 shards); puts `rust:i` through get_queue, then takes from
//!   every shard until idle: `got rust ID ITEM TOKEN`, then `shards rust ID K`;
//! * values: a SharedValue at P/value, DistributedAtomicValues at P/atomic and P/atomic-set
//!   (the latter promoted to a lock at P/atomic-lock) and a CachedAtomicLong at P/ids, the
//!   workload of `Values.java` (see [`Values`]): `set rust ID PRE POST PROMOTED`, `value rust ID
//!   V`, `atomic rust ID V`, `id rust ID V`, then `retries rust ID VALUE ATOMIC SET ID`;
//! * ensemble: connected with `track_ensemble` to a reconfigurable ensemble: `session rust ID
//!   SID` before the barrier; then mutex sections on P stamped like mutex while the runner
//!   changes the ensemble, until the file `GO.changed` exists (`changed rust ID K` after K
//!   sections), then N more; then `session rust ID SID` again and `hosts rust ID CONNECT` (the
//!   client's current connect string);
//! * all:     `done rust ID COUNT` at the end.
//!
//! `reconfig` (`--superuser USER:PASSWORD`, `--add LINE` and/or `--remove ID`): one incremental
//! reconfig as the digest superuser; prints the new configuration's members' connect string.
//!
//! `discovery-golden` (P a directory of the bytes Curator 5.9 wrote, `NAME.compat.json` /
//! `NAME.full.json`): `golden NAME ok` when `ServiceInstance::from_json(bytes).to_json(compat)`
//! and a fresh instance made of the decoded fields (no remembered text) both write those bytes
//! again, else `golden NAME roundtrip|encode|decode ...`.
//!
//! `counter-get`/`sharedcount-get` print the value on stdout, `values-get` `VALUE ATOMIC SET
//! IDS` (the four nodes of the values role); `children` how many nodes remain
//! under P; `sharder-init` makes the first shard P/queues/queue-<UUID> (so that the sharders,
//! starting together, do not each make a first one); `sharder-check` prints `SHARDS ITEMS
//! LOCKS` (shards under P/queues, items left in them, lock nodes left under P-locks/*); `acls` prints `NAME SCHEME:ID,...` (the ACL) of every child of P and deletes it.
//!
//! Secured servers (the `tls` scenario): `--tls-ca F --tls-cert F --tls-key F` connect over
//! mutual TLS, `--sasl-user U --sasl-password P` authenticate with SASL DIGEST-MD5 at every
//! connection; `--whoami DIR` then creates `DIR/ID` with CREATOR_ALL_ACL, so that its ACL names
//! the identities the session authenticated as (`sasl:U`, `x509:CN=...`), read by `acls`.

use std::io::Write;
use std::time::Duration;

use std::sync::{Arc, Condvar, Mutex};

use zkrecipes::atomic::{
    CachedAtomicLong, DistributedAtomicLong, DistributedAtomicValue, PromotedToLock, SharedCount,
    SharedValue,
};
use zkrecipes::client::{CreateMode, CreateOptions};
use zkrecipes::leader::{LeaderLatch, LeaderSelector};
use zkrecipes::lock::{
    CohortOptions, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2,
};
use zkrecipes::{Acl, Client, Owner, SaslOptions, TlsOptions};

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}
extern "C" {
    fn clock_gettime(clk: i32, tp: *mut Timespec) -> i32;
}
const CLOCK_MONOTONIC: i32 = 1;

fn mono_ns() -> i128 {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer to a timespec of the platform's layout (64-bit Linux).
    let rc = unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime failed");
    ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
}

/// Marks this worker as inside its first section (`DIR/ID`) and waits until another worker's
/// mark is there too: each one marks after stamping `start`, so whoever stamps `end` first
/// overlapped someone. Gives up after 30 s (the runner's check then fails).
/// The semcount scenario: an InterProcessSemaphoreV2 whose limit is the SharedCount at P-count
/// (1 at first). N sections (`lease1`) at limit 1; then every worker marks PEERS/p1/ID. The
/// Rust worker waits for all `expect` marks, logs `raise rust ID NS`, sets the count to 3, takes
/// a lease (its first `lease2` section), marks PEERS/raised and holds the lease until every
/// other worker marked PEERS/p2 (each does once inside its first `lease2` section, taken while
/// ours is held: only a semaphore that followed the count admits it). Then N - 1 more sections.
fn semcount(
    client: &Client,
    path: &str,
    id: &str,
    iterations: u64,
    expect: usize,
    peers: &str,
    log: &mut impl Write,
) {
    let count = SharedCount::new(client, &format!("{path}-count"), 1).expect("shared count");
    count.start_blocking().expect("shared count start");
    let sem = InterProcessSemaphoreV2::with_count(client, path, &count).expect("semaphore");
    let dir = std::path::Path::new(peers);
    let marks = |d: &str| std::fs::read_dir(dir.join(d)).map_or(0, |r| r.count());
    let section = |tag: &str, hold: &dyn Fn(), log: &mut dyn Write| {
        let mut leases = sem
            .acquire_blocking(1, None)
            .expect("acquire")
            .expect("a lease without timeout");
        writeln!(log, "start rust {id} {tag} {}", mono_ns()).unwrap();
        log.flush().unwrap();
        hold();
        std::thread::sleep(Duration::from_millis(1));
        writeln!(log, "end rust {id} {tag} {}", mono_ns()).unwrap();
        log.flush().unwrap();
        leases
            .pop()
            .unwrap()
            .release_blocking()
            .expect("return lease");
    };
    for _ in 0..iterations {
        section("lease1", &|| {}, log);
    }
    for d in ["p1", "p2"] {
        std::fs::create_dir_all(dir.join(d)).expect("peers dir");
    }
    std::fs::write(dir.join("p1").join(id), b"").expect("phase mark");
    let t = std::time::Instant::now();
    while marks("p1") < expect {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "not every worker finished phase 1"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    writeln!(log, "raise rust {id} {}", mono_ns()).unwrap();
    log.flush().unwrap();
    count.set_count_blocking(3).expect("raise the count");
    let hold = || {
        std::fs::write(dir.join("raised"), b"").expect("raised mark");
        let t = std::time::Instant::now();
        while marks("p2") < expect - 1 && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    section("lease2", &hold, log);
    for _ in 1..iterations {
        section("lease2", &|| {}, log);
    }
    writeln!(log, "done rust {id} {}", 2 * iterations).unwrap();
    count.close();
}

fn wait_for_peer(dir: &str, id: &str) {
    if dir.is_empty() {
        return;
    }
    std::fs::write(std::path::Path::new(dir).join(id), b"").expect("peer mark");
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_secs(30) {
        let others = std::fs::read_dir(dir)
            .expect("peers dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy() != id)
            .count();
        if others > 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The queue scenarios: our consumers start once Curator's has taken one of our items
/// (GO.ROLE.java-took; or after 30 s), so the crossing check never depends on who is faster.
fn wait_for_curator_consumer(go: &str, role: &str) {
    let marker = format!("{go}.{role}.java-took");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !go.is_empty()
        && !std::path::Path::new(&marker).exists()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The start barrier's poll: every worker waits for the runner's go file (about 120 workers at
/// once; 1 ms polls starved the servers on 2 cores).
const BARRIER_POLL: Duration = Duration::from_millis(20);

fn wait_for_file(go: &str) {
    while !go.is_empty() && !std::path::Path::new(go).exists() {
        std::thread::sleep(BARRIER_POLL);
    }
}

fn main() {
    let mut role = String::new();
    let mut connect = String::new();
    let mut path = String::new();
    let mut iterations: u64 = 20;
    let mut id = String::from("rust");
    let mut log_path = String::new();
    let mut go = String::new();
    let mut expect: usize = 5;
    let mut peers = String::new();
    let mut max_leases: usize = 2;
    let (mut tls_ca, mut tls_cert, mut tls_key) = (String::new(), String::new(), String::new());
    let (mut sasl_user, mut sasl_password, mut whoami) =
        (String::new(), String::new(), String::new());
    let (mut superuser, mut add, mut remove) = (String::new(), Vec::new(), Vec::new());
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--role" => role = v,
            "--connect" => connect = v,
            "--path" => path = v,
            "--iterations" => iterations = v.parse().expect("--iterations N"),
            "--id" => id = v,
            "--log" => log_path = v,
            "--go" => go = v,
            "--expect" => expect = v.parse().expect("--expect K"),
            "--peers" => peers = v,
            "--max-leases" => max_leases = v.parse().expect("--max-leases M"),
            "--tls-ca" => tls_ca = v,
            "--tls-cert" => tls_cert = v,
            "--tls-key" => tls_key = v,
            "--sasl-user" => sasl_user = v,
            "--sasl-password" => sasl_password = v,
            "--whoami" => whoami = v,
            "--superuser" => superuser = v,
            "--add" => add.push(v),
            "--remove" => remove.push(v.parse::<u64>().expect("--remove ID")),
            _ => panic!("unknown option {a}"),
        }
    }
    let mut builder = Client::builder(connect.as_str())
        .session_timeout(Duration::from_secs(30))
        // Every scenario's workers connect at once on a 2-core machine (a 15 s connect timed out
        // in CI): a minute for every connection, within the runner's 90 s ready barrier.
        .connection_timeout(Duration::from_secs(60))
        // ensemble: follow the members as they change (Curator's EnsembleTracker).
        .track_ensemble(role == "ensemble");
    if !superuser.is_empty() {
        builder = builder.auth("digest", superuser.as_bytes().to_vec());
    }
    if !tls_ca.is_empty() {
        let mut tls = TlsOptions::new().ca(tls_ca.as_str());
        if !tls_cert.is_empty() {
            tls = tls.identity(tls_cert.as_str(), tls_key.as_str());
        }
        builder = builder.tls(tls);
    }
    if !sasl_user.is_empty() {
        builder = builder.sasl(SaslOptions::digest_md5(sasl_user, sasl_password));
    }
    // The error itself on one line (the runner shows a failed worker's stderr tail, which a
    // panic's backtrace would fill).
    let client = builder.connect_blocking().unwrap_or_else(|e| {
        eprintln!("interop_worker: connect to {connect} failed: {e}");
        std::process::exit(2)
    });
    if !whoami.is_empty() {
        // A node whose ACL is the session's own identities (CREATOR_ALL_ACL, scheme `auth`).
        client
            .create_with_acl_blocking(
                &format!("{whoami}/{id}"),
                b"",
                CreateOptions::new(CreateMode::Persistent).parents(),
                &Acl::creator_all(),
            )
            .expect("whoami create");
    }
    let mut log: Box<dyn Write> = if log_path.is_empty() {
        Box::new(std::io::sink())
    } else {
        Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log_path)
                .expect("open log"),
        )
    };
    // latch: join first and wait until every runtime's participant is listed, before the barrier.
    let mut first_latch = None;
    if role == "latch" {
        let l = LeaderLatch::new(&client, &path, &id).expect("latch");
        l.start_blocking().expect("latch start");
        let ids = participant_ids(expect, || l.get_participants_blocking());
        writeln!(log, "participants rust {id} {}", ids.join(",")).unwrap();
        first_latch = Some(l);
    }
    // selector: queue (autoRequeue) and wait until every runtime's participant is listed; the
    // first leader waits for the go file inside take_leadership.
    let terms = Arc::new((Mutex::new(0u64), Condvar::new()));
    let mut selector = None;
    if role == "selector" {
        let (rounds, go2, id2, log2, terms2) = (
            iterations,
            go.clone(),
            id.clone(),
            log_path.clone(),
            terms.clone(),
        );
        let s = LeaderSelector::new_blocking(&client, &path, &id, move |ctx| {
            wait_for_file(&go2);
            let (count, cv) = &*terms2;
            if *count.lock().unwrap() >= rounds {
                return; // our share is done; main closes the selector
            }
            let mut log = std::fs::OpenOptions::new()
                .append(true)
                .open(&log2)
                .expect("open log");
            writeln!(log, "lead rust {id2} {}", mono_ns()).unwrap();
            std::thread::sleep(Duration::from_millis(10));
            assert!(!ctx.is_cancelled(), "leadership cancelled while leading");
            writeln!(log, "unlead rust {id2} {}", mono_ns()).unwrap();
            *count.lock().unwrap() += 1;
            cv.notify_all();
        })
        .expect("selector");
        s.auto_requeue();
        s.start().expect("selector start");
        let ids = participant_ids(expect, || s.get_participants_blocking());
        writeln!(log, "participants rust {id} {}", ids.join(",")).unwrap();
        selector = Some(s);
    }
    // cache: a CuratorCache on the path, counting its events, loaded before the barrier.
    let net = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let mut cache = None;
    if role == "cache" {
        let c = zkrecipes::cache::CuratorCache::new(&client, &path).expect("cache");
        let n = net.clone();
        c.listen(move |e| {
            use zkrecipes::cache::CacheEventType::{Created, Deleted};
            let d = match e.kind {
                Created => 1,
                Deleted => -1,
                _ => 0,
            };
            n.fetch_add(d, std::sync::atomic::Ordering::SeqCst);
        });
        c.start_blocking().expect("cache start");
        assert!(c
            .await_initialized_blocking(Some(Duration::from_secs(60)))
            .expect("cache load"));
        cache = Some(c);
    }
    // watch: a recursive PersistentWatcher on the path, set before the barrier.
    let heard = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let mut watcher = None;
    if role == "watch" {
        let w = zkrecipes::client::PersistentWatcher::new(&client, &path, true).expect("watcher");
        let h = heard.clone();
        let root = path.clone();
        w.listen(move |e| {
            if let Some(p) = e.path().filter(|p| *p != root) {
                h.lock()
                    .unwrap()
                    .push((e.name().to_string(), p.to_string()));
            }
        });
        w.start_blocking().expect("watcher start");
        watcher = Some(w);
    }
    // discovery: a cache and a provider per runtime's service, started before the barrier.
    let mut discovery = None;
    if role == "discovery" {
        discovery = Some(DiscoverySide::start(&client, &path));
    }
    // values: every object started and every node initialized before the barrier.
    let values = (role == "values").then(|| Values::new(&client, &path));
    if role == "ensemble" {
        writeln!(log, "session rust {id} {}", client.session_id()).unwrap();
    }
    // Start barrier: say we are connected, then wait for the runner's go file, so that every
    // runtime (the JVM starts slowest) contends from the first operation.
    if !go.is_empty() {
        writeln!(log, "ready rust {id}").unwrap();
        log.flush().unwrap();
        wait_for_file(&go);
    }
    match role.as_str() {
        "mutex" => {
            let m = InterProcessMutex::new(&client, &path).expect("mutex");
            let me = Owner::current_thread();
            for _ in 0..iterations {
                assert!(m.acquire_blocking(None).expect("acquire"));
                let token = m.fencing_token(me).expect("a hold has a fencing token");
                writeln!(log, "start rust {id} {token} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                std::thread::sleep(Duration::from_micros(200));
                writeln!(log, "end rust {id} {token} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                m.release_blocking().expect("release");
            }
            writeln!(log, "done rust {id} {iterations}").unwrap();
        }
        "ensemble" => {
            // Sections until the runner has changed the ensemble (GO.changed), then N more.
            let m = InterProcessMutex::new(&client, &path).expect("mutex");
            let me = Owner::current_thread();
            let changed = format!("{go}.changed");
            let (mut count, mut after) = (0u64, None);
            while after.map_or(true, |k| count < k + iterations) {
                if after.is_none() && std::path::Path::new(&changed).exists() {
                    writeln!(log, "changed rust {id} {count}").unwrap();
                    after = Some(count);
                }
                assert!(m.acquire_blocking(None).expect("acquire"));
                let token = m.fencing_token(me).expect("a hold has a fencing token");
                writeln!(log, "start rust {id} {token} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                std::thread::sleep(Duration::from_micros(200));
                writeln!(log, "end rust {id} {token} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                m.release_blocking().expect("release");
                count += 1;
            }
            writeln!(log, "session rust {id} {}", client.session_id()).unwrap();
            writeln!(log, "hosts rust {id} {}", client.current_connect_string()).unwrap();
            writeln!(log, "done rust {id} {count}").unwrap();
        }
        "reconfig" => {
            let change = zkrecipes::Reconfig::incremental()
                .joining(add.clone())
                .leaving(remove.clone());
            let config = client.reconfig_blocking(change).expect("reconfig");
            println!("{}", config.connect_string());
        }
        "cohort" => {
            // Four threads of this process on one mutex object with cohort handoffs: N holds
            // in all, each logged with its wide fencing token (zxid << 32 | handoff).
            let m = InterProcessMutex::new(&client, &path)
                .expect("mutex")
                .with_cohort(CohortOptions {
                    max_handoffs: 8,
                    max_hold: Duration::from_millis(5),
                })
                .expect("cohort");
            let lines = Arc::new(Mutex::new(Vec::new()));
            let threads: Vec<_> = (0..4)
                .map(|k| {
                    let (m, lines, id) = (m.clone(), lines.clone(), id.clone());
                    let mine = iterations / 4 + u64::from(k < iterations % 4);
                    std::thread::spawn(move || {
                        let me = Owner::current_thread();
                        for _ in 0..mine {
                            assert!(m.acquire_blocking(None).expect("acquire"));
                            let token = m.fencing_token_wide(me).expect("a token").wide();
                            let start = mono_ns();
                            std::thread::sleep(Duration::from_micros(200));
                            let end = mono_ns();
                            // Stamped inside the hold; written in one piece.
                            lines.lock().unwrap().push(format!(
                                "start rust {id} {token} {start}\nend rust {id} {token} {end}\n"
                            ));
                            m.release_blocking().expect("release");
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().expect("a cohort thread");
            }
            for l in lines.lock().unwrap().iter() {
                log.write_all(l.as_bytes()).unwrap();
            }
            writeln!(log, "done rust {id} {iterations}").unwrap();
        }
        "counter" => {
            let c = DistributedAtomicLong::new(&client, &path, None, None).expect("counter");
            let mut ok = 0u64;
            for _ in 0..iterations {
                match c.add_and_get_blocking(1, Some(Duration::from_secs(30))) {
                    Ok(v) => {
                        ok += 1;
                        writeln!(log, "inc rust {id} {v}").unwrap();
                    }
                    Err(e) => writeln!(log, "fail rust {id} {e}").unwrap(),
                }
            }
            writeln!(log, "done rust {id} {ok}").unwrap();
        }
        "latch" => {
            for round in 0..iterations {
                let l = match (round, first_latch.take()) {
                    (0, Some(l)) => l,
                    _ => {
                        let l = LeaderLatch::new(&client, &path, &id).expect("latch");
                        l.start_blocking().expect("latch start");
                        l
                    }
                };
                assert!(
                    l.await_leadership_blocking(Some(Duration::from_secs(60)))
                        .expect("await"),
                    "never led"
                );
                writeln!(log, "lead rust {id} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                std::thread::sleep(Duration::from_millis(20));
                assert!(l.has_leadership(), "lost leadership while leading");
                writeln!(log, "unlead rust {id} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                l.close_blocking().expect("latch close");
            }
            writeln!(log, "done rust {id} {iterations}").unwrap();
        }
        "selector" => {
            let s = selector.take().expect("selector");
            let (count, cv) = &*terms;
            let mut n = count.lock().unwrap();
            while *n < iterations {
                let (g, t) = cv.wait_timeout(n, Duration::from_secs(120)).expect("terms");
                n = g;
                assert!(!t.timed_out() || *n >= iterations, "led only {} times", *n);
            }
            let led = *n;
            drop(n);
            s.close_blocking().expect("selector close");
            writeln!(log, "done rust {id} {led}").unwrap();
        }
        "sharedcount" => {
            let c = SharedCount::new(&client, &path, 0).expect("shared count");
            c.start_blocking().expect("shared count start");
            let (mut ok, mut retries) = (0u64, 0u64);
            for _ in 0..iterations {
                loop {
                    let v = c.get_versioned_value().expect("a valid count");
                    if c.try_set_count_blocking(&v, v.value + 1)
                        .expect("try_set_count")
                    {
                        ok += 1;
                        writeln!(log, "inc rust {id} {}", v.value + 1).unwrap();
                        break;
                    }
                    retries += 1;
                }
            }
            writeln!(log, "retries rust {id} {retries}").unwrap();
            writeln!(log, "done rust {id} {ok}").unwrap();
            c.close();
        }
        "rwlock" => {
            let rw = InterProcessReadWriteLock::new(&client, &path).expect("rwlock");
            for i in 0..iterations {
                let (lock, tag) = if i % 3 == 1 {
                    (rw.write_lock(), "write")
                } else {
                    (rw.read_lock(), "read")
                };
                assert!(lock.acquire_blocking(None).expect("acquire"));
                writeln!(log, "start rust {id} {tag} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                if i == 0 {
                    wait_for_peer(&peers, &id);
                }
                std::thread::sleep(Duration::from_millis(if tag == "read" { 2 } else { 1 }));
                writeln!(log, "end rust {id} {tag} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                lock.release_blocking().expect("release");
            }
            writeln!(log, "done rust {id} {iterations}").unwrap();
        }
        "semaphore" => {
            let sem = InterProcessSemaphoreV2::new(&client, &path, max_leases).expect("semaphore");
            for i in 0..iterations {
                let mut leases = sem
                    .acquire_blocking(1, None)
                    .expect("acquire")
                    .expect("a lease without timeout");
                writeln!(log, "start rust {id} lease {}", mono_ns()).unwrap();
                log.flush().unwrap();
                if i == 0 {
                    wait_for_peer(&peers, &id);
                }
                std::thread::sleep(Duration::from_millis(1));
                writeln!(log, "end rust {id} lease {}", mono_ns()).unwrap();
                log.flush().unwrap();
                leases
                    .pop()
                    .unwrap()
                    .release_blocking()
                    .expect("return lease");
            }
            writeln!(log, "done rust {id} {iterations}").unwrap();
        }
        "semcount" => semcount(&client, &path, &id, iterations, expect, &peers, &mut log),
        "group" => group(&client, &path, &id, expect, &peers, &mut log),
        "gzip" => gzip(&client, &path, &id, expect, &mut log),
        "discovery" => discovery.take().expect("discovery").run(
            &client,
            &id,
            iterations as usize,
            expect,
            &peers,
            &mut log,
        ),
        "discovery-golden" => discovery_golden(&path),
        "partition" => partition(&client, &path, &id, iterations, expect, &peers, &mut log),
        "lease" => lease(&client, &path, &id, iterations, &mut log),
        "cache" => {
            // Write our share, then wait until the cache holds every runtime's share.
            let c = cache.take().expect("cache");
            for i in 0..iterations {
                client
                    .create_blocking(
                        &format!("{path}/{id}-{i}"),
                        id.as_bytes(),
                        zkrecipes::CreateOptions::default().parents(),
                    )
                    .expect("create");
            }
            let want = expect * iterations as usize + 1;
            wait_count(want, || c.size());
            let children: Vec<_> = c.snapshot().iter().filter(|n| n.path != path).collect();
            for n in &children {
                let data =
                    String::from_utf8_lossy(n.data.as_deref().unwrap_or_default()).to_string();
                writeln!(log, "node rust {id} {} {data}", n.path).unwrap();
            }
            // Σcreated − Σdeleted, read once the events of the last change were delivered.
            let t = std::time::Instant::now();
            while net.load(std::sync::atomic::Ordering::SeqCst) != c.size() as i64
                && t.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            let events = net.load(std::sync::atomic::Ordering::SeqCst);
            writeln!(log, "events rust {id} {events} {}", c.size()).unwrap();
            writeln!(log, "done rust {id} {}", children.len()).unwrap();
            c.close();
        }
        "watch" => {
            // Create our share and set each node's data once, then wait until the watcher has
            // heard every runtime's creates and sets.
            let w = watcher.take().expect("watcher");
            for i in 0..iterations {
                let p = format!("{path}/{id}-{i}");
                client
                    .create_blocking(&p, b"", zkrecipes::CreateOptions::default().parents())
                    .expect("create");
                client
                    .set_data_blocking(&p, id.as_bytes(), None)
                    .expect("set");
            }
            let want = 2 * expect * iterations as usize;
            wait_count(want, || heard.lock().unwrap().len());
            w.close();
            let heard = heard.lock().unwrap().clone();
            for (kind, p) in &heard {
                writeln!(log, "heard rust {id} {kind} {p}").unwrap();
            }
            writeln!(log, "done rust {id} {}", heard.len()).unwrap();
        }
        "values" => values.expect("values").run(&id, iterations, &mut log),
        "values-get" => println!("{}", Values::read(&client, &path)),
        "sharedcount-get" => {
            let c = SharedCount::new(&client, &path, 0).expect("shared count");
            c.start_blocking().expect("shared count start");
            println!("{}", c.get_count().expect("a valid count"));
            c.close();
        }
        "children" => {
            // Leftover check: how many nodes remain under `path` (0 if it is gone, as an empty
            // container may be).
            match client.get_children_blocking(&path) {
                Ok(c) => println!("{}", c.len()),
                Err(e) if e.kind() == zkrecipes::ErrorKind::NoNode => println!("0"),
                Err(e) => panic!("get_children {path}: {e}"),
            }
        }
        "acls" => {
            // The ACL of every child of `path` (the --whoami nodes), then delete it.
            let mut names = client.get_children_blocking(&path).expect("children");
            names.sort();
            for name in names {
                let child = format!("{path}/{name}");
                let (acl, _) = client.get_acl_blocking(&child).expect("get_acl");
                let ids: Vec<String> = acl
                    .iter()
                    .map(|a| format!("{}:{}", a.scheme, a.id))
                    .collect();
                println!("{name} {}", ids.join(","));
                client
                    .delete_blocking(&child, Default::default())
                    .expect("delete");
            }
        }
        "counter-get" => {
            let c = DistributedAtomicLong::new(&client, &path, None, None).expect("counter");
            println!("{}", c.get_blocking().expect("get").post_value);
        }
        "queue" => {
            // Put N items, then consume (exactly once, lock path P-locks) until idle for 3 s.
            let options =
                zkrecipes::queue::QueueOptions::default().lock_path(format!("{path}-locks"));
            let q =
                zkrecipes::queue::DistributedQueue::new(&client, &path, options).expect("queue");
            for i in 0..iterations {
                assert!(q
                    .put_blocking(format!("rust:{i}").as_bytes(), None)
                    .expect("put"));
            }
            wait_for_curator_consumer(&go, &role);
            let mut got = 0u64;
            while let Some(item) = q.take_blocking(Some(Duration::from_secs(3))).expect("take") {
                std::thread::sleep(Duration::from_millis(2));
                let data = String::from_utf8_lossy(item.data()).into_owned();
                let token = item.fencing_token();
                item.done_blocking().expect("done");
                writeln!(log, "got rust {id} {data} {token}").unwrap();
                got += 1;
            }
            writeln!(log, "done rust {id} {got}").unwrap();
        }
        "putmulti" => {
            // Put N items three to a node (put_multi), then consume until idle for 3 s.
            let options =
                zkrecipes::queue::QueueOptions::default().lock_path(format!("{path}-locks"));
            let q =
                zkrecipes::queue::DistributedQueue::new(&client, &path, options).expect("queue");
            let items: Vec<String> = (0..iterations).map(|i| format!("rust:{i}")).collect();
            for batch in items.chunks(3) {
                let batch: Vec<&[u8]> = batch.iter().map(|s| s.as_bytes()).collect();
                assert!(q.put_multi_blocking(&batch, None).expect("put_multi"));
            }
            wait_for_curator_consumer(&go, &role);
            let mut got = 0u64;
            while let Some(item) = q.take_blocking(Some(Duration::from_secs(3))).expect("take") {
                std::thread::sleep(Duration::from_millis(2));
                let token = item.fencing_token();
                let messages: Vec<String> = item
                    .messages()
                    .iter()
                    .map(|m| String::from_utf8_lossy(m).into_owned())
                    .collect();
                item.done_blocking().expect("done");
                for m in messages {
                    writeln!(log, "got rust {id} {m} {token}").unwrap();
                    got += 1;
                }
            }
            writeln!(log, "done rust {id} {got}").unwrap();
        }
        "sharder" => {
            use zkrecipes::queue::{QueueOptions, QueueSharder, SharderOptions, SharderPolicies};
            let options = SharderOptions {
                queue: QueueOptions::default().lock_path(format!("{path}-locks")),
                policies: SharderPolicies {
                    new_queue_threshold: 3,
                    threshold_check: Duration::from_millis(200),
                    max_queues: 4,
                },
                ..SharderOptions::default()
            };
            let s = QueueSharder::new(
                &client,
                &format!("{path}/queues"),
                &format!("{path}/leader"),
                options,
            )
            .expect("sharder");
            s.start_blocking().expect("sharder start");
            for i in 0..iterations {
                let q = s.get_queue().expect("get_queue");
                assert!(q
                    .put_blocking(format!("rust:{i}").as_bytes(), None)
                    .expect("put"));
                std::thread::sleep(Duration::from_millis(10));
            }
            wait_for_curator_consumer(&go, &role);
            let mut got = 0u64;
            while let Some(item) = s.take_blocking(Some(Duration::from_secs(3))).expect("take") {
                let data = String::from_utf8_lossy(item.data()).into_owned();
                let token = item.fencing_token();
                item.done_blocking().expect("done");
                writeln!(log, "got rust {id} {data} {token}").unwrap();
                got += 1;
            }
            writeln!(log, "shards rust {id} {}", s.shard_qty()).unwrap();
            s.close_blocking().expect("sharder close");
            writeln!(log, "done rust {id} {got}").unwrap();
        }
        "sharder-init" => {
            let shard = format!("{path}/queues/queue-{}", uuid::Uuid::new_v4());
            client
                .create_blocking(
                    &shard,
                    b"",
                    CreateOptions::new(CreateMode::Persistent).parents(),
                )
                .expect("first shard");
        }
        "sharder-check" => {
            let children = |p: &str| match client.get_children_blocking(p) {
                Ok(c) => c,
                Err(e) if e.kind() == zkrecipes::ErrorKind::NoNode => Vec::new(),
                Err(e) => panic!("get_children {p}: {e}"),
            };
            let shards = children(&format!("{path}/queues"));
            let items: usize = shards
                .iter()
                .map(|s| children(&format!("{path}/queues/{s}")).len())
                .sum();
            let locks: usize = children(&format!("{path}-locks"))
                .iter()
                .map(|s| children(&format!("{path}-locks/{s}")).len())
                .sum();
            println!("{} {items} {locks}", shards.len());
        }
        "simplequeue" => {
            let q = zkrecipes::queue::SimpleDistributedQueue::new(&client, &path).expect("queue");
            for i in 0..iterations {
                q.offer_blocking(format!("rust:{i}").as_bytes())
                    .expect("offer");
            }
            wait_for_curator_consumer(&go, &role);
            let mut got = 0u64;
            while let Some(d) = q.take_blocking(Some(Duration::from_secs(3))).expect("take") {
                writeln!(log, "got rust {id} {} 0", String::from_utf8_lossy(&d)).unwrap();
                got += 1;
            }
            writeln!(log, "done rust {id} {got}").unwrap();
        }
        "doublebarrier" => {
            let b = zkrecipes::barriers::DistributedDoubleBarrier::new(&client, &path, expect)
                .expect("double barrier");
            std::thread::sleep(Duration::from_millis((mono_ns() % 300) as u64));
            writeln!(log, "arrive rust {id} {}", mono_ns()).unwrap();
            log.flush().unwrap();
            assert!(b
                .enter_blocking(Some(Duration::from_secs(60)))
                .expect("enter"));
            writeln!(log, "entered rust {id} {}", mono_ns()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            writeln!(log, "leaving rust {id} {}", mono_ns()).unwrap();
            log.flush().unwrap();
            assert!(b
                .leave_blocking(Some(Duration::from_secs(60)))
                .expect("leave"));
            writeln!(log, "left rust {id} {}", mono_ns()).unwrap();
            writeln!(log, "done rust {id} 1").unwrap();
        }
        other => panic!("unknown role {other}"),
    }
    log.flush().unwrap();
    client.close_blocking();
}

/// The sorted participant ids, polled until `expect` are listed (at most 60 s).
fn participant_ids(
    expect: usize,
    get: impl Fn() -> zkrecipes::Result<Vec<zkrecipes::leader::Participant>>,
) -> Vec<String> {
    let t = std::time::Instant::now();
    loop {
        let mut ids: Vec<String> = get()
            .expect("participants")
            .into_iter()
            .map(|p| p.id)
            .collect();
        ids.sort();
        if ids.len() >= expect || t.elapsed() > Duration::from_secs(60) {
            return ids;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `f` every 20 ms for up to 60 s; whether it held.
fn poll(f: impl FnMut() -> bool) -> bool {
    poll_for(Duration::from_secs(60), f)
}

/// [`poll`] for up to `limit`.
fn poll_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = std::time::Instant::now();
    while t.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Polls `count` every 5 ms until it reaches `want`, giving up only after 60 s in which it did
/// not grow: a slow peer on a loaded machine (the long run's 120 workers on 2 CPUs) is still
/// waited for, a stuck one is not; the count last seen.
fn wait_count(want: usize, mut count: impl FnMut() -> usize) -> usize {
    let (mut seen, mut since) = (count(), std::time::Instant::now());
    while seen < want && since.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
        let now = count();
        if now != seen {
            (seen, since) = (now, std::time::Instant::now());
        }
    }
    seen
}

/// Whether `members` has `expect` members whose payloads are `P-<id>` for a `P` of `phases`.
fn members_at(
    members: &std::collections::BTreeMap<String, Vec<u8>>,
    expect: usize,
    phases: &[&str],
) -> bool {
    members.len() >= expect
        && members.iter().all(|(k, v)| {
            phases
                .iter()
                .any(|p| v.as_slice() == format!("{p}-{k}").as_bytes())
        })
}

/// The group scenario (see tests/interop/README.md): join with `p0-ID`, see every member, set
/// `p1-ID`, see every member's `p1`, mark `PEERS/ID`; the leaver (`rust-group`) leaves once
/// every mark is there, the others see it leave.
fn group(client: &Client, path: &str, id: &str, expect: usize, peers: &str, log: &mut dyn Write) {
    use zkrecipes::nodes::GroupMember;
    let m = GroupMember::new(client, path, id, format!("p0-{id}").as_bytes()).expect("member");
    m.start_blocking().expect("join");
    writeln!(log, "joined rust {id}").unwrap();
    let keys = |m: &GroupMember| {
        m.current_members()
            .into_keys()
            .collect::<Vec<_>>()
            .join(",")
    };
    if poll(|| members_at(&m.current_members(), expect, &["p0", "p1"])) {
        writeln!(log, "saw-all rust {id} {}", keys(&m)).unwrap();
    }
    m.set_this_data(format!("p1-{id}").as_bytes())
        .expect("set_this_data");
    if poll(|| members_at(&m.current_members(), expect, &["p1"])) {
        writeln!(log, "saw-data rust {id} {}", keys(&m)).unwrap();
    }
    log.flush().unwrap();
    std::fs::write(std::path::Path::new(peers).join(id), b"").expect("peer mark");
    if id == "rust-group" {
        poll(|| std::fs::read_dir(peers).map_or(0, |d| d.count()) >= expect);
        m.close_blocking().expect("leave");
        writeln!(log, "left rust {id}").unwrap();
    } else if poll(|| !m.current_members().contains_key("rust-group")) {
        writeln!(log, "saw-leave rust {id}").unwrap();
    }
    m.close_blocking().expect("close");
    writeln!(log, "done rust {id} 1").unwrap();
}

/// The payload every runtime writes compressed in the gzip scenario.
fn gzip_payload(id: &str) -> Vec<u8> {
    format!("gzip payload of {id} ").repeat(20).into_bytes()
}

/// The gzip scenario: write `PATH/ID` compressed, wait for every runtime's node, read each back
/// decompressed (`read rust ID OTHER ok|bad`), and compare the stored bytes with our own
/// compression of the same payload (`identical rust ID OTHER yes|no`): Curator's bytes too.
fn gzip(client: &Client, path: &str, id: &str, expect: usize, log: &mut dyn Write) {
    use zkrecipes::client::{compression, CreateMode, CreateOptions};
    let mine = format!("{path}/{id}");
    let options = CreateOptions::new(CreateMode::Persistent)
        .persistent_parents()
        .compressed();
    client
        .create_blocking(&mine, &gzip_payload(id), options)
        .expect("create compressed");
    writeln!(log, "wrote rust {id}").unwrap();
    poll(|| client.get_children_blocking(path).map_or(0, |c| c.len()) >= expect);
    let mut children = client.get_children_blocking(path).expect("children");
    children.sort();
    for other in &children {
        let p = format!("{path}/{other}");
        let ok = client
            .get_data_decompressed_blocking(&p)
            .is_ok_and(|(d, _)| d == gzip_payload(other));
        writeln!(
            log,
            "read rust {id} {other} {}",
            if ok { "ok" } else { "bad" }
        )
        .unwrap();
        let raw = client.get_data_blocking(&p).expect("raw").0;
        let same = raw == compression::gzip(&gzip_payload(other));
        writeln!(
            log,
            "identical rust {id} {other} {}",
            if same { "yes" } else { "no" }
        )
        .unwrap();
    }
    writeln!(log, "done rust {id} {}", children.len()).unwrap();
}

/// The discovery scenario's side: two discoveries on the base path (Curator's compatible JSON,
/// and one that writes `enabled`), and a cache and a round-robin provider per runtime's service.
struct DiscoverySide {
    compat: zkrecipes::discovery::ServiceDiscovery,
    full: zkrecipes::discovery::ServiceDiscovery,
    caches: Vec<(String, zkrecipes::discovery::ServiceCache)>,
    providers: Vec<(String, zkrecipes::discovery::ServiceProvider)>,
}

const DISCOVERY_SERVICES: [&str; 5] = ["java", "rust", "c", "python", "node"];

/// An instance's fields as one JSON object, the same in every worker (payload as JSON,
/// `payloadClass` the Java class, `uriSpec` the template).
fn canon(i: &zkrecipes::discovery::ServiceInstance) -> String {
    serde_json::json!({
        "name": i.name, "id": i.id, "address": i.address, "port": i.port, "sslPort": i.ssl_port,
        "payload": i.payload, "payloadClass": i.payload_class,
        "registrationTimeUTC": i.registration_time_utc, "serviceType": i.service_type.name(),
        "uriSpec": i.uri_spec.as_ref().map(|u| u.to_string()), "enabled": i.enabled,
    })
    .to_string()
}

impl DiscoverySide {
    fn start(client: &Client, base: &str) -> DiscoverySide {
        use zkrecipes::discovery::{
            ProviderStrategy, ServiceCache, ServiceDiscovery, ServiceProvider,
        };
        let compat = ServiceDiscovery::new(client, base).expect("discovery");
        let full = ServiceDiscovery::new(client, base).expect("discovery");
        full.set_write_enabled(true);
        let mut caches = Vec::new();
        let mut providers = Vec::new();
        for s in DISCOVERY_SERVICES {
            let c = ServiceCache::new(&compat, s).expect("service cache");
            c.start_blocking().expect("cache start");
            assert!(c
                .await_initialized_blocking(Some(Duration::from_secs(60)))
                .expect("cache load"));
            caches.push((s.to_string(), c));
            let p =
                ServiceProvider::new(&compat, s, ProviderStrategy::RoundRobin).expect("provider");
            p.start_blocking().expect("provider start");
            providers.push((s.to_string(), p));
        }
        DiscoverySide {
            compat,
            full,
            caches,
            providers,
        }
    }

    fn run(
        self,
        _client: &Client,
        id: &str,
        extras: usize,
        expect: usize,
        peers: &str,
        log: &mut dyn Write,
    ) {
        use zkrecipes::discovery::{ServiceInstance, ServiceType, UriSpec};
        let make = |iid: &str,
                    address: &str,
                    port: i32,
                    ssl: Option<i32>,
                    payload: Option<(serde_json::Value, &str)>,
                    ty: ServiceType,
                    uri: Option<&str>,
                    enabled: bool| {
            let mut i = ServiceInstance::new("rust");
            i.id = iid.to_string();
            i.address = Some(address.to_string());
            i.port = Some(port);
            i.ssl_port = ssl;
            if let Some((p, class)) = payload {
                i.payload = Some(p);
                i.payload_class = Some(class.to_string());
            }
            i.service_type = ty;
            i.uri_spec = uri.map(|u| UriSpec::new(u).expect("uri spec"));
            i.enabled = enabled;
            i
        };
        let map = serde_json::json!({
            "region": "eu-west", "weight": 1.5, "ratio": 2.5e-4, "big": 10_000_000_000i64,
            "tags": ["a", "b"], "nested": {"k": "v"}, "note": "say \"hi\"\t\u{e9}\u{fc}/\u{1}",
        });
        let lhm = "java.util.LinkedHashMap";
        let mut mine = vec![
            (
                make(
                    "rust-map",
                    "10.0.0.1",
                    8080,
                    None,
                    Some((map.clone(), lhm)),
                    ServiceType::Dynamic,
                    Some("{scheme}://{address}:{port}/map"),
                    true,
                ),
                false,
            ),
            (
                make(
                    "rust-pojo",
                    "10.0.0.2",
                    8081,
                    Some(8443),
                    Some((
                        serde_json::json!({"region": "us", "weight": 3, "primary": true}),
                        "zkrecipes.interop.Discovery$Details",
                    )),
                    ServiceType::Static,
                    Some("{scheme}://{address}:{ssl-port}/pojo"),
                    true,
                ),
                false,
            ),
            (
                make(
                    "rust-list",
                    "10.0.0.3",
                    8082,
                    None,
                    Some((
                        serde_json::json!(["x", 1, 2.5, true, null]),
                        "java.util.ArrayList",
                    )),
                    ServiceType::Dynamic,
                    Some("{scheme}://{address}:{port}/{[}list{]}"),
                    true,
                ),
                false,
            ),
            (
                make(
                    "rust-none",
                    "10.0.0.4",
                    8083,
                    None,
                    None,
                    ServiceType::Dynamic,
                    None,
                    true,
                ),
                false,
            ),
            (
                make(
                    "rust-full",
                    "10.0.0.6",
                    8085,
                    None,
                    Some((map, lhm)),
                    ServiceType::Dynamic,
                    Some("{scheme}://{address}:{port}/full"),
                    true,
                ),
                true,
            ),
            (
                make(
                    "rust-off",
                    "10.0.0.5",
                    8084,
                    None,
                    None,
                    ServiceType::Dynamic,
                    None,
                    false,
                ),
                false,
            ),
        ];
        for k in 0..extras {
            mine.push((
                make(
                    &format!("rust-e{k}"),
                    &format!("10.1.0.{}", k % 250),
                    9000 + k as i32,
                    None,
                    Some((serde_json::json!({"i": k}), lhm)),
                    ServiceType::Dynamic,
                    None,
                    true,
                ),
                false,
            ));
        }
        let mut registrations = Vec::new();
        for (i, via_full) in mine {
            let d = if via_full { &self.full } else { &self.compat };
            let r = d.register_blocking(i).expect("register");
            let i = r.instance();
            writeln!(log, "registered rust rust/{} {}", i.id, canon(&i)).unwrap();
            registrations.push(r);
        }
        log.flush().unwrap();
        let t0 = std::time::Instant::now();
        wait_count(expect, || {
            self.caches
                .iter()
                .map(|(_, c)| c.instances().len())
                .sum::<usize>()
        });
        // Each provider has a cache of its own, which may lag the worker's (seen under the load
        // of the long run): wait until it offers every enabled instance (all but the "-off").
        let t1 = std::time::Instant::now();
        let caught_up = poll(|| {
            self.providers.iter().all(|(s, p)| {
                let cache = &self.caches.iter().find(|(c, _)| c == s).unwrap().1;
                let enabled = cache
                    .instances()
                    .iter()
                    .filter(|i| !i.id.ends_with("-off"))
                    .count();
                p.get_all_instances().len() == enabled
            })
        });
        writeln!(
            log,
            "waited rust {} {} {caught_up}",
            (t1 - t0).as_millis(),
            t1.elapsed().as_millis()
        )
        .unwrap();
        for (s, c) in &self.caches {
            for i in c.instances() {
                writeln!(log, "found rust {s}/{} {}", i.id, canon(&i)).unwrap();
            }
        }
        for (s, p) in &self.providers {
            let n = p.cache().instances().len();
            for _ in 0..2 * n {
                let picked = p.get_instance().map_or("-".to_string(), |i| i.id.clone());
                writeln!(log, "picked rust {s}/{picked}").unwrap();
            }
            let mut ids: Vec<String> = p.get_all_instances().iter().map(|i| i.id.clone()).collect();
            ids.sort();
            writeln!(log, "usable rust {s} {}", ids.join(",")).unwrap();
        }
        log.flush().unwrap();
        std::fs::write(std::path::Path::new(peers).join(id), b"").expect("peer mark");
        // Our instances stay registered until every peer has picked and marked (the runner
        // marks a peer that exited; it kills every worker at its deadline).
        poll_for(Duration::from_secs(600), || {
            std::fs::read_dir(peers).map_or(0, |d| d.count()) >= DISCOVERY_SERVICES.len()
        });
        for (_, p) in &self.providers {
            p.close();
        }
        for (_, c) in &self.caches {
            c.close();
        }
        self.full.close_blocking().expect("close");
        self.compat.close_blocking().expect("close");
        writeln!(log, "done rust {id} {}", registrations.len()).unwrap();
    }
}

/// The golden check: the bytes Curator 5.9 wrote (files `NAME.compat.json` / `NAME.full.json`
/// in `dir`) decode, and encode again to the same bytes, both as read (remembered payload text)
/// and as a fresh instance made of the decoded fields (our encoder alone).
fn discovery_golden(dir: &str) {
    use zkrecipes::discovery::ServiceInstance;
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("golden dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let compat = name.ends_with(".compat.json");
        let bytes = std::fs::read(&f).expect("read golden");
        let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
        let i = match ServiceInstance::from_json(&bytes) {
            Ok(i) => i,
            Err(e) => {
                println!("golden {name} decode {e}");
                continue;
            }
        };
        let again = i.to_json(compat);
        if again != bytes {
            println!(
                "golden {name} roundtrip ours={} curator={}",
                text(&again),
                text(&bytes)
            );
            continue;
        }
        let mut fresh = ServiceInstance::new(i.name.clone());
        fresh.id = i.id.clone();
        fresh.address = i.address.clone();
        fresh.port = i.port;
        fresh.ssl_port = i.ssl_port;
        fresh.payload = i.payload.clone();
        fresh.payload_class = i.payload_class.clone();
        fresh.registration_time_utc = i.registration_time_utc;
        fresh.service_type = i.service_type;
        fresh.uri_spec = i.uri_spec.clone();
        fresh.enabled = i.enabled;
        fresh.extra = i.extra.clone();
        let encoded = fresh.to_json(compat);
        if encoded != bytes {
            println!(
                "golden {name} encode ours={} curator={}",
                text(&encoded),
                text(&bytes)
            );
            continue;
        }
        println!("golden {name} ok");
    }
}

/// The partition scenario's set, and how long a round's member stays ACQUIRED.
const PARTS: [&str; 8] = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"];
const HOLD: Duration = Duration::from_millis(400);

type PartitionState = zkrecipes::partition::PartitionState;

/// kazoo's loop on one partitioner, stamping `start/end rust ID PARTITION NS` around each hold
/// (start once ACQUIRED, end before release_set); returns the held partitions (None if not
/// ACQUIRED) once `until(state, partitions, since, log)`.
fn drive(
    p: &zkrecipes::partition::SetPartitioner,
    id: &str,
    log: &mut dyn Write,
    mut until: impl FnMut(PartitionState, &[String], std::time::Instant, &mut dyn Write) -> bool,
) -> Option<Vec<String>> {
    let mut held: Option<Vec<String>> = None;
    let mut since = std::time::Instant::now();
    loop {
        let (state, parts) = p.snapshot();
        if state == PartitionState::Acquired && held.is_none() {
            since = std::time::Instant::now();
            for q in &parts {
                writeln!(log, "start rust {id} {q} {}", mono_ns()).unwrap();
            }
            log.flush().unwrap();
            held = Some(parts.clone());
        }
        if until(state, &parts, since, log) {
            return held;
        }
        match state {
            PartitionState::Release => {
                for q in held.take().unwrap_or_default() {
                    writeln!(log, "end rust {id} {q} {}", mono_ns()).unwrap();
                }
                log.flush().unwrap();
                p.release_set_blocking().expect("release_set");
            }
            PartitionState::Failure => panic!("partitioner FAILURE"),
            _ => {
                p.wait_for_change_blocking(state, Some(Duration::from_millis(50)))
                    .expect("wait");
            }
        }
    }
}

fn leave(
    p: &zkrecipes::partition::SetPartitioner,
    held: Option<Vec<String>>,
    id: &str,
    log: &mut dyn Write,
) {
    for q in held.unwrap_or_default() {
        writeln!(log, "end rust {id} {q} {}", mono_ns()).unwrap();
    }
    log.flush().unwrap();
    p.finish_blocking().expect("finish");
}

fn partition(
    client: &Client,
    path: &str,
    id: &str,
    rounds: u64,
    expect: usize,
    peers: &str,
    log: &mut dyn Write,
) {
    use zkrecipes::partition::{partition_set, PartitionerOptions, SetPartitioner};
    let member = || {
        let options = PartitionerOptions {
            identifier: Some(id.to_string()),
            time_boundary: Duration::from_millis(200),
            max_reaction_time: Duration::from_millis(100),
            partition_func: None,
        };
        let p = SetPartitioner::new(client, path, &PARTS, options).expect("partitioner");
        p.start_blocking().expect("start");
        p
    };
    for r in 0..rounds {
        let p = member();
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        // Jittered, so that members leave apart.
        let hold = HOLD + Duration::from_millis((mono_ns() % 200) as u64);
        let held = drive(&p, id, log, |s, _, since, _| {
            (s == PartitionState::Acquired && since.elapsed() >= hold)
                || std::time::Instant::now() > deadline
        });
        assert!(held.is_some(), "round {r}: never ACQUIRED");
        leave(&p, held, id, log);
        writeln!(log, "round rust {id} {r}").unwrap();
        // Our first round held the whole set alone: the others join now, so each takes a
        // share from us (a cross-runtime handoff however the machine schedules the members).
        std::fs::write(format!("{peers}.first"), b"").expect("write the .first marker");
        // Longer than the time boundary: the rest divide the set without us.
        std::thread::sleep(Duration::from_millis(300 + (mono_ns() % 200) as u64));
    }
    // The final member: logs its share once the party is every worker and the share is kazoo's
    // for them, until every worker did.
    let p = member();
    let party = format!("{path}/party");
    let mut logged: Option<Vec<String>> = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let held = drive(&p, id, log, |state, parts, _, log| {
        if state == PartitionState::Acquired && logged.as_deref() != Some(parts) {
            let ids: Vec<String> = client
                .get_children_blocking(&party)
                .expect("party")
                .iter()
                .map(|c| c[c.find('-').map_or(0, |i| i + 1)..].to_string())
                .collect();
            let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
            if distinct.len() == ids.len()
                && ids.len() == expect
                && partition_set(id, &ids, &PARTS).as_deref() == Some(parts)
            {
                let shown = if parts.is_empty() {
                    "-".to_string()
                } else {
                    parts.join(",")
                };
                writeln!(log, "final rust {id} {shown}").unwrap();
                log.flush().unwrap();
                std::fs::write(std::path::Path::new(peers).join(id), b"").expect("mark");
                logged = Some(parts.to_vec());
            }
        }
        std::fs::read_dir(peers).expect("peers").count() >= expect
            || std::time::Instant::now() > deadline
    });
    leave(&p, held, id, log);
    writeln!(log, "done rust {id} {rounds}").unwrap();
}

fn wall_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos()
}

fn lease(client: &Client, path: &str, id: &str, leases: u64, log: &mut dyn Write) {
    use zkrecipes::partition::{LeaseOptions, MultiNonBlockingLease};
    let options = || LeaseOptions {
        identifier: Some(id.to_string()),
        ..Default::default()
    };
    let second = Duration::from_secs(1);
    let end_of = |m: &MultiNonBlockingLease| {
        m.lease()
            .and_then(|l| l.end())
            .expect("an obtained lease has an end")
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos()
    };
    let mut got = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while got < leases && std::time::Instant::now() < deadline {
        let m = MultiNonBlockingLease::obtain_blocking(client, 2, path, second, options())
            .expect("lease");
        if !m.obtained() {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        got += 1;
        let mut end = end_of(&m);
        writeln!(
            log,
            "lease rust {id} {} {} {end}",
            m.index().unwrap_or(0),
            wall_ns()
        )
        .unwrap();
        log.flush().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        if wall_ns() + 500_000_000 < end {
            let r = MultiNonBlockingLease::obtain_blocking(client, 2, path, second, options())
                .expect("lease");
            writeln!(
                log,
                "renew rust {id} {} {} {end}",
                if r.obtained() { "ok" } else { "lost" },
                wall_ns()
            )
            .unwrap();
            if r.obtained() {
                end = end_of(&r);
                writeln!(
                    log,
                    "lease rust {id} {} {} {end}",
                    r.index().unwrap_or(0),
                    wall_ns()
                )
                .unwrap();
            }
            log.flush().unwrap();
        }
        let left = end.saturating_sub(wall_ns()) as u64;
        std::thread::sleep(
            Duration::from_nanos(left) + Duration::from_millis(50 + (mono_ns() % 100) as u64),
        );
    }
    writeln!(log, "done rust {id} {got}").unwrap();
}

/// The values scenario (tests/interop/README.md), as Curator's worker runs it (`Values.java`):
/// * P/value: a SharedValue (seed `0`) counting in decimal text: `get_versioned_value`, then
///   `try_set_value(previous, v + 1)` until it is true;
/// * P/atomic: a DistributedAtomicValue (decimal text, initialized `0`): `get`, then
///   `compare_and_set(v, v + 1)` until it succeeds;
/// * P/atomic-set: a DistributedAtomicValue with `RetryNTimes(0, 0)` (one optimistic try) and
///   promotion to a lock at P/atomic-lock (Curator's default: one try under it), initialized
///   `seed`: `try_set("ID:i")` until it succeeds, logging what it replaced and the tries made
///   under the lock;
/// * P/ids: a CachedAtomicLong (cache factor 5) over the DistributedAtomicLong P/ids.
struct Values {
    value: SharedValue,
    atomic: DistributedAtomicValue,
    set: DistributedAtomicValue,
    ids: CachedAtomicLong,
}

const ONE_TRY: zkrecipes::RetryPolicy = zkrecipes::RetryPolicy::NTimes {
    n: 0,
    sleep: Duration::ZERO,
};

fn text(v: &Option<Vec<u8>>) -> String {
    v.as_deref().map_or_else(
        || "null".into(),
        |b| String::from_utf8_lossy(b).into_owned(),
    )
}

impl Values {
    fn new(client: &Client, path: &str) -> Values {
        let value = SharedValue::new(client, &format!("{path}/value"), b"0").expect("shared value");
        value.start_blocking().expect("shared value start");
        let atomic =
            DistributedAtomicValue::new(client, &format!("{path}/atomic"), Some(ONE_TRY), None)
                .expect("atomic value");
        atomic.initialize_blocking(b"0").expect("initialize");
        let lock = PromotedToLock::new(&format!("{path}/atomic-lock")).expect("promoted to lock");
        let set = DistributedAtomicValue::new(
            client,
            &format!("{path}/atomic-set"),
            Some(ONE_TRY),
            Some(lock),
        )
        .expect("atomic value");
        set.initialize_blocking(b"seed").expect("initialize");
        let retry = zkrecipes::RetryPolicy::NTimes {
            n: 50,
            sleep: Duration::from_millis(10),
        };
        let counter = DistributedAtomicLong::new(client, &format!("{path}/ids"), Some(retry), None)
            .expect("counter");
        let ids = CachedAtomicLong::new(counter, 5).expect("cached atomic long");
        Values {
            value,
            atomic,
            set,
            ids,
        }
    }

    fn run(self, id: &str, n: u64, log: &mut dyn Write) {
        let (mut value_retries, mut atomic_retries, mut set_fails, mut id_fails) = (0, 0, 0, 0);
        for i in 0..n {
            loop {
                let r = self
                    .set
                    .try_set_blocking(format!("{id}:{i}").as_bytes())
                    .expect("try_set");
                if r.succeeded {
                    let (pre, post) = (text(&r.pre_value), text(&r.post_value));
                    let promoted = r.stats.promoted_lock_tries;
                    writeln!(log, "set rust {id} {pre} {post} {promoted}").unwrap();
                    break;
                }
                set_fails += 1;
            }
        }
        for _ in 0..n {
            loop {
                let v = self.value.get_versioned_value();
                let next = String::from_utf8(v.value.clone())
                    .ok()
                    .and_then(|t| t.parse::<i64>().ok())
                    .expect("a decimal shared value")
                    + 1;
                let set = self
                    .value
                    .try_set_value_blocking(&v, next.to_string().as_bytes())
                    .expect("try_set_value");
                if set {
                    writeln!(log, "value rust {id} {next}").unwrap();
                    break;
                }
                value_retries += 1;
            }
            loop {
                let current = self.atomic.get_blocking().expect("get").post_value;
                let next = text(&current)
                    .parse::<i64>()
                    .expect("a decimal atomic value")
                    + 1;
                let r = self
                    .atomic
                    .compare_and_set_blocking(
                        current.as_deref().unwrap_or_default(),
                        next.to_string().as_bytes(),
                    )
                    .expect("compare_and_set");
                if r.succeeded {
                    writeln!(log, "atomic rust {id} {next}").unwrap();
                    break;
                }
                atomic_retries += 1;
            }
            loop {
                let r = self.ids.next_blocking().expect("next");
                if r.succeeded {
                    writeln!(log, "id rust {id} {}", r.post_value).unwrap();
                    break;
                }
                id_fails += 1;
            }
            log.flush().unwrap();
        }
        writeln!(
            log,
            "retries rust {id} {value_retries} {atomic_retries} {set_fails} {id_fails}"
        )
        .unwrap();
        writeln!(log, "done rust {id} {n}").unwrap();
        self.value.close();
    }

    /// `VALUE ATOMIC SET IDS`: the four nodes as zkrecipes reads them.
    fn read(client: &Client, path: &str) -> String {
        let value = SharedValue::new(client, &format!("{path}/value"), b"0").expect("shared value");
        value.start_blocking().expect("shared value start");
        let v = String::from_utf8_lossy(&value.get_value()).into_owned();
        value.close();
        let get = |p: &str| {
            let a = DistributedAtomicValue::new(client, &format!("{path}/{p}"), None, None)
                .expect("atomic value");
            text(&a.get_blocking().expect("get").post_value)
        };
        let counter = DistributedAtomicLong::new(client, &format!("{path}/ids"), None, None)
            .expect("counter");
        let ids = counter.get_blocking().expect("get").post_value;
        format!("{v} {} {} {ids}", get("atomic"), get("atomic-set"))
    }
}
