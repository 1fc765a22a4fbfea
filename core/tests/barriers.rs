//! Barriers (issue 18) against a real ZooKeeper started by the harness.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::barriers::{DistributedBarrier, DistributedDoubleBarrier};
use zkrecipes::client::CreateOptions;
use zkrecipes::{Client, ClientBuilder, ConnectionState, ErrorKind, RetryPolicy};
use zkrecipes_testing::{FaultProxy, TestingServer};

const SECOND: Duration = Duration::from_secs(1);

fn connect(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(10 * SECOND)
        .connection_timeout(5 * SECOND)
        .connect_blocking()
        .expect("connect")
}

/// Waits (bounded) until `done` returns true; panics naming `what` otherwise.
fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

fn children(client: &Client, path: &str) -> Vec<String> {
    match client.get_children_blocking(path) {
        Ok(c) => c,
        Err(e) if e.kind() == ErrorKind::NoNode => Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    }
}

#[test]
fn barrier_holds_waiters_until_removed() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let barrier = DistributedBarrier::new(&client, "/b/simple").unwrap();
    // Not set: nothing to wait for.
    assert!(barrier
        .wait_on_barrier_blocking(Some(Duration::ZERO))
        .unwrap());
    barrier.set_barrier_blocking().unwrap();
    barrier.set_barrier_blocking().unwrap(); // twice is fine
    assert!(!barrier
        .wait_on_barrier_blocking(Some(Duration::from_millis(200)))
        .unwrap());
    let other = connect(&server.connect_string());
    let waiter = DistributedBarrier::new(&other, "/b/simple").unwrap();
    let (tx, rx) = mpsc::channel();
    let t = thread::spawn(move || tx.send(waiter.wait_on_barrier_blocking(None)).unwrap());
    // Still waiting after a wake-up that does not remove the barrier (its data changes).
    client.set_data_blocking("/b/simple", b"x", None).unwrap();
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    barrier.remove_barrier_blocking().unwrap();
    assert!(rx.recv_timeout(10 * SECOND).unwrap().unwrap());
    t.join().unwrap();
    barrier.remove_barrier_blocking().unwrap(); // removed twice is fine
}

