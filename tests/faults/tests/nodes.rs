//! Fault scenarios of nodes and membership (issue 17): a PersistentNode through ensemble leader
//! kills, a session expiry and deletes; a protected ephemeral-sequential node through three
//! reconnections (its server killed under it) — exactly one node at every sample; a
//! PersistentTtlNode whose owner process is killed with SIGKILL — gone within TTL + margin,
//! while that owner's session is still alive.
//!
//! Each scenario samples the server continuously from a second client and checks the samples,
//! not only the end state. Waits are condition-based with deadlines. Rows of the summary table
//! (`FAULTS | ...`) are printed as in `tests/faults.rs`; `tests/faults/run` collects them.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use zkrecipes::client::CreateMode;
use zkrecipes::nodes::{PersistentNode, PersistentTtlNode};
use zkrecipes::{Client, ClientBuilder};
use zkrecipes_faults::child::{ChildProcess, Children, Program, CHILD_CONNECT, CHILD_PATH};
use zkrecipes_faults::eventually;
use zkrecipes_testing::{TestingCluster, TestingServer};

const WAIT: Duration = Duration::from_secs(30);

fn long() -> bool {
    std::env::var("ZKR_FAULTS_LONG").is_ok_and(|v| v == "1")
}

/// One scenario at a time (each starts its own servers).
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn client_to(connect: &str, session: Duration) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(session)
        .connection_timeout(Duration::from_secs(15))
        .connect_blocking()
        .unwrap_or_else(|e| panic!("connect to {connect}: {e}"))
}

fn report(name: &str, runtimes: &str, start: Instant, summary: &str) {
    eprintln!(
        "FAULTS | {name} | {runtimes} | {summary} | violations 0 | {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

/// What a sampler saw at one instant: the children of a parent with their ephemeral owners.
#[derive(Clone, Debug)]
struct Sample {
    at: Instant,
    nodes: Vec<(String, i64)>,
}

/// Reads `parent`'s children (and their owners) every few milliseconds from its own client
/// until stopped. A read that fails (the sampler's own server was killed) is skipped; a read
/// may also wait for the sampler's own reconnection, so [`taken`](Sampler::taken) tells how
/// many samples there are so far.
struct Sampler {
    stop: Arc<AtomicBool>,
    taken: Arc<AtomicUsize>,
    thread: Option<JoinHandle<Vec<Sample>>>,
}

impl Sampler {
    fn start(client: Client, parent: &str) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let taken = Arc::new(AtomicUsize::new(0));
        let (flag, count, parent) = (stop.clone(), taken.clone(), parent.to_string());
        let thread = thread::spawn(move || {
            let mut samples = Vec::new();
            while !flag.load(Ordering::SeqCst) {
                if let Ok(children) = client.get_children_blocking(&parent) {
                    let mut nodes = Vec::new();
                    for c in children {
                        let p = format!("{parent}/{c}");
                        if let Ok(Some(stat)) = client.exists_blocking(&p) {
                            nodes.push((c, stat.ephemeral_owner));
                        }
                    }
                    samples.push(Sample {
                        at: Instant::now(),
                        nodes,
                    });
                    count.fetch_add(1, Ordering::SeqCst);
                }
                thread::sleep(Duration::from_millis(5));
            }
            client.close_blocking();
            samples
        });
        Sampler {
            stop,
            taken,
            thread: Some(thread),
        }
    }

    /// The samples taken so far.
    fn taken(&self) -> usize {
        self.taken.load(Ordering::SeqCst)
    }

    /// Waits until `n` more samples than now have been taken.
    fn wait_for_more(&self, n: usize) {
        let from = self.taken();
        eventually(&format!("{n} more samples"), WAIT, || {
            self.taken() >= from + n
        });
    }

    fn finish(mut self) -> Vec<Sample> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap()
    }
}

/// Records every session id `client` has had (sampled), so that a sample's owner can be
/// checked to be one of ours.
fn sessions_of(client: &Client, seen: &Arc<Mutex<Vec<i64>>>) {
    let id = client.session_id();
    let mut s = seen.lock().unwrap();
    if id != 0 && !s.contains(&id) {
        s.push(id);
    }
}

// ------------------------------------------------------------------------------------------
// 7. A PersistentNode through ensemble leader kills, a session expiry and deletes
// ------------------------------------------------------------------------------------------

