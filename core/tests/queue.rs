//! Queues (issue 18) against a real ZooKeeper started by the harness.

use std::collections::{HashMap, HashSet};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zkrecipes::client::CreateOptions;
use zkrecipes::queue::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue,
    QueueOptions, SimpleDistributedQueue,
};
use zkrecipes::{Client, ClientBuilder, ConnectionState, CreateMode, ErrorKind};
use zkrecipes_testing::{expire_client_session, FaultProxy, TestingServer};

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

/// A server, a proxy to it, a client `a` through the proxy and a client `b` straight to the
/// server (30 s sessions, 5 s connection timeout).
async fn through_a_proxy() -> (TestingServer, FaultProxy, Client, Client) {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let connect = |to: String| {
        ClientBuilder::new(to)
            .session_timeout(30 * SECOND)
            .connection_timeout(5 * SECOND)
            .connect()
    };
    let a = connect(proxy.connect_string()).await.expect("connect");
    let b = connect(server.connect_string()).await.expect("connect");
    (server, proxy, a, b)
}

fn locked(lock_path: &str) -> QueueOptions {
    QueueOptions::default().lock_path(lock_path)
}

// ---------------------------------------------------------------------------------------------
// SimpleDistributedQueue
// ---------------------------------------------------------------------------------------------

#[test]
fn simple_queue_is_fifo_with_curators_names() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = SimpleDistributedQueue::new(&client, "/q/simple").unwrap();
    assert_eq!(q.peek_blocking().unwrap(), None);
    assert_eq!(q.poll_blocking().unwrap(), None);
    for d in [b"one".as_slice(), b"two", b"three"] {
        let node = q.offer_blocking(d).unwrap();
        assert!(node.starts_with("/q/simple/qn-"), "{node}");
    }
    // Raw bytes, as ZooKeeper's own recipe and Curator store them.
    let names = children(&client, "/q/simple");
    let (raw, _) = client
        .get_data_blocking(&format!("/q/simple/{}", names[0]))
        .unwrap();
    assert_eq!(raw, b"one");
    assert_eq!(q.peek_blocking().unwrap().as_deref(), Some(&b"one"[..]));
    assert_eq!(q.poll_blocking().unwrap().as_deref(), Some(&b"one"[..]));
    assert_eq!(q.take_blocking(None).unwrap().as_deref(), Some(&b"two"[..]));
    assert_eq!(
        q.take_blocking(Some(SECOND)).unwrap().as_deref(),
        Some(&b"three"[..])
    );
    let started = Instant::now();
    assert_eq!(
        q.take_blocking(Some(Duration::from_millis(200))).unwrap(),
        None
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[test]
fn simple_take_returns_an_item_offered_after_the_container_was_reaped() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = SimpleDistributedQueue::new(&client, "/q/reaped").unwrap();
    q.offer_blocking(b"first").unwrap();
    let first_czxid = client.exists_blocking("/q/reaped").unwrap().unwrap().czxid;
    let consumer = connect(&server.connect_string());
    let cq = SimpleDistributedQueue::new(&consumer, "/q/reaped").unwrap();
    assert_eq!(
        cq.take_blocking(None).unwrap().as_deref(),
        Some(&b"first"[..])
    );
    let (tx, rx) = mpsc::channel();
    let t = thread::spawn(move || tx.send(cq.take_blocking(Some(60 * SECOND))).unwrap());
    // The empty container is reaped by the server (the harness checks every 250 ms).
    wait_until("the container reaped", 20 * SECOND, || {
        client
            .exists_blocking("/q/reaped")
            .unwrap()
            .is_none_or(|s| s.czxid != first_czxid)
    });
    q.offer_blocking(b"after the reaping").unwrap();
    let got = rx
        .recv_timeout(30 * SECOND)
        .expect("take hung (CURATOR-308)");
    assert_eq!(got.unwrap().as_deref(), Some(&b"after the reaping"[..]));
    t.join().unwrap();
}

