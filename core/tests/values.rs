//! SharedValue, DistributedAtomicValue, CachedAtomicLong/Integer and the SharedCount-driven
//! InterProcessSemaphoreV2 (issue 32) against a real ZooKeeper started by the harness.
//!
//! Set `ZKR_LONG=1` for longer contention runs.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::atomic::{
    CachedAtomicInteger, CachedAtomicLong, DistributedAtomicInteger, DistributedAtomicLong,
    DistributedAtomicValue, PromotedToLock, SharedCount, SharedValue, SharedValueEvent,
    VersionedValue,
};
use zkrecipes::client::CreateOptions;
use zkrecipes::lock::InterProcessSemaphoreV2;
use zkrecipes::{Client, ClientBuilder, ConnectionState, CreateMode, ErrorKind, RetryPolicy};
use zkrecipes_testing::{FaultProxy, TestingServer};

const SECOND: Duration = Duration::from_secs(1);
const WAIT: Duration = Duration::from_secs(20);

fn builder(connect: &str) -> ClientBuilder {
    ClientBuilder::new(connect)
        .session_timeout(10 * SECOND)
        .connection_timeout(5 * SECOND)
}

fn connect(connect: &str) -> Client {
    builder(connect).connect_blocking().expect("connect")
}

fn long_run() -> bool {
    std::env::var("ZKR_LONG").is_ok_and(|v| v == "1")
}

/// Waits (bounded, async) until `f` returns true.
async fn eventually<F, Fut>(what: &str, timeout: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

fn raw(client: &Client, path: &str) -> Vec<u8> {
    zkrecipes::runtime::block_on(client.get_data(path))
        .expect("raw read")
        .0
}

fn decimal(bytes: &[u8]) -> u64 {
    std::str::from_utf8(bytes)
        .expect("utf-8")
        .parse()
        .expect("a decimal")
}

// ---------------------------------------------------------------------------------------------
// SharedValue
// ---------------------------------------------------------------------------------------------

fn value_changes(
    value: &SharedValue,
) -> tokio::sync::mpsc::UnboundedReceiver<VersionedValue<Vec<u8>>> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    value.add_listener(move |e| {
        if let SharedValueEvent::ValueChanged(v) = e {
            let _ = tx.send(v);
        }
    });
    rx
}

