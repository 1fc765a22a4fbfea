//! Nodes and membership against a real ZooKeeper (started by the harness): the framework
//! operations they stand on (TTL nodes, persistent parents, compressed data, transactions) and
//! the recipes (PersistentNode, PersistentTtlNode, GroupMember).

use std::time::{Duration, Instant};

use zkrecipes::client::{CreateMode, CreateOptions, OpResult};
use zkrecipes::{Client, ClientBuilder, Error, ErrorKind};
use zkrecipes_testing::TestingServer;

async fn connect(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect")
}

/// Waits (bounded) until `f` returns true.
async fn eventually<F, Fut>(what: &str, timeout: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn exists(c: &Client, path: &str) -> bool {
    c.exists(path).await.unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_nodes_vanish_after_their_ttl_and_bad_ttls_are_refused() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let ttl = Duration::from_millis(400);
    let plain = CreateOptions::new(CreateMode::PersistentWithTtl).ttl(ttl);
    let made = Instant::now();
    c.create("/ttl", b"x", plain).await.unwrap();
    let seq = c
        .create(
            "/ttl-seq-",
            b"",
            CreateOptions::new(CreateMode::PersistentSequentialWithTtl).ttl(ttl),
        )
        .await
        .unwrap();
    assert!(
        seq.path.starts_with("/ttl-seq-") && seq.path.len() == "/ttl-seq-".len() + 10,
        "{}",
        seq.path
    );
    assert!(
        exists(&c, "/ttl").await,
        "a TTL node exists until its TTL passes"
    );
    eventually(
        "the TTL nodes are reaped",
        Duration::from_secs(10),
        || async { !exists(&c, "/ttl").await && !exists(&c, &seq.path).await },
    )
    .await;
    assert!(made.elapsed() >= ttl, "reaped before its TTL");

    for (options, why) in [
        (
            CreateOptions::new(CreateMode::PersistentWithTtl),
            "needs a ttl",
        ),
        (
            CreateOptions::new(CreateMode::Persistent).ttl(ttl),
            "a ttl needs mode",
        ),
        (
            CreateOptions::new(CreateMode::PersistentWithTtl).ttl(Duration::ZERO),
            "out of range",
        ),
        (
            CreateOptions::new(CreateMode::PersistentWithTtl).ttl(Duration::from_millis(1 << 40)),
            "out of range",
        ),
    ] {
        match c.create("/bad-ttl", b"", options).await {
            Err(Error::InvalidArgument(m)) => assert!(m.contains(why), "{m}"),
            other => panic!("{options:?}: {other:?}"),
        }
    }
    assert!(!exists(&c, "/bad-ttl").await);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_parents_stay_where_container_parents_are_reaped() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    c.create(
        "/pp/a/leaf",
        b"",
        CreateOptions::new(CreateMode::Persistent).persistent_parents(),
    )
    .await
    .unwrap();
    c.create(
        "/pc/a/leaf",
        b"",
        CreateOptions::new(CreateMode::Persistent).parents(),
    )
    .await
    .unwrap();
    for p in ["/pp/a/leaf", "/pc/a/leaf"] {
        c.delete(p, Default::default()).await.unwrap();
    }
    // The reaper has run once the container parent is gone; the persistent one must remain.
    eventually(
        "the container parent is reaped",
        Duration::from_secs(10),
        || async { !exists(&c, "/pc/a").await },
    )
    .await;
    assert!(exists(&c, "/pp/a").await, "a persistent parent was reaped");
    assert!(exists(&c, "/pp").await);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_data_is_curators_gzip_on_the_wire() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let plain = b"compress me, compress me, compress me, compress me".repeat(20);
    c.create(
        "/z",
        &plain,
        CreateOptions::new(CreateMode::Persistent).compressed(),
    )
    .await
    .unwrap();
    let (raw, _) = c.get_data("/z").await.unwrap();
    assert_eq!(raw[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    assert!(raw.len() < plain.len() / 4, "{} bytes stored", raw.len());
    assert_eq!(c.get_data_decompressed("/z").await.unwrap().0, plain);

    let stat = c.set_data_compressed("/z", b"", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(c.get_data("/z").await.unwrap().0.len(), 20);
    assert_eq!(c.get_data_decompressed("/z").await.unwrap().0, b"");

    c.create("/plain", b"not gzip", CreateOptions::default())
        .await
        .unwrap();
    let e = c.get_data_decompressed("/plain").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptedData, "{e}");
    assert!(e.message().contains("/plain"), "{e}");
    c.close().await;
}

/// Acceptance 7: a failing check aborts every operation; results and the failing index are
/// reported. TTL creates go in a transaction too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_aborts_the_whole_transaction() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    c.create("/t", b"v0", CreateOptions::default())
        .await
        .unwrap();
    let e = c
        .transaction()
        .create("/t/a", b"a", CreateMode::Persistent)
        .set_data("/t", b"v1", None)
        .check("/t", 7)
        .create("/t/b", b"b", CreateMode::Persistent)
        .commit()
        .await
        .unwrap_err();
    assert_eq!((e.kind(), e.failed_op()), (ErrorKind::BadVersion, Some(2)));
    assert!(!exists(&c, "/t/a").await, "an aborted create was applied");
    assert_eq!(c.get_data("/t").await.unwrap().0, b"v0");

    let results = c
        .transaction()
        .check("/t", 0)
        .create_with_ttl(
            "/t/ttl",
            b"",
            CreateMode::PersistentWithTtl,
            Duration::from_secs(60),
        )
        .set_data("/t", b"v1", Some(0))
        .commit()
        .await
        .unwrap();
    assert!(matches!(results[0], OpResult::Checked));
    assert!(matches!(&results[1], OpResult::Created { path, .. } if path == "/t/ttl"));
    assert!(matches!(&results[2], OpResult::DataSet { stat } if stat.version == 1));

    let e = c
        .transaction()
        .create("/t/c", b"", CreateMode::PersistentWithTtl)
        .commit()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    c.close().await;
}

// ---------------------------------------------------------------------------------------------
// PersistentNode, GroupMember, PersistentTtlNode

use std::sync::{Arc, Mutex};

use zkrecipes::nodes::{GroupMember, PersistentNode, PersistentNodeEventKind, PersistentTtlNode};
use zkrecipes_testing::FaultProxy;

const WAIT: Duration = Duration::from_secs(15);

/// The events a node told its listener, in order.
fn record(node: &PersistentNode) -> Arc<Mutex<Vec<PersistentNodeEventKind>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    node.add_listener(move |e| s.lock().unwrap().push(e.kind));
    seen
}

/// Acceptance 2: the node is created again after another client deletes it and after the
/// session expires on the server; close deletes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_comes_back_after_a_delete_and_after_session_expiry() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let node = PersistentNode::new(&c, "/svc/a", CreateMode::Ephemeral, b"addr", false).unwrap();
    let seen = record(&node);
    node.start().unwrap();
    assert!(node.wait_for_initial_create(Some(WAIT)).await.unwrap());
    assert_eq!(node.actual_path().as_deref(), Some("/svc/a"));
    let first = c.get_data("/svc/a").await.unwrap().1;
    assert_eq!(first.ephemeral_owner, c.session_id());

    other.delete("/svc/a", Default::default()).await.unwrap();
    eventually("re-created after a delete", WAIT, || async {
        matches!(c.exists("/svc/a").await.unwrap(), Some(s) if s.czxid != first.czxid)
    })
    .await;
    assert_eq!(c.get_data("/svc/a").await.unwrap().0, b"addr");

    let old_session = c.session_id();
    zkrecipes_testing::expire_client_session(&c).await.unwrap();
    eventually("re-created in the new session", WAIT, || async {
        match other.get_data("/svc/a").await {
            Ok((data, stat)) => {
                stat.ephemeral_owner != old_session
                    && stat.ephemeral_owner == c.session_id()
                    && data == b"addr"
            }
            Err(_) => false,
        }
    })
    .await;
    eventually("registered again", WAIT, || async { node.is_registered() }).await;
    // Listeners hear events on the dispatcher thread, after the state changed: wait for the
    // expiry's pair to arrive rather than race it (the delete's pair already ends in
    // Registered: waiting for a last Registered alone passed before the expiry's events came,
    // CI 2026-12-07).
    let unregistered_twice_then_registered = || {
        let kinds = seen.lock().unwrap();
        kinds
            .iter()
            .filter(|k| **k == PersistentNodeEventKind::Unregistered)
            .count()
            >= 2
            && kinds.last() == Some(&PersistentNodeEventKind::Registered)
    };
    eventually("the expiry's events delivered", WAIT, || async {
        unregistered_twice_then_registered()
    })
    .await;
    let kinds = seen.lock().unwrap().clone();
    let unregistered = kinds
        .iter()
        .filter(|k| **k == PersistentNodeEventKind::Unregistered)
        .count();
    assert!(unregistered >= 2, "{kinds:?}");
    assert_eq!(kinds.first(), Some(&PersistentNodeEventKind::Registered));
    assert_eq!(kinds.last(), Some(&PersistentNodeEventKind::Registered));

    node.close().await.unwrap();
    assert!(!exists(&other, "/svc/a").await, "close leaves the node");
    c.close().await;
    other.close().await;
}