#[test]
fn simple_queue_consumers_never_share_an_item() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = SimpleDistributedQueue::new(&client, "/q/shared").unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let (cs, got) = (server.connect_string(), got.clone());
            thread::spawn(move || {
                let c = connect(&cs);
                let q = SimpleDistributedQueue::new(&c, "/q/shared").unwrap();
                while let Some(d) = q.take_blocking(Some(3 * SECOND)).unwrap() {
                    got.lock().unwrap().push(String::from_utf8(d).unwrap());
                }
            })
        })
        .collect();
    for i in 0..100 {
        q.offer_blocking(format!("{i}").as_bytes()).unwrap();
    }
    for c in consumers {
        c.join().unwrap();
    }
    let got = got.lock().unwrap();
    let distinct: HashSet<_> = got.iter().collect();
    assert_eq!(got.len(), 100, "items taken twice or lost");
    assert_eq!(distinct.len(), 100);
}

// ---------------------------------------------------------------------------------------------
// DistributedQueue: wire format
// ---------------------------------------------------------------------------------------------

#[test]
fn items_use_curators_names_and_framing() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = DistributedQueue::new(&client, "/q/framed", QueueOptions::default()).unwrap();
    assert!(q.put_blocking(b"hi", None).unwrap());
    let names = children(&client, "/q/framed");
    assert_eq!(names.len(), 1);
    assert!(
        names[0].starts_with("queue-") && names[0].len() == 16,
        "{names:?}"
    );
    let (raw, _) = client
        .get_data_blocking(&format!("/q/framed/{}", names[0]))
        .unwrap();
    assert_eq!(raw, [0, 1, 0, 1, 1, 0, 0, 0, 2, b'h', b'i', 2]);
    // An item as Curator's putMulti writes it: two messages in one node.
    let multi = [0, 1, 0, 1, 1, 0, 0, 0, 1, b'a', 1, 0, 0, 0, 0, 2];
    client
        .create_blocking(
            "/q/framed/queue-",
            &multi,
            CreateOptions::new(CreateMode::PersistentSequential).parents(),
        )
        .unwrap();
    let first = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(first.data(), b"hi");
    first.done_blocking().unwrap();
    let second = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(second.messages(), &[b"a".to_vec(), Vec::new()]);
    second.done_blocking().unwrap();
    // Not Curator's framing: reported as corrupted, left in place, then passed over.
    client
        .create_blocking(
            "/q/framed/queue-",
            b"not framed",
            CreateOptions::new(CreateMode::PersistentSequential).parents(),
        )
        .unwrap();
    q.put_blocking(b"after", None).unwrap();
    let e = q.take_blocking(Some(SECOND)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptedData);
    let next = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(next.data(), b"after");
    next.done_blocking().unwrap();
    assert_eq!(q.len_blocking().unwrap(), 1);
}

// ---------------------------------------------------------------------------------------------
// Exactly-once consumption
// ---------------------------------------------------------------------------------------------

/// A sink that refuses a write for an item with a fencing token lower than one it has seen for
/// that item, and counts the completions.
#[derive(Default)]
struct FencedSink {
    tokens: HashMap<String, i64>,
    refused: usize,
}

impl FencedSink {
    fn write(&mut self, item: &str, token: i64) -> bool {
        let best = self.tokens.entry(item.to_string()).or_insert(i64::MIN);
        if token < *best {
            self.refused += 1;
            return false;
        }
        *best = token;
        true
    }
}

