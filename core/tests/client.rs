//! The client framework against a real ZooKeeper (started by the harness).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zkrecipes::client::{ConnectionState, CreateMode, CreateOptions, DeleteOptions, NodeEventKind};
use zkrecipes::{Client, ClientBuilder, Error, RetryPolicy};
use zkrecipes_testing::{FaultProxy, TestingCluster, TestingServer, OUTLIVES_A_RESTART};

async fn connect(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect")
}

/// A client whose session outlives a server restart however slow the machine makes it.
async fn connect_through_restarts(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(OUTLIVES_A_RESTART)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_round_trip() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let created = c
        .create("/rt", b"one", CreateOptions::new(CreateMode::Persistent))
        .await
        .unwrap();
    assert_eq!(created.path, "/rt");
    let (data, stat) = c.get_data("/rt").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"one"[..], 0));
    let stat = c.set_data("/rt", b"two", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    assert!(
        matches!(c.set_data("/rt", b"x", Some(0)).await, Err(Error::BadVersion(m)) if m.contains("/rt"))
    );
    let seq = c
        .create(
            "/rt/s-",
            b"",
            CreateOptions::new(CreateMode::EphemeralSequential),
        )
        .await
        .unwrap();
    assert_eq!(seq.path, "/rt/s-0000000000");
    assert_eq!(seq.stat.ephemeral_owner, c.session_id());
    assert_eq!(
        c.get_children("/rt").await.unwrap(),
        vec!["s-0000000000".to_string()]
    );
    assert!(matches!(
        c.create("/rt", b"", CreateOptions::default()).await,
        Err(Error::NodeExists(_))
    ));
    assert!(matches!(
        c.delete("/rt", DeleteOptions::default()).await,
        Err(Error::NotEmpty(_))
    ));
    c.delete(
        "/rt",
        DeleteOptions {
            recursive: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(c.exists("/rt").await.unwrap(), None);
    assert!(matches!(c.get_data("/rt").await, Err(Error::NoNode(m)) if m.contains("/rt")));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_are_created_as_containers() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let owner = connect(&server.connect_string()).await;
    owner
        .create(
            "/p1/p2/leaf",
            b"x",
            CreateOptions::new(CreateMode::Ephemeral).parents(),
        )
        .await
        .unwrap();
    assert!(c.exists("/p1/p2").await.unwrap().is_some());
    // Without `parents()` a missing parent is an error, not a silent create.
    assert!(matches!(
        c.create("/q1/leaf", b"", CreateOptions::default()).await,
        Err(Error::NoNode(_))
    ));
    // ZooKeeper hides the container flag from Stat; what shows it is the server reaping the
    // parents once they are empty (the harness runs the reaper every 250 ms).
    owner.close().await;
    eventually(
        "empty container parents are reaped",
        Duration::from_secs(15),
        || async { c.exists("/p1").await.unwrap().is_none() },
    )
    .await;
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_fire_and_namespace_is_applied() {
    let server = TestingServer::start();
    let plain = connect(&server.connect_string()).await;
    let ns = ClientBuilder::new(server.connect_string())
        .namespace("app")
        .connect()
        .await
        .unwrap();
    assert_eq!(ns.namespace(), "/app");
    ns.create("/w", b"1", CreateOptions::default().parents())
        .await
        .unwrap();
    assert_eq!(plain.get_data("/app/w").await.unwrap().0, b"1");
    let (_, _, watch) = ns.get_data_watch("/w").await.unwrap();
    plain.set_data("/app/w", b"2", None).await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), watch.changed())
        .await
        .unwrap();
    assert_eq!(event.kind, NodeEventKind::DataChanged);
    assert_eq!(event.path, "/w");
    let (stat, watch) = ns.exists_watch("/w2").await.unwrap();
    assert!(stat.is_none());
    plain
        .create("/app/w2", b"", CreateOptions::default())
        .await
        .unwrap();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), watch.changed())
            .await
            .unwrap()
            .kind,
        NodeEventKind::Created
    );
    ns.close().await;
    plain.close().await;
}

/// A protected create under `parent` (made here) whose reply the proxy drops after the server
/// applied it (checked by `observer`, a direct client).
struct LostReply {
    _server: TestingServer,
    proxy: FaultProxy,
    client: Client,
    observer: Client,
    create: tokio::task::JoinHandle<zkrecipes::Result<zkrecipes::client::Created>>,
}

async fn protected_create_with_lost_reply(parent: &str) -> LostReply {
    lost_reply_of(parent, CreateMode::EphemeralSequential).await
}

