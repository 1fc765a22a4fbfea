//! Scenario 18 (issue 32): the values under faults — SharedValue's `try_set_value` chains,
//! DistributedAtomicValue (bytes compare-and-set, and `try_set` promoted to a lock), a
//! DistributedAtomicLong promoted to a lock, and CachedAtomicLong ids from reserved ranges.
//!
//! A 3-node ensemble; four clients, each running all five operations in turn on its own
//! recipe objects: client 0 reaches one follower through a `FaultProxy` (2 s session), clients
//! 1-3 the whole ensemble (8 s sessions). Faults: the leader is killed; the proxy drops client
//! 0's replies (its writes are applied, their answers lost) and then blackholes it past its
//! session (its session expires on the server while operations are in flight) while client 3's
//! session is expired on the server; then the killed server comes back. The invariants are the product:
//!
//! * every increment (promoted counter, bytes CAS counter) is applied exactly once or reported
//!   failed: `acked <= final <= acked + unknown` (`OutcomeUnknown` is the only error that may
//!   hide an applied write);
//! * every CachedAtomicLong id is handed out at most once across all clients, and every id is
//!   within the ranges reserved (`<= the counter's final value`);
//! * a `try_set_value` chain never forks: no two successful sets from one version, each
//!   success's parent is the previous success's value when their versions are consecutive,
//!   and the node's version moved by `successes .. successes + unknown`;
//! * `try_set` of unique bytes never forks either: no two successes replaced the same value,
//!   and every value replaced was written by someone;
//! * no lock node is left behind by promoted-to-lock mode once every client closed;
//! * every client, the cut-off and the expired one included, succeeds again after the faults.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::atomic::{
    CachedAtomicLong, DistributedAtomicLong, DistributedAtomicValue, PromotedToLock, SharedValue,
};
use zkrecipes::retry::RetryPolicy;
use zkrecipes::{Client, ClientBuilder, ErrorKind};
use zkrecipes_faults::eventually;
use zkrecipes_testing::{expire_client_session, FaultProxy, TestingCluster};

const WAIT: Duration = Duration::from_secs(60);

/// The long configuration (`ZKR_FAULTS_LONG=1`, `tests/faults/run --long`).
fn long() -> bool {
    std::env::var("ZKR_FAULTS_LONG").is_ok_and(|v| v == "1")
}

const COUNTER: &str = "/f18-values/counter";
const IDS: &str = "/f18-values/ids";
const SHARED: &str = "/f18-values/shared";
const CAS: &str = "/f18-values/cas";
const TRY_SET: &str = "/f18-values/try-set";
const COUNTER_LOCK: &str = "/f18-values/locks/counter";
const VALUE_LOCK: &str = "/f18-values/locks/value";
const CLIENTS: usize = 4;
const PROXIED: usize = 0;
const EXPIRED: usize = 3;

/// `connect` with its hosts rotated by `by`: another connect string for the same ensemble. Each
/// direct client gets its own, so its counter rounds contend with the others' as another
/// process's would (clients of one process with one connect string and credentials take turns
/// on a counter and never conflict: `core/src/atomic/combiner.rs`), and the promoted lock gets
/// used.
fn rotated(connect: &str, by: usize) -> String {
    let mut hosts: Vec<&str> = connect.split(',').collect();
    let n = hosts.len();
    hosts.rotate_left(by % n);
    hosts.join(",")
}

fn client(connect: &str, session: Duration) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(session)
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(RetryPolicy::exponential_backoff(
            Duration::from_millis(100),
            4,
        ))
        .connect_blocking()
        .unwrap_or_else(|e| panic!("connect to {connect}: {e}"))
}

/// How one kind of operation went, over all clients.
#[derive(Default, Debug, Clone, Copy)]
struct Tally {
    acked: u64,
    /// Done, not applied (`succeeded == false`, or a try_set_value refused as stale).
    refused: u64,
    unknown: u64,
    /// Errors other than OutcomeUnknown: reported failed, certainly not applied.
    failed: u64,
    /// Operations that needed the promoted lock.
    promoted: u64,
}