#[test]
fn a_consumer_whose_session_ends_mid_item_leaves_it_for_another() {
    let server = TestingServer::start();
    let producer = connect(&server.connect_string());
    let q = DistributedQueue::new(&producer, "/q/once", locked("/q/once-locks")).unwrap();
    for i in 0..3 {
        q.put_blocking(format!("item-{i}").as_bytes(), None)
            .unwrap();
    }
    let doomed_client = connect(&server.connect_string());
    let doomed = DistributedQueue::new(&doomed_client, "/q/once", locked("/q/once-locks")).unwrap();
    let held = doomed.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(held.data(), b"item-0");
    let lock_nodes = children(&producer, "/q/once-locks");
    assert_eq!(lock_nodes, vec![held.node().to_string()]);
    // Another consumer passes over the held item.
    let other_client = connect(&server.connect_string());
    let other = DistributedQueue::new(&other_client, "/q/once", locked("/q/once-locks")).unwrap();
    let next = other.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(next.data(), b"item-1");
    next.done_blocking().unwrap();
    // The holder's session ends mid-item: the item goes back, to a larger fencing token.
    zkrecipes::runtime::block_on(expire_client_session(&doomed_client)).unwrap();
    let retaken = other.take_blocking(Some(10 * SECOND)).unwrap().unwrap();
    assert_eq!(retaken.data(), b"item-0");
    assert!(retaken.fencing_token() > held.fencing_token());
    let mut sink = FencedSink::default();
    assert!(sink.write(retaken.node(), retaken.fencing_token()));
    assert!(
        !sink.write(held.node(), held.fencing_token()),
        "stale token accepted"
    );
    // The old holder cannot complete it...
    let e = held.done_blocking().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::SessionExpired, "{e}");
    // ...the new one does, exactly once.
    retaken.done_blocking().unwrap();
    let last = other.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert_eq!(last.data(), b"item-2");
    last.done_blocking().unwrap();
    assert!(children(&producer, "/q/once").is_empty());
    assert!(children(&producer, "/q/once-locks").is_empty());
}

#[test]
fn four_consumers_complete_every_item_exactly_once() {
    let server = TestingServer::start();
    let producer = connect(&server.connect_string());
    let q = DistributedQueue::new(&producer, "/q/four", locked("/q/four-locks")).unwrap();
    const ITEMS: usize = 200;
    let done = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::new(Mutex::new(FencedSink::default()));
    let consumers: Vec<_> = (0..4)
        .map(|c| {
            let (cs, done, sink) = (server.connect_string(), done.clone(), sink.clone());
            thread::spawn(move || {
                let client = connect(&cs);
                let q = DistributedQueue::new(&client, "/q/four", locked("/q/four-locks")).unwrap();
                let consumer = q.consume();
                let mut n = 0;
                while let Some(item) = consumer.next_blocking(Some(3 * SECOND)).unwrap() {
                    n += 1;
                    // Consumer 0 gives every 7th item back once, unprocessed.
                    if c == 0 && n % 7 == 0 {
                        item.release_blocking().unwrap();
                        continue;
                    }
                    let data = String::from_utf8(item.data().to_vec()).unwrap();
                    assert!(sink.lock().unwrap().write(&data, item.fencing_token()));
                    item.done_blocking().unwrap();
                    done.lock().unwrap().push(data);
                }
            })
        })
        .collect();
    for i in 0..ITEMS {
        q.put_blocking(format!("{i}").as_bytes(), None).unwrap();
    }
    for c in consumers {
        c.join().unwrap();
    }
    let done = done.lock().unwrap();
    let distinct: HashSet<_> = done.iter().collect();
    assert_eq!(done.len(), ITEMS, "an item completed twice or lost");
    assert_eq!(distinct.len(), ITEMS);
    assert_eq!(sink.lock().unwrap().refused, 0);
    assert!(children(&producer, "/q/four").is_empty());
}

#[test]
fn without_a_lock_path_items_are_removed_on_receipt() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = DistributedQueue::new(&client, "/q/plain", QueueOptions::default()).unwrap();
    q.put_blocking(b"x", None).unwrap();
    let item = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    assert!(children(&client, "/q/plain").is_empty());
    let token = item.fencing_token();
    assert!(token > 0);
    drop(item); // nothing to give back
    assert!(q
        .take_blocking(Some(Duration::from_millis(100)))
        .unwrap()
        .is_none());
}