/// One session expiry is one UNREGISTERED then one REGISTERED: the connection's LOST, heard
/// after the node was already made again on the new session, is not a second loss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_expiry_is_one_unregistered_and_one_registered() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let node = PersistentNode::new(&c, "/svc/x", CreateMode::Ephemeral, b"x", false).unwrap();
    let seen = record(&node);
    node.start().unwrap();
    assert!(node.wait_for_initial_create(Some(WAIT)).await.unwrap());
    let expiries = 5;
    let count = |kind| seen.lock().unwrap().iter().filter(|k| **k == kind).count();
    for i in 0..expiries {
        let old_session = c.session_id();
        zkrecipes_testing::expire_client_session(&c).await.unwrap();
        eventually("made again in the new session", WAIT, || async {
            matches!(other.exists("/svc/x").await, Ok(Some(s))
                if s.ephemeral_owner != old_session && s.ephemeral_owner == c.session_id())
        })
        .await;
        // The node is on the server before the keeper's pass that made it has ended: wait for
        // the pass's REGISTERED, or the next expiry (or the delete below) lands inside that
        // pass and is one loss with this one (one pair for both, which is true of the node).
        eventually("the expiry's REGISTERED", WAIT, || async {
            count(PersistentNodeEventKind::Registered) == i + 2
        })
        .await;
    }
    // A last delete's pair comes after every expiry's events on the dispatcher.
    let before = c.session_id();
    other.delete("/svc/x", Default::default()).await.unwrap();
    eventually("made again after the delete", WAIT, || async {
        matches!(other.exists("/svc/x").await, Ok(Some(s)) if s.ephemeral_owner == before)
    })
    .await;
    eventually("the delete's pair delivered", WAIT, || async {
        count(PersistentNodeEventKind::Unregistered) > expiries
            && seen.lock().unwrap().last() == Some(&PersistentNodeEventKind::Registered)
    })
    .await;
    let kinds = seen.lock().unwrap().clone();
    assert_eq!(
        count(PersistentNodeEventKind::Unregistered),
        expiries + 1,
        "{kinds:?}"
    );
    assert_eq!(
        count(PersistentNodeEventKind::Registered),
        expiries + 2,
        "{kinds:?}"
    );
    node.close().await.unwrap();
    c.close().await;
    other.close().await;
}