impl Tally {
    /// Counts one operation's outcome (`Ok(applied)`, or the error); whether it was applied.
    fn record(&mut self, outcome: Result<bool, zkrecipes::Error>) -> bool {
        let applied = matches!(outcome, Ok(true));
        match outcome {
            Ok(true) => self.acked += 1,
            Ok(false) => self.refused += 1,
            Err(e) if e.kind() == ErrorKind::OutcomeUnknown => self.unknown += 1,
            Err(_) => self.failed += 1,
        }
        applied
    }
}

impl Tally {
    fn line(&self) -> String {
        format!(
            "{} acked, {} refused, {} failed, {} unknown",
            self.acked, self.refused, self.failed, self.unknown
        )
    }
}

/// What every client did.
#[derive(Default)]
struct Ledger {
    counter: Tally,
    ids: Tally,
    shared: Tally,
    cas: Tally,
    try_set: Tally,
    /// Every id handed out, with its client.
    handed: Vec<(i64, usize)>,
    /// Successful try_set_value: (version it was set from, the value there, the new value).
    chain: Vec<(i32, Vec<u8>, Vec<u8>)>,
    /// Successful try_set: (the value replaced, ours).
    replaced: Vec<(Option<Vec<u8>>, Vec<u8>)>,
    /// try_set values whose outcome is unknown.
    try_set_maybe: Vec<Vec<u8>>,
    /// Successes per client since the faults ended.
    after_faults: [u64; CLIENTS],
}

/// The count in a CAS value "COUNT:client:seq".
fn count_of(v: &[u8]) -> u64 {
    let s = std::str::from_utf8(v).expect("utf-8 CAS value");
    s.split(':').next().unwrap().parse().expect("a count")
}

