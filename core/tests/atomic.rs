//! Distributed counters (issue 5) against a real ZooKeeper started by the harness.
//!
//! Set `ZKR_LONG=1` for longer chaos runs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::atomic::{
    DistributedAtomicInteger, DistributedAtomicLong, PromotedToLock, SharedCount, SharedCountEvent,
    SharedValue, VersionedValue,
};
use zkrecipes::client::CreateOptions;
use zkrecipes::lock::InterProcessMutex;
use zkrecipes::{Client, ClientBuilder, ConnectionState, Error, ErrorKind, Owner, RetryPolicy};
use zkrecipes_testing::{FaultProxy, TestingServer};

const SECOND: Duration = Duration::from_secs(1);

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

/// Waits (bounded) until `done` returns true; panics naming `what` otherwise.
fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        thread::sleep(Duration::from_millis(5));
    }
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

fn raw(client: &Client, path: &str) -> Vec<u8> {
    zkrecipes::runtime::block_on(client.get_data(path))
        .expect("raw read")
        .0
}

fn writes(client: &Client) -> u64 {
    let c = client.request_counts();
    c.set_data + c.create
}

// ---------------------------------------------------------------------------------------------
// The seed's scenario (10 × 100) and combining
// ---------------------------------------------------------------------------------------------

#[test]
fn ten_threads_times_100_add_and_get_reach_exactly_1000_with_combined_writes() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let counter =
        Arc::new(DistributedAtomicLong::new(&client, "/seed/threads", None, None).unwrap());
    let writes_before = writes(&client);
    let start = Instant::now();
    let threads: Vec<_> = (0..10)
        .map(|_| {
            let counter = counter.clone();
            thread::spawn(move || {
                (0..100)
                    .map(|_| {
                        counter
                            .add_and_get_blocking(1, Some(30 * SECOND))
                            .expect("add_and_get")
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seen: Vec<i64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let elapsed = start.elapsed();
    // Every caller got its own value, as if the 1000 calls had run one after the other.
    seen.sort_unstable();
    assert_eq!(seen, (1..=1000).collect::<Vec<i64>>());
    assert_eq!(counter.get_blocking().unwrap().post_value, 1000);
    assert_eq!(raw(&client, "/seed/threads"), 1000i64.to_be_bytes());
    let zk_writes = writes(&client) - writes_before;
    eprintln!(
        "combining: 10 threads x 100 add_and_get in one process: {zk_writes} ZooKeeper writes \
         ({:.2} per increment), {:.0} increments/s",
        zk_writes as f64 / 1000.0,
        1000.0 / elapsed.as_secs_f64()
    );
    assert!(
        zk_writes <= 300,
        "combining should need far fewer than 1000 writes, took {zk_writes}"
    );
    client.close_blocking();
}

#[test]
fn ten_separate_clients_times_100_add_and_get_reach_exactly_1000() {
    let server = TestingServer::start();
    let connect_string = server.connect_string();
    let start = Instant::now();
    let threads: Vec<_> = (0..10)
        .map(|_| {
            let connect_string = connect_string.clone();
            thread::spawn(move || {
                let client = connect(&connect_string);
                let counter =
                    DistributedAtomicLong::new(&client, "/seed/clients", None, None).unwrap();
                let seen: Vec<i64> = (0..100)
                    .map(|_| {
                        counter
                            .add_and_get_blocking(1, Some(60 * SECOND))
                            .expect("add_and_get")
                    })
                    .collect();
                let w = writes(&client);
                client.close_blocking();
                (seen, w)
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let elapsed = start.elapsed();
    let zk_writes: u64 = results.iter().map(|(_, w)| w).sum();
    let mut seen: Vec<i64> = results.into_iter().flat_map(|(s, _)| s).collect();
    seen.sort_unstable();
    assert_eq!(seen, (1..=1000).collect::<Vec<i64>>());
    let client = connect(&connect_string);
    let counter = DistributedAtomicLong::new(&client, "/seed/clients", None, None).unwrap();
    assert_eq!(counter.get_blocking().unwrap().post_value, 1000);
    eprintln!(
        "10 clients x 100 add_and_get: {zk_writes} writes ({:.2} per increment), {:.0} increments/s",
        zk_writes as f64 / 1000.0,
        1000.0 / elapsed.as_secs_f64()
    );
    client.close_blocking();
}

#[test]
fn curator_style_add_reports_succeeded_exactly_for_the_increments_that_count() {
    let server = TestingServer::start();
    // The seed's own program: DistributedAtomicInteger, 10 threads x 100 add(1), the default
    // retry policy (exponential backoff, 1 s, 3 retries).
    let client = connect(&server.connect_string());
    let counter =
        Arc::new(DistributedAtomicInteger::new(&client, "/seed/curator", None, None).unwrap());
    let threads: Vec<_> = (0..10)
        .map(|_| {
            let counter = counter.clone();
            thread::spawn(move || {
                (0..100)
                    .filter(|_| {
                        let v = counter.add_blocking(1).expect("add");
                        assert!(v.stats.optimistic_tries >= 1 && v.stats.promoted_lock_tries == 0);
                        if v.succeeded {
                            assert_eq!(v.post_value, v.pre_value + 1);
                        }
                        v.succeeded
                    })
                    .count()
            })
        })
        .collect();
    let succeeded: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let value = counter.get_blocking().unwrap().post_value;
    assert_eq!(
        value as usize, succeeded,
        "one process: {succeeded} succeeded, value {value}"
    );
    assert_eq!(
        raw(&client, "/seed/curator"),
        (succeeded as i32).to_be_bytes()
    );

    // Five processes contending with one retry and no sleep: some adds give up, and exactly
    // those are missing from the count.
    let connect_string = server.connect_string();
    let threads: Vec<_> = (0..5)
        .map(|_| {
            let connect_string = connect_string.clone();
            thread::spawn(move || {
                let client = connect(&connect_string);
                let policy = RetryPolicy::NTimes {
                    n: 1,
                    sleep: Duration::ZERO,
                };
                let counter =
                    DistributedAtomicLong::new(&client, "/seed/contended", Some(policy), None)
                        .unwrap();
                let ok = (0..40)
                    .filter(|_| counter.add_blocking(1).expect("add").succeeded)
                    .count();
                client.close_blocking();
                ok
            })
        })
        .collect();
    let succeeded: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let counter = DistributedAtomicLong::new(&client, "/seed/contended", None, None).unwrap();
    let value = counter.get_blocking().unwrap().post_value;
    eprintln!(
        "5 contending clients x 40 Curator add (RetryNTimes(1, 0)): {succeeded} succeeded of 200"
    );
    assert_eq!(value as usize, succeeded);
    client.close_blocking();
}

/// An add whose caller gave up while its write was in flight (told `OutcomeUnknown`) is never
/// sent again: here that write fails on a stale version, and before, the round read the node
/// and wrote the delta anyway, seconds after its caller had left (a caller that then read the
/// counter, saw no change and added again, counted twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_add_given_up_during_its_write_is_never_written_after() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let a = builder(&proxy.connect_string()).connect().await.unwrap();
    let b = builder(&server.connect_string()).connect().await.unwrap();
    let ca = DistributedAtomicLong::new(&a, "/abandoned", None, None).unwrap();
    let cb = DistributedAtomicLong::new(&b, "/abandoned", None, None).unwrap();
    assert_eq!(ca.add_and_get(1, None).await.unwrap(), 1);
    // A's cached version is stale now: its next write fails on the version.
    cb.force_set(100).await.unwrap();
    proxy.delay_replies(2 * SECOND);
    let gave_up = ca.add_and_get(1, Some(Duration::from_millis(300))).await;
    assert_eq!(
        gave_up.as_ref().map_err(Error::kind).unwrap_err(),
        ErrorKind::OutcomeUnknown,
        "{gave_up:?}"
    );
    proxy.restore();
    // Queued behind the given-up add's round: it sees that delta only if it was written.
    assert_eq!(
        ca.add_and_get(1, Some(30 * SECOND)).await.unwrap(),
        101,
        "the given-up add was written after its caller left"
    );
    assert_eq!(cb.get().await.unwrap().post_value, 101);

    // The same when its write is lost with the connection: the re-read after reconnecting
    // finds the node unchanged, and before, the write was sent again for the caller gone.
    proxy.blackhole();
    let gave_up = ca.add_and_get(1, Some(Duration::from_millis(300))).await;
    assert_eq!(
        gave_up.as_ref().map_err(Error::kind).unwrap_err(),
        ErrorKind::OutcomeUnknown,
        "{gave_up:?}"
    );
    proxy.cut();
    proxy.restore();
    assert_eq!(
        ca.add_and_get(1, Some(30 * SECOND)).await.unwrap(),
        102,
        "the given-up add was sent again after a lost connection"
    );
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_adds_are_combined_and_each_caller_gets_its_own_pre_and_post() {
    let server = TestingServer::start();
    let client = builder(&server.connect_string()).connect().await.unwrap();
    let counter = Arc::new(DistributedAtomicLong::new(&client, "/combined", None, None).unwrap());
    assert!(counter.initialize(100).await.unwrap());
    let before = writes(&client);
    let tasks: Vec<_> = (1..=50i64)
        .map(|delta| {
            let counter = counter.clone();
            tokio::spawn(async move { (delta, counter.add(delta).await.unwrap()) })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    let zk_writes = writes(&client) - before;
    // Sorted by pre value, the results chain: each caller's post is the next one's pre.
    results.sort_by_key(|(_, v)| v.pre_value);
    let mut expected_pre = 100;
    for (delta, v) in &results {
        assert!(v.succeeded);
        assert_eq!(v.pre_value, expected_pre);
        assert_eq!(v.post_value, v.pre_value + delta);
        expected_pre = v.post_value;
    }
    assert_eq!(expected_pre, 100 + (1..=50).sum::<i64>());
    assert_eq!(counter.get().await.unwrap().post_value, expected_pre);
    assert!(zk_writes < 25, "50 concurrent adds took {zk_writes} writes");
    client.close().await;
}

// ---------------------------------------------------------------------------------------------
// Curator's operations and layout
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_operations_keep_curators_semantics_and_bytes() {
    let server = TestingServer::start();
    let plain = builder(&server.connect_string()).connect().await.unwrap();
    let client = builder(&server.connect_string())
        .namespace("app")
        .connect()
        .await
        .unwrap();
    let c = DistributedAtomicLong::new(&client, "/deep/er/counter", None, None).unwrap();
    assert_eq!(c.path(), "/deep/er/counter");
    // A missing node reads as 0, and compare-and-set on it fails (as Curator's).
    let v = c.get().await.unwrap();
    assert_eq!((v.succeeded, v.pre_value, v.post_value), (true, 0, 0));
    assert!(!c.compare_and_set(0, 5).await.unwrap().succeeded);
    assert!(plain
        .exists("/app/deep/er/counter")
        .await
        .unwrap()
        .is_none());
    assert!(c.initialize(5).await.unwrap());
    assert!(!c.initialize(7).await.unwrap());
    // Parents were made (as containers, Curator's EnsurePathContainers); the counter is a
    // persistent leaf.
    assert!(plain.exists("/app/deep/er").await.unwrap().is_some());
    assert_eq!(
        plain
            .exists("/app/deep/er/counter")
            .await
            .unwrap()
            .unwrap()
            .ephemeral_owner,
        0
    );
    assert_eq!(
        plain.get_data("/app/deep/er/counter").await.unwrap().0,
        5i64.to_be_bytes()
    );
    let v = c.compare_and_set(4, 9).await.unwrap();
    assert_eq!((v.succeeded, v.pre_value, v.post_value), (false, 5, 0));
    let v = c.compare_and_set(5, 9).await.unwrap();
    assert_eq!((v.succeeded, v.pre_value, v.post_value), (true, 5, 9));
    let v = c.try_set(11).await.unwrap();
    assert_eq!((v.succeeded, v.pre_value, v.post_value), (true, 9, 11));
    assert_eq!(v.stats.optimistic_tries, 1);
    c.force_set(-3).await.unwrap();
    assert_eq!(
        plain.get_data("/app/deep/er/counter").await.unwrap().0,
        (-3i64).to_be_bytes()
    );
    let v = c.subtract(2).await.unwrap();
    assert_eq!((v.succeeded, v.pre_value, v.post_value), (true, -3, -5));
    assert_eq!(c.decrement().await.unwrap().post_value, -6);
    assert_eq!(c.increment().await.unwrap().post_value, -5);
    // An empty node (made by someone else) counts as 0, and compare-and-set(0) matches it.
    plain
        .set_data("/app/deep/er/counter", b"", None)
        .await
        .unwrap();
    assert_eq!(c.get().await.unwrap().post_value, 0);
    assert!(c.compare_and_set(0, 1).await.unwrap().succeeded);
    // force_set on a missing node creates it.
    let f = DistributedAtomicLong::new(&client, "/fresh/f", None, None).unwrap();
    f.force_set(42).await.unwrap();
    assert_eq!(f.get().await.unwrap().post_value, 42);

    // DistributedAtomicInteger: 4 bytes, i32 arithmetic; an overflow is refused where Java's
    // int (and Curator) would wrap.
    let i = DistributedAtomicInteger::new(&client, "/int", None, None).unwrap();
    assert_eq!(i.add(7).await.unwrap().post_value, 7);
    assert_eq!(
        plain.get_data("/app/int").await.unwrap().0,
        7i32.to_be_bytes()
    );
    i.force_set(i32::MAX).await.unwrap();
    assert!(matches!(i.add(1).await, Err(Error::Overflow(_))));
    assert_eq!(i.get().await.unwrap().post_value, i32::MAX);
    // The blocking face refuses to run inside a runtime instead of deadlocking it.
    assert!(matches!(i.get_blocking(), Err(Error::Internal(_))));
    client.close().await;
    plain.close().await;
}

#[test]
fn every_add_refuses_an_overflow_and_writes_nothing() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let c = DistributedAtomicLong::new(&client, "/overflow/long", None, None).unwrap();
    c.force_set_blocking(i64::MAX - 1).unwrap();
    assert_eq!(c.add_and_get_blocking(1, None).unwrap(), i64::MAX);
    let e = c.add_and_get_blocking(1, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Overflow, "{e}");
    assert!(e.message().contains("/overflow/long"), "{e}");
    assert_eq!(c.get_blocking().unwrap().post_value, i64::MAX);
    assert_eq!(c.add_and_get_blocking(-5, None).unwrap(), i64::MAX - 5);
    c.force_set_blocking(i64::MIN).unwrap();
    assert_eq!(
        c.add_and_get_blocking(-1, None).unwrap_err().kind(),
        ErrorKind::Overflow
    );
    // Curator's add/subtract/increment wrap here (succeeded, post -2^63 + ...); ours refuse.
    for e in [
        c.subtract_blocking(1).unwrap_err(),
        c.add_blocking(-1).unwrap_err(),
        c.decrement_blocking().unwrap_err(),
        c.subtract_blocking(i64::MIN).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::Overflow, "{e}");
    }
    assert_eq!(c.get_blocking().unwrap().post_value, i64::MIN);
    c.force_set_blocking(i64::MAX).unwrap();
    assert_eq!(
        c.increment_blocking().unwrap_err().kind(),
        ErrorKind::Overflow
    );
    assert_eq!(c.get_blocking().unwrap().post_value, i64::MAX);

    let i = DistributedAtomicInteger::new(&client, "/overflow/int", None, None).unwrap();
    i.force_set_blocking(i32::MAX).unwrap();
    assert_eq!(
        i.add_and_get_blocking(1, None).unwrap_err().kind(),
        ErrorKind::Overflow
    );
    assert_eq!(i.get_blocking().unwrap().post_value, i32::MAX);
    assert_eq!(i.add_and_get_blocking(-1, None).unwrap(), i32::MAX - 1);
    client.close_blocking();
}

// ---------------------------------------------------------------------------------------------
// Exactly once, or say so
// ---------------------------------------------------------------------------------------------

#[test]
fn a_write_lost_before_reaching_the_server_is_resent_and_counts_once() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = connect(&proxy.connect_string());
    let counter =
        Arc::new(DistributedAtomicLong::new(&client, "/lost/request", None, None).unwrap());
    assert_eq!(counter.add_and_get_blocking(1, None).unwrap(), 1); // the version is now cached
    let sets = client.request_counts().set_data;
    // Long, at no cost (the cut comes as soon as the request is in the proxy), so that a
    // stalled machine cannot let it through before the cut.
    proxy.delay(5 * SECOND);
    let read = proxy.client_bytes_read();
    let adder = {
        let counter = counter.clone();
        thread::spawn(move || counter.add_and_get_blocking(1, Some(20 * SECOND)))
    };
    // The setData is sent and sits in the proxy for 5 s: cut it off there. The client's count
    // says only that it queued the request; the proxy must have read it too, or the cut could
    // come while the request is still in the client, to be written on the next connection (on
    // a loaded machine it once was). Its frame: length, header (xid, type), path, data, version;
    // pings (12 bytes, one every few seconds) cannot make up that much in this wait.
    const SET_DATA_FRAME: u64 = 4 + 8 + (4 + "/lost/request".len() as u64) + (4 + 8) + 4;
    wait_until("the setData to be in the proxy", 5 * SECOND, || {
        client.request_counts().set_data > sets
            && proxy.client_bytes_read() - read >= SET_DATA_FRAME
    });
    proxy.cut();
    proxy.restore();
    assert_eq!(
        adder
            .join()
            .unwrap()
            .expect("resent after learning it was not applied"),
        2
    );
    let observer = connect(&server.connect_string());
    assert_eq!(raw(&observer, "/lost/request"), 2i64.to_be_bytes());
    assert_eq!(
        client.request_counts().set_data,
        sets + 2,
        "one lost write and one resend"
    );
    client.close_blocking();
    observer.close_blocking();
}

/// A client through `proxy` whose timeouts are well above [`REPLY_HELD`], so that it does not
/// give up on its connection by itself while a reply is held.
fn patient(proxy: &FaultProxy) -> Client {
    ClientBuilder::new(proxy.connect_string())
        .session_timeout(40 * SECOND)
        .connection_timeout(30 * SECOND)
        .connect_blocking()
        .expect("connect")
}

/// How long the proxy holds each reply in the lost-reply test.
const REPLY_HELD: Duration = Duration::from_secs(8);

#[test]
fn a_write_whose_reply_is_lost_is_outcome_unknown_and_never_applied_twice() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = patient(&proxy);
    let observer = connect(&server.connect_string());
    let counter = Arc::new(DistributedAtomicLong::new(&client, "/lost/reply", None, None).unwrap());
    assert_eq!(counter.add_and_get_blocking(1, None).unwrap(), 1);
    let mut expected = 1i64;
    // Both faces: add_and_get, and Curator's add (which must not turn it into "failed" nor
    // retry it into a double count).
    for curator_add in [false, true] {
        // Requests pass at once, replies wait: the reply must still be in the proxy when the
        // cut comes, however slowly the observer's polling runs on a loaded machine (a 400 ms
        // delay each way was not enough once in CI, 2 s each way once more).
        proxy.delay_replies(REPLY_HELD);
        let adder = {
            let counter = counter.clone();
            thread::spawn(move || {
                if curator_add {
                    counter.add_blocking(1).map(|v| v.post_value)
                } else {
                    counter.add_and_get_blocking(1, Some(20 * SECOND))
                }
            })
        };
        expected += 1;
        // The write reached the server (the observer sees it) while its reply is still held
        // in the proxy: cut the connection so that the reply is lost.
        wait_until("the write to be applied", 30 * SECOND, || {
            raw(&observer, "/lost/reply") == expected.to_be_bytes()
        });
        proxy.cut();
        proxy.restore();
        let e = adder
            .join()
            .unwrap()
            .expect_err("the outcome cannot be known");
        assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}");
        assert!(e.message().contains("/lost/reply"), "{e}");
        // Applied exactly once: never retried into a double count.
        assert_eq!(raw(&observer, "/lost/reply"), expected.to_be_bytes());
        assert_eq!(counter.get_blocking().unwrap().post_value, expected);
    }
    client.close_blocking();
    observer.close_blocking();
}

/// An unconditional write (`force_set`, `set_count`, `set_value`) whose reply was lost, after
/// which another client's write landed and was acknowledged, is not resent over it: the other
/// write stays, and ours is `OutcomeUnknown`. Before, the client's retrying `setData` sent it
/// again once reconnected, and the other client's increment was lost (Curator's forceSet and
/// setCount do the same).
#[test]
fn a_forced_write_whose_reply_was_lost_never_overwrites_a_later_write() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = patient(&proxy);
    let observer = connect(&server.connect_string());
    for which in ["force_set", "set_count", "set_value"] {
        let path = format!("/forced/{which}");
        let long = Arc::new(DistributedAtomicLong::new(&client, &path, None, None).unwrap());
        let count = Arc::new(SharedCount::new(&client, &path, 5).unwrap());
        let value = Arc::new(SharedValue::new(&client, &path, &5i32.to_be_bytes()).unwrap());
        let bytes = |v: i32| -> Vec<u8> {
            match which {
                "force_set" => i64::from(v).to_be_bytes().to_vec(),
                _ => v.to_be_bytes().to_vec(),
            }
        };
        // Our unconditional write of `v`, on a thread of its own.
        let write = |v: i32| {
            let (long, count, value) = (long.clone(), count.clone(), value.clone());
            thread::spawn(move || match which {
                "force_set" => long.force_set_blocking(i64::from(v)),
                "set_count" => count.set_count_blocking(v),
                _ => value.set_value_blocking(&v.to_be_bytes()),
            })
        };
        match which {
            "force_set" => long.force_set_blocking(5).unwrap(),
            "set_count" => count.start_blocking().unwrap(),
            _ => value.start_blocking().unwrap(),
        }
        assert_eq!(raw(&observer, &path), bytes(5));
        // Requests pass at once, replies wait in the proxy.
        proxy.delay_replies(REPLY_HELD);
        let writer = write(0);
        wait_until("the write to be applied", 30 * SECOND, || {
            raw(&observer, &path) == bytes(0)
        });
        // Another client adds one to what it read (conditionally), and is told it did.
        let (_, stat) = zkrecipes::runtime::block_on(observer.get_data(&path)).unwrap();
        zkrecipes::runtime::block_on(observer.set_data(&path, &bytes(1), Some(stat.version)))
            .expect("the other client's increment");
        // Our reply is lost with the connection.
        proxy.cut();
        proxy.restore();
        let result = writer.join().unwrap();
        assert_eq!(
            raw(&observer, &path),
            bytes(1),
            "{which}: the other client's later write was overwritten by a resend ({result:?})"
        );
        let e = result.expect_err("the write's fate cannot be known: the node moved on");
        assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{which}: {e}");
        assert!(e.message().contains(&path), "{which}: {e}");
        // A lost reply with nothing written after it: the node holds our bytes, done.
        proxy.delay_replies(REPLY_HELD);
        let writer = write(7);
        wait_until("the second write to be applied", 30 * SECOND, || {
            raw(&observer, &path) == bytes(7)
        });
        proxy.cut();
        proxy.restore();
        let result = writer.join().unwrap();
        assert!(
            result.is_ok(),
            "{which}: our bytes are on the node: {result:?}"
        );
        // A write lost before it reached the server, with one other write landing meanwhile:
        // certainly not applied (ours would be a later version), so resent, after that write.
        proxy.blackhole();
        let sent = proxy.client_bytes_read();
        let writer = write(9);
        wait_until("the third write sent (and dropped)", 30 * SECOND, || {
            proxy.client_bytes_read() > sent
        });
        let (_, stat) = zkrecipes::runtime::block_on(observer.get_data(&path)).unwrap();
        zkrecipes::runtime::block_on(observer.set_data(&path, &bytes(1), Some(stat.version)))
            .expect("the other client's write");
        proxy.cut();
        proxy.restore();
        let result = writer.join().unwrap();
        assert!(
            result.is_ok(),
            "{which}: resent after one other write: {result:?}"
        );
        assert_eq!(
            raw(&observer, &path),
            bytes(9),
            "{which}: ours, after the other's"
        );
        count.close();
        value.close();
    }
    client.close_blocking();
    observer.close_blocking();
}

#[test]
fn add_and_get_that_times_out_or_is_dropped_before_its_write_is_not_applied() {
    let server = TestingServer::start();
    let setter = connect(&server.connect_string());
    DistributedAtomicLong::new(&setter, "/withdrawn", None, None)
        .unwrap()
        .force_set_blocking(10)
        .unwrap();
    let client = connect(&server.connect_string());
    let counter = DistributedAtomicLong::new(&client, "/withdrawn", None, None).unwrap();
    // Nothing cached yet: the round must read first, and the server does not answer.
    server.pause();
    let e = counter
        .add_and_get_blocking(1, Some(Duration::from_millis(300)))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    // A dropped call (a cancelled future) is withdrawn too.
    let dropped = zkrecipes::runtime::block_on(async {
        tokio::time::timeout(Duration::from_millis(200), counter.add_and_get(100, None)).await
    });
    assert!(dropped.is_err(), "the call should still be waiting");
    server.resume();
    // The next add sees neither withdrawn delta, now or later.
    assert_eq!(
        counter.add_and_get_blocking(1, Some(20 * SECOND)).unwrap(),
        11
    );
    assert_eq!(counter.get_blocking().unwrap().post_value, 11);
    client.close_blocking();
    setter.close_blocking();
}

#[test]
fn chaos_restart_and_cut_keep_the_count_between_acknowledged_and_acknowledged_plus_unknown() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..5).map(|_| AtomicU64::new(0)).collect());
    let unknown = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(Mutex::new(Vec::<String>::new()));
    let workers: Vec<_> = (0..5)
        .map(|i| {
            let connect_string = if i == 0 {
                proxy.connect_string()
            } else {
                server.connect_string()
            };
            let client = builder(&connect_string)
                .session_timeout(20 * SECOND)
                .connect_blocking()
                .unwrap();
            let (stop, acked, unknown, failed) =
                (stop.clone(), acked.clone(), unknown.clone(), failed.clone());
            thread::spawn(move || {
                let counter = DistributedAtomicLong::new(&client, "/chaos", None, None).unwrap();
                while !stop.load(Ordering::SeqCst) {
                    match counter.add_and_get_blocking(1, Some(15 * SECOND)) {
                        Ok(_) => {
                            acked[i].fetch_add(1, Ordering::SeqCst);
                        }
                        Err(Error::OutcomeUnknown(_)) => {
                            unknown.fetch_add(1, Ordering::SeqCst);
                        }
                        // Any other error means the increment was not applied.
                        Err(e) => failed.lock().unwrap().push(e.to_string()),
                    }
                }
                client.close_blocking();
            })
        })
        .collect();
    let total = |a: &[AtomicU64]| a.iter().map(|x| x.load(Ordering::SeqCst)).sum::<u64>();
    let rounds = if long_run() { 5 } else { 1 };
    for _ in 0..rounds {
        let t = total(&acked);
        wait_until("progress before the restart", 30 * SECOND, || {
            total(&acked) >= t + 100
        });
        server.restart();
        let t = total(&acked);
        wait_until("progress after the restart", 30 * SECOND, || {
            total(&acked) >= t + 100
        });
        proxy.cut();
        let t = total(&acked);
        wait_until("the other clients to go on", 30 * SECOND, || {
            total(&acked) >= t + 50
        });
        proxy.restore();
        let t0 = acked[0].load(Ordering::SeqCst);
        wait_until("the cut client to go on", 30 * SECOND, || {
            acked[0].load(Ordering::SeqCst) >= t0 + 20
        });
    }
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.join().unwrap();
    }
    let observer = connect(&server.connect_string());
    let value = DistributedAtomicLong::new(&observer, "/chaos", None, None)
        .unwrap()
        .get_blocking()
        .unwrap()
        .post_value;
    let (acked, unknown) = (total(&acked) as i64, unknown.load(Ordering::SeqCst) as i64);
    let failed = failed.lock().unwrap();
    eprintln!(
        "chaos: acknowledged {acked}, outcome unknown {unknown}, failed {}, final value {value}",
        failed.len()
    );
    for f in failed.iter().take(5) {
        eprintln!("  failed: {f}");
    }
    assert!(
        acked <= value,
        "an acknowledged increment was lost: {acked} acknowledged, value {value}"
    );
    assert!(
        value <= acked + unknown,
        "an increment was doubled: {acked} + {unknown} unknown < value {value}"
    );
    observer.close_blocking();
}

// ---------------------------------------------------------------------------------------------
// Promotion to a lock
// ---------------------------------------------------------------------------------------------

#[test]
fn failed_optimistic_tries_are_promoted_to_the_lock_and_then_succeed() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = connect(&proxy.connect_string());
    let rival = connect(&server.connect_string());
    let promoted = PromotedToLock::builder()
        .lock_path("/promo/lock")
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
    let counter = Arc::new(
        DistributedAtomicLong::new(&client, "/promo/counter", Some(one_try), Some(promoted))
            .unwrap(),
    );
    let rivals = DistributedAtomicLong::new(&rival, "/promo/counter", None, None).unwrap();
    rivals.force_set_blocking(100).unwrap();
    // Every request of ours takes 1 s each way: the rival writes between our read and our
    // conditional write, so the one optimistic try fails.
    proxy.delay(SECOND);
    let sets = client.request_counts().set_data;
    let adder = {
        let counter = counter.clone();
        thread::spawn(move || counter.add_blocking(5))
    };
    // Our read was answered and our conditional write is on its way (1 s in the proxy):
    // the rival's write gets there first.
    wait_until("our write to be sent", 10 * SECOND, || {
        client.request_counts().set_data > sets
    });
    assert_eq!(rivals.add_and_get_blocking(1, None).unwrap(), 101);
    let v = adder.join().unwrap().unwrap();
    assert!(v.succeeded, "{v:?}");
    assert_eq!(v.stats.optimistic_tries, 1);
    assert!(v.stats.promoted_lock_tries >= 1, "{v:?}");
    assert!(v.stats.promoted_time > Duration::ZERO);
    assert_eq!((v.pre_value, v.post_value), (101, 106));
    proxy.restore();
    assert_eq!(rivals.get_blocking().unwrap().post_value, 106);
    // The promoted lock was released: its directory holds no lock node.
    let left =
        zkrecipes::runtime::block_on(zkrecipes_testing::children_left(&rival, "/promo/lock"));
    assert!(left.is_empty(), "lock nodes left behind: {left:?}");
    client.close_blocking();
    rival.close_blocking();
}