#[test]
fn five_members_enter_together_and_none_early() {
    let server = TestingServer::start();
    let arrived = Arc::new(AtomicUsize::new(0));
    let inside = Arc::new(AtomicUsize::new(0));
    let most_inside = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..5)
        .map(|i| {
            let (arrived, inside, most) = (arrived.clone(), inside.clone(), most_inside.clone());
            let cs = server.connect_string();
            thread::spawn(move || {
                let client = connect(&cs);
                let member = DistributedDoubleBarrier::new(&client, "/b/double", 5).unwrap();
                // Staggered arrivals: the early ones must wait for the late ones.
                thread::sleep(Duration::from_millis(100 * i));
                arrived.fetch_add(1, Ordering::SeqCst);
                assert!(member.enter_blocking(Some(30 * SECOND)).unwrap());
                assert_eq!(
                    arrived.load(Ordering::SeqCst),
                    5,
                    "entered before all 5 arrived"
                );
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                inside.fetch_sub(1, Ordering::SeqCst);
                assert!(member.leave_blocking(Some(30 * SECOND)).unwrap());
                client.close_blocking();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(most_inside.load(Ordering::SeqCst) <= 5);
    let observer = connect(&server.connect_string());
    assert!(
        children(&observer, "/b/double").is_empty(),
        "members or ready left behind"
    );
}

#[test]
fn six_members_with_a_threshold_of_five_all_pass() {
    let server = TestingServer::start();
    let start = Arc::new(Barrier::new(6));
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let cs = server.connect_string();
            let start = start.clone();
            thread::spawn(move || {
                let client = connect(&cs);
                let member = DistributedDoubleBarrier::new(&client, "/b/six", 5).unwrap();
                start.wait();
                let entered = member.enter_blocking(Some(30 * SECOND)).unwrap();
                let left = member.leave_blocking(Some(30 * SECOND)).unwrap();
                (entered, left)
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), (true, true));
    }
}

#[test]
fn a_lone_member_stays_out_through_wakeups_and_a_connection_drop() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = ClientBuilder::new(proxy.connect_string())
        .session_timeout(10 * SECOND)
        .connection_timeout(5 * SECOND)
        .connect_blocking()
        .unwrap();
    let states = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = states.clone();
    client.add_state_listener(move |s| seen.lock().unwrap().push(s));
    let member = DistributedDoubleBarrier::new(&client, "/b/lone", 2).unwrap();
    let name = member.member_name().to_string();
    let (tx, rx) = mpsc::channel();
    let t = thread::spawn(move || tx.send(member.enter_blocking(Some(4 * SECOND))).unwrap());
    let observer = connect(&server.connect_string());
    wait_until("the member's node", 10 * SECOND, || {
        children(&observer, "/b/lone").contains(&name)
    });
    // Wake-ups: the parent's data changes, an unrelated node elsewhere, then a brief drop.
    observer
        .set_data_blocking("/b/lone", b"poke", None)
        .unwrap();
    proxy.cut();
    wait_until("SUSPENDED", 10 * SECOND, || {
        states.lock().unwrap().contains(&ConnectionState::Suspended)
    });
    proxy.restore();
    wait_until("RECONNECTED", 10 * SECOND, || {
        states
            .lock()
            .unwrap()
            .contains(&ConnectionState::Reconnected)
    });
    let entered = rx.recv_timeout(30 * SECOND).unwrap().unwrap();
    assert!(!entered, "a lone member of two entered");
    t.join().unwrap();
    // A timed-out enter removes its node (CURATOR-80).
    assert!(children(&observer, "/b/lone").is_empty());
}

#[test]
fn a_stale_ready_node_is_detected_and_made_this_rounds_never_deleted_by_enter() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    // Left over from an earlier round whose members are gone.
    client
        .create_blocking("/b/stale/ready", b"", CreateOptions::default().parents())
        .unwrap();
    let stale = client.exists_blocking("/b/stale/ready").unwrap().unwrap();
    let member = DistributedDoubleBarrier::new(&client, "/b/stale", 2).unwrap();
    assert!(!member.enter_blocking(Some(SECOND)).unwrap());
    // Not deleted: a delete judged on a read (every ready node is at version 0) could remove
    // the one another member has just made for its round.
    assert_eq!(children(&client, "/b/stale"), vec!["ready".to_string()]);
    // With a second member the barrier opens, on the same node made this round's by a write.
    let other = connect(&server.connect_string());
    let second = DistributedDoubleBarrier::new(&other, "/b/stale", 2).unwrap();
    let t = thread::spawn(move || second.enter_blocking(Some(30 * SECOND)).unwrap());
    assert!(member.enter_blocking(Some(30 * SECOND)).unwrap());
    assert!(t.join().unwrap());
    let ready = client.exists_blocking("/b/stale/ready").unwrap().unwrap();
    assert_eq!(
        ready.czxid, stale.czxid,
        "the stale node was deleted and made again"
    );
    assert!(ready.mzxid > stale.mzxid, "made this round's by a write");
}

/// A leaver deletes the `ready` node of its own round, never a later round's: a slow leaver of
/// one round must not take away the node the next round's members are entering through.
#[test]
fn leave_deletes_its_rounds_ready_node_not_the_next_rounds() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    let member = DistributedDoubleBarrier::new(&client, "/b/rounds", 1).unwrap();
    assert!(member.enter_blocking(Some(10 * SECOND)).unwrap());
    // The next round's `ready` replaces this round's before this member's leave deletes it.
    client
        .delete_blocking("/b/rounds/ready", Default::default())
        .unwrap();
    client
        .create_blocking("/b/rounds/ready", b"", CreateOptions::default())
        .unwrap();
    let next = client.exists_blocking("/b/rounds/ready").unwrap().unwrap();
    assert!(member.leave_blocking(Some(10 * SECOND)).unwrap());
    assert_eq!(
        client
            .exists_blocking("/b/rounds/ready")
            .unwrap()
            .map(|s| s.czxid),
        Some(next.czxid),
        "the next round's ready node was deleted"
    );
    // Its own round's is deleted as before.
    let again = DistributedDoubleBarrier::new(&client, "/b/own", 1).unwrap();
    assert!(again.enter_blocking(Some(10 * SECOND)).unwrap());
    assert!(again.leave_blocking(Some(10 * SECOND)).unwrap());
    assert!(client.exists_blocking("/b/own/ready").unwrap().is_none());
}

