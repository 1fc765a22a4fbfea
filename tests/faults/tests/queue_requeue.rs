//! The fault suite's error-mode scenario (issue 32): Curator's `ErrorMode.REQUEUE` while
//! consumers' sessions expire mid-item.
//!
//! 17. N items in a DistributedQueue with a lock path and REQUEUE; four consumers, each on its
//!     own session. Every fifth item fails on its first attempt (`fail()`: requeued at the tail
//!     in one transaction that checks the lock). One consumer's session is expired on the server
//!     mid-item, several times: once after its write reached the sink but before `done()`, once
//!     before a `fail()`. Invariants: every item is completed exactly once, by the taker whose
//!     write the fenced sink holds; every failing item was requeued exactly once (a `fail()` on an
//!     ended session requeues nothing: `SessionExpired`, and the item is taken again with a
//!     larger fencing token); nothing is left in the queue or its lock path.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::queue::{DistributedQueue, ErrorMode, QueueOptions};
use zkrecipes::{Client, ClientBuilder, ErrorKind};
use zkrecipes_faults::eventually;
use zkrecipes_testing::{expire_client_session, TestingServer};

const WAIT: Duration = Duration::from_secs(120);

fn client_to(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(4))
        .connection_timeout(Duration::from_secs(15))
        .connect_blocking()
        .unwrap_or_else(|e| panic!("connect to {connect}: {e}"))
}

fn count(client: &Client, path: &str) -> usize {
    match client.get_children_blocking(path) {
        Ok(c) => c.len(),
        Err(e) if e.kind() == ErrorKind::NoNode => 0,
        Err(e) => panic!("list {path}: {e}"),
    }
}

/// What happened, per item.
#[derive(Default)]
struct Ledger {
    /// Completions: (consumer, fencing token).
    done: HashMap<String, Vec<(usize, i64)>>,
    /// Successful fails (requeues).
    requeued: HashMap<String, usize>,
    /// Items whose first attempt has failed (requeued): their next attempt succeeds.
    failed_once: HashSet<String>,
    /// The fenced sink: per item the highest token written, and by whom.
    sink: HashMap<String, (i64, usize)>,
    refused_writes: usize,
    /// done() / fail() refused because the session ended.
    expired_done: usize,
    expired_fail: usize,
}