#[test]
fn persistent_node_comes_back_after_leader_kills_expiry_and_deletes() {
    let _serial = serial();
    let start = Instant::now();
    let cluster = TestingCluster::start(3);
    let connect = cluster.connect_string();
    let owner = client_to(&connect, Duration::from_secs(6));
    let other = client_to(&connect, Duration::from_secs(10));
    let node = PersistentNode::new(&owner, "/f7/svc/a", CreateMode::Ephemeral, b"addr", false)
        .expect("node");
    node.start().unwrap();
    assert!(node.wait_for_initial_create_blocking(Some(WAIT)).unwrap());
    let sessions = Arc::new(Mutex::new(Vec::new()));
    sessions_of(&owner, &sessions);
    let sampler = Sampler::start(client_to(&connect, Duration::from_secs(10)), "/f7/svc");
    let present = |what: &str| {
        eventually(what, WAIT, || {
            sessions_of(&owner, &sessions);
            matches!(other.get_data_blocking("/f7/svc/a"), Ok((d, s))
                if d == b"addr" && s.ephemeral_owner == owner.session_id())
        })
    };
    let rounds = if long() { 6 } else { 2 };
    let mut recreated = Vec::new();
    for round in 0..rounds {
        let leader = cluster.wait_for_quorum(WAIT).expect("a leader");
        cluster.server(leader).kill();
        cluster
            .wait_for_quorum(WAIT)
            .expect("the survivors elect a leader");
        present(&format!(
            "the node after killing leader {leader} (round {round})"
        ));

        // Deleted by someone else while the ensemble runs on two servers.
        let t = Instant::now();
        other
            .delete_blocking("/f7/svc/a", Default::default())
            .unwrap();
        present(&format!(
            "the node re-created after a delete (round {round})"
        ));
        recreated.push(format!("delete {:.2} s", t.elapsed().as_secs_f64()));

        // The owner's session expired on the server.
        // Timed from LOST (the harness's own expiry may take a while: it joins the session
        // through the connect string, whose first server may be the one just killed).
        let old = owner.session_id();
        zkrecipes::runtime::block_on(zkrecipes_testing::expire_client_session(&owner))
            .expect("expire");
        let t = Instant::now();
        eventually("a new session", WAIT, || {
            owner.session_id() != old && owner.state().is_connected()
        });
        present(&format!("the node re-created after expiry (round {round})"));
        recreated.push(format!("expiry {:.2} s", t.elapsed().as_secs_f64()));

        cluster.server(leader).start();
        cluster.wait_for_quorum(WAIT).expect("quorum again");
    }
    node.close_blocking().unwrap();
    let samples = sampler.finish();
    sessions_of(&owner, &sessions);
    let sessions = sessions.lock().unwrap().clone();
    // Never another session's node, never two nodes.
    for s in &samples {
        assert!(s.nodes.len() <= 1, "two nodes at one instant: {s:?}");
        for (name, owner) in &s.nodes {
            assert_eq!(name, "a");
            assert!(
                sessions.contains(owner),
                "a node of session {owner:#x}, not ours"
            );
        }
    }
    assert!(other.exists_blocking("/f7/svc/a").unwrap().is_none());
    owner.close_blocking();
    other.close_blocking();
    report(
        &format!("7 persistent node: kill leader, delete, expire x{rounds}"),
        "Rust",
        start,
        &format!(
            "{} samples, never 2 nodes nor a stranger's; re-created after ({})",
            samples.len(),
            recreated.join(", ")
        ),
    );
}

// ------------------------------------------------------------------------------------------
// 8. A protected ephemeral-sequential node through three reconnections: exactly one node
// ------------------------------------------------------------------------------------------

/// The index of the server where `session` is connected (from `cons`), if any.
fn server_of(cluster: &TestingCluster, session: i64) -> Option<usize> {
    let needle = format!("sid=0x{:x}", session as u64);
    (0..cluster.len()).find(|&i| cluster.server(i).four_letter("cons").contains(&needle))
}

#[test]
fn protected_sequential_node_stays_exactly_one_through_reconnections() {
    let _serial = serial();
    let start = Instant::now();
    let cluster = TestingCluster::start(3);
    let connect = cluster.connect_string();
    // A session long enough to outlive every reconnection: the node must never go.
    let owner = client_to(&connect, Duration::from_secs(20));
    let node = PersistentNode::new(
        &owner,
        "/f8/reg/m-",
        CreateMode::EphemeralSequential,
        b"x",
        true,
    )
    .expect("node");
    node.start().unwrap();
    assert!(node.wait_for_initial_create_blocking(Some(WAIT)).unwrap());
    let actual = node.actual_path().unwrap();
    let name = actual.rsplit('/').next().unwrap().to_string();
    let session = owner.session_id();
    let sampler = Sampler::start(client_to(&connect, Duration::from_secs(10)), "/f8/reg");
    let rounds = if long() { 9 } else { 3 };
    let mut reconnects = Vec::new();
    for round in 0..rounds {
        // Samples between the kills (the sampler's own reads wait while its server is down).
        sampler.wait_for_more(8);
        let mut at = None;
        eventually("the owner's server is known", WAIT, || {
            at = server_of(&cluster, owner.session_id());
            at.is_some()
        });
        let at = at.unwrap();
        let t = Instant::now();
        cluster.server(at).kill();
        eventually("the owner reconnected elsewhere", WAIT, || {
            server_of(&cluster, owner.session_id()).is_some_and(|i| i != at)
                && owner.state().is_connected()
        });
        eventually("registered again", WAIT, || node.is_registered());
        reconnects.push(format!("{:.2} s", t.elapsed().as_secs_f64()));
        assert_eq!(
            owner.session_id(),
            session,
            "round {round}: the session was lost"
        );
        assert_eq!(node.actual_path().unwrap(), actual);
        cluster.server(at).start();
        cluster.wait_for_quorum(WAIT).expect("quorum again");
    }
    sampler.wait_for_more(8);
    let samples = sampler.finish();
    assert!(samples.len() >= 32, "{} samples", samples.len());
    for s in &samples {
        assert_eq!(
            s.nodes,
            vec![(name.clone(), session)],
            "not exactly our one node at {:?}",
            s.at
        );
    }
    node.close_blocking().unwrap();
    let check = client_to(&connect, Duration::from_secs(10));
    assert!(check
        .get_children_blocking("/f8/reg")
        .unwrap_or_default()
        .is_empty());
    check.close_blocking();
    owner.close_blocking();
    report(
        &format!("8 protected ephemeral-sequential node, its server killed x{rounds}"),
        "Rust",
        start,
        &format!(
            "{} samples, exactly one node (same path, same session) in each; reconnected after ({})",
            samples.len(),
            reconnects.join(", ")
        ),
    );
}

