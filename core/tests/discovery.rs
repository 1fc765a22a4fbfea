//! Service discovery against a real ZooKeeper (started by the harness): Curator's layout and
//! JSON, registrations through blips and expiries without flaps, conflicts, the service cache's
//! events and the provider's picks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zkrecipes::client::StateStream;
use zkrecipes::client::{CreateMode, CreateOptions};
use zkrecipes::discovery::{
    ProviderStrategy, ServiceCache, ServiceCacheEventKind, ServiceDiscovery, ServiceInstance,
    ServiceProvider, ServiceType, UriSpec,
};
use zkrecipes::nodes::PersistentNodeEventKind;
use zkrecipes::{Client, ClientBuilder, ConnectionState, Error, NodeEventKind, RetryPolicy};
use zkrecipes_testing::{FaultProxy, TestingServer};

const WAIT: Duration = Duration::from_secs(20);

async fn connect(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect")
}

async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn instance(name: &str, id: &str, port: i32) -> ServiceInstance {
    let mut i = ServiceInstance::new(name);
    i.id = id.into();
    i.address = Some("10.0.0.7".into());
    i.port = Some(port);
    i.payload = Some(serde_json::json!({"region": "eu"}));
    i.uri_spec = Some(UriSpec::new("{scheme}://{address}:{port}").unwrap());
    i
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_query_update_disable_and_unregister_on_curators_layout() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let raw = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/services").unwrap();
    let reg = d.register(instance("orders", "a1", 8080)).await.unwrap();
    assert_eq!(reg.path(), "/services/orders/a1");
    let (bytes, stat) = raw.get_data("/services/orders/a1").await.unwrap();
    assert_eq!(stat.ephemeral_owner, c.session_id(), "DYNAMIC is ephemeral");
    assert_eq!(
        bytes,
        reg.instance().to_json(true),
        "Curator's compatible JSON"
    );
    assert!(!String::from_utf8_lossy(&bytes).contains("enabled"));
    // Parents are containers.
    let parent = raw.exists("/services/orders").await.unwrap().unwrap();
    assert_eq!(parent.ephemeral_owner, 0);

    d.register(instance("orders", "a2", 8081)).await.unwrap();
    d.register(instance("billing", "b1", 9000)).await.unwrap();
    assert_eq!(d.query_for_names().await.unwrap(), ["billing", "orders"]);
    let found = d.query_for_instances("orders").await.unwrap();
    assert_eq!(
        found.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
        ["a1", "a2"]
    );
    assert_eq!(found[0], reg.instance());
    assert_eq!(found[0].build_uri(&HashMap::new()), "http://10.0.0.7:8080");
    assert!(d
        .query_for_instance("orders", "zz")
        .await
        .unwrap()
        .is_none());
    assert!(d.query_for_instances("nothing").await.unwrap().is_empty());

    let mut changed = reg.instance();
    changed.port = Some(8090);
    reg.update(changed.clone()).unwrap();
    eventually("the update is written", || async {
        d.query_for_instance("orders", "a1")
            .await
            .unwrap()
            .unwrap()
            .port
            == Some(8090)
    })
    .await;
    let mut renamed = changed.clone();
    renamed.id = "other".into();
    assert!(matches!(
        reg.update(renamed),
        Err(Error::InvalidArgument(_))
    ));

    reg.set_enabled(false).unwrap();
    eventually("disabled on the wire", || async {
        let bytes = raw.get_data("/services/orders/a1").await.unwrap().0;
        String::from_utf8_lossy(&bytes).ends_with(r#""enabled":false}"#)
    })
    .await;
    assert!(
        !d.query_for_instance("orders", "a1")
            .await
            .unwrap()
            .unwrap()
            .enabled
    );

    reg.unregister().await.unwrap();
    reg.unregister().await.unwrap();
    assert!(raw.exists("/services/orders/a1").await.unwrap().is_none());
    assert!(matches!(reg.update(changed), Err(Error::Closed(_))));
    d.close().await.unwrap();
    for c in [c, raw] {
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_types_map_to_curators_modes_and_close_keeps_permanent_only() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let raw = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/svc").unwrap();
    let mut seq = instance("s", "q", 1);
    seq.service_type = ServiceType::DynamicSequential;
    let seq = d.register(seq).await.unwrap();
    let name = seq.node_name();
    assert!(
        name.starts_with('q') && name.len() == 11 && name[1..].bytes().all(|b| b.is_ascii_digit()),
        "{name}"
    );
    for (id, ty) in [("st", ServiceType::Static), ("pe", ServiceType::Permanent)] {
        let mut i = instance("s", id, 2);
        i.service_type = ty;
        d.register(i).await.unwrap();
        let stat = raw.exists(&format!("/svc/s/{id}")).await.unwrap().unwrap();
        assert_eq!(stat.ephemeral_owner, 0, "{ty:?} is persistent");
    }
    assert_eq!(raw.get_children("/svc/s").await.unwrap().len(), 3);
    d.close().await.unwrap();
    let mut left = raw.get_children("/svc/s").await.unwrap();
    left.sort();
    assert_eq!(left, ["pe"], "close keeps PERMANENT only");
    assert!(matches!(
        d.register(instance("s", "late", 1)).await,
        Err(Error::Closed(_))
    ));
    assert!(matches!(ServiceCache::new(&d, "s"), Err(Error::Closed(_))));
    assert!(matches!(
        ServiceProvider::new(&d, "s", ProviderStrategy::Random),
        Err(Error::Closed(_))
    ));
    c.close().await;
    raw.close().await;
}

/// Two registers of one instance at the same time make one registration: one node (a
/// DYNAMIC_SEQUENTIAL keeper each would make a numbered node each), the same registration
/// back from both. A register that close overtakes ends `Closed` and leaves no node behind
/// (close had emptied its registrations before the register put its own in).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registers_at_once_are_one_registration_and_a_register_overtaken_by_close_leaves_nothing() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let raw = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/twice").unwrap();
    let mut i = instance("s", "q", 1);
    i.service_type = ServiceType::DynamicSequential;
    let (r1, r2) = tokio::join!(d.register(i.clone()), d.register(i.clone()));
    let (r1, r2) = (r1.unwrap(), r2.unwrap());
    assert_eq!(r1.path(), r2.path(), "one registration, returned to both");
    assert_eq!(
        raw.get_children("/twice/s").await.unwrap(),
        [r1.node_name()],
        "one node for one instance"
    );
    assert_eq!(d.registrations().len(), 1);
    r1.unregister().await.unwrap();
    // No node left; the emptied container may be reaped by the server meanwhile (NoNode).
    let left = match raw.get_children("/twice/s").await {
        Ok(children) => children,
        Err(Error::NoNode(_)) => Vec::new(),
        Err(e) => panic!("list /twice/s: {e}"),
    };
    assert!(left.is_empty(), "{left:?}");

    // The register starts (and waits for its node), then close runs to its end.
    let late = ServiceDiscovery::new(&c, "/overtaken").unwrap();
    let (registered, closed) = tokio::join!(late.register(instance("s", "x", 1)), late.close());
    closed.unwrap();
    assert!(
        matches!(registered, Err(Error::Closed(_))),
        "a register overtaken by close: {registered:?}"
    );
    assert!(
        raw.exists("/overtaken/s/x").await.unwrap().is_none(),
        "the overtaken register left its node"
    );
    c.close().await;
    raw.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sessions_instance_is_a_conflict_and_left_untouched() {
    let server = TestingServer::start();
    let a = connect(&server.connect_string()).await;
    let b = connect(&server.connect_string()).await;
    let da = ServiceDiscovery::new(&a, "/svc").unwrap();
    let db = ServiceDiscovery::new(&b, "/svc").unwrap();
    da.register(instance("s", "same", 1)).await.unwrap();
    let e = db.register(instance("s", "same", 2)).await.unwrap_err();
    assert!(matches!(e, Error::Conflict(_)), "{e}");
    let (bytes, stat) = b.get_data("/svc/s/same").await.unwrap();
    assert_eq!(stat.ephemeral_owner, a.session_id());
    assert_eq!(ServiceInstance::from_json(&bytes).unwrap().port, Some(1));
    da.close().await.unwrap();
    db.close().await.unwrap();
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blip_deletes_nothing_and_an_expiry_brings_each_instance_back_once() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = connect(&proxy.connect_string()).await;
    let raw = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/svc").unwrap();
    let mut seq = instance("s", "q", 1);
    seq.service_type = ServiceType::DynamicSequential;
    d.register(instance("s", "dyn", 1)).await.unwrap();
    let seq = d.register(seq).await.unwrap();
    let before = raw.exists("/svc/s/dyn").await.unwrap().unwrap();
    let cache = ServiceCache::new(&ServiceDiscovery::new(&raw, "/svc").unwrap(), "s").unwrap();
    let removed = Arc::new(Mutex::new(0));
    let r = removed.clone();
    cache.listen(false, move |e| {
        if e.kind == ServiceCacheEventKind::Removed {
            *r.lock().unwrap() += 1;
        }
    });
    cache.start().await.unwrap();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());

    // A connection cut shorter than the session: SUSPENDED, RECONNECTED, the same nodes.
    let mut states = c.state_stream();
    proxy.cut();
    proxy.restore();
    loop {
        match tokio::time::timeout(WAIT, states.next()).await.unwrap() {
            Some(zkrecipes::ConnectionState::Reconnected) => break,
            Some(_) => continue,
            None => panic!("client closed"),
        }
    }
    let fence = raw
        .create("/fence", b"", CreateOptions::new(CreateMode::Ephemeral))
        .await
        .unwrap();
    assert!(cache
        .await_zxid(fence.stat.czxid, Some(WAIT))
        .await
        .unwrap());
    let after = raw.exists("/svc/s/dyn").await.unwrap().unwrap();
    assert_eq!(
        after.czxid, before.czxid,
        "not deleted and re-created (CURATOR-320)"
    );
    assert_eq!(*removed.lock().unwrap(), 0, "the blip removed nothing");

    // A session expiry: each instance back exactly once, the sequential one as one node.
    let session = c.session_id();
    zkrecipes_testing::expire_client_session(&c).await.unwrap();
    eventually("both instances back on a new session", || async {
        let kids = raw.get_children("/svc/s").await.unwrap_or_default();
        if kids.len() != 2 || c.session_id() == session {
            return false;
        }
        for k in kids {
            match raw.exists(&format!("/svc/s/{k}")).await {
                Ok(Some(s)) if s.ephemeral_owner == c.session_id() => {}
                _ => return false,
            }
        }
        true
    })
    .await;
    let kids = raw.get_children("/svc/s").await.unwrap();
    assert!(kids.contains(&"dyn".to_string()));
    assert_eq!(
        kids.iter().filter(|k| k.starts_with('q')).count(),
        1,
        "{kids:?}"
    );
    assert!(seq.is_registered());
    d.close().await.unwrap();
    cache.close();
    c.close().await;
    raw.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_names_each_instance_and_reports_invalid_nodes() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/svc").unwrap();
    let cache = ServiceCache::new(&d, "s").unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    cache.listen(false, move |e| {
        let id = e.instance.as_ref().map(|i| i.id.clone());
        ev.lock().unwrap().push((e.kind, id, e.error.is_some()));
    });
    cache.start().await.unwrap();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
    let reg = d.register(instance("s", "a", 1)).await.unwrap();
    let mut i = reg.instance();
    i.port = Some(2);
    reg.update(i).unwrap();
    eventually("the update seen", || async {
        cache.instances().iter().any(|i| i.port == Some(2))
    })
    .await;
    let bad = c
        .create(
            "/svc/s/garbage",
            b"not json",
            CreateOptions::new(CreateMode::Persistent),
        )
        .await
        .unwrap();
    assert!(cache.await_zxid(bad.stat.czxid, Some(WAIT)).await.unwrap());
    assert_eq!(cache.instances().len(), 1, "the garbage node is left out");
    reg.unregister().await.unwrap();
    let fence = c
        .create("/f", b"", CreateOptions::new(CreateMode::Persistent))
        .await
        .unwrap();
    assert!(cache
        .await_zxid(fence.stat.czxid, Some(WAIT))
        .await
        .unwrap());
    eventually("the removal heard", || async {
        events
            .lock()
            .unwrap()
            .iter()
            .any(|(k, ..)| *k == ServiceCacheEventKind::Removed)
    })
    .await;
    let seen = events.lock().unwrap().clone();
    use ServiceCacheEventKind as K;
    let kinds: Vec<_> = seen.iter().map(|(k, ..)| *k).collect();
    assert_eq!(
        kinds,
        [K::Initialized, K::Added, K::Updated, K::Invalid, K::Removed],
        "{seen:?}"
    );
    assert_eq!(seen[1].1.as_deref(), Some("a"));
    assert!(seen[3].2, "Invalid carries the error");
    // A late listener hears the current instances first.
    let replayed = Arc::new(Mutex::new(Vec::new()));
    let rp = replayed.clone();
    d.register(instance("s", "b", 1)).await.unwrap();
    eventually("b cached", || async { cache.instances().len() == 1 }).await;
    cache.listen(true, move |e| rp.lock().unwrap().push(e.kind));
    eventually("the replay", || async {
        replayed.lock().unwrap().len() >= 3
    })
    .await;
    // In path order: b, then the garbage node (still invalid), then Initialized.
    assert_eq!(
        replayed.lock().unwrap()[..3],
        [K::Added, K::Invalid, K::Initialized]
    );
    cache.close();
    d.close().await.unwrap();
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_pick_by_strategy_never_a_disabled_or_down_instance() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/svc").unwrap();
    let regs: Vec<_> = futures_join(&d, &["a", "b", "c"]).await;
    let p = ServiceProvider::new(&d, "s", ProviderStrategy::RoundRobin).unwrap();
    p.start().await.unwrap();
    eventually("three instances", || async {
        p.get_all_instances().len() == 3
    })
    .await;
    let picks: Vec<_> = (0..6)
        .map(|_| p.get_instance().unwrap().id.clone())
        .collect();
    assert_eq!(picks, ["a", "b", "c", "a", "b", "c"]);
    regs[1].set_enabled(false).unwrap();
    eventually("b disabled in the cache", || async {
        p.get_all_instances().len() == 2
    })
    .await;
    for _ in 0..10 {
        assert_ne!(p.get_instance().unwrap().id, "b");
    }
    let a = p.get_all_instances()[0].clone();
    p.note_error(&a);
    p.note_error(&a);
    for _ in 0..10 {
        assert_eq!(p.get_instance().unwrap().id, "c", "a is down, b disabled");
    }
    let sticky = ServiceProvider::new(&d, "s", ProviderStrategy::Sticky).unwrap();
    sticky.start().await.unwrap();
    eventually("sticky sees two", || async {
        sticky.get_all_instances().len() == 2
    })
    .await;
    let first = sticky.get_instance().unwrap().id.clone();
    for _ in 0..10 {
        assert_eq!(sticky.get_instance().unwrap().id, first);
    }
    let only_c = ServiceProvider::new(&d, "s", ProviderStrategy::Random)
        .unwrap()
        .with_filter(|i| i.id == "c");
    only_c.start().await.unwrap();
    eventually("filtered", || async {
        only_c.get_all_instances().len() == 1
    })
    .await;
    assert_eq!(only_c.get_instance().unwrap().id, "c");
    for p in [p, sticky, only_c] {
        p.close();
    }
    d.close().await.unwrap();
    c.close().await;
}

async fn futures_join(
    d: &ServiceDiscovery,
    ids: &[&str],
) -> Vec<zkrecipes::discovery::Registration> {
    let mut out = Vec::new();
    for id in ids {
        out.push(d.register(instance("s", id, 1)).await.unwrap());
    }
    out
}

/// A client for outage tests: a session that outlives the outage (30 s), and a retry policy
/// that gives up within seconds (`connection_timeout` per try, `retries` retries).
async fn outage_client(connect: &str, connection_timeout: Duration, retries: u32) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(connection_timeout)
        .retry_policy(RetryPolicy::exponential_backoff(
            Duration::from_millis(100),
            retries,
        ))
        .connect()
        .await
        .expect("connect")
}