async fn lost_reply_of(parent: &str, mode: CreateMode) -> LostReply {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(Duration::from_secs(10))
        .retry_policy(RetryPolicy::NTimes {
            n: 5,
            sleep: Duration::from_millis(100),
        })
        .connect()
        .await
        .unwrap();
    let observer = connect(&server.connect_string()).await;
    observer
        .create(parent, b"", CreateOptions::default())
        .await
        .unwrap();
    proxy.drop_replies();
    let create = {
        let (c, path) = (client.clone(), format!("{parent}/lock-"));
        tokio::spawn(async move {
            c.create(&path, b"id", CreateOptions::new(mode).protected())
                .await
        })
    };
    eventually(
        "the create reached the server",
        Duration::from_secs(10),
        || async { observer.get_children(parent).await.unwrap().len() == 1 },
    )
    .await;
    LostReply {
        _server: server,
        proxy,
        client,
        observer,
        create,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_protected_create_leaves_no_node() {
    // The caller stops waiting (drops the future) after the server applied the create: nobody
    // will ever use that node, so the client must find and delete it.
    let t = protected_create_with_lost_reply("/dropped").await;
    t.create.abort();
    assert!(t.create.await.unwrap_err().is_cancelled());
    t.proxy.cut();
    t.proxy.restore();
    eventually(
        "the abandoned protected node is deleted",
        Duration::from_secs(30),
        || async {
            zkrecipes_testing::children_left(&t.observer, "/dropped")
                .await
                .is_empty()
        },
    )
    .await;
    assert!(
        t.client.state().is_connected(),
        "the session survived: {:?}",
        t.client.state()
    );
    t.client.close().await;
    t.observer.close().await;
}

/// The cleanup of an abandoned persistent protected create that cannot delete its node (here:
/// someone made a child under it) gives up with a WARN naming the node, its mode and what stays,
/// instead of silently (a persistent leftover outlives the session).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_protected_node_that_cannot_be_deleted_is_reported_at_warn() {
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    let w = warnings.clone();
    zkrecipes::log::set_logger(Some(zkrecipes::log::Level::Warn), move |r| {
        if r.message.contains("abandoned create") {
            w.lock().unwrap().push(r.message.clone());
        }
    })
    .unwrap();
    let t = lost_reply_of("/left", CreateMode::Persistent).await;
    t.create.abort();
    assert!(t.create.await.unwrap_err().is_cancelled());
    let ours = t.observer.get_children("/left").await.unwrap().remove(0);
    let prefix = ours.split_once('-').map(|(p, _)| p.to_string()).unwrap();
    // A child makes the abandoned node undeletable.
    t.observer
        .create(
            &format!("/left/{ours}/child"),
            b"",
            CreateOptions::default(),
        )
        .await
        .unwrap();
    t.proxy.cut();
    t.proxy.restore();
    eventually(
        "the cleanup gives up with a WARN",
        Duration::from_secs(60),
        || async { !warnings.lock().unwrap().is_empty() },
    )
    .await;
    let warning = warnings.lock().unwrap()[0].clone();
    assert!(
        warning.contains("gave up")
            && warning.contains(&format!("/left/{prefix}"))
            && warning.contains("PERSISTENT")
            && warning.contains("stays until someone deletes it")
            && warning.contains("NotEmpty"),
        "{warning}"
    );
    assert_eq!(t.observer.get_children("/left").await.unwrap(), [ours]);
    t.client.close().await;
    t.observer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_create_finds_its_node_after_a_lost_reply() {
    // The client sees a connection loss and must find its node by the `_c_<uuid>-` prefix,
    // not create another.
    let t = protected_create_with_lost_reply("/prot").await;
    let (c, observer) = (&t.client, &t.observer);
    // Then the connection dies, as it would after a lost reply; the client reconnects.
    t.proxy.cut();
    t.proxy.restore();
    let created = tokio::time::timeout(Duration::from_secs(30), t.create)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let children = observer.get_children("/prot").await.unwrap();
    assert_eq!(
        children.len(),
        1,
        "one attempt made two nodes: {children:?}"
    );
    assert!(
        created.path.starts_with("/prot/_c_") && created.path.contains("-lock-"),
        "{}",
        created.path
    );
    assert_eq!(format!("/prot/{}", children[0]), created.path);
    assert_eq!(created.stat.ephemeral_owner, c.session_id());
    c.close().await;
    observer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guaranteed_delete_completes_after_the_server_comes_back() {
    let server = TestingServer::start();
    let c = ClientBuilder::new(server.connect_string())
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_millis(500))
        .retry_policy(RetryPolicy::OneTime {
            sleep: Duration::from_millis(10),
        })
        .connect()
        .await
        .unwrap();
    c.create("/gd", b"", CreateOptions::default())
        .await
        .unwrap();
    server.stop();
    c.wait_for_state(Duration::from_secs(10), |s| s == ConnectionState::Suspended)
        .await
        .unwrap();
    let r = c
        .delete(
            "/gd",
            DeleteOptions {
                guaranteed: true,
                ..Default::default()
            },
        )
        .await;
    assert!(matches!(r, Err(Error::ConnectionLoss(_))), "{r:?}");
    assert_eq!(c.pending_guaranteed_deletes(), 1);
    server.start();
    let checker = connect(&server.connect_string()).await;
    eventually(
        "the guaranteed delete finished",
        Duration::from_secs(20),
        || async {
            c.pending_guaranteed_deletes() == 0 && checker.exists("/gd").await.unwrap().is_none()
        },
    )
    .await;
    c.close().await;
    checker.close().await;
}

/// A guaranteed delete whose caller stops waiting (a `timeout()` around it, here while the
/// connection is down) goes on: the node is gone once the connection is back, as Curator's
/// goes on through an interrupt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guaranteed_delete_dropped_while_disconnected_still_deletes() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    let checker = connect(&server.connect_string()).await;
    c.create("/gd-dropped", b"", CreateOptions::default())
        .await
        .unwrap();
    proxy.cut();
    c.wait_for_state(Duration::from_secs(10), |s| s == ConnectionState::Suspended)
        .await
        .unwrap();
    let guaranteed = DeleteOptions {
        guaranteed: true,
        ..Default::default()
    };
    let waited = tokio::time::timeout(
        Duration::from_millis(300),
        c.delete("/gd-dropped", guaranteed),
    )
    .await;
    assert!(
        waited.is_err(),
        "the delete answered while disconnected: {waited:?}"
    );
    proxy.restore();
    eventually(
        "the dropped guaranteed delete finished",
        Duration::from_secs(20),
        || async { checker.exists("/gd-dropped").await.unwrap().is_none() },
    )
    .await;
    c.close().await;
    checker.close().await;
}

/// A guaranteed delete asked for while the session is expiring waits for the connection and
/// is done by the next session (a persistent node does not depend on the session that asked
/// for its delete); nothing is left pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guaranteed_delete_across_a_session_expiry_is_done_by_the_next_session() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap();
    c.create("/gd-expired", b"", CreateOptions::default())
        .await
        .unwrap();
    let (id, password) = c.session_credentials().expect("a session");
    proxy.cut();
    c.wait_for_state(Duration::from_secs(10), |s| s == ConnectionState::Suspended)
        .await
        .unwrap();
    zkrecipes_testing::expire_session_id(&server.connect_string(), id, &password);
    let delete = c.delete(
        "/gd-expired",
        DeleteOptions {
            guaranteed: true,
            ..Default::default()
        },
    );
    let mut delete = std::pin::pin!(delete);
    // Waiting for the connection...
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(std::future::Future::poll(delete.as_mut(), &mut cx).is_pending());
    proxy.restore();
    // ...which comes back with a new session, which deletes the node.
    let r = tokio::time::timeout(Duration::from_secs(30), delete)
        .await
        .expect("the delete ends once the connection is back");
    assert!(r.is_ok(), "{r:?}");
    assert_ne!(
        c.session_credentials().map(|(id, _)| id),
        Some(id),
        "a new session"
    );
    let checker = connect(&server.connect_string()).await;
    eventually(
        "the next session deleted the node",
        Duration::from_secs(20),
        || async {
            c.pending_guaranteed_deletes() == 0
                && checker.exists("/gd-expired").await.unwrap().is_none()
        },
    )
    .await;
    c.close().await;
    checker.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn states_go_suspended_reconnected_then_lost_and_a_new_session() {
    let server = TestingServer::start();
    let c = connect_through_restarts(&server.connect_string()).await;
    assert_eq!(c.state(), ConnectionState::Connected);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    c.add_state_listener(move |s| seen2.lock().unwrap().push(s));
    let mut stream = c.state_stream();
    let first_session = c.session_id();

    server.stop();
    assert_eq!(next(&mut stream).await, ConnectionState::Suspended);
    server.start();
    assert_eq!(next(&mut stream).await, ConnectionState::Reconnected);
    assert_eq!(
        c.session_id(),
        first_session,
        "reconnected within the session"
    );

    zkrecipes_testing::expire_client_session(&c).await.unwrap();
    // Joining the session from elsewhere may first move it (SUSPENDED, RECONNECTED); then it
    // expires: LOST, and a new session (RECONNECTED).
    let mut after = Vec::new();
    while !after.ends_with(&[ConnectionState::Lost, ConnectionState::Reconnected]) {
        after.push(next(&mut stream).await);
    }
    assert_ne!(c.session_id(), first_session, "a new session after LOST");
    c.create("/after-lost", b"", CreateOptions::default())
        .await
        .unwrap();

    let expected_prefix = [ConnectionState::Suspended, ConnectionState::Reconnected];
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = seen.lock().unwrap().clone();
        if got.last() == Some(&ConnectionState::Reconnected) && got.len() >= 4 {
            assert_eq!(&got[..2], &expected_prefix, "listener order: {got:?}");
            assert!(got.contains(&ConnectionState::Lost), "{got:?}");
            break;
        }
        assert!(Instant::now() < deadline, "listener saw {got:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    c.close().await;
}

async fn next(stream: &mut zkrecipes::client::StateStream) -> ConnectionState {
    tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("state change")
        .expect("open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspended_for_a_whole_session_timeout_is_lost() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    let first = c.session_id();
    let mut stream = c.state_stream();
    proxy.blackhole();
    assert_eq!(next(&mut stream).await, ConnectionState::Suspended);
    let suspended_at = Instant::now();
    assert_eq!(next(&mut stream).await, ConnectionState::Lost);
    assert!(
        suspended_at.elapsed() >= Duration::from_millis(1500),
        "LOST came too early"
    );
    proxy.restore();
    assert_eq!(next(&mut stream).await, ConnectionState::Reconnected);
    assert_ne!(c.session_id(), first);
    c.close().await;
}

/// Found by CI (two restart tests lost their sessions on a slow machine): the wire client's
/// pause between rounds of connection attempts doubled without bound (0.1, 0.2, 0.4 … 6.4 s),
/// so after a 7 s outage it tried again only about 12.7 s after the connection went, and a
/// 10 s session the server still held was LOST. The pause now stops doubling at 1 s, as the
/// Java client's (`hostProvider.next(1000)`): the client is back within about a second of the
/// server, in the same session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_outage_is_followed_by_a_reconnection_within_about_a_second() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap();
    let first = c.session_id();
    let mut stream = c.state_stream();
    proxy.cut();
    assert_eq!(next(&mut stream).await, ConnectionState::Suspended);
    // The outage itself (a fixed 7 s is the scenario, not a wait for something): every
    // attempt meanwhile is accepted and closed by the proxy.
    tokio::time::sleep(Duration::from_secs(7)).await;
    proxy.restore();
    let restored = Instant::now();
    assert_eq!(next(&mut stream).await, ConnectionState::Reconnected);
    let took = restored.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "reconnected {took:?} after the server came back (the pause between attempts is at \
         most 1 s and a little jitter)"
    );
    assert_eq!(c.session_id(), first, "the same session");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_the_session_at_once() {
    let server = TestingServer::start();
    let a = ClientBuilder::new(server.connect_string())
        .session_timeout(Duration::from_secs(60))
        .connect()
        .await
        .unwrap();
    let b = connect(&server.connect_string()).await;
    a.create("/eph", b"", CreateOptions::new(CreateMode::Ephemeral))
        .await
        .unwrap();
    a.close().await;
    // With a 60 s session timeout, only a real CloseSession explains the node being gone now.
    assert_eq!(b.exists("/eph").await.unwrap(), None);
    assert!(matches!(a.get_data("/eph").await, Err(Error::Closed(_))));
    assert!(matches!(
        a.create("/x", b"", CreateOptions::default()).await,
        Err(Error::Closed(_))
    ));
    a.close().await; // twice is fine
    b.close().await;
}

/// Connects to `connect` with a short connection timeout and a long (default) session timeout:
/// the error, and how long it took.
async fn failed_connect(connect: &str) -> (Error, Duration) {
    let start = Instant::now();
    let r = ClientBuilder::new(connect)
        .connection_timeout(Duration::from_millis(800))
        .connect()
        .await;
    (r.expect_err("must not connect"), start.elapsed())
}

/// A connect failure keeps its kind (Timeout) but says why, per host: refused, silent, not
/// ZooKeeper, DNS. A server that accepts and then stays silent is left after the connection
/// timeout, not after a share of the (60 s) session timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_failures_say_why_within_the_connection_timeout() {
    // Refused: a port nothing listens on (bound then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (e, took) = failed_connect(&format!("127.0.0.1:{port}")).await;
    assert!(
        matches!(&e, Error::Timeout(m) if m.contains("connection refused")),
        "{e}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");

    // Silent: accepts, never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let (e, took) = failed_connect(&silent_addr.to_string()).await;
    assert!(
        matches!(&e, Error::Timeout(m) if m.contains("did not answer a ZooKeeper handshake")),
        "{e}"
    );
    assert!(
        took < Duration::from_secs(5),
        "a silent server held us {took:?}"
    );

    // Not ZooKeeper: answers like an HTTP server.
    let http = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let http_addr = http.local_addr().unwrap();
    let answering = std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in http.incoming().take(8) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 64];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let (e, _) = failed_connect(&http_addr.to_string()).await;
    assert!(
        matches!(&e, Error::Timeout(m) if m.contains("not like a ZooKeeper server")),
        "{e}"
    );
    drop(answering);

    // DNS: a name that cannot resolve (.invalid is reserved, RFC 2606).
    let (e, _) = failed_connect("no-such-host.invalid:2181").await;
    assert!(matches!(&e, Error::Timeout(m) if m.contains("DNS")), "{e}");
    drop(silent);
}