/// A node deleted while the keeper is in a pass (here one that `set_data` started, its read
/// answered before the delete and its reply held back) is made again with no watch of ours
/// seeing it go: still one UNREGISTERED and one REGISTERED, since the node kept is a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_deleted_during_a_pass_is_one_unregistered_and_one_registered() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = connect(&proxy.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let node = PersistentNode::new(&c, "/svc/pass", CreateMode::Ephemeral, b"x", false).unwrap();
    let seen = record(&node);
    node.start().unwrap();
    assert!(node.wait_for_initial_create(Some(WAIT)).await.unwrap());
    eventually("registered", WAIT, || async {
        seen.lock().unwrap().as_slice() == [PersistentNodeEventKind::Registered]
    })
    .await;
    let first = other.exists("/svc/pass").await.unwrap().unwrap().czxid;
    proxy.delay_replies(Duration::from_millis(1500));
    let reads = proxy.client_reads();
    node.set_data(b"y").unwrap();
    // The pass's read goes to the server at once (its reply is held back); delete after it.
    eventually("the pass's read sent", WAIT, || async {
        proxy.client_reads() > reads
    })
    .await;
    other.delete("/svc/pass", Default::default()).await.unwrap();
    proxy.restore();
    eventually("made again, with the new data", WAIT, || async {
        matches!(other.get_data("/svc/pass").await, Ok((d, s)) if d == b"y" && s.czxid != first)
    })
    .await;
    let kinds = || seen.lock().unwrap().clone();
    eventually("the delete's pair delivered", WAIT, || async {
        kinds().len() >= 3
    })
    .await;
    assert_eq!(
        kinds(),
        [
            PersistentNodeEventKind::Registered,
            PersistentNodeEventKind::Unregistered,
            PersistentNodeEventKind::Registered
        ]
    );
    node.close().await.unwrap();
    c.close().await;
    other.close().await;
}

