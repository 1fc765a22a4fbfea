//! The fault suite's queue and barrier scenarios (issue 18, acceptance 2 and 4):
//!
//! 7. 1,000 items, four exactly-once consumers in four faces (Rust, C, Python, Node) as
//!    separate processes, one of them kill -9'd mid-item (after its write reached the sink,
//!    before it completed the item): every item is completed exactly once, and the fenced sink
//!    ends with each item's write from the consumer that completed it.
//! 8. Double-barrier and barrier waiters whose server freezes (SIGSTOP) or crashes get a
//!    connection error, not a hang.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use zkrecipes::barriers::{DistributedBarrier, DistributedDoubleBarrier};
use zkrecipes::queue::{DistributedQueue, QueueOptions};
use zkrecipes::{Client, ClientBuilder, ErrorKind, RetryPolicy};
use zkrecipes_faults::child::{ChildProcess, Children, Program, CHILD_CONNECT, CHILD_PATH};
use zkrecipes_faults::eventually;
use zkrecipes_testing::TestingServer;

const WAIT: Duration = Duration::from_secs(60);

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

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ZKR_CHILD_{line}").unwrap();
    out.flush().unwrap();
}

fn count(client: &Client, path: &str) -> usize {
    match client.get_children_blocking(path) {
        Ok(c) => c.len(),
        Err(e) if e.kind() == ErrorKind::NoNode => 0,
        Err(e) => panic!("list {path}: {e}"),
    }
}

// ------------------------------------------------------------------------------------------
// 7. kill -9 a consumer mid-item
// ------------------------------------------------------------------------------------------

const CONSUMER: Program = Program {
    rust_test: "killed_consumer_leaves_its_item_and_every_item_is_completed_once",
    stem: "queue_consumer",
    java: "unused",
};

/// The Rust consumer (this test binary re-run as the child): queue_consumer.py's protocol.
fn child_consumer(connect: &str, path: &str) -> ! {
    let client = client_to(connect, Duration::from_secs(2));
    let q = DistributedQueue::new(
        &client,
        path,
        QueueOptions::default().lock_path(format!("{path}-locks")),
    )
    .unwrap();
    say("READY");
    let stdin = std::io::stdin();
    while let Some(item) = q.take_blocking(Some(Duration::from_secs(5))).unwrap() {
        let data = String::from_utf8_lossy(item.data()).into_owned();
        let token = item.fencing_token();
        say(&format!("WRITE {data} {token}"));
        let mut reply = String::new();
        if stdin.read_line(&mut reply).unwrap_or(0) == 0 {
            std::process::exit(0);
        }
        if !reply.starts_with("OK") {
            say(&format!("STALE {data}"));
            item.release_blocking().unwrap();
            continue;
        }
        match item.done_blocking() {
            Ok(()) => say(&format!("DONE {data} {token}")),
            Err(e) => say(&format!("DONEFAIL {data} {}", e.kind().name())),
        }
    }
    say("FINISHED");
    client.close_blocking();
    std::process::exit(0);
}

/// The sink the consumers write to: per item, a write is accepted only with a token larger
/// than every token it saw for that item (a later taker of an item always has a larger one).
#[derive(Default)]
struct Sink {
    best: HashMap<String, (i64, String)>,
    accepted: usize,
    refused: usize,
}