// ------------------------------------------------------------------------------------------
// 9. A PersistentTtlNode whose owner process is killed with SIGKILL
// ------------------------------------------------------------------------------------------

const TTL: Duration = Duration::from_millis(1500);

const TTL_OWNER: Program = Program {
    rust_test: "ttl_node_goes_within_its_ttl_after_its_owner_is_killed",
    stem: "ttl_owner",
    java: "TtlOwner",
};

/// The child's side: keep a PersistentTtlNode at `path` (a session of 60 s, far longer than the
/// TTL), say so, and wait until killed or stdin closes. Never returns.
fn child_ttl_owner(connect: &str, path: &str) -> ! {
    let client = client_to(connect, Duration::from_secs(60));
    let node = PersistentTtlNode::new(&client, path, TTL, b"owner").unwrap();
    node.start().unwrap();
    assert!(node.wait_for_initial_create_blocking(Some(WAIT)).unwrap());
    let mut out = std::io::stdout().lock();
    writeln!(out, "ZKR_CHILD_STARTED {}", client.session_id()).unwrap();
    out.flush().unwrap();
    drop(out);
    let mut line = String::new();
    while std::io::stdin()
        .read_line(&mut line)
        .map(|n| n > 0)
        .unwrap_or(false)
    {
        line.clear();
    }
    std::process::exit(0);
}

#[test]
fn ttl_node_goes_within_its_ttl_after_its_owner_is_killed() {
    if let (Ok(c), Ok(p)) = (std::env::var(CHILD_CONNECT), std::env::var(CHILD_PATH)) {
        child_ttl_owner(&c, &p);
    }
    let _serial = serial();
    let start = Instant::now();
    let server = TestingServer::start();
    let connect = server.connect_string();
    let children = Children::prepare(TTL_OWNER, &["rust"]);
    let watcher = client_to(&connect, Duration::from_secs(10));
    let rounds = if long() { 5 } else { 2 };
    let margin = Duration::from_secs(3);
    let mut gone_after = Vec::new();
    for round in 0..rounds {
        let path = format!("/f9/reg-{round}");
        let mut child =
            ChildProcess::spawn("rust", children.command("rust", &connect, &path), |_| None);
        let started = child.until(&["STARTED"], WAIT).0;
        let _child_session: i64 = started.arg(0);
        eventually("the touch child", WAIT, || {
            watcher
                .exists_blocking(&format!("{path}/touch"))
                .unwrap()
                .is_some()
        });
        // While the owner lives, the node stays: three TTLs, sampled.
        let kept = Instant::now();
        while kept.elapsed() < TTL * 3 {
            assert!(
                watcher.exists_blocking(&path).unwrap().is_some(),
                "round {round}: the node went while its owner lived"
            );
            thread::sleep(Duration::from_millis(20));
        }
        let killed = Instant::now();
        child.kill(); // SIGKILL: no close, no delete; its session lives on for 60 s
        eventually("the node is gone within TTL + margin", TTL + margin, || {
            watcher.exists_blocking(&path).unwrap().is_none()
        });
        let after = killed.elapsed();
        eprintln!("round {round}: TTL node gone {after:?} after kill -9 (ttl {TTL:?})");
        gone_after.push(format!("{:.2} s", after.as_secs_f64()));
    }
    watcher.close_blocking();
    report(
        &format!("9 kill -9 PersistentTtlNode owner x{rounds}"),
        "Rust owner process",
        start,
        &format!(
            "stayed 3 TTLs while alive; gone after kill -9 in ({}) with ttl {:.1} s",
            gone_after.join(", "),
            TTL.as_secs_f64()
        ),
    );
}
