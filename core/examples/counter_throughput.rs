//! Counter throughput: increments per second and ZooKeeper writes per increment, for
//! 10 threads x 100 increments in one process and 10 clients x 100, comparing
//! zkrecipes' `add_and_get` (combining, cached version) with the raw floor (a plain
//! getData + versioned setData loop on the same client) and with kazoo's `Counter` on the same
//! server (if `python3 -c 'import kazoo'` works).
//!
//! ```text
//! cargo run -p zkrecipes --release --example counter_throughput
//! ZKR_BENCH_N=300 ZKR_BENCH_RUNS=5 cargo run -p zkrecipes --release --example counter_throughput
//! ```
//!
//! It starts its own standalone ZooKeeper (the test harness) and stops it at the end.

use std::process::Command;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::atomic::DistributedAtomicLong;
use zkrecipes::{Client, ClientBuilder, Error};
use zkrecipes_testing::TestingServer;

const THREADS: usize = 10;

#[derive(Clone, Copy, Debug)]
struct Run {
    increments: u64,
    writes: u64,
    secs: f64,
}

impl Run {
    fn rate(&self) -> f64 {
        self.increments as f64 / self.secs
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn connect(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(20))
        .connect_blocking()
        .expect("connect")
}

fn writes(client: &Client) -> u64 {
    let c = client.request_counts();
    c.set_data + c.create
}

/// The raw floor: read, add, write at the version read; on BadVersion read again.
fn raw_increment(client: &Client, path: &str) -> u64 {
    let mut tries = 0;
    loop {
        tries += 1;
        let (data, stat) = zkrecipes::runtime::block_on(client.get_data(path)).expect("get");
        let value = i64::from_be_bytes(data.as_slice().try_into().expect("8 bytes"));
        match zkrecipes::runtime::block_on(client.set_data(
            path,
            &(value + 1).to_be_bytes(),
            Some(stat.version),
        )) {
            Ok(_) => return tries,
            Err(Error::BadVersion(_)) => continue,
            Err(e) => panic!("raw set: {e}"),
        }
    }
}

fn ours_one_process(connect_string: &str, path: &str, n: usize) -> Run {
    let client = connect(connect_string);
    let counter = Arc::new(DistributedAtomicLong::new(&client, path, None, None).unwrap());
    counter.force_set_blocking(0).unwrap();
    let before = writes(&client);
    let start = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let counter = counter.clone();
            thread::spawn(move || {
                for _ in 0..n {
                    counter.add_and_get_blocking(1, None).expect("add_and_get");
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let secs = start.elapsed().as_secs_f64();
    let run = Run {
        increments: (THREADS * n) as u64,
        writes: writes(&client) - before,
        secs,
    };
    assert_eq!(
        counter.get_blocking().unwrap().post_value,
        run.increments as i64
    );
    client.close_blocking();
    run
}

fn ours_many_clients(connect_string: &str, path: &str, n: usize) -> Run {
    let setup = connect(connect_string);
    let counter = DistributedAtomicLong::new(&setup, path, None, None).unwrap();
    counter.force_set_blocking(0).unwrap();
    let clients: Vec<Client> = (0..THREADS).map(|_| connect(connect_string)).collect();
    let start = Instant::now();
    let threads: Vec<_> = clients
        .iter()
        .map(|client| {
            let (client, path) = (client.clone(), path.to_string());
            thread::spawn(move || {
                let counter = DistributedAtomicLong::new(&client, &path, None, None).unwrap();
                for _ in 0..n {
                    counter.add_and_get_blocking(1, None).expect("add_and_get");
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let secs = start.elapsed().as_secs_f64();
    let w: u64 = clients.iter().map(writes).sum();
    clients.iter().for_each(Client::close_blocking);
    let run = Run {
        increments: (THREADS * n) as u64,
        writes: w,
        secs,
    };
    assert_eq!(
        counter.get_blocking().unwrap().post_value,
        run.increments as i64
    );
    setup.close_blocking();
    run
}

fn raw(connect_string: &str, path: &str, n: usize, separate_clients: bool) -> Run {
    let setup = connect(connect_string);
    DistributedAtomicLong::new(&setup, path, None, None)
        .unwrap()
        .force_set_blocking(0)
        .unwrap();
    let clients: Vec<Client> = if separate_clients {
        (0..THREADS).map(|_| connect(connect_string)).collect()
    } else {
        vec![setup.clone()]
    };
    let start = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let (client, path) = (clients[i % clients.len()].clone(), path.to_string());
            thread::spawn(move || (0..n).map(|_| raw_increment(&client, &path)).sum::<u64>())
        })
        .collect();
    let w: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let secs = start.elapsed().as_secs_f64();
    if separate_clients {
        clients.iter().for_each(Client::close_blocking);
    }
    let (data, _) = zkrecipes::runtime::block_on(setup.get_data(path)).unwrap();
    assert_eq!(
        i64::from_be_bytes(data.as_slice().try_into().unwrap()),
        (THREADS * n) as i64
    );
    setup.close_blocking();
    Run {
        increments: (THREADS * n) as u64,
        writes: w,
        secs,
    }
}

const KAZOO: &str = r#"
import json, sys, threading, time
from kazoo.client import KazooClient
hosts, path, mode, n, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def make():
    c = KazooClient(hosts=hosts, timeout=20)
    c.start()
    sets = [0]
    real = c.set
    def counted(*a, **k):
        sets[0] += 1
        return real(*a, **k)
    c.set = counted
    return c, sets
clients = [make() for _ in range(1 if mode == "threads" else threads)]
clients[0][0].ensure_path(path)
clients[0][0].set(path, b"")
def work(i):
    c, _ = clients[i % len(clients)]
    counter = c.Counter(path, default=0, support_curator=True)
    for _ in range(n):
        counter += 1
start = time.time()
ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
[t.start() for t in ts]
[t.join() for t in ts]
secs = time.time() - start
value = clients[0][0].Counter(path, default=0, support_curator=True).value
for c, _ in clients:
    c.stop(); c.close()
print(json.dumps({"secs": secs, "writes": sum(s[0] for _, s in clients) - 1, "value": value}))
"#;

fn kazoo(connect_string: &str, path: &str, n: usize, mode: &str) -> Option<Run> {
    let out = Command::new("python3")
        .args([
            "-c",
            KAZOO,
            connect_string,
            path,
            mode,
            &n.to_string(),
            &THREADS.to_string(),
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "kazoo run failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
        return None;
    }
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let field = |name: &str| -> Option<f64> {
        let at = line.find(&format!("\"{name}\": "))? + name.len() + 4;
        line[at..].split([',', '}']).next()?.trim().parse().ok()
    };
    let value = field("value")? as u64;
    assert_eq!(
        value,
        (THREADS * n) as u64,
        "kazoo's counter ended at {value}"
    );
    Some(Run {
        increments: value,
        writes: field("writes")? as u64,
        secs: field("secs")?,
    })
}

fn median(mut runs: Vec<Run>) -> Run {
    runs.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
    runs[runs.len() / 2]
}

fn main() {
    let n = env_usize("ZKR_BENCH_N", 100);
    let runs = env_usize("ZKR_BENCH_RUNS", 3).max(1);
    let server = TestingServer::start();
    let cs = server.connect_string();
    let kazoo_ok = Command::new("python3")
        .args(["-c", "import kazoo"])
        .status()
        .is_ok_and(|s| s.success());
    println!(
        "{THREADS} x {n} increments, median of {runs} runs, standalone ZooKeeper on 127.0.0.1"
    );
    println!(
        "{:<44} {:>12} {:>18}",
        "scenario", "incr/s", "writes/increment"
    );
    type Scenario<'a> = (&'a str, Box<dyn Fn(usize) -> Option<Run> + 'a>);
    let scenarios: Vec<Scenario> = vec![
        (
            "zkrecipes add_and_get, 10 threads, 1 client",
            Box::new(|i| Some(ours_one_process(&cs, &format!("/bench/ours1-{i}"), n))),
        ),
        (
            "raw get+set loop, 10 threads, 1 client",
            Box::new(|i| Some(raw(&cs, &format!("/bench/raw1-{i}"), n, false))),
        ),
        (
            "kazoo Counter, 10 threads, 1 client",
            Box::new(|i| {
                kazoo_ok
                    .then(|| kazoo(&cs, &format!("/bench/kz1-{i}"), n, "threads"))
                    .flatten()
            }),
        ),
        (
            "zkrecipes add_and_get, 10 clients",
            Box::new(|i| Some(ours_many_clients(&cs, &format!("/bench/oursN-{i}"), n))),
        ),
        (
            "raw get+set loop, 10 clients",
            Box::new(|i| Some(raw(&cs, &format!("/bench/rawN-{i}"), n, true))),
        ),
        (
            "kazoo Counter, 10 clients",
            Box::new(|i| {
                kazoo_ok
                    .then(|| kazoo(&cs, &format!("/bench/kzN-{i}"), n, "clients"))
                    .flatten()
            }),
        ),
    ];
    for (name, run) in &scenarios {
        let results: Vec<Run> = (0..runs).filter_map(run).collect();
        if results.is_empty() {
            println!("{name:<44} {:>12} {:>18}", "n/a", "n/a");
            continue;
        }
        let m = median(results);
        println!(
            "{name:<44} {:>12.0} {:>18.2}",
            m.rate(),
            m.writes as f64 / m.increments as f64
        );
    }
    drop(server);
}
