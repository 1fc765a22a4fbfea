//! Queue extras (issue 32): put_multi, put listeners, error modes and the QueueSharder,
//! against a real ZooKeeper started by the harness.

use std::collections::HashSet;
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zkrecipes::queue::{
    DistributedDelayQueue, DistributedPriorityQueue, DistributedQueue, ErrorMode, ItemKey,
    PutEvent, QueueKind, QueueOptions, QueueSharder, SharderOptions, SharderPolicies,
};
use zkrecipes::{Client, ClientBuilder, ErrorKind};
use zkrecipes_testing::{expire_client_session, TestingServer};

const SECOND: Duration = Duration::from_secs(1);

fn connect(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(10 * SECOND)
        .connection_timeout(5 * SECOND)
        .connect_blocking()
        .expect("connect")
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

fn children(client: &Client, path: &str) -> Vec<String> {
    match client.get_children_blocking(path) {
        Ok(mut c) => {
            c.sort();
            c
        }
        Err(e) if e.kind() == ErrorKind::NoNode => Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    }
}

fn locked(lock_path: &str) -> QueueOptions {
    QueueOptions::default().lock_path(lock_path)
}

/// Curator's ItemSerializer framing, written out by hand (not through our encoder).
fn curator_framing(messages: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![0, 1, 0, 1];
    for m in messages {
        out.push(1);
        out.extend_from_slice(&(m.len() as u32).to_be_bytes());
        out.extend_from_slice(m);
    }
    out.push(2);
    out
}

#[test]
fn put_multi_writes_one_node_in_curators_framing_and_hands_the_messages_out_together() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = DistributedQueue::new(&client, "/pm/q", locked("/pm/q-locks")).unwrap();
    assert!(q.put_multi_blocking(&[b"a", b"", b"ccc"], None).unwrap());
    assert!(q.put_blocking(b"single", None).unwrap());
    let nodes = children(&client, "/pm/q");
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    let (raw, _) = client
        .get_data_blocking(&format!("/pm/q/{}", nodes[0]))
        .unwrap();
    assert_eq!(raw, curator_framing(&[b"a", b"", b"ccc"]));
    // Curator's consumer writes the same bytes for its putMulti: ours reads them back.
    client
        .create_blocking(
            "/pm/q/queue-",
            &curator_framing(&[b"x", b"y"]),
            zkrecipes::client::CreateOptions::new(zkrecipes::CreateMode::PersistentSequential),
        )
        .unwrap();
    let first = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(first.messages(), &[b"a".to_vec(), vec![], b"ccc".to_vec()]);
    assert_eq!(first.data(), b"a");
    first.done_blocking().unwrap();
    let second = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(second.messages(), &[b"single".to_vec()]);
    second.done_blocking().unwrap();
    let third = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(third.messages(), &[b"x".to_vec(), b"y".to_vec()]);
    third.done_blocking().unwrap();
    // An item needs a message; a key of another kind is refused.
    let e = q.put_multi_blocking(&[], None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = zkrecipes::runtime::block_on(q.put_multi_with(&[b"x"], ItemKey::Priority(1), None))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(children(&client, "/pm/q").is_empty());
}

#[test]
fn priority_and_delay_put_multi_keep_their_keys() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let pq = DistributedPriorityQueue::new(&client, "/pm/prio", locked("/pm/prio-locks")).unwrap();
    assert!(pq
        .put_multi_blocking(&[b"late-1", b"late-2"], 9, None)
        .unwrap());
    assert!(pq.put_multi_blocking(&[b"early"], -3, None).unwrap());
    let first = pq.take(Some(SECOND));
    let first = zkrecipes::runtime::block_on(first).unwrap().unwrap();
    assert_eq!(first.messages(), &[b"early".to_vec()]);
    assert!(
        first.node().starts_with("queue-0FFFFFFFD"),
        "{}",
        first.node()
    );
    first.done_blocking().unwrap();
    let second = zkrecipes::runtime::block_on(pq.take(Some(SECOND)))
        .unwrap()
        .unwrap();
    assert_eq!(second.messages(), &[b"late-1".to_vec(), b"late-2".to_vec()]);
    second.done_blocking().unwrap();

    let dq = DistributedDelayQueue::new(&client, "/pm/delay", locked("/pm/delay-locks")).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(dq
        .put_multi_blocking(&[b"d1", b"d2"], now + 700, None)
        .unwrap());
    let started = Instant::now();
    let item = zkrecipes::runtime::block_on(dq.take(Some(20 * SECOND)))
        .unwrap()
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert_eq!(item.messages(), &[b"d1".to_vec(), b"d2".to_vec()]);
    assert!(item.node().starts_with(&format!("queue-|{:X}|", now + 700)));
    item.done_blocking().unwrap();
}