/// A data change whose write goes out after the session that read the node expired is not
/// resent on the new session: by then the server had deleted our node, and another process (a
/// replacement instance with the same member id) made one at the path, at the same version 0.
/// Before, the write resent by the retry policy on the new session overwrote that process's
/// data, and the owner never put it back (its own write was not its to redo).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_read_on_an_expired_session_never_lands_on_the_next_owners_node() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = connect(&proxy.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let node = PersistentNode::new(&c, "/svc/stale", CreateMode::Ephemeral, b"p0", false).unwrap();
    let seen = record(&node);
    node.start().unwrap();
    assert!(node.wait_for_initial_create(Some(WAIT)).await.unwrap());
    let (id, password) = c.session_credentials().unwrap();
    // Requests and replies are held back a second each way: the pass's read, sent first, is
    // answered (node ours, version 0); its write is on its way when the session ends on the
    // server and another process makes the node; the write then meets a dead connection.
    proxy.delay(Duration::from_millis(1000));
    let reads = proxy.client_reads();
    node.set_data(b"p1").unwrap();
    eventually("the pass's read sent", WAIT, || async {
        proxy.client_reads() > reads
    })
    .await;
    // Then its write, once the read's answer came back (two seconds): the next request of 30
    // bytes or more (a ping, 12 bytes, may come first).
    let read_sent = proxy.client_bytes_read();
    eventually("the pass's write sent", WAIT, || async {
        proxy.client_bytes_read() >= read_sent + 30
    })
    .await;
    let servers = server.connect_string();
    tokio::task::spawn_blocking(move || {
        zkrecipes_testing::expire_session_id(&servers, id, &password)
    })
    .await
    .unwrap();
    // With parents: the container `/svc` may be reaped as soon as the expiry took its child.
    other
        .create(
            "/svc/stale",
            b"q",
            CreateOptions::new(CreateMode::Ephemeral).parents(),
        )
        .await
        .expect("the node was made again before the other process could (requests not held back long enough?)");
    proxy.restore();
    eventually("the node reports the conflict", WAIT, || async {
        seen.lock()
            .unwrap()
            .contains(&PersistentNodeEventKind::Conflict)
    })
    .await;
    let (data, stat) = other.get_data("/svc/stale").await.unwrap();
    assert_eq!(
        (data.as_slice(), stat.ephemeral_owner),
        (&b"q"[..], other.session_id()),
        "the other process's node was overwritten"
    );
    node.close().await.unwrap();
    assert_eq!(other.get_data("/svc/stale").await.unwrap().0, b"q");
    c.close().await;
    other.close().await;
}

/// Acceptance 3: data set while the connection is blackholed is written after it comes back.
/// Close while the node's create is applied on the server and its reply is still on its way:
/// close waits for the answer and deletes the node the create made (Curator deletes a node
/// whose create completes after close), for a fixed path, a sequential and an ephemeral
/// sequential one; before, close dropped the create unanswered and left its node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_during_a_create_deletes_the_node_that_create_made() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = connect(&proxy.connect_string()).await;
    let watcher = connect(&server.connect_string()).await;
    for (i, mode) in [
        CreateMode::Persistent,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
    ]
    .into_iter()
    .enumerate()
    {
        let parent = format!("/cut-create-{i}");
        watcher
            .create(&parent, b"", CreateOptions::default())
            .await
            .unwrap();
        proxy.delay_replies(Duration::from_millis(1500));
        let node = PersistentNode::new(&c, &format!("{parent}/n"), mode, b"x", false).unwrap();
        node.start().unwrap();
        eventually("the create applied on the server", WAIT, || async {
            !watcher.get_children(&parent).await.unwrap().is_empty()
        })
        .await;
        node.close().await.unwrap();
        proxy.restore();
        assert_eq!(
            watcher.get_children(&parent).await.unwrap(),
            Vec::<String>::new(),
            "{mode:?}: close left the node its create made"
        );
    }
    c.close().await;
    watcher.close().await;
}

