//! Watches against real ZooKeeper servers (started by the harness): one shared persistent
//! watch per path in a client (NodeCache, TreeCache, watchers and `add_watch` handles on one
//! path), and `Client::remove_watches` (one-shot and persistent kinds, `local`, and what
//! ZooKeeper 3.8 lacks: ZOOKEEPER-4472/4471).

use std::time::{Duration, Instant};

use zkrecipes::cache::{NodeCache, TreeCache};
use zkrecipes::client::{
    AddWatchMode, ConnectionState, CreateOptions, NodeEventKind, PersistentWatch,
    PersistentWatcher, WatchEvent, WatchEventStream,
};
use zkrecipes::{Client, ClientBuilder, Error, RetryPolicy, WatcherType};
use zkrecipes_testing::{FaultProxy, TestingServer};

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

/// Whether the server has a data watch (one-shot or persistent) of `c`'s session on `path`:
/// `wchp` lists the watched paths, each followed by its sessions, from the server itself.
fn server_watches(server: &TestingServer, path: &str, c: &Client) -> bool {
    let session = format!("{:#x}", c.session_id());
    let wchp = server.four_letter("wchp");
    let mut lines = wchp.lines().peekable();
    let mut found = false;
    while let Some(l) = lines.next() {
        if l.trim() == path {
            while let Some(s) = lines.next_if(|l| l.starts_with(char::is_whitespace)) {
                found |= s.trim() == session;
            }
        }
    }
    found
}

/// "KIND path" of an event (`-` for no path).
fn show(e: &WatchEvent) -> String {
    format!("{} {}", e.name(), e.path().unwrap_or("-"))
}

/// The next node event of a handle, skipping connection events (DISCONNECTED, RECONNECTED,
/// SESSION_LOST).
async fn next_node(w: &mut PersistentWatch, what: &str) -> String {
    loop {
        let e = tokio::time::timeout(WAIT, w.next())
            .await
            .unwrap_or_else(|_| panic!("{what}: no event in time"))
            .unwrap_or_else(|| panic!("{what}: ended"));
        if let WatchEvent::Node(_) = e {
            return show(&e);
        }
    }
}

async fn next_node_of_stream(s: &mut WatchEventStream, what: &str) -> String {
    loop {
        let e = s
            .next_timeout(WAIT)
            .await
            .unwrap_or_else(|_| panic!("{what}: no event in time"))
            .unwrap_or_else(|| panic!("{what}: ended"));
        if let WatchEvent::Node(_) = e {
            return show(&e);
        }
    }
}

/// The next connection event of a handle (node events before it are returned too, in order).
async fn until(w: &mut PersistentWatch, name: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let e = tokio::time::timeout(WAIT, w.next())
            .await
            .unwrap_or_else(|_| panic!("no {name} in time; saw {seen:?}"))
            .unwrap_or_else(|| panic!("ended before {name}; saw {seen:?}"));
        seen.push(show(&e));
        if e.name() == name {
            return seen;
        }
    }
}

/// Writes through `writer` and checks that every consumer on `/sh` sees them: the node cache
/// the root's data, the tree cache a deep node, the plain handle the root's data change and
/// its child set change (nothing deeper), the recursive watcher every change.
struct Round<'a> {
    writer: &'a Client,
    n: u32,
}

