//! Leader election against a real ZooKeeper (issue 4): LeaderLatch, LeaderSelector, observe.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use zkrecipes::leader::{
    observe, CancelReason, CloseMode, LatchState, LeaderLatch, LeaderSelector, LeadershipContext,
    LeadershipEvent, LostPolicy, Participant,
};
use zkrecipes::{Client, ConnectionState, ErrorKind};
use zkrecipes_testing::{FaultProxy, TestingServer};

/// One server for the whole file; every test works under its own path.
fn server() -> &'static TestingServer {
    static SERVER: OnceLock<TestingServer> = OnceLock::new();
    SERVER.get_or_init(TestingServer::start)
}

fn group(name: &str) -> String {
    format!("/leader-tests/{name}-{}", uuid::Uuid::new_v4().simple())
}

async fn connect_to(connect: &str, session: Duration) -> Client {
    connect_retrying(connect, session, 5).await
}

/// A client whose retry policy retries `n` times, 100 ms apart.
async fn connect_retrying(connect: &str, session: Duration, n: u32) -> Client {
    Client::builder(connect)
        .session_timeout(session)
        .connection_timeout(Duration::from_secs(5))
        .retry_policy(zkrecipes::RetryPolicy::NTimes {
            n,
            sleep: Duration::from_millis(100),
        })
        .connect()
        .await
        .expect("connect")
}

async fn connect() -> Client {
    connect_to(&server().connect_string(), Duration::from_secs(4)).await
}

/// Polls `cond` until it holds or `timeout` passes; returns whether it held.
async fn eventually(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The sequence suffix of a node name.
fn seq(name: &str) -> String {
    name.rsplit('-').next().unwrap().to_string()
}

/// Samples `flags` continuously on a thread until stopped; returns the largest number of them
/// seen true at one instant. A sample that reads two true flags re-reads the earlier ones
/// after the later ones: a flag true before and after another flag's true reading was true at
/// that reading's instant (leaders here never regain leadership once lost), so only real
/// overlaps count.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<(usize, u64)>>,
}

impl Sampler {
    fn start(flags: Vec<Arc<dyn Fn() -> bool + Send + Sync>>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut max = 0;
            let mut samples = 0u64;
            while !s.load(Ordering::Relaxed) {
                let seen: Vec<usize> = (0..flags.len()).filter(|&i| flags[i]()).collect();
                let real = if seen.len() > 1 {
                    // Still true after the others were read: true at their instants too.
                    seen.iter()
                        .take(seen.len() - 1)
                        .filter(|&&i| flags[i]())
                        .count()
                        + 1
                } else {
                    seen.len()
                };
                max = max.max(real);
                samples += 1;
            }
            (max, samples)
        });
        Sampler {
            stop,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> (usize, u64) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().unwrap()
    }
}

fn latch_flag(latch: &Arc<LeaderLatch>) -> Arc<dyn Fn() -> bool + Send + Sync> {
    let l = latch.clone();
    Arc::new(move || l.has_leadership())
}