/// The diagnosis of a failed connect probes every host at once: an ensemble of silent
/// servers costs one probe's time (about 4 s), not one per host (12 s for three).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_connect_probes_its_hosts_at_once() {
    let silent: Vec<_> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let hosts: Vec<String> = silent
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    let (e, took) = failed_connect(&hosts.join(",")).await;
    for host in &hosts {
        assert!(
            matches!(&e, Error::Timeout(m) if m.contains(&format!("{host}: {host} accepted the connection but did not answer"))),
            "{host} is diagnosed: {e}"
        );
    }
    assert!(
        took < Duration::from_secs(8),
        "three silent hosts held the connect {took:?}"
    );
    drop(silent);
}

/// The connection timeout bounds a connect, not the session timeout: a server that answers
/// only after more than one session timeout (a busy machine, a TLS server warming up) is still
/// connected to within the connection timeout. The wire client alone gives up on a new session
/// after the session timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_waits_out_its_connection_timeout_not_its_session_timeout() {
    let server = TestingServer::start();
    let session_timeout = Duration::from_secs(2);
    server.pause();
    let start = Instant::now();
    // Resumed once the connect has tried for twice the session timeout.
    let resumer = {
        let until = start + 2 * session_timeout;
        std::thread::spawn(move || {
            while Instant::now() < until {
                std::thread::sleep(until.saturating_duration_since(Instant::now()));
            }
        })
    };
    let connecting = tokio::spawn(
        ClientBuilder::new(server.connect_string())
            .session_timeout(session_timeout)
            .connection_timeout(Duration::from_secs(60))
            .connect(),
    );
    tokio::task::spawn_blocking(move || resumer.join())
        .await
        .unwrap()
        .unwrap();
    server.resume();
    let client = connecting
        .await
        .unwrap()
        .expect("connected within the connection timeout, after the session timeout");
    assert!(
        start.elapsed() > 2 * session_timeout,
        "the server was paused for {:?}",
        2 * session_timeout
    );
    client.close().await;
}

