//! Cohort handoffs (`InterProcessMutex::with_cohort`) against a real ZooKeeper: mutual
//! exclusion inside the process and against another process's plain mutex, wide fencing tokens
//! strictly increasing across in-memory and ZooKeeper handoffs, a remote contender served
//! within the fairness bound, one node in the queue for the whole cohort, timeouts and
//! cancellation leaving nothing behind, reentrancy, session expiry, bad input.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use zkrecipes::lock::{CohortOptions, FencingToken, InterProcessMutex, ReleaseStatus};
use zkrecipes::{Client, ClientBuilder, Error, Owner};
use zkrecipes_testing::{FaultProxy, TestingServer};

const WAIT: Duration = Duration::from_secs(30);

fn server() -> &'static TestingServer {
    static SERVER: OnceLock<TestingServer> = OnceLock::new();
    SERVER.get_or_init(TestingServer::start)
}

async fn connect_to(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect")
}

async fn connect() -> Client {
    connect_to(&server().connect_string()).await
}

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

/// Waits (bounded) for every task and returns their results in order.
async fn finish<T>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for t in tasks {
        out.push(
            tokio::time::timeout(Duration::from_secs(120), t)
                .await
                .expect("the owners finish")
                .expect("an owner task"),
        );
    }
    out
}

/// Waits (bounded) until the lock path has no node left.
async fn no_node_left(m: &InterProcessMutex) {
    eventually("no node is left", WAIT, || async {
        m.participant_nodes().await.unwrap().is_empty()
    })
    .await;
}

fn cohort(client: &Client, path: &str, opts: CohortOptions) -> InterProcessMutex {
    InterProcessMutex::new(client, path)
        .unwrap()
        .with_cohort(opts)
        .unwrap()
}

/// What every holder records under its hold: no overlap, and each wide token above the last.
#[derive(Default)]
struct Ledger {
    inside: AtomicBool,
    last: Mutex<Option<FencingToken>>,
    holds: AtomicUsize,
    zxids: Mutex<std::collections::BTreeSet<i64>>,
}

impl Ledger {
    fn enter(&self, token: FencingToken, who: &str) {
        assert!(
            !self.inside.swap(true, Ordering::SeqCst),
            "two holders at once ({who})"
        );
        let mut last = self.last.lock().unwrap();
        if let Some(prev) = *last {
            assert!(
                token > prev && token.wide() > prev.wide(),
                "fencing token did not increase: {prev:?} -> {token:?} ({who})"
            );
        }
        *last = Some(token);
        self.zxids.lock().unwrap().insert(token.zxid);
        self.holds.fetch_add(1, Ordering::SeqCst);
    }

    fn leave(&self) {
        assert!(self.inside.swap(false, Ordering::SeqCst));
    }
}