#[test]
fn entering_again_is_idempotent_and_leave_honours_its_timeout() {
    let server = TestingServer::start();
    let a = connect(&server.connect_string());
    let b = connect(&server.connect_string());
    let first = DistributedDoubleBarrier::new(&a, "/b/again", 2).unwrap();
    let second = DistributedDoubleBarrier::new(&b, "/b/again", 2).unwrap();
    let t = thread::spawn(move || {
        assert!(second.enter_blocking(Some(30 * SECOND)).unwrap());
        second
    });
    assert!(first.enter_blocking(Some(30 * SECOND)).unwrap());
    let second = t.join().unwrap();
    // Entering again: no NodeExists, still two members (CURATOR-330).
    assert!(first.enter_blocking(Some(5 * SECOND)).unwrap());
    assert_eq!(children(&a, "/b/again").len(), 3); // two members and ready
                                                   // Leaving while the other stays: the timeout is honoured (CURATOR-233/536).
    let started = Instant::now();
    assert!(!first
        .leave_blocking(Some(Duration::from_millis(300)))
        .unwrap());
    assert!(started.elapsed() < 5 * SECOND);
    assert!(second.leave_blocking(Some(10 * SECOND)).unwrap());
    assert!(first.leave_blocking(Some(10 * SECOND)).unwrap());
    assert!(children(&a, "/b/again").is_empty());
}

/// A member already in whose second enter fails (the connection is down until its timeout)
/// stays in: its node is kept, and another member's leave still waits for it. Before, the
/// failed re-enter deleted the node (as a first enter's must, CURATOR-80), so the member had
/// left without knowing, and the other member's leave returned while it was still inside.
#[test]
fn a_member_already_in_whose_enter_again_fails_stays_in() {
    let server = TestingServer::start();
    // The enter again is made as the proxy cuts the connection: its create, handed to the wire
    // client while it still looked connected, once waited there until the client gave the
    // session up (42 s, then SessionExpired: the node gone with it); vendored-client patch 25.
    let path = "/b/reenter";
    let proxy = FaultProxy::start(&server.connect_string());
    let a = ClientBuilder::new(proxy.connect_string())
        .session_timeout(30 * SECOND)
        .connection_timeout(20 * SECOND)
        .connect_blocking()
        .unwrap();
    let b = connect(&server.connect_string());
    let first = Arc::new(DistributedDoubleBarrier::new(&a, path, 2).unwrap());
    let second = DistributedDoubleBarrier::new(&b, path, 2).unwrap();
    let name = first.member_name().to_string();
    let t = {
        let first = first.clone();
        thread::spawn(move || first.enter_blocking(Some(30 * SECOND)).unwrap())
    };
    assert!(second.enter_blocking(Some(30 * SECOND)).unwrap());
    assert!(t.join().unwrap(), "the first member entered");
    // Entering again while the connection is down: no answer before its timeout.
    proxy.cut();
    let started = Instant::now();
    let again = first.enter_blocking(Some(SECOND));
    assert!(
        matches!(&again, Err(e) if e.kind() == ErrorKind::ConnectionLoss),
        "the enter again with the connection down: {again:?}"
    );
    assert!(
        started.elapsed() < 10 * SECOND,
        "a 1 s enter answered after {:?}",
        started.elapsed()
    );
    proxy.restore();
    // The connection back (a read through it answers), our node must still be there.
    a.get_children_blocking(path)
        .expect("the connection came back");
    assert!(
        children(&b, path).contains(&name),
        "the failed enter again ({again:?}) took a member that was in out of the barrier"
    );
    // And the other member's leave waits for us.
    assert!(
        !second
            .leave_blocking(Some(Duration::from_millis(500)))
            .unwrap(),
        "the other member left the barrier while this one was still in"
    );
    assert!(first.leave_blocking(Some(10 * SECOND)).unwrap());
    assert!(second.leave_blocking(Some(10 * SECOND)).unwrap());
}

