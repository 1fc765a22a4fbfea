//! Caches against real ZooKeeper servers (started by the harness): issue 16's acceptance
//! scenarios 1, 2, 3, 5 and 6, the views and the options.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zkrecipes::cache::{
    Cache, CacheEvent, CacheEventType, CacheOptions, CuratorCache, NodeCache, PathChildrenCache,
    StartMode, TreeCache,
};
use zkrecipes::client::{
    AddWatchMode, ConnectionState, CreateMode, CreateOptions, DeleteOptions, PersistentWatch,
};
use zkrecipes::{Client, ClientBuilder, RetryPolicy};
use zkrecipes_testing::{FaultProxy, TestingCluster, TestingServer};

const WAIT: Duration = Duration::from_secs(30);

async fn connect(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect")
}

/// Waits (bounded) until `f` returns true.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// (data, czxid, version) by path.
type Tree = BTreeMap<String, (Vec<u8>, i64, i32)>;

/// The server's tree at `root` (read by `c`, one node at a time).
async fn server_tree(c: &Client, root: &str) -> Tree {
    let mut out = Tree::new();
    let mut todo = vec![root.to_string()];
    while let Some(p) = todo.pop() {
        let Ok((data, stat)) = c.get_data(&p).await else {
            continue;
        };
        out.insert(p.clone(), (data, stat.czxid, stat.version));
        if let Ok(children) = c.get_children(&p).await {
            for k in children {
                todo.push(zkrecipes::path::join(&p, &k));
            }
        }
    }
    out
}

fn cache_tree(cache: &Cache) -> Tree {
    cache
        .snapshot()
        .iter()
        .map(|n| {
            let data = n.data.as_deref().unwrap_or_default().to_vec();
            (n.path, (data, n.stat.czxid, n.stat.version))
        })
        .collect()
}

/// Every event a cache's listener heard, in order.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<CacheEvent>>>);

impl Recorder {
    fn on(cache: &Cache) -> Recorder {
        let r = Recorder::default();
        let events = r.0.clone();
        cache.listen(move |e| events.lock().unwrap().push(e.clone()));
        r
    }
    fn events(&self) -> Vec<CacheEvent> {
        self.0.lock().unwrap().clone()
    }
    fn count(&self, kind: CacheEventType) -> usize {
        self.events().iter().filter(|e| e.kind == kind).count()
    }
}

/// Applies `events` to `tree` the way a user rebuilding the cache from its events would; a
/// Created for a present node or a Changed/Deleted for an absent one is a phantom: panics.
fn replay(tree: &mut Tree, events: &[CacheEvent]) {
    for e in events {
        let node = |c: &Option<zkrecipes::cache::ChildData>| {
            let c = c.as_ref().expect("node in event");
            let data = c.data.as_deref().unwrap_or_default().to_vec();
            (data, c.stat.czxid, c.stat.version)
        };
        match e.kind {
            CacheEventType::Created => {
                let old = tree.insert(e.path.clone(), node(&e.new));
                assert!(old.is_none(), "Created for a node already there: {e:?}");
            }
            CacheEventType::Changed => {
                let old = tree.insert(e.path.clone(), node(&e.new));
                assert!(old.is_some(), "Changed for a node not there: {e:?}");
            }
            CacheEventType::Deleted => {
                let old = tree.remove(&e.path);
                assert!(old.is_some(), "Deleted for a node not there: {e:?}");
            }
            CacheEventType::Initialized | CacheEventType::Resynced => {}
        }
    }
}