/// The queue's node and its lock path are persistent, as Curator's `DistributedQueue.start`
/// makes them (its producers put and its consumers lock below them without making parents): a
/// drained queue is not reaped by the server. A simple queue's path stays a container, as
/// Curator's `SimpleDistributedQueue` makes it.
#[test]
fn a_drained_queue_and_its_lock_path_outlive_the_container_reaper() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = DistributedQueue::new(&client, "/kept/q", locked("/kept/q-locks")).unwrap();
    q.put_blocking(b"one", None).unwrap();
    let item = q.take_blocking(Some(5 * SECOND)).unwrap().unwrap();
    item.done_blocking().unwrap();
    let simple = SimpleDistributedQueue::new(&client, "/kept/simple").unwrap();
    simple.offer_blocking(b"one").unwrap();
    assert_eq!(
        simple.poll_blocking().unwrap().as_deref(),
        Some(&b"one"[..])
    );
    // A container emptied after both: once the server reaped it, it has looked at them too.
    // One pass deletes its containers one request after another (rate-limited), in no set
    // order: the probe's may go first. So the simple queue's path is waited for, and a second
    // probe, emptied after it, makes sure that pass is over before the persistent paths are
    // looked at (asserted at once, /kept/simple was found still there in one full run).
    let reaper_pass = |probe: &str| {
        client
            .create_blocking(
                &format!("{probe}/child"),
                b"",
                CreateOptions::new(CreateMode::Persistent).parents(),
            )
            .unwrap();
        client
            .delete_blocking(&format!("{probe}/child"), Default::default())
            .unwrap();
        wait_until("the reaper took the emptied container", 30 * SECOND, || {
            client.exists_blocking(probe).unwrap().is_none()
        });
    };
    reaper_pass("/probe");
    wait_until(
        "a simple queue's path is a container, as Curator's: reaped",
        30 * SECOND,
        || client.exists_blocking("/kept/simple").unwrap().is_none(),
    );
    reaper_pass("/probe2");
    assert!(client.exists_blocking("/kept/q").unwrap().is_some());
    assert!(client.exists_blocking("/kept/q-locks").unwrap().is_some());
    // A Curator producer puts without making parents: it still can.
    client
        .create_blocking(
            "/kept/q/queue-",
            b"",
            CreateOptions::new(CreateMode::PersistentSequential),
        )
        .unwrap();
}

/// `done()` whose transaction was applied but whose reply was lost, then the session ended
/// before the consumer could read back: the item is consumed, so the answer must not be an
/// error that says it was not completed (a consumer would undo its work): `OutcomeUnknown`.
#[test]
fn done_applied_with_its_reply_lost_then_the_session_ended_is_outcome_unknown() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let consumer_client = connect(&proxy.connect_string());
    let observer = connect(&server.connect_string());
    let producer = DistributedQueue::new(&observer, "/lr/q", locked("/lr/q-locks")).unwrap();
    producer.put_blocking(b"once", None).unwrap();
    let q = DistributedQueue::new(&consumer_client, "/lr/q", locked("/lr/q-locks")).unwrap();
    let item = q.take_blocking(Some(5 * SECOND)).unwrap().unwrap();
    let (id, password) = consumer_client.session_credentials().unwrap();
    proxy.drop_replies();
    let done = thread::spawn(move || item.done_blocking());
    wait_until("the transaction was applied", 10 * SECOND, || {
        children(&observer, "/lr/q").is_empty()
    });
    zkrecipes_testing::expire_session_id(&server.connect_string(), id, &password);
    proxy.restore();
    let r = done.join().unwrap();
    let e = r.expect_err("the reply was lost: done cannot know");
    assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}");
    assert!(children(&observer, "/lr/q-locks").is_empty());
}

#[test]
fn a_dropped_item_goes_back_to_the_queue() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = DistributedQueue::new(&client, "/q/drop", locked("/q/drop-locks")).unwrap();
    q.put_blocking(b"again", None).unwrap();
    let first = q.take_blocking(Some(SECOND)).unwrap().unwrap();
    let token = first.fencing_token();
    drop(first);
    let second = q.take_blocking(Some(5 * SECOND)).unwrap().unwrap();
    assert_eq!(second.data(), b"again");
    assert!(second.fencing_token() > token);
    second.done_blocking().unwrap();
}