async fn heard(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<VersionedValue<Vec<u8>>>,
    want: &[u8],
) -> VersionedValue<Vec<u8>> {
    tokio::time::timeout(WAIT, async {
        while let Some(v) = rx.recv().await {
            if v.value == want {
                return v;
            }
        }
        panic!("the listener went away");
    })
    .await
    .unwrap_or_else(|_| panic!("never heard {want:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_value_keeps_curators_bytes_versions_and_listeners() {
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    let b = builder(&server.connect_string()).connect().await.unwrap();
    let va = SharedValue::new(&a, "/sv/basic/value", b"seed").unwrap();
    // Before start: the seed at version -1; writes need start.
    assert_eq!(va.get_value(), b"seed");
    assert_eq!(va.get_versioned_value().version, -1);
    let e = va.set_value(b"x").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    va.start().await.unwrap();
    assert_eq!(
        va.start().await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // The node holds the seed as it is (parents made), at version 0.
    assert_eq!(a.get_data("/sv/basic/value").await.unwrap().0, b"seed");
    assert_eq!(
        va.get_versioned_value(),
        VersionedValue {
            version: 0,
            value: b"seed".to_vec()
        }
    );
    // A second value's seed does not overwrite the node.
    let vb = SharedValue::new(&b, "/sv/basic/value", b"other seed").unwrap();
    let mut b_heard = value_changes(&vb);
    vb.start().await.unwrap();
    assert_eq!(vb.get_value(), b"seed");

    // A versioned set from the version seen succeeds; b hears it.
    let seen = va.get_versioned_value();
    assert!(va.try_set_value(&seen, b"one").await.unwrap());
    assert_eq!(va.get_versioned_value().version, 1);
    let v = heard(&mut b_heard, b"one").await;
    assert_eq!(v.version, 1);
    assert_eq!(vb.get_value(), b"one");
    // A stale one fails, writes nothing, and leaves the fresh value for the next try.
    assert!(!va.try_set_value(&seen, b"stale").await.unwrap());
    assert_eq!(a.get_data("/sv/basic/value").await.unwrap().0, b"one");
    // b's own view: b writes, a tries from an old view and fails (the server says no).
    let b_seen = vb.get_versioned_value();
    vb.set_value(b"two").await.unwrap();
    eventually("a sees two", WAIT, || async { va.get_value() == b"two" }).await;
    assert!(!vb.try_set_value(&b_seen, b"three").await.unwrap());
    // Empty bytes are a value like any other.
    let now = vb.get_versioned_value();
    assert!(vb.try_set_value(&now, b"").await.unwrap());
    eventually("a sees empty", WAIT, || async { va.get_value().is_empty() }).await;
    // Close: no more listener calls, writes are Closed, the node stays.
    vb.close();
    vb.close();
    assert_eq!(
        vb.set_value(b"after").await.unwrap_err().kind(),
        ErrorKind::Closed
    );
    va.set_value(b"late").await.unwrap();
    assert!(a.exists("/sv/basic/value").await.unwrap().is_some());
    va.close();
    a.close().await;
    b.close().await;
}

/// Every client increments a decimal in a SharedValue with try_set_value until it has made
/// `n` increments: no update is lost (the final value is the number of successes).
#[test]
fn concurrent_try_set_value_increments_lose_nothing() {
    let server = TestingServer::start();
    let per = if long_run() { 100 } else { 15 };
    let clients: Vec<Client> = (0..4).map(|_| connect(&server.connect_string())).collect();
    let conflicts = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = clients
        .iter()
        .map(|c| {
            let value = SharedValue::new(c, "/sv/increments", b"0").unwrap();
            value.start_blocking().unwrap();
            let conflicts = conflicts.clone();
            thread::spawn(move || {
                let mut done = 0;
                while done < per {
                    let seen = value.get_versioned_value();
                    let next = (decimal(&seen.value) + 1).to_string();
                    if value
                        .try_set_value_blocking(&seen, next.as_bytes())
                        .unwrap()
                    {
                        done += 1;
                    } else {
                        conflicts.fetch_add(1, Ordering::Relaxed);
                    }
                }
                value.close();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        decimal(&raw(&clients[0], "/sv/increments")),
        4 * per as u64,
        "every success counted once ({} conflicts)",
        conflicts.load(Ordering::Relaxed)
    );
    for c in clients {
        c.close_blocking();
    }
}

/// Curator's SharedValueListener hears connection states too; after the session expires the
/// value is read again through a new watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_value_listeners_hear_states_and_changes_survive_session_expiry() {
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    let b = builder(&server.connect_string()).connect().await.unwrap();
    let va = SharedValue::new(&a, "/sv/expiry", b"a").unwrap();
    va.start().await.unwrap();
    let states = Arc::new(Mutex::new(Vec::new()));
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    {
        let states = states.clone();
        va.add_listener(move |e| match e {
            SharedValueEvent::StateChanged(s) => states.lock().unwrap().push(s),
            SharedValueEvent::ValueChanged(v) => {
                let _ = tx.send(v);
            }
        });
    }
    let vb = SharedValue::new(&b, "/sv/expiry", b"").unwrap();
    vb.start().await.unwrap();
    zkrecipes_testing::expire_client_session(&a).await.unwrap();
    eventually("LOST then RECONNECTED", WAIT, || async {
        let s = states.lock().unwrap();
        s.contains(&ConnectionState::Lost) && s.last() == Some(&ConnectionState::Reconnected)
    })
    .await;
    vb.set_value(b"after expiry").await.unwrap();
    let v = heard(&mut changes, b"after expiry").await;
    assert_eq!(v.version, 1);
    assert_eq!(va.get_value(), b"after expiry");
    va.close();
    vb.close();
    a.close().await;
    b.close().await;
}

/// SharedCount is SharedValue over a 4-byte big-endian int (as in Curator): both see each
/// other's writes on one node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_and_shared_value_share_one_node() {
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    let count = SharedCount::new(&a, "/sv/count", 7).unwrap();
    count.start().await.unwrap();
    let value = SharedValue::new(&a, "/sv/count", b"unused").unwrap();
    value.start().await.unwrap();
    assert_eq!(value.get_value(), 7i32.to_be_bytes());
    let seen = value.get_versioned_value();
    assert!(value
        .try_set_value(&seen, &258i32.to_be_bytes())
        .await
        .unwrap());
    eventually("the count follows", WAIT, || async {
        count.get_count().ok() == Some(258)
    })
    .await;
    let seen = count.get_versioned_value().unwrap();
    assert_eq!(seen.version, 1);
    assert!(count.try_set_count(&seen, -2).await.unwrap());
    eventually("the value follows", WAIT, || async {
        value.get_value() == [0xff, 0xff, 0xff, 0xfe]
    })
    .await;
    count.close();
    value.close();
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_value_bad_input_is_invalid_argument() {
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    for bad in ["", "no-slash", "/trailing/", "/"] {
        let e = SharedValue::new(&a, bad, b"").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}: {e}");
    }
    // An ephemeral node would lose the value with its session: refused at start.
    a.create(
        "/sv/ephemeral",
        b"",
        CreateOptions::new(CreateMode::Ephemeral).parents(),
    )
    .await
    .unwrap();
    let v = SharedValue::new(&a, "/sv/ephemeral", b"").unwrap();
    let e = v.start().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("/sv/ephemeral"), "{e}");
    a.close().await;
    let e = SharedValue::new(&a, "/sv/closed", b"").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
}

// ---------------------------------------------------------------------------------------------
// DistributedAtomicValue
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_value_keeps_curators_semantics_and_bytes() {
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    let v = DistributedAtomicValue::new(&a, "/dav/basic/v", None, None).unwrap();
    // A missing node is None (Curator's null); compare_and_set never matches it.
    let got = v.get().await.unwrap();
    assert!(got.succeeded);
    assert_eq!((got.pre_value, got.post_value), (None, None));
    let r = v.compare_and_set(b"", b"x").await.unwrap();
    assert!(!r.succeeded);
    assert_eq!(r.pre_value, None);
    assert!(a.exists("/dav/basic/v").await.unwrap().is_none());
    // initialize creates it once (parents as containers), then says false.
    assert!(v.initialize(b"start").await.unwrap());
    assert!(!v.initialize(b"again").await.unwrap());
    assert_eq!(a.get_data("/dav/basic/v").await.unwrap().0, b"start");
    // compare_and_set: exact bytes only.
    let r = v.compare_and_set(b"star", b"no").await.unwrap();
    assert!(!r.succeeded);
    assert_eq!(r.pre_value.as_deref(), Some(&b"start"[..]));
    assert_eq!(r.post_value, None);
    let r = v.compare_and_set(b"start", b"next").await.unwrap();
    assert!(r.succeeded, "{r:?}");
    assert_eq!(r.pre_value.as_deref(), Some(&b"start"[..]));
    assert_eq!(r.post_value.as_deref(), Some(&b"next"[..]));
    // try_set: whatever was there.
    let r = v.try_set(b"tried").await.unwrap();
    assert!(r.succeeded);
    assert_eq!(r.pre_value.as_deref(), Some(&b"next"[..]));
    assert_eq!(r.stats.optimistic_tries, 1);
    assert_eq!(a.get_data("/dav/basic/v").await.unwrap().0, b"tried");
    // force_set on a missing node creates it with its parents.
    let w = DistributedAtomicValue::new(&a, "/dav/deep/er/w", None, None).unwrap();
    w.force_set(b"forced").await.unwrap();
    assert_eq!(a.get_data("/dav/deep/er/w").await.unwrap().0, b"forced");
    w.force_set(b"again").await.unwrap();
    assert_eq!(w.get().await.unwrap().post_value.unwrap(), b"again");
    // try_set on a missing node creates it.
    let t = DistributedAtomicValue::new(&a, "/dav/fresh", None, None).unwrap();
    let r = t.try_set(b"made").await.unwrap();
    assert!(r.succeeded);
    assert_eq!(r.pre_value, None);
    // A DistributedAtomicLong's node is 8 bytes to a DistributedAtomicValue, and back.
    let long = DistributedAtomicLong::new(&a, "/dav/long", None, None).unwrap();
    assert_eq!(long.add_and_get(41, None).await.unwrap(), 41);
    let as_bytes = DistributedAtomicValue::new(&a, "/dav/long", None, None).unwrap();
    let r = as_bytes
        .compare_and_set(&41i64.to_be_bytes(), &42i64.to_be_bytes())
        .await
        .unwrap();
    assert!(r.succeeded);
    assert_eq!(long.get().await.unwrap().post_value, 42);
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_value_bad_input_is_invalid_argument() {
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    for bad in ["", "x", "/a//b", "/"] {
        let e = DistributedAtomicValue::new(&a, bad, None, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}: {e}");
    }
    let same = PromotedToLock::new("/dav/same").unwrap();
    let e = DistributedAtomicValue::new(&a, "/dav/same", None, Some(same)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // A value over a lock node (ephemeral) is refused, nothing written.
    a.create(
        "/dav/eph",
        b"holder",
        CreateOptions::new(CreateMode::Ephemeral).parents(),
    )
    .await
    .unwrap();
    let v = DistributedAtomicValue::new(&a, "/dav/eph", None, None).unwrap();
    let e = v.try_set(b"x").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("value path /dav/eph"), "{e}");
    assert_eq!(a.get_data("/dav/eph").await.unwrap().0, b"holder");
    // Data larger than the client allows is refused before anything is sent.
    let big = vec![7u8; 2 << 20];
    let e = v.force_set(&big).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    a.close().await;
    let e = v.get().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
}

/// Threads on separate clients increment a decimal with compare_and_set until each has made
/// `n` increments: the final value is exactly the number of successes.
#[test]
fn compare_and_set_increments_across_clients_are_exact() {
    let server = TestingServer::start();
    let per = if long_run() { 100 } else { 15 };
    let clients: Vec<Client> = (0..4).map(|_| connect(&server.connect_string())).collect();
    DistributedAtomicValue::new(&clients[0], "/dav/cas", None, None)
        .unwrap()
        .initialize_blocking(b"0")
        .unwrap();
    let threads: Vec<_> = clients
        .iter()
        .map(|c| {
            let v = DistributedAtomicValue::new(c, "/dav/cas", None, None).unwrap();
            thread::spawn(move || {
                let mut done = 0;
                let mut failed = 0;
                while done < per {
                    let now = v.get_blocking().unwrap().post_value.unwrap();
                    let next = (decimal(&now) + 1).to_string();
                    let r = v.compare_and_set_blocking(&now, next.as_bytes()).unwrap();
                    if r.succeeded {
                        assert_eq!(r.post_value.as_deref(), Some(next.as_bytes()));
                        done += 1;
                    } else {
                        failed += 1;
                    }
                }
                failed
            })
        })
        .collect();
    let failed: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(
        decimal(&raw(&clients[0], "/dav/cas")),
        4 * per as u64,
        "{failed} failed tries"
    );
    for c in clients {
        c.close_blocking();
    }
}

/// With one optimistic try and a rival writing between our read and our write, try_set falls
/// back to the promoted lock (Curator's PromotedToLock) and succeeds there.
#[test]
fn atomic_value_failed_optimistic_tries_are_promoted_to_the_lock() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = connect(&proxy.connect_string());
    let rival = connect(&server.connect_string());
    let promoted = PromotedToLock::builder()
        .lock_path("/dav/promo/lock")
        .timeout(10 * SECOND)
        .retry_policy(RetryPolicy::NTimes {
            n: 3,
            sleep: Duration::from_millis(10),
        })
        .build()
        .unwrap();
    let one_try = RetryPolicy::NTimes {
        n: 0,
        sleep: Duration::ZERO,
    };
    let value = Arc::new(
        DistributedAtomicValue::new(&client, "/dav/promo/v", Some(one_try), Some(promoted))
            .unwrap(),
    );
    let rivals = DistributedAtomicValue::new(&rival, "/dav/promo/v", None, None).unwrap();
    rivals.force_set_blocking(b"rival 1").unwrap();
    proxy.delay(SECOND);
    let sets = client.request_counts().set_data;
    let setter = {
        let value = value.clone();
        thread::spawn(move || value.try_set_blocking(b"ours"))
    };
    wait_until("our write to be sent", 10 * SECOND, || {
        client.request_counts().set_data > sets
    });
    rivals.force_set_blocking(b"rival 2").unwrap();
    let v = setter.join().unwrap().unwrap();
    assert!(v.succeeded, "{v:?}");
    assert_eq!(v.stats.optimistic_tries, 1);
    assert!(v.stats.promoted_lock_tries >= 1, "{v:?}");
    assert_eq!(v.pre_value.as_deref(), Some(&b"rival 2"[..]));
    proxy.restore();
    assert_eq!(raw(&rival, "/dav/promo/v"), b"ours");
    let left =
        zkrecipes::runtime::block_on(zkrecipes_testing::children_left(&rival, "/dav/promo/lock"));
    assert!(left.is_empty(), "lock nodes left behind: {left:?}");
    client.close_blocking();
    rival.close_blocking();
}

/// A compare_and_set whose reply is lost is never applied twice: OutcomeUnknown, and the node
/// holds our bytes exactly once.
#[test]
fn a_compare_and_set_whose_reply_is_lost_is_outcome_unknown() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = ClientBuilder::new(proxy.connect_string())
        .session_timeout(40 * SECOND)
        .connection_timeout(30 * SECOND)
        .connect_blocking()
        .expect("connect");
    let observer = connect(&server.connect_string());
    let v = Arc::new(DistributedAtomicValue::new(&client, "/dav/lost", None, None).unwrap());
    v.initialize_blocking(b"1").unwrap();
    proxy.delay_replies(Duration::from_secs(8));
    let setter = {
        let v = v.clone();
        thread::spawn(move || v.compare_and_set_blocking(b"1", b"2"))
    };
    wait_until("the write to be applied", 30 * SECOND, || {
        raw(&observer, "/dav/lost") == b"2"
    });
    proxy.cut();
    proxy.restore();
    let e = setter
        .join()
        .unwrap()
        .expect_err("the outcome cannot be known");
    assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}");
    assert!(e.message().contains("/dav/lost"), "{e}");
    assert_eq!(
        zkrecipes::runtime::block_on(observer.exists("/dav/lost"))
            .unwrap()
            .unwrap()
            .version,
        1,
        "written once"
    );
    client.close_blocking();
    observer.close_blocking();
}

// ---------------------------------------------------------------------------------------------
// CachedAtomicLong / CachedAtomicInteger
// ---------------------------------------------------------------------------------------------

/// Threads on separate clients, each with its own CachedAtomicLong (and one shared by several
/// threads), take ids: no id is handed out twice, and the counter moved one range at a time.
#[test]
fn cached_ids_are_never_handed_out_twice() {
    let server = TestingServer::start();
    let per = if long_run() { 500 } else { 60 };
    let clients: Vec<Client> = (0..3).map(|_| connect(&server.connect_string())).collect();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        let counter = DistributedAtomicLong::new(c, "/cached/long", None, None).unwrap();
        let cached = Arc::new(CachedAtomicLong::new(counter, 7 + i as i64).unwrap());
        for _ in 0..2 {
            let (cached, ids) = (cached.clone(), ids.clone());
            threads.push(thread::spawn(move || {
                let mut mine = Vec::new();
                while mine.len() < per {
                    let v = cached.next_blocking().unwrap();
                    if v.succeeded {
                        assert_eq!(v.post_value, v.pre_value + 1);
                        mine.push(v.post_value);
                    }
                }
                ids.lock().unwrap().extend(mine);
            }));
        }
    }
    for t in threads {
        t.join().unwrap();
    }
    let ids = ids.lock().unwrap();
    let distinct: HashSet<_> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "an id was handed out twice");
    assert_eq!(ids.len(), 3 * 2 * per);
    let top = i64::from_be_bytes(raw(&clients[0], "/cached/long").try_into().unwrap());
    assert!(
        ids.iter().all(|&id| id >= 1 && id <= top),
        "ids within the reserved ranges"
    );
    // The first id of a fresh cache is one past the counter's value; the next call is free.
    let counter = DistributedAtomicLong::new(&clients[0], "/cached/long", None, None).unwrap();
    let cached = CachedAtomicLong::new(counter, 10).unwrap();
    let first = cached.next_blocking().unwrap();
    assert_eq!(first.post_value, top + 1);
    let sets = clients[0].request_counts().set_data;
    assert_eq!(cached.next_blocking().unwrap().post_value, top + 2);
    assert_eq!(clients[0].request_counts().set_data, sets, "no server call");
    for c in clients {
        c.close_blocking();
    }
}