impl Round<'_> {
    async fn run(
        &mut self,
        node: &NodeCache,
        tree: Option<&TreeCache>,
        plain: &mut PersistentWatch,
        recursive: Option<&mut WatchEventStream>,
    ) {
        self.n += 1;
        let n = self.n;
        let w = self.writer;
        let data = format!("v{n}");
        w.set_data("/sh", data.as_bytes(), None).await.unwrap();
        let child = format!("/sh/c{n}");
        w.create(&child, b"", CreateOptions::default())
            .await
            .unwrap();
        let deep = format!("/sh/a/d{n}");
        let last = w
            .create(&deep, data.as_bytes(), CreateOptions::default())
            .await
            .unwrap();
        let zxid = last.stat.czxid;
        assert!(node.await_zxid(zxid, Some(WAIT)).await.unwrap());
        assert_eq!(
            node.node().and_then(|d| d.data).as_deref(),
            Some(data.as_bytes()),
            "round {n}: the node cache has the root's data"
        );
        if let Some(tree) = tree {
            assert!(tree.await_zxid(zxid, Some(WAIT)).await.unwrap());
            assert_eq!(
                tree.get(&deep).and_then(|d| d.data).as_deref(),
                Some(data.as_bytes()),
                "round {n}: the tree cache has the deep node"
            );
            assert!(tree.get(&child).is_some());
        }
        if let Some(rec) = recursive {
            for want in [
                "DATA_CHANGED /sh".to_string(),
                format!("CREATED {child}"),
                format!("CREATED {deep}"),
            ] {
                assert_eq!(next_node_of_stream(rec, "recursive watcher").await, want);
            }
        }
        assert_eq!(next_node(plain, "plain handle").await, "DATA_CHANGED /sh");
        assert_eq!(
            next_node(plain, "plain handle").await,
            "CHILDREN_CHANGED /sh"
        );
    }
}

/// Issue 32 (task D.2): a NodeCache (a plain persistent watch), a TreeCache and a recursive
/// PersistentWatcher (recursive) and a plain `add_watch` handle on one path of one client all
/// hear their events through one watch on the server: two `addWatch` requests in all (plain,
/// then widened to recursive when the tree cache joined), none for the later consumers.
/// Closing some leaves the others working; so do a reconnect within the session and a session
/// expiry (one `addWatch` more: set again once on the new session, for everyone); the watch
/// goes from the server with its last consumer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_cache_tree_cache_and_watchers_share_one_watch_on_a_path() {
    let server = TestingServer::start();
    let c = ClientBuilder::new(server.connect_string())
        .session_timeout(zkrecipes_testing::OUTLIVES_A_RESTART)
        .connect()
        .await
        .unwrap();
    let writer = connect(&server.connect_string()).await;
    c.create("/sh/a", b"", CreateOptions::default().parents())
        .await
        .unwrap();
    let before = c.request_counts().add_watch;

    let node = NodeCache::new(&c, "/sh").unwrap();
    node.start().await.unwrap();
    let mut plain = c.add_watch("/sh", AddWatchMode::Persistent).await.unwrap();
    assert_eq!(c.request_counts().add_watch - before, 1, "one plain watch");
    let tree = TreeCache::new(&c, "/sh", None).unwrap();
    tree.start().await.unwrap();
    let watcher = PersistentWatcher::new(&c, "/sh", true).unwrap();
    let mut rec = watcher.events();
    watcher.start().await.unwrap();
    assert!(node.await_initialized(Some(WAIT)).await.unwrap());
    assert!(tree.await_initialized(Some(WAIT)).await.unwrap());
    assert_eq!(
        c.request_counts().add_watch - before,
        2,
        "widened once to recursive; the watcher joined it"
    );

    let mut round = Round {
        writer: &writer,
        n: 0,
    };
    round
        .run(&node, Some(&tree), &mut plain, Some(&mut rec))
        .await;
    // The plain handle heard nothing below its node's children: by the time the recursive
    // watcher heard the deep node's creation, the plain handle's share of it was queued.
    assert!(
        tokio::time::timeout(Duration::ZERO, plain.next())
            .await
            .is_err(),
        "the plain handle heard nothing deeper"
    );

    // A reconnect within the session: every consumer hears it and keeps working.
    server.restart();
    let seen = until(&mut plain, "RECONNECTED").await;
    assert!(seen.contains(&"DISCONNECTED -".to_string()), "{seen:?}");
    round
        .run(&node, Some(&tree), &mut plain, Some(&mut rec))
        .await;

    // A new session: the watch is set again once, for everyone.
    let counted = c.request_counts().add_watch;
    zkrecipes_testing::expire_client_session(&c).await.unwrap();
    let seen = until(&mut plain, "SESSION_LOST").await;
    assert!(!seen.is_empty());
    until(&mut plain, "RECONNECTED").await;
    round
        .run(&node, Some(&tree), &mut plain, Some(&mut rec))
        .await;
    assert_eq!(
        c.request_counts().add_watch - counted,
        1,
        "set again once on the new session"
    );

    // Closing the tree cache and the recursive watcher leaves the others working.
    tree.close();
    watcher.close();
    round.run(&node, None, &mut plain, None).await;

    // A new tree cache joins the live watch (no request) and works.
    let counted = c.request_counts().add_watch;
    let tree2 = TreeCache::new(&c, "/sh", None).unwrap();
    tree2.start().await.unwrap();
    assert!(tree2.await_initialized(Some(WAIT)).await.unwrap());
    assert_eq!(c.request_counts().add_watch, counted, "joined, not set");
    round.run(&node, Some(&tree2), &mut plain, None).await;

    // The last consumer's leaving removes the watch from the server.
    let watched = || server_watches(&server, "/sh", &c);
    assert!(watched(), "the server has our watch on /sh");
    tree2.close();
    node.close();
    drop(plain);
    eventually("the server no longer has our watch on /sh", || !watched()).await;
    c.close().await;
    writer.close().await;
}