async fn reconnected(states: &mut StateStream) {
    loop {
        match tokio::time::timeout(WAIT, states.next()).await.unwrap() {
            Some(ConnectionState::Reconnected) => return,
            Some(ConnectionState::Lost) => panic!("the session was lost"),
            Some(_) => continue,
            None => panic!("client closed"),
        }
    }
}

async fn gone(raw: &Client, paths: &[&str]) -> bool {
    for p in paths {
        if raw.exists(p).await.unwrap().is_some() {
            return false;
        }
    }
    true
}

/// Review-discovery #1: an unregister during a connection outage gives up when the retry
/// policy does; it says so (`ConnectionLoss`), and the delete goes on in the background: both
/// nodes are gone once the connection is back (the session lived through the outage, so the
/// DYNAMIC node would otherwise stay with it, and the STATIC one for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unregister_during_an_outage_says_so_and_the_node_goes_after_the_reconnect() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = outage_client(&proxy.connect_string(), Duration::from_secs(1), 1).await;
    let raw = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/svc").unwrap();
    let mut st = instance("s", "st", 1);
    st.service_type = ServiceType::Static;
    let st = d.register(st).await.unwrap();
    let dy = d.register(instance("s", "dyn", 2)).await.unwrap();
    let session = c.session_id();
    let mut states = c.state_stream();
    proxy.cut();
    let (st_result, dy_result) = tokio::join!(st.unregister(), dy.unregister());
    assert!(
        !gone(&raw, &["/svc/s/st", "/svc/s/dyn"]).await,
        "the outage kept the deletes from the server"
    );
    assert_eq!(
        c.pending_guaranteed_deletes(),
        2,
        "the client counts both deletes going on in the background"
    );
    proxy.restore();
    reconnected(&mut states).await;
    assert_eq!(c.session_id(), session, "the session outlived the outage");
    eventually("both nodes gone after the reconnect", || {
        gone(&raw, &["/svc/s/st", "/svc/s/dyn"])
    })
    .await;
    eventually("no delete left in the background", || async {
        c.pending_guaranteed_deletes() == 0
    })
    .await;
    for (what, result) in [("STATIC", st_result), ("DYNAMIC", dy_result)] {
        assert!(
            matches!(result, Err(Error::ConnectionLoss(_))),
            "{what}: the failed first try is reported: {result:?}"
        );
    }
    st.unregister().await.unwrap();
    assert!(d.registrations().is_empty());
    d.close().await.unwrap();
    c.close().await;
    raw.close().await;
}