// ------------------------------------------------------------------------------------------
// Acceptance 1: initialized once, no replay for late listeners (unless asked)
// ------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialized_once_and_late_listeners_get_no_replay() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    c.create("/t/one/two/three", b"3", CreateOptions::default().parents())
        .await
        .unwrap();
    let before = c.request_counts();
    let cache = CuratorCache::new(&c, "/t").unwrap();
    let early = Recorder::on(&cache);
    assert!(
        cache.await_initialized(Some(WAIT)).await.is_err(),
        "not started"
    );
    cache.start().await.unwrap();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
    assert_eq!(cache.size(), 4);
    let paths: Vec<String> = cache.snapshot().iter().map(|n| n.path).collect();
    assert_eq!(
        paths,
        ["/t", "/t/one", "/t/one/two", "/t/one/two/three"],
        "sorted by path"
    );
    assert_eq!(
        cache.get("/t/one/two/three").unwrap().data.as_deref(),
        Some(&b"3"[..])
    );
    eventually("the initial events", || {
        early.count(CacheEventType::Initialized) == 1
    })
    .await;
    let ev = early.events();
    assert_eq!(ev.len(), 5, "{ev:?}");
    assert!(ev[..4]
        .iter()
        .all(|e| e.kind == CacheEventType::Created && !e.resync));
    assert_eq!(ev[4].kind, CacheEventType::Initialized);

    // A late listener hears only what happens next; one that asks gets the snapshot first.
    let late = Recorder::on(&cache);
    let replayed = Recorder::default();
    let r = replayed.0.clone();
    cache.listen_with_replay(move |e| r.lock().unwrap().push(e.clone()));
    let mut stream = cache.events(false);
    let stat = c.set_data("/t/one", b"x", None).await.unwrap();
    assert!(cache.await_zxid(stat.mzxid, Some(WAIT)).await.unwrap());
    assert_eq!(
        cache.get("/t/one").unwrap().data.as_deref(),
        Some(&b"x"[..]),
        "read your writes"
    );
    eventually("the change", || late.events().len() == 1).await;
    let e = &late.events()[0];
    assert_eq!(
        (e.kind, e.path.as_str()),
        (CacheEventType::Changed, "/t/one")
    );
    assert_eq!(e.old.as_ref().unwrap().data.as_deref(), Some(&b""[..]));
    assert_eq!(e.new.as_ref().unwrap().data.as_deref(), Some(&b"x"[..]));
    let got = tokio::time::timeout(WAIT, stream.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.kind, CacheEventType::Changed);
    eventually("the replay and the change", || replayed.events().len() == 6).await;
    let kinds: Vec<CacheEventType> = replayed.events().iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            CacheEventType::Created,
            CacheEventType::Created,
            CacheEventType::Created,
            CacheEventType::Created,
            CacheEventType::Initialized,
            CacheEventType::Changed
        ]
    );
    assert_eq!(early.count(CacheEventType::Initialized), 1, "once");

    // The cache never wrote.
    let after = c.request_counts();
    assert_eq!(after.create, before.create);
    assert_eq!(
        after.set_data,
        before.set_data + 1,
        "only the test's own write"
    );
    assert_eq!(after.delete, before.delete);
    cache.close();
    assert!(cache.await_initialized(None).await.is_err(), "closed");
    c.close().await;
}

/// A missing root is an empty, initialized cache — never created (CURATOR-319) — that fills
/// when the node appears, and empties (Deleted events, children first) when it goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_root_is_never_created_and_fills_later() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let cache = CuratorCache::new(&c, "/later/root").unwrap();
    let rec = Recorder::on(&cache);
    cache.start().await.unwrap();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
    assert_eq!(cache.size(), 0);
    assert_eq!(
        c.exists("/later").await.unwrap(),
        None,
        "a cache never writes"
    );
    c.create("/later/root/a", b"a", CreateOptions::default().parents())
        .await
        .unwrap();
    let s = c
        .create("/later/root/a/b", b"b", CreateOptions::default())
        .await
        .unwrap();
    assert!(cache.await_zxid(s.stat.czxid, Some(WAIT)).await.unwrap());
    assert_eq!(cache.size(), 3);
    let d = DeleteOptions {
        recursive: true,
        ..Default::default()
    };
    c.delete("/later/root", d).await.unwrap();
    eventually("the subtree gone", || cache.size() == 0).await;
    eventually("three deletes", || rec.count(CacheEventType::Deleted) == 3).await;
    let deleted: Vec<String> = rec
        .events()
        .into_iter()
        .filter(|e| e.kind == CacheEventType::Deleted)
        .map(|e| e.path)
        .collect();
    assert_eq!(deleted, ["/later/root/a/b", "/later/root/a", "/later/root"]);
    c.close().await;
}