/// A member whose leave timed out is out (its node went): an enter after it that times out
/// takes its new node away again (CURATOR-80), as a first enter's does, though the member had
/// entered before.
#[test]
fn an_enter_after_a_timed_out_leave_that_times_out_leaves_no_node() {
    let server = TestingServer::start();
    let a = connect(&server.connect_string());
    let b = connect(&server.connect_string());
    let first = Arc::new(DistributedDoubleBarrier::new(&a, "/b/after-leave", 2).unwrap());
    let second = DistributedDoubleBarrier::new(&b, "/b/after-leave", 2).unwrap();
    let t = {
        let first = first.clone();
        thread::spawn(move || first.enter_blocking(Some(30 * SECOND)).unwrap())
    };
    assert!(second.enter_blocking(Some(30 * SECOND)).unwrap());
    assert!(t.join().unwrap());
    assert!(!first
        .leave_blocking(Some(Duration::from_millis(300)))
        .unwrap());
    assert!(second.leave_blocking(Some(10 * SECOND)).unwrap());
    assert!(
        !first.enter_blocking(Some(SECOND)).unwrap(),
        "a lone member entered"
    );
    assert_eq!(
        children(&a, "/b/after-leave"),
        Vec::<String>::new(),
        "the timed-out enter left its node: the next round would open one member short"
    );
}

#[test]
fn a_waiter_whose_server_crashes_gets_a_connection_error() {
    let server = TestingServer::start();
    let client = ClientBuilder::new(server.connect_string())
        .session_timeout(4 * SECOND)
        // 5 s, not 1 s: a cold server on a busy machine can take over a second to open the first
        // session (it failed so under load); the waiters still get their error well within 60 s.
        .connection_timeout(5 * SECOND)
        .retry_policy(RetryPolicy::NTimes {
            n: 2,
            sleep: Duration::from_millis(100),
        })
        .connect_blocking()
        .unwrap();
    let member = DistributedDoubleBarrier::new(&client, "/b/crash", 3).unwrap();
    let barrier = DistributedBarrier::new(&client, "/b/crash-simple").unwrap();
    barrier.set_barrier_blocking().unwrap();
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    let t1 = thread::spawn(move || {
        tx.send(("enter", member.enter_blocking(None).err()))
            .unwrap()
    });
    let t2 = thread::spawn(move || {
        tx2.send(("wait", barrier.wait_on_barrier_blocking(None).err()))
            .unwrap()
    });
    let observer = connect(&server.connect_string());
    wait_until("the member's node", 10 * SECOND, || {
        children(&observer, "/b/crash").len() == 1
    });
    drop(observer);
    server.kill();
    for _ in 0..2 {
        let (what, err) = rx.recv_timeout(60 * SECOND).expect("a waiter hung");
        let err = err.unwrap_or_else(|| panic!("{what}: returned without an error"));
        assert!(
            matches!(
                err.kind(),
                ErrorKind::ConnectionLoss | ErrorKind::SessionExpired
            ),
            "{what}: {err}"
        );
    }
    t1.join().unwrap();
    t2.join().unwrap();
}

#[test]
fn bad_arguments_are_refused() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string());
    for e in [
        DistributedBarrier::new(&client, "no-slash").unwrap_err(),
        DistributedBarrier::new(&client, "/").unwrap_err(),
        DistributedDoubleBarrier::new(&client, "/b/x", 0).unwrap_err(),
        DistributedDoubleBarrier::new(&client, "/b/x/", 2).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    client.close_blocking();
    let e = DistributedBarrier::new(&client, "/b/x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed);
}

/// An enter dropped before it answered (a `timeout()` around it, a cancelled task) is not in:
/// its member node is deleted, so it does not open the barrier for the others one member
/// short (before, the node stayed for the session's life and counted as a member).
#[test]
fn an_enter_dropped_before_it_answered_leaves_no_member() {
    let server = TestingServer::start();
    let clients: Vec<Client> = (0..3).map(|_| connect(&server.connect_string())).collect();
    let path = "/b/dropped";
    let dropped = DistributedDoubleBarrier::new(&clients[0], path, 3).unwrap();
    let entering = zkrecipes::runtime::spawn(async move { dropped.enter(None).await });
    wait_until("the first member's node", 10 * SECOND, || {
        children(&clients[1], path).len() == 1
    });
    entering.abort();
    wait_until("the dropped member's node is deleted", 10 * SECOND, || {
        children(&clients[1], path).is_empty()
    });
    // The two members left cannot open a barrier of three.
    let others: Vec<_> = clients[1..]
        .iter()
        .map(|c| {
            let b = DistributedDoubleBarrier::new(c, path, 3).unwrap();
            thread::spawn(move || b.enter_blocking(Some(SECOND)).unwrap())
        })
        .collect();
    for t in others {
        assert!(!t.join().unwrap(), "two members opened a barrier of three");
    }
}