/// A chroot that does not exist fails the connect with NoNode naming it (ZooKeeper would open
/// the session and fail every operation instead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_chroot_is_refused_at_connect_naming_it() {
    let server = TestingServer::start();
    let r = ClientBuilder::new(format!("{}/no/such/root", server.connect_string()))
        .connect()
        .await;
    assert!(
        matches!(&r, Err(Error::NoNode(m)) if m.contains("/no/such/root")),
        "{r:?}"
    );
    let plain = connect(&server.connect_string()).await;
    plain
        .create("/root", b"", CreateOptions::new(CreateMode::Persistent))
        .await
        .unwrap();
    let chrooted = ClientBuilder::new(format!("{}/root", server.connect_string()))
        .namespace("app")
        .connect()
        .await
        .expect("an existing chroot (the namespace is made on demand)");
    chrooted
        .create("/x", b"1", CreateOptions::default().parents())
        .await
        .unwrap();
    assert_eq!(plain.get_data("/root/app/x").await.unwrap().0, b"1");
    chrooted.close().await;
    plain.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_are_invalid_argument_with_a_reason() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let big = vec![0u8; 1024 * 1024 + 1];
    let checks: Vec<(&str, zkrecipes::Result<()>)> = vec![
        ("empty path", c.get_data("").await.map(drop)),
        ("relative path", c.get_data("a/b").await.map(drop)),
        ("trailing slash", c.exists("/a/").await.map(drop)),
        ("empty segment", c.get_children("/a//b").await.map(drop)),
        (
            "dot segment",
            c.create("/a/./b", b"", CreateOptions::default())
                .await
                .map(drop),
        ),
        (
            "dot-dot segment",
            c.delete("/a/..", DeleteOptions::default()).await,
        ),
        ("NUL", c.set_data("/a\0", b"", None).await.map(drop)),
        ("control char", c.get_data("/a\u{1b}").await.map(drop)),
        ("private use", c.get_data("/a\u{e123}").await.map(drop)),
        ("astral", c.get_data("/\u{1F512}").await.map(drop)),
        (
            "too long",
            c.get_data(&format!("/{}", "p".repeat(5000)))
                .await
                .map(drop),
        ),
        (
            "create root",
            c.create("/", b"", CreateOptions::default()).await.map(drop),
        ),
        ("delete root", c.delete("/", DeleteOptions::default()).await),
        (
            "data over 1 MB",
            c.create("/big", &big, CreateOptions::default())
                .await
                .map(drop),
        ),
        (
            "set data over 1 MB",
            c.set_data("/big", &big, None).await.map(drop),
        ),
        (
            "negative version",
            c.set_data("/v", b"", Some(-5)).await.map(drop),
        ),
    ];
    let builders: Vec<(&str, ClientBuilder)> = vec![
        ("empty connect string", ClientBuilder::new("")),
        ("port zero", ClientBuilder::new("127.0.0.1:0")),
        ("port too big", ClientBuilder::new("127.0.0.1:70000")),
        ("port not a number", ClientBuilder::new("127.0.0.1:abc")),
        ("empty host", ClientBuilder::new("127.0.0.1:2181,,h:1")),
        ("bad chroot", ClientBuilder::new("127.0.0.1:2181/a//b")),
        (
            "zero session timeout",
            ClientBuilder::new(server.connect_string()).session_timeout(Duration::ZERO),
        ),
        (
            "zero connection timeout",
            ClientBuilder::new(server.connect_string()).connection_timeout(Duration::ZERO),
        ),
        (
            "bad namespace",
            ClientBuilder::new(server.connect_string()).namespace("a//b"),
        ),
        (
            "empty acl",
            ClientBuilder::new(server.connect_string()).acl(vec![]),
        ),
        (
            "retry above 29",
            ClientBuilder::new(server.connect_string()).retry_policy(
                RetryPolicy::ExponentialBackoff {
                    base_sleep: Duration::from_millis(1),
                    max_retries: 30,
                    max_sleep: Duration::from_secs(1),
                },
            ),
        ),
    ];
    let mut results = checks;
    for (name, b) in builders {
        let r = tokio::time::timeout(Duration::from_secs(5), b.connect())
            .await
            .expect("no hang");
        results.push((name, r.map(drop)));
    }
    assert!(results.len() >= 20);
    for (name, r) in results {
        match r {
            Err(Error::InvalidArgument(msg)) => {
                assert!(msg.len() > 15, "{name}: unhelpful message {msg:?}")
            }
            other => panic!("{name}: expected InvalidArgument, got {other:?}"),
        }
    }
    c.close().await;
}