// ---------------------------------------------------------------------------------------------
// SharedCount
// ---------------------------------------------------------------------------------------------

fn count_changes(count: &SharedCount) -> tokio::sync::mpsc::UnboundedReceiver<VersionedValue<i32>> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    count.add_listener(move |e| {
        if let SharedCountEvent::CountChanged(v) = e {
            let _ = tx.send(v);
        }
    });
    rx
}

/// A started count whose node another client overwrites with garbage must not keep answering
/// the stale value silently (Curator does): listeners hear `CorruptedData`, `get_count` fails
/// with `CorruptedData` until a valid value is written, then a change is heard again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_shared_count_is_reported_until_a_valid_value_returns() {
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    let b = builder(&server.connect_string()).connect().await.unwrap();
    let sa = SharedCount::new(&a, "/shared/garbage", 5).unwrap();
    sa.start().await.unwrap();
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    sa.add_listener(move |e| {
        if !matches!(e, SharedCountEvent::StateChanged(_)) {
            let _ = tx.send(e);
        }
    });
    assert_eq!(sa.get_count().unwrap(), 5);
    b.set_data("/shared/garbage", b"abc", None).await.unwrap();
    let heard = tokio::time::timeout(5 * SECOND, events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(heard, SharedCountEvent::CorruptedData { version: 1 });
    let e = sa.get_count().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptedData, "{e}");
    assert!(e.message().contains("/shared/garbage"), "{e}");
    assert!(sa.get_versioned_value().is_err());
    b.set_data("/shared/garbage", &9i32.to_be_bytes(), None)
        .await
        .unwrap();
    let heard = tokio::time::timeout(5 * SECOND, events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        heard,
        SharedCountEvent::CountChanged(VersionedValue {
            version: 2,
            value: 9
        })
    );
    assert_eq!(sa.get_count().unwrap(), 9);
    sa.close();
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_listeners_hear_every_change_by_another_client() {
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    let b = builder(&server.connect_string()).connect().await.unwrap();
    let sa = SharedCount::new(&a, "/shared/listen", 0).unwrap();
    assert_eq!(
        sa.get_versioned_value().unwrap(),
        VersionedValue {
            version: -1,
            value: 0
        }
    ); // the seed, before start
    sa.start().await.unwrap();
    let mut changes = count_changes(&sa);
    // CURATOR-329: a second count with another seed sees the node's value, not its seed.
    let sb = SharedCount::new(&b, "/shared/listen", 99).unwrap();
    sb.start().await.unwrap();
    assert_eq!(sb.get_count().unwrap(), 0);
    assert_eq!(
        a.get_data("/shared/listen").await.unwrap().0,
        0i32.to_be_bytes()
    );
    for i in 1..=20 {
        sb.set_count(i).await.unwrap();
        let heard = tokio::time::timeout(5 * SECOND, changes.recv())
            .await
            .expect("listener not called")
            .unwrap();
        assert_eq!(
            heard,
            VersionedValue {
                version: i,
                value: i
            }
        );
    }
    assert_eq!(
        sa.get_versioned_value().unwrap(),
        VersionedValue {
            version: 20,
            value: 20
        }
    );
    assert_eq!(
        a.get_data("/shared/listen").await.unwrap().0,
        20i32.to_be_bytes()
    );
    sa.close();
    sb.set_count(21).await.unwrap();
    // After close no listener is called (the next change is not delivered).
    assert!(
        tokio::time::timeout(Duration::from_millis(500), changes.recv())
            .await
            .map_or(true, |v| v.is_none())
    );
    assert!(matches!(sa.set_count(1).await, Err(Error::Closed(_))));
    sb.close();
    a.close().await;
    b.close().await;
}