/// `remove_watches` of one-shot kinds: `Data` removes the data and exists watches on the path
/// (they hear WATCH_REMOVED) and not the child watch, which still fires; the server no longer
/// has them (`wchp`); nothing of that kind left is `NoWatcher`; `local = false` with the server
/// unreachable fails and removes nothing, `local = true` removes anyway. Bad input and a
/// closed client are typed errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_watches_removes_one_shot_watches_by_kind() {
    let server = TestingServer::start();
    let c = ClientBuilder::new(server.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(Duration::from_secs(2))
        .retry_policy(RetryPolicy::NTimes {
            n: 1,
            sleep: Duration::from_millis(100),
        })
        .connect()
        .await
        .unwrap();
    let writer = connect(&server.connect_string()).await;
    c.create("/ow/n", b"", CreateOptions::default().parents())
        .await
        .unwrap();
    let (_, _, data_watch) = c.get_data_watch("/ow/n").await.unwrap();
    let (_, exists_watch) = c.exists_watch("/ow/n").await.unwrap();
    let (_, child_watch) = c.get_children_watch("/ow/n").await.unwrap();
    let data = tokio::spawn(data_watch.changed());
    let exists = tokio::spawn(exists_watch.changed());
    let child = tokio::spawn(child_watch.changed());

    let err = c
        .remove_watches("/ow/n", WatcherType::Persistent, false)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoWatcher(_)), "{err}");
    assert_eq!(c.request_counts().remove_watches, 0, "checked here first");

    c.remove_watches("/ow/n", WatcherType::Data, false)
        .await
        .unwrap();
    assert_eq!(c.request_counts().remove_watches, 1);
    for (what, h) in [("data", data), ("exists", exists)] {
        let e = tokio::time::timeout(WAIT, h).await.unwrap().unwrap();
        assert_eq!(e.kind, NodeEventKind::WatchRemoved, "{what}");
        assert_eq!(e.path, "/ow/n");
    }
    let err = c
        .remove_watches("/ow/n", WatcherType::Data, false)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoWatcher(_)), "none left: {err}");
    assert!(
        !server_watches(&server, "/ow/n", &c),
        "the server no longer has them"
    );
    // The child watch was not touched.
    writer
        .create("/ow/n/k", b"", CreateOptions::default())
        .await
        .unwrap();
    let e = tokio::time::timeout(WAIT, child).await.unwrap().unwrap();
    assert_eq!(e.kind, NodeEventKind::ChildrenChanged);

    // The server unreachable: local = false fails and keeps the watch; local = true removes.
    let (_, _, w) = c.get_data_watch("/ow/n").await.unwrap();
    let pending = tokio::spawn(w.changed());
    server.stop();
    c.wait_for_state(WAIT, |s| s != ConnectionState::Connected)
        .await
        .unwrap();
    let err = c
        .remove_watches("/ow/n", WatcherType::Any, false)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ConnectionLoss(_)), "{err}");
    assert!(!pending.is_finished(), "not removed");
    c.remove_watches("/ow/n", WatcherType::Any, true)
        .await
        .unwrap();
    let e = tokio::time::timeout(WAIT, pending).await.unwrap().unwrap();
    assert_eq!(e.kind, NodeEventKind::WatchRemoved);
    server.start();

    let err = c
        .remove_watches("no-slash", WatcherType::Any, false)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    c.close().await;
    let err = c
        .remove_watches("/ow/n", WatcherType::Any, false)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Closed(_)), "{err}");
    writer.close().await;
}