/// A member's listeners go on hearing the group after its connection dropped and came back
/// (the membership cache resyncs): a member that joins later is news. Before, the resync's own
/// end left the view unsettled for good, and no listener heard anything again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_member_listeners_hear_joins_after_a_reconnect() {
    use std::sync::{Arc, Mutex};
    use zkrecipes::ConnectionState;
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let ca = connect(&proxy.connect_string()).await;
    let cb = connect(&server.connect_string()).await;
    let heard: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let a = GroupMember::new(&ca, "/rejoin", "a", b"a").unwrap();
    {
        let heard = heard.clone();
        a.add_listener(move |m| heard.lock().unwrap().push(m.keys().cloned().collect()));
    }
    a.start().await.unwrap();
    let hears = |want: &'static [&'static str]| {
        let heard = heard.clone();
        move || {
            let heard = heard.clone();
            async move {
                heard
                    .lock()
                    .unwrap()
                    .last()
                    .is_some_and(|m| m.iter().map(String::as_str).eq(want.iter().copied()))
            }
        }
    };
    eventually("a hears itself", WAIT, hears(&["a"])).await;
    let states: Arc<Mutex<Vec<ConnectionState>>> = Arc::default();
    {
        let states = states.clone();
        ca.add_state_listener(move |s| states.lock().unwrap().push(s));
    }
    proxy.cut();
    eventually("a's client is suspended", WAIT, || async {
        states.lock().unwrap().contains(&ConnectionState::Suspended)
    })
    .await;
    proxy.restore();
    eventually("a's client reconnects", WAIT, || async {
        states
            .lock()
            .unwrap()
            .contains(&ConnectionState::Reconnected)
    })
    .await;
    let b = GroupMember::new(&cb, "/rejoin", "b", b"b").unwrap();
    b.start().await.unwrap();
    eventually("a's listener hears b join", WAIT, hears(&["a", "b"])).await;
    b.close().await.unwrap();
    eventually("a's listener hears b leave", WAIT, hears(&["a"])).await;
    a.close().await.unwrap();
    ca.close().await;
    cb.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_data_while_disconnected_is_applied_after_reconnect() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = connect(&proxy.connect_string()).await;
    let watcher = connect(&server.connect_string()).await;
    let node = PersistentNode::new(&c, "/svc/b", CreateMode::Ephemeral, b"v1", false).unwrap();
    node.start().unwrap();
    assert!(node.wait_for_initial_create(Some(WAIT)).await.unwrap());

    // A partition: the client notices by its read timeout (SUSPENDED), not at once.
    proxy.blackhole();
    c.wait_for_state(WAIT, |s| !s.is_connected()).await.unwrap();
    node.set_data(b"v2").unwrap();
    assert_eq!(node.data(), b"v2");
    assert_eq!(watcher.get_data("/svc/b").await.unwrap().0, b"v1");
    proxy.restore();
    eventually("v2 written after the reconnect", WAIT, || async {
        watcher
            .get_data("/svc/b")
            .await
            .map(|d| d.0)
            .ok()
            .as_deref()
            == Some(&b"v2"[..])
    })
    .await;
    node.close().await.unwrap();
    c.close().await;
    watcher.close().await;
}