/// Review-discovery #1 and #8: close during an outage stops its registrations all at once
/// (each waits out the retry policy: one after the other took that many times as long),
/// reports the failure, and every node goes once the connection is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_during_an_outage_stops_every_registration_at_once_and_they_go_after_the_reconnect() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    // One try of 2 s per delete: four in turn take 8 s at least.
    let c = outage_client(&proxy.connect_string(), Duration::from_secs(2), 0).await;
    let raw = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/svc").unwrap();
    let ids = ["a", "b", "c", "d"];
    for id in ids {
        let mut i = instance("s", id, 1);
        i.service_type = ServiceType::Static;
        d.register(i).await.unwrap();
    }
    let paths: Vec<String> = ids.iter().map(|id| format!("/svc/s/{id}")).collect();
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let mut states = c.state_stream();
    proxy.cut();
    let start = Instant::now();
    let closed = d.close().await;
    let took = start.elapsed();
    proxy.restore();
    assert!(
        took < Duration::from_secs(6),
        "close stopped its registrations one after the other: {took:?}"
    );
    reconnected(&mut states).await;
    eventually("every node gone after the reconnect", || gone(&raw, &paths)).await;
    assert!(
        matches!(closed, Err(Error::ConnectionLoss(_))),
        "the failure is reported: {closed:?}"
    );
    c.close().await;
    raw.close().await;
}