#[test]
fn a_waiting_consumer_takes_an_item_given_back_or_left_by_an_ended_session() {
    // Neither leaves a trace in the queue's children (the item stays, only its lock goes), so
    // a consumer already waiting must be woken by the lock itself.
    let server = TestingServer::start();
    let producer = connect(&server.connect_string());
    let q = DistributedQueue::new(&producer, "/q/wake", locked("/q/wake-locks")).unwrap();
    q.put_blocking(b"only", None).unwrap();
    let waiter_client = connect(&server.connect_string());
    let waiter = DistributedQueue::new(&waiter_client, "/q/wake", locked("/q/wake-locks")).unwrap();
    for how in ["given back", "its session ended"] {
        let holder_client = connect(&server.connect_string());
        let holder =
            DistributedQueue::new(&holder_client, "/q/wake", locked("/q/wake-locks")).unwrap();
        let held = holder.take_blocking(Some(5 * SECOND)).unwrap().unwrap();
        let lock = format!("/q/wake-locks/{}", held.node());
        let w = waiter.clone();
        let taker = thread::spawn(move || w.take_blocking(Some(30 * SECOND)));
        wait_until(
            "the waiter watches the held item's lock",
            10 * SECOND,
            || server.four_letter("wchp").lines().any(|l| l.trim() == lock),
        );
        let token = held.fencing_token();
        if how == "given back" {
            drop(held);
        } else {
            zkrecipes::runtime::block_on(expire_client_session(&holder_client)).unwrap();
        }
        let got = taker
            .join()
            .unwrap()
            .unwrap()
            .unwrap_or_else(|| panic!("item {how}: the waiter was not woken within 30 s"));
        assert_eq!(got.data(), b"only", "{how}");
        assert!(got.fencing_token() > token, "{how}");
        drop(got); // back to the queue for the next round
        holder_client.close_blocking();
    }
    let last = waiter.take_blocking(Some(5 * SECOND)).unwrap().unwrap();
    last.done_blocking().unwrap();
    assert!(children(&producer, "/q/wake").is_empty());
}

// ---------------------------------------------------------------------------------------------
// Bounded puts, variants, listeners, bad input
// ---------------------------------------------------------------------------------------------

#[test]
fn bounded_puts_wait_for_room() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let q = DistributedQueue::new(
        &client,
        "/q/bounded",
        locked("/q/bounded-locks").max_items(2),
    )
    .unwrap();
    assert!(q.put_blocking(b"1", None).unwrap());
    assert!(q.put_blocking(b"2", None).unwrap());
    assert!(!q
        .put_blocking(b"3", Some(Duration::from_millis(200)))
        .unwrap());
    assert_eq!(q.len_blocking().unwrap(), 2);
    let q2 = q.clone();
    let t = thread::spawn(move || q2.put_blocking(b"3", Some(30 * SECOND)).unwrap());
    q.take_blocking(Some(SECOND))
        .unwrap()
        .unwrap()
        .done_blocking()
        .unwrap();
    assert!(t.join().unwrap());
    assert_eq!(q.len_blocking().unwrap(), 2);
}

