//! Dynamic ensembles against real reconfigurable ensembles started by the harness: the
//! ensemble's configuration, `reconfig`, and the ensemble tracker following members as they
//! join and leave while a session, its ephemeral node and a lock held live on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use zkrecipes::client::{CreateMode, CreateOptions};
use zkrecipes::lock::InterProcessMutex;
use zkrecipes::{
    Client, ClientBuilder, ConnectionState, Error, ErrorKind, LostPolicy, Owner, Reconfig,
    ServerRole, TlsOptions,
};
use zkrecipes_testing::{
    expire_client_session, FaultProxy, Security, ServerRole as Role, TestingCluster, TestingServer,
};

const WAIT: Duration = Duration::from_secs(30);

/// One ensemble at a time in this file: each runs 3 to 5 JVMs, and the machine may have 2 cores
/// shared with other builds.
static ONE_ENSEMBLE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn superuser() -> Security {
    Security::new().superuser("super", "secret")
}

async fn admin(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(20))
        .auth("digest", b"super:secret".to_vec())
        .connect()
        .await
        .expect("connect the admin client")
}

async fn tracked(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(20))
        .track_ensemble(true)
        .connect()
        .await
        .expect("connect the tracked client")
}

/// Waits (bounded) until `f` returns true.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn record_states(client: &Client) -> Arc<Mutex<Vec<ConnectionState>>> {
    let states = Arc::new(Mutex::new(Vec::new()));
    let seen = states.clone();
    client.add_state_listener(move |s| seen.lock().unwrap().push(s));
    states
}