#[test]
fn put_listeners_hear_every_completed_put_and_nothing_after_removal() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = DistributedQueue::new(&client, "/pl/q", locked("/pl/q-locks").max_items(2)).unwrap();
    let (tx, rx) = mpsc::channel::<PutEvent>();
    let tx = Mutex::new(tx);
    let id = q.add_put_listener(move |e| tx.lock().unwrap().send(e.clone()).unwrap());
    assert!(q.put_blocking(b"one", None).unwrap());
    assert!(q.put_multi_blocking(&[b"two", b"three"], None).unwrap());
    let a = rx.recv_timeout(10 * SECOND).unwrap();
    let b = rx.recv_timeout(10 * SECOND).unwrap();
    assert_eq!((a.messages, a.multi), (vec![b"one".to_vec()], false));
    assert_eq!(
        (b.messages, b.multi),
        (vec![b"two".to_vec(), b"three".to_vec()], true)
    );
    let nodes = children(&client, "/pl/q");
    assert_eq!(
        [a.node, b.node],
        [format!("/pl/q/{}", nodes[0]), format!("/pl/q/{}", nodes[1])]
    );
    // A put that found no room in time put nothing, and nobody hears of it.
    assert!(!q
        .put_blocking(b"no room", Some(Duration::from_millis(100)))
        .unwrap());
    // A clone is the same queue: its puts are heard too.
    let clone = q.clone();
    clone
        .take_blocking(Some(SECOND))
        .unwrap()
        .unwrap()
        .done_blocking()
        .unwrap();
    assert!(clone.put_blocking(b"four", None).unwrap());
    let c = rx.recv_timeout(10 * SECOND).unwrap();
    assert_eq!(c.messages, vec![b"four".to_vec()]);
    assert!(q.remove_put_listener(id).unwrap());
    assert!(!q.remove_put_listener(id).unwrap());
    clone
        .take_blocking(Some(SECOND))
        .unwrap()
        .unwrap()
        .done_blocking()
        .unwrap();
    assert!(q.put_blocking(b"five", None).unwrap());
    // A sentinel listener added after the removal hears "five": the removed one did not.
    let (tx2, rx2) = mpsc::channel::<Vec<Vec<u8>>>();
    let tx2 = Mutex::new(tx2);
    q.add_put_listener(move |e| tx2.lock().unwrap().send(e.messages.clone()).unwrap());
    clone
        .take_blocking(Some(SECOND))
        .unwrap()
        .unwrap()
        .done_blocking()
        .unwrap();
    assert!(q.put_blocking(b"six", None).unwrap());
    assert_eq!(
        rx2.recv_timeout(10 * SECOND).unwrap(),
        vec![b"six".to_vec()]
    );
    assert!(rx.try_recv().is_err(), "a removed listener heard a put");
    // Another recipe's id is refused.
    let other = DistributedQueue::new(&client, "/pl/other", QueueOptions::default()).unwrap();
    let foreign = other.add_put_listener(|_| {});
    let e = q.remove_put_listener(foreign).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_failed_item_is_requeued_at_the_tail_with_its_key_or_deleted() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = DistributedQueue::new(&client, "/em/q", locked("/em/q-locks")).unwrap();
    assert_eq!(q.error_mode(), ErrorMode::Requeue, "Curator's default");
    for d in [b"a", b"b"] {
        assert!(q.put_blocking(d, None).unwrap());
    }
    let a = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    let old_node = a.node().to_string();
    assert_eq!(a.data(), b"a");
    a.fail_blocking().unwrap();
    // Requeued: at the tail, a new node with the same framing; our lock is gone.
    let nodes = children(&client, "/em/q");
    assert_eq!(nodes.len(), 2);
    assert!(!nodes.contains(&old_node), "{nodes:?}");
    assert!(children(&client, "/em/q-locks").is_empty());
    let b = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(b.data(), b"b");
    b.done_blocking().unwrap();
    let again = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(again.data(), b"a");
    // DELETE: a failed item is gone.
    q.set_error_mode(ErrorMode::Delete).unwrap();
    assert_eq!(q.error_mode(), ErrorMode::Delete);
    again.fail_blocking().unwrap();
    assert!(children(&client, "/em/q").is_empty());
    assert!(children(&client, "/em/q-locks").is_empty());

    // A requeued priority item keeps its priority (Curator's comes back with none).
    let pq = DistributedPriorityQueue::new(&client, "/em/prio", locked("/em/prio-locks")).unwrap();
    pq.put_blocking(b"p5", 5, None).unwrap();
    pq.put_blocking(b"p7", 7, None).unwrap();
    let p5 = zkrecipes::runtime::block_on(pq.take(Some(SECOND)))
        .unwrap()
        .unwrap();
    p5.fail_blocking().unwrap();
    let nodes = children(&client, "/em/prio");
    assert!(
        nodes
            .iter()
            .filter(|n| n.starts_with("queue-100000005"))
            .count()
            == 1,
        "{nodes:?}"
    );
    let next = zkrecipes::runtime::block_on(pq.take(Some(SECOND)))
        .unwrap()
        .unwrap();
    assert_eq!(next.data(), b"p5", "still before priority 7");
    next.done_blocking().unwrap();

    // An id queue's requeued item keeps its id (as Curator's).
    let iq = DistributedQueue::with_kind(&client, "/em/id", QueueKind::Id, locked("/em/id-locks"))
        .unwrap();
    zkrecipes::runtime::block_on(iq.put_with(b"i", ItemKey::Id("job/7"), None)).unwrap();
    let i = iq.take_blocking(Some(SECOND)).unwrap().unwrap();
    i.fail_blocking().unwrap();
    let i = iq.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(i.id(), Some("job_7"));
    i.done_blocking().unwrap();
}