/// Review-discovery #3: a registration that ended in a conflict (another session took the id
/// while ours had expired) is over: registering the instance again is `Conflict` while the
/// other session holds the path (not `Ok` with a registration that writes nothing), an update
/// says so too, and once the path is free registering again works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registering_again_after_a_conflict_reports_it_or_registers_afresh() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let a = connect(&proxy.connect_string()).await;
    let b = connect(&server.connect_string()).await;
    let da = ServiceDiscovery::new(&a, "/svc").unwrap();
    let db = ServiceDiscovery::new(&b, "/svc").unwrap();
    let reg = da.register(instance("s", "same", 1)).await.unwrap();
    let conflicts = Arc::new(Mutex::new(0));
    let seen = conflicts.clone();
    reg.add_listener(move |e| {
        if e.kind == PersistentNodeEventKind::Conflict {
            *seen.lock().unwrap() += 1;
        }
    });
    let (id, password) = a.session_credentials().unwrap();
    proxy.cut();
    let connect_string = server.connect_string();
    tokio::task::spawn_blocking(move || {
        zkrecipes_testing::expire_session_id(&connect_string, id, &password)
    })
    .await
    .unwrap();
    let theirs = db.register(instance("s", "same", 2)).await.unwrap();
    proxy.restore();
    eventually("the CONFLICT event", || async {
        *conflicts.lock().unwrap() == 1
    })
    .await;
    assert!(!reg.is_registered());

    let again = da.register(instance("s", "same", 1)).await;
    assert!(
        matches!(again, Err(Error::Conflict(_))),
        "registering again while the other session holds the id: {again:?}"
    );
    let mut changed = reg.instance();
    changed.port = Some(3);
    let updated = reg.update(changed);
    assert!(
        matches!(updated, Err(Error::Conflict(_)) | Err(Error::Closed(_))),
        "an update of the registration that ended in the conflict: {updated:?}"
    );
    let (bytes, stat) = b.get_data("/svc/s/same").await.unwrap();
    assert_eq!(stat.ephemeral_owner, b.session_id(), "left untouched");
    assert_eq!(ServiceInstance::from_json(&bytes).unwrap().port, Some(2));

    theirs.unregister().await.unwrap();
    let mine = da.register(instance("s", "same", 1)).await.unwrap();
    assert!(mine.is_registered());
    let stat = b.exists("/svc/s/same").await.unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, a.session_id(), "registered afresh");
    da.close().await.unwrap();
    db.close().await.unwrap();
    a.close().await;
    b.close().await;
}

