//! kazoo's SetPartitioner, NonBlockingLease and MultiNonBlockingLease against a real ZooKeeper
//! (started by the harness), on kazoo's node layout.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zkrecipes::client::{CreateMode, CreateOptions};
use zkrecipes::partition::{
    partition_set, LeaseOptions, MultiNonBlockingLease, NonBlockingLease, PartitionState,
    PartitionerOptions, SetPartitioner,
};
use zkrecipes::{Client, ClientBuilder, Error, NodeEventKind};
use zkrecipes_testing::{children_left, TestingServer};

const WAIT: Option<Duration> = Some(Duration::from_secs(60));

async fn connect(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect")
}

fn options(id: &str) -> PartitionerOptions {
    PartitionerOptions {
        identifier: Some(id.to_string()),
        time_boundary: Duration::from_millis(300),
        max_reaction_time: Duration::from_millis(200),
        partition_func: None,
    }
}

fn set(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("p{i}")).collect()
}

async fn member(c: &Client, path: &str, id: &str, parts: &[String]) -> SetPartitioner {
    let p = SetPartitioner::new(c, path, parts, options(id)).unwrap();
    p.start().await.unwrap();
    p
}

/// Drives every member (release_set when told to) until all are ACQUIRED at once with the
/// shares kazoo's function gives for exactly `ids`; checks the shares cover the set once.
async fn settle(members: &[&SetPartitioner], ids: &[&str], parts: &[String]) {
    settle_by(members, parts, |id| partition_set(id, ids, parts).unwrap()).await
}

