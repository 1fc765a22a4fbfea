//! The Rust driver of `tests/bench/queues` (issue 18): one JSON line per run.
//!
//! `queue_bench --scenario queue --connect HOST:PORT --path P [--items N] [--consumers C]`:
//! C consumer clients take items exactly once (Curator's lock path `P-locks`) while one producer
//! client puts N; reports items/s from the first put to the last completed item.
//!
//! `queue_bench --scenario barrier --connect HOST:PORT --path P [--members M] [--rounds R]`:
//! M member clients enter one DistributedDoubleBarrier together, R rounds (a fresh path each);
//! per round, the time from the last `enter` call to the last member in. Reports p50/p99 ms.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::barriers::DistributedDoubleBarrier;
use zkrecipes::queue::{DistributedQueue, QueueOptions};
use zkrecipes::{Client, ClientBuilder};

fn connect(hosts: &str) -> Client {
    ClientBuilder::new(hosts)
        .session_timeout(Duration::from_secs(30))
        .connect_blocking()
        .unwrap_or_else(|e| fail(&format!("connect: {e}")))
}

fn fail(msg: &str) -> ! {
    eprintln!("queue_bench: {msg}");
    std::process::exit(1)
}

fn requests(c: &Client) -> u64 {
    let r = c.request_counts();
    r.create + r.delete + r.get_data + r.set_data + r.exists + r.get_children + r.sync + r.multi
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p / 100.0).round() as usize]
}

fn queue(hosts: &str, path: &str, items: usize, consumers: usize) {
    let options = || QueueOptions::default().lock_path(format!("{path}-locks"));
    let done = Arc::new(AtomicUsize::new(0));
    let ready = Arc::new(Barrier::new(consumers + 1));
    let workers: Vec<_> = (0..consumers)
        .map(|_| {
            let (hosts, path, done, ready) = (
                hosts.to_string(),
                path.to_string(),
                done.clone(),
                ready.clone(),
            );
            let options = options();
            thread::spawn(move || {
                let c = connect(&hosts);
                let q = DistributedQueue::new(&c, &path, options).unwrap();
                ready.wait();
                let deadline = Instant::now() + Duration::from_secs(120);
                while done.load(Ordering::SeqCst) < items {
                    if Instant::now() > deadline {
                        fail("no progress for 120 s");
                    }
                    if let Some(item) = q.take_blocking(Some(Duration::from_millis(200))).unwrap() {
                        item.done_blocking().unwrap();
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                }
                let n = requests(&c);
                c.close_blocking();
                n
            })
        })
        .collect();
    let producer = connect(hosts);
    let q = DistributedQueue::new(&producer, path, options()).unwrap();
    ready.wait();
    let t0 = Instant::now();
    for i in 0..items {
        q.put_blocking(format!("{i}").as_bytes(), None).unwrap();
    }
    let put_s = t0.elapsed().as_secs_f64();
    let consumer_requests: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let secs = t0.elapsed().as_secs_f64();
    let client_requests = consumer_requests + requests(&producer);
    println!(
        "{{\"impl\":\"rust\",\"scenario\":\"queue\",\"items\":{items},\"consumers\":{consumers},\"seconds\":{secs:.3},\"items_per_s\":{:.1},\"put_per_s\":{:.1},\"client_requests_per_item\":{:.2},\"version\":\"zkrecipes {}\"}}",
        items as f64 / secs,
        items as f64 / put_s,
        client_requests as f64 / items as f64,
        zkrecipes::VERSION
    );
}

fn barrier(hosts: &str, path: &str, members: usize, rounds: usize) {
    let clients: Vec<Client> = (0..members).map(|_| connect(hosts)).collect();
    let mut latencies = Vec::new();
    for r in 0..rounds {
        let round = format!("{path}/r{r}");
        let start = Arc::new(Barrier::new(members));
        let times: Vec<(Instant, Instant)> = thread::scope(|s| {
            let handles: Vec<_> = clients
                .iter()
                .map(|c| {
                    let (round, start) = (round.clone(), start.clone());
                    s.spawn(move || {
                        let b = DistributedDoubleBarrier::new(c, &round, members).unwrap();
                        start.wait();
                        let called = Instant::now();
                        if !b.enter_blocking(Some(Duration::from_secs(60))).unwrap() {
                            fail("enter timed out");
                        }
                        let entered = Instant::now();
                        start.wait();
                        if !b.leave_blocking(Some(Duration::from_secs(60))).unwrap() {
                            fail("leave timed out");
                        }
                        (called, entered)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let last_call = times.iter().map(|t| t.0).max().unwrap();
        let last_in = times.iter().map(|t| t.1).max().unwrap();
        latencies.push(last_in.duration_since(last_call).as_secs_f64() * 1000.0);
    }
    latencies.sort_by(f64::total_cmp);
    println!(
        "{{\"impl\":\"rust\",\"scenario\":\"barrier\",\"members\":{members},\"rounds\":{rounds},\"p50_ms\":{:.2},\"p99_ms\":{:.2},\"version\":\"zkrecipes {}\"}}",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        zkrecipes::VERSION
    );
    for c in clients {
        c.close_blocking();
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut scenario, mut hosts, mut path) = (String::new(), String::new(), String::new());
    let (mut items, mut consumers, mut members, mut rounds) = (500, 4, 5, 50);
    while let Some(a) = args.next() {
        let v = args
            .next()
            .unwrap_or_else(|| fail(&format!("{a} needs a value")));
        let num = || {
            v.parse()
                .unwrap_or_else(|_| fail(&format!("{a} {v}: not a number")))
        };
        match a.as_str() {
            "--scenario" => scenario = v.clone(),
            "--connect" => hosts = v.clone(),
            "--path" => path = v.clone(),
            "--items" => items = num(),
            "--consumers" => consumers = num(),
            "--members" => members = num(),
            "--rounds" => rounds = num(),
            "--impl" => {}
            _ => fail(&format!("unknown option {a}")),
        }
    }
    match scenario.as_str() {
        "queue" => queue(&hosts, &path, items, consumers),
        "barrier" => barrier(&hosts, &path, members, rounds),
        other => fail(&format!("unknown scenario {other:?}")),
    }
}