/// The seeds' scenario with cohorts: 100 owners of one process on one mutex, and another
/// process (a plain mutex on its own session) contending the whole time. Mutual exclusion
/// holds across both, every hold's wide token is above the previous hold's, most handoffs
/// happen in memory (far fewer lock nodes than holds), and the other process is served
/// again and again, each wait bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hundred_owners_and_a_remote_contender_share_a_cohort_mutex() {
    let local = connect().await;
    let remote = connect().await;
    let path = "/cohort/hundred";
    let opts = CohortOptions {
        max_handoffs: 32,
        max_hold: Duration::from_millis(20),
    };
    let m = cohort(&local, path, opts);
    let other = InterProcessMutex::new(&remote, path).unwrap();
    let ledger = Arc::new(Ledger::default());
    let stop = Arc::new(AtomicBool::new(false));

    let remote_task = {
        let (other, ledger, stop) = (other.clone(), ledger.clone(), stop.clone());
        tokio::spawn(async move {
            let me = Owner::new();
            let mut waits = Vec::new();
            while !stop.load(Ordering::SeqCst) || waits.len() < 5 {
                let asked = Instant::now();
                assert!(
                    other.acquire(me, Some(WAIT)).await.unwrap(),
                    "remote starved"
                );
                waits.push(asked.elapsed());
                let token = other.fencing_token_wide(me).unwrap();
                assert_eq!(token.handoff, 0);
                ledger.enter(token, "remote");
                tokio::time::sleep(Duration::from_millis(1)).await;
                ledger.leave();
                other.release(me).await.unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            waits
        })
    };

    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let (m, ledger) = (m.clone(), ledger.clone());
            tokio::spawn(async move {
                let me = Owner::new();
                for _ in 0..20 {
                    assert!(m.acquire(me, Some(WAIT)).await.unwrap());
                    assert!(m.is_owned_by(me));
                    assert!(m.is_held_valid(me));
                    ledger.enter(m.fencing_token_wide(me).unwrap(), "local");
                    tokio::task::yield_now().await;
                    ledger.leave();
                    assert_eq!(
                        m.release_with_status(me).await.unwrap(),
                        ReleaseStatus::Released
                    );
                }
            })
        })
        .collect();
    finish(tasks).await;
    stop.store(true, Ordering::SeqCst);
    let waits = finish(vec![remote_task]).await.remove(0);
    let local_holds = 100 * 20;
    assert_eq!(
        ledger.holds.load(Ordering::SeqCst),
        local_holds + waits.len()
    );
    let nodes = ledger.zxids.lock().unwrap().len();
    assert!(
        nodes * 4 < local_holds,
        "{nodes} lock nodes for {local_holds} local holds: handoffs are not in memory"
    );
    assert!(
        waits.len() >= 5,
        "the remote contender got the lock {} times",
        waits.len()
    );
    let worst = waits.iter().max().unwrap();
    assert!(
        *worst < Duration::from_secs(10),
        "a remote wait took {worst:?}"
    );
    assert!(!m.is_acquired_in_this_process());
    no_node_left(&m).await;
    local.close().await;
    remote.close().await;
}

/// To ZooKeeper the cohort is one contender: however many local owners wait, one node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cohort_queues_one_node_however_many_owners_wait() {
    let c = connect().await;
    let path = "/cohort/onenode";
    let m = cohort(&c, path, CohortOptions::default());
    let holder = Owner::new();
    assert!(m.acquire(holder, None).await.unwrap());
    let node = m.lock_node(holder).unwrap();
    assert!(node.starts_with(&format!("{path}/_c_")), "{node}");
    let waiters: Vec<_> = (0..10)
        .map(|_| {
            let m = m.clone();
            tokio::spawn(async move {
                let me = Owner::new();
                assert!(m.acquire(me, Some(WAIT)).await.unwrap());
                let node = m.lock_node(me).unwrap();
                m.release(me).await.unwrap();
                node
            })
        })
        .collect();
    eventually("ten owners queue locally", WAIT, || async {
        m.local_waiters() == 10
    })
    .await;
    assert_eq!(m.participant_nodes().await.unwrap(), vec![node.clone()]);
    m.release(holder).await.unwrap();
    for w in waiters {
        // Handed over in memory: the same node.
        assert_eq!(w.await.unwrap(), node);
    }
    eventually("the node goes with the last release", WAIT, || async {
        m.participant_nodes().await.unwrap().is_empty()
    })
    .await;
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrancy_not_owner_timeout_and_cancellation() {
    let c = connect().await;
    let path = "/cohort/edges";
    let m = cohort(&c, path, CohortOptions::default());
    let (a, b) = (Owner::new(), Owner::new());
    assert!(m.acquire(a, None).await.unwrap());
    assert!(m.acquire(a, None).await.unwrap());
    let t1 = m.fencing_token_wide(a).unwrap();
    assert!(matches!(m.release(b).await, Err(Error::NotOwner(_))));
    // b times out in the local queue; a cancelled acquire leaves it too.
    assert!(!m
        .acquire(b, Some(Duration::from_millis(100)))
        .await
        .unwrap());
    let cancelled = tokio::time::timeout(Duration::from_millis(100), m.acquire(b, None)).await;
    assert!(cancelled.is_err());
    assert_eq!(
        m.release_with_status(a).await.unwrap(),
        ReleaseStatus::StillHeld(1)
    );
    assert_eq!(
        m.release_with_status(a).await.unwrap(),
        ReleaseStatus::Released
    );
    assert!(matches!(m.release(a).await, Err(Error::NotOwner(_))));
    no_node_left(&m).await;
    // A new node, a larger token.
    assert!(m.acquire(b, Some(WAIT)).await.unwrap());
    let t2 = m.fencing_token_wide(b).unwrap();
    assert!(t2 > t1 && t2.zxid > t1.zxid, "{t1:?} -> {t2:?}");
    assert_eq!(m.fencing_token(b), Some(t2.zxid));
    m.release(b).await.unwrap();

    // The last waiter timing out while the node is being acquired cancels that acquire.
    let other_client = connect().await;
    let other = InterProcessMutex::new(&other_client, path).unwrap();
    let o = Owner::new();
    assert!(other.acquire(o, None).await.unwrap());
    assert!(!m
        .acquire(a, Some(Duration::from_millis(200)))
        .await
        .unwrap());
    eventually("the cohort's node is gone", WAIT, || async {
        other.participant_nodes().await.unwrap().len() == 1
    })
    .await;
    other.release(o).await.unwrap();
    other_client.close().await;
    c.close().await;
}