/// A count node deleted and made again while this client was cut off starts again at version
/// 0: its value is news to the listeners. Before, only a newer version number was, so version
/// 0 after version 5 went unheard while `get_count` already said 42.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_listeners_hear_a_node_made_again_at_version_zero() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let a = builder(&proxy.connect_string()).connect().await.unwrap();
    let b = builder(&server.connect_string()).connect().await.unwrap();
    let sa = SharedCount::new(&a, "/shared/again", 0).unwrap();
    sa.start().await.unwrap();
    let mut changes = count_changes(&sa);
    let sb = SharedCount::new(&b, "/shared/again", 0).unwrap();
    sb.start().await.unwrap();
    for i in 1..=5 {
        sb.set_count(i).await.unwrap();
        let heard = tokio::time::timeout(5 * SECOND, changes.recv())
            .await
            .expect("listener not called")
            .unwrap();
        assert_eq!(heard.version, i);
    }
    proxy.cut();
    b.delete("/shared/again", Default::default()).await.unwrap();
    // With parents: the container `/shared` may be reaped as soon as its last child went.
    b.create(
        "/shared/again",
        &42i32.to_be_bytes(),
        CreateOptions::default().parents(),
    )
    .await
    .unwrap();
    proxy.restore();
    let heard = tokio::time::timeout(20 * SECOND, changes.recv())
        .await
        .expect("the value of the node made again was not heard")
        .unwrap();
    assert_eq!(
        heard,
        VersionedValue {
            version: 0,
            value: 42
        }
    );
    assert_eq!(sa.get_count().unwrap(), 42);
    sa.close();
    sb.close();
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_set_count_with_a_stale_version_returns_false() {
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    let b = builder(&server.connect_string()).connect().await.unwrap();
    let sa = SharedCount::new(&a, "/shared/cas", 1).unwrap();
    let sb = SharedCount::new(&b, "/shared/cas", 1).unwrap();
    assert!(matches!(
        sa.try_set_count(&sa.get_versioned_value().unwrap(), 2)
            .await,
        Err(Error::InvalidArgument(_))
    ));
    sa.start().await.unwrap();
    sb.start().await.unwrap();
    let stale = sa.get_versioned_value().unwrap();
    assert_eq!(
        stale,
        VersionedValue {
            version: 0,
            value: 1
        }
    );
    sb.set_count(5).await.unwrap();
    assert!(!sa.try_set_count(&stale, 7).await.unwrap());
    assert_eq!(
        b.get_data("/shared/cas").await.unwrap().0,
        5i32.to_be_bytes()
    );
    // A failed try leaves (or soon brings) the fresh value, to try again with.
    eventually("a sees b's count", 5 * SECOND, || async {
        sa.get_versioned_value().unwrap()
            == VersionedValue {
                version: 1,
                value: 5,
            }
    })
    .await;
    let fresh = sa.get_versioned_value().unwrap();
    assert!(sa.try_set_count(&fresh, 7).await.unwrap());
    assert_eq!(
        sa.get_versioned_value().unwrap(),
        VersionedValue {
            version: 2,
            value: 7
        }
    );
    // Stale at the server: the version check is ZooKeeper's, not only our memory's.
    assert!(!sb
        .try_set_count(
            &VersionedValue {
                version: 1,
                value: 5
            },
            9
        )
        .await
        .unwrap());
    assert_eq!(
        b.get_data("/shared/cas").await.unwrap().0,
        7i32.to_be_bytes()
    );
    sa.close();
    sb.close();
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_rereads_and_keeps_listening_after_its_session_expires() {
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    let b = builder(&server.connect_string()).connect().await.unwrap();
    let sa = SharedCount::new(&a, "/shared/expiry", 3).unwrap();
    sa.start().await.unwrap();
    let states = Arc::new(Mutex::new(Vec::new()));
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    {
        let states = states.clone();
        sa.add_listener(move |e| match e {
            SharedCountEvent::StateChanged(s) => states.lock().unwrap().push(s),
            SharedCountEvent::CountChanged(v) => {
                let _ = tx.send(v);
            }
            SharedCountEvent::CorruptedData { version } => panic!("no garbage here ({version})"),
        });
    }
    let sb = SharedCount::new(&b, "/shared/expiry", 0).unwrap();
    sb.start().await.unwrap();
    let old_session = a.session_id();
    zkrecipes_testing::expire_client_session(&a).await.unwrap();
    eventually(
        "LOST then RECONNECTED reach the listener",
        20 * SECOND,
        || async {
            let s = states.lock().unwrap();
            s.contains(&ConnectionState::Lost) && s.last() == Some(&ConnectionState::Reconnected)
        },
    )
    .await;
    assert_ne!(a.session_id(), old_session);
    // The old session's watch is gone: only a re-read after RECONNECTED re-arms it.
    sb.set_count(8).await.unwrap();
    let heard = tokio::time::timeout(10 * SECOND, async {
        while let Some(v) = changes.recv().await {
            if v.value == 8 {
                return v;
            }
        }
        panic!("the listener went away");
    })
    .await
    .expect("a hears 8 through a new watch");
    assert_eq!(heard.version, 1);
    assert_eq!(sa.get_count().unwrap(), 8);
    sa.close();
    sb.close();
    a.close().await;
    b.close().await;
}

// ---------------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_node_data_is_an_error_naming_the_path_and_is_never_overwritten() {
    let server = TestingServer::start();
    let client = builder(&server.connect_string()).connect().await.unwrap();
    client
        .create("/bad3", &[1, 2, 3], CreateOptions::default())
        .await
        .unwrap();
    client
        .create("/text", b"hello", CreateOptions::default())
        .await
        .unwrap();
    let long = DistributedAtomicLong::new(&client, "/bad3", None, None).unwrap();
    for e in [
        long.get().await.unwrap_err(),
        long.add(1).await.unwrap_err(),
        long.add_and_get(1, Some(5 * SECOND)).await.unwrap_err(),
        long.try_set(1).await.unwrap_err(),
        long.compare_and_set(0, 1).await.unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::CorruptedData, "{e}");
        assert!(
            e.message().contains("/bad3") && e.message().contains("0x01, 0x02, 0x03"),
            "{e}"
        );
    }
    assert_eq!(client.get_data("/bad3").await.unwrap().0, vec![1, 2, 3]);
    // A text value (a "non-numeric seed" written by someone else) is corrupted data too.
    let int = DistributedAtomicInteger::new(&client, "/text", None, None).unwrap();
    assert_eq!(
        int.add_and_get(1, None).await.unwrap_err().kind(),
        ErrorKind::CorruptedData
    );
    let count = SharedCount::new(&client, "/text", 0).unwrap();
    let e = count.start().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptedData, "{e}");
    assert!(e.message().contains("/text"));
    assert_eq!(client.get_data("/text").await.unwrap().0, b"hello");
    // force_set repairs it (an unconditional write), after which counting works.
    long.force_set(3).await.unwrap();
    assert_eq!(long.add_and_get(1, None).await.unwrap(), 4);
    client.close().await;
}