/// The views and options: NodeCache (one node), PathChildrenCache (one level, start modes),
/// TreeCache (depth), stat-only and a path filter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_and_options_keep_their_scope() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    for p in ["/v/a/x/deep", "/v/b", "/v/skip/y"] {
        c.create(p, p.as_bytes(), CreateOptions::default().parents())
            .await
            .unwrap();
    }
    let node = NodeCache::new(&c, "/v/a").unwrap();
    node.start().await.unwrap();
    assert!(node.await_initialized(Some(WAIT)).await.unwrap());
    assert_eq!(node.size(), 1);
    assert_eq!(node.node().unwrap().path, "/v/a");

    let kids = PathChildrenCache::new(&c, "/v", false, StartMode::BuildInitialCache).unwrap();
    let kid_events = Recorder::on(&kids);
    kids.start().await.unwrap();
    assert!(kids.is_initialized(), "BUILD_INITIAL_CACHE: start waits");
    let names: Vec<String> = kids.current_data().into_iter().map(|n| n.path).collect();
    assert_eq!(names, ["/v/a", "/v/b", "/v/skip"]);
    assert!(kids.get("/v/a").unwrap().data.is_none(), "stats only");
    assert!(kids.get("/v/a").unwrap().stat.czxid > 0);

    let post = PathChildrenCache::new(&c, "/v", true, StartMode::PostInitializedEvent).unwrap();
    let post_events = Recorder::on(&post);
    post.start().await.unwrap();
    eventually("POST_INITIALIZED_EVENT", || {
        post_events.count(CacheEventType::Initialized) == 1
    })
    .await;
    assert_eq!(post_events.count(CacheEventType::Created), 3);

    let tree = TreeCache::new(&c, "/v", Some(2)).unwrap();
    tree.start().await.unwrap();
    assert!(tree.await_initialized(Some(WAIT)).await.unwrap());
    assert!(tree.get("/v/a/x").is_some());
    assert!(tree.get("/v/a/x/deep").is_none(), "below max_depth");
    assert_eq!(tree.size(), 6);

    let filtered = Cache::new(
        &c,
        "/v",
        CacheOptions::default().path_filter(|p| !p.starts_with("/v/skip")),
    )
    .unwrap();
    filtered.start().await.unwrap();
    assert!(filtered.await_initialized(Some(WAIT)).await.unwrap());
    assert!(filtered.get("/v/skip").is_none() && filtered.get("/v/skip/y").is_none());
    assert_eq!(filtered.size(), 5);

    // Changes below the scopes stay out of them.
    c.create("/v/a/x/deep/er", b"", CreateOptions::default())
        .await
        .unwrap();
    c.create("/v/skip/z", b"", CreateOptions::default())
        .await
        .unwrap();
    let s = c.set_data("/v/a", b"new", None).await.unwrap();
    for cache in [&*node, &*kids, &*tree, &filtered] {
        assert!(cache.await_zxid(s.mzxid, Some(WAIT)).await.unwrap());
    }
    assert_eq!(node.node().unwrap().data.as_deref(), Some(&b"new"[..]));
    assert_eq!(node.size(), 1);
    assert_eq!(
        tree.size(),
        7,
        "/v/skip/z is within the depth, /v/a/x/deep/er is not"
    );
    assert!(tree.get("/v/skip/z").is_some());
    assert_eq!(filtered.size(), 6, "with /v/a/x/deep/er");
    assert!(filtered.get("/v/skip/z").is_none(), "filtered out");
    eventually("the child's change", || {
        kid_events.count(CacheEventType::Changed) == 1
    })
    .await;
    assert_eq!(
        kid_events.events().len(),
        1,
        "no initial events in BUILD_INITIAL_CACHE: {:?}",
        kid_events.events()
    );
    assert!(kids.start().await.is_err(), "started twice");
    c.close().await;
}

// ------------------------------------------------------------------------------------------
// Acceptance 2: reconnect consistency (blackhole within the session; session expiry)
// ------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    Blackhole,
    Expiry,
}