/// Polls `f` exactly once and drops it; whether it was still pending. (A zero timeout around
/// it polls it again once its timer fires, by when a request may have been answered.)
async fn polled_once_then_dropped<F: std::future::Future>(f: F) -> bool {
    let mut f = Box::pin(f);
    std::future::poll_fn(|cx| std::task::Poll::Ready(f.as_mut().poll(cx).is_pending())).await
}

/// A release whose caller stops waiting for it (a timeout around it, an aborted task, a
/// cancelled asyncio task) still ends: on the check path (budget spent, a local owner waiting)
/// the waiter gets the lock; on the release path the node goes and the next acquire gets a new
/// one. Before, the mutex object stayed Checking or Busy for good: every later acquire queued
/// forever, and the checked node stayed on the server for the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_dropped_before_it_ends_still_ends() {
    let c = connect().await;
    let path = "/cohort/dropped-release";
    let m = cohort(
        &c,
        path,
        CohortOptions {
            max_handoffs: 1,
            max_hold: Duration::from_secs(1),
        },
    );
    let (a, b) = (Owner::new(), Owner::new());
    assert!(m.acquire(a, Some(WAIT)).await.unwrap());
    let waiting = {
        let m = m.clone();
        tokio::spawn(async move { m.acquire(b, Some(WAIT)).await })
    };
    eventually("b waits in the cohort", WAIT, || async {
        m.local_waiters() == 1
    })
    .await;
    // Polled once (it stops at the check's getChildren), then dropped.
    assert!(
        polled_once_then_dropped(m.release(a)).await,
        "the check's request answered within one poll"
    );
    assert!(
        tokio::time::timeout(WAIT + WAIT, waiting)
            .await
            .expect("b's acquire ends")
            .unwrap()
            .unwrap(),
        "b gets the lock once the dropped release's check is done"
    );
    // The release path: no waiter, the node is released; dropped after its first poll.
    assert!(
        polled_once_then_dropped(m.release(b)).await,
        "the release's delete answered within one poll"
    );
    no_node_left(&m).await;
    assert!(
        m.acquire(a, Some(WAIT)).await.unwrap(),
        "the next acquire gets a new node"
    );
    m.release(a).await.unwrap();
    no_node_left(&m).await;
    c.close().await;
}