/// `remove_watches` of persistent kinds ends the consumers of that kind on the path (a
/// watcher's listeners hear WATCH_REMOVED last, its stream ends; a handle's `next` gives
/// WATCH_REMOVED then `None`), leaves the consumers of the other kind and the one-shot watches
/// there working, and a cache whose watch is removed sets it again and resyncs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_watches_ends_persistent_consumers_of_its_kind() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let writer = connect(&server.connect_string()).await;
    c.create("/pr/a", b"", CreateOptions::default().parents())
        .await
        .unwrap();
    let flat = PersistentWatcher::new(&c, "/pr", false).unwrap();
    let mut flat_events = flat.events();
    flat.start().await.unwrap();
    let mut rec = c
        .add_watch("/pr", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    let tree = TreeCache::new(&c, "/pr", None).unwrap();
    tree.start().await.unwrap();
    assert!(tree.await_initialized(Some(WAIT)).await.unwrap());
    let (_, _, oneshot) = c.get_data_watch("/pr").await.unwrap();
    let oneshot = tokio::spawn(oneshot.changed());

    c.remove_watches("/pr", WatcherType::Persistent, false)
        .await
        .unwrap();
    // The one-shot watch set on /pr made the client set the shared watch again (ZooKeeper 3.8
    // keeps one mode per path): consumers may hear RECONNECTED before their WATCH_REMOVED.
    let last = loop {
        let e = flat_events.next_timeout(WAIT).await.unwrap();
        if e != Some(WatchEvent::Reconnected) {
            break e;
        }
    };
    assert_eq!(last.as_ref().map(WatchEvent::name), Some("WATCH_REMOVED"));
    assert_eq!(flat_events.next_timeout(WAIT).await.unwrap(), None, "ended");
    let err = c
        .remove_watches("/pr", WatcherType::Persistent, false)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoWatcher(_)), "{err}");

    // The recursive consumers and the one-shot watch still hear their events.
    writer.set_data("/pr", b"1", None).await.unwrap();
    let e = tokio::time::timeout(WAIT, oneshot).await.unwrap().unwrap();
    assert_eq!(e.kind, NodeEventKind::DataChanged);
    assert_eq!(
        next_node(&mut rec, "recursive handle").await,
        "DATA_CHANGED /pr"
    );

    // The recursive kind: the handle ends; the cache sets its watch again and resyncs.
    let resyncs = tree.resyncs();
    c.remove_watches("/pr", WatcherType::PersistentRecursive, false)
        .await
        .unwrap();
    loop {
        match tokio::time::timeout(WAIT, rec.next()).await.unwrap() {
            Some(WatchEvent::Removed) => break,
            Some(WatchEvent::Node(_) | WatchEvent::Reconnected) => {}
            other => panic!("expected WATCH_REMOVED, got {other:?}"),
        }
    }
    assert_eq!(rec.next().await, None);
    eventually("the cache resynced", || tree.resyncs() > resyncs).await;
    let made = writer
        .create("/pr/a/new", b"x", CreateOptions::default())
        .await
        .unwrap();
    assert!(tree.await_zxid(made.stat.czxid, Some(WAIT)).await.unwrap());
    assert!(tree.get("/pr/a/new").is_some(), "the cache still hears");
    tree.close();
    c.close().await;
    writer.close().await;
}