#[test]
fn priority_id_and_delay_queues_keep_curators_order() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let p = DistributedPriorityQueue::new(&client, "/q/prio", locked("/q/prio-locks")).unwrap();
    for (d, prio) in [("mid", 5), ("low", -3), ("high", 100), ("zero", 0)] {
        p.put_blocking(d.as_bytes(), prio, None).unwrap();
    }
    assert!(children(&client, "/q/prio").contains(&"queue-0FFFFFFFD0000000001".to_string()));
    let mut order = Vec::new();
    while let Some(item) = p.take(Some(Duration::from_millis(100))).now() {
        order.push(String::from_utf8(item.data().to_vec()).unwrap());
        item.done_blocking().unwrap();
    }
    assert_eq!(order, ["low", "zero", "mid", "high"]);

    let ids = DistributedIdQueue::new(&client, "/q/ids", locked("/q/ids-locks")).unwrap();
    ids.put_blocking(b"a", "job/1", None).unwrap();
    ids.put_blocking(b"b", "job-2", None).unwrap();
    ids.put_blocking(b"c", "job/1", None).unwrap();
    assert!(children(&client, "/q/ids")
        .iter()
        .any(|n| n.starts_with("queue-|job_1|")));
    assert_eq!(ids.remove_blocking("job/1").unwrap(), 2);
    let item = ids.take(Some(SECOND)).now().unwrap();
    assert_eq!((item.data(), item.id()), (&b"b"[..], Some("job-2")));
    item.done_blocking().unwrap();
    assert_eq!(
        ids.put_blocking(b"x", "", None).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );

    let delay = DistributedDelayQueue::new(&client, "/q/delay", locked("/q/delay-locks")).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    delay.put_blocking(b"later", now + 800, None).unwrap();
    delay.put_blocking(b"sooner", now + 300, None).unwrap();
    delay.put_blocking(b"past", now - 1000, None).unwrap();
    let started = Instant::now();
    let mut order = Vec::new();
    for _ in 0..3 {
        let item = delay.take(Some(10 * SECOND)).now().unwrap();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        order.push((String::from_utf8(item.data().to_vec()).unwrap(), now));
        item.done_blocking().unwrap();
    }
    let names: Vec<&str> = order.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["past", "sooner", "later"]);
    assert!(
        order[1].1 >= now + 300 && order[2].1 >= now + 800,
        "handed out early"
    );
    assert!(started.elapsed() < 10 * SECOND);
    assert_eq!(
        delay.put_blocking(b"x", 0, None).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

/// Runs a take future on the library's runtime.
trait Now {
    type Out;
    fn now(self) -> Self::Out;
}

impl<F: std::future::Future<Output = zkrecipes::Result<Option<zkrecipes::queue::Item>>>> Now for F {
    type Out = Option<zkrecipes::queue::Item>;
    fn now(self) -> Self::Out {
        zkrecipes::runtime::block_on(self).unwrap()
    }
}

#[test]
fn consumers_hear_connection_states_and_carry_on_after_a_disconnect() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = ClientBuilder::new(proxy.connect_string())
        .session_timeout(10 * SECOND)
        .connection_timeout(5 * SECOND)
        .connect_blocking()
        .unwrap();
    let q = DistributedQueue::new(&client, "/q/states", locked("/q/states-locks")).unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    q.add_listener(move |s| h.lock().unwrap().push(s));
    let (tx, rx) = mpsc::channel();
    let q2 = q.clone();
    let t = thread::spawn(move || {
        let item = q2.take_blocking(Some(60 * SECOND)).unwrap().unwrap();
        tx.send(item.data().to_vec()).unwrap();
        item.done_blocking().unwrap();
    });
    proxy.cut();
    wait_until("SUSPENDED heard", 10 * SECOND, || {
        heard.lock().unwrap().contains(&ConnectionState::Suspended)
    });
    let producer = connect(&server.connect_string());
    let p = DistributedQueue::new(&producer, "/q/states", QueueOptions::default()).unwrap();
    p.put_blocking(b"while away", None).unwrap();
    proxy.restore();
    assert_eq!(rx.recv_timeout(30 * SECOND).unwrap(), b"while away");
    t.join().unwrap();
    assert!(heard
        .lock()
        .unwrap()
        .contains(&ConnectionState::Reconnected));
}

#[test]
fn bad_arguments_are_refused() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let d = QueueOptions::default;
    for e in [
        SimpleDistributedQueue::new(&client, "bad").unwrap_err(),
        SimpleDistributedQueue::new(&client, "/").unwrap_err(),
        DistributedQueue::new(&client, "/q/a", d().max_items(0)).unwrap_err(),
        DistributedQueue::new(&client, "/q/a", d().lock_path("/q/a/locks")).unwrap_err(),
        DistributedQueue::new(&client, "/q/a", d().lock_path("rel")).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    let q = SimpleDistributedQueue::new(&client, "/q/big").unwrap();
    let e = q.offer_blocking(&vec![0u8; 2 << 20]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    client.close_blocking();
    let e = DistributedQueue::new(&client, "/q/a", d()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed);
}

/// A take cancelled after it made its lock (here while it reads the item) leaves no lock: the
/// item is given back at once, not kept from every consumer for the life of the take's session
/// (Curator deletes the lock with a guaranteed delete).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_take_cancelled_after_its_lock_gives_the_item_back() {
    let (_server, proxy, a, b) = through_a_proxy().await;
    let qa = DistributedQueue::new(&a, "/q/left", locked("/q/left-locks")).unwrap();
    let qb = DistributedQueue::new(&b, "/q/left", locked("/q/left-locks")).unwrap();
    qb.put(b"two", None).await.unwrap();
    proxy.delay_replies(Duration::from_millis(700));
    let taking = {
        let qa = qa.clone();
        tokio::spawn(async move { qa.take(None).await })
    };
    let deadline = Instant::now() + 20 * SECOND;
    while b
        .get_children("/q/left-locks")
        .await
        .unwrap_or_default()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "timed out waiting for a's lock");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    taking.abort();
    let _ = taking.await;
    proxy.restore();
    let again = qb
        .take(Some(10 * SECOND))
        .await
        .unwrap()
        .expect("the item, its cancelled take's lock gone");
    assert_eq!(again.data(), b"two");
    again.done().await.unwrap();
    a.close().await;
    b.close().await;
}