/// Review-discovery #3: `update` of a registration that ended in a conflict fails (`Conflict`)
/// instead of returning `Ok` and writing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_after_a_conflict_reports_it() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let a = connect(&proxy.connect_string()).await;
    let b = connect(&server.connect_string()).await;
    let da = ServiceDiscovery::new(&a, "/svc").unwrap();
    let db = ServiceDiscovery::new(&b, "/svc").unwrap();
    let reg = da.register(instance("s", "same", 1)).await.unwrap();
    let conflicts = Arc::new(Mutex::new(0));
    let seen = conflicts.clone();
    reg.add_listener(move |e| {
        if e.kind == PersistentNodeEventKind::Conflict {
            *seen.lock().unwrap() += 1;
        }
    });
    let (id, password) = a.session_credentials().unwrap();
    proxy.cut();
    let connect_string = server.connect_string();
    tokio::task::spawn_blocking(move || {
        zkrecipes_testing::expire_session_id(&connect_string, id, &password)
    })
    .await
    .unwrap();
    db.register(instance("s", "same", 2)).await.unwrap();
    proxy.restore();
    eventually("the CONFLICT event", || async {
        *conflicts.lock().unwrap() == 1
    })
    .await;
    let mut changed = reg.instance();
    changed.port = Some(3);
    let updated = reg.update(changed);
    assert!(matches!(updated, Err(Error::Conflict(_))), "{updated:?}");
    assert!(matches!(reg.set_enabled(false), Err(Error::Conflict(_))));
    da.close().await.unwrap();
    db.close().await.unwrap();
    a.close().await;
    b.close().await;
}

