//! The seeds' scenarios, from Rust, against the ZooKeeper given as the first argument:
//! 100 workers contending for one InterProcessMutex (with an overlap check), 10 clients taking
//! turns in a LeaderLatch, 10 workers × 100 increments on a DistributedAtomicLong.
//! Prints what happened; exits non-zero if any scenario went wrong.
//!
//! `cargo run -p zkrecipes --example seeds -- 127.0.0.1:2181`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zkrecipes::atomic::DistributedAtomicLong;
use zkrecipes::leader::LeaderLatch;
use zkrecipes::lock::InterProcessMutex;
use zkrecipes::{Client, ClientBuilder, Owner};

type Outcome = Result<(), String>;

fn main() {
    let connect = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".into());
    let run = format!("/zkrecipes-seeds/rust-{}", std::process::id());
    let client = ClientBuilder::new(&connect)
        .connect_blocking()
        .unwrap_or_else(|e| {
            eprintln!("cannot connect to {connect}: {e}");
            std::process::exit(2)
        });
    let results = [
        (
            "InterProcessMutex: 100 workers",
            mutex_scenario(&client, &run),
        ),
        (
            "LeaderLatch: 10 clients in turn",
            latch_scenario(&connect, &run),
        ),
        (
            "DistributedAtomicLong: 10 x 100 increments",
            counter_scenario(&client, &run),
        ),
    ];
    let _ = client.delete_blocking(
        &run,
        zkrecipes::DeleteOptions {
            recursive: true,
            ..Default::default()
        },
    );
    client.close_blocking();
    let mut failed = false;
    for (name, r) in &results {
        match r {
            Ok(()) => println!("PASS  {name}"),
            Err(e) => {
                failed = true;
                println!("FAIL  {name}: {e}")
            }
        }
    }
    std::process::exit(i32::from(failed));
}

fn mutex_scenario(client: &Client, run: &str) -> Outcome {
    let lock = InterProcessMutex::new(client, &format!("{run}/lock")).map_err(|e| e.to_string())?;
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let workers: Vec<_> = (0..100)
        .map(|_| {
            let (lock, inside, overlaps, tokens) = (
                lock.clone(),
                inside.clone(),
                overlaps.clone(),
                tokens.clone(),
            );
            std::thread::spawn(move || -> Outcome {
                if !lock
                    .acquire_blocking(Some(Duration::from_secs(60)))
                    .map_err(|e| e.to_string())?
                {
                    return Err("a worker timed out waiting for the lock".into());
                }
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokens
                    .lock()
                    .unwrap()
                    .push(lock.fencing_token(Owner::current_thread()).unwrap_or(-1));
                std::thread::sleep(Duration::from_millis(1)); // hold it briefly, as the seed does
                inside.fetch_sub(1, Ordering::SeqCst);
                lock.release_blocking().map_err(|e| e.to_string())
            })
        })
        .collect();
    for w in workers {
        w.join().map_err(|_| "a worker panicked".to_string())??;
    }
    let tokens = tokens.lock().unwrap().clone();
    let increasing = tokens.windows(2).all(|w| w[0] < w[1]);
    println!(
        "  mutex: 100/100 workers held {run}/lock, {} overlaps, fencing tokens strictly increasing: {increasing}, {:?}",
        overlaps.load(Ordering::SeqCst),
        start.elapsed()
    );
    if overlaps.load(Ordering::SeqCst) != 0 || !increasing || tokens.len() != 100 {
        return Err("mutual exclusion or fencing violated".into());
    }
    Ok(())
}

fn latch_scenario(connect: &str, run: &str) -> Outcome {
    let path = format!("{run}/latch");
    let err = |e: zkrecipes::Error| e.to_string();
    let mut members = Vec::new();
    for i in 0..10 {
        let c = ClientBuilder::new(connect)
            .connect_blocking()
            .map_err(err)?;
        let latch = LeaderLatch::new(&c, &path, &format!("client-{i}")).map_err(err)?;
        latch.start_blocking().map_err(err)?;
        members.push((c, latch));
    }
    let mut order = Vec::new();
    while !members.is_empty() {
        // Wait until exactly one member leads, then let it step down.
        let deadline = Instant::now() + Duration::from_secs(30);
        let leader = loop {
            let leading: Vec<usize> = (0..members.len())
                .filter(|&i| members[i].1.has_leadership())
                .collect();
            if leading.len() > 1 {
                return Err(format!("two leaders at once: {leading:?}"));
            }
            if let Some(&i) = leading.first() {
                break i;
            }
            if Instant::now() > deadline {
                return Err("no leader within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let (c, latch) = members.remove(leader);
        order.push(latch.id().to_string());
        latch.close_blocking().map_err(err)?;
        c.close_blocking();
    }
    println!("  latch: leaders in turn: {}", order.join(" -> "));
    let mut distinct = order.clone();
    distinct.sort();
    distinct.dedup();
    if distinct.len() != 10 {
        return Err(format!("expected 10 distinct leaders, got {order:?}"));
    }
    Ok(())
}

fn counter_scenario(client: &Client, run: &str) -> Outcome {
    let counter = Arc::new(
        DistributedAtomicLong::new(client, &format!("{run}/counter"), None, None)
            .map_err(|e| e.to_string())?,
    );
    let before = client.request_counts().set_data;
    let start = Instant::now();
    let workers: Vec<_> = (0..10)
        .map(|_| {
            let counter = counter.clone();
            std::thread::spawn(move || -> Outcome {
                for _ in 0..100 {
                    counter
                        .add_and_get_blocking(1, Some(Duration::from_secs(30)))
                        .map_err(|e| e.to_string())?;
                }
                Ok(())
            })
        })
        .collect();
    for w in workers {
        w.join().map_err(|_| "a worker panicked".to_string())??;
    }
    let value = counter
        .get_blocking()
        .map_err(|e| e.to_string())?
        .post_value;
    let writes = client.request_counts().set_data - before;
    println!(
        "  counter: final value {value} (expected 1000) after {writes} ZooKeeper writes, {:?}",
        start.elapsed()
    );
    if value != 1000 {
        return Err(format!("lost or doubled increments: {value} != 1000"));
    }
    Ok(())
}