/// Takes with `take` through a proxy whose replies are held back, waits until the server has
/// applied the take's delete of `node` (seen from `watcher`, straight to the server), then
/// drops the take (as a caller's timeout or a cancelled task does): the reply cannot have come
/// back yet. Returns once the take is gone.
async fn drop_take_once_its_delete_is_applied<T: Send + 'static>(
    proxy: &FaultProxy,
    watcher: &Client,
    node: &str,
    take: impl std::future::Future<Output = T> + Send + 'static,
) {
    proxy.delay_replies(Duration::from_millis(1500));
    let taking = tokio::spawn(take);
    let deadline = Instant::now() + 20 * SECOND;
    while watcher.exists(node).await.unwrap().is_some() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for the take's delete of {node}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    taking.abort();
    let outcome = taking.await;
    assert!(
        outcome.as_ref().is_err_and(|e| e.is_cancelled()),
        "the take answered before it was dropped: its reply was not held back"
    );
}

/// An at-most-once take dropped after the server applied its delete, before the reply came
/// back (a caller's `timeout()` around `take`, a cancelled task), does not lose the item: the
/// removal ends in the background and the item, handed to nobody, is put back at the tail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simple_take_dropped_with_its_delete_in_flight_puts_the_item_back() {
    let (_server, proxy, a, b) = through_a_proxy().await;
    let qa = SimpleDistributedQueue::new(&a, "/q/dropped").unwrap();
    let qb = SimpleDistributedQueue::new(&b, "/q/dropped").unwrap();
    let first = qb.offer(b"one").await.unwrap();
    drop_take_once_its_delete_is_applied(&proxy, &b, &first, async move { qa.take(None).await })
        .await;
    let again = qb.take(Some(10 * SECOND)).await.unwrap();
    assert_eq!(
        again.as_deref(),
        Some(b"one".as_slice()),
        "the item was lost"
    );
    a.close().await;
    b.close().await;
}

/// The same for a `DistributedQueue` without a lock path (Curator's `processNormally`): the
/// item comes back with its key (here a priority) and its messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlocked_take_dropped_with_its_delete_in_flight_puts_the_item_back_with_its_key() {
    let (_server, proxy, a, b) = through_a_proxy().await;
    let options = QueueOptions::default;
    let qa = DistributedPriorityQueue::new(&a, "/q/dropped-p", options()).unwrap();
    let qb = DistributedPriorityQueue::new(&b, "/q/dropped-p", options()).unwrap();
    qb.put_multi(&[b"m1", b"m2"], 7, None).await.unwrap();
    let first = b.get_children("/q/dropped-p").await.unwrap().remove(0);
    let node = format!("/q/dropped-p/{first}");
    drop_take_once_its_delete_is_applied(&proxy, &b, &node, async move {
        qa.take(None).await.map(|i| i.map(|i| i.node().to_string()))
    })
    .await;
    proxy.restore();
    let again = qb
        .take(Some(10 * SECOND))
        .await
        .unwrap()
        .expect("the item was lost");
    assert_eq!(again.messages(), [b"m1".to_vec(), b"m2".to_vec()]);
    assert_ne!(again.node(), first, "put back as a new node");
    assert_eq!(
        again.node()[..again.node().len() - 10],
        first[..first.len() - 10],
        "put back without its priority"
    );
    a.close().await;
    b.close().await;
}

