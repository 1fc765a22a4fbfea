//! Requests issued together leave in one write (vendored client patch 16, issue 34 §3).
//!
//! An uncontended acquire issues its create and its getChildren in one synchronous stretch.
//! The wire client's session task used to take one request from its channel per turn of an
//! unbiased `select!` whose first branch is fixed per connection (the address of its futures):
//! on some connections it wrote the create alone before taking the getChildren, so that
//! acquire took an extra round trip through a slow network, for the life of the connection.
//! With one runtime worker (the acquire and the session task on one thread) it happened on
//! about half the connections. This file runs with one worker, so the outcome is
//! deterministic: every acquire on every connection must reach the proxy in one read.

use std::time::Duration;

use zkrecipes::client::{CreateMode, CreateOptions, RequestCounts};
use zkrecipes::lock::InterProcessMutex;
use zkrecipes::{runtime, ClientBuilder, Owner};
use zkrecipes_testing::{FaultProxy, TestingServer};

const SECOND: Duration = Duration::from_secs(1);
/// Enough fresh connections that a per-connection defect hitting half of them cannot hide.
const CONNECTIONS: usize = 16;
const ACQUIRES: usize = 5;

#[test]
fn an_uncontended_acquire_sends_its_create_and_get_children_in_one_write() {
    // One worker: the acquire and the session task share a thread (this file's only test,
    // set before the first client builds the runtime).
    std::env::set_var(runtime::THREADS_ENV, "1");
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    // A persistent lock path: a container parent could be reaped between connections, and the
    // first acquire after that would create it again (more requests, not what is measured).
    let setup = ClientBuilder::new(server.connect_string())
        .connect_blocking()
        .expect("connect");
    let mut persistent = CreateOptions::new(CreateMode::Persistent);
    persistent.persistent_parents = true;
    runtime::block_on(setup.create("/pipelining/lock", b"", persistent)).expect("lock path");
    setup.close_blocking();
    let mut split = Vec::new();
    for c in 0..CONNECTIONS {
        let client = ClientBuilder::new(proxy.connect_string())
            .session_timeout(30 * SECOND)
            .connect_blocking()
            .expect("connect through the proxy");
        let lock = InterProcessMutex::new(&client, "/pipelining/lock").unwrap();
        let owner = Owner::new();
        for a in 0..ACQUIRES {
            let (reads, counts) = (proxy.client_reads(), client.request_counts());
            let acquired = {
                let lock = lock.clone();
                // On the runtime, as every face's calls run (the blocking face would issue
                // the requests from this thread, racing the worker).
                runtime::block_on(runtime::spawn(async move {
                    lock.acquire(owner, Some(30 * SECOND)).await
                }))
                .expect("the acquire task ran")
                .expect("acquire")
            };
            assert!(acquired, "an uncontended acquire succeeds");
            let reads = proxy.client_reads() - reads;
            let after = client.request_counts();
            let counts = (
                after.create - counts.create,
                after.get_children - counts.get_children,
                total(&after) - total(&counts),
            );
            assert_eq!(
                counts,
                (1, 1, 2),
                "an uncontended acquire is one create and one getChildren (create, getChildren, all)"
            );
            if reads != 1 {
                split.push(format!("connection {c}, acquire {a}: {reads} reads"));
            }
            runtime::block_on(lock.release(owner)).expect("release");
        }
        client.close_blocking();
    }
    assert!(
        split.is_empty(),
        "the create and getChildren of an acquire left in separate writes: {split:?}"
    );
}

/// Every request the client sent (of the kinds it counts).
fn total(c: &RequestCounts) -> u64 {
    [
        c.create,
        c.delete,
        c.get_data,
        c.set_data,
        c.exists,
        c.get_children,
        c.sync,
        c.multi,
        c.add_watch,
        c.get_acl,
        c.set_acl,
        c.get_config,
        c.reconfig,
        c.remove_watches,
    ]
    .iter()
    .sum()
}