/// An acquire with a zero (or shorter than a round trip) timeout makes one full attempt, as a
/// plain mutex's does: it gets a free lock, and is refused one another client holds. Before,
/// it gave up before the node's acquire could answer, so a try-lock never got even a free lock.
/// A waiter that joined the attempt with a longer timeout goes on waiting after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_timeout_acquire_makes_one_full_attempt() {
    let c = connect().await;
    let other_client = connect().await;
    let path = "/cohort/try";
    let m = cohort(&c, path, CohortOptions::default());
    let (a, b) = (Owner::new(), Owner::new());
    assert!(
        m.acquire(a, Some(Duration::ZERO)).await.unwrap(),
        "a free lock is got with a zero timeout"
    );
    m.release(a).await.unwrap();
    no_node_left(&m).await;

    let other = InterProcessMutex::new(&other_client, path).unwrap();
    let o = Owner::new();
    assert!(other.acquire(o, None).await.unwrap());
    let trying = {
        let m = m.clone();
        tokio::spawn(async move { m.acquire(a, Some(Duration::from_millis(300))).await })
    };
    eventually("a's attempt waits in the cohort", WAIT, || async {
        m.local_waiters() == 1
    })
    .await;
    let waiting = {
        let m = m.clone();
        tokio::spawn(async move { m.acquire(b, Some(WAIT)).await })
    };
    assert!(
        !trying.await.unwrap().unwrap(),
        "a lock another client holds is refused once the timeout passes"
    );
    assert!(!m.acquire(a, Some(Duration::ZERO)).await.unwrap());
    other.release(o).await.unwrap();
    assert!(
        waiting.await.unwrap().unwrap(),
        "the waiter that joined goes on and gets the lock"
    );
    m.release(b).await.unwrap();
    no_node_left(&m).await;
    other_client.close().await;
    c.close().await;
}