#[test]
fn cached_integer_and_bad_cache_factors() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string());
    let int = DistributedAtomicInteger::new(&c, "/cached/int", None, None).unwrap();
    let cached = CachedAtomicInteger::new(int.clone(), 3).unwrap();
    let got: Vec<i32> = (0..7)
        .map(|_| cached.next_blocking().unwrap().post_value)
        .collect();
    assert_eq!(got, vec![1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(
        int.get_blocking().unwrap().post_value,
        9,
        "three ranges of 3"
    );
    for bad in [0, -1] {
        let e = CachedAtomicInteger::new(int.clone(), bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        let long = DistributedAtomicLong::new(&c, "/cached/l", None, None).unwrap();
        let e = CachedAtomicLong::new(long, bad as i64).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    c.close_blocking();
    let e = cached.next_blocking();
    // Two ids of the last range of 3 are still ours: handed out without the server.
    assert_eq!(e.unwrap().post_value, 8);
    assert_eq!(cached.next_blocking().unwrap().post_value, 9);
    assert_eq!(
        cached.next_blocking().unwrap_err().kind(),
        ErrorKind::Closed
    );
}

// ---------------------------------------------------------------------------------------------
// InterProcessSemaphoreV2 with its max leases from a SharedCount
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shared_count_drives_the_semaphores_limit_live() {
    let server = TestingServer::start();
    let clients: Vec<Client> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            v.push(builder(&server.connect_string()).connect().await.unwrap());
        }
        v
    };
    let counts: Vec<SharedCount> = clients
        .iter()
        .map(|c| SharedCount::new(c, "/semcount/max", 1).unwrap())
        .collect();
    for c in &counts {
        c.start().await.unwrap();
    }
    let sems: Vec<InterProcessSemaphoreV2> = clients
        .iter()
        .zip(&counts)
        .map(|(c, n)| InterProcessSemaphoreV2::with_count(c, "/semcount/sem", n).unwrap())
        .collect();
    assert!(sems[0].is_count_driven());
    assert_eq!(sems[0].max_leases(), 1);
    // More leases than the count now is no error: the count may be raised.
    let first = sems[0]
        .acquire(1, Some(WAIT))
        .await
        .unwrap()
        .expect("lease");
    assert!(sems[1]
        .acquire(1, Some(Duration::from_millis(300)))
        .await
        .unwrap()
        .is_none());
    let second = {
        let s = sems[1].clone();
        tokio::spawn(async move { s.acquire(1, Some(WAIT)).await })
    };
    eventually("the second is waiting", WAIT, || async {
        sems[0].participant_nodes().await.unwrap().len() == 2
    })
    .await;
    // Raising the count lets the waiter in at once (no lease is returned).
    let seen = counts[2].get_versioned_value().unwrap();
    assert!(counts[2].try_set_count(&seen, 2).await.unwrap());
    let second = tokio::time::timeout(WAIT, second)
        .await
        .expect("admitted once the count was raised")
        .unwrap()
        .unwrap()
        .expect("a lease");
    eventually("every semaphore sees 2", WAIT, || async {
        sems.iter().all(|s| s.max_leases() == 2)
    })
    .await;
    // Lowering it revokes nothing, and admits nobody until fewer than the count are held.
    counts[2].set_count(1).await.unwrap();
    eventually("every semaphore sees 1", WAIT, || async {
        sems.iter().all(|s| s.max_leases() == 1)
    })
    .await;
    assert_eq!(sems[0].participant_nodes().await.unwrap().len(), 2);
    let third = {
        let s = sems[2].clone();
        tokio::spawn(async move { s.acquire(1, Some(WAIT)).await })
    };
    eventually("the third is waiting", WAIT, || async {
        sems[0].participant_nodes().await.unwrap().len() == 3
    })
    .await;
    sems[0].return_all(first).await.unwrap();
    // One lease still held with a limit of 1: the third keeps waiting.
    assert!(sems[2]
        .acquire(1, Some(Duration::from_millis(500)))
        .await
        .unwrap()
        .is_none());
    assert!(!third.is_finished());
    sems[1].return_all(second).await.unwrap();
    let third = tokio::time::timeout(WAIT, third)
        .await
        .expect("admitted once below the count")
        .unwrap()
        .unwrap()
        .expect("a lease");
    // A count of 0 admits nobody; acquiring more than the count waits rather than failing.
    counts[0].set_count(0).await.unwrap();
    eventually("every semaphore sees 0", WAIT, || async {
        sems.iter().all(|s| s.max_leases() == 0)
    })
    .await;
    sems[2].return_all(third).await.unwrap();
    assert!(sems[0]
        .acquire(2, Some(Duration::from_millis(300)))
        .await
        .unwrap()
        .is_none());
    counts[0].set_count(2).await.unwrap();
    let two = sems[0].acquire(2, Some(WAIT)).await.unwrap().expect("two");
    assert_eq!(two.len(), 2);
    sems[0].return_all(two).await.unwrap();
    for c in &counts {
        c.close();
    }
    for c in clients {
        c.close().await;
    }
}

/// Many holders while the count moves between 1 and 3: never more holders than the count in
/// force when they were admitted (checked as the interop scenario does, from each holder's
/// admission against the limits set so far), and the count's raises admit waiters.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_count_driven_semaphore_never_admits_more_than_the_count_in_force() {
    let server = TestingServer::start();
    let rounds = if long_run() { 20 } else { 5 };
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(builder(&server.connect_string()).connect().await.unwrap());
    }
    let mut counts = Vec::new();
    for c in &clients {
        let count = SharedCount::new(c, "/semcount/stress/max", 2).unwrap();
        count.start().await.unwrap();
        counts.push(Arc::new(count));
    }
    let holding = Arc::new(AtomicUsize::new(0));
    // The strictest limit in force since the last change settled: a holder admitted while the
    // limit is L sees at most L holders including itself, unless it was admitted under a
    // larger limit and the count was lowered since (leases are not revoked).
    let highest_recent = Arc::new(AtomicUsize::new(2));
    let mut tasks = Vec::new();
    for (c, count) in clients.iter().zip(&counts) {
        let sem = InterProcessSemaphoreV2::with_count(c, "/semcount/stress/sem", count).unwrap();
        for _ in 0..3 {
            let (sem, holding, highest_recent) =
                (sem.clone(), holding.clone(), highest_recent.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..rounds {
                    let leases = sem
                        .acquire(1, Some(Duration::from_secs(60)))
                        .await
                        .unwrap()
                        .expect("lease");
                    let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                    let bound = highest_recent.load(Ordering::SeqCst);
                    assert!(now <= bound, "{now} holders with limits at most {bound}");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    holding.fetch_sub(1, Ordering::SeqCst);
                    sem.return_all(leases).await.unwrap();
                }
            }));
        }
    }
    // The changer: 3, 1, 3, ... A raise is published to the bound before it is made. A
    // lowering is published once every count has seen it and the holders stayed within it for
    // a quiet second (an admission decided under the old limit just before the change reaches
    // `holding` only after its mutex is released, a round trip later).
    let changer = {
        let (counts, holding, highest_recent) =
            (counts.clone(), holding.clone(), highest_recent.clone());
        tokio::spawn(async move {
            for i in 0..6 {
                let next = if i % 2 == 0 { 3 } else { 1 };
                if next > highest_recent.load(Ordering::SeqCst) {
                    highest_recent.store(next, Ordering::SeqCst);
                    counts[0].set_count(next as i32).await.unwrap();
                } else {
                    counts[0].set_count(next as i32).await.unwrap();
                    let t = Instant::now();
                    while !counts
                        .iter()
                        .all(|c| c.get_count().ok() == Some(next as i32))
                    {
                        assert!(t.elapsed() < WAIT, "the counts follow");
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    let mut quiet_since = Instant::now();
                    while quiet_since.elapsed() < SECOND {
                        assert!(t.elapsed() < 3 * WAIT, "the holders drain");
                        if holding.load(Ordering::SeqCst) > next {
                            quiet_since = Instant::now();
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    highest_recent.store(next, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            highest_recent.store(3, Ordering::SeqCst);
            counts[0].set_count(3).await.unwrap();
        })
    };
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(120), t)
            .await
            .unwrap()
            .unwrap();
    }
    changer.await.unwrap();
    for c in clients {
        c.close().await;
    }
}