/// Acceptance 4: a protected ephemeral-sequential node through three reconnections and a
/// session expiry: exactly one node under the parent at every sample, always at the same
/// path (CURATOR-190: re-creates never pile up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_sequential_node_stays_one_node_through_reconnections() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = connect(&proxy.connect_string()).await;
    let watcher = connect(&server.connect_string()).await;
    let node =
        PersistentNode::new(&c, "/reg/m-", CreateMode::EphemeralSequential, b"x", true).unwrap();
    node.start().unwrap();
    assert!(node.wait_for_initial_create(Some(WAIT)).await.unwrap());
    let actual = node.actual_path().unwrap();
    assert!(
        actual.starts_with("/reg/_c_") && actual.contains("-m-"),
        "{actual}"
    );

    let samples = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (samples, stop, watcher) = (samples.clone(), stop.clone(), watcher.clone());
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let n = watcher.get_children("/reg").await.unwrap().len();
                samples.lock().unwrap().push(n);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    for round in 0..3 {
        // Each round is sampled before, during and after its cut (a busy machine runs a
        // round faster than the sampler's pace: CI saw 2 samples in all).
        let before = samples.lock().unwrap().len();
        eventually("samples before the cut", WAIT, || async {
            samples.lock().unwrap().len() >= before + 2
        })
        .await;
        proxy.cut();
        c.wait_for_state(WAIT, |s| !s.is_connected()).await.unwrap();
        proxy.restore();
        c.wait_for_state(WAIT, |s| s.is_connected()).await.unwrap();
        eventually("registered after the reconnect", WAIT, || async {
            node.is_registered()
        })
        .await;
        assert_eq!(node.actual_path().unwrap(), actual, "round {round}");
        let after = samples.lock().unwrap().len();
        eventually("samples after the reconnect", WAIT, || async {
            samples.lock().unwrap().len() >= after + 2
        })
        .await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    sampler.await.unwrap();
    let samples = samples.lock().unwrap().clone();
    assert!(samples.len() > 10, "{} samples", samples.len());
    assert!(
        samples.iter().all(|n| *n == 1),
        "node counts seen: {samples:?}"
    );
    assert_eq!(
        watcher.get_children("/reg").await.unwrap(),
        vec![zkrecipes::path::node_name(&actual).to_string()]
    );

    // After a session expiry: created again at the same path, still one node.
    zkrecipes_testing::expire_client_session(&c).await.unwrap();
    eventually("re-created at the same path", WAIT, || async {
        matches!(watcher.exists(&actual).await.unwrap(), Some(s) if s.ephemeral_owner == c.session_id())
    })
    .await;
    assert_eq!(watcher.get_children("/reg").await.unwrap().len(), 1);
    node.close().await.unwrap();
    assert!(zkrecipes_testing::children_left(&watcher, "/reg")
        .await
        .is_empty());
    c.close().await;
    watcher.close().await;
}

/// Acceptance 5: the same member id from two live sessions: the second gets Conflict, the
/// first member's node is untouched, also after the second closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_member_id_from_two_sessions_is_a_conflict_and_the_first_is_untouched() {
    let server = TestingServer::start();
    let c1 = connect(&server.connect_string()).await;
    let c2 = connect(&server.connect_string()).await;
    let first = GroupMember::new(&c1, "/group", "m1", b"one").unwrap();
    first.start().await.unwrap();
    let (data, stat) = c1.get_data("/group/m1").await.unwrap();
    assert_eq!(
        (data.as_slice(), stat.ephemeral_owner),
        (&b"one"[..], c1.session_id())
    );

    let second = GroupMember::new(&c2, "/group", "m1", b"two").unwrap();
    let e = second.start().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(e.message().contains("/group/m1"), "{e}");
    // The refused member shows the payload of the node that holds its id, as others see it.
    eventually(
        "the refused member reads the first one's payload",
        WAIT,
        || async { second.current_members().get("m1").map(Vec::as_slice) == Some(&b"one"[..]) },
    )
    .await;
    let e = second
        .node()
        .wait_for_initial_create(Some(WAIT))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    second.close().await.unwrap();
    let (data2, stat2) = c1.get_data("/group/m1").await.unwrap();
    assert_eq!(
        (data2, stat2),
        (data, stat),
        "the first member's node was touched"
    );

    // A plain PersistentNode: an ephemeral where a persistent node sits is a conflict too.
    c2.create("/fixed", b"keep", CreateOptions::default())
        .await
        .unwrap();
    let n = PersistentNode::new(&c1, "/fixed", CreateMode::Ephemeral, b"mine", false).unwrap();
    n.start().unwrap();
    let e = n.wait_for_initial_create(Some(WAIT)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    n.close().await.unwrap();
    assert_eq!(c2.get_data("/fixed").await.unwrap().0, b"keep");
    first.close().await.unwrap();
    c1.close().await;
    c2.close().await;
}

