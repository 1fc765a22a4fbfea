//! `zkr member` against a real ZooKeeper: registered while the command runs, the same id from
//! another session refused (exit 1) with the first registration untouched, gone when the
//! command ends.

mod common;

use std::time::Duration;

use nix::sys::signal::Signal;

use common::*;

/// The node's data and ephemeral owner, read with a zkrecipes client.
fn node(server: &str, path: &str) -> Option<(Vec<u8>, i64)> {
    let c = zkrecipes::Client::builder(server)
        .connect_blocking()
        .expect("connect");
    let r = c
        .get_data_blocking(path)
        .ok()
        .map(|(d, s)| (d, s.ephemeral_owner));
    c.close_blocking();
    r
}

#[test]
fn a_member_is_registered_while_its_command_runs_and_a_second_one_with_its_id_is_refused() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("member");
    let env_file = dir.path("env");
    let command = format!(
        "echo \"$ZKR_MEMBER_PATH $ZKR_MEMBER_ID $ZKR_MEMBER_NODE\" > {}; exec sleep 600",
        env_file.display()
    );
    let mut first = Reap(
        zkr(&cs)
            .args([
                "member",
                "/svc/api",
                "--id",
                "a",
                "--data",
                "10.0.0.7:80",
                "--",
            ])
            .args(["sh", "-c", &command])
            .spawn()
            .unwrap(),
    );
    wait_for("the command started", Duration::from_secs(30), || {
        !lines(&env_file).is_empty()
    });
    assert_eq!(lines(&env_file), vec!["/svc/api a /svc/api/a".to_string()]);
    let (data, owner) = node(&cs, "/svc/api/a").expect("registered");
    assert_eq!(data, b"10.0.0.7:80");
    assert_ne!(owner, 0, "a member's node is ephemeral");

    // The same id from another session: exit 1, nothing run, the first node untouched.
    let ran = dir.path("second-ran");
    let o = run(zkr(&cs)
        .args(["member", "/svc/api", "--id", "a", "--data", "other", "--"])
        .args(["sh", "-c", &format!("touch {}", ran.display())]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("/svc/api/a"), "{}", stderr(&o));
    assert!(!ran.exists(), "the second member's command ran");
    assert_eq!(node(&cs, "/svc/api/a"), Some((data, owner)));

    // SIGTERM: passed on to the command; the registration goes with it.
    signal(first.0.id(), Signal::SIGTERM);
    let status = wait_exit(&mut first.0, "the member", Duration::from_secs(20));
    assert_eq!(status.code(), Some(128 + 15));
    assert_eq!(
        node(&cs, "/svc/api/a"),
        None,
        "the member's node outlived it"
    );

    // A command that ends by itself: its exit code, and the node gone.
    let o = run(zkr(&cs)
        .args(["member", "/svc/api", "--id", "b", "--"])
        .args(["sh", "-c", "test -n \"$ZKR_MEMBER_NODE\" && exit 7"]));
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert_eq!(node(&cs, "/svc/api/b"), None);
}
