//! Scenario 19 (issue 32): a reconfiguration under faults.
//!
//! A reconfigurable 3-member ensemble grows to 5 and shrinks to 3 while three clients keep
//! taking one `InterProcessMutex` and incrementing one `DistributedAtomicLong` after each
//! section: two follow the ensemble (`track_ensemble`), one reaches the first joining server
//! through a `FaultProxy` (it does not track: its only server is the proxy). Faults at the same
//! time as the changes:
//!
//! 1. the proxied client is cut off (`FaultProxy::cut`) during the growing reconfig, which is
//!    also tried again with its now stale `from_config` version (refused: `BadVersion`);
//! 2. the leader is killed right after that reconfig commits;
//! 3. the member a tracked client is connected to is removed from the ensemble (with the dead
//!    leader) and then killed.
//!
//! Invariants: no two critical sections overlap and fencing tokens increase; every increment
//! is applied exactly once or reported (`acked <= final <= acked + unknown`); every session
//! survives (the ensemble kept a quorum throughout): same session ids, no LOST; the tracked
//! clients' host lists become the final three members; every client works after the faults;
//! no lock node is left once they closed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::atomic::DistributedAtomicLong;
use zkrecipes::lock::InterProcessMutex;
use zkrecipes::{
    Client, ClientBuilder, ConnectionState, Error, ErrorKind, Owner, Reconfig, RetryPolicy,
};
use zkrecipes_faults::eventually;
use zkrecipes_testing::{FaultProxy, Security, ServerRole, TestingCluster};

const WAIT: Duration = Duration::from_secs(60);
const LOCK: &str = "/f19-reconfig/lock";
const COUNTER: &str = "/f19-reconfig/counter";
const POLL: Duration = Duration::from_micros(500);

fn long() -> bool {
    std::env::var("ZKR_FAULTS_LONG").is_ok_and(|v| v == "1")
}

fn connect(hosts: &str, track: bool, superuser: bool) -> Client {
    // Sessions long enough to outlive an election on a loaded machine; retries that outlast
    // one too (the ensemble keeps a quorum throughout: nothing here should end a session).
    let mut b = ClientBuilder::new(hosts)
        .session_timeout(Duration::from_secs(12))
        .connection_timeout(Duration::from_secs(15))
        .retry_policy(RetryPolicy::exponential_backoff(
            Duration::from_millis(200),
            8,
        ))
        .track_ensemble(track);
    if superuser {
        b = b.auth("digest", b"super:secret".to_vec());
    }
    b.connect_blocking()
        .unwrap_or_else(|e| panic!("connect to {hosts}: {e}"))
}

#[derive(Clone, Debug)]
struct Section {
    who: usize,
    token: i64,
    first: Instant,
    last: Instant,
}

#[derive(Default)]
struct Ledger {
    sections: Vec<Section>,
    acked: u64,
    unknown: u64,
    failed: u64,
    acquire_errors: u64,
    /// Sections per client since the faults ended.
    after_faults: [u64; 3],
}

fn worker(
    me: usize,
    client: Client,
    ledger: Arc<Mutex<Ledger>>,
    faults_over: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let m = InterProcessMutex::new(&client, LOCK).unwrap();
        let counter = DistributedAtomicLong::new(&client, COUNTER, None, None).unwrap();
        let owner = Owner::new();
        while !stop.load(Ordering::SeqCst) {
            match m.acquire_blocking_as(owner, Some(Duration::from_secs(5))) {
                Ok(true) => {
                    let token = m.fencing_token(owner).expect("a hold has a fencing token");
                    let (seen, _) =
                        zkrecipes_faults::sample_hold(&m, owner, Duration::from_millis(2), POLL);
                    // A lost hold releases cleanly; a connection error leaves a guaranteed
                    // delete behind.
                    let _ = m.release_blocking_as(owner);
                    let mut l = ledger.lock().unwrap();
                    if let Some((first, last)) = seen {
                        l.sections.push(Section {
                            who: me,
                            token,
                            first,
                            last,
                        });
                        if faults_over.load(Ordering::SeqCst) {
                            l.after_faults[me] += 1;
                        }
                    }
                }
                Ok(false) => {}
                Err(_) => {
                    ledger.lock().unwrap().acquire_errors += 1;
                    thread::sleep(Duration::from_millis(20));
                }
            }
            let r = counter.increment_blocking();
            let mut l = ledger.lock().unwrap();
            match r {
                Ok(v) if v.succeeded => l.acked += 1,
                // Gave up against other writers: nothing written.
                Ok(_) => l.failed += 1,
                Err(e) if e.kind() == ErrorKind::OutcomeUnknown => l.unknown += 1,
                Err(_) => l.failed += 1,
            }
        }
    })
}