/// Review-discovery #2: a PERMANENT register that fails (here `Timeout`: the create's reply
/// comes after the connection timeout) leaves no node behind, though its create was applied
/// (before the fix the node was kept, as if registered, with nobody to delete it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_register_that_times_out_leaves_no_node() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    // Replies 2 s late: the register's read comes back after 2 s, its create is applied at
    // once and answered after 4 s, past the register's wait (the connection timeout, 3 s).
    let c = outage_client(&proxy.connect_string(), Duration::from_secs(3), 1).await;
    let raw = connect(&server.connect_string()).await;
    raw.create(
        "/svc/s",
        b"",
        CreateOptions::new(CreateMode::Persistent).parents(),
    )
    .await
    .unwrap();
    let (none, made) = raw.exists_watch("/svc/s/pe").await.unwrap();
    assert!(none.is_none());
    let d = ServiceDiscovery::new(&c, "/svc").unwrap();
    let mut pe = instance("s", "pe", 1);
    pe.service_type = ServiceType::Permanent;
    proxy.delay_replies(Duration::from_secs(2));
    let registered = d.register(pe).await;
    proxy.restore();
    assert!(
        matches!(registered, Err(Error::Timeout(_))),
        "{registered:?}"
    );
    let event = tokio::time::timeout(WAIT, made.changed()).await.unwrap();
    assert_eq!(event.kind, NodeEventKind::Created, "the create was applied");
    eventually("no node left by the failed register", || {
        gone(&raw, &["/svc/s/pe"])
    })
    .await;
    assert!(d.registrations().is_empty());
    d.close().await.unwrap();
    c.close().await;
    assert!(gone(&raw, &["/svc/s/pe"]).await);
    raw.close().await;
}