// ---------------------------------------------------------------------------------------------
// LeaderLatch
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_ten_clients_lead_in_node_order_and_never_two_at_once() {
    let path = group("seed");
    let mut clients = Vec::new();
    let mut latches = Vec::new();
    for i in 0..10 {
        let c = connect().await;
        let latch = Arc::new(LeaderLatch::new(&c, &path, &format!("CLIENT_{i}")).unwrap());
        latch.start().await.unwrap();
        clients.push(c);
        latches.push(latch);
    }
    // Node order, as the server numbered them.
    let mut by_node: Vec<(String, String)> = latches
        .iter()
        .map(|l| {
            (
                seq(&l.our_path().expect("node created by start()")),
                l.id().to_string(),
            )
        })
        .collect();
    by_node.sort();
    let expected: Vec<String> = by_node.into_iter().map(|(_, id)| id).collect();
    let participants = latches[3].get_participants().await.unwrap();
    assert_eq!(
        participants
            .iter()
            .map(|p| p.id.clone())
            .collect::<Vec<_>>(),
        expected
    );
    assert!(participants[0].is_leader && participants[1..].iter().all(|p| !p.is_leader));

    let sampler = Sampler::start(latches.iter().map(latch_flag).collect());
    let mut leaders = Vec::new();
    let mut last_epoch = i64::MIN;
    for round in 0..10 {
        let mut leader = None;
        assert!(
            eventually(Duration::from_secs(10), || {
                leader = latches.iter().find(|l| l.has_leadership()).cloned();
                leader.is_some()
            })
            .await,
            "round {round}: nobody leads"
        );
        let leader = leader.unwrap();
        assert_eq!(
            leader.get_leader().await.unwrap(),
            Participant {
                id: leader.id().to_string(),
                is_leader: true
            }
        );
        let epoch = leader.leadership_epoch().expect("a leader has an epoch");
        assert!(
            epoch > last_epoch,
            "epochs increase from one leader to the next"
        );
        last_epoch = epoch;
        leaders.push(leader.id().to_string());
        leader.close().await.unwrap();
        assert!(!leader.has_leadership());
        assert_eq!(leader.leadership_epoch(), None);
    }
    let (max, samples) = sampler.finish();
    assert_eq!(leaders, expected, "leaders follow node order");
    assert_eq!(leaders.iter().collect::<HashSet<_>>().len(), 10);
    assert!(max <= 1, "{max} latches reported leadership at one instant");
    assert!(samples > 100, "the observer sampled only {samples} times");
    assert_eq!(latches[0].get_leader().await.unwrap(), Participant::none());
    for c in clients {
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_await_leadership_times_out_for_a_follower() {
    let path = group("await");
    let c1 = connect().await;
    let c2 = connect().await;
    let leader = LeaderLatch::new(&c1, &path, "a").unwrap();
    leader.start().await.unwrap();
    assert!(leader
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    let follower = LeaderLatch::new(&c2, &path, "b").unwrap();
    follower.start().await.unwrap();
    let t = Instant::now();
    assert!(!follower
        .await_leadership(Some(Duration::from_millis(300)))
        .await
        .unwrap());
    let waited = t.elapsed();
    assert!(
        // The upper bound only tells a timeout from a hang: wide, for a stalled machine.
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    // A zero timeout answers at once.
    assert!(!follower
        .await_leadership(Some(Duration::ZERO))
        .await
        .unwrap());
    assert!(leader.await_leadership(Some(Duration::ZERO)).await.unwrap());
    // Leadership passes on close and wakes a waiter without a deadline.
    let waiter = async { follower.await_leadership(None).await };
    let closer = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        leader.close().await
    };
    let (won, closed) = tokio::join!(waiter, closer);
    assert!(won.unwrap());
    closed.unwrap();
    follower.close().await.unwrap();
    // Closed: a timed wait is false, an untimed one is an error (Curator's EOFException).
    assert!(!follower
        .await_leadership(Some(Duration::from_secs(1)))
        .await
        .unwrap());
    assert_eq!(
        follower.await_leadership(None).await.unwrap_err().kind(),
        ErrorKind::Closed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_get_leader_on_an_empty_path_is_the_dummy_participant() {
    let c = connect().await;
    let path = group("empty");
    let latch = LeaderLatch::new(&c, &path, "x").unwrap();
    // The path does not exist at all.
    assert_eq!(
        latch.get_leader().await.unwrap(),
        Participant {
            id: String::new(),
            is_leader: false
        }
    );
    assert!(latch.get_participants().await.unwrap().is_empty());
    // The path exists with no participants.
    c.create(
        &path,
        b"",
        zkrecipes::CreateOptions::new(zkrecipes::CreateMode::Persistent).parents(),
    )
    .await
    .unwrap();
    assert_eq!(latch.get_leader().await.unwrap(), Participant::none());
    latch.start().await.unwrap();
    assert!(latch
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    assert_eq!(
        latch.get_leader().await.unwrap(),
        Participant {
            id: "x".into(),
            is_leader: true
        }
    );
    latch.close().await.unwrap();
    assert_eq!(latch.get_leader().await.unwrap(), Participant::none());
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_node_has_curators_layout_and_the_id_as_data() {
    let c = connect().await;
    let path = group("layout");
    let latch = LeaderLatch::new(&c, &path, "ünïcode-id").unwrap();
    latch.start().await.unwrap();
    let children = c.get_children(&path).await.unwrap();
    assert_eq!(children.len(), 1);
    let name = &children[0];
    // _c_<36-char uuid>-latch-<10 digits>
    assert!(name.starts_with("_c_"), "{name}");
    let uuid = &name[3..39];
    assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{name}");
    assert_eq!(&name[39..46], "-latch-", "{name}");
    assert!(
        name[46..].len() == 10 && name[46..].bytes().all(|b| b.is_ascii_digit()),
        "{name}"
    );
    assert_eq!(latch.our_path().unwrap(), format!("{path}/{name}"));
    let (data, stat) = c.get_data(&format!("{path}/{name}")).await.unwrap();
    assert_eq!(data, "ünïcode-id".as_bytes());
    assert_eq!(stat.ephemeral_owner, c.session_id());
    assert!(latch
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    assert_eq!(latch.leadership_epoch(), Some(stat.czxid));
    // The parent is a container: it goes away on its own once empty.
    latch.close().await.unwrap();
    assert!(zkrecipes_testing::children_left(&c, &path).await.is_empty());
    c.close().await;
}

/// Someone deletes the leading member's node (an operator, a tool): the next member leads,
/// and the former leader lets go at once (it watches its own node) and joins again behind it.
/// Curator's LeaderLatch goes on leading: two leaders until its next connection change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_leader_whose_node_is_deleted_lets_go_and_joins_again() {
    let (ca, cb, admin) = (connect().await, connect().await, connect().await);
    let path = group("deleted");
    let a = LeaderLatch::new(&ca, &path, "a").unwrap();
    a.start().await.unwrap();
    assert!(a
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    let b = LeaderLatch::new(&cb, &path, "b").unwrap();
    b.start().await.unwrap();
    assert!(!b.has_leadership());
    let a_node = a.our_path().unwrap();
    admin.delete(&a_node, Default::default()).await.unwrap();
    let mut both = false;
    let settled = eventually(Duration::from_secs(10), || {
        both |= a.has_leadership() && b.has_leadership();
        b.has_leadership() && !a.has_leadership() && a.our_path().is_some_and(|p| p != a_node)
    })
    .await;
    assert!(
        settled,
        "b leads, a let go and joined again (a leads: {}, b leads: {}, a's node: {:?})",
        a.has_leadership(),
        b.has_leadership(),
        a.our_path()
    );
    assert!(!both, "two leaders at once");
    // a is a follower now, and leads again once b leaves.
    b.close().await.unwrap();
    assert!(a
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    a.close().await.unwrap();
    for c in [ca, cb, admin] {
        c.close().await;
    }
}

/// A leader's close sends its node's delete and nothing else: the watch it keeps on its own node
/// (see the test above) goes with the node, not by a removeWatches request sent ahead of the
/// delete (one more request per failover, and the delete queued behind it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_leader_close_sends_only_the_delete() {
    let proxy = FaultProxy::start(&server().connect_string());
    let ca = connect_to(&proxy.connect_string(), Duration::from_secs(30)).await;
    let path = group("close-requests");
    let a = LeaderLatch::new(&ca, &path, "a").unwrap();
    a.start().await.unwrap();
    assert!(a
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    // Leading, it reads its own node with a watch (after it took the leadership): wait for that
    // read to be sent, then for a later round trip on the same connection (answered in order).
    let watched = eventually(Duration::from_secs(10), || {
        ca.request_counts().get_data >= 1
    })
    .await;
    assert!(watched, "the leader never watched its own node");
    ca.exists("/").await.unwrap();
    let node = a.our_path().unwrap();
    let before = proxy.client_bytes_read();
    a.close().await.unwrap();
    let sent = proxy.client_bytes_read() - before;
    // A delete is 20 bytes and the path (length, xid, type, path length, version); so is a
    // removeWatches. A ping (12 bytes) may slip in.
    let one_request = 20 + node.len() as u64;
    assert!(
        sent < 2 * one_request,
        "the close sent {sent} bytes: more than the delete's {one_request}"
    );
    assert!(ca.exists(&node).await.unwrap().is_none());
    ca.close().await;
}

/// A latch closed while its connection is down returns at once (Curator's close deletes in the
/// background): its node's guaranteed delete goes on and is done once the connection is back.
/// Before, close waited out the retry policy's span, a connection timeout per try (here 6 tries
/// of 5 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_closed_while_disconnected_returns_at_once_and_its_node_goes_later() {
    let proxy = FaultProxy::start(&server().connect_string());
    let ca = connect_to(&proxy.connect_string(), Duration::from_secs(30)).await;
    let observer = connect().await;
    let path = group("close-disconnected");
    let a = LeaderLatch::new(&ca, &path, "a").unwrap();
    a.start().await.unwrap();
    assert!(a
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    let node = a.our_path().unwrap();
    proxy.cut();
    assert!(
        eventually(Duration::from_secs(10), || ca.state()
            == ConnectionState::Suspended)
        .await,
        "never suspended"
    );
    let closing = Instant::now();
    tokio::time::timeout(Duration::from_secs(3), a.close())
        .await
        .expect("close waited out the disconnection")
        .unwrap();
    assert!(!a.has_leadership());
    assert!(
        closing.elapsed() < Duration::from_secs(3),
        "{:?}",
        closing.elapsed()
    );
    proxy.restore();
    let deadline = Instant::now() + Duration::from_secs(20);
    while observer.exists(&node).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "the node was never deleted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ca.close().await;
    observer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_close_modes_silent_and_notify_leader() {
    let c = connect().await;
    for (mode, expect_not_leader) in [(CloseMode::Silent, false), (CloseMode::NotifyLeader, true)] {
        let path = group("closemode");
        let latch = LeaderLatch::new(&c, &path, "m")
            .unwrap()
            .with_close_mode(mode);
        let events = Arc::new(Mutex::new(Vec::new()));
        let (e1, e2) = (events.clone(), events.clone());
        latch.add_listener(
            move || e1.lock().unwrap().push("is_leader"),
            move || e2.lock().unwrap().push("not_leader"),
        );
        let mut stream = latch.events();
        let mut watch = latch.leadership_watch();
        latch.start().await.unwrap();
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(5), stream.next())
                .await
                .unwrap(),
            Some(LeadershipEvent::IsLeader)
        );
        assert_eq!(watch.changed().await, Some(true));
        assert!(eventually(Duration::from_secs(2), || events.lock().unwrap().len() == 1).await);
        latch.close().await.unwrap();
        assert_eq!(watch.changed().await, Some(false));
        assert_eq!(watch.changed().await, None, "closed");
        if expect_not_leader {
            assert_eq!(stream.next().await, Some(LeadershipEvent::NotLeader));
            assert!(eventually(Duration::from_secs(2), || events.lock().unwrap().len() == 2).await);
            assert_eq!(*events.lock().unwrap(), vec!["is_leader", "not_leader"]);
        } else {
            // Give a (wrong) notification time to arrive before asserting there is none.
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(*events.lock().unwrap(), vec!["is_leader"], "{mode:?}");
        }
        assert_eq!(latch.state(), LatchState::Closed);
    }
    // close_with overrides the configured mode.
    let latch = LeaderLatch::new(&c, &group("closewith"), "o").unwrap();
    let mut stream = latch.events();
    latch.start().await.unwrap();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .unwrap(),
        Some(LeadershipEvent::IsLeader)
    );
    latch.close_with(CloseMode::NotifyLeader).await.unwrap();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(1), stream.next())
            .await
            .unwrap(),
        Some(LeadershipEvent::NotLeader)
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_close_twice_and_life_cycle_errors() {
    let c = connect().await;
    let path = group("lifecycle");
    let never_started = LeaderLatch::new(&c, &path, "n").unwrap();
    never_started.close().await.unwrap();
    assert_eq!(
        never_started.start().await.unwrap_err().kind(),
        ErrorKind::Closed
    );

    let latch = LeaderLatch::new(&c, &path, "l").unwrap();
    assert_eq!(latch.state(), LatchState::Latent);
    latch.start().await.unwrap();
    assert_eq!(
        latch.start().await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        latch
            .set_lost_policy(LostPolicy::Session)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    assert!(latch
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    latch.close().await.unwrap();
    latch.close().await.unwrap();
    latch.close_with(CloseMode::NotifyLeader).await.unwrap();
    assert_eq!(latch.state(), LatchState::Closed);
    assert!(!latch.has_leadership());
    assert_eq!(latch.our_path(), None);
    assert!(
        zkrecipes_testing::children_left(&c, &path).await.is_empty(),
        "no node left behind"
    );

    // A latch on a closed client.
    let c2 = connect().await;
    let l2 = LeaderLatch::new(&c2, &path, "z").unwrap();
    c2.close().await;
    assert_eq!(l2.start().await.unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(l2.get_leader().await.unwrap_err().kind(), ErrorKind::Closed);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_rejects_bad_paths_and_ids() {
    let c = connect().await;
    for bad in [
        "",
        "/",
        "no-slash",
        "/trailing/",
        "/a//b",
        "/a/../b",
        "/nul\0",
    ] {
        let e = LeaderLatch::new(&c, bad, "id").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}");
        assert!(!e.message().is_empty());
    }
    assert_eq!(
        LeaderLatch::new(&c, "/ok", "a\0b").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let huge = "x".repeat(zkrecipes::path::MAX_DATA_LEN + 1);
    assert_eq!(
        LeaderLatch::new(&c, "/ok", &huge).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // Empty ids are Curator's default.
    assert!(LeaderLatch::new(&c, "/ok", "").is_ok());
    assert_eq!(
        observe(&c, "/").await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_dropped_without_close_removes_its_node() {
    let c = connect().await;
    let path = group("drop");
    let latch = LeaderLatch::new(&c, &path, "d").unwrap();
    latch.start().await.unwrap();
    assert_eq!(c.get_children(&path).await.unwrap().len(), 1);
    drop(latch);
    let mut gone = false;
    for _ in 0..200 {
        if zkrecipes_testing::children_left(&c, &path).await.is_empty() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone, "the dropped latch's node is still there");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_hands_over_when_leader_session_expires() {
    let path = group("expire");
    let session = Duration::from_secs(2);
    let c1 = connect_to(&server().connect_string(), session).await;
    let c2 = connect_to(&server().connect_string(), session).await;
    let old = Arc::new(LeaderLatch::new(&c1, &path, "old").unwrap());
    let events: Arc<Mutex<Vec<(LeadershipEvent, i64)>>> = Arc::default();
    let (ev, cl) = (events.clone(), c1.clone());
    old.add_event_listener(move |e| ev.lock().unwrap().push((e, cl.session_id())));
    old.start().await.unwrap();
    assert!(old
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    let old_epoch = old.leadership_epoch().unwrap();
    let next = LeaderLatch::new(&c2, &path, "next").unwrap();
    next.start().await.unwrap();
    let old_session = c1.session_id();
    let old_node = old.our_path().unwrap();

    let mut states = c1.state_stream();
    // Returns once the server has closed the session (its ephemeral node is gone then). While
    // the harness joins the session, the old leader may be disconnected and reconnected on the
    // same, still valid session: dropping and regaining leadership then is right.
    zkrecipes_testing::expire_client_session(&c1).await.unwrap();
    let t = Instant::now();
    assert!(
        next.await_leadership(Some(session + Duration::from_secs(1)))
            .await
            .unwrap(),
        "no takeover within timeout + 1 s"
    );
    let takeover = t.elapsed();
    assert!(next.leadership_epoch().unwrap() > old_epoch);
    // From the moment the old leader lets go, it must never lead again on the expired session.
    assert!(eventually(Duration::from_secs(5), || !old.has_leadership()).await);
    let violations = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (old, violations, stop) = (Arc::clone(&old), violations.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // The new leader leads throughout: the old one leads on no session, the new
                // one included (before its latch has heard of the loss).
                if old.has_leadership() {
                    violations.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_micros(100));
            }
        })
    };
    // The old participant sees LOST, gets a new session and joins again behind the new leader.
    loop {
        match tokio::time::timeout(Duration::from_secs(10), states.next())
            .await
            .unwrap()
        {
            Some(ConnectionState::Reconnected) if c1.session_id() != old_session => break,
            Some(_) => continue,
            None => panic!("client closed"),
        }
    }
    assert!(
        eventually(Duration::from_secs(5), || old
            .our_path()
            .is_some_and(|p| p != old_node))
        .await,
        "the old participant did not create a node on its new session"
    );
    assert!(!old
        .await_leadership(Some(Duration::from_millis(300)))
        .await
        .unwrap());
    let ids: Vec<String> = next
        .get_participants()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, vec!["next", "old"]);
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    assert_eq!(
        violations.load(Ordering::Relaxed),
        0,
        "the old participant led again on its expired session"
    );
    let ev = events.lock().unwrap().clone();
    assert_eq!(ev[0], (LeadershipEvent::IsLeader, old_session));
    assert_eq!(ev.last().unwrap().0, LeadershipEvent::NotLeader, "{ev:?}");
    // Failover after the expiry itself (which the harness observes first) is quick.
    eprintln!("takeover after server-side expiry: {takeover:?}");
    // The new leader closes: the old participant leads again, on its new session.
    next.close().await.unwrap();
    assert!(old
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    assert!(old.leadership_epoch().unwrap() > old_epoch);
    old.close().await.unwrap();
    c1.close().await;
    c2.close().await;
}

/// Cuts a leader's connection for a moment (well within its session) and returns what the
/// leader reported meanwhile: (lost leadership at some point, leads again after, creates
/// requested meanwhile, nodes in the group after).
async fn cut_leader_connection(
    policy: LostPolicy,
) -> (bool, bool, u64, usize, Vec<LeadershipEvent>) {
    let path = group("cut");
    let proxy = FaultProxy::start(&server().connect_string());
    let c = connect_to(&proxy.connect_string(), Duration::from_secs(8)).await;
    let observer_client = connect().await;
    let latch = Arc::new(
        LeaderLatch::new(&c, &path, "cut")
            .unwrap()
            .with_lost_policy(policy)
            .unwrap(),
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    latch.add_event_listener(move |e| ev.lock().unwrap().push(e));
    latch.start().await.unwrap();
    assert!(latch
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap());
    let node = latch.our_path().unwrap();
    let creates = c.request_counts().create;
    let sampler = {
        let l = latch.clone();
        let lost = Arc::new(AtomicUsize::new(0));
        let lost2 = lost.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let h = std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                if !l.has_leadership() {
                    lost2.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        (h, stop, lost)
    };
    let mut states = c.state_stream();
    proxy.cut();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), states.next())
            .await
            .unwrap()
        {
            Some(ConnectionState::Suspended) => break,
            Some(_) => continue,
            None => panic!("client closed"),
        }
    }
    if policy == LostPolicy::Standard {
        assert!(
            eventually(Duration::from_secs(1), || !latch.has_leadership()).await,
            "SUSPENDED must drop leadership"
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.restore();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), states.next())
            .await
            .unwrap()
        {
            Some(ConnectionState::Reconnected) => break,
            Some(ConnectionState::Lost) => {
                panic!("the session was lost; the cut was meant to be short")
            }
            Some(_) => continue,
            None => panic!("client closed"),
        }
    }
    let leads_again = latch
        .await_leadership(Some(Duration::from_secs(5)))
        .await
        .unwrap();
    let (h, stop, lost) = sampler;
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    assert_eq!(
        latch.our_path().unwrap(),
        node,
        "the same node must be kept across the reconnect"
    );
    let nodes = observer_client.get_children(&path).await.unwrap().len();
    let creates_meanwhile = c.request_counts().create - creates;
    // Let late listener calls land.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ev = events.lock().unwrap().clone();
    latch.close().await.unwrap();
    c.close().await;
    observer_client.close().await;
    (
        lost.load(Ordering::Relaxed) > 0,
        leads_again,
        creates_meanwhile,
        nodes,
        ev,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_standard_policy_drops_leadership_on_suspend_and_regains_it_with_the_same_node() {
    let (lost, again, creates, nodes, ev) = cut_leader_connection(LostPolicy::Standard).await;
    assert!(lost, "leadership must be dropped while SUSPENDED");
    assert!(again, "leadership must come back after RECONNECTED");
    assert_eq!(creates, 0, "no second node may be created");
    assert_eq!(nodes, 1);
    assert_eq!(
        ev,
        vec![
            LeadershipEvent::IsLeader,
            LeadershipEvent::NotLeader,
            LeadershipEvent::IsLeader
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_session_policy_keeps_leadership_through_a_short_disconnect() {
    let (lost, again, creates, nodes, ev) = cut_leader_connection(LostPolicy::Session).await;
    assert!(
        !lost,
        "leadership must survive a disconnect within the session"
    );
    assert!(again);
    assert_eq!(creates, 0);
    assert_eq!(nodes, 1);
    assert_eq!(ev, vec![LeadershipEvent::IsLeader]);
}

/// The next leadership event, within a generous limit.
async fn next_event(events: &mut zkrecipes::leader::LeadershipEvents) -> LeadershipEvent {
    tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("a leadership event within 20 s")
        .expect("the latch is gone")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leadership_watch_reports_a_loss_that_happened_after_is_leader_said_true() {
    let path = group("watch-flip");
    let proxy = FaultProxy::start(&server().connect_string());
    let c = connect_to(&proxy.connect_string(), Duration::from_secs(8)).await;
    let latch = LeaderLatch::new(&c, &path, "w").unwrap();
    let mut events = latch.events();
    // Made while not leading (not started yet): it last reported false.
    let mut watch = latch.leadership_watch();
    assert!(!watch.is_leader());
    latch.start().await.unwrap();
    // Leadership gained, seen through is_leader() only (no changed() call)...
    assert_eq!(next_event(&mut events).await, LeadershipEvent::IsLeader);
    assert!(watch.is_leader());
    // ...then lost (SUSPENDED under the standard policy), still with no changed() call: the
    // loss must be reported, not waited past (changed() compared with the false of creation).
    proxy.cut();
    assert_eq!(next_event(&mut events).await, LeadershipEvent::NotLeader);
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), watch.changed()).await,
        Ok(Some(false)),
        "changed() must report the loss that followed is_leader() == true"
    );
    // Leading again (seen through is_leader()), then lost and regained before changed() looks:
    // the loss in between is reported too, with the value now (true).
    proxy.restore();
    assert_eq!(next_event(&mut events).await, LeadershipEvent::IsLeader);
    assert!(watch.is_leader());
    proxy.cut();
    assert_eq!(next_event(&mut events).await, LeadershipEvent::NotLeader);
    proxy.restore();
    assert_eq!(next_event(&mut events).await, LeadershipEvent::IsLeader);
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), watch.changed()).await,
        Ok(Some(true)),
        "changed() must report a loss and regain that happened after is_leader() == true"
    );
    // Reported: the close is the next change, then nothing.
    latch.close().await.unwrap();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), watch.changed()).await,
        Ok(Some(false))
    );
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), watch.changed()).await,
        Ok(None),
        "closed"
    );
    assert!(!watch.is_leader());
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_blocking_face_works_from_plain_threads() {
    let path = group("blocking");
    let connect_string = server().connect_string();
    let handle = std::thread::spawn(move || {
        let c = Client::builder(connect_string)
            .session_timeout(Duration::from_secs(4))
            .connect_blocking()
            .unwrap();
        let latch = LeaderLatch::new(&c, &path, "blocking").unwrap();
        latch.start_blocking().unwrap();
        assert!(latch
            .await_leadership_blocking(Some(Duration::from_secs(5)))
            .unwrap());
        assert_eq!(latch.get_leader_blocking().unwrap().id, "blocking");
        assert_eq!(latch.get_participants_blocking().unwrap().len(), 1);
        latch.close_blocking().unwrap();
        latch.close_with_blocking(CloseMode::NotifyLeader).unwrap();
        c.close_blocking();
    });
    tokio::task::spawn_blocking(move || handle.join().unwrap())
        .await
        .unwrap();
    // Inside a runtime the blocking face refuses instead of deadlocking.
    let c = connect().await;
    let latch = LeaderLatch::new(&c, &group("blocking-in-rt"), "x").unwrap();
    assert_eq!(
        latch.start_blocking().unwrap_err().kind(),
        ErrorKind::Internal
    );
    c.close().await;
}

// ---------------------------------------------------------------------------------------------
// Observe
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_follows_latch_leaders_without_taking_part() {
    let path = group("observe-latch");
    let oc = connect().await;
    let mut observer = observe(&oc, &path).await.unwrap();
    assert_eq!(observer.leader(), Participant::none());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    observer.add_listener(move |p| s.lock().unwrap().push(p.id));
    let c = connect().await;
    let a = LeaderLatch::new(&c, &path, "a").unwrap();
    let b = LeaderLatch::new(&c, &path, "b").unwrap();
    a.start().await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), observer.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        first,
        Participant {
            id: "a".into(),
            is_leader: true
        }
    );
    b.start().await.unwrap();
    a.close().await.unwrap();
    let second = tokio::time::timeout(Duration::from_secs(5), observer.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.id, "b");
    b.close().await.unwrap();
    let none = tokio::time::timeout(Duration::from_secs(5), observer.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(none, Participant::none());
    assert!(eventually(Duration::from_secs(2), || seen.lock().unwrap().len() == 3).await);
    assert_eq!(
        *seen.lock().unwrap(),
        vec!["a".to_string(), "b".into(), "".into()]
    );
    // The observer is not a participant.
    assert!(zkrecipes_testing::children_left(&oc, &path)
        .await
        .is_empty());
    observer.close();
    observer.close();
    assert_eq!(observer.changed().await, None);
    c.close().await;
    oc.close().await;
}

// ---------------------------------------------------------------------------------------------
// LeaderSelector
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_auto_requeue_ten_clients_lead_three_times_each_never_overlapping() {
    let path = group("selector-rounds");
    let active = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let order = Arc::new(Mutex::new(Vec::new()));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let mut clients = Vec::new();
    let mut selectors = Vec::new();
    let mut counts = Vec::new();
    for i in 0..10 {
        let c = connect().await;
        let count = Arc::new(AtomicUsize::new(0));
        // The callback turns auto requeue off after its third leadership.
        let me: Arc<OnceLock<std::sync::Weak<LeaderSelector>>> = Arc::default();
        let (active, overlaps, order, tokens, count2, me2) = (
            active.clone(),
            overlaps.clone(),
            order.clone(),
            tokens.clone(),
            count.clone(),
            me.clone(),
        );
        let id = format!("client_{i}");
        let selector = Arc::new(
            LeaderSelector::new(&c, &path, &id, move |ctx: LeadershipContext| {
                let (active, overlaps, order, tokens, count, me) = (
                    active.clone(),
                    overlaps.clone(),
                    order.clone(),
                    tokens.clone(),
                    count2.clone(),
                    me2.clone(),
                );
                async move {
                    if active.fetch_add(1, Ordering::SeqCst) != 0 {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    order.lock().unwrap().push(ctx.id().to_string());
                    tokens
                        .lock()
                        .unwrap()
                        .push(ctx.fencing_token().expect("a leader has a fencing token"));
                    if count.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                        if let Some(s) = me.get().and_then(|w| w.upgrade()) {
                            s.set_auto_requeue(false);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(15)).await;
                    active.fetch_sub(1, Ordering::SeqCst);
                }
            })
            .unwrap(),
        );
        me.set(Arc::downgrade(&selector)).unwrap();
        selector.auto_requeue();
        clients.push(c);
        selectors.push(selector);
        counts.push(count);
    }
    for s in &selectors {
        s.start().unwrap();
    }
    assert!(
        eventually(Duration::from_secs(30), || order.lock().unwrap().len()
            >= 30)
        .await,
        "only {} leaderships",
        order.lock().unwrap().len()
    );
    // Nobody requeues after its third term: the queue drains.
    assert!(
        eventually(Duration::from_secs(5), || selectors
            .iter()
            .all(|s| !s.has_leadership()))
        .await
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(order.lock().unwrap().len(), 30);
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two leaders at once");
    for (i, c) in counts.iter().enumerate() {
        assert_eq!(c.load(Ordering::SeqCst), 3, "client_{i}");
        assert_eq!(selectors[i].leadership_count(), 3);
    }
    let tokens = tokens.lock().unwrap().clone();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "fencing tokens increase: {tokens:?}"
    );
    assert!(selectors[0].get_participants().await.unwrap().is_empty());
    for s in &selectors {
        s.close().await.unwrap();
    }
    for c in clients {
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_participants_and_leader_come_from_lock_nodes() {
    let path = group("selector-ids");
    let c = connect().await;
    let empty = LeaderSelector::new(&c, &path, "nobody", |_ctx| async {}).unwrap();
    assert_eq!(empty.get_leader().await.unwrap(), Participant::none());
    assert!(empty.get_participants().await.unwrap().is_empty());
    let mut selectors = Vec::new();
    for id in ["first", "second", "third"] {
        let s = LeaderSelector::new(&c, &path, id, |ctx: LeadershipContext| async move {
            ctx.cancelled().await;
        })
        .unwrap();
        s.start().unwrap();
        // Queue in a known order.
        let n = selectors.len() + 1;
        assert!(
            eventually(Duration::from_secs(5), || c.request_counts().create
                >= n as u64)
            .await
        );
        let children = n;
        let mut ok = false;
        for _ in 0..500 {
            if s.get_participants().await.unwrap().len() == children {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(ok);
        selectors.push(s);
    }
    assert!(eventually(Duration::from_secs(5), || selectors[0].has_leadership()).await);
    assert_eq!(
        selectors[2].get_participants().await.unwrap(),
        vec![
            Participant {
                id: "first".into(),
                is_leader: true
            },
            Participant {
                id: "second".into(),
                is_leader: false
            },
            Participant {
                id: "third".into(),
                is_leader: false
            },
        ]
    );
    assert_eq!(
        selectors[1].get_leader().await.unwrap(),
        Participant {
            id: "first".into(),
            is_leader: true
        }
    );
    // Curator's mutex layout: _c_<uuid>-lock-<10 digits>, the id as data.
    for name in c.get_children(&path).await.unwrap() {
        assert!(
            name.starts_with("_c_") && uuid::Uuid::parse_str(&name[3..39]).is_ok(),
            "{name}"
        );
        assert_eq!(&name[39..45], "-lock-", "{name}");
        assert_eq!(name[45..].len(), 10, "{name}");
    }
    assert!(!selectors[1].has_leadership() && !selectors[2].has_leadership());
    for s in &selectors {
        s.close().await.unwrap();
    }
    // The leader's node is gone when close returns; waiting participants' nodes go right after.
    let mut left = usize::MAX;
    for _ in 0..200 {
        left = zkrecipes_testing::children_left(&c, &path).await.len();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(left, 0, "nodes left behind");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_close_cancels_take_leadership_and_hands_over() {
    let path = group("selector-close");
    let c1 = connect().await;
    let c2 = connect().await;
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let make = |c: &Client, id: &str| {
        let reasons = reasons.clone();
        LeaderSelector::new(c, &path, id, move |ctx: LeadershipContext| {
            let reasons = reasons.clone();
            async move {
                let r = ctx.cancelled().await;
                // Leadership lasts until we return: give the closer something to wait for.
                tokio::time::sleep(Duration::from_millis(50)).await;
                reasons.lock().unwrap().push((ctx.id().to_string(), r));
            }
        })
        .unwrap()
    };
    let a = make(&c1, "a");
    let b = make(&c2, "b");
    a.start().unwrap();
    assert!(eventually(Duration::from_secs(5), || a.has_leadership()).await);
    let a_token = a.leadership_epoch().unwrap();
    b.start().unwrap();
    assert_eq!(b.start().unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!(!b.await_like(Duration::from_millis(200)).await);
    a.close().await.unwrap();
    // close() waited for take_leadership to return.
    assert_eq!(
        *reasons.lock().unwrap(),
        vec![("a".to_string(), CancelReason::Closed)]
    );
    assert!(!a.has_leadership());
    assert!(eventually(Duration::from_secs(5), || b.has_leadership()).await);
    assert!(b.leadership_epoch().unwrap() > a_token);
    a.close().await.unwrap();
    assert_eq!(a.requeue().unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(a.start().unwrap_err().kind(), ErrorKind::Closed);
    // Interrupt: cancelled, not requeued (no auto requeue), the mutex released.
    b.interrupt_leadership();
    assert!(
        eventually(Duration::from_secs(5), || reasons.lock().unwrap().len()
            == 2)
        .await
    );
    assert_eq!(
        reasons.lock().unwrap()[1],
        ("b".to_string(), CancelReason::Interrupted)
    );
    assert!(eventually(Duration::from_secs(5), || c2.request_counts().delete >= 1).await);
    let mut released = false;
    for _ in 0..200 {
        if b.get_participants().await.unwrap().is_empty() {
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(released, "the interrupted leader still holds the mutex");
    assert!(!b.has_leadership());
    // requeue() brings it back.
    assert!(b.requeue().unwrap());
    assert!(eventually(Duration::from_secs(5), || b.has_leadership()).await);
    assert!(!b.requeue().unwrap(), "already queued (leading)");
    b.close().await.unwrap();
    b.close().await.unwrap();
    // A selector never started closes quietly.
    let idle = make(&c1, "idle");
    assert_eq!(
        idle.requeue().unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    idle.close().await.unwrap();
    c1.close().await;
    c2.close().await;
}

/// Starts `a` until it leads, then `b` (on `b_client`) until its lock node is asked for: `b`
/// waits behind `a`.
async fn lead_then_queue(a: &LeaderSelector, b: &LeaderSelector, b_client: &Client) {
    a.start().unwrap();
    assert!(eventually(Duration::from_secs(5), || a.has_leadership()).await);
    b.start().unwrap();
    assert!(
        eventually(Duration::from_secs(5), || b_client.request_counts().create
            >= 1)
        .await
    );
}

/// A selector (not started) that marks the flag returned when it leads, and leads until its
/// leadership is cancelled.
fn marking_selector(c: &Client, path: &str, id: &str) -> (LeaderSelector, Arc<AtomicBool>) {
    let led = Arc::new(AtomicBool::new(false));
    let flag = led.clone();
    let s = LeaderSelector::new(c, path, id, move |ctx: LeadershipContext| {
        let flag = flag.clone();
        async move {
            flag.store(true, Ordering::SeqCst);
            ctx.cancelled().await;
        }
    })
    .unwrap();
    (s, led)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_cancels_when_the_leaders_session_expires_and_another_leads() {
    let path = group("selector-expire");
    let session = Duration::from_secs(2);
    let c1 = connect_to(&server().connect_string(), session).await;
    let c2 = connect_to(&server().connect_string(), session).await;
    let cancelled: Arc<Mutex<Vec<CancelReason>>> = Arc::default();
    let cx = cancelled.clone();
    let a = LeaderSelector::new(&c1, &path, "a", move |ctx: LeadershipContext| {
        let cx = cx.clone();
        async move {
            let r = ctx.cancelled().await;
            cx.lock().unwrap().push(r);
        }
    })
    .unwrap();
    let (b, b_led) = marking_selector(&c2, &path, "b");
    lead_then_queue(&a, &b, &c2).await;
    zkrecipes_testing::expire_client_session(&c1).await.unwrap();
    let t = Instant::now();
    assert!(
        eventually(session + Duration::from_secs(1), || b_led
            .load(Ordering::SeqCst))
        .await,
        "no takeover"
    );
    eprintln!(
        "selector takeover after server-side expiry: {:?}",
        t.elapsed()
    );
    assert!(
        eventually(Duration::from_secs(5), || !cancelled
            .lock()
            .unwrap()
            .is_empty())
        .await,
        "not cancelled"
    );
    let r = cancelled.lock().unwrap()[0];
    assert!(
        matches!(
            r,
            CancelReason::ConnectionSuspended | CancelReason::SessionLost
        ),
        "{r:?}"
    );
    assert!(!a.has_leadership());
    // Without auto requeue it does not come back.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!a.has_leadership());
    assert_eq!(a.leadership_count(), 1);
    a.close().await.unwrap();
    b.close().await.unwrap();
    c1.close().await;
    c2.close().await;
}

/// A waiting selector stays queued through a session expiry, whatever its client's retry
/// policy has left: its lock node is made again on the new session. The acquire's retry
/// budget spans the whole wait, so a selector that had waited longer than its policy allows
/// (here: no retry at all) failed at the first expiry and left the queue for good, against
/// `requeue`'s promise (and then never led).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_selector_stays_queued_through_an_expiry_its_retry_policy_does_not_cover() {
    let path = group("selector-waits-on");
    let c1 = connect().await;
    let c2 = connect_retrying(&server().connect_string(), Duration::from_secs(4), 0).await;
    let a = LeaderSelector::new(&c1, &path, "a", |ctx: LeadershipContext| async move {
        ctx.cancelled().await;
    })
    .unwrap();
    let (b, b_led) = marking_selector(&c2, &path, "b");
    lead_then_queue(&a, &b, &c2).await;
    let old_session = c2.session_id();
    zkrecipes_testing::expire_client_session(&c2).await.unwrap();
    // Bounds for a loaded machine (the CI run with four test binaries at once took over 10 s
    // for the new session and b's create once); each wait ends as soon as its condition holds.
    assert!(
        eventually(Duration::from_secs(40), || c2.session_id() != old_session
            && c2.request_counts().create >= 2)
        .await,
        "b did not queue again on its new session (queued: {}, last error: {:?})",
        b.is_queued(),
        b.last_error()
    );
    assert!(b.is_queued(), "b left the queue: {:?}", b.last_error());
    a.close().await.unwrap();
    assert!(
        eventually(Duration::from_secs(40), || b_led.load(Ordering::SeqCst)).await,
        "b never led after the leader closed (queued: {}, last error: {:?})",
        b.is_queued(),
        b.last_error()
    );
    b.close().await.unwrap();
    c1.close().await;
    c2.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_blocking_callback_sees_cancellation_and_may_close_from_inside() {
    let path = group("selector-blocking");
    let c = connect().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let selector =
        LeaderSelector::new_blocking(&c, &path, "blk", move |ctx: &LeadershipContext| {
            let flag = Arc::new(AtomicBool::new(false));
            let f2 = flag.clone();
            ctx.on_cancel(move |_| f2.store(true, Ordering::SeqCst));
            let r = ctx.wait_cancelled(Some(Duration::from_secs(10)));
            // on_cancel runs on a library thread, soon after.
            let deadline = Instant::now() + Duration::from_secs(2);
            while !flag.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            s2.lock()
                .unwrap()
                .push((r, flag.load(Ordering::SeqCst), ctx.term()));
        })
        .unwrap();
    selector.auto_requeue();
    selector.start().unwrap();
    assert!(eventually(Duration::from_secs(5), || selector.has_leadership()).await);
    selector.interrupt_leadership();
    assert!(eventually(Duration::from_secs(5), || seen.lock().unwrap().len() == 1).await);
    // Auto requeue: it leads again.
    assert!(
        eventually(Duration::from_secs(5), || selector.leadership_count() == 2
            && selector.has_leadership())
        .await
    );
    selector.close().await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (Some(CancelReason::Interrupted), true, 1),
            (Some(CancelReason::Closed), true, 2)
        ]
    );

    // close() from inside take_leadership returns instead of waiting for itself.
    let holder: Arc<OnceLock<Arc<LeaderSelector>>> = Arc::default();
    let h2 = holder.clone();
    let closed_inside = Arc::new(AtomicBool::new(false));
    let ci = closed_inside.clone();
    let inner = Arc::new(
        LeaderSelector::new_blocking(
            &c,
            &group("selector-close-inside"),
            "in",
            move |ctx: &LeadershipContext| {
                let s = h2.get().expect("set before start").clone();
                s.close_blocking().unwrap();
                ci.store(ctx.is_cancelled(), Ordering::SeqCst);
            },
        )
        .unwrap(),
    );
    holder.set(inner.clone()).unwrap();
    inner.start().unwrap();
    assert!(
        eventually(Duration::from_secs(5), || closed_inside
            .load(Ordering::SeqCst))
        .await
    );
    assert_eq!(inner.state(), zkrecipes::leader::SelectorState::Closed);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_rejects_bad_paths_and_ids() {
    let c = connect().await;
    for bad in ["", "/", "x", "/a/", "/a//b"] {
        let e = LeaderSelector::new(&c, bad, "id", |_ctx| async {}).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}");
    }
    let e = LeaderSelector::new_blocking(&c, "/ok", "nul\0", |_ctx| {}).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observer_understands_selector_lock_nodes() {
    let path = group("observe-selector");
    let oc = connect().await;
    let mut observer = observe(&oc, &path).await.unwrap();
    let c = connect().await;
    let s = LeaderSelector::new(&c, &path, "sel", |ctx: LeadershipContext| async move {
        ctx.cancelled().await;
    })
    .unwrap();
    s.start().unwrap();
    let p = tokio::time::timeout(Duration::from_secs(5), observer.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        p,
        Participant {
            id: "sel".into(),
            is_leader: true
        }
    );
    s.close().await.unwrap();
    let p = tokio::time::timeout(Duration::from_secs(5), observer.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(p, Participant::none());
    c.close().await;
    // Closing the observer's client ends the observer.
    oc.close().await;
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), observer.changed())
            .await
            .unwrap(),
        None
    );
}

/// Small helper: whether a selector gets leadership within `d`.
trait AwaitLike {
    async fn await_like(&self, d: Duration) -> bool;
}

impl AwaitLike for LeaderSelector {
    async fn await_like(&self, d: Duration) -> bool {
        eventually(d, || self.has_leadership()).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_connection_cut_cancels_under_standard_policy_only() {
    for policy in [LostPolicy::Standard, LostPolicy::Session] {
        let path = group("selector-cut");
        let proxy = FaultProxy::start(&server().connect_string());
        let c = connect_to(&proxy.connect_string(), Duration::from_secs(8)).await;
        let reasons: Arc<Mutex<Vec<CancelReason>>> = Arc::default();
        let rx = reasons.clone();
        let s = LeaderSelector::new(&c, &path, "cut", move |ctx: LeadershipContext| {
            let rx = rx.clone();
            async move {
                let r = ctx.cancelled().await;
                rx.lock().unwrap().push(r);
            }
        })
        .unwrap()
        .with_lost_policy(policy)
        .unwrap();
        s.start().unwrap();
        assert!(eventually(Duration::from_secs(5), || s.has_leadership()).await);
        let mut states = c.state_stream();
        proxy.cut();
        loop {
            match tokio::time::timeout(Duration::from_secs(5), states.next())
                .await
                .unwrap()
            {
                Some(ConnectionState::Suspended) => break,
                Some(_) => continue,
                None => panic!("client closed"),
            }
        }
        if policy == LostPolicy::Standard {
            assert!(
                eventually(Duration::from_secs(2), || !reasons
                    .lock()
                    .unwrap()
                    .is_empty())
                .await
            );
            assert_eq!(
                reasons.lock().unwrap()[0],
                CancelReason::ConnectionSuspended
            );
            assert!(!s.has_leadership());
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        proxy.restore();
        loop {
            match tokio::time::timeout(Duration::from_secs(10), states.next())
                .await
                .unwrap()
            {
                Some(ConnectionState::Reconnected) => break,
                Some(_) => continue,
                None => panic!("client closed"),
            }
        }
        if policy == LostPolicy::Session {
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(
                reasons.lock().unwrap().is_empty(),
                "a short disconnect must not cancel under the session policy"
            );
            assert!(s.has_leadership());
        }
        s.close().await.unwrap();
        c.close().await;
    }
}

/// A waiting selector whose session expires stays queued (its lock node is made again on the
/// new session) and leads once the leader leaves; `requeue()` then answers "already queued"
/// (Curator's waiting selector leaves the queue here, so its `requeue()` answers true). Also:
/// once a term ends without auto requeue, `requeue()` right after the release is seen works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_selector_stays_queued_through_a_session_expiry() {
    let path = group("selector-expiry");
    let (c1, c2) = (connect().await, connect().await);
    let make = |c: &Client, id: &str| {
        LeaderSelector::new(c, &path, id, move |ctx: LeadershipContext| async move {
            ctx.cancelled().await;
        })
        .unwrap()
    };
    let (a, b) = (make(&c1, "a"), make(&c2, "b"));
    a.start().unwrap();
    assert!(eventually(Duration::from_secs(5), || a.has_leadership()).await);
    b.start().unwrap();
    assert!(b.is_queued());
    async fn participants(s: &LeaderSelector) -> usize {
        s.get_participants().await.map(|p| p.len()).unwrap_or(0)
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while participants(&b).await != 2 {
        assert!(Instant::now() < deadline, "b never queued its node");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let old = c2.session_id();
    zkrecipes_testing::expire_client_session(&c2).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(c2.session_id() != old && c2.state().is_connected() && participants(&b).await == 2) {
        assert!(
            Instant::now() < deadline,
            "b did not queue again on its new session"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(b.is_queued(), "still queued");
    assert!(!b.requeue().unwrap(), "already queued");
    assert!(b.last_error().is_none(), "{:?}", b.last_error());
    a.interrupt_leadership();
    assert!(eventually(Duration::from_secs(10), || b.has_leadership()).await);
    // a's term ended without auto requeue: it is out of the queue by the time its node is gone.
    assert!(!a.is_queued());
    assert!(a.requeue().unwrap());
    b.close().await.unwrap();
    assert!(eventually(Duration::from_secs(10), || a.has_leadership()).await);
    a.close().await.unwrap();
    c1.close().await;
    c2.close().await;
}

/// Closing a latch gives leadership up on purpose: logged at INFO, never WARN (the demo printed
/// "leadership lost or given up" at WARN for every close). A real loss — the session expired —
/// is a WARN.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_latch_logs_no_loss_and_a_lost_one_warns() {
    const WAIT: Duration = Duration::from_secs(20);
    let records = Arc::new(Mutex::new(Vec::<zkrecipes::log::Record>::new()));
    let r = records.clone();
    zkrecipes::log::set_logger(Some(zkrecipes::log::Level::Info), move |rec| {
        if rec.target.starts_with("zkrecipes::leader") {
            r.lock().unwrap().push(rec.clone());
        }
    })
    .unwrap();
    let about = |path: &str| {
        let path = path.to_string();
        let records = records.clone();
        move || -> Vec<(zkrecipes::log::Level, String)> {
            records
                .lock()
                .unwrap()
                .iter()
                .filter(|r| r.message.contains(&format!("latch={path}")))
                .map(|r| (r.level, r.message.clone()))
                .collect()
        }
    };

    let c = connect().await;
    let closed = group("closed-log");
    let latch = LeaderLatch::new(&c, &closed, "a").unwrap();
    latch.start().await.unwrap();
    assert!(latch.await_leadership(Some(WAIT)).await.unwrap());
    latch.close().await.unwrap();
    let seen = about(&closed);
    assert!(
        eventually(WAIT, || seen().iter().any(|(_, m)| m.contains("given up"))).await,
        "{:?}",
        seen()
    );
    assert!(
        seen()
            .iter()
            .all(|(level, _)| *level != zkrecipes::log::Level::Warn),
        "a close is not a loss: {:?}",
        seen()
    );

    let lost = group("lost-log");
    let latch = LeaderLatch::new(&c, &lost, "a").unwrap();
    latch.start().await.unwrap();
    assert!(latch.await_leadership(Some(WAIT)).await.unwrap());
    zkrecipes_testing::expire_client_session(&c).await.unwrap();
    let seen = about(&lost);
    assert!(
        eventually(WAIT, || seen().iter().any(|(level, m)| {
            *level == zkrecipes::log::Level::Warn && m.contains("leadership lost")
        }))
        .await,
        "{:?}",
        seen()
    );
    latch.close().await.unwrap();
    c.close().await;
}

/// A selector whose client is closed leaves the queue: `is_queued` is false once its worker
/// has failed with `Closed` (it stayed true, so `requeue` answered "already queued" for a
/// selector that could never lead again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_whose_client_closed_is_not_queued() {
    let path = group("selector-closed");
    let c = connect().await;
    let s = LeaderSelector::new(&c, &path, "a", |ctx: LeadershipContext| async move {
        ctx.cancelled().await;
    })
    .unwrap();
    s.auto_requeue();
    s.start().unwrap();
    assert!(eventually(Duration::from_secs(10), || s.has_leadership()).await);
    c.close().await;
    assert!(
        eventually(Duration::from_secs(10), || matches!(
            s.last_error(),
            Some(zkrecipes::Error::Closed(_))
        ))
        .await,
        "the worker fails with Closed: {:?}",
        s.last_error()
    );
    assert!(!s.is_queued(), "a selector of a closed client is queued");
}

/// A close from outside take_leadership waits for it also after take_leadership closed its own
/// selector (which could not wait for itself): before, that first close gave the wait up for
/// every later one, and a caller freed what take_leadership still used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_after_take_leadership_closed_its_selector_waits_for_it() {
    let c = connect().await;
    let holder: Arc<OnceLock<Arc<LeaderSelector>>> = Arc::default();
    let h2 = holder.clone();
    let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let g2 = gate.clone();
    let closed_itself = Arc::new(AtomicBool::new(false));
    let ci = closed_itself.clone();
    let returned = Arc::new(AtomicBool::new(false));
    let r2 = returned.clone();
    let selector = Arc::new(
        LeaderSelector::new_blocking(
            &c,
            &group("selector-close-inside-then-outside"),
            "in",
            move |_ctx: &LeadershipContext| {
                h2.get()
                    .expect("set before start")
                    .close_blocking()
                    .unwrap();
                ci.store(true, Ordering::SeqCst);
                let (open, cv) = &*g2;
                let mut open = open.lock().unwrap();
                while !*open {
                    open = cv.wait(open).unwrap();
                }
                r2.store(true, Ordering::SeqCst);
            },
        )
        .unwrap(),
    );
    holder.set(selector.clone()).unwrap();
    selector.start().unwrap();
    assert!(
        eventually(Duration::from_secs(10), || closed_itself
            .load(Ordering::SeqCst))
        .await
    );
    let mut closing = {
        let (selector, returned) = (selector.clone(), returned.clone());
        tokio::spawn(async move {
            selector.close().await.unwrap();
            returned.load(Ordering::SeqCst)
        })
    };
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut closing)
            .await
            .is_err(),
        "close returned while take_leadership still ran"
    );
    {
        let (open, cv) = &*gate;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }
    assert!(
        tokio::time::timeout(Duration::from_secs(10), closing)
            .await
            .expect("close returns once take_leadership has")
            .unwrap(),
        "close returned before take_leadership did"
    );
    c.close().await;
}
