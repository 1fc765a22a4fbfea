//! The Rust worker of the cross-runtime interop runner (`tests/interop/run`).
//!
//! `cargo run -p zkrecipes --example interop_worker -- --role mutex|counter|latch|counter-get|children
//!     --connect HOST:PORT --path P --iterations N --id ID --log FILE [--go FILE]`
//!
//! Log lines (one file per worker, merged by the runner):
//! * mutex:   `start rust ID TOKEN NS` / `end rust ID TOKEN NS` around each critical section,
//!   NS from CLOCK_MONOTONIC (comparable with every other worker on the machine), TOKEN the
//!   hold's fencing token (the lock node's czxid);
//! * counter: `inc rust ID VALUE` per successful `add_and_get(1)`, `fail rust ID` otherwise;
//! * all:     `done rust ID COUNT` at the end.
//!
//! `counter-get` prints the counter's value on stdout; `children` how many nodes remain under P.

use std::io::Write;
use std::time::Duration;

use zkrecipes::atomic::DistributedAtomicLong;
use zkrecipes::leader::LeaderLatch;
use zkrecipes::lock::InterProcessMutex;
use zkrecipes::{Client, Owner};

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}
extern "C" {
    fn clock_gettime(clk: i32, tp: *mut Timespec) -> i32;
}
const CLOCK_MONOTONIC: i32 = 1;

fn mono_ns() -> i128 {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer to a timespec of the platform's layout (64-bit Linux).
    let rc = unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime failed");
    ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
}

fn main() {
    let mut role = String::new();
    let mut connect = String::new();
    let mut path = String::new();
    let mut iterations: u64 = 20;
    let mut id = String::from("rust");
    let mut log_path = String::new();
    let mut go = String::new();
    let mut expect: usize = 5;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--role" => role = v,
            "--connect" => connect = v,
            "--path" => path = v,
            "--iterations" => iterations = v.parse().expect("--iterations N"),
            "--id" => id = v,
            "--log" => log_path = v,
            "--go" => go = v,
            "--expect" => expect = v.parse().expect("--expect K"),
            _ => panic!("unknown option {a}"),
        }
    }
    let client = Client::builder(connect.as_str())
        .session_timeout(Duration::from_secs(30))
        .connection_timeout(Duration::from_secs(15))
        .connect_blocking()
        .expect("connect");
    let mut log: Box<dyn Write> = if log_path.is_empty() {
        Box::new(std::io::sink())
    } else {
        Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log_path)
                .expect("open log"),
        )
    };
    // latch: join first and wait until every runtime's participant is listed, before the barrier.
    let mut first_latch = None;
    if role == "latch" {
        let l = LeaderLatch::new(&client, &path, &id).expect("latch");
        l.start_blocking().expect("latch start");
        let t = std::time::Instant::now();
        let ids = loop {
            let mut ids: Vec<String> = l
                .get_participants_blocking()
                .expect("participants")
                .into_iter()
                .map(|p| p.id)
                .collect();
            ids.sort();
            if ids.len() >= expect || t.elapsed() > Duration::from_secs(60) {
                break ids;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        writeln!(log, "participants rust {id} {}", ids.join(",")).unwrap();
        first_latch = Some(l);
    }
    // Start barrier: say we are connected, then wait for the runner's go file, so that every
    // runtime (the JVM starts slowest) contends from the first operation.
    if !go.is_empty() {
        writeln!(log, "ready rust {id}").unwrap();
        log.flush().unwrap();
        while !std::path::Path::new(&go).exists() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    match role.as_str() {
        "mutex" => {
            let m = InterProcessMutex::new(&client, &path).expect("mutex");
            let me = Owner::current_thread();
            for _ in 0..iterations {
                assert!(m.acquire_blocking(None).expect("acquire"));
                let token = m.fencing_token(me).expect("a hold has a fencing token");
                writeln!(log, "start rust {id} {token} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                std::thread::sleep(Duration::from_micros(200));
                writeln!(log, "end rust {id} {token} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                m.release_blocking().expect("release");
            }
            writeln!(log, "done rust {id} {iterations}").unwrap();
        }
        "counter" => {
            let c = DistributedAtomicLong::new(&client, &path, None, None).expect("counter");
            let mut ok = 0u64;
            for _ in 0..iterations {
                match c.add_and_get_blocking(1, Some(Duration::from_secs(30))) {
                    Ok(v) => {
                        ok += 1;
                        writeln!(log, "inc rust {id} {v}").unwrap();
                    }
                    Err(e) => writeln!(log, "fail rust {id} {e}").unwrap(),
                }
            }
            writeln!(log, "done rust {id} {ok}").unwrap();
        }
        "latch" => {
            for round in 0..iterations {
                let l = match (round, first_latch.take()) {
                    (0, Some(l)) => l,
                    _ => {
                        let l = LeaderLatch::new(&client, &path, &id).expect("latch");
                        l.start_blocking().expect("latch start");
                        l
                    }
                };
                assert!(
                    l.await_leadership_blocking(Some(Duration::from_secs(60)))
                        .expect("await"),
                    "never led"
                );
                writeln!(log, "lead rust {id} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                std::thread::sleep(Duration::from_millis(20));
                assert!(l.has_leadership(), "lost leadership while leading");
                writeln!(log, "unlead rust {id} {}", mono_ns()).unwrap();
                log.flush().unwrap();
                l.close_blocking().expect("latch close");
            }
            writeln!(log, "done rust {id} {iterations}").unwrap();
        }
        "children" => {
            // Leftover check: how many nodes remain under `path` (0 if it is gone, as an empty
            // container may be).
            match client.get_children_blocking(&path) {
                Ok(c) => println!("{}", c.len()),
                Err(e) if e.kind() == zkrecipes::ErrorKind::NoNode => println!("0"),
                Err(e) => panic!("get_children {path}: {e}"),
            }
        }
        "counter-get" => {
            let c = DistributedAtomicLong::new(&client, &path, None, None).expect("counter");
            println!("{}", c.get_blocking().expect("get").post_value);
        }
        other => panic!("unknown role {other}"),
    }
    log.flush().unwrap();
    client.close_blocking();
}