/// The scenario of issue 32: 3 members, 2 join (5), 2 leave (3), one of them the server the
/// tracked client is connected to. Throughout: the same session, its ephemeral node, a lock
/// held (session policy: only LOST ends a hold), and the tracker's host list following each
/// step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tracker_follows_members_joining_and_leaving_and_the_session_lives_on() {
    let _one = ONE_ENSEMBLE.lock().await;
    if std::env::var_os("ZKR_TEST_LOG").is_some() {
        let t0 = Instant::now();
        zkrecipes::log::set_logger(Some(zkrecipes::log::Level::Debug), move |r| {
            eprintln!(
                "{:>8.3} {:?} {} {}",
                t0.elapsed().as_secs_f64(),
                r.level,
                r.target,
                r.message
            )
        })
        .unwrap();
    }
    let mut cluster = TestingCluster::start_reconfigurable(3, superuser());
    // Both know the first three servers only; the admin client does not track.
    let admin = admin(&cluster.connect_string()).await;
    let client = tracked(&cluster.connect_string()).await;
    let states = record_states(&client);
    let session = client.session_id();
    client
        .create("/eph", b"mine", CreateOptions::new(CreateMode::Ephemeral))
        .await
        .unwrap();
    let mutex = InterProcessMutex::new(&client, "/lock")
        .unwrap()
        .with_lost_policy(LostPolicy::Session);
    let owner = Owner::new();
    assert!(mutex.acquire(owner, Some(WAIT)).await.unwrap());
    let (token, node) = (mutex.fencing_token(owner), mutex.lock_node(owner).unwrap());

    let config = client.get_config().await.unwrap();
    assert_eq!(
        config.members.iter().map(|m| m.id).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    for m in &config.members {
        let server = cluster.server(m.id as usize - 1);
        assert_eq!(m.role, ServerRole::Participant);
        assert_eq!(m.client_port, Some(server.port()));
        assert_eq!(m.server_line(), server.reconfig_spec().unwrap());
    }
    assert_eq!(
        config.connect_string(),
        cluster.connect_string_of(&[0, 1, 2])
    );
    eventually("the tracker read the first configuration", || {
        client.request_counts().get_config >= 2
    })
    .await;
    assert_eq!(
        client.current_connect_string(),
        cluster.connect_string_of(&[0, 1, 2])
    );
    assert_eq!(client.connect_string(), cluster.connect_string());

    // Grow: a participant and an observer join.
    let four = cluster.add_server(Role::Participant);
    let five = cluster.add_server(Role::Observer);
    let joining = [four, five].map(|i| cluster.server(i).reconfig_spec().unwrap());
    let grown = admin
        .reconfig(
            Reconfig::incremental()
                .joining(joining)
                .from_config(config.version),
        )
        .await
        .expect("reconfig adding two servers");
    assert_eq!(
        grown
            .members
            .iter()
            .map(|m| (m.id, m.role))
            .collect::<Vec<_>>(),
        [
            (1, ServerRole::Participant),
            (2, ServerRole::Participant),
            (3, ServerRole::Participant),
            (4, ServerRole::Participant),
            (5, ServerRole::Observer)
        ]
    );
    assert!(grown.version > config.version);
    assert!(cluster.wait_for_members(&[1, 2, 3, 4, 5], WAIT));
    let five_hosts = cluster.connect_string_of(&[0, 1, 2, 3, 4]);
    eventually("the tracker follows the 5 members", || {
        client.current_connect_string() == five_hosts
    })
    .await;
    assert_eq!(client.get_config().await.unwrap(), grown);

    // Shrink: the member the client is connected to leaves, with another one.
    let on = cluster
        .server_with_session(client.session_id())
        .expect("a server lists the session");
    let leader = cluster.leader_index();
    let other = (0..5)
        .find(|&i| i != on && Some(i) != leader)
        .expect("another member");
    let leaving = [on, other].map(|i| cluster.server(i).server_id());
    let staying: Vec<usize> = (0..5).filter(|i| *i != on && *i != other).collect();
    let shrunk = admin
        .reconfig(Reconfig::incremental().leaving(leaving))
        .await
        .expect("reconfig removing two servers");
    let staying_ids: Vec<u64> = staying.iter().map(|&i| i as u64 + 1).collect();
    assert_eq!(
        shrunk.members.iter().map(|m| m.id).collect::<Vec<_>>(),
        staying_ids
    );
    assert!(cluster.wait_for_members(&staying_ids, WAIT));
    let three_hosts = cluster.connect_string_of(&staying);
    eventually("the tracker follows the 3 members", || {
        client.current_connect_string() == three_hosts
    })
    .await;
    // The removed servers are gone for good; the client is on a member.
    cluster.server(on).stop();
    cluster.server(other).stop();
    client.exists("/").await.expect("a round trip");
    let now_on = cluster
        .server_with_session(client.session_id())
        .expect("a member lists the session");
    assert!(
        staying.contains(&now_on),
        "on {now_on}, members {staying:?}"
    );

    // The same session all along; its ephemeral node and its lock live on.
    assert_eq!(client.session_id(), session);
    let (_, stat) = admin.get_data("/eph").await.unwrap();
    assert_eq!(stat.ephemeral_owner, session);
    assert!(mutex.is_held_valid(owner));
    assert_eq!(mutex.fencing_token(owner), token);
    assert!(admin.exists(&node).await.unwrap().is_some());
    assert!(!states.lock().unwrap().contains(&ConnectionState::Lost));
    mutex.release(owner).await.unwrap();
    assert!(admin.exists(&node).await.unwrap().is_none());
    client.close().await;
    admin.close().await;
}