async fn reconnect_consistency(fault: Fault) {
    let server = TestingServer::start();
    let writer = connect(&server.connect_string()).await;
    let proxy = FaultProxy::start(&server.connect_string());
    let c = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(8))
        .connect()
        .await
        .unwrap();
    let opts = CreateOptions::default().parents();
    for p in ["/r/sub/a/a1", "/r/sub/b", "/r/chg", "/r/re", "/r/keep"] {
        writer.create(p, b"0", opts).await.unwrap();
    }
    let cache = CuratorCache::new(&c, "/r").unwrap();
    let rec = Recorder::on(&cache);
    cache.start().await.unwrap();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
    assert_eq!(cache_tree(&cache), server_tree(&writer, "/r").await);
    let before = cache_tree(&cache);
    // Listeners are called after the snapshot changed: the initial load's events are all heard
    // once INITIALIZED (their last) is.
    eventually("INITIALIZED heard", || {
        rec.count(CacheEventType::Initialized) == 1
    })
    .await;
    let seen_before = rec.events().len();
    let old_session = c.session_id();

    let mut states = c.state_stream();
    proxy.blackhole();
    // While the cache cannot hear: delete a subtree, change a node, create six deep nodes,
    // delete and recreate a node (version 0 again).
    let d = DeleteOptions {
        recursive: true,
        ..Default::default()
    };
    writer.delete("/r/sub", d).await.unwrap();
    writer.set_data("/r/chg", b"changed", None).await.unwrap();
    writer
        .create("/r/d1/d2/d3/d4/d5/d6", b"deep", opts)
        .await
        .unwrap();
    writer
        .delete("/r/re", DeleteOptions::default())
        .await
        .unwrap();
    writer.create("/r/re", b"0", opts).await.unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let s = tokio::time::timeout_at(deadline.into(), states.next())
            .await
            .expect("SUSPENDED");
        if s == Some(ConnectionState::Suspended) {
            break;
        }
    }
    if fault == Fault::Expiry {
        let (id, pw) = c.session_credentials().unwrap();
        let servers = server.connect_string();
        tokio::task::spawn_blocking(move || {
            zkrecipes_testing::expire_session_id(&servers, id, &pw)
        })
        .await
        .unwrap();
    }
    proxy.restore();
    eventually("the resync", || cache.resyncs() >= 1).await;
    if fault == Fault::Expiry {
        assert_ne!(c.session_id(), old_session, "a new session");
    } else {
        assert_eq!(c.session_id(), old_session, "within the session");
    }
    let server_now = server_tree(&writer, "/r").await;
    assert_eq!(
        cache_tree(&cache),
        server_now,
        "the cache equals the server"
    );

    // The events describe exactly the difference, flagged resync, then RESYNCED (listeners
    // are called after the snapshot changed: wait until RESYNCED itself has been heard).
    eventually("RESYNCED heard", || {
        rec.count(CacheEventType::Resynced) >= 1
    })
    .await;
    let after: Vec<CacheEvent> = rec.events()[seen_before..].to_vec();
    let mut rebuilt = before.clone();
    replay(&mut rebuilt, &after);
    assert_eq!(rebuilt, server_now, "the events rebuild the server's tree");
    let diff: Vec<(CacheEventType, &str)> = after
        .iter()
        .map(|e| (e.kind, e.path.as_str()))
        .filter(|(k, _)| *k != CacheEventType::Resynced)
        .collect();
    let mut sorted = diff.clone();
    sorted.sort();
    let mut expected = vec![
        (CacheEventType::Deleted, "/r/sub/a/a1"),
        (CacheEventType::Deleted, "/r/sub/a"),
        (CacheEventType::Deleted, "/r/sub/b"),
        (CacheEventType::Deleted, "/r/sub"),
        (CacheEventType::Changed, "/r/chg"),
        (CacheEventType::Deleted, "/r/re"),
        (CacheEventType::Created, "/r/re"),
    ];
    for p in [
        "/r/d1",
        "/r/d1/d2",
        "/r/d1/d2/d3",
        "/r/d1/d2/d3/d4",
        "/r/d1/d2/d3/d4/d5",
        "/r/d1/d2/d3/d4/d5/d6",
    ] {
        expected.push((CacheEventType::Created, p));
    }
    expected.sort();
    assert_eq!(sorted, expected, "exactly the missed changes: {diff:?}");
    let re: Vec<CacheEventType> = diff
        .iter()
        .filter(|(_, p)| *p == "/r/re")
        .map(|(k, _)| *k)
        .collect();
    assert_eq!(re, [CacheEventType::Deleted, CacheEventType::Created]);
    assert!(
        after[..after.len() - 1].iter().all(|e| e.resync),
        "{after:?}"
    );
    assert_eq!(after.last().unwrap().kind, CacheEventType::Resynced);
    assert_eq!(rec.count(CacheEventType::Initialized), 1);

    // And it hears live changes again.
    let s = writer.set_data("/r/keep", b"live", None).await.unwrap();
    assert!(cache.await_zxid(s.mzxid, Some(WAIT)).await.unwrap());
    assert_eq!(
        cache.get("/r/keep").unwrap().data.as_deref(),
        Some(&b"live"[..])
    );
    // Listeners are called after the snapshot changed: wait for the event itself.
    eventually("the live change's event", || {
        rec.events()
            .last()
            .is_some_and(|e| e.path == "/r/keep" && e.kind == CacheEventType::Changed)
    })
    .await;
    let last = rec.events().last().cloned().unwrap();
    assert!(!last.resync, "{last:?}");
    c.close().await;
    writer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_after_a_blackhole_within_the_session_emits_exactly_the_missed_changes() {
    reconnect_consistency(Fault::Blackhole).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_after_a_session_expiry_emits_exactly_the_missed_changes() {
    reconnect_consistency(Fault::Expiry).await;
}

// ------------------------------------------------------------------------------------------
// Acceptance 3: the server the cache is connected to dies (3-server ensemble)
// ------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_survives_the_loss_of_its_server() {
    let cluster = TestingCluster::start(3);
    let writer = connect(&cluster.connect_string()).await;
    let c = connect(&cluster.connect_string()).await;
    for i in 0..20 {
        writer
            .create(
                &format!("/ha/n{i}"),
                b"x",
                CreateOptions::default().parents(),
            )
            .await
            .unwrap();
    }
    let cache = CuratorCache::new(&c, "/ha").unwrap();
    let rec = Recorder::on(&cache);
    cache.start().await.unwrap();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
    assert_eq!(cache.size(), 21);
    let needle = format!("sid=0x{:x}", c.session_id() as u64);
    let i = (0..3)
        .find(|&i| cluster.server(i).four_letter("cons").contains(&needle))
        .expect("the cache's server");
    cluster.server(i).kill();
    assert_eq!(cache.size(), 21, "keeps its nodes");
    eventually("the resync on another server", || cache.resyncs() >= 1).await;
    assert_eq!(cache.size(), 21);
    let s = writer
        .create("/ha/after", b"new", CreateOptions::default())
        .await
        .unwrap();
    assert!(cache.await_zxid(s.stat.czxid, Some(WAIT)).await.unwrap());
    assert_eq!(
        cache.get("/ha/after").unwrap().data.as_deref(),
        Some(&b"new"[..])
    );
    assert_eq!(cache_tree(&cache), server_tree(&writer, "/ha").await);
    eventually("the new node's event", || {
        rec.events().last().is_some_and(|e| e.path == "/ha/after")
    })
    .await;
    let live = rec.events().last().cloned().unwrap();
    assert_eq!((live.kind, live.resync), (CacheEventType::Created, false));
    c.close().await;
    writer.close().await;
}

// ------------------------------------------------------------------------------------------
// Acceptance 5: 100 threads x 100 operations → Σcreated − Σdeleted = final size
// ------------------------------------------------------------------------------------------