#[test]
fn blocking_face_refuses_to_run_inside_a_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let r = rt.block_on(async { zkrecipes::runtime::try_block_on(async { 1 }) });
    assert!(matches!(r, Err(Error::Internal(_))));
    assert_eq!(zkrecipes::runtime::try_block_on(async { 2 }).unwrap(), 2);
}

#[test]
fn blocking_connect_and_close() {
    let server = TestingServer::start();
    let c = ClientBuilder::new(server.connect_string())
        .connect_blocking()
        .unwrap();
    assert!(c.state().is_connected());
    c.close_blocking();
    assert!(c.is_closed());
}

/// Every recipe refuses to be made on a closed client, at once and with `Closed` (it could
/// never work): the same answer in every face, decided here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipes_are_refused_on_a_closed_client() {
    use zkrecipes::atomic::{DistributedAtomicInteger, DistributedAtomicLong, SharedCount};
    use zkrecipes::leader::{LeaderLatch, LeaderObserver, LeaderSelector};
    use zkrecipes::lock::{
        InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
        InterProcessSemaphoreMutex, InterProcessSemaphoreV2,
    };
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    c.close().await;
    let closed = |what: &str, r: Result<(), Error>| {
        assert!(
            matches!(&r, Err(Error::Closed(m)) if m.contains("closed")),
            "{what}: {r:?}"
        );
    };
    closed("mutex", InterProcessMutex::new(&c, "/r").map(drop));
    closed("rwlock", InterProcessReadWriteLock::new(&c, "/r").map(drop));
    closed(
        "semaphore",
        InterProcessSemaphoreV2::new(&c, "/r", 2).map(drop),
    );
    closed(
        "semaphore mutex",
        InterProcessSemaphoreMutex::new(&c, "/r").map(drop),
    );
    closed(
        "multi",
        InterProcessMultiLock::new(&c, &["/r", "/s"]).map(drop),
    );
    closed("latch", LeaderLatch::new(&c, "/r", "a").map(drop));
    closed(
        "selector",
        LeaderSelector::new(&c, "/r", "a", |_ctx| async {}).map(drop),
    );
    closed("observer", LeaderObserver::start(&c, "/r").await.map(drop));
    closed(
        "long",
        DistributedAtomicLong::new(&c, "/r", None, None).map(drop),
    );
    closed(
        "int",
        DistributedAtomicInteger::new(&c, "/r", None, None).map(drop),
    );
    closed("shared count", SharedCount::new(&c, "/r", 0).map(drop));
}