/// A client given one server learns the others from the configuration: when that server
/// dies it is on another member in the same session (it may have moved there already: the
/// list grew from 1 to 3, and 2 clients in 3 move to spread the load), and after LOST its new
/// session opens on the members (the server it was given is still dead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_given_one_server_survives_its_death_through_the_tracked_members() {
    let _one = ONE_ENSEMBLE.lock().await;
    let cluster = TestingCluster::start_reconfigurable(3, Security::new());
    let client = tracked(&cluster.server(0).connect_string()).await;
    let all = cluster.connect_string_of(&[0, 1, 2]);
    eventually("the tracker learns every member", || {
        client.current_connect_string() == all
    })
    .await;
    let session = client.session_id();
    cluster.server(0).kill();
    let mut on = None;
    eventually("the session is on another member", || {
        on = cluster.server_with_session(client.session_id());
        on.is_some()
    })
    .await;
    client
        .wait_for_state(WAIT, ConnectionState::is_connected)
        .await
        .expect("connected");
    client.exists("/").await.expect("a round trip");
    assert_eq!(client.session_id(), session);
    assert_ne!(on, Some(0));

    // LOST (seen by expire_client_session), then a new session on the tracked members.
    expire_client_session(&client)
        .await
        .expect("expire the session");
    eventually("a new session on the tracked members", || {
        client.state().is_connected() && ![0, session].contains(&client.session_id())
    })
    .await;
    client.exists("/").await.expect("a round trip");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconfig_is_checked_authorized_and_versioned() {
    let _one = ONE_ENSEMBLE.lock().await;
    let cluster = TestingCluster::start_reconfigurable(3, superuser());
    let admin = admin(&cluster.connect_string()).await;
    let config = admin.get_config().await.unwrap();

    // Refused before anything is sent.
    for bad in [
        Reconfig::incremental().joining(["4=127.0.0.4:1:2;3"]),
        Reconfig::new_members(["server.1=127.0.0.1:1:2;3"]).leaving([2]),
        Reconfig::incremental().from_config(-5),
    ] {
        let e = admin.reconfig(bad).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    assert_eq!(admin.request_counts().reconfig, 0);

    // A session that is not the superuser may read the configuration but not change it.
    let plain = ClientBuilder::new(cluster.connect_string())
        .connect()
        .await
        .unwrap();
    assert_eq!(plain.get_config().await.unwrap(), config);
    let e = plain.reconfig(Reconfig::incremental()).await.unwrap_err();
    assert!(matches!(e, Error::NoAuth(_)), "{e}");
    assert!(e.message().contains("superuser"), "{e}");

    // A change that changes no member makes a new version; the old one is then stale.
    let same = admin
        .reconfig(Reconfig::incremental().from_config(config.version))
        .await
        .unwrap();
    assert!(same.version > config.version);
    assert_eq!(same.members, config.members);
    let e = admin
        .reconfig(Reconfig::incremental().from_config(config.version))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::BadVersion(_)), "{e}");
    // Still refused when the reply is lost: the client reconnects and must not take the
    // current configuration for the stale change applied (a change of nothing but the version
    // is "in effect" in any configuration). Found by fault scenario 19.
    let proxies = [0, 1].map(|i| FaultProxy::start(&cluster.server(i).connect_string()));
    let behind = ClientBuilder::new(format!(
        "{},{}",
        proxies[0].connect_string(),
        proxies[1].connect_string()
    ))
    .session_timeout(Duration::from_secs(2))
    .auth("digest", b"super:secret".to_vec())
    .connect()
    .await
    .unwrap();
    let on = proxies
        .iter()
        .position(|p| p.connections() > 0)
        .expect("connected through a proxy");
    // Requests still arrive; their replies never come back: the client times out and moves to
    // the other proxy.
    proxies[on].drop_replies();
    let e = behind
        .reconfig(Reconfig::incremental().from_config(config.version))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::BadVersion(_)), "{e}");
    proxies[on].restore();
    assert_eq!(admin.get_config().await.unwrap().version, same.version);
    behind.close().await;
    // The whole member list, unchanged.
    let lines: Vec<String> = config.members.iter().map(|m| m.server_line()).collect();
    let again = admin.reconfig(Reconfig::new_members(lines)).await.unwrap();
    assert_eq!(again.members, config.members);
    // A joiner that is not running: no quorum can sync it.
    let e = admin
        .reconfig(Reconfig::new_members([
            "server.7=127.0.0.7:1:2:participant;127.0.0.7:3",
            "server.8=127.0.0.8:1:2:participant;127.0.0.8:3",
        ]))
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Server | ErrorKind::InvalidArgument),
        "{e}"
    );
    assert_eq!(admin.get_config().await.unwrap().members, config.members);
    plain.close().await;
    admin.close().await;
}