#[test]
fn killed_consumer_leaves_its_item_and_every_item_is_completed_once() {
    if let (Ok(c), Ok(p)) = (std::env::var(CHILD_CONNECT), std::env::var(CHILD_PATH)) {
        child_consumer(&c, &p);
    }
    let _serial = serial();
    let start = Instant::now();
    let server = TestingServer::start();
    let path = "/f7-queue/jobs";
    let items = if std::env::var("ZKR_FAULTS_LONG").is_ok_and(|v| v == "1") {
        5_000
    } else {
        1_000
    };
    let runtimes = ["rust", "c", "python", "node"];
    let victim = "python";
    let kill_at = 40; // the victim's 40th item
    let children = Children::prepare(CONSUMER, &runtimes);
    let producer = client_to(&server.connect_string(), Duration::from_secs(10));
    let q = DistributedQueue::new(
        &producer,
        path,
        QueueOptions::default().lock_path(format!("{path}-locks")),
    )
    .unwrap();
    for i in 0..items {
        assert!(q
            .put_blocking(format!("item-{i}").as_bytes(), None)
            .unwrap());
    }
    let sink = Arc::new(Mutex::new(Sink::default()));
    let events = Arc::new(Mutex::new(Vec::<(String, String, Vec<String>)>::new()));
    let (killed_tx, killed_rx) = mpsc::channel::<(String, i64)>();
    let mut procs: BTreeMap<&str, ChildProcess> = BTreeMap::new();
    for rt in runtimes {
        let (sink, events, killed_tx) = (sink.clone(), events.clone(), killed_tx.clone());
        let writes = AtomicUsize::new(0);
        let answer = move |e: &zkrecipes_faults::child::Event| {
            events
                .lock()
                .unwrap()
                .push((rt.to_string(), e.kind.clone(), e.args.clone()));
            if e.kind != "WRITE" {
                return None;
            }
            let (item, token): (String, i64) = (e.arg(0), e.arg(1));
            let mut s = sink.lock().unwrap();
            let ok = s.best.get(&item).is_none_or(|(t, _)| token > *t);
            if ok {
                s.best.insert(item.clone(), (token, rt.to_string()));
                s.accepted += 1;
            } else {
                s.refused += 1;
            }
            drop(s);
            if rt == victim && writes.fetch_add(1, Ordering::SeqCst) + 1 == kill_at {
                // Mid-item: its write is in the sink, its item not completed. No answer.
                let _ = killed_tx.send((item, token));
                return None;
            }
            Some(if ok { "OK".into() } else { "STALE".into() })
        };
        let cmd = children.command(rt, &server.connect_string(), path);
        procs.insert(rt, ChildProcess::spawn(rt, cmd, answer));
    }
    let (killed_item, killed_token) = killed_rx
        .recv_timeout(WAIT)
        .expect("the victim took 40 items");
    procs.get_mut(victim).unwrap().kill();
    for (rt, p) in procs.iter_mut() {
        if *rt != victim {
            p.wait_success(Duration::from_secs(180));
        }
    }
    // Every event is in: check the invariants.
    let events = events.lock().unwrap();
    let mut done: HashMap<String, Vec<(String, i64)>> = HashMap::new();
    let mut per_runtime: BTreeMap<String, usize> = BTreeMap::new();
    for (rt, kind, args) in events.iter() {
        match kind.as_str() {
            "DONE" => {
                done.entry(args[0].clone())
                    .or_default()
                    .push((rt.clone(), args[1].parse().unwrap()));
                *per_runtime.entry(rt.clone()).or_default() += 1;
            }
            "DONEFAIL" | "STALE" => panic!("{rt}: unexpected {kind} {args:?}"),
            _ => {}
        }
    }
    let sink = sink.lock().unwrap();
    let mut violations = Vec::new();
    for i in 0..items {
        let item = format!("item-{i}");
        match done.get(&item).map(Vec::as_slice) {
            None | Some([]) => violations.push(format!("LOST: {item} never completed")),
            Some([(rt, token)]) => {
                if sink.best.get(&item) != Some(&(*token, rt.clone())) {
                    violations.push(format!(
                        "{item}: completed by {rt} with token {token}, the sink holds {:?}",
                        sink.best.get(&item)
                    ));
                }
            }
            Some(more) => violations.push(format!("TWICE: {item} completed by {more:?}")),
        }
    }
    let (retaker, retoken) = done
        .get(&killed_item)
        .and_then(|d| d.first().cloned())
        .expect("the killed consumer's item was completed by another");
    assert!(retaker != victim && retoken > killed_token);
    assert!(
        violations.is_empty(),
        "{} violations: {:?}",
        violations.len(),
        &violations[..violations.len().min(10)]
    );
    for rt in runtimes.iter().filter(|r| **r != victim) {
        assert!(
            per_runtime.get(*rt).copied().unwrap_or(0) > 0,
            "{rt} completed nothing"
        );
    }
    eventually("the queue and its locks empty", WAIT, || {
        count(&producer, path) == 0 && count(&producer, &format!("{path}-locks")) == 0
    });
    eprintln!(
        "FAULTS | 10 queue: kill -9 a consumer mid-item | {} | {items} items, completed {}, {killed_item} retaken by {retaker} (token {killed_token} -> {retoken}), sink writes {} accepted {} refused | violations 0 | {:.1} s",
        runtimes.join("+"),
        per_runtime
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        sink.accepted,
        sink.refused,
        start.elapsed().as_secs_f64()
    );
}

// ------------------------------------------------------------------------------------------
// 8. Barrier waiters whose server freezes or crashes
// ------------------------------------------------------------------------------------------

#[test]
fn barrier_waiters_get_a_connection_error_when_their_server_freezes_or_dies() {
    let _serial = serial();
    let start = Instant::now();
    let mut outcomes = Vec::new();
    for freeze in [true, false] {
        let server = TestingServer::start();
        let client = ClientBuilder::new(server.connect_string())
            .session_timeout(Duration::from_secs(4))
            .connection_timeout(Duration::from_secs(2))
            .retry_policy(RetryPolicy::NTimes {
                n: 3,
                sleep: Duration::from_millis(200),
            })
            .connect_blocking()
            .unwrap();
        let member = DistributedDoubleBarrier::new(&client, "/f8/double", 2).unwrap();
        let barrier = DistributedBarrier::new(&client, "/f8/simple").unwrap();
        barrier.set_barrier_blocking().unwrap();
        let (tx, rx) = mpsc::channel();
        let tx2 = tx.clone();
        let a =
            std::thread::spawn(move || tx.send(("enter", member.enter_blocking(None))).unwrap());
        let b = std::thread::spawn(move || {
            tx2.send(("wait", barrier.wait_on_barrier_blocking(None)))
                .unwrap()
        });
        let observer = client_to(&server.connect_string(), Duration::from_secs(10));
        eventually("the member's node", WAIT, || {
            count(&observer, "/f8/double") == 1
        });
        observer.close_blocking();
        let t0 = Instant::now();
        if freeze {
            server.pause();
        } else {
            server.kill();
        }
        for _ in 0..2 {
            let (what, r) = rx.recv_timeout(WAIT).expect("a barrier waiter hung");
            let e = r.expect_err(what);
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::ConnectionLoss | ErrorKind::SessionExpired
                ),
                "{what}: {e}"
            );
            outcomes.push(format!(
                "{} {what}: {} after {:.1} s",
                if freeze { "frozen" } else { "killed" },
                e.kind().name(),
                t0.elapsed().as_secs_f64()
            ));
        }
        a.join().unwrap();
        b.join().unwrap();
        if freeze {
            server.resume();
        }
    }
    eprintln!(
        "FAULTS | 11 barrier waiters: server frozen or killed | rust | {} | violations 0 | {:.1} s",
        outcomes.join("; "),
        start.elapsed().as_secs_f64()
    );
}