/// The last persistent consumer of a path leaves while a one-shot watch request on that path
/// is still in flight. ZooKeeper 3.8 removes a persistent watch only with `Any`, which would take
/// the one-shot watch that request is setting too; the wire client holds that removal until the
/// request is answered and drops it once the request's watch is set, so the one-shot watch
/// still fires. Replies are held back by the proxy so that the removal comes while the request
/// is on the server and unanswered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_persistent_consumer_leaving_keeps_a_one_shot_watch_in_flight() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = connect(&proxy.connect_string()).await;
    let writer = connect(&server.connect_string()).await;
    c.create("/inflight", b"0", CreateOptions::default())
        .await
        .unwrap();
    let persistent = c
        .add_watch("/inflight", AddWatchMode::Persistent)
        .await
        .unwrap();
    assert!(server_watches(&server, "/inflight", &c));

    proxy.delay_replies(Duration::from_millis(1500));
    let reads = proxy.client_reads();
    let reader = c.clone();
    let pending = tokio::spawn(async move { reader.get_data_watch("/inflight").await });
    eventually("the getData is on its way to the server", || {
        proxy.client_reads() > reads
    })
    .await;
    drop(persistent);
    let (data, _, oneshot) = tokio::time::timeout(WAIT, pending)
        .await
        .expect("the getData is answered")
        .unwrap()
        .unwrap();
    assert_eq!(data, b"0");
    proxy.restore();
    assert!(
        server_watches(&server, "/inflight", &c),
        "the server still has the one-shot watch"
    );

    writer.set_data("/inflight", b"1", None).await.unwrap();
    let e = tokio::time::timeout(WAIT, oneshot.changed())
        .await
        .expect("the one-shot watch fired");
    assert_eq!(e.kind, NodeEventKind::DataChanged);
    eventually("no watch of c left on /inflight", || {
        !server_watches(&server, "/inflight", &c)
    })
    .await;
    c.close().await;
    writer.close().await;
}

/// What ZooKeeper 3.8 lacks (ZOOKEEPER-4472: no removal kind for persistent watches;
/// ZOOKEEPER-4471: a `Data` removal strips the data half of a persistent watch on the path,
/// so changes below a recursive watch go unheard — `tests/harness/tests/zookeeper_client.rs`
/// shows both against the server itself), and our behaviour: removing the one-shot data watch
/// on a cache's root leaves the cache hearing every change below it — the client sets the
/// stripped watch again and the cache resyncs (a change made meanwhile is read by that walk).
/// No `removeWatches` of a persistent kind is ever sent (none of them would work on 3.8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_one_shot_watches_on_a_cache_root_does_not_deafen_the_cache() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let writer = connect(&server.connect_string()).await;
    c.create("/rc/a", b"", CreateOptions::default().parents())
        .await
        .unwrap();
    let tree = TreeCache::new(&c, "/rc", None).unwrap();
    tree.start().await.unwrap();
    assert!(tree.await_initialized(Some(WAIT)).await.unwrap());
    let (_, _, w) = c.get_data_watch("/rc").await.unwrap();
    let removed = tokio::spawn(w.changed());
    let resyncs = tree.resyncs();
    c.remove_watches("/rc", WatcherType::Data, false)
        .await
        .unwrap();
    let e = tokio::time::timeout(WAIT, removed).await.unwrap().unwrap();
    assert_eq!(e.kind, NodeEventKind::WatchRemoved);
    eventually("the cache resynced after its watch was set again", || {
        tree.resyncs() > resyncs
    })
    .await;
    for i in 0..3 {
        let made = writer
            .create(&format!("/rc/a/n{i}"), b"", CreateOptions::default())
            .await
            .unwrap();
        assert!(tree.await_zxid(made.stat.czxid, Some(WAIT)).await.unwrap());
        assert!(
            tree.get(&format!("/rc/a/n{i}")).is_some(),
            "the cache heard the change below its root"
        );
    }
    assert_eq!(
        c.request_counts().remove_watches,
        1,
        "one Data removal, nothing else"
    );
    tree.close();
    c.close().await;
    writer.close().await;
}

