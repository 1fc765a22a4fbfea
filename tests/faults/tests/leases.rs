//! A semaphore lease's lost signal under a network partition (the faces' `wait_lost`).
//!
//! Scenario 20: on a standalone server, a semaphore of 2 leases is held by two clients, one of
//! them behind a proxy, while a third client waits for a lease. The proxy blackholes the
//! holder's connection, so the server expires its session and the waiting client takes its
//! lease. Checks, every round:
//! - the cut-off holder's lost signal (standard policy) resolved, with SUSPENDED, before the
//!   waiting client got its lease (so a holder that stops when told never overlaps the next);
//! - the other holder's signal did not resolve (its lease stayed good) and its lease node is
//!   still its session's;
//! - the cut-off holder's signal under the session-loss policy (LOST only) resolves once its
//!   client learns the session is gone (after the proxy is restored), and not before;
//! - never more than 2 leases on the server; no lease node left once every client closed.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::lock::{InterProcessSemaphoreV2, LeaseLost};
use zkrecipes::{Client, ClientBuilder, ConnectionState, LostPolicy};
use zkrecipes_testing::{FaultProxy, TestingServer};

#[allow(dead_code)] // the leader-kill helpers and their 8 s client are not this scenario's
mod common;

use common::{long, WAIT};

const SEMAPHORE: &str = "/f20-sem/s";

/// A client with a 2 s session (the partition expires it quickly).
fn client_to(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(2))
        .connect_blocking()
        .expect("connect")
}

fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// Resolves `signal` on the shared runtime and sends what it said, and when.
fn watch(
    signal: impl std::future::Future<Output = LeaseLost> + Send + 'static,
) -> mpsc::Receiver<(LeaseLost, Instant)> {
    let (tx, rx) = mpsc::channel();
    zkrecipes::runtime::spawn(async move {
        let lost = signal.await;
        let _ = tx.send((lost, Instant::now()));
    });
    rx
}

#[test]
fn lease_holders_cut_off_are_told_before_their_lease_is_taken() {
    let start = Instant::now();
    let server = TestingServer::start();
    let rounds = if long() { 20 } else { 3 };
    let steady_client = client_to(&server.connect_string());
    let steady = InterProcessSemaphoreV2::new(&steady_client, SEMAPHORE, 2).unwrap();
    let waiter_client = client_to(&server.connect_string());
    let waiter = InterProcessSemaphoreV2::new(&waiter_client, SEMAPHORE, 2).unwrap();
    let checker = client_to(&server.connect_string());
    let mut most_on_server = 0;
    for round in 0..rounds {
        let proxy = FaultProxy::start(&server.connect_string());
        let cut_client = client_to(&proxy.connect_string());
        let cut = InterProcessSemaphoreV2::new(&cut_client, SEMAPHORE, 2).unwrap();
        let mut cut_lease = cut
            .acquire_blocking(1, Some(WAIT))
            .unwrap()
            .expect("a lease");
        let mut steady_lease = steady
            .acquire_blocking(1, Some(WAIT))
            .unwrap()
            .expect("a lease");
        let (cut_lease, steady_lease) = (cut_lease.remove(0), steady_lease.remove(0));
        let cut_standard = watch(cut_lease.lost_signal(LostPolicy::Standard));
        let cut_session = watch(cut_lease.lost_signal(LostPolicy::Session));
        let steady_standard = watch(steady_lease.lost_signal(LostPolicy::Standard));
        // The third client waits for a lease (its node is queued beside the two held).
        let waiting = {
            let waiter = waiter.clone();
            thread::spawn(move || {
                let leases = waiter.acquire_blocking(1, Some(WAIT)).unwrap();
                (leases.expect("the waiter got a lease"), Instant::now())
            })
        };
        eventually("the waiter is queued", || {
            zkrecipes::runtime::block_on(steady.participant_nodes()).is_ok_and(|n| n.len() == 3)
        });
        proxy.blackhole();
        let (mut got, got_at) = waiting.join().unwrap();
        let (lost, lost_at) = cut_standard
            .recv_timeout(WAIT)
            .expect("the cut-off holder's signal resolved");
        assert_eq!(
            lost,
            LeaseLost::State(ConnectionState::Suspended),
            "round {round}"
        );
        assert!(
            lost_at < got_at,
            "round {round}: the cut-off holder was told {:?} after the waiter got its lease",
            lost_at - got_at
        );
        assert!(
            steady_standard.try_recv().is_err(),
            "round {round}: the steady holder's lease was said lost"
        );
        let owner = checker
            .exists_blocking(steady_lease.path())
            .unwrap()
            .map(|s| s.ephemeral_owner);
        assert_eq!(
            owner,
            Some(steady_client.session_id()),
            "round {round}: the steady holder's lease node"
        );
        let held = zkrecipes::runtime::block_on(steady.participant_nodes()).unwrap();
        most_on_server = most_on_server.max(held.len());
        assert!(held.len() <= 2, "round {round}: {held:?}");
        // LOST only once the cut-off client hears its session is gone: not while cut off.
        assert!(
            cut_session.try_recv().is_err(),
            "round {round}: the session-loss signal resolved while the client was cut off"
        );
        proxy.restore();
        let (lost, _) = cut_session
            .recv_timeout(WAIT)
            .expect("the session-loss signal resolved after the restore");
        assert!(
            matches!(
                lost,
                LeaseLost::State(ConnectionState::Lost) | LeaseLost::SessionChanged
            ),
            "round {round}: {lost:?}"
        );
        // Returning a lost lease is harmless; the others go back.
        cut_lease.release_blocking().unwrap();
        steady_lease.release_blocking().unwrap();
        got.remove(0).release_blocking().unwrap();
        assert!(
            steady_standard.try_recv().is_err(),
            "round {round}: a returned lease was said lost"
        );
        cut_client.close_blocking();
    }
    steady_client.close_blocking();
    waiter_client.close_blocking();
    eventually("no lease node left", || {
        checker
            .get_children_blocking("/f20-sem/s/leases")
            .map_or(true, |c| c.is_empty())
    });
    checker.close_blocking();
    eprintln!(
        "FAULTS | 20 blackholed lease holder x{rounds} | Rust (4 clients) | lost-before-taken {rounds}/{rounds}, most leases on the server {most_on_server} (max 2) | violations 0 | {:.1} s",
        start.elapsed().as_secs_f64()
    );
}