/// Review-discovery #2: `close` keeps a PERMANENT instance only once it is registered: one
/// whose register close overtook is deleted (the register ends `Closed`); one registered
/// stays, and `unregister` after close deletes it (not a silent `Ok`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_keeps_only_registered_permanent_instances_and_unregister_after_close_deletes() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let raw = connect(&server.connect_string()).await;
    let permanent = |id: &str| {
        let mut i = instance("s", id, 1);
        i.service_type = ServiceType::Permanent;
        i
    };
    let d = ServiceDiscovery::new(&c, "/svc").unwrap();
    let reg = d.register(permanent("pe")).await.unwrap();
    d.close().await.unwrap();
    assert!(
        raw.exists("/svc/s/pe").await.unwrap().is_some(),
        "close keeps a PERMANENT registration"
    );
    reg.unregister().await.unwrap();
    assert!(
        gone(&raw, &["/svc/s/pe"]).await,
        "unregister after close deletes the PERMANENT node"
    );
    reg.unregister().await.unwrap();

    // The register starts (and waits for its node), then close runs to its end.
    let late = ServiceDiscovery::new(&c, "/overtaken").unwrap();
    let (registered, closed) = tokio::join!(late.register(permanent("p")), late.close());
    closed.unwrap();
    assert!(
        matches!(registered, Err(Error::Closed(_))),
        "a register overtaken by close: {registered:?}"
    );
    assert!(
        gone(&raw, &["/overtaken/s/p"]).await,
        "the overtaken PERMANENT register left its node"
    );
    c.close().await;
    raw.close().await;
}

/// Review-discovery #6: DYNAMIC_SEQUENTIAL instances share their id; errors noted with one
/// leave only that one out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_noted_with_one_of_the_instances_sharing_an_id_leave_the_others_usable() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    // Two discoveries: two registrations of one id (two processes, in life).
    let d1 = ServiceDiscovery::new(&c, "/svc").unwrap();
    let d2 = ServiceDiscovery::new(&c, "/svc").unwrap();
    let mut regs = Vec::new();
    for (d, port) in [(&d1, 1), (&d2, 2)] {
        let mut q = instance("s", "q", port);
        q.service_type = ServiceType::DynamicSequential;
        regs.push(d.register(q).await.unwrap());
    }
    assert_ne!(regs[0].path(), regs[1].path());
    let p = ServiceProvider::new(&d1, "s", ProviderStrategy::RoundRobin).unwrap();
    p.start().await.unwrap();
    eventually("both instances", || async {
        p.get_all_instances().len() == 2
    })
    .await;
    let first = p
        .get_all_instances()
        .into_iter()
        .find(|i| i.port == Some(1))
        .unwrap();
    p.note_error(&first);
    p.note_error(&first);
    let ports: Vec<_> = p.get_all_instances().iter().map(|i| i.port).collect();
    assert_eq!(
        ports,
        [Some(2)],
        "only the instance with the errors is down"
    );
    for _ in 0..4 {
        assert_eq!(p.get_instance().map(|i| i.port), Some(Some(2)));
    }
    p.close();
    d1.close().await.unwrap();
    d2.close().await.unwrap();
    c.close().await;
}

