//! Leader failover times against a real ZooKeeper (issue 4's measurement).
//!
//! `cargo run -p zkrecipes --release --example leader_failover [-- ROUNDS]`
//!
//! Measures, on a local standalone server started by the harness:
//! * the raw floor: delete a node → the getData watch on it fires → getChildren returns;
//! * LeaderLatch and LeaderSelector failover after the leader's clean `close()`;
//! * LeaderLatch failover after the leader's connection is cut and never comes back: the server
//!   expires the session after the session timeout, which we subtract (what remains is the
//!   server's expiry granularity, a tick of 200 ms on the harness's server, plus the handover).

use std::sync::Arc;
use std::time::{Duration, Instant};

use zkrecipes::leader::{LeaderLatch, LeaderSelector, LeadershipContext};
use zkrecipes::{Client, CreateMode, CreateOptions, DeleteOptions};
use zkrecipes_testing::{FaultProxy, TestingServer};

async fn connect(connect: &str, session: Duration) -> Client {
    Client::builder(connect)
        .session_timeout(session)
        .connection_timeout(Duration::from_secs(5))
        .connect()
        .await
        .unwrap()
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<46} n={:<3} min {:>7.2} ms  median {:>7.2} ms  p90 {:>7.2} ms  max {:>7.2} ms",
        samples.len(),
        ms(samples[0]),
        ms(pick(0.5)),
        ms(pick(0.9)),
        ms(*samples.last().unwrap())
    );
}

/// Waits until `latch` leads; returns when it did (timestamped by its own watch, not polled).
async fn lead_instant(latch: &LeaderLatch) -> Instant {
    let mut w = latch.leadership_watch();
    if w.is_leader() {
        return Instant::now();
    }
    loop {
        match tokio::time::timeout(Duration::from_secs(30), w.changed()).await {
            Ok(Some(true)) => return Instant::now(),
            Ok(Some(false)) => continue,
            _ => panic!("{} never led", latch.id()),
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(30);
    let server = TestingServer::start();
    let cs = server.connect_string();
    let session = Duration::from_secs(2);
    let a = connect(&cs, session).await;
    let b = connect(&cs, session).await;

    // Raw floor: the watcher's view of a delete, then the listing a latch would do.
    let mut floor = Vec::new();
    for i in 0..rounds {
        let parent = format!("/bench-floor/{i}");
        let node = format!("{parent}/n");
        a.create(
            &node,
            b"",
            CreateOptions::new(CreateMode::Ephemeral).parents(),
        )
        .await
        .unwrap();
        let (_, _, watch) = b.get_data_watch(&node).await.unwrap();
        // The watcher lists the children as soon as the event arrives, as a latch does, on
        // the library's runtime as the recipes' tasks run (no cross-runtime wake-up).
        let (b2, parent2) = (b.clone(), parent.clone());
        let waiter = zkrecipes::runtime::spawn(async move {
            watch.changed().await;
            b2.get_children(&parent2).await.unwrap();
            Instant::now()
        });
        let t = Instant::now();
        a.delete(&node, DeleteOptions::default()).await.unwrap();
        floor.push(waiter.await.unwrap() - t);
    }
    report("raw floor: delete -> watch -> getChildren", floor);

    // LeaderLatch, clean close.
    let mut close = Vec::new();
    for i in 0..rounds {
        let path = format!("/bench-latch-close/{i}");
        let leader = LeaderLatch::new(&a, &path, "a").unwrap();
        leader.start().await.unwrap();
        assert!(leader
            .await_leadership(Some(Duration::from_secs(5)))
            .await
            .unwrap());
        let follower = Arc::new(LeaderLatch::new(&b, &path, "b").unwrap());
        follower.start().await.unwrap();
        let f = follower.clone();
        let led = tokio::spawn(async move { lead_instant(&f).await });
        let t = Instant::now();
        leader.close().await.unwrap();
        close.push(led.await.unwrap() - t);
        follower.close().await.unwrap();
    }
    report("LeaderLatch: close -> next leads", close);

    // LeaderSelector, leader returns from take_leadership.
    let mut sel = Vec::new();
    for i in 0..rounds {
        let path = format!("/bench-selector/{i}");
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let stop_rx = Arc::new(tokio::sync::Mutex::new(Some(stop_rx)));
        let leader = LeaderSelector::new(&a, &path, "a", move |_ctx: LeadershipContext| {
            let stop_rx = stop_rx.clone();
            async move {
                if let Some(rx) = stop_rx.lock().await.take() {
                    let _ = rx.await;
                }
            }
        })
        .unwrap();
        leader.start().unwrap();
        while !leader.has_leadership() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let (led_tx, led_rx) = tokio::sync::oneshot::channel::<Instant>();
        let led_tx = Arc::new(std::sync::Mutex::new(Some(led_tx)));
        let follower = LeaderSelector::new(&b, &path, "b", move |_ctx: LeadershipContext| {
            let led_tx = led_tx.clone();
            async move {
                if let Some(tx) = led_tx.lock().unwrap().take() {
                    let _ = tx.send(Instant::now());
                }
            }
        })
        .unwrap();
        follower.start().unwrap();
        // Let the follower queue up behind the leader.
        while follower.get_participants().await.unwrap().len() < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let t = Instant::now();
        let _ = stop_tx.send(());
        let led = tokio::time::timeout(Duration::from_secs(10), led_rx)
            .await
            .unwrap()
            .unwrap();
        sel.push(led - t);
        leader.close().await.unwrap();
        follower.close().await.unwrap();
    }
    report("LeaderSelector: leader returns -> next leads", sel);

    // LeaderLatch, leader cut off for good: the server expires it after the session timeout.
    let mut cut = Vec::new();
    for i in 0..rounds.min(5) {
        let path = format!("/bench-latch-cut/{i}");
        let proxy = FaultProxy::start(&cs);
        let victim = connect(&proxy.connect_string(), session).await;
        let negotiated = victim.session_timeout();
        let leader = LeaderLatch::new(&victim, &path, "victim").unwrap();
        leader.start().await.unwrap();
        assert!(leader
            .await_leadership(Some(Duration::from_secs(5)))
            .await
            .unwrap());
        let follower = Arc::new(LeaderLatch::new(&b, &path, "b").unwrap());
        follower.start().await.unwrap();
        let f = follower.clone();
        let led = tokio::spawn(async move { lead_instant(&f).await });
        let t = Instant::now();
        proxy.cut();
        let at = led.await.unwrap();
        cut.push((at - t).saturating_sub(negotiated));
        follower.close().await.unwrap();
        drop(leader);
        victim.close().await;
    }
    report("LeaderLatch: cut off -> next leads, minus timeout", cut);

    a.close().await;
    b.close().await;
}