#[test]
fn an_error_mode_needs_a_lock_path_and_fail_without_one_is_a_no_op() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let options = QueueOptions::default().error_mode(ErrorMode::Delete);
    let e = DistributedQueue::new(&client, "/em/nolock", options).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let q = DistributedQueue::new(&client, "/em/nolock", QueueOptions::default()).unwrap();
    let e = q.set_error_mode(ErrorMode::Requeue).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    q.put_blocking(b"x", None).unwrap();
    let item = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert!(
        children(&client, "/em/nolock").is_empty(),
        "removed on receipt"
    );
    item.fail_blocking().unwrap();
    assert!(children(&client, "/em/nolock").is_empty());
}

#[test]
fn a_consumer_whose_session_ended_fails_nothing_and_the_item_is_consumed_once() {
    let server = TestingServer::start();
    let doomed = connect(&server.connect_string());
    let other = connect(&server.connect_string());
    let q = DistributedQueue::new(&doomed, "/em/expire", locked("/em/expire-locks")).unwrap();
    q.put_blocking(b"only", None).unwrap();
    let held = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    zkrecipes::runtime::block_on(expire_client_session(&doomed)).unwrap();
    let e = held.fail_blocking().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::SessionExpired, "{e}");
    let q2 = DistributedQueue::new(&other, "/em/expire", locked("/em/expire-locks")).unwrap();
    let retaken = q2.take_blocking(Some(10 * SECOND)).unwrap().unwrap();
    assert_eq!(retaken.data(), b"only");
    retaken.done_blocking().unwrap();
    assert!(q2
        .take_blocking(Some(Duration::from_millis(200)))
        .unwrap()
        .is_none());
    assert!(children(&other, "/em/expire").is_empty());
}