#[test]
fn event_counts_add_up_under_100_threads() {
    use std::sync::atomic::{AtomicI64, Ordering};
    let server = TestingServer::start();
    let clients: Vec<Client> = (0..4)
        .map(|_| zkrecipes::runtime::block_on(connect(&server.connect_string())))
        .collect();
    clients[0]
        .create_blocking("/ev", b"", CreateOptions::default())
        .unwrap();
    let watcher = zkrecipes::runtime::block_on(connect(&server.connect_string()));
    let cache = CuratorCache::new(&watcher, "/ev").unwrap();
    let net = Arc::new(AtomicI64::new(0));
    let n = net.clone();
    cache.listen(move |e| match e.kind {
        CacheEventType::Created => {
            n.fetch_add(1, Ordering::SeqCst);
        }
        CacheEventType::Deleted => {
            n.fetch_sub(1, Ordering::SeqCst);
        }
        _ => {}
    });
    cache.start_blocking().unwrap();
    assert!(cache.await_initialized_blocking(Some(WAIT)).unwrap());
    let threads: Vec<_> = (0..100)
        .map(|t| {
            let c = clients[t % clients.len()].clone();
            std::thread::spawn(move || {
                let mut rng = fastrand::Rng::with_seed(t as u64);
                for _ in 0..100 {
                    let p = format!("/ev/n{}", rng.u32(0..64));
                    match rng.u32(0..3) {
                        0 => drop(c.create_blocking(&p, b"", CreateOptions::default())),
                        1 => drop(c.set_data_blocking(&p, b"s", None)),
                        _ => drop(c.delete_blocking(&p, DeleteOptions::default())),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let last = clients[0].set_data_blocking("/ev", b"end", None).unwrap();
    assert!(cache.await_zxid_blocking(last.mzxid, Some(WAIT)).unwrap());
    let children = clients[0].get_children_blocking("/ev").unwrap().len();
    assert_eq!(cache.size(), children + 1, "the cache equals the server");
    let deadline = Instant::now() + WAIT;
    while net.load(Ordering::SeqCst) != cache.size() as i64 {
        assert!(
            Instant::now() < deadline,
            "Σcreated − Σdeleted never matched"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(net.load(Ordering::SeqCst), (children + 1) as i64);
    for c in clients {
        c.close_blocking();
    }
    watcher.close_blocking();
}

// ------------------------------------------------------------------------------------------
// Acceptance 6: 65,540 children load and initialize
// ------------------------------------------------------------------------------------------

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_five_thousand_children_load_and_initialize() {
    const N: usize = 65_540;
    let server = TestingServer::start();
    let c = ClientBuilder::new(server.connect_string())
        .session_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    c.create("/big", b"", CreateOptions::default())
        .await
        .unwrap();
    let mut i = 0;
    while i < N {
        let mut tx = c.transaction();
        for j in i..(i + 1000).min(N) {
            tx = tx.create(
                &format!("/big/child-{j:06}"),
                b"0123456789",
                CreateMode::Persistent,
            );
        }
        tx.commit().await.unwrap();
        i += 1000;
    }
    let watcher = ClientBuilder::new(server.connect_string())
        .session_timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    let rss0 = rss_bytes();
    let before = watcher.request_counts();
    let started = Instant::now();
    let cache = CuratorCache::new(&watcher, "/big").unwrap();
    cache.start().await.unwrap();
    assert!(cache
        .await_initialized(Some(Duration::from_secs(120)))
        .await
        .unwrap());
    let took = started.elapsed();
    assert_eq!(cache.size(), N + 1);
    let rss1 = rss_bytes();
    let reads = watcher.request_counts().get_data - before.get_data;
    println!(
        "65,540 children: loaded in {:.2} s ({} getData), RSS +{:.1} MB, ~{} bytes per node",
        took.as_secs_f64(),
        reads,
        (rss1.saturating_sub(rss0)) as f64 / 1e6,
        rss1.saturating_sub(rss0) / (N as u64 + 1)
    );
    assert_eq!(reads as usize, N + 1, "one read per node");
    let listings = watcher.request_counts().get_children - before.get_children;
    assert_eq!(listings, 1, "only a node with children is listed");
    watcher.close().await;
    c.close().await;
}

/// Read-your-writes across a disconnect: `await_zxid` asked right after the connection comes
/// back (before the resync walk has run) returns only once the walk has brought the snapshot up
/// to date. Before the fix a fence could be answered between the disconnect and the walk, or
/// in the middle of the walk, and the snapshot still held a deleted node (a flaky Python test
/// found it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn await_zxid_right_after_a_reconnect_waits_for_the_resync() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = connect(&proxy.connect_string()).await;
    let writer = connect(&server.connect_string()).await;
    let plain = CreateOptions::new(CreateMode::Persistent);
    writer.create("/rw", b"", plain).await.unwrap();
    for i in 0..20 {
        writer
            .create(&format!("/rw/keep{i}"), b"", plain)
            .await
            .unwrap();
    }
    writer.create("/rw/gone", b"", plain).await.unwrap();
    let cache = Cache::new(&c, "/rw", CacheOptions::default()).unwrap();
    cache.start().await.unwrap();
    assert!(cache
        .await_initialized(Some(Duration::from_secs(20)))
        .await
        .unwrap());
    for round in 0..3 {
        proxy.blackhole();
        c.wait_for_state(Duration::from_secs(20), |s| !s.is_connected())
            .await
            .unwrap();
        writer
            .delete("/rw/gone", DeleteOptions::default())
            .await
            .unwrap();
        let made = writer
            .create(&format!("/rw/new{round}"), b"", plain)
            .await
            .unwrap();
        proxy.restore();
        assert!(cache
            .await_zxid(made.stat.czxid, Some(Duration::from_secs(30)))
            .await
            .unwrap());
        assert!(
            cache.get("/rw/gone").is_none(),
            "round {round}: a deleted node"
        );
        assert!(
            cache.get(&format!("/rw/new{round}")).is_some(),
            "round {round}"
        );
        writer.create("/rw/gone", b"", plain).await.unwrap();
        let back = writer.exists("/rw/gone").await.unwrap().unwrap();
        assert!(cache
            .await_zxid(back.czxid, Some(Duration::from_secs(30)))
            .await
            .unwrap());
        assert!(cache.get("/rw/gone").is_some());
    }
    cache.close();
    c.close().await;
    writer.close().await;
}

/// An event stream made after `close` ends (after its replay) instead of waiting forever, and
/// a listener added then is not kept: the closed cache will never call it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_made_after_close_ends() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    c.create("/after-close/a", b"x", CreateOptions::default().parents())
        .await
        .unwrap();
    let cache = CuratorCache::new(&c, "/after-close").unwrap();
    cache.start().await.unwrap();
    assert!(cache
        .await_initialized(Some(Duration::from_secs(10)))
        .await
        .unwrap());
    cache.close();
    let mut plain = cache.events(false);
    let next = tokio::time::timeout(Duration::from_secs(10), plain.next())
        .await
        .expect("a stream made after close ends");
    assert!(next.is_none(), "{next:?}");
    let mut replayed = cache.events(true);
    let mut kinds = Vec::new();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(10), replayed.next())
        .await
        .expect("a replayed stream made after close ends")
    {
        kinds.push((e.kind, e.path));
    }
    assert!(
        kinds.contains(&(CacheEventType::Created, "/after-close/a".to_string())),
        "the replay comes first: {kinds:?}"
    );
    let id = cache.listen(|_| {});
    assert!(
        !cache.remove_listener(id).unwrap(),
        "a listener kept by a closed cache"
    );
    c.close().await;
}

// ------------------------------------------------------------------------------------------
// Read-your-writes (`await_zxid`) against the watch's pump and failed reads
// ------------------------------------------------------------------------------------------

/// How long a set of a shared watch that failed with the connection waits before it tries
/// again, for the clients below (their retry policy's sleep).
const PUMP_HELD: Duration = Duration::from_secs(10);

/// A client through `proxy` whose retries wait [`PUMP_HELD`]: the pump of a shared watch
/// whose set fails with the connection waits that long before it sets the watch again, and
/// reads nothing from the watch meanwhile (what the wire client receives for it waits there,
/// DISCONNECTED included).
async fn slow_retry_client(proxy: &FaultProxy) -> Client {
    ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(10))
        .retry_policy(RetryPolicy::NTimes {
            n: 3,
            sleep: PUMP_HELD,
        })
        .connect()
        .await
        .expect("connect")
}

/// A recursive consumer joins `c`'s plain shared watch on `path` (a NodeCache's): the path's
/// pump sets a wider watch. Returns once its `addWatch` is sent, with the join running.
async fn widen(
    c: &Client,
    path: &str,
) -> tokio::task::JoinHandle<zkrecipes::Result<PersistentWatch>> {
    let before = c.request_counts().add_watch;
    let joiner = tokio::spawn({
        let (c, path) = (c.clone(), path.to_string());
        async move { c.add_watch(&path, AddWatchMode::PersistentRecursive).await }
    });
    eventually("the wider watch's addWatch sent", || {
        c.request_counts().add_watch > before
    })
    .await;
    joiner
}

/// Read-your-writes while the path's pump has not handed an event on: the wire client has
/// the change's event, the pump (the task that hands the watch's events to its consumers) has
/// not given it to the cache yet, and `await_zxid` still returns true only with the change in
/// the cache. Here the pump is held in a set (a wider watch whose `addWatch` failed with the
/// connection, retried after 10 s), so it reads nothing from the watch: the engine's fence
/// (sync, exists) used to be answered at once, with the old value in the cache; it now goes
/// through the pump, after what the watch holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn await_zxid_waits_for_an_event_the_pump_has_not_handed_on() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = slow_retry_client(&proxy).await;
    let writer = connect(&server.connect_string()).await;
    let plain = CreateOptions::new(CreateMode::Persistent);
    writer.create("/held", b"v1", plain).await.unwrap();
    let node = NodeCache::new(&c, "/held").unwrap();
    node.start().await.unwrap();
    assert!(node.await_initialized(Some(WAIT)).await.unwrap());
    // The widening's addWatch goes into the blackhole and fails when the connection times
    // out: the pump waits out the retry sleep before it sets the watch again.
    proxy.blackhole();
    let joiner = widen(&c, "/held").await;
    c.wait_for_state(WAIT, |s| !s.is_connected()).await.unwrap();
    proxy.restore();
    c.wait_for_state(WAIT, |s| s.is_connected()).await.unwrap();
    let stat = writer.set_data("/held", b"v2", None).await.unwrap();
    assert!(
        !joiner.is_finished(),
        "the pump is still held: the scenario is set up"
    );
    assert!(node
        .await_zxid(stat.mzxid, Some(PUMP_HELD + WAIT))
        .await
        .unwrap());
    assert_eq!(
        node.node().and_then(|d| d.data).as_deref(),
        Some(&b"v2"[..]),
        "await_zxid returned true without the change"
    );
    let _wide = joiner.await.unwrap().unwrap();
    node.close();
    c.close().await;
    writer.close().await;
}

/// Read-your-writes when reads ahead of the fence fail: a read that fails with the
/// connection is queued again, and a fence that was queued behind it must not be answered
/// before it. 4,000 nodes of a cache change once each (one read each, 1,024 in flight at
/// most) with replies delayed 2 s, so `await_zxid`'s fence is queued behind reads not sent
/// yet; once all are sent, the connection is lost under the last ones (a blackhole). The
/// pump is held in a set meanwhile (a one-shot watch on the root makes the client set the
/// shared watch again, ZOOKEEPER-4466; that `addWatch` is lost with the connection too and
/// retried after 10 s), so the cache hears of the outage only from the failed reads, as it
/// does of a read the server throttled. The failed reads used to go to the back of the
/// queue, behind the fence, which was then answered: `await_zxid` returned true with those
/// nodes' old data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn await_zxid_waits_for_reads_that_failed_ahead_of_it() {
    const NODES: u64 = 4000;
    const PER_TRANSACTION: u64 = 500;
    /// The engine's reads in flight at most (`IN_FLIGHT` in the engine).
    const IN_FLIGHT: u64 = 1024;
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = slow_retry_client(&proxy).await;
    let writer = connect(&server.connect_string()).await;
    let plain = CreateOptions::new(CreateMode::Persistent);
    writer.create("/busy", b"", plain).await.unwrap();
    let name = |n: u64| format!("/busy/n{n:04}");
    let write_all = |old: bool| {
        let writer = &writer;
        async move {
            for t in 0..NODES / PER_TRANSACTION {
                let mut tx = writer.transaction();
                for n in t * PER_TRANSACTION..(t + 1) * PER_TRANSACTION {
                    tx = if old {
                        tx.create(&name(n), b"old", CreateMode::Persistent)
                    } else {
                        tx.set_data(&name(n), b"new", None)
                    };
                }
                tx.commit().await.unwrap();
            }
        }
    };
    write_all(true).await;
    let cache = Arc::new(CuratorCache::new(&c, "/busy").unwrap());
    cache.start().await.unwrap();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
    assert_eq!(cache.size() as u64, NODES + 1);
    // Every event and every reply from now on reaches the client 2 s late.
    proxy.delay_replies(Duration::from_secs(2));
    let reads_before = c.request_counts().get_data;
    write_all(false).await;
    let last = writer.exists(&name(NODES - 1)).await.unwrap().unwrap();
    let fence = tokio::spawn({
        let cache = cache.clone();
        async move {
            cache
                .await_zxid(last.mzxid, Some(PUMP_HELD + WAIT + WAIT))
                .await
        }
    });
    // The event reads go out as replies come back, 1,024 in flight: about 1,024 every 2 s. The
    // fence (its sync and its exists each answered 2 s late) is queued behind reads not sent
    // yet. Once all but the last 1,024 are sent, a one-shot watch on the root: its reply comes
    // 2 s later with those that let the last reads go, and the pump then sets its watch again.
    // Every read, the fence and the addWatch are then in flight, their replies 2 s away.
    eventually("all but the last reads sent", || {
        c.request_counts().get_data >= reads_before + NODES - IN_FLIGHT
    })
    .await;
    let add_watch_before = c.request_counts().add_watch;
    let (_, _oneshot) = c.exists_watch("/busy").await.unwrap();
    eventually("every read and the addWatch sent", || {
        let n = c.request_counts();
        n.get_data >= reads_before + NODES && n.add_watch > add_watch_before
    })
    .await;
    proxy.blackhole();
    c.wait_for_state(WAIT, |s| !s.is_connected()).await.unwrap();
    proxy.restore();
    assert!(fence.await.unwrap().unwrap(), "await_zxid timed out");
    let stale: Vec<String> = cache
        .snapshot()
        .iter()
        .filter(|d| d.path != "/busy" && d.data.as_deref() != Some(&b"new"[..]))
        .map(|d| d.path)
        .collect();
    assert!(
        stale.is_empty(),
        "await_zxid returned true without {} of the changes (the first: {:?})",
        stale.len(),
        stale.first()
    );
    cache.close();
    c.close().await;
    writer.close().await;
}

/// A tree of `n` children `k0..` under `root` (made by `writer`).
async fn tree_of(writer: &Client, root: &str, n: usize) {
    let plain = CreateOptions::new(CreateMode::Persistent);
    writer.create(root, b"", plain).await.unwrap();
    for i in 0..n {
        writer
            .create(&format!("{root}/k{i}"), b"", plain)
            .await
            .unwrap();
    }
}

/// A listing lost with the connection during the initial load is listed again. The load
/// reads `/t` (stored), then lists its children; here that listing's reply is held by the
/// proxy when the connection is cut. The walk after the reconnect read `/t` again, found it
/// at the pzxid it had stored and took the cached children (none) for the listing: the cache
/// said it was initialized with `/t` alone, and its ten children never came (no event would
/// ever bring them, since none of them changed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_lost_with_the_connection_during_the_load_is_listed_again() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let writer = connect(&server.connect_string()).await;
    tree_of(&writer, "/lost", 10).await;
    let c = connect(&proxy.connect_string()).await;
    proxy.delay_replies(Duration::from_secs(3));
    let cache = CuratorCache::new(&c, "/lost").unwrap();
    cache.start().await.unwrap();
    // The root's read is applied: its listing is in flight, its reply held 3 s.
    eventually("the root read", || cache.get("/lost").is_some()).await;
    assert_eq!(cache.size(), 1, "the listing's reply is still held");
    proxy.cut();
    proxy.restore();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
    assert_eq!(
        cache.size(),
        11,
        "initialized without the children: {:?}",
        cache.snapshot().iter().map(|d| d.path).collect::<Vec<_>>()
    );
    cache.close();
    c.close().await;
    writer.close().await;
}

/// A node read for a watch event during the load does not stand for its listing. `/b/a`
/// changes right after the load starts (every reply held 300 ms): the event's read of `/b/a`
/// comes back before the walk's own, and stored `/b/a` with its pzxid; the walk's read then
/// found the same pzxid and took the cached children (none) for `/b/a`'s: its three children
/// were never loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_read_for_an_event_during_the_load_is_still_listed() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let writer = connect(&server.connect_string()).await;
    let plain = CreateOptions::new(CreateMode::Persistent);
    writer.create("/b", b"", plain).await.unwrap();
    tree_of(&writer, "/b/a", 3).await;
    let c = connect(&proxy.connect_string()).await;
    proxy.delay_replies(Duration::from_millis(300));
    let cache = CuratorCache::new(&c, "/b").unwrap();
    cache.start().await.unwrap();
    let stat = writer.set_data("/b/a", b"changed", None).await.unwrap();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
    assert!(cache.await_zxid(stat.mzxid, Some(WAIT)).await.unwrap());
    let paths: Vec<String> = cache.snapshot().iter().map(|d| d.path).collect();
    assert_eq!(
        paths,
        ["/b", "/b/a", "/b/a/k0", "/b/a/k1", "/b/a/k2"],
        "the load left out /b/a's children"
    );
    cache.close();
    c.close().await;
    writer.close().await;
}