/// One client's loop: the five operations in turn until `stop`.
fn worker(
    me: usize,
    client: Client,
    ledger: Arc<Mutex<Ledger>>,
    faults_over: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> thread::JoinHandle<Client> {
    thread::spawn(move || {
        // One optimistic try, so that any contention promotes to the lock.
        let optimistic = || {
            Some(RetryPolicy::exponential_backoff(
                Duration::from_millis(1),
                0,
            ))
        };
        let promoted = |path: &str| {
            Some(
                PromotedToLock::builder()
                    .lock_path(path)
                    .timeout(Duration::from_secs(10))
                    .build()
                    .unwrap(),
            )
        };
        let counter =
            DistributedAtomicLong::new(&client, COUNTER, optimistic(), promoted(COUNTER_LOCK))
                .unwrap();
        // The proxied client reserves a range for every id (cache factor 1), so that
        // reservations are in flight when its replies are dropped and its session ends; the
        // others reserve 7 at a time.
        let ids = CachedAtomicLong::new(
            DistributedAtomicLong::new(&client, IDS, None, None).unwrap(),
            if me == PROXIED { 1 } else { 7 },
        )
        .unwrap();
        let shared = SharedValue::new(&client, SHARED, b"seed").unwrap();
        let cas = DistributedAtomicValue::new(&client, CAS, None, None).unwrap();
        let try_set =
            DistributedAtomicValue::new(&client, TRY_SET, optimistic(), promoted(VALUE_LOCK))
                .unwrap();
        // start() may meet a fault too: try again until it works.
        let deadline = Instant::now() + WAIT;
        while let Err(e) = shared.start_blocking() {
            assert!(Instant::now() < deadline, "client {me}: start: {e}");
            thread::sleep(Duration::from_millis(50));
        }
        let mut seq = 0u64;
        while !stop.load(Ordering::SeqCst) {
            seq += 1;
            let mine = format!("{me}:{seq}");
            let ok = match seq % 5 {
                0 => {
                    let r = counter.increment_blocking();
                    let mut l = ledger.lock().unwrap();
                    if let Some(v) = r.as_ref().ok().filter(|v| v.succeeded) {
                        l.counter.promoted += u64::from(v.stats.promoted_lock_tries > 0);
                    }
                    l.counter.record(r.map(|v| v.succeeded))
                }
                1 => {
                    let r = ids.next_blocking();
                    let mut l = ledger.lock().unwrap();
                    match r {
                        Ok(v) if v.succeeded => {
                            l.handed.push((v.post_value, me));
                            l.ids.record(Ok(true))
                        }
                        r => l.ids.record(r.map(|_| false)),
                    }
                }
                2 => {
                    let from = shared.get_versioned_value();
                    let new = format!("{mine}@{}", from.version).into_bytes();
                    let r = shared.try_set_value_blocking(&from, &new);
                    let mut l = ledger.lock().unwrap();
                    if let Ok(true) = r {
                        l.chain.push((from.version, from.value, new));
                    }
                    l.shared.record(r)
                }
                3 => match cas.get_blocking() {
                    Ok(now) => {
                        let now = now.post_value.expect("the CAS value was initialized");
                        let next = format!("{}:{mine}", count_of(&now) + 1).into_bytes();
                        let r = cas.compare_and_set_blocking(&now, &next);
                        ledger.lock().unwrap().cas.record(r.map(|v| v.succeeded))
                    }
                    Err(e) => {
                        // A read: nothing was written.
                        assert_ne!(e.kind(), ErrorKind::OutcomeUnknown, "a read");
                        ledger.lock().unwrap().cas.failed += 1;
                        false
                    }
                },
                _ => {
                    let value = format!("set:{mine}").into_bytes();
                    let r = try_set.try_set_blocking(&value);
                    let mut l = ledger.lock().unwrap();
                    match r {
                        Ok(v) if v.succeeded => {
                            assert_eq!(v.post_value.as_deref(), Some(&value[..]));
                            l.try_set.promoted += u64::from(v.stats.promoted_lock_tries > 0);
                            l.replaced.push((v.pre_value, value));
                            l.try_set.record(Ok(true))
                        }
                        Err(e) if e.kind() == ErrorKind::OutcomeUnknown => {
                            l.try_set_maybe.push(value);
                            l.try_set.record(Err(e))
                        }
                        r => l.try_set.record(r.map(|_| false)),
                    }
                }
            };
            if ok && faults_over.load(Ordering::SeqCst) {
                ledger.lock().unwrap().after_faults[me] += 1;
            }
            if !ok {
                // A failed operation during a fault: do not spin on it.
                thread::sleep(Duration::from_millis(5));
            }
        }
        shared.close();
        client
    })
}

#[test]
fn values_stay_exact_under_a_leader_kill_a_blackhole_and_an_expiry() {
    let start = Instant::now();
    let cluster = TestingCluster::start(3);
    let connect = cluster.connect_string();
    let admin = client(&connect, Duration::from_secs(20));
    let leader = cluster.wait_for_quorum(WAIT).expect("a leader");
    // The proxy forwards to a follower: the leader kill below does not take its only server.
    let upstream = (0..3).find(|&i| i != leader).unwrap();
    let proxy = FaultProxy::start(&cluster.server(upstream).connect_string());
    let cas0 = DistributedAtomicValue::new(&admin, CAS, None, None).unwrap();
    assert!(cas0.initialize_blocking(b"0:init").unwrap());
    let try0 = DistributedAtomicValue::new(&admin, TRY_SET, None, None).unwrap();
    assert!(try0.initialize_blocking(b"init").unwrap());
    let shared0 = SharedValue::new(&admin, SHARED, b"seed").unwrap();
    shared0.start_blocking().unwrap();
    let (initial_version, initial_shared) = {
        let v = shared0.get_versioned_value();
        (v.version, v.value)
    };
    shared0.close();

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let faults_over = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<Client> = (0..CLIENTS)
        .map(|i| {
            if i == PROXIED {
                client(&proxy.connect_string(), Duration::from_secs(2))
            } else {
                client(&rotated(&connect, i), Duration::from_secs(8))
            }
        })
        .collect();
    let handles: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            worker(
                i,
                c.clone(),
                ledger.clone(),
                faults_over.clone(),
                stop.clone(),
            )
        })
        .collect();

    let rounds = if long() { 4 } else { 1 };
    let acked =
        |l: &Ledger| l.counter.acked + l.ids.acked + l.shared.acked + l.cas.acked + l.try_set.acked;
    let mut sessions_ended = [0u32; CLIENTS];
    for _ in 0..rounds {
        // Let the workload run.
        let before = acked(&ledger.lock().unwrap());
        eventually("the workload makes progress", WAIT, || {
            acked(&ledger.lock().unwrap()) >= before + 100
        });
        let (proxied_session, expired_session) =
            (clients[PROXIED].session_id(), clients[EXPIRED].session_id());
        // 1. The leader dies.
        let leader = cluster.wait_for_quorum(WAIT).expect("a leader");
        cluster.server(leader).kill();
        cluster
            .wait_for_quorum(WAIT)
            .expect("the survivors elect a leader");
        // 2. Client 0's replies are dropped (its writes reach the server, their answers never
        //    come back: the ambiguous writes), then it is cut off past its 2 s session while
        //    client 3's session is expired on the server; the others go on.
        proxy.drop_replies();
        let cut = Instant::now();
        while cut.elapsed() < Duration::from_millis(800) {
            thread::sleep(Duration::from_millis(20));
        }
        proxy.blackhole();
        zkrecipes::runtime::block_on(expire_client_session(&clients[EXPIRED]))
            .expect("expire client 3's session");
        while cut.elapsed() < Duration::from_millis(3_500) {
            thread::sleep(Duration::from_millis(20));
        }
        proxy.restore();
        // 3. The killed server comes back.
        cluster.server(leader).start();
        cluster
            .wait_for_quorum(WAIT)
            .expect("quorum with the restarted server");
        // Both victims are on new sessions.
        for (i, old) in [(PROXIED, proxied_session), (EXPIRED, expired_session)] {
            eventually("the victims open new sessions", WAIT, || {
                clients[i].session_id() != old && clients[i].session_id() != 0
            });
            sessions_ended[i] += 1;
        }
    }
    faults_over.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + WAIT;
    loop {
        let after = ledger.lock().unwrap().after_faults;
        if after.iter().all(|n| *n >= 10) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every client succeeded 10 times after the faults: {after:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    for h in handles {
        h.join().expect("a worker").close_blocking();
    }

    // The checks.
    let l = ledger.lock().unwrap();
    let mut violations: Vec<String> = Vec::new();
    let read = |path: &str| {
        let (data, stat) = admin.get_data_blocking(path).expect("read a value node");
        (data, stat.version)
    };
    // Increments: exactly once or reported.
    let counter = DistributedAtomicLong::new(&admin, COUNTER, None, None)
        .unwrap()
        .get_blocking()
        .unwrap()
        .post_value as u64;
    if counter < l.counter.acked || counter > l.counter.acked + l.counter.unknown {
        violations.push(format!(
            "promoted counter: final {counter}, {}",
            l.counter.line()
        ));
    }
    let (cas_data, _) = read(CAS);
    let cas = count_of(&cas_data);
    if cas < l.cas.acked || cas > l.cas.acked + l.cas.unknown {
        violations.push(format!("bytes CAS counter: final {cas}, {}", l.cas.line()));
    }
    // Ids: at most once, within the reserved ranges.
    let reserved = DistributedAtomicLong::new(&admin, IDS, None, None)
        .unwrap()
        .get_blocking()
        .unwrap()
        .post_value;
    let mut owners: HashMap<i64, Vec<usize>> = HashMap::new();
    for (id, who) in &l.handed {
        owners.entry(*id).or_default().push(*who);
    }
    for (id, who) in &owners {
        if who.len() > 1 {
            violations.push(format!("id {id} handed out {} times: {who:?}", who.len()));
        }
        if *id < 1 || *id > reserved {
            violations.push(format!("id {id} outside the reserved 1..={reserved}"));
        }
    }
    // try_set_value: no fork.
    let mut chain: BTreeMap<i32, (&[u8], &[u8])> = BTreeMap::new();
    for (from, parent, new) in &l.chain {
        if let Some((_, other)) = chain.insert(*from, (parent, new)) {
            violations.push(format!(
                "try_set_value FORKED at version {from}: {} and {}",
                String::from_utf8_lossy(other),
                String::from_utf8_lossy(new)
            ));
        }
    }
    let links: Vec<_> = chain.iter().collect();
    for w in links.windows(2) {
        let ((v1, (_, new1)), (v2, (parent2, _))) = (w[0], w[1]);
        if *v2 == v1 + 1 && parent2 != new1 {
            violations.push(format!(
                "try_set_value from version {v2} saw {} but version {v2} was {}",
                String::from_utf8_lossy(parent2),
                String::from_utf8_lossy(new1)
            ));
        }
    }
    if let Some((v, (parent, _))) = links.first() {
        if **v == initial_version && *parent != &initial_shared[..] {
            violations.push("the first try_set_value saw another seed".into());
        }
    }
    let (shared_data, shared_version) = read(SHARED);
    let moved = (shared_version - initial_version) as u64;
    if moved < l.shared.acked || moved > l.shared.acked + l.shared.unknown {
        violations.push(format!(
            "shared value moved {moved} versions, {}",
            l.shared.line()
        ));
    }
    if let Some((v, (_, new))) = links.last() {
        if **v + 1 == shared_version && *new != &shared_data[..] {
            violations.push("the shared value is not its last successful set".into());
        }
    }
    // try_set: no fork, nothing from nowhere.
    let written: HashSet<&[u8]> = l
        .replaced
        .iter()
        .map(|(_, v)| &v[..])
        .chain(l.try_set_maybe.iter().map(|v| &v[..]))
        .chain([&b"init"[..]])
        .collect();
    let mut seen_replaced: HashSet<&[u8]> = HashSet::new();
    for (pre, new) in &l.replaced {
        let pre = pre.as_deref().unwrap_or(b"<none>");
        if !seen_replaced.insert(pre) {
            violations.push(format!(
                "try_set FORKED: {} replaced twice (again by {})",
                String::from_utf8_lossy(pre),
                String::from_utf8_lossy(new)
            ));
        }
        if !written.contains(pre) {
            violations.push(format!(
                "try_set replaced {}, which nobody wrote",
                String::from_utf8_lossy(pre)
            ));
        }
    }
    let (try_data, _) = read(TRY_SET);
    if !written.contains(&try_data[..]) {
        violations.push(format!(
            "the try_set value {} was written by nobody",
            String::from_utf8_lossy(&try_data)
        ));
    }
    // Promoted-to-lock mode leaves no lock node behind.
    let mut left = Vec::new();
    eventually("no lock node left", WAIT, || {
        left = [COUNTER_LOCK, VALUE_LOCK]
            .iter()
            .flat_map(|p| match admin.get_children_blocking(p) {
                Ok(kids) => kids.into_iter().map(|k| format!("{p}/{k}")).collect(),
                Err(e) if e.kind() == ErrorKind::NoNode => Vec::new(),
                Err(e) => panic!("list {p}: {e}"),
            })
            .collect::<Vec<_>>();
        left.is_empty()
    });
    assert!(
        violations.is_empty(),
        "{} violations: {violations:#?}",
        violations.len()
    );
    assert!(
        l.counter.promoted > 0 && l.try_set.promoted > 0,
        "promoted-to-lock mode was never used: counter {:?}, try_set {:?}",
        l.counter,
        l.try_set
    );
    admin.close_blocking();
    eprintln!(
        "FAULTS | 18 values under {rounds} leader kill(s), dropped replies, blackhole(s) past the session and expiries | Rust (4 clients: 1 behind the proxy, its replies dropped then cut off past its 2 s session; 1 expired; 2 direct) | promoted counter {} (promoted {}), final {counter}; bytes CAS counter {}, final {cas}; CachedAtomicLong ids {} handed out, 0 twice, reserved up to {reserved} ({} failed, {} unknown reservations); try_set_value chain {} links, 0 forks ({}); try_set {} ({} promoted), 0 forks; sessions ended {sessions_ended:?}; 0 lock nodes left | violations 0 | {:.1} s",
        l.counter.line(),
        l.counter.promoted,
        l.cas.line(),
        owners.len(),
        l.ids.failed,
        l.ids.unknown,
        chain.len(),
        l.shared.line(),
        l.try_set.line(),
        l.try_set.promoted,
        start.elapsed().as_secs_f64()
    );
    drop(cluster);
}