fn sharder_options(threshold: usize, max_queues: usize) -> SharderOptions {
    SharderOptions {
        kind: QueueKind::Queue,
        queue: locked("/sh/locks"),
        policies: SharderPolicies {
            new_queue_threshold: threshold,
            threshold_check: Duration::from_millis(100),
            max_queues,
        },
    }
}

#[test]
fn a_sharder_adds_shards_past_the_threshold_up_to_the_max_and_consumers_follow() {
    let server = TestingServer::start();
    let a_client = connect(&server.connect_string());
    let b_client = connect(&server.connect_string());
    let a =
        QueueSharder::new(&a_client, "/sh/queues", "/sh/leader", sharder_options(5, 3)).unwrap();
    let e = a.get_queue().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "not started: {e}");
    a.start_blocking().unwrap();
    let first = children(&a_client, "/sh/queues");
    assert_eq!(first.len(), 1);
    assert!(first[0].starts_with("queue-") && first[0].len() == "queue-".len() + 36);
    assert_eq!(a.shard_qty(), 1);
    let b =
        QueueSharder::new(&b_client, "/sh/queues", "/sh/leader", sharder_options(5, 3)).unwrap();
    b.start_blocking().unwrap();
    assert_eq!(b.queue_paths(), a.queue_paths(), "b took up a's shard");
    wait_until("one leader", 30 * SECOND, || a.is_leader() != b.is_leader());
    // Past the threshold, the leader adds shards up to the maximum; both sharders follow.
    let mut put = 0;
    while put < 40 {
        let q = if put % 2 == 0 {
            a.get_queue()
        } else {
            b.get_queue()
        }
        .unwrap();
        assert!(q
            .put_blocking(format!("item-{put}").as_bytes(), None)
            .unwrap());
        put += 1;
        if put % 10 == 0 {
            thread::sleep(Duration::from_millis(150));
        }
    }
    wait_until("three shards", 30 * SECOND, || {
        a.shard_qty() == 3 && b.shard_qty() == 3
    });
    thread::sleep(Duration::from_millis(400));
    assert_eq!(
        children(&a_client, "/sh/queues").len(),
        3,
        "never past max_queues"
    );
    // Every item is taken exactly once through the sharders, whichever shard holds it.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let takers: Vec<_> = [a, b]
        .into_iter()
        .map(|s| {
            let seen = seen.clone();
            thread::spawn(move || {
                while let Some(item) = s.take_blocking(Some(2 * SECOND)).unwrap() {
                    seen.lock()
                        .unwrap()
                        .push(String::from_utf8(item.data().to_vec()).unwrap());
                    item.done_blocking().unwrap();
                }
                s.close_blocking().unwrap();
            })
        })
        .collect();
    for t in takers {
        t.join().unwrap();
    }
    let seen = seen.lock().unwrap();
    let distinct: HashSet<&String> = seen.iter().collect();
    assert_eq!(seen.len(), 40, "taken twice or lost");
    assert_eq!(distinct.len(), 40);
    assert!(
        children(&a_client, "/sh/leader").is_empty(),
        "latches closed"
    );
}