/// Without initial events, the initial load tells nothing, its removals included. The load
/// stored `/q/a` (quietly), the connection was cut while `/q/a`'s listing was in flight, and
/// `/q/a` was deleted meanwhile: the walk after the reconnect removed it with a Deleted event
/// for a node the listener never heard of (Curator's BUILD_INITIAL_CACHE tells nothing of the
/// load).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_initial_events_the_load_tells_no_removal() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let writer = connect(&server.connect_string()).await;
    let plain = CreateOptions::new(CreateMode::Persistent);
    writer.create("/q", b"", plain).await.unwrap();
    tree_of(&writer, "/q/a", 2).await;
    writer.create("/q/b", b"", plain).await.unwrap();
    let c = connect(&proxy.connect_string()).await;
    proxy.delay_replies(Duration::from_secs(3));
    let opts = CacheOptions {
        initial_events: false,
        ..CacheOptions::default()
    };
    let cache = Cache::new(&c, "/q", opts).unwrap();
    let heard = Recorder::on(&cache);
    cache.start().await.unwrap();
    eventually("/q/a read", || cache.get("/q/a").is_some()).await;
    proxy.cut();
    writer
        .delete(
            "/q/a",
            DeleteOptions {
                recursive: true,
                ..DeleteOptions::default()
            },
        )
        .await
        .unwrap();
    proxy.restore();
    assert!(cache.await_initialized(Some(WAIT)).await.unwrap());
    eventually("the Initialized event", || {
        heard.count(CacheEventType::Initialized) == 1
    })
    .await;
    assert!(cache.get("/q/a").is_none());
    assert!(cache.get("/q/b").is_some());
    let kinds: Vec<(CacheEventType, String)> = heard
        .events()
        .into_iter()
        .map(|e| (e.kind, e.path))
        .collect();
    assert_eq!(
        kinds,
        [(CacheEventType::Initialized, "/q".to_string())],
        "the quiet load told something"
    );
    cache.close();
    c.close().await;
    writer.close().await;
}