/// `Item::give_back` returns a taken item for another take whatever the queue: without a lock
/// path it is put back at the tail with its key and messages (it was removed when taken); with
/// one its lock goes and the item, which stayed, is taken again.
#[test]
fn an_item_given_back_is_taken_again_with_or_without_a_lock_path() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    for (path, options) in [
        ("/q/back", QueueOptions::default()),
        ("/q/back-locked", locked("/q/back-locks")),
    ] {
        let q = DistributedPriorityQueue::new(&client, path, options).unwrap();
        q.put_blocking(b"later", 9, None).unwrap();
        q.put_blocking(b"first", -3, None).unwrap();
        let item = q.queue().take_blocking(Some(SECOND)).unwrap().unwrap();
        assert_eq!(item.data(), b"first");
        item.give_back_blocking().unwrap();
        let again = q.queue().take_blocking(Some(5 * SECOND)).unwrap().unwrap();
        assert_eq!(
            again.data(),
            b"first",
            "{path}: not back ahead of a lower priority"
        );
        again.done_blocking().unwrap();
        let rest = q.queue().take_blocking(Some(SECOND)).unwrap().unwrap();
        assert_eq!(rest.data(), b"later");
        rest.done_blocking().unwrap();
        assert!(children(&client, path).is_empty(), "{path}");
    }
}

/// `give_back` without a lock path holds the only copy of the item: dropped while it waits for
/// a connection (a timeout around it), the put-back goes on and the item is back once the
/// connection is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_give_back_dropped_while_disconnected_still_puts_the_item_back() {
    let (_server, proxy, a, b) = through_a_proxy().await;
    let qa = DistributedQueue::new(&a, "/q/given", QueueOptions::default()).unwrap();
    let qb = DistributedQueue::new(&b, "/q/given", QueueOptions::default()).unwrap();
    qb.put(b"only", None).await.unwrap();
    let item = qa.take(Some(10 * SECOND)).await.unwrap().expect("the item");
    proxy.cut();
    let deadline = Instant::now() + 20 * SECOND;
    while a.state().is_connected() {
        assert!(Instant::now() < deadline, "the client did not see the cut");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let gave = tokio::time::timeout(Duration::from_millis(300), item.give_back()).await;
    assert!(gave.is_err(), "the give-back answered while disconnected");
    proxy.restore();
    let again = qb
        .take(Some(20 * SECOND))
        .await
        .unwrap()
        .expect("the item was lost with the dropped give-back");
    assert_eq!(again.data(), b"only");
    a.close().await;
    b.close().await;
}

/// A take dropped with its delete in flight, then the client closed at once (Ctrl-C in a face,
/// then the close of its `with` block): the close waits for the removal to end and the item to
/// be put back, instead of cutting them off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_take_dropped_then_its_client_closed_still_puts_the_item_back() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let a = ClientBuilder::new(proxy.connect_string())
        .session_timeout(30 * SECOND)
        .connection_timeout(10 * SECOND)
        .connect()
        .await
        .expect("connect");
    let b = ClientBuilder::new(server.connect_string())
        .session_timeout(30 * SECOND)
        .connect()
        .await
        .expect("connect");
    let qa = DistributedQueue::new(&a, "/q/closing", QueueOptions::default()).unwrap();
    let qb = DistributedQueue::new(&b, "/q/closing", QueueOptions::default()).unwrap();
    qb.put(b"kept", None).await.unwrap();
    let first = b.get_children("/q/closing").await.unwrap().remove(0);
    let node = format!("/q/closing/{first}");
    drop_take_once_its_delete_is_applied(&proxy, &b, &node, async move {
        qa.take(None).await.map(drop)
    })
    .await;
    a.close().await; // the replies are still held back: the put-back has not happened yet
    let again = qb
        .take(Some(10 * SECOND))
        .await
        .unwrap()
        .expect("the item was lost with the close");
    assert_eq!(again.data(), b"kept");
    b.close().await;
}