#[test]
fn a_sharder_take_follows_a_shard_added_while_it_waits() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let s = QueueSharder::new(
        &client,
        "/sh2/queues",
        "/sh2/leader",
        SharderOptions::default(),
    )
    .unwrap();
    s.start_blocking().unwrap();
    let waiter = {
        let client = client.clone();
        thread::spawn(move || {
            let s2 = QueueSharder::new(
                &client,
                "/sh2/queues",
                "/sh2/leader-2",
                SharderOptions::default(),
            )
            .unwrap();
            s2.start_blocking().unwrap();
            let got = s2.take_blocking(Some(30 * SECOND)).unwrap().map(|i| {
                let d = i.data().to_vec();
                i.done_blocking().unwrap();
                d
            });
            s2.close_blocking().unwrap();
            got
        })
    };
    thread::sleep(Duration::from_millis(300));
    // A shard made by someone else (Curator's sharder, say) while our consumer waits.
    let shard = "/sh2/queues/queue-00000000-0000-4000-8000-000000000000";
    client
        .create_blocking(
            shard,
            &[],
            zkrecipes::client::CreateOptions::new(zkrecipes::CreateMode::Persistent),
        )
        .unwrap();
    let q = DistributedQueue::new(&client, shard, QueueOptions::default()).unwrap();
    q.put_blocking(b"in the new shard", None).unwrap();
    assert_eq!(
        waiter.join().unwrap().as_deref(),
        Some(&b"in the new shard"[..])
    );
    s.close_blocking().unwrap();
    let e = s.get_queue().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
}

#[test]
fn sharder_arguments_are_checked() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let bad = |queues: &str, leader: &str, options: SharderOptions| {
        let e = QueueSharder::new(&client, queues, leader, options).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    };
    bad("/s/q", "/s/q", SharderOptions::default());
    bad("/s/q", "/s/q/leader", SharderOptions::default());
    bad("/", "/l", SharderOptions::default());
    bad("s/q", "/l", SharderOptions::default());
    let o = SharderOptions {
        queue: locked("/s/q/locks"),
        ..Default::default()
    };
    bad("/s/q", "/l", o);
    let mut o = SharderOptions::default();
    o.policies.new_queue_threshold = 0;
    bad("/s/q", "/l", o);
    let mut o = SharderOptions::default();
    o.policies.max_queues = 0;
    bad("/s/q", "/l", o);
    let mut o = SharderOptions::default();
    o.queue.error_mode = Some(ErrorMode::Delete);
    bad("/s/q", "/l", o);
    let s = QueueSharder::new(&client, "/s/q", "/s/l", SharderOptions::default()).unwrap();
    s.start_blocking().unwrap();
    let e = s.start_blocking().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    s.close_blocking().unwrap();
    s.close_blocking().unwrap();
}

/// A sharder's start whose caller stopped waiting while it joined the leader election (a
/// timeout around it) goes on to its end: the sharder is started and leads, instead of being
/// left unstarted with its latch in the election, where a second start failed for good.
#[test]
fn a_sharder_start_dropped_while_it_joins_the_election_still_starts() {
    let server = TestingServer::start();
    let proxy = zkrecipes_testing::FaultProxy::start(&server.connect_string());
    let a = connect(&proxy.connect_string());
    let watcher = connect(&server.connect_string());
    let sharder = Arc::new(
        QueueSharder::new(&a, "/shd/queues", "/shd/leader", sharder_options(5, 3)).unwrap(),
    );
    proxy.delay_replies(Duration::from_millis(1500));
    let starting = {
        let sharder = sharder.clone();
        zkrecipes::runtime::spawn(async move { sharder.start().await })
    };
    wait_until("the sharder's latch node", Duration::from_secs(30), || {
        !children(&watcher, "/shd/leader").is_empty()
    });
    starting.abort();
    assert!(
        zkrecipes::runtime::block_on(starting).is_err_and(|e| e.is_cancelled()),
        "the start answered before it was dropped: its replies were not held back"
    );
    proxy.restore();
    wait_until(
        "the dropped start finished",
        Duration::from_secs(20),
        || sharder.get_queue().is_ok(),
    );
    wait_until("the sharder leads", Duration::from_secs(20), || {
        sharder.is_leader()
    });
    sharder.close_blocking().unwrap();
}