/// The session of the cohort's node expires while a local owner holds and others wait: the
/// holder is told (lost signal, on_lost with its own owner), the waiters get the lock on a new
/// node of the new session, with larger tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_expiry_is_the_holders_loss_and_the_waiters_go_on() {
    let proxy = FaultProxy::start(&server().connect_string());
    let c = ClientBuilder::new(proxy.connect_string())
        .session_timeout(Duration::from_secs(2))
        .connection_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let observer = connect().await;
    let m = cohort(&c, "/cohort/expiry", CohortOptions::default());
    let told = Arc::new(Mutex::new(Vec::new()));
    {
        let told = told.clone();
        m.on_lost(move |o| told.lock().unwrap().push(o));
    }
    let holder = Owner::new();
    assert!(m.acquire(holder, None).await.unwrap());
    let t1 = m.fencing_token_wide(holder).unwrap();
    let lost = m.lost_signal(holder);
    let waiter = {
        let m = m.clone();
        tokio::spawn(async move {
            let me = Owner::new();
            assert!(m.acquire(me, Some(WAIT)).await.unwrap());
            let t = m.fencing_token_wide(me).unwrap();
            let valid = m.is_held_valid(me);
            m.release(me).await.unwrap();
            (t, valid)
        })
    };
    let node = m.lock_node(holder).unwrap();
    proxy.blackhole();
    eventually("the server expires the session", WAIT, || async {
        observer.exists(&node).await.unwrap().is_none()
    })
    .await;
    proxy.restore();
    assert!(
        tokio::time::timeout(WAIT, lost).await.unwrap(),
        "lost, not released"
    );
    assert!(!m.is_held_valid(holder));
    assert!(matches!(
        m.acquire(holder, Some(Duration::ZERO)).await,
        Err(Error::ConnectionLoss(_) | Error::SessionExpired(_))
    ));
    eventually("on_lost names the holder", WAIT, || async {
        told.lock().unwrap().as_slice() == [holder]
    })
    .await;
    assert_eq!(
        m.release_with_status(holder).await.unwrap(),
        ReleaseStatus::WasLost
    );
    let (t2, valid) = tokio::time::timeout(WAIT, waiter).await.unwrap().unwrap();
    assert!(valid);
    assert!(t2 > t1 && t2.zxid > t1.zxid, "{t1:?} -> {t2:?}");
    observer.close().await;
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_cohort_options_are_refused() {
    let c = connect().await;
    let m = InterProcessMutex::new(&c, "/cohort/bad").unwrap();
    let zero = CohortOptions {
        max_handoffs: 0,
        ..CohortOptions::default()
    };
    assert!(matches!(
        m.clone().with_cohort(zero),
        Err(Error::InvalidArgument(_))
    ));
    let m = m.with_cohort(CohortOptions::default()).unwrap();
    assert_eq!(m.cohort_options(), Some(CohortOptions::default()));
    // One node serves every local owner: revoking "its" holder makes no sense, and saying so
    // beats ignoring the call (it was ignored with a log line).
    let revoke = m.make_revocable(|_| {});
    assert!(
        matches!(&revoke, Err(Error::InvalidArgument(m)) if m.contains("not revocable")),
        "{revoke:?}"
    );
    assert!(matches!(
        m.with_cohort(CohortOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    let plain = InterProcessMutex::new(&c, "/cohort/bad").unwrap();
    let o = Owner::new();
    assert!(plain.acquire(o, None).await.unwrap());
    assert_eq!(
        plain.fencing_token_wide(o),
        Some(FencingToken {
            zxid: plain.fencing_token(o).unwrap(),
            handoff: 0
        })
    );
    assert!(matches!(
        plain.clone().with_cohort(CohortOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    plain.release(o).await.unwrap();
    c.close().await;
}

/// A budget of one handoff: every release looks for other contenders, so checks overlap with
/// acquires and with each other all the time, with a remote contender coming and going. No
/// release may fail, no two holders may overlap, tokens strictly increase.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_budget_of_one_checks_on_every_release_without_losing_exclusion() {
    let local = connect().await;
    let remote = connect().await;
    let path = "/cohort/budget1";
    let m = cohort(
        &local,
        path,
        CohortOptions {
            max_handoffs: 1,
            max_hold: Duration::from_millis(1),
        },
    );
    let other = InterProcessMutex::new(&remote, path).unwrap();
    let ledger = Arc::new(Ledger::default());
    let stop = Arc::new(AtomicBool::new(false));
    let remote_task = {
        let (other, ledger, stop) = (other.clone(), ledger.clone(), stop.clone());
        tokio::spawn(async move {
            let me = Owner::new();
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) || n < 3 {
                assert!(
                    other.acquire(me, Some(WAIT)).await.unwrap(),
                    "remote starved"
                );
                ledger.enter(other.fencing_token_wide(me).unwrap(), "remote");
                ledger.leave();
                other.release(me).await.unwrap();
                n += 1;
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
            n
        })
    };
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (m, ledger) = (m.clone(), ledger.clone());
            tokio::spawn(async move {
                let me = Owner::new();
                for _ in 0..60 {
                    assert!(m.acquire(me, Some(WAIT)).await.unwrap());
                    ledger.enter(m.fencing_token_wide(me).unwrap(), "local");
                    ledger.leave();
                    m.release(me).await.unwrap();
                }
            })
        })
        .collect();
    finish(tasks).await;
    stop.store(true, Ordering::SeqCst);
    let n = finish(vec![remote_task]).await.remove(0);
    assert_eq!(ledger.holds.load(Ordering::SeqCst), 16 * 60 + n);
    no_node_left(&m).await;
    local.close().await;
    remote.close().await;
}

/// Few owners in tight loops with a small budget and nobody else: the local queue empties and
/// fills around every budget check (a release with nobody waiting gives the node back while a
/// check is in flight). Every release succeeds and exclusion holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tight_loops_around_budget_checks_never_release_twice() {
    let c = connect().await;
    let m = cohort(&c, "/cohort/tight", CohortOptions::default());
    let ledger = Arc::new(Ledger::default());
    let until = Instant::now() + Duration::from_secs(3);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (m, ledger) = (m.clone(), ledger.clone());
            zkrecipes::runtime::spawn(async move {
                let me = Owner::new();
                let mut n = 0;
                while Instant::now() < until {
                    assert!(m.acquire(me, Some(WAIT)).await.unwrap());
                    ledger.enter(m.fencing_token_wide(me).unwrap(), "local");
                    ledger.leave();
                    m.release(me).await.unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let total: usize = finish(tasks).await.into_iter().sum();
    assert_eq!(ledger.holds.load(Ordering::SeqCst), total);
    no_node_left(&m).await;
    c.close().await;
}