#[test]
fn requeued_items_are_completed_once_when_consumer_sessions_expire_mid_item() {
    let start = Instant::now();
    let server = TestingServer::start();
    let connect = server.connect_string();
    let path = "/f17-requeue/jobs";
    let locks = "/f17-requeue/jobs-locks";
    let items = if std::env::var("ZKR_FAULTS_LONG").is_ok_and(|v| v == "1") {
        2_000
    } else {
        300
    };
    let options = move || {
        QueueOptions::default()
            .lock_path(locks)
            .error_mode(ErrorMode::Requeue)
    };
    let producer = client_to(&connect);
    let q = DistributedQueue::new(&producer, path, options()).unwrap();
    for i in 0..items {
        assert!(q
            .put_blocking(format!("item-{i}").as_bytes(), None)
            .unwrap());
    }
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let victim = 0usize;
    // The victim's session is expired before the done() of its n-th processed item.
    let expire_before_done = [2usize, 6];
    let expire_before_fail = Arc::new(AtomicBool::new(false));
    let expirations = Arc::new(AtomicUsize::new(0));
    // The others start once the victim's three expiries are behind it (so that it surely gets
    // the items they need), and then take its orphaned items with it.
    let faults_done = Arc::new(Barrier::new(4));
    let consumers: Vec<_> = (0..4)
        .map(|me| {
            let (ledger, connect) = (ledger.clone(), connect.clone());
            let (expire_before_fail, expirations) =
                (expire_before_fail.clone(), expirations.clone());
            let faults_done = faults_done.clone();
            thread::spawn(move || {
                let client = client_to(&connect);
                let q = DistributedQueue::new(&client, path, options()).unwrap();
                let (mut taken, mut processed, mut failing_taken) = (0usize, 0usize, 0usize);
                if me != victim {
                    faults_done.wait();
                }
                let mut waiting = me == victim;
                while let Some(item) = q.take_blocking(Some(Duration::from_secs(3))).unwrap() {
                    taken += 1;
                    if waiting && expirations.load(Ordering::SeqCst) == 3 {
                        waiting = false;
                        faults_done.wait();
                    }
                    let data = String::from_utf8(item.data().to_vec()).unwrap();
                    let token = item.fencing_token();
                    let n: usize = data["item-".len()..].parse().unwrap();
                    let first_attempt = !ledger.lock().unwrap().failed_once.contains(&data);
                    if n % 5 == 0 && first_attempt {
                        failing_taken += 1;
                        // The consumer "throws": the queue's REQUEUE.
                        if me == victim
                            && failing_taken == 1
                            && !expire_before_fail.swap(true, Ordering::SeqCst)
                        {
                            zkrecipes::runtime::block_on(expire_client_session(&client)).unwrap();
                            expirations.fetch_add(1, Ordering::SeqCst);
                        }
                        match item.fail_blocking() {
                            Ok(()) => {
                                let mut l = ledger.lock().unwrap();
                                l.failed_once.insert(data.clone());
                                *l.requeued.entry(data).or_default() += 1;
                            }
                            Err(e) if e.kind() == ErrorKind::SessionExpired => {
                                ledger.lock().unwrap().expired_fail += 1;
                            }
                            Err(e) => panic!("consumer {me}: fail {data}: {e}"),
                        }
                        continue;
                    }
                    // Process: write to the fenced sink, then complete.
                    processed += 1;
                    {
                        let mut l = ledger.lock().unwrap();
                        let ok = l.sink.get(&data).is_none_or(|(t, _)| token > *t);
                        if ok {
                            l.sink.insert(data.clone(), (token, me));
                        } else {
                            l.refused_writes += 1;
                            drop(l);
                            item.release_blocking().unwrap();
                            continue;
                        }
                    }
                    if me == victim && expire_before_done.contains(&processed) {
                        zkrecipes::runtime::block_on(expire_client_session(&client)).unwrap();
                        expirations.fetch_add(1, Ordering::SeqCst);
                    }
                    match item.done_blocking() {
                        Ok(()) => ledger
                            .lock()
                            .unwrap()
                            .done
                            .entry(data)
                            .or_default()
                            .push((me, token)),
                        Err(e) if e.kind() == ErrorKind::SessionExpired => {
                            ledger.lock().unwrap().expired_done += 1;
                        }
                        Err(e) => panic!("consumer {me}: done {data}: {e}"),
                    }
                }
                if waiting {
                    // Never got there (the assertions below say so): let the others go.
                    faults_done.wait();
                }
                client.close_blocking();
                taken
            })
        })
        .collect();
    let taken: Vec<usize> = consumers.into_iter().map(|c| c.join().unwrap()).collect();
    let l = ledger.lock().unwrap();
    let mut violations = Vec::new();
    let mut per_consumer: BTreeMap<usize, usize> = BTreeMap::new();
    for i in 0..items {
        let item = format!("item-{i}");
        match l.done.get(&item).map(Vec::as_slice) {
            None | Some([]) => violations.push(format!("LOST: {item} never completed")),
            Some([(who, token)]) => {
                *per_consumer.entry(*who).or_default() += 1;
                if l.sink.get(&item) != Some(&(*token, *who)) {
                    violations.push(format!(
                        "{item}: completed by {who} with token {token}, the sink holds {:?}",
                        l.sink.get(&item)
                    ));
                }
            }
            Some(more) => violations.push(format!("TWICE: {item} completed by {more:?}")),
        }
        let requeued = l.requeued.get(&item).copied().unwrap_or(0);
        let want = usize::from(i % 5 == 0);
        if requeued != want {
            violations.push(format!("{item} requeued {requeued} times, wanted {want}"));
        }
    }
    assert!(
        violations.is_empty(),
        "{} violations: {:?}",
        violations.len(),
        &violations[..violations.len().min(10)]
    );
    assert_eq!(
        expirations.load(Ordering::SeqCst),
        3,
        "the victim's session expired 3 times"
    );
    assert_eq!(
        l.expired_done, 2,
        "done() after each expiry before done refused"
    );
    assert_eq!(l.expired_fail, 1, "fail() after the expiry refused");
    assert!(
        taken.iter().all(|t| *t > 0),
        "every consumer took items: {taken:?}"
    );
    eventually("the queue and its locks empty", WAIT, || {
        count(&producer, path) == 0 && count(&producer, locks) == 0
    });
    let requeues: usize = l.requeued.values().sum();
    eprintln!(
        "FAULTS | 17 queue: ErrorMode REQUEUE, consumer sessions expired mid-item | rust (4 consumers) | {items} items, {requeues} requeued once each, completed {}, 3 session expiries (2 before done, 1 before fail: refused, the items taken again), sink writes refused {} | violations 0 | {:.1} s",
        per_consumer
            .iter()
            .map(|(k, v)| format!("c{k} {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        l.refused_writes,
        start.elapsed().as_secs_f64()
    );
}