fn record_states(client: &Client) -> Arc<Mutex<Vec<ConnectionState>>> {
    let states = Arc::new(Mutex::new(Vec::new()));
    let seen = states.clone();
    client.add_state_listener(move |s| seen.lock().unwrap().push(s));
    states
}

#[test]
fn reconfiguration_under_a_cut_a_leader_kill_and_a_removed_member_keeps_locks_and_counts() {
    let start = Instant::now();
    let mut cluster =
        TestingCluster::start_reconfigurable(3, Security::new().superuser("super", "secret"));
    let initial = cluster.connect_string();
    let admin = connect(&initial, false, true);
    let config = admin
        .get_config_blocking()
        .expect("the first configuration");

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let faults_over = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let tracked = [
        connect(&initial, true, false),
        connect(&initial, true, false),
    ];
    let all_three = cluster.connect_string_of(&[0, 1, 2]);
    for c in &tracked {
        eventually("the tracker reads the first configuration", WAIT, || {
            c.current_connect_string() == all_three
        });
    }
    let mut handles: Vec<_> = tracked
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

    // Two servers are made ready to join; the proxied client reaches the first of them (an
    // observer until the reconfig makes it a participant).
    let four = cluster.add_server(ServerRole::Participant);
    let five = cluster.add_server(ServerRole::Participant);
    let proxy = FaultProxy::start(&cluster.server(four).connect_string());
    let proxied = connect(&proxy.connect_string(), false, false);
    handles.push(worker(
        2,
        proxied.clone(),
        ledger.clone(),
        faults_over.clone(),
        stop.clone(),
    ));
    let clients = [tracked[0].clone(), tracked[1].clone(), proxied.clone()];
    let sessions: Vec<i64> = clients.iter().map(Client::session_id).collect();
    let states: Vec<_> = clients.iter().map(record_states).collect();
    let sections = || ledger.lock().unwrap().sections.len();
    let before = sections();
    eventually("every client works before the faults", WAIT, || {
        sections() >= before + 30
    });

    // 1. The proxied client is cut off during the growing reconfig; the stale version is
    //    refused.
    proxy.cut();
    let joining = [four, five].map(|i| cluster.server(i).reconfig_spec().unwrap());
    let grown = admin
        .reconfig_blocking(
            Reconfig::incremental()
                .joining(joining)
                .from_config(config.version),
        )
        .expect("the growing reconfig");
    // 2. The leader dies right after the reconfig committed.
    let leader = cluster.leader_index().expect("a leader");
    // A reconfig that keeps the leader a member does not move leadership.
    assert_ne!(leader, four, "the joining server leads");
    cluster.server(leader).kill();
    let stale = admin
        .reconfig_blocking(Reconfig::incremental().from_config(config.version))
        .expect_err("a reconfig from the stale version");
    assert!(
        matches!(stale, Error::BadVersion(_)),
        "a stale from_config: {stale}"
    );
    proxy.restore();
    assert_eq!(grown.members.len(), 5, "{grown:?}");
    // The 4 live members hold the 5-member configuration, and one of them leads.
    eventually(
        "the survivors elect a leader in the 5-member configuration",
        WAIT,
        || {
            cluster
                .servers()
                .iter()
                .filter(|s| s.is_running())
                .all(|s| {
                    s.current_config()
                        .is_some_and(|(lines, _)| lines.len() == 5)
                })
                && cluster.leader_index().is_some()
        },
    );
    let all_five = cluster.connect_string_of(&[0, 1, 2, 3, 4]);
    for c in &tracked {
        eventually("the trackers follow the 5 members", WAIT, || {
            c.current_connect_string() == all_five
        });
    }

    // 3. The member a tracked client is on leaves (with the dead leader) and is killed.
    let mut on = None;
    eventually("the tracked clients are connected", WAIT, || {
        on = tracked
            .iter()
            .filter_map(|c| cluster.server_with_session(c.session_id()))
            .find(|&i| i != four && i != leader);
        on.is_some()
            || tracked
                .iter()
                .all(|c| cluster.server_with_session(c.session_id()).is_some())
    });
    // Both tracked clients on the proxied client's server: the member leaving is another.
    let victim_was_a_clients = on.is_some();
    let victim = on.unwrap_or_else(|| {
        (0..5)
            .find(|&i| i != four && i != leader)
            .expect("a member")
    });
    let leaving = [leader, victim].map(|i| cluster.server(i).server_id());
    let shrunk = admin
        .reconfig_blocking(Reconfig::incremental().leaving(leaving))
        .expect("the shrinking reconfig");
    let staying: Vec<usize> = (0..5).filter(|i| *i != leader && *i != victim).collect();
    let staying_ids: Vec<u64> = staying.iter().map(|&i| i as u64 + 1).collect();
    assert_eq!(
        shrunk.members.iter().map(|m| m.id).collect::<Vec<_>>(),
        staying_ids
    );
    assert!(
        cluster.wait_for_members(&staying_ids, WAIT),
        "the 3 members hold the final configuration"
    );
    cluster.server(victim).kill();
    let final_hosts = cluster.connect_string_of(&staying);
    for c in &tracked {
        eventually("the trackers follow the final 3 members", WAIT, || {
            c.current_connect_string() == final_hosts
        });
    }
    let stale = admin
        .reconfig_blocking(Reconfig::incremental().from_config(grown.version))
        .expect_err("a reconfig from the grown version");
    assert!(matches!(stale, Error::BadVersion(_)), "{stale}");

    // Every client works after the faults.
    faults_over.store(true, Ordering::SeqCst);
    let wanted = if long() { 200 } else { 5 };
    let deadline = Instant::now() + WAIT;
    loop {
        let after = ledger.lock().unwrap().after_faults;
        if after.iter().all(|n| *n >= wanted) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every client took the lock {wanted} times after the faults: {after:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    for h in handles {
        h.join().expect("a worker");
    }

    // The checks.
    for (i, c) in clients.iter().enumerate() {
        assert_eq!(c.session_id(), sessions[i], "client {i}'s session ended");
        let seen = states[i].lock().unwrap().clone();
        assert!(
            !seen.contains(&ConnectionState::Lost),
            "client {i} saw LOST: {seen:?}"
        );
    }
    for c in &tracked {
        let now_on = cluster
            .server_with_session(c.session_id())
            .expect("a member lists the session");
        assert!(
            staying.contains(&now_on),
            "on {now_on}, members {staying:?}"
        );
    }
    let l = ledger.lock().unwrap();
    let mut s = l.sections.clone();
    s.sort_by_key(|x| x.first);
    for w in s.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        assert!(
            a.last < b.first,
            "MUTUAL EXCLUSION VIOLATED: client {} (token {}) overlaps client {} (token {})",
            a.who,
            a.token,
            b.who,
            b.token
        );
        assert!(
            a.token < b.token,
            "FENCING TOKENS NOT INCREASING: {} then {}",
            a.token,
            b.token
        );
    }
    let total = DistributedAtomicLong::new(&admin, COUNTER, None, None)
        .unwrap()
        .get_blocking()
        .unwrap()
        .post_value as u64;
    assert!(
        l.acked <= total && total <= l.acked + l.unknown,
        "COUNT WRONG: final {total}, acked {}, unknown {}, failed {}",
        l.acked,
        l.unknown,
        l.failed
    );
    for c in clients {
        c.close_blocking();
    }
    let mut left = Vec::new();
    eventually("no lock node left", WAIT, || {
        left = match admin.get_children_blocking(LOCK) {
            Ok(kids) => kids,
            Err(e) if e.kind() == ErrorKind::NoNode => Vec::new(),
            Err(e) => panic!("list {LOCK}: {e}"),
        };
        left.is_empty()
    });
    admin.close_blocking();
    let per_client: Vec<usize> = (0..3)
        .map(|i| s.iter().filter(|x| x.who == i).count())
        .collect();
    eprintln!(
        "FAULTS | 19 reconfiguration 3 -> 5 -> 3 under a cut, a leader kill and a removed member | Rust (2 tracking clients, 1 behind the proxy) | {} lock sections (per client {per_client:?}), 0 overlaps, tokens increasing; {} acquire errors during the faults; increments acked {}, unknown {}, failed {}, final {total}; stale from_config refused twice (BadVersion); sessions kept 3 of 3, LOST 0; trackers on the final members {final_hosts}{}; 0 lock nodes left | violations 0 | {:.1} s",
        s.len(),
        l.acquire_errors,
        l.acked,
        l.unknown,
        l.failed,
        if victim_was_a_clients { " (the removed member was a tracked client's)" } else { " (both tracked clients were on the proxied server: another member was removed)" },
        start.elapsed().as_secs_f64()
    );
}