/// Curator's transaction(): every operation applied, in order, with one result each; a failing
/// operation applies nothing and says which one failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_are_all_or_nothing_and_name_the_failing_operation() {
    use zkrecipes::client::OpResult;
    let server = TestingServer::start();
    let plain = connect(&server.connect_string()).await;
    let c = ClientBuilder::new(server.connect_string())
        .namespace("tx")
        .connect()
        .await
        .unwrap();
    c.create("/a", b"0", CreateOptions::default().parents())
        .await
        .unwrap();
    let before = c.request_counts().multi;
    let results = c
        .transaction()
        .create("/a/b", b"1", CreateMode::Persistent)
        .create("/a/seq-", b"", CreateMode::PersistentSequential)
        .set_data("/a", b"2", Some(0))
        .check("/a", 1)
        .delete("/a/b", None)
        .commit()
        .await
        .unwrap();
    assert_eq!(c.request_counts().multi - before, 1, "one request");
    assert_eq!(results.len(), 5);
    assert!(matches!(&results[0], OpResult::Created { path, .. } if path == "/a/b"));
    assert!(
        matches!(&results[1], OpResult::Created { path, .. } if path.starts_with("/a/seq-0")),
        "{results:?}"
    );
    assert!(matches!(&results[2], OpResult::DataSet { stat } if stat.version == 1));
    assert_eq!(results[3], OpResult::Checked);
    assert_eq!(results[4], OpResult::Deleted);
    assert_eq!(plain.get_data("/tx/a").await.unwrap().0, b"2");
    assert!(plain.exists("/tx/a/b").await.unwrap().is_none());

    // A failing check: nothing applied; the error is the check's, with its index.
    let e = c
        .transaction()
        .create("/a/c", b"", CreateMode::Persistent)
        .set_data("/a", b"3", None)
        .check("/a", 0)
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(e, Error::BadVersion(_)), "{e}");
    assert_eq!(e.failed_op(), Some(2), "{e}");
    assert!(
        e.message().contains("transaction operation 2 (check)"),
        "{e}"
    );
    assert!(
        plain.exists("/tx/a/c").await.unwrap().is_none(),
        "nothing applied"
    );
    assert_eq!(plain.get_data("/tx/a").await.unwrap().0, b"2");

    // Bad input is refused before anything is sent, naming the operation.
    let e = c
        .transaction()
        .create("/ok", b"", CreateMode::Persistent)
        .delete("relative", None)
        .commit()
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("operation 1 (delete)")),
        "{e}"
    );
    assert!(c.transaction().commit().await.unwrap().is_empty());
    c.close().await;
    plain.close().await;
}

/// A transaction whose reply is lost with the connection is OutcomeUnknown, never resent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_whose_reply_is_lost_is_outcome_unknown() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(4))
        .connection_timeout(Duration::from_secs(1))
        .connect()
        .await
        .unwrap();
    proxy.blackhole();
    let e = c
        .transaction()
        .create("/lost", b"", CreateMode::Persistent)
        .commit()
        .await
        .unwrap_err();
    assert!(matches!(e, Error::OutcomeUnknown(_)), "{e}");
    proxy.restore();
    c.close().await;
}

/// A persistent recursive watch hears every change below its path, in order; survives a
/// reconnect within the session (saying so: changes made while disconnected are not replayed)
/// and a session expiry (set again on the new session); dropping it removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_watch_survives_reconnects_and_sessions() {
    use zkrecipes::client::{AddWatchMode, NodeEvent, WatchEvent};
    let server = TestingServer::start();
    let writer = connect(&server.connect_string()).await;
    let c = ClientBuilder::new(server.connect_string())
        .session_timeout(OUTLIVES_A_RESTART)
        .namespace("pw")
        .connect()
        .await
        .unwrap();
    writer
        .create("/pw/root", b"", CreateOptions::default().parents())
        .await
        .unwrap();
    let mut w = c
        .add_watch("/root", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    async fn next(w: &mut zkrecipes::client::PersistentWatch) -> Option<WatchEvent> {
        tokio::time::timeout(Duration::from_secs(20), w.next())
            .await
            .expect("an event")
    }
    let node = |kind, path: &str| {
        Some(WatchEvent::Node(NodeEvent {
            kind,
            path: path.into(),
        }))
    };
    writer
        .create("/pw/root/a", b"", CreateOptions::default())
        .await
        .unwrap();
    writer.set_data("/pw/root/a", b"1", None).await.unwrap();
    writer
        .create("/pw/root/a/b", b"", CreateOptions::default())
        .await
        .unwrap();
    writer
        .delete("/pw/root/a/b", DeleteOptions::default())
        .await
        .unwrap();
    assert_eq!(next(&mut w).await, node(NodeEventKind::Created, "/root/a"));
    assert_eq!(
        next(&mut w).await,
        node(NodeEventKind::DataChanged, "/root/a")
    );
    assert_eq!(
        next(&mut w).await,
        node(NodeEventKind::Created, "/root/a/b")
    );
    assert_eq!(
        next(&mut w).await,
        node(NodeEventKind::Deleted, "/root/a/b")
    );

    // A reconnect within the session.
    server.restart();
    assert_eq!(next(&mut w).await, Some(WatchEvent::Disconnected));
    assert_eq!(next(&mut w).await, Some(WatchEvent::Reconnected));
    writer.set_data("/pw/root/a", b"2", None).await.unwrap();
    assert_eq!(
        next(&mut w).await,
        node(NodeEventKind::DataChanged, "/root/a")
    );

    // A new session.
    zkrecipes_testing::expire_client_session(&c).await.unwrap();
    loop {
        match next(&mut w).await {
            Some(WatchEvent::SessionLost) => break,
            Some(WatchEvent::Disconnected | WatchEvent::Reconnected) => {}
            other => panic!("expected the session's end, got {other:?}"),
        }
    }
    assert_eq!(next(&mut w).await, Some(WatchEvent::Reconnected));
    writer.set_data("/pw/root/a", b"3", None).await.unwrap();
    assert_eq!(
        next(&mut w).await,
        node(NodeEventKind::DataChanged, "/root/a")
    );
    assert_eq!(
        c.request_counts().add_watch,
        2,
        "set again once, on the new session"
    );

    // Dropping the last watch on a path removes it from the server (`tests/watches.rs`). A
    // closed client ends the stream.
    drop(w);
    let mut w = c
        .add_watch("/root", AddWatchMode::Persistent)
        .await
        .unwrap();
    c.close().await;
    assert_eq!(next(&mut w).await, None);
    writer.close().await;
}