/// [`settle`] with the shares `expected` gives each member's identifier.
async fn settle_by(
    members: &[&SetPartitioner],
    parts: &[String],
    expected: impl Fn(&str) -> Vec<String>,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "the members never settled");
        let mut all = true;
        for m in members {
            match m.state() {
                PartitionState::Release => {
                    m.release_set().await.unwrap();
                    all = false;
                }
                PartitionState::Acquired => {}
                PartitionState::Failure => panic!("{} failed", m.identifier()),
                PartitionState::Allocating => {
                    m.wait_for_acquire(Some(Duration::from_millis(100)))
                        .await
                        .unwrap();
                    all = false;
                }
            }
        }
        if !all {
            continue;
        }
        let shares: Vec<Vec<String>> = members.iter().map(|m| m.partitions()).collect();
        let expected: Vec<Vec<String>> = members.iter().map(|m| expected(m.identifier())).collect();
        if shares != expected {
            // Acquired on an older view of the party: the next change comes.
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let mut union: Vec<String> = shares.concat();
        union.sort();
        let mut want = parts.to_vec();
        want.sort();
        assert_eq!(union, want, "every partition to exactly one member");
        return;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_divide_the_set_on_kazoos_layout_and_divide_it_again_when_the_party_changes() {
    let server = TestingServer::start();
    let (ca, cb, cc) = (
        connect(&server.connect_string()).await,
        connect(&server.connect_string()).await,
        connect(&server.connect_string()).await,
    );
    let parts = set(7);
    let a = member(&ca, "/part", "a", &parts).await;
    let states = Arc::new(Mutex::new(Vec::new()));
    let heard = states.clone();
    a.add_listener(move |s| heard.lock().unwrap().push(*s));
    let b = member(&cb, "/part", "b", &parts).await;
    settle(&[&a, &b], &["a", "b"], &parts).await;
    assert_eq!(a.partitions(), ["p0", "p2", "p4", "p6"]);
    assert_eq!(b.partitions(), ["p1", "p3", "p5"]);

    // kazoo's layout: party nodes <32 hex>-<id>, lock nodes matching __lock__\d{10}$ under
    // path/locks/<partition>, holding the identifier.
    let party = ca.get_children("/part/party").await.unwrap();
    assert_eq!(party.len(), 2);
    for node in &party {
        let (hex, id) = node.split_once('-').unwrap();
        assert!(
            hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()),
            "{node}"
        );
        assert!(id == "a" || id == "b", "{node}");
    }
    let mut locked = BTreeSet::new();
    for p in &parts {
        let nodes = ca.get_children(&format!("/part/locks/{p}")).await.unwrap();
        assert_eq!(nodes.len(), 1, "{p}: {nodes:?}");
        let name = &nodes[0];
        let seq = name.rsplit("__lock__").next().unwrap();
        assert!(
            name.contains("__lock__") && seq.len() == 10 && seq.chars().all(|c| c.is_ascii_digit()),
            "{name}"
        );
        let (data, stat) = ca
            .get_data(&format!("/part/locks/{p}/{name}"))
            .await
            .unwrap();
        assert!(stat.ephemeral_owner != 0);
        locked.insert((p.clone(), String::from_utf8(data).unwrap()));
    }
    for p in a.partitions() {
        assert!(locked.contains(&(p, "a".to_string())));
    }
    for (path, mode) in [
        ("/part", 0),
        ("/part/locks", 0),
        ("/part/party", 0),
        ("/part/locks/p0", 0),
    ] {
        let stat = ca.exists(path).await.unwrap().unwrap();
        assert_eq!(
            stat.ephemeral_owner, mode,
            "{path} is PERSISTENT, as kazoo's ensure_path makes it"
        );
    }

    // A third member joins: the others are told to release, and all divide the set again.
    let c = member(&cc, "/part", "c", &parts).await;
    assert_eq!(
        a.wait_for_change(PartitionState::Acquired, WAIT).await,
        PartitionState::Release
    );
    assert!(
        a.partitions().is_empty(),
        "no partitions to work on in RELEASE"
    );
    settle(&[&a, &b, &c], &["a", "b", "c"], &parts).await;
    assert_eq!(c.partitions(), ["p2", "p5"]);

    // b leaves: a and c take its share.
    b.finish().await.unwrap();
    assert_eq!(b.state(), PartitionState::Failure);
    settle(&[&a, &c], &["a", "c"], &parts).await;
    assert_eq!(ca.get_children("/part/party").await.unwrap().len(), 2);
    let seen = states.lock().unwrap().clone();
    assert_eq!(seen[0], PartitionState::Acquired, "{seen:?}");
    assert!(
        seen.windows(2)
            .any(|w| w == [PartitionState::Release, PartitionState::Allocating]),
        "{seen:?}"
    );

    a.finish().await.unwrap();
    c.finish().await.unwrap();
    for p in &parts {
        assert!(children_left(&ca, &format!("/part/locks/{p}"))
            .await
            .is_empty());
    }
    assert!(children_left(&ca, "/part/party").await.is_empty());
    for c in [ca, cb, cc] {
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_held_by_a_member_that_has_not_released_is_not_taken() {
    let server = TestingServer::start();
    let (ca, cb) = (
        connect(&server.connect_string()).await,
        connect(&server.connect_string()).await,
    );
    let parts = set(2);
    let a = member(&ca, "/hold", "a", &parts).await;
    assert!(a.wait_for_acquire(WAIT).await.unwrap());
    assert_eq!(a.partitions(), ["p0", "p1"]);
    let b = member(&cb, "/hold", "b", &parts).await;
    assert_eq!(
        a.wait_for_change(PartitionState::Acquired, WAIT).await,
        PartitionState::Release
    );
    // a does not release: b's share (p1) stays a's, and b stays ALLOCATING.
    assert!(!b
        .wait_for_acquire(Some(Duration::from_secs(2)))
        .await
        .unwrap());
    assert_eq!(b.state(), PartitionState::Allocating);
    a.release_set().await.unwrap();
    settle(&[&a, &b], &["a", "b"], &parts).await;
    assert_eq!(b.partitions(), ["p1"]);

    // A kazoo contender (its own node name) in front of a's lock keeps a from p0.
    let kazoo = ca
        .create(
            "/hold/locks/p0/0123456789abcdef0123456789abcdef__lock__",
            b"",
            CreateOptions::new(CreateMode::EphemeralSequential),
        )
        .await;
    // a holds p0 now, so the kazoo node queues behind it; b leaving makes everyone allocate
    // again, and a must wait for the kazoo node, which comes first in the line once a lets go.
    let kazoo = kazoo.unwrap();
    b.finish().await.unwrap();
    assert_eq!(
        a.wait_for_change(PartitionState::Acquired, WAIT).await,
        PartitionState::Release
    );
    a.release_set().await.unwrap();
    assert!(
        !a.wait_for_acquire(Some(Duration::from_secs(2)))
            .await
            .unwrap(),
        "the kazoo contender holds p0"
    );
    ca.delete(&kazoo.path, Default::default()).await.unwrap();
    assert!(a.wait_for_acquire(WAIT).await.unwrap());
    assert_eq!(a.partitions(), ["p0", "p1"]);
    a.finish().await.unwrap();
    ca.close().await;
    cb.close().await;
}

/// `release_set` leaves ACQUIRED before its locks go: from its first step the partitions are
/// not listed as ours (another member may take them as soon as a lock is deleted), and the
/// member allocates again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_set_stops_listing_the_partitions_before_their_locks_go() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let parts = set(3);
    let p = member(&c, "/rel", "a", &parts).await;
    assert!(p.wait_for_acquire(WAIT).await.unwrap());
    assert_eq!(p.partitions().len(), 3);
    let release = p.release_set();
    let mut release = std::pin::pin!(release);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    // One step: the lock deletes are sent, their replies not in yet.
    let first = std::future::Future::poll(release.as_mut(), &mut cx);
    assert!(
        p.partitions().is_empty(),
        "listed while released ({first:?}, {:?})",
        p.state()
    );
    assert_ne!(p.state(), PartitionState::Acquired);
    release.await.unwrap();
    assert!(p.wait_for_acquire(WAIT).await.unwrap());
    assert_eq!(p.partitions().len(), 3);
    p.finish().await.unwrap();
    c.close().await;
}

/// A `finish` dropped after its first step (a timeout around it, a cancelled task) still
/// releases the locks and leaves the party: the member is not left counted, and given a share
/// nobody takes, for the rest of its session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finish_dropped_after_its_first_step_still_leaves_the_party() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let watcher = connect(&server.connect_string()).await;
    let parts = set(3);
    let p = member(&c, "/fin", "a", &parts).await;
    assert!(p.wait_for_acquire(WAIT).await.unwrap());
    assert_eq!(watcher.get_children("/fin/party").await.unwrap().len(), 1);
    {
        let finish = p.finish();
        let mut finish = std::pin::pin!(finish);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        // One step: the lock deletes are sent, their replies not in yet; then dropped.
        let first = std::future::Future::poll(finish.as_mut(), &mut cx);
        assert!(first.is_pending(), "finish answered in its first step");
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while !watcher.get_children("/fin/party").await.unwrap().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the dropped finish left its party node"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(p.state(), PartitionState::Failure);
    c.close().await;
    watcher.close().await;
}

/// A `start` dropped once its party node was made (a timeout around it) goes on to its end:
/// the member takes its share instead of being counted by the others while it takes none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_dropped_after_it_joined_the_party_still_starts() {
    let server = TestingServer::start();
    let proxy = zkrecipes_testing::FaultProxy::start(&server.connect_string());
    let c = connect(&proxy.connect_string()).await;
    let watcher = connect(&server.connect_string()).await;
    let parts = set(2);
    let p = Arc::new(SetPartitioner::new(&c, "/sdrop", &parts, options("a")).unwrap());
    proxy.delay_replies(Duration::from_millis(1500));
    let starting = {
        let p = p.clone();
        tokio::spawn(async move { p.start().await })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while watcher
        .get_children("/sdrop/party")
        .await
        .unwrap_or_default()
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the start never made its party node"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    starting.abort();
    proxy.restore();
    assert!(
        p.wait_for_acquire(Some(Duration::from_secs(20)))
            .await
            .unwrap(),
        "the dropped start did not go on: {:?}",
        p.state()
    );
    assert_eq!(p.partitions(), parts);
    p.finish().await.unwrap();
    c.close().await;
    watcher.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_loss_is_failure_and_a_deleted_lock_is_release() {
    let server = TestingServer::start();
    let (ca, cb) = (
        connect(&server.connect_string()).await,
        connect(&server.connect_string()).await,
    );
    let parts = set(3);
    let a = member(&ca, "/fail", "a", &parts).await;
    assert!(a.wait_for_acquire(WAIT).await.unwrap());

    // Someone deletes a held lock node: RELEASE.
    let nodes = cb.get_children("/fail/locks/p1").await.unwrap();
    cb.delete(&format!("/fail/locks/p1/{}", nodes[0]), Default::default())
        .await
        .unwrap();
    assert_eq!(
        a.wait_for_change(PartitionState::Acquired, WAIT).await,
        PartitionState::Release
    );
    a.release_set().await.unwrap();
    assert!(a.wait_for_acquire(WAIT).await.unwrap());

    // Someone deletes our party node: we join again rather than stall.
    let b = member(&cb, "/fail", "b", &parts).await;
    settle(&[&a, &b], &["a", "b"], &parts).await;
    let ours = cb
        .get_children("/fail/party")
        .await
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with("-b"))
        .unwrap();
    cb.delete(&format!("/fail/party/{ours}"), Default::default())
        .await
        .unwrap();
    assert_eq!(
        a.wait_for_change(PartitionState::Acquired, WAIT).await,
        PartitionState::Release
    );
    settle(&[&a, &b], &["a", "b"], &parts).await;
    let party = cb.get_children("/fail/party").await.unwrap();
    assert!(
        party.contains(&ours),
        "b joined again, under its own name: {party:?}"
    );

    // The session expires: FAILURE, for good; the others take the set.
    // (Not `wait_for_change(a.state(), ..)`: the state read may be FAILURE already, and then
    // the wait would sit out its whole limit for a change that never comes.)
    zkrecipes_testing::expire_client_session(&ca).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while a.state() != PartitionState::Failure {
        assert!(Instant::now() < deadline);
        a.wait_for_change(a.state(), Some(Duration::from_secs(1)))
            .await;
    }
    assert!(!a.wait_for_acquire(WAIT).await.unwrap());
    assert!(a.partitions().is_empty());
    settle(&[&b], &["b"], &parts).await;
    assert_eq!(b.partitions(), parts);
    b.finish().await.unwrap();
    a.finish().await.unwrap();
    ca.close().await;
    cb.close().await;
}

/// Contiguous ranges: member `i` of `n` (identifiers sorted) takes the `i`-th run of the set
/// (sorted), the larger runs first.
fn ranges(identifier: &str, members: &[String], set: &[String]) -> Vec<String> {
    let mut members = members.to_vec();
    members.sort();
    let mut set = set.to_vec();
    set.sort();
    let (n, i) = (
        members.len(),
        members.iter().position(|m| m == identifier).unwrap(),
    );
    let (each, extra) = (set.len() / n, set.len() % n);
    let start = i * each + i.min(extra);
    set[start..start + each + usize::from(i < extra)].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_function_divides_the_set_and_a_wrong_answer_is_failure() {
    let server = TestingServer::start();
    let (ca, cb, cc) = (
        connect(&server.connect_string()).await,
        connect(&server.connect_string()).await,
        connect(&server.connect_string()).await,
    );
    let parts: Vec<String> = ["p3", "p0", "p5", "p1", "p4", "p2", "p6"]
        .map(String::from)
        .to_vec();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let custom = |id: &str| {
        let calls = calls.clone();
        options(id).partition_func(move |me, members, set| {
            calls
                .lock()
                .unwrap()
                .push((me.to_string(), members.to_vec(), set.to_vec()));
            let mut run = ranges(me, members, set);
            run.reverse(); // any order: the share is kept sorted
            Ok(run)
        })
    };
    let a = SetPartitioner::new(&ca, "/custom", &parts, custom("a")).unwrap();
    let b = SetPartitioner::new(&cb, "/custom", &parts, custom("b")).unwrap();
    a.start().await.unwrap();
    b.start().await.unwrap();
    let both = ["a", "b"].map(String::from);
    settle_by(&[&a, &b], &parts, |id| ranges(id, &both, &parts)).await;
    assert_eq!(a.partitions(), ["p0", "p1", "p2", "p3"]);
    assert_eq!(b.partitions(), ["p4", "p5", "p6"]);
    {
        let calls = calls.lock().unwrap();
        let (me, members, set) = calls.last().unwrap();
        assert!(me == "a" || me == "b");
        let mut members = members.clone();
        members.sort();
        assert_eq!(members, both, "the party's identifiers");
        assert_eq!(set, &parts, "the set as given");
    }

    // A member whose function names a partition outside the set, one twice, or fails: FAILURE,
    // and it leaves the party, so the others divide the set between themselves again.
    type Wrong = fn(&str, &[String], &[String]) -> zkrecipes::Result<Vec<String>>;
    let wrong: [(Wrong, &str); 3] = [
        (|_, _, _| Ok(vec!["p9".to_string()]), "not in the set"),
        (
            |_, _, _| Ok(vec!["p1".to_string(), "p1".to_string()]),
            "twice",
        ),
        (
            |_, _, _| Err(Error::InvalidArgument("no answer".into())),
            "no answer",
        ),
    ];
    for (f, why) in wrong {
        // What the function holds is let go at FAILURE (a face's function may hold the
        // partitioner itself: a cycle otherwise).
        let held = Arc::new(());
        let token = held.clone();
        let c = SetPartitioner::new(
            &cc,
            "/custom",
            &parts,
            options("c").partition_func(move |me, members, set| {
                let _ = &token;
                f(me, members, set)
            }),
        )
        .unwrap();
        c.start().await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while c.state() != PartitionState::Failure {
            assert!(Instant::now() < deadline, "{why}: never FAILURE");
            c.wait_for_change(c.state(), Some(Duration::from_secs(1)))
                .await;
        }
        assert!(c.partitions().is_empty(), "{why}");
        assert_eq!(Arc::strong_count(&held), 1, "{why}: the function is kept");
        while cc
            .get_children("/custom/party")
            .await
            .unwrap()
            .iter()
            .any(|n| n.ends_with("-c"))
        {
            assert!(Instant::now() < deadline, "{why}: c's party node stayed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        settle_by(&[&a, &b], &parts, |id| ranges(id, &both, &parts)).await;
        c.finish().await.unwrap();
    }
    for p in [a, b] {
        p.finish().await.unwrap();
    }
    for c in [ca, cb, cc] {
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_lifecycle() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let parts = set(2);
    for (path, set, id, why) in [
        ("bad", parts.clone(), "a", "path"),
        ("/x", vec!["a/b".to_string()], "a", "node name"),
        ("/x", vec!["".to_string()], "a", "node name"),
        ("/x", vec!["..".to_string()], "a", "node name"),
        ("/x", vec!["a".to_string(), "a".to_string()], "a", "twice"),
        ("/x", parts.clone(), "", "identifier"),
        ("/x", parts.clone(), "a/b", "identifier"),
    ] {
        match SetPartitioner::new(&c, path, &set, options(id)) {
            Err(Error::InvalidArgument(m)) => assert!(m.to_lowercase().contains(why), "{m}"),
            other => panic!("{path} {set:?} {id:?}: {other:?}"),
        }
    }
    let zero = PartitionerOptions {
        time_boundary: Duration::ZERO,
        ..options("a")
    };
    assert!(matches!(
        SetPartitioner::new(&c, "/x", &parts, zero),
        Err(Error::InvalidArgument(_))
    ));
    let p = SetPartitioner::new(&c, "/x", &parts, options("a")).unwrap();
    assert_eq!(p.state(), PartitionState::Allocating);
    assert!(matches!(
        p.release_set().await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        p.wait_for_acquire(None).await,
        Err(Error::InvalidArgument(_))
    ));
    p.start().await.unwrap();
    assert!(matches!(p.start().await, Err(Error::InvalidArgument(_))));
    assert!(p.wait_for_acquire(WAIT).await.unwrap());
    p.finish().await.unwrap();
    p.finish().await.unwrap();
    assert!(matches!(p.start().await, Err(Error::Closed(_))));
    assert_eq!(
        PartitionState::from_name("RELEASE"),
        Some(PartitionState::Release)
    );
    let default = SetPartitioner::new(&c, "/y", &parts, PartitionerOptions::default()).unwrap();
    assert!(default
        .identifier()
        .ends_with(&format!("-{}", std::process::id())));
    // An empty set: ACQUIRED with nothing.
    let empty = SetPartitioner::new(&c, "/z", &Vec::<String>::new(), options("a")).unwrap();
    empty.start().await.unwrap();
    assert!(empty.wait_for_acquire(WAIT).await.unwrap());
    assert!(empty.partitions().is_empty());
    empty.finish().await.unwrap();
    c.close().await;
    assert!(matches!(
        SetPartitioner::new(&c, "/x", &parts, options("a")),
        Err(Error::Closed(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_client_is_failure() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let p = member(&c, "/closed", "a", &set(2)).await;
    assert!(p.wait_for_acquire(WAIT).await.unwrap());
    c.close().await;
    assert_eq!(
        p.wait_for_change(PartitionState::Acquired, WAIT).await,
        PartitionState::Failure
    );
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn lease_options(id: &str, now: Option<SystemTime>) -> LeaseOptions {
    LeaseOptions {
        identifier: Some(id.to_string()),
        now,
        lock_timeout: WAIT,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_is_held_until_its_end_and_renewed_by_its_holder() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let hour = Duration::from_secs(3600);
    let t0 = 1_709_251_199; // 2024-02-29T23:59:59Z
    let a = NonBlockingLease::obtain(&c, "/lease", hour, lease_options("a", Some(at(t0))))
        .await
        .unwrap();
    assert!(a.obtained());
    assert_eq!(a.end(), Some(at(t0 + 3600)));
    let (data, _) = c.get_data("/lease/lease_holder").await.unwrap();
    assert_eq!(
        String::from_utf8(data).unwrap(),
        r#"{"version": 1, "holder": "a", "end": "2024-03-01T00:59:59"}"#,
        "Python's json.dumps of kazoo's dict"
    );
    let b = NonBlockingLease::obtain(&c, "/lease", hour, lease_options("b", Some(at(t0 + 10))))
        .await
        .unwrap();
    assert!(!b.obtained(), "a holds it until its end");
    // The holder renews, rewriting its node in place: it is never absent (a renewal dropped
    // or failed between a delete and a create would free a lease its holder counts on).
    let (_, _, watch) = c.get_data_watch("/lease/lease_holder").await.unwrap();
    let again = NonBlockingLease::obtain(&c, "/lease", hour, lease_options("a", Some(at(t0 + 20))))
        .await
        .unwrap();
    assert_eq!(again.end(), Some(at(t0 + 3620)));
    let event = tokio::time::timeout(Duration::from_secs(10), watch.changed())
        .await
        .expect("the renewal changed the holder node");
    assert_eq!(
        event.kind,
        NodeEventKind::DataChanged,
        "the holder node went away"
    );
    // At the end it is free: b takes it.
    let b = NonBlockingLease::obtain(&c, "/lease", hour, lease_options("b", Some(at(t0 + 3620))))
        .await
        .unwrap();
    assert!(b.obtained());
    // Nothing but the holder node is left under the lease path (the lock node went).
    assert_eq!(c.get_children("/lease").await.unwrap(), ["lease_holder"]);
    // The real clock: a lease ending now-ish.
    let real = NonBlockingLease::obtain(
        &c,
        "/real",
        Duration::from_secs(60),
        lease_options("r", None),
    )
    .await
    .unwrap();
    let end = real.end().unwrap();
    let now = SystemTime::now();
    assert!(
        end <= now + Duration::from_secs(60)
            && end + Duration::from_secs(5) > now + Duration::from_secs(60)
    );
    c.close().await;
}

/// A lease decided under a lock that was lost after the holder was read (the session that held
/// the lock ended and the server deleted its node; here deleted by hand, the same to the server)
/// writes nothing: the next contender may already be deciding. Before, the write landed (a bare
/// `set_data` at the version read, on whatever session the client had by then) and both
/// believed they held the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_decided_after_its_lock_was_lost_writes_nothing() {
    let server = TestingServer::start();
    let proxy = zkrecipes_testing::FaultProxy::start(&server.connect_string());
    let c = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(30))
        .connect()
        .await
        .expect("connect");
    let other = connect(&server.connect_string()).await;
    let t0 = 1_709_251_199;
    let old = NonBlockingLease::obtain(
        &other,
        "/lost",
        Duration::from_secs(1),
        lease_options("old", Some(at(t0))),
    )
    .await
    .unwrap();
    assert!(old.obtained());
    let (before, _) = other.get_data("/lost/lease_holder").await.unwrap();
    // Replies are held back; requests reach the server at once.
    proxy.delay_replies(Duration::from_millis(700));
    let deciding = {
        let c = c.clone();
        tokio::spawn(async move {
            NonBlockingLease::obtain(
                &c,
                "/lost",
                Duration::from_secs(60),
                lease_options("late", Some(at(t0 + 100))),
            )
            .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let lock = loop {
        let children = other.get_children("/lost").await.unwrap();
        if let Some(lock) = children.into_iter().find(|n| n.contains("__lock__")) {
            break lock;
        }
        assert!(Instant::now() < deadline, "the lock node was never made");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // The lock's create went with its look at the children (one write, pipelined): the next
    // request to leave the client is the holder's read, sent once it saw itself first. It holds
    // the lock and is deciding: the lock goes now, before the decision's write.
    let reads = proxy.client_reads();
    while proxy.client_reads() < reads + 1 {
        assert!(
            Instant::now() < deadline,
            "the decision's requests never came"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    other
        .delete(&format!("/lost/{lock}"), Default::default())
        .await
        .unwrap();
    let lease = deciding.await.unwrap().unwrap();
    proxy.restore();
    assert!(!lease.obtained(), "obtained under a lock it had lost");
    assert_eq!(
        other.get_data("/lost/lease_holder").await.unwrap().0,
        before,
        "the holder node was written after the lock was lost"
    );
    c.close().await;
    other.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_holder_nodes_of_another_version_or_unreadable_are_left_alone() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let hour = Duration::from_secs(3600);
    let persistent = CreateOptions::new(CreateMode::Persistent).persistent_parents();
    c.create("/v2/lease_holder", br#"{"version": 2}"#, persistent)
        .await
        .unwrap();
    let l = NonBlockingLease::obtain(&c, "/v2", hour, lease_options("a", None))
        .await
        .unwrap();
    assert!(
        !l.obtained(),
        "kazoo leaves a lease of another version to its own kind"
    );
    c.create("/junk/lease_holder", b"not json", persistent)
        .await
        .unwrap();
    match NonBlockingLease::obtain(&c, "/junk", hour, lease_options("a", None)).await {
        Err(Error::CorruptedData(m)) => assert!(m.contains("lease_holder"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        c.get_data("/junk/lease_holder").await.unwrap().0,
        b"not json"
    );
    assert_eq!(
        c.get_children("/junk").await.unwrap(),
        ["lease_holder"],
        "the lock was released"
    );
    match NonBlockingLease::obtain(&c, "bad", hour, lease_options("a", None)).await {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("{other:?}"),
    }
    match NonBlockingLease::obtain(&c, "/x", hour, lease_options("", None)).await {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("{other:?}"),
    }
    match NonBlockingLease::obtain(
        &c,
        "/x",
        Duration::from_secs(u64::MAX / 4),
        lease_options("a", None),
    )
    .await
    {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("9999"), "{m}"),
        other => panic!("{other:?}"),
    }
    let host = NonBlockingLease::obtain(&c, "/host", hour, LeaseOptions::default())
        .await
        .unwrap();
    assert_eq!(host.identifier(), zkrecipes::partition::hostname());
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_lease_gives_out_at_most_count() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let minute = Duration::from_secs(60);
    let mut got = Vec::new();
    for id in ["a", "b", "c"] {
        let l = MultiNonBlockingLease::obtain(&c, 2, "/multi", minute, lease_options(id, None))
            .await
            .unwrap();
        got.push((l.obtained(), l.index()));
    }
    assert_eq!(got, [(true, Some(0)), (true, Some(1)), (false, None)]);
    // b renews its own (index 1), a renews at 0.
    let b = MultiNonBlockingLease::obtain(&c, 2, "/multi", minute, lease_options("b", None))
        .await
        .unwrap();
    assert_eq!(b.index(), Some(1));
    assert_eq!(b.lease().unwrap().path(), "/multi/1");
    assert!(matches!(
        MultiNonBlockingLease::obtain(&c, 0, "/multi", minute, lease_options("b", None)).await,
        Err(Error::InvalidArgument(_))
    ));
    c.close().await;
    assert!(matches!(
        NonBlockingLease::obtain(&c, "/multi", minute, lease_options("b", None)).await,
        Err(Error::Closed(_))
    ));
}

/// `finish` while `start` is joining (its party node not made yet) leaves no party member
/// behind: before, the create landed after finish's delete, and every other member counted a
/// member that would never take its share, until the client's session ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_during_start_leaves_no_party_member() {
    let server = TestingServer::start();
    let proxy = zkrecipes_testing::FaultProxy::start(&server.connect_string());
    let c = connect(&proxy.connect_string()).await;
    let observer = connect(&server.connect_string()).await;
    let p = Arc::new(SetPartitioner::new(&c, "/ghost", &set(4), options("a")).unwrap());
    proxy.delay(Duration::from_millis(1000));
    let starting = {
        let p = p.clone();
        tokio::spawn(async move { p.start().await })
    };
    // The party path is made just before the member's own node is asked for.
    let deadline = Instant::now() + Duration::from_secs(30);
    while observer.exists("/ghost/party").await.unwrap().is_none() {
        assert!(Instant::now() < deadline, "the party path was never made");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    p.finish().await.unwrap();
    let started = starting.await.unwrap();
    assert!(
        matches!(started, Err(Error::Closed(_))),
        "start ends Closed: {started:?}"
    );
    proxy.restore();
    assert_eq!(
        observer.get_children("/ghost/party").await.unwrap(),
        Vec::<String>::new(),
        "a party member outlived finish"
    );
    c.close().await;
    observer.close().await;
}

/// A start whose join failed leaves no party member behind. The join's create is applied, its
/// reply is lost with the connection and the retry policy gives up: `start` fails, and the
/// node it made stayed in the party for the session's life (30 s here), counted by every
/// member (they gave it a share that nobody took). It is now deleted once the connection is
/// back; a second start then joins again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_whose_join_failed_leaves_no_party_member() {
    let server = TestingServer::start();
    let proxy = zkrecipes_testing::FaultProxy::start(&server.connect_string());
    let c = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(30))
        .retry_policy(zkrecipes::RetryPolicy::NTimes {
            n: 0,
            sleep: Duration::from_millis(100),
        })
        .connect()
        .await
        .expect("connect");
    let observer = connect(&server.connect_string()).await;
    let p = Arc::new(SetPartitioner::new(&c, "/phantom", &set(4), options("a")).unwrap());
    proxy.delay_replies(Duration::from_secs(2));
    let starting = {
        let p = p.clone();
        tokio::spawn(async move { p.start().await })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let members = match observer.get_children("/phantom/party").await {
            Ok(m) => m,
            Err(Error::NoNode(_)) => Vec::new(),
            Err(e) => panic!("{e}"),
        };
        if !members.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "the join's create never came");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    proxy.cut();
    let started = starting.await.unwrap();
    assert!(started.is_err(), "the join's reply was lost: {started:?}");
    proxy.restore();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !observer
        .get_children("/phantom/party")
        .await
        .unwrap()
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the failed start's party node stayed (the session lives on)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    p.start().await.unwrap();
    assert_eq!(
        observer.get_children("/phantom/party").await.unwrap().len(),
        1,
        "the second start joined"
    );
    p.finish().await.unwrap();
    c.close().await;
    observer.close().await;
}