/// Curator's `blockUntilConnected(timeout)` (the faces' `wait_for_state`): true at once when
/// connected; false once the timeout passes while the server is down; true when the
/// connection comes back during the wait; `Closed` on a closed client. The client's request
/// size limit reads back as built.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_until_connected_waits_for_a_connection() {
    let server = TestingServer::start();
    let c = ClientBuilder::new(server.connect_string())
        .session_timeout(Duration::from_secs(30))
        .max_request_bytes(4096)
        .connect()
        .await
        .unwrap();
    assert_eq!(c.max_request_bytes(), 4096);
    assert!(c.block_until_connected(Some(Duration::ZERO)).await.unwrap());
    server.stop();
    c.wait_for_state(WAIT, |s| s == ConnectionState::Suspended)
        .await
        .unwrap();
    let started = Instant::now();
    assert!(!c
        .block_until_connected(Some(Duration::from_millis(300)))
        .await
        .unwrap());
    assert!(started.elapsed() >= Duration::from_millis(300));
    let waiter = {
        let c = c.clone();
        tokio::spawn(async move { c.block_until_connected(None).await })
    };
    server.start();
    assert!(tokio::time::timeout(WAIT, waiter)
        .await
        .expect("connected in time")
        .unwrap()
        .unwrap());
    c.close().await;
    let err = c.block_until_connected(None).await.unwrap_err();
    assert!(matches!(err, Error::Closed(_)), "{err}");
}

/// The data of a NodeCache's node, if any.
fn node_data(node: &NodeCache) -> Option<Vec<u8>> {
    node.node().and_then(|d| d.data).map(|d| d.to_vec())
}

/// A recursive consumer joins a path a NodeCache and a plain handle watch, while the client is
/// cut off: the widening `addWatch` waits for the reconnection, and the old watch is not read
/// meanwhile. The outage under it must still reach the NodeCache (it resyncs, and goes on
/// following the node) and the plain handle (RECONNECTED after its DISCONNECTED). Before, the
/// drain of the old watch stopped at its first connection event and dropped it: the NodeCache,
/// told DISCONNECTED and never RECONNECTED, never read again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_widened_across_an_outage_keeps_the_node_cache_following() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let c = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(9))
        .connect()
        .await
        .unwrap();
    let writer = connect(&server.connect_string()).await;
    writer
        .create("/wide", b"v1", CreateOptions::default())
        .await
        .unwrap();
    let node = NodeCache::new(&c, "/wide").unwrap();
    node.start().await.unwrap();
    assert!(node.await_initialized(Some(WAIT)).await.unwrap());
    let mut plain = c
        .add_watch("/wide", AddWatchMode::Persistent)
        .await
        .unwrap();
    proxy.blackhole();
    loop {
        let e = tokio::time::timeout(WAIT, plain.next())
            .await
            .expect("the plain handle hears the outage")
            .expect("open");
        if e == WatchEvent::Disconnected {
            break;
        }
    }
    let tree = std::sync::Arc::new(TreeCache::new(&c, "/wide", None).unwrap());
    let starting = {
        let tree = tree.clone();
        tokio::spawn(async move { tree.start().await })
    };
    writer.set_data("/wide", b"v2", None).await.unwrap();
    proxy.restore();
    tokio::time::timeout(WAIT, starting)
        .await
        .expect("the tree cache starts once reconnected")
        .unwrap()
        .unwrap();
    eventually(
        "the node cache has the change made during the outage",
        || node_data(&node).as_deref() == Some(&b"v2"[..]),
    )
    .await;
    loop {
        let e = tokio::time::timeout(WAIT, plain.next())
            .await
            .expect("the plain handle hears the reconnection")
            .expect("open");
        if e == WatchEvent::Reconnected {
            break;
        }
    }
    let stat = writer.set_data("/wide", b"v3", None).await.unwrap();
    assert!(
        node.await_zxid(stat.mzxid, Some(WAIT)).await.unwrap(),
        "the node cache follows changes after the outage"
    );
    assert_eq!(node_data(&node).as_deref(), Some(&b"v3"[..]));
    drop(plain);
    tree.close();
    node.close();
    c.close().await;
    writer.close().await;
}