/// `unregister()` racing `register()` of the same id ends one way or the other, never half:
/// the registration `register` returns says whether its node is there, and the node is there
/// exactly when one of the registrations says so (no ghost a stopped registration keeps, no
/// registration that says it stands on a node that went).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unregister_racing_register_of_the_same_id_ends_one_way_or_the_other() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let raw = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/race").unwrap();
    let (mut stayed, mut went) = (0, 0);
    for round in 0..30 {
        let mut i = instance("s", "r", round);
        let reg = d.register(i.clone()).await.unwrap();
        i.port = Some(1000 + round);
        // On two tasks, so that either may run ahead of the other at any step.
        let gate = Arc::new(tokio::sync::Barrier::new(2));
        let unregistering = {
            let (reg, gate) = (reg.clone(), gate.clone());
            tokio::spawn(async move {
                gate.wait().await;
                reg.unregister().await
            })
        };
        let registering = {
            let (d, i, gate) = (d.clone(), i.clone(), gate.clone());
            tokio::spawn(async move {
                gate.wait().await;
                d.register(i).await
            })
        };
        unregistering.await.unwrap().unwrap();
        let r = registering.await.unwrap().unwrap();
        let exists = raw.exists("/race/s/r").await.unwrap().is_some();
        assert_eq!(
            r.is_registered(),
            exists,
            "round {round}: the registration register returned says {}, the node is {}",
            r.is_registered(),
            if exists { "there" } else { "gone" }
        );
        assert_eq!(
            reg.is_registered() || r.is_registered(),
            exists,
            "round {round}: the node agrees with the registrations"
        );
        if exists {
            stayed += 1;
            let (bytes, _) = raw.get_data("/race/s/r").await.unwrap();
            assert_eq!(
                ServiceInstance::from_json(&bytes).unwrap().port,
                Some(1000 + round),
                "round {round}: the register's instance is the one on the node"
            );
            r.unregister().await.unwrap();
        } else {
            went += 1;
        }
    }
    // Both orders are legitimate; the count of each depends on scheduling.
    assert_eq!(stayed + went, 30);
    c.close().await;
    raw.close().await;
}

/// Closing the discovery closes the caches and providers made on it (Curator's
/// `ServiceDiscovery.close`): a started cache stops, one not started cannot start, and one
/// dropped before is not held on to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_closes_the_caches_and_providers_made_on_the_discovery() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/closing").unwrap();
    let reg = d.register(instance("s", "a", 1)).await.unwrap();
    let cache = ServiceCache::new(&d, "s").unwrap();
    cache.start().await.unwrap();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
    let provider = ServiceProvider::new(&d, "s", ProviderStrategy::RoundRobin).unwrap();
    provider.start().await.unwrap();
    let unstarted = ServiceCache::new(&d, "s").unwrap();
    drop(ServiceCache::new(&d, "other").unwrap());
    let made = reg.instance();
    assert_eq!(provider.get_instance().map(|i| i.id.clone()), Some(made.id));
    let zxid = c.exists("/closing/s/a").await.unwrap().unwrap().czxid;
    d.close().await.unwrap();
    for (what, waited) in [
        ("the cache", cache.await_zxid(zxid, Some(WAIT)).await),
        (
            "the provider's cache",
            provider.cache().await_zxid(zxid, Some(WAIT)).await,
        ),
    ] {
        assert!(
            matches!(waited, Err(Error::Closed(_))),
            "{what} still runs after the discovery closed: {waited:?}"
        );
    }
    let started = unstarted.start().await;
    assert!(
        matches!(started, Err(Error::Closed(_))),
        "a cache made on the discovery started after it closed: {started:?}"
    );
    assert!(matches!(ServiceCache::new(&d, "s"), Err(Error::Closed(_))));
    c.close().await;
}

/// `set_enabled` and `update` from two threads at once: neither undoes the other (a
/// read-modify-write of `set_enabled` wrote back the port an update had just replaced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_enabled_racing_update_loses_neither() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let raw = connect(&server.connect_string()).await;
    let d = ServiceDiscovery::new(&c, "/toggle").unwrap();
    let reg = d.register(instance("s", "t", 0)).await.unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let toggling = {
        let (reg, stop) = (reg.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut on = false;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                reg.set_enabled(on).unwrap();
                on = !on;
            }
            reg.set_enabled(true).unwrap();
        })
    };
    let updating = {
        let reg = reg.clone();
        std::thread::spawn(move || {
            for port in 1..=10_000 {
                let mut next = reg.instance();
                next.port = Some(port);
                reg.update(next).unwrap();
                let now = reg.instance().port;
                assert_eq!(now, Some(port), "an update was undone by set_enabled");
            }
        })
    };
    let updated = updating.join();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    toggling.join().unwrap();
    updated.unwrap();
    let last = reg.instance();
    assert_eq!((last.port, last.enabled), (Some(10_000), true));
    eventually("the node holds the last update", || async {
        let (bytes, _) = raw.get_data("/toggle/s/t").await.unwrap();
        let on_node = ServiceInstance::from_json(&bytes).unwrap();
        (on_node.port, on_node.enabled) == (Some(10_000), true)
    })
    .await;
    d.close().await.unwrap();
    c.close().await;
    raw.close().await;
}