/// Members see each other's payloads and changes, and a member leaving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_see_each_other_join_change_and_leave() {
    let server = TestingServer::start();
    let c1 = connect(&server.connect_string()).await;
    let c2 = connect(&server.connect_string()).await;
    let a = GroupMember::new(&c1, "/g2", "a", b"pa").unwrap();
    let changes = Arc::new(Mutex::new(Vec::new()));
    let ch = changes.clone();
    a.add_listener(move |m| ch.lock().unwrap().push(m.clone()));
    a.start().await.unwrap();
    let b = GroupMember::new(&c2, "/g2", "b", b"pb").unwrap();
    b.start().await.unwrap();
    let want = |pairs: &[(&str, &[u8])]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let both = want(&[("a", b"pa"), ("b", b"pb")]);
    eventually("a sees b", WAIT, || async { a.current_members() == both }).await;
    eventually("b sees a", WAIT, || async { b.current_members() == both }).await;

    b.set_this_data(b"pb2").unwrap();
    let changed = want(&[("a", b"pa"), ("b", b"pb2")]);
    eventually("a sees b's new payload", WAIT, || async {
        a.current_members() == changed
    })
    .await;
    b.close().await.unwrap();
    eventually("a sees b leave", WAIT, || async {
        a.current_members() == want(&[("a", b"pa")])
    })
    .await;
    eventually("the listener heard it all", WAIT, || async {
        let seen = changes.lock().unwrap().clone();
        seen.contains(&changed) && seen.last() == Some(&want(&[("a", b"pa")]))
    })
    .await;
    a.close().await.unwrap();
    assert!(zkrecipes_testing::children_left(&c1, "/g2")
        .await
        .is_empty());
    c1.close().await;
    c2.close().await;
}

/// Acceptance 6 (in process): a PersistentTtlNode stays while it is kept, through several
/// TTLs, and is gone within TTL + margin once its owner stops touching it. (The kill -9 of an
/// owner process is in the fault suite.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_node_stays_while_kept_and_goes_within_its_ttl_after() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let watcher = connect(&server.connect_string()).await;
    let ttl = Duration::from_millis(800);
    let node = PersistentTtlNode::new(&c, "/ttlreg/svc", ttl, b"here").unwrap();
    node.start().unwrap();
    assert!(node.wait_for_initial_create(Some(WAIT)).await.unwrap());
    eventually("the touch child exists", WAIT, || async {
        exists(&watcher, "/ttlreg/svc/touch").await
    })
    .await;
    let kept = Instant::now();
    while kept.elapsed() < ttl * 4 {
        assert!(exists(&watcher, "/ttlreg/svc").await, "gone while kept");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(watcher.get_data("/ttlreg/svc").await.unwrap().0, b"here");
    node.close().await.unwrap();
    // Close does not delete it (Curator's behaviour); the TTL does.
    let stopped = Instant::now();
    assert!(exists(&watcher, "/ttlreg/svc").await);
    eventually(
        "gone within TTL + margin",
        ttl + Duration::from_secs(3),
        || async { !exists(&watcher, "/ttlreg/svc").await },
    )
    .await;
    eprintln!(
        "TTL node gone {:?} after its owner stopped (ttl {ttl:?})",
        stopped.elapsed()
    );
    c.close().await;
    watcher.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_refused_before_anything_is_sent() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let invalid = |r: zkrecipes::Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
    let before = c.request_counts();
    assert!(invalid(
        PersistentNode::new(&c, "/", CreateMode::Ephemeral, b"", false).map(|_| ())
    ));
    assert!(invalid(
        PersistentNode::new(&c, "no-slash", CreateMode::Ephemeral, b"", false).map(|_| ())
    ));
    assert!(invalid(
        PersistentNode::new(&c, "/t", CreateMode::PersistentWithTtl, b"", false).map(|_| ())
    ));
    assert!(invalid(GroupMember::new(&c, "/g", "", b"").map(|_| ())));
    assert!(invalid(GroupMember::new(&c, "/g", "a/b", b"").map(|_| ())));
    assert!(invalid(GroupMember::new(&c, "/g", "..", b"").map(|_| ())));
    assert!(invalid(
        PersistentTtlNode::new(&c, "/t", Duration::ZERO, b"").map(|_| ())
    ));
    let node = PersistentNode::new(&c, "/n", CreateMode::Ephemeral, b"", false).unwrap();
    assert!(invalid(
        node.wait_for_initial_create(Some(WAIT)).await.map(|_| ())
    ));
    assert!(invalid(node.set_data(&vec![0; 2 << 20])));
    assert_eq!(
        c.request_counts(),
        before,
        "a request was sent before start"
    );
    node.start().unwrap();
    assert!(invalid(node.start()));
    node.close().await.unwrap();
    assert!(matches!(node.set_data(b"x"), Err(Error::Closed(_))));
    assert!(matches!(
        node.wait_for_initial_create(None).await,
        Err(Error::Closed(_))
    ));
    c.close().await;
    assert!(matches!(
        PersistentNode::new(&c, "/n", CreateMode::Ephemeral, b"", false),
        Err(Error::Closed(_))
    ));
}

