//! Cohort handoffs (issue 21, part 1) while the ensemble's leader is killed.
//!
//! Scenario 14: on a 3-server ensemble whose leader is killed and restarted, two cohorts (two
//! clients, each one mutex object with cohort handoffs shared by 6 threads) and two plain
//! mutexes on their own clients contend for one lock. Each critical section runs from the first
//! to the last moment its holder saw `is_held_valid()` and is logged with its wide fencing token
//! (`(czxid, handoff)`; plain holders' handoff is 0). Checks: no two sections overlap, tokens
//! strictly increase in log order, most cohort holds are in-memory handoffs, the plain
//! contenders and both cohorts keep getting the lock after the faults, and no lock node is
//! left once every client closed.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{client_to, kill_leaders, WAIT};
use zkrecipes::lock::{CohortOptions, FencingToken, InterProcessMutex};
use zkrecipes::{Client, Owner};
use zkrecipes_testing::TestingCluster;

const LOCK: &str = "/faults/cohort/lock";
const POLL: Duration = Duration::from_micros(200);

#[derive(Clone, Debug)]
struct Section {
    who: String,
    token: FencingToken,
    first: Instant,
    last: Instant,
}

#[derive(Default)]
struct Log {
    sections: Mutex<Vec<Section>>,
}

impl Log {
    fn count(&self, who: &str, after: Instant) -> usize {
        self.sections
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.who.starts_with(who) && s.first > after)
            .count()
    }
}

/// One hold: samples `is_held_valid` for `hold` (or until lost), logs the section, releases.
fn section(m: &InterProcessMutex, owner: Owner, who: &str, hold: Duration, log: &Log) {
    let token = m
        .fencing_token_wide(owner)
        .expect("a hold has a wide fencing token");
    if let (Some((first, last)), _) = zkrecipes_faults::sample_hold(m, owner, hold, POLL) {
        log.sections.lock().unwrap().push(Section {
            who: who.to_string(),
            token,
            first,
            last,
        });
    }
    // A lost hold releases cleanly (WasLost); a connection error leaves a guaranteed delete.
    let _ = m.release_blocking_as(owner);
}

/// A worker loop: acquire (bounded), hold, release, until `stop`.
fn worker(
    m: InterProcessMutex,
    who: String,
    hold: Duration,
    log: Arc<Log>,
    stop: Arc<AtomicBool>,
    errors: Arc<AtomicU64>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let me = Owner::current_thread();
        while !stop.load(Ordering::SeqCst) {
            match m.acquire_blocking_as(me, Some(Duration::from_secs(5))) {
                Ok(true) => section(&m, me, &who, hold, &log),
                Ok(false) => {}
                // Connection errors during a kill are what the run is about.
                Err(_) => {
                    errors.fetch_add(1, Ordering::Relaxed);
                    thread::sleep(Duration::from_millis(20));
                }
            }
        }
    })
}

#[test]
fn cohorts_and_plain_holders_stay_exclusive_under_leader_kills() {
    let start = Instant::now();
    let cluster = TestingCluster::start(3);
    let connect = cluster.connect_string();
    let log = Arc::new(Log::default());
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let mut clients: Vec<Client> = Vec::new();
    let mut threads = Vec::new();
    let opts = CohortOptions {
        max_handoffs: 16,
        max_hold: Duration::from_millis(10),
    };
    for c in 0..2 {
        let client = client_to(&connect);
        let m = InterProcessMutex::new(&client, LOCK)
            .unwrap()
            .with_cohort(opts)
            .unwrap();
        for t in 0..6 {
            threads.push(worker(
                m.clone(),
                format!("cohort{c}/t{t}"),
                Duration::from_micros(300),
                log.clone(),
                stop.clone(),
                errors.clone(),
            ));
        }
        clients.push(client);
    }
    for p in 0..2 {
        let client = client_to(&connect);
        let m = InterProcessMutex::new(&client, LOCK).unwrap();
        threads.push(worker(
            m,
            format!("plain{p}"),
            Duration::from_millis(1),
            log.clone(),
            stop.clone(),
            errors.clone(),
        ));
        clients.push(client);
    }

    let kills = kill_leaders(&cluster);
    // Progress after the faults: both cohorts and both plain holders get the lock again.
    let after = Instant::now();
    let deadline = after + WAIT;
    for who in ["cohort0", "cohort1", "plain0", "plain1"] {
        while log.count(who, after) < 3 {
            assert!(
                Instant::now() < deadline,
                "{who} did not get the lock 3 times within {WAIT:?} after the faults"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().expect("a worker thread");
    }

    // The checks: no overlap, strictly increasing wide tokens in log order.
    let mut s = log.sections.lock().unwrap().clone();
    s.sort_by_key(|x| x.first);
    for w in s.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        assert!(
            a.last < b.first,
            "MUTUAL EXCLUSION VIOLATED: {} {:?} ({:?}..{:?}) overlaps {} {:?} (from {:?})",
            a.who,
            a.token,
            a.first - start,
            a.last - start,
            b.who,
            b.token,
            b.first - start
        );
        assert!(
            a.token < b.token,
            "FENCING TOKENS NOT INCREASING: {} had {:?} then {} had {:?}",
            a.who,
            a.token,
            b.who,
            b.token
        );
    }
    let cohort: Vec<_> = s.iter().filter(|x| x.who.starts_with("cohort")).collect();
    let handed = cohort.iter().filter(|x| x.token.handoff > 0).count();
    assert!(
        handed * 2 > cohort.len(),
        "only {handed} of {} cohort holds were in-memory handoffs",
        cohort.len()
    );
    let plain = s.len() - cohort.len();

    for c in clients {
        c.close_blocking();
    }
    let admin = client_to(&connect);
    let left = common_children(&admin);
    assert!(left.is_empty(), "lock nodes left: {left:?}");
    admin.close_blocking();
    eprintln!(
        "FAULTS | 14 cohort handoffs under {kills} leader kills | Rust (2 cohorts x 6 threads, 2 plain holders) | {} sections ({} cohort, {handed} of them in-memory handoffs; {plain} plain); {} acquire errors during the faults; 0 overlaps, wide tokens strictly increasing | violations 0 | {:.1} s",
        s.len(),
        cohort.len(),
        errors.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
}

/// The lock's children once every contender closed (the container itself may be reaped).
fn common_children(c: &Client) -> Vec<String> {
    let deadline = Instant::now() + WAIT;
    loop {
        let kids = match c.get_children_blocking(LOCK) {
            Ok(k) => k,
            Err(zkrecipes::Error::NoNode(_)) => return Vec::new(),
            Err(e) => panic!("list {LOCK}: {e}"),
        };
        // Ephemeral nodes of closed sessions go with the close; allow the server a moment.
        if kids.is_empty() || Instant::now() > deadline {
            return kids;
        }
        thread::sleep(Duration::from_millis(50));
    }
}