/// Curator's PersistentWatcher: listeners and a stream hear the same events in order; the
/// non-recursive mode hears the node's own data and children changes only; a server restart
/// shows as DISCONNECTED then RECONNECTED (the reset signal); close ends the stream and
/// silences the listeners; bad input and misuse are typed errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_watcher_delivers_to_listeners_and_streams_until_closed() {
    use zkrecipes::client::{PersistentWatcher, WatchEvent};
    let server = TestingServer::start();
    let c = connect_through_restarts(&server.connect_string()).await;
    let writer = connect(&server.connect_string()).await;
    c.create("/pwr/a", b"", CreateOptions::default().parents())
        .await
        .unwrap();

    let rec = PersistentWatcher::new(&c, "/pwr", true).unwrap();
    let heard = Arc::new(Mutex::new(Vec::<String>::new()));
    let h = heard.clone();
    rec.listen(move |e| {
        h.lock()
            .unwrap()
            .push(format!("{} {}", e.name(), e.path().unwrap_or("-")))
    });
    let mut stream = rec.events();
    rec.start().await.unwrap();
    let again = rec.start().await.unwrap_err();
    assert!(matches!(again, Error::InvalidArgument(_)), "{again}");

    // (Another path: ZooKeeper keeps one persistent watch mode per path and session.)
    let flat = PersistentWatcher::new(&c, "/pwr/a", false).unwrap();
    let mut flat_events = flat.events();
    flat.start().await.unwrap();

    writer
        .create("/pwr/a/deep", b"x", CreateOptions::default())
        .await
        .unwrap();
    writer.set_data("/pwr/a", b"1", None).await.unwrap();
    writer
        .create("/pwr/b", b"", CreateOptions::default())
        .await
        .unwrap();
    writer.set_data("/pwr", b"root", None).await.unwrap();
    let expected = [
        "CREATED /pwr/a/deep",
        "DATA_CHANGED /pwr/a",
        "CREATED /pwr/b",
        "DATA_CHANGED /pwr",
    ];
    async fn next(s: &mut zkrecipes::client::WatchEventStream) -> Option<WatchEvent> {
        s.next_timeout(Duration::from_secs(20))
            .await
            .expect("an event in time")
    }
    for want in expected {
        let e = next(&mut stream).await.expect("not ended");
        assert_eq!(format!("{} {}", e.name(), e.path().unwrap()), want);
    }
    // The plain watch: its node's children and data only.
    for want in ["CHILDREN_CHANGED /pwr/a", "DATA_CHANGED /pwr/a"] {
        let e = next(&mut flat_events).await.expect("not ended");
        assert_eq!(format!("{} {}", e.name(), e.path().unwrap()), want);
    }
    eventually(
        "the listener hears what the stream heard",
        Duration::from_secs(10),
        || {
            let n = heard.lock().unwrap().len();
            async move { n >= 4 }
        },
    )
    .await;
    assert_eq!(*heard.lock().unwrap(), expected);

    // A reconnect within the session: the reset signal, then events again.
    server.restart();
    assert_eq!(next(&mut stream).await, Some(WatchEvent::Disconnected));
    assert_eq!(next(&mut stream).await, Some(WatchEvent::Reconnected));
    writer.set_data("/pwr/b", b"2", None).await.unwrap();
    let e = next(&mut stream).await.unwrap();
    assert_eq!((e.name(), e.path()), ("DATA_CHANGED", Some("/pwr/b")));

    // Closed: the stream ends, listeners hear nothing of later changes.
    rec.close();
    rec.close();
    assert_eq!(next(&mut stream).await, None);
    let before = heard.lock().unwrap().len();
    writer.set_data("/pwr/b", b"3", None).await.unwrap();
    // The flat watcher is still open and hears its node's data change after that one: by
    // then the closed one would have heard its own.
    writer.set_data("/pwr/a", b"later", None).await.unwrap();
    loop {
        let e = next(&mut flat_events).await.expect("still open");
        if e.name() == "DATA_CHANGED" && e.path() == Some("/pwr/a") {
            break;
        }
    }
    assert_eq!(heard.lock().unwrap().len(), before, "nothing after close");
    let e = rec.start().await.unwrap_err();
    assert!(matches!(e, Error::Closed(_)), "{e}");

    // Bad input, a closed client.
    assert!(matches!(
        PersistentWatcher::new(&c, "no-slash", true),
        Err(Error::InvalidArgument(_))
    ));
    c.close().await;
    assert_eq!(
        next(&mut flat_events).await,
        None,
        "a closed client ends it"
    );
    assert!(matches!(
        PersistentWatcher::new(&c, "/pwr", true),
        Err(Error::Closed(_))
    ));
    writer.close().await;
}