/// A reconfig whose reply is lost and whose session then expires is read back on the next
/// session: the change is in effect, so it returns the configuration and is not sent again
/// (leaving a member that is gone would be refused). It had returned `SessionExpired`, though
/// the change it had sent was in effect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconfig_whose_session_expires_after_it_was_sent_is_read_back_on_the_next_session() {
    let _one = ONE_ENSEMBLE.lock().await;
    let cluster = TestingCluster::start_reconfigurable(3, superuser());
    let admin = admin(&cluster.connect_string()).await;
    let config = admin.get_config().await.unwrap();
    let leaving = config.members.iter().map(|m| m.id).max().unwrap();
    let server = cluster.server(0).connect_string();
    let proxy = FaultProxy::start(&server);
    let behind = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(20))
        .auth("digest", b"super:secret".to_vec())
        .connect()
        .await
        .unwrap();
    let (id, password) = behind.session_credentials().unwrap();
    // The request arrives; its reply never comes back.
    proxy.drop_replies();
    let change = tokio::spawn({
        let behind = behind.clone();
        async move {
            behind
                .reconfig(Reconfig::incremental().leaving([leaving]))
                .await
        }
    });
    let deadline = Instant::now() + WAIT;
    loop {
        let now = admin.get_config().await.unwrap();
        if now.version != config.version {
            assert!(now.members.iter().all(|m| m.id != leaving), "{now:?}");
            break;
        }
        assert!(Instant::now() < deadline, "the reconfig was not applied");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Its session expires (closed on the server, past the proxy) before any reply reaches it.
    tokio::task::spawn_blocking(move || {
        zkrecipes_testing::expire_session_id(&server, id, &password)
    })
    .await
    .unwrap();
    proxy.restore();
    let after = tokio::time::timeout(WAIT, change)
        .await
        .expect("the reconfig returns")
        .unwrap()
        .expect("read back on the next session");
    assert!(after.members.iter().all(|m| m.id != leaving), "{after:?}");
    assert_eq!(after, admin.get_config().await.unwrap());
    assert_eq!(behind.request_counts().reconfig, 1, "sent once");
    assert_ne!(behind.session_credentials().unwrap().0, id, "a new session");
    behind.close().await;
    admin.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_ensemble_lists_its_members_and_refuses_reconfig() {
    let _one = ONE_ENSEMBLE.lock().await;
    let cluster = TestingCluster::start(3);
    let client = ClientBuilder::new(cluster.connect_string())
        .connect()
        .await
        .unwrap();
    let config = client.get_config().await.unwrap();
    assert_eq!(
        config.members.iter().map(|m| m.id).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let e = client
        .reconfig(Reconfig::incremental().leaving([3]))
        .await
        .unwrap_err();
    assert_eq!(e.zk_code(), Some(-123), "{e}");
    assert!(e.message().contains("reconfigEnabled"), "{e}");
    client.close().await;

    // The tracker cannot follow TLS ports: refused before connecting.
    let e = ClientBuilder::new("127.0.0.1:1")
        .tls(TlsOptions::new())
        .track_ensemble(true)
        .connect()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = ClientBuilder::new("tcp+tls://127.0.0.1:1")
        .track_ensemble(true)
        .connect()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

/// Stops the first two members of a 3-member ensemble with read-only mode on, and waits until
/// the third serves read-only.
async fn cut_off_the_third_member(cluster: &TestingCluster) {
    cluster.server(0).stop();
    cluster.server(1).stop();
    eventually("the third member in read-only mode", || {
        cluster
            .server(2)
            .four_letter("srvr")
            .contains("Mode: read-only")
    })
    .await;
}

/// Read-only servers (`can_be_read_only`): a member cut off from its quorum serves reads to a
/// new session that allows it (READ_ONLY), and a latch there cannot lead (its create is
/// refused). A session made on a read-write server is not continued on a read-only one (the
/// quorum will expire it): it stays SUSPENDED, its latch does not lead, and leads again once
/// the server is back in a quorum. (The latch also refuses to lead in READ_ONLY, in case a
/// session is ever continued there: a read-only server's listing may be stale.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_servers_serve_new_sessions_and_no_latch_leads_through_one() {
    let _one = ONE_ENSEMBLE.lock().await;
    let cluster = TestingCluster::start_secure(3, Security::new().read_only_mode(true));
    cluster.wait_for_quorum(WAIT).expect("a quorum");
    let third = cluster.connect_string_of(&[2]);
    let connect = |session: u64| {
        ClientBuilder::new(&third)
            .session_timeout(Duration::from_secs(session))
            .can_be_read_only(true)
            .connect()
    };
    let a = connect(30).await.expect("connect to the third member");
    let latch_a = zkrecipes::leader::LeaderLatch::new(&a, "/ro-latch", "a").unwrap();
    latch_a.start().await.unwrap();
    assert!(latch_a.await_leadership(Some(WAIT)).await.unwrap());
    cut_off_the_third_member(&cluster).await;
    // A client that does not allow read-only sessions is told why it gets none.
    let e = ClientBuilder::new(&third)
        .connection_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap_err();
    assert!(
        e.message().contains("is a read-only ZooKeeper server")
            && e.message().contains("can_be_read_only"),
        "{e}"
    );
    let b = connect(10)
        .await
        .expect("a new session on the read-only member");
    assert_eq!(b.state(), ConnectionState::ReadOnly);
    assert_eq!(
        b.get_children("/ro-latch").await.unwrap().len(),
        1,
        "reads are served"
    );
    let latch_b = zkrecipes::leader::LeaderLatch::new(&b, "/ro-latch", "b").unwrap();
    latch_b.start().await.unwrap();
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        assert!(!latch_a.has_leadership(), "a leads without a quorum");
        assert!(
            !latch_b.has_leadership(),
            "b leads through a read-only server"
        );
        assert_ne!(
            a.state(),
            ConnectionState::ReadOnly,
            "a read-write session continued on a read-only server"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cluster.server(0).start();
    cluster.server(1).start();
    assert!(
        latch_a.await_leadership(Some(WAIT)).await.unwrap(),
        "a leads again once its server is in a quorum"
    );
    latch_b.close().await.unwrap();
    latch_a.close().await.unwrap();
    b.close().await;
    a.close().await;
}

/// A read-only session looks for a read-write server among its hosts and moves there (a new
/// session). A host that accepts connections and never answers (a hung server, a blackholing
/// middlebox) must not end that search: its "isro" probe is given up after the connection
/// timeout (patch 23 of the wire client; before it, the search waited on that host for good and
/// the client stayed read-only while a writable server was in its list).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_host_does_not_keep_a_read_only_client_from_a_writable_server() {
    let _one = ONE_ENSEMBLE.lock().await;
    let cluster = TestingCluster::start_secure(3, Security::new().read_only_mode(true));
    cluster.wait_for_quorum(WAIT).expect("a quorum");
    cut_off_the_third_member(&cluster).await;
    // A host that accepts connections and never answers nor closes them; it counts the
    // "isro" probes it is sent.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_host = silent.local_addr().unwrap().to_string();
    let probes = Arc::new(AtomicUsize::new(0));
    let counted = probes.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = silent.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut first = [0u8; 4];
                if socket.read_exact(&mut first).await.is_ok() && &first == b"isro" {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
                // Held open, unanswered, until the peer closes it.
                let _ = socket.read_to_end(&mut Vec::new()).await;
            });
        }
    });
    // A writable server of its own, reached through a proxy that refuses connections for now.
    let writable = TestingServer::start();
    let gate = FaultProxy::start(&writable.connect_string());
    gate.cut();
    let client = ClientBuilder::new(format!(
        "{},{},{}",
        cluster.connect_string_of(&[2]),
        silent_host,
        gate.connect_string()
    ))
    .session_timeout(Duration::from_secs(10))
    .connection_timeout(Duration::from_secs(5))
    .can_be_read_only(true)
    .connect()
    .await
    .expect("a session on the read-only member");
    assert_eq!(client.state(), ConnectionState::ReadOnly);
    let states = record_states(&client);
    // The search for a writable server reaches the silent host and asks it "isro"...
    eventually(
        "the search for a writable server asks the silent host",
        || probes.load(Ordering::SeqCst) > 0,
    )
    .await;
    // ...and, now that the writable server can be reached, must not wait there for good.
    gate.restore();
    eventually("the client moves to the writable server", || {
        client.state().is_connected() && client.state() != ConnectionState::ReadOnly
    })
    .await;
    // Straight there, as Java's client: not back to the read-only server nor through the
    // silent host first.
    assert!(
        !states.lock().unwrap().contains(&ConnectionState::ReadOnly),
        "back on the read-only server on the way: {:?}",
        states.lock().unwrap()
    );
    client
        .create(
            "/written-after-the-move",
            b"",
            CreateOptions::new(CreateMode::Persistent),
        )
        .await
        .expect("a write on the writable server");
    client.close().await;
}