/// A persistent node adopts an existing persistent node (Curator's behaviour: our data on
/// it), is re-created after a delete, and on close is deleted only while it is still the node
/// we made or adopted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_mode_node_adopts_and_deletes_only_its_own_node() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    other
        .create("/cfg", b"theirs", CreateOptions::default())
        .await
        .unwrap();
    let node = PersistentNode::new(&c, "/cfg", CreateMode::Persistent, b"ours", false).unwrap();
    node.start().unwrap();
    assert!(node.wait_for_initial_create(Some(WAIT)).await.unwrap());
    eventually("our data on the adopted node", WAIT, || async {
        other.get_data("/cfg").await.unwrap().0 == b"ours"
    })
    .await;
    let first = c.exists("/cfg").await.unwrap().unwrap();
    other.delete("/cfg", Default::default()).await.unwrap();
    eventually("re-created after a delete", WAIT, || async {
        matches!(other.exists("/cfg").await.unwrap(), Some(s) if s.czxid != first.czxid)
    })
    .await;
    node.close().await.unwrap();
    assert!(!exists(&other, "/cfg").await, "close left our own node");

    // A node we never made nor adopted is never deleted: closing an unstarted node leaves it.
    other
        .create("/cfg", b"theirs", CreateOptions::default())
        .await
        .unwrap();
    let idle = PersistentNode::new(&c, "/cfg", CreateMode::Persistent, b"x", false).unwrap();
    idle.close().await.unwrap();
    assert_eq!(other.get_data("/cfg").await.unwrap().0, b"theirs");
    c.close().await;
    other.close().await;
}

/// A member whose session expires registers again and sees the group again (the cache
/// resyncs on the new session); the other member sees it come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn membership_is_whole_again_after_a_members_session_expires() {
    let server = TestingServer::start();
    let c1 = connect(&server.connect_string()).await;
    let c2 = connect(&server.connect_string()).await;
    let a = GroupMember::new(&c1, "/g3", "a", b"pa").unwrap();
    let b = GroupMember::new(&c2, "/g3", "b", b"pb").unwrap();
    a.start().await.unwrap();
    b.start().await.unwrap();
    let both: std::collections::BTreeMap<String, Vec<u8>> = [
        ("a".to_string(), b"pa".to_vec()),
        ("b".to_string(), b"pb".to_vec()),
    ]
    .into();
    eventually("both see both", WAIT, || async {
        a.current_members() == both && b.current_members() == both
    })
    .await;
    let old = c1.session_id();
    zkrecipes_testing::expire_client_session(&c1).await.unwrap();
    // While a's session was gone, b changed its payload: a must see it after the resync.
    b.set_this_data(b"pb2").unwrap();
    let after: std::collections::BTreeMap<String, Vec<u8>> = [
        ("a".to_string(), b"pa".to_vec()),
        ("b".to_string(), b"pb2".to_vec()),
    ]
    .into();
    eventually("a back in a new session, both see both", WAIT, || async {
        c1.session_id() != old && a.current_members() == after && b.current_members() == after
    })
    .await;
    a.close().await.unwrap();
    b.close().await.unwrap();
    c1.close().await;
    c2.close().await;
}