/// `sync` on a 3-server ensemble: a writer on one server, a reader on another; after each
/// write the reader syncs, then its read sees that write (the exact version), 100 times, and
/// the server got 100 syncs. (On loopback a follower rarely lags: without the sync these reads
/// saw the writes too in our runs, so the request count is what shows the sync was sent.) Bad
/// input and a closed client are typed errors; a missing node is fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_makes_another_servers_reads_see_every_earlier_write() {
    let cluster = TestingCluster::start(3);
    let writer = connect(&cluster.server(0).connect_string()).await;
    let reader = connect(&cluster.server(1).connect_string()).await;
    writer
        .create("/sync/x", b"0", CreateOptions::default().parents())
        .await
        .unwrap();
    let before = reader.request_counts().sync;
    for i in 1..=100 {
        let stat = writer
            .set_data("/sync/x", i.to_string().as_bytes(), None)
            .await
            .unwrap();
        reader.sync("/sync/x").await.unwrap();
        let (data, seen) = reader.get_data("/sync/x").await.unwrap();
        assert_eq!(
            seen.version, stat.version,
            "a read after sync missed write {i}"
        );
        assert_eq!(data, i.to_string().as_bytes());
    }
    assert_eq!(reader.request_counts().sync - before, 100);
    reader.sync("/sync/missing").await.unwrap();
    assert!(matches!(
        reader.sync("relative").await,
        Err(Error::InvalidArgument(_))
    ));
    let r2 = reader.clone();
    std::thread::spawn(move || r2.sync_blocking("/sync/x"))
        .join()
        .unwrap()
        .unwrap();
    reader.close().await;
    assert!(matches!(
        reader.sync("/sync/x").await,
        Err(Error::Closed(_))
    ));
    writer.close().await;
}

/// Listener ids are unique in the process: every client and recipe used to count from 1, so a
/// lock's id given to the client's remove removed the client's own first listener. Now it is
/// refused, and removes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_id_of_another_registry_is_refused() {
    let server = TestingServer::start();
    let (a, b) = (
        connect(&server.connect_string()).await,
        connect(&server.connect_string()).await,
    );
    let state_a = a.add_state_listener(|_| {});
    let state_b = b.add_state_listener(|_| {});
    let lock = zkrecipes::lock::InterProcessMutex::new(&a, "/ids").unwrap();
    let lost = lock.on_lost(|_| {});
    assert!(state_a != state_b && state_a != lost && state_b != lost);
    for foreign in [state_b, lost] {
        assert!(
            matches!(
                a.remove_state_listener(foreign),
                Err(Error::InvalidArgument(_))
            ),
            "{foreign}"
        );
    }
    assert!(matches!(
        lock.remove_lost_listener(state_a),
        Err(Error::InvalidArgument(_))
    ));
    assert!(a.remove_state_listener(state_a).unwrap());
    assert!(!a.remove_state_listener(state_a).unwrap(), "removed before");
    assert!(lock.remove_lost_listener(lost).unwrap());
    a.close().await;
    b.close().await;
}

/// `close` ends the session even while something else holds a handle to it (a started cache
/// reads through one for as long as it is connected): its ephemeral nodes are gone when close
/// returns, and the cache's later reads fail. Before, the session lived on until the last
/// handle went (here, as long as the cache object), and close waited its connection timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_the_session_while_a_cache_holds_a_handle() {
    let server = TestingServer::start();
    let a = connect(&server.connect_string()).await;
    let b = connect(&server.connect_string()).await;
    a.create("/kept-open", b"", CreateOptions::default())
        .await
        .unwrap();
    let cache = zkrecipes::cache::CuratorCache::new(&a, "/kept-open").unwrap();
    cache.start().await.unwrap();
    assert!(cache
        .await_initialized(Some(Duration::from_secs(10)))
        .await
        .unwrap());
    a.create(
        "/kept-open/eph",
        b"",
        CreateOptions {
            mode: CreateMode::Ephemeral,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let session = a.session_id();
    a.close().await;
    assert!(
        b.exists("/kept-open/eph").await.unwrap().is_none(),
        "the ephemeral node of session {session:#x} outlived close"
    );
    assert!(
        server
            .four_letter("cons")
            .lines()
            .all(|l| !l.contains(&format!("sid={session:#x}"))),
        "the server still lists the session"
    );
    drop(cache);
    b.close().await;
}

/// A state stream ends (`None`) once its client is closed, after the changes published before;
/// before, `next` waited forever while any clone of the client lived (the caller's own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_stream_ends_when_its_client_closes() {
    let server = TestingServer::start();
    let a = connect(&server.connect_string()).await;
    let mut stream = a.state_stream();
    a.close().await;
    let next = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the stream ends once the client is closed");
    assert_eq!(next, None);
    // A stream made after close ends at once.
    assert_eq!(a.state_stream().next().await, None);
}

/// A connection timeout too long for the clock is a wait without end, not a panic in the
/// first operation (Python and Node take such values; before, `exists` panicked on an
/// `Instant` overflow).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_timeout_too_long_for_the_clock_is_no_panic() {
    let server = TestingServer::start();
    let c = ClientBuilder::new(server.connect_string())
        .connection_timeout(Duration::MAX)
        .connect()
        .await
        .expect("connect");
    assert!(c.exists("/").await.unwrap().is_some());
    c.close().await;
}