/// Curator's layouts with something below a counter work: a promoted lock under its counter
/// (its directory, a container, made and emptied under the counter node), and counters nested
/// in one another. Only an empty directory is taken for a lock's (the test below).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_with_its_promoted_lock_or_another_counter_below_it_counts() {
    let server = TestingServer::start();
    let client = builder(&server.connect_string()).connect().await.unwrap();
    let promoted = PromotedToLock::builder()
        .lock_path("/nested/c/lock")
        .timeout(10 * SECOND)
        .build()
        .unwrap();
    let zero_tries = RetryPolicy::NTimes {
        n: 0,
        sleep: Duration::ZERO,
    };
    let c =
        DistributedAtomicLong::new(&client, "/nested/c", Some(zero_tries), Some(promoted)).unwrap();
    assert_eq!(c.add_and_get(1, None).await.unwrap(), 1);
    // The promoted lock's directory under the counter: made, used and emptied, as when a
    // try is promoted (Curator's own lock there, or ours).
    let lock = InterProcessMutex::new(&client, "/nested/c/lock").unwrap();
    let owner = Owner::new();
    assert!(lock.acquire(owner, Some(5 * SECOND)).await.unwrap());
    assert_eq!(c.add_and_get(1, None).await.unwrap(), 2);
    lock.release(owner).await.unwrap();
    let (_, stat) = client.get_data("/nested/c").await.unwrap();
    assert!(stat.cversion != 0, "the counter had a child");
    assert_eq!(c.add_and_get(1, None).await.unwrap(), 3);
    assert_eq!(c.get().await.unwrap().post_value, 3);
    // Counters nested in one another.
    let outer = DistributedAtomicLong::new(&client, "/nested/c/inner", None, None).unwrap();
    assert_eq!(outer.add_and_get(5, None).await.unwrap(), 5);
    assert_eq!(c.add_and_get(1, None).await.unwrap(), 4);
    assert_eq!(c.get().await.unwrap().post_value, 4);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_on_a_lock_node_or_lock_directory_is_refused() {
    let server = TestingServer::start();
    let client = builder(&server.connect_string()).connect().await.unwrap();
    let mutex = InterProcessMutex::new(&client, "/locks/m").unwrap();
    let owner = Owner::new();
    assert!(mutex.acquire(owner, Some(5 * SECOND)).await.unwrap());
    let node = mutex.lock_node(owner).expect("our lock node");
    assert_eq!(mutex.participant_nodes().await.unwrap(), vec![node.clone()]);
    let on_node = DistributedAtomicLong::new(&client, &node, None, None).unwrap();
    let e = on_node.add_and_get(1, None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(
        e.message().contains("ephemeral") && e.message().contains(&node),
        "{e}"
    );
    let on_dir = DistributedAtomicLong::new(&client, "/locks/m", None, None).unwrap();
    let e = on_dir.add(1).await.unwrap_err();
    assert!(
        e.kind() == ErrorKind::InvalidArgument && e.message().contains("children"),
        "{e}"
    );
    let count = SharedCount::new(&client, "/locks/m", 0).unwrap();
    assert_eq!(
        count.start().await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // The lock itself is untouched.
    assert!(mutex.is_owned_by(owner));
    assert!(client.get_data(&node).await.unwrap().0.len() != 8);
    mutex.release(owner).await.unwrap();
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_client_gives_closed_everywhere() {
    let server = TestingServer::start();
    let client = builder(&server.connect_string()).connect().await.unwrap();
    let c = DistributedAtomicLong::new(&client, "/closed", None, None).unwrap();
    assert_eq!(c.add_and_get(1, None).await.unwrap(), 1);
    let count = SharedCount::new(&client, "/closed-count", 0).unwrap();
    client.close().await;
    let kind = |r: Result<(), Error>| r.unwrap_err().kind();
    assert_eq!(kind(c.get().await.map(drop)), ErrorKind::Closed);
    assert_eq!(kind(c.add(1).await.map(drop)), ErrorKind::Closed);
    assert_eq!(
        kind(c.add_and_get(1, None).await.map(drop)),
        ErrorKind::Closed
    );
    assert_eq!(
        kind(c.compare_and_set(1, 2).await.map(drop)),
        ErrorKind::Closed
    );
    assert_eq!(kind(c.try_set(1).await.map(drop)), ErrorKind::Closed);
    assert_eq!(kind(c.force_set(1).await), ErrorKind::Closed);
    assert_eq!(kind(c.initialize(1).await.map(drop)), ErrorKind::Closed);
    assert_eq!(kind(count.start().await), ErrorKind::Closed);
}

#[test]
fn bad_paths_and_options_are_invalid_arguments() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    for path in ["", "counter", "/a/", "/a//b", "/a/../b", "/", "/a\u{0}b"] {
        let l = DistributedAtomicLong::new(&client, path, None, None).unwrap_err();
        let i = DistributedAtomicInteger::new(&client, path, None, None).unwrap_err();
        let s = SharedCount::new(&client, path, 0).unwrap_err();
        let p = PromotedToLock::new(path).unwrap_err();
        for e in [l, i, s, p] {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{path:?}: {e}");
        }
    }
    let bad_policy = RetryPolicy::ExponentialBackoff {
        base_sleep: SECOND,
        max_retries: 99,
        max_sleep: SECOND,
    };
    assert_eq!(
        DistributedAtomicLong::new(&client, "/c", Some(bad_policy), None)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    let same = PromotedToLock::new("/c").unwrap();
    assert_eq!(
        DistributedAtomicLong::new(&client, "/c", None, Some(same))
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    let count = SharedCount::new(&client, "/twice", 0).unwrap();
    count.start_blocking().unwrap();
    assert_eq!(
        count.start_blocking().unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    count.close();
    assert_eq!(
        count.start_blocking().unwrap_err().kind(),
        ErrorKind::Closed
    );
    client.close_blocking();
}

#[test]
fn creating_the_node_is_not_mistaken_for_a_conflict() {
    // Ten clients race to create the node with their first add: exactly one creates it, the
    // others see NodeExists as a conflict and add on top.
    let server = TestingServer::start();
    let connect_string = server.connect_string();
    let go = Arc::new(std::sync::Barrier::new(10));
    let threads: Vec<_> = (0..10)
        .map(|_| {
            let (connect_string, go) = (connect_string.clone(), go.clone());
            thread::spawn(move || {
                let client = connect(&connect_string);
                let c =
                    DistributedAtomicInteger::new(&client, "/race/created", None, None).unwrap();
                go.wait();
                let v = c.add_and_get_blocking(3, Some(20 * SECOND)).unwrap();
                client.close_blocking();
                v
            })
        })
        .collect();
    let mut seen: Vec<i32> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(seen, (1..=10).map(|i| i * 3).collect::<Vec<_>>());
    let client = connect(&connect_string);
    assert_eq!(raw(&client, "/race/created"), 30i32.to_be_bytes());
    client.close_blocking();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_and_distributed_atomic_integer_share_one_layout() {
    // Both are Curator's 4-byte big-endian int: a SharedCount watching the node of a
    // DistributedAtomicInteger hears its increments.
    let server = TestingServer::start();
    let a = builder(&server.connect_string()).connect().await.unwrap();
    let b = builder(&server.connect_string()).connect().await.unwrap();
    let count = SharedCount::new(&a, "/layout/n", 40).unwrap();
    count.start().await.unwrap();
    let mut changes = count_changes(&count);
    let int = DistributedAtomicInteger::new(&b, "/layout/n", None, None).unwrap();
    assert_eq!(int.get().await.unwrap().post_value, 40);
    assert_eq!(int.add_and_get(2, None).await.unwrap(), 42);
    let heard = tokio::time::timeout(5 * SECOND, changes.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        heard,
        VersionedValue {
            version: 1,
            value: 42
        }
    );
    count.set_count(-7).await.unwrap();
    assert_eq!(int.get().await.unwrap().post_value, -7);
    count.close();
    a.close().await;
    b.close().await;
}
