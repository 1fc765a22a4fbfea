//! `zkr queue put|take` and `zkr barrier enter|leave` against a real ZooKeeper; the queue items
//! are read back through the core's queues (Curator's layouts).

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::*;
use zkrecipes::queue::{DistributedQueue, QueueOptions, SimpleDistributedQueue};
use zkrecipes::ClientBuilder;

fn client(server: &TestingServer) -> zkrecipes::Client {
    ClientBuilder::new(server.connect_string())
        .session_timeout(Duration::from_secs(10))
        .connect_blocking()
        .expect("connect")
}

#[test]
fn simple_queue_put_and_take_in_order_and_a_timeout_is_exit_3() {
    let server = TestingServer::start();
    let s = server.connect_string();
    let o = run(zkr(&s).args(["queue", "put", "/cli/q", "one", "two"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let nodes: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(nodes.len(), 2);
    assert!(nodes[0].starts_with("/cli/q/qn-"), "{nodes:?}");
    // Curator's simple queue (ours here) reads the first.
    let c = client(&server);
    let q = SimpleDistributedQueue::new(&c, "/cli/q").unwrap();
    assert_eq!(q.peek_blocking().unwrap().as_deref(), Some(&b"one"[..]));
    let o = run(zkr(&s).args(["queue", "take", "/cli/q"]));
    assert_eq!(stdout(&o), "one\n");
    let o = run(zkr(&s).args(["queue", "take", "/cli/q", "--json"]));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["data"], "two");
    let o = run(zkr(&s).args(["queue", "take", "/cli/q", "--timeout", "300ms"]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no item within 300ms"),
        "{}",
        stderr(&o)
    );
    // An item offered while zkr waits is taken.
    let mut waiting = zkr(&s)
        .args(["queue", "take", "/cli/q", "--timeout", "60s"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    q.offer_blocking(b"late").unwrap();
    let status = wait_exit(&mut waiting, "zkr queue take", Duration::from_secs(60));
    assert!(status.success());
    let mut out = String::new();
    std::io::Read::read_to_string(&mut waiting.stdout.take().unwrap(), &mut out).unwrap();
    assert_eq!(out, "late\n");
}

#[test]
fn distributed_queue_put_multi_and_an_exactly_once_take() {
    let server = TestingServer::start();
    let s = server.connect_string();
    let o = run(zkr(&s).args([
        "queue",
        "put",
        "/cli/dq",
        "--distributed",
        "--multi",
        "a",
        "b",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).trim().starts_with("/cli/dq/queue-"),
        "{}",
        stdout(&o)
    );
    let o = run(zkr(&s).args(["queue", "put", "/cli/dq", "--distributed", "c"]));
    assert!(o.status.success(), "{}", stderr(&o));
    // The core's DistributedQueue (Curator's framing) sees one item of two messages, then one.
    let c = client(&server);
    let q = DistributedQueue::new(&c, "/cli/dq", QueueOptions::default()).unwrap();
    assert_eq!(q.len_blocking().unwrap(), 2);
    let o = run(zkr(&s).args([
        "queue",
        "take",
        "/cli/dq",
        "--distributed",
        "--lock-path",
        "/cli/dq-locks",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "a\nb\n");
    let o = run(zkr(&s).args([
        "queue",
        "take",
        "/cli/dq",
        "--distributed",
        "--lock-path",
        "/cli/dq-locks",
        "--json",
    ]));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["data"], "c");
    assert!(v["node"].as_str().unwrap().starts_with("queue-"));
    assert_eq!(q.len_blocking().unwrap(), 0, "completed");
    // The lock path is a container: once empty, the server may already have reaped it.
    match c.get_children_blocking("/cli/dq-locks") {
        Ok(children) => assert!(children.is_empty(), "lock nodes left: {children:?}"),
        Err(zkrecipes::Error::NoNode(_)) => {}
        Err(e) => panic!("reading /cli/dq-locks: {e}"),
    }
}

#[test]
fn bad_queue_and_barrier_input_is_exit_1() {
    let nowhere = "127.0.0.1:1";
    for args in [
        vec!["queue", "put", "/q", "--multi", "a"],
        vec!["queue", "put", "/q"],
        vec!["queue", "put", "relative", "a"],
        vec!["queue", "take", "/q", "--lock-path", "/l"],
        vec!["queue", "take", "/", "--timeout", "1s"],
        vec!["barrier", "enter", "/b"],
        vec!["barrier", "enter", "/b", "--members", "0"],
        vec!["barrier", "leave", "/b", "--members", "x"],
    ] {
        let o = run(zkr(nowhere).args(&args));
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("zkr: error: "),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn barrier_enter_waits_for_the_members_and_leave_for_everyone_to_go() {
    let server = TestingServer::start();
    let s = server.connect_string();
    // One member alone times out (exit 3), its node gone.
    let o = run(zkr(&s).args([
        "barrier",
        "enter",
        "/cli/b",
        "--members",
        "2",
        "--timeout",
        "300ms",
    ]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let c = client(&server);
    let members = |c: &zkrecipes::Client| -> Vec<String> {
        c.get_children_blocking("/cli/b")
            .unwrap_or_default()
            .into_iter()
            .filter(|n| n != "ready")
            .collect()
    };
    assert!(members(&c).is_empty());
    // A core member waits; zkr is the second: both get in.
    let core = zkrecipes::barriers::DistributedDoubleBarrier::new(&c, "/cli/b", 2).unwrap();
    let core = std::sync::Arc::new(core);
    let entering = {
        let core = core.clone();
        std::thread::spawn(move || core.enter_blocking(Some(Duration::from_secs(60))).unwrap())
    };
    wait_for("the core member's node", Duration::from_secs(30), || {
        members(&c).len() == 1
    });
    let o = run(zkr(&s).args([
        "barrier",
        "enter",
        "/cli/b",
        "--members",
        "2",
        "--timeout",
        "60s",
        "--json",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"entered\""), "{}", stdout(&o));
    assert!(entering.join().unwrap(), "the core member got in too");
    // zkr leave waits for the core member to leave.
    let o = run(zkr(&s).args([
        "barrier",
        "leave",
        "/cli/b",
        "--members",
        "2",
        "--timeout",
        "300ms",
    ]));
    assert_eq!(
        o.status.code(),
        Some(3),
        "the core member is still in: {}",
        stderr(&o)
    );
    let mut leaving = zkr(&s)
        .args([
            "barrier",
            "leave",
            "/cli/b",
            "--members",
            "2",
            "--timeout",
            "60s",
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        leaving.try_wait().unwrap().is_none(),
        "left before the member did"
    );
    assert!(core.leave_blocking(Some(Duration::from_secs(30))).unwrap());
    let status = wait_exit(&mut leaving, "zkr barrier leave", Duration::from_secs(60));
    assert!(status.success());
}

/// An item zkr could not write out (stdout is /dev/full) is not lost: the simple queue's is
/// offered again, a distributed queue's given back (released with a lock path, put back
/// without one).
#[test]
fn an_item_that_could_not_be_written_out_stays_in_the_queue() {
    let server = TestingServer::start();
    let s = server.connect_string();
    let c = client(&server);
    let full = || {
        Stdio::from(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
    };
    let simple = SimpleDistributedQueue::new(&c, "/cli/full-simple").unwrap();
    simple.offer_blocking(b"kept").unwrap();
    let o = run(zkr(&s)
        .args(["queue", "take", "/cli/full-simple"])
        .stdout(full()));
    assert!(!o.status.success(), "the write to /dev/full succeeded?");
    assert_eq!(
        simple.poll_blocking().unwrap().as_deref(),
        Some(&b"kept"[..])
    );
    for (path, lock) in [
        ("/cli/full-dq", None),
        ("/cli/full-dql", Some("/cli/full-dql-locks")),
    ] {
        let options = QueueOptions {
            lock_path: lock.map(str::to_string),
            ..QueueOptions::default()
        };
        let q = DistributedQueue::new(&c, path, options).unwrap();
        q.put_blocking(b"kept", None).unwrap();
        let mut args = vec!["queue", "take", path, "--distributed"];
        if let Some(lock) = lock {
            args.extend(["--lock-path", lock]);
        }
        let o = run(zkr(&s).args(&args).stdout(full()));
        assert!(
            !o.status.success(),
            "{path}: the write to /dev/full succeeded?"
        );
        let item = q
            .take_blocking(Some(Duration::from_secs(10)))
            .unwrap()
            .unwrap_or_else(|| panic!("{path}: the item was lost"));
        assert_eq!(item.data(), b"kept");
        item.done_blocking().unwrap();
    }
}
