//! Bad input, help, counters (read back by Curator) and `watch`.

mod common;

use std::time::Duration;

use common::*;

/// A failure is one line on stderr, `zkr: error: …`, without a panic or a backtrace.
fn assert_one_line_error(o: &std::process::Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "exit code; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("zkr: error: "), "{err:?}");
    assert!(err.contains(needle), "{needle:?} in {err:?}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err:?}"
    );
}

#[test]
fn bad_input_is_one_line_and_a_documented_exit_code() {
    // No server is needed to refuse these.
    let nowhere = "127.0.0.1:1";
    let o = run(zkr(nowhere).args(["lock", "relative/path", "--", "true"]));
    assert_one_line_error(&o, 1, "a path must be absolute");
    let o = run(zkr(nowhere).args(["lock", "/p", "true"]));
    assert_one_line_error(&o, 1, "missing '--'");
    let o = run(zkr(nowhere).args(["lock", "/p", "--timeout", "abc", "--", "true"]));
    assert_one_line_error(&o, 1, "'abc'");
    let o = run(zkr(nowhere).args(["lock", "/p", "--"]));
    assert_one_line_error(&o, 1, "CMD");
    let o = run(zkr(nowhere).args(["counter", "/c", "frobnicate"]));
    assert_one_line_error(&o, 1, "frobnicate");
    let o = run(zkr("not a connect string").args(["counter", "/c", "get"]));
    assert_one_line_error(&o, 1, "--server");
    let o = run(zkr(nowhere).args(["--auth", "nocolon", "counter", "/c", "get"]));
    assert_one_line_error(&o, 1, "USER:PASSWORD");

    // An unknown server, and a port nobody listens on: could not connect (2).
    let o = run(zkr("no-such-host.invalid:2181").args([
        "--connect-timeout",
        "1s",
        "counter",
        "/c",
        "get",
    ]));
    assert_one_line_error(&o, 2, "could not connect");
    let o = run(zkr(nowhere).args(["--connect-timeout", "1s", "lock", "/p", "--", "true"]));
    assert_one_line_error(&o, 2, "could not connect");
}

#[test]
fn every_command_has_help_with_examples_and_the_exit_codes_are_documented() {
    let o = run(zkr("x:1").arg("--help"));
    assert!(o.status.success());
    let help = stdout(&o);
    for needle in [
        "Exit codes:",
        "3    timed out waiting",
        "4    the lock's hold",
        "Examples:",
    ] {
        assert!(help.contains(needle), "{needle:?} in zkr --help");
    }
    for cmd in [
        "lock",
        "elect",
        "observe",
        "counter",
        "shared-count",
        "inspect",
        "watch",
        "completions",
    ] {
        let o = run(zkr("x:1").args([cmd, "--help"]));
        assert!(o.status.success(), "{cmd} --help");
        assert!(
            stdout(&o).contains("Examples:"),
            "zkr {cmd} --help has examples"
        );
    }
    let o = run(zkr("x:1").args(["completions", "bash"]));
    assert!(o.status.success() && stdout(&o).contains("zkr"));
}

#[test]
fn counters_use_curators_encoding_and_watch_streams_changes() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let counter = |args: &[&str]| run(zkr(&cs).arg("counter").arg("/cmd/counter").args(args));
    assert_eq!(stdout(&counter(&["get"])), "0\n");
    // A missing counter reads as 0, and a compare-and-set never matches it (as in Curator):
    // said so, never "is 0, not 0".
    let o = counter(&["cas", "0", "1"]);
    assert_one_line_error(&o, 5, "does not exist yet");
    assert_eq!(stdout(&counter(&["add", "5"])), "5\n");
    assert_eq!(stdout(&counter(&["add", "-2"])), "3\n");
    assert_eq!(stdout(&counter(&["set", "10"])), "10\n");
    assert_eq!(stdout(&counter(&["cas", "10", "11"])), "11\n");
    let o = counter(&["cas", "10", "12"]);
    assert_eq!(stdout(&o), "11\n", "a failed cas prints the current value");
    assert_one_line_error(&o, 5, "is 11, not 10");
    let o = run(zkr(&cs).args(["--json", "counter", "/cmd/counter", "add", "1"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v, serde_json::json!({"path": "/cmd/counter", "value": 12}));
    assert!(
        run(zkr(&cs).args(["shared-count", "/cmd/count", "set", "7"]))
            .status
            .success()
    );
    assert_eq!(
        stdout(&run(zkr(&cs).args(["shared-count", "/cmd/count", "get"]))),
        "7\n"
    );

    // Curator reads what zkr wrote.
    let o = curator_worker()
        .args([
            "--role",
            "counter-get",
            "--connect",
            &cs,
            "--path",
            "/cmd/counter",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "12",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = curator_worker()
        .args([
            "--role",
            "sharedcount-get",
            "--connect",
            &cs,
            "--path",
            "/cmd/count",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "7",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // watch --recursive on a path that does not exist yet.
    let watch = Lines::spawn({
        let mut c = zkr(&cs);
        c.args(["watch", "/cmd/tree", "--recursive"]);
        c
    });
    wait_for("the watch on /cmd/tree", Duration::from_secs(20), || {
        server.four_letter("wchp").contains("/cmd/tree")
    });
    let events = || -> Vec<(String, String)> {
        watch
            .json()
            .iter()
            .map(|e| {
                (
                    e["type"].as_str().unwrap().to_string(),
                    e["path"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let saw = |kind: &str, path: &str| {
        let (kind, path) = (kind.to_string(), path.to_string());
        wait_for(&format!("{kind} {path}"), Duration::from_secs(20), || {
            events().contains(&(kind.clone(), path.clone()))
        });
    };
    let write = |args: &[&str]| assert!(run(zkr(&cs).args(args)).status.success(), "{args:?}");
    write(&["counter", "/cmd/tree", "set", "1"]);
    saw("created", "/cmd/tree");
    write(&["counter", "/cmd/tree/a", "set", "1"]);
    saw("children_changed", "/cmd/tree");
    saw("created", "/cmd/tree/a");
    write(&["counter", "/cmd/tree/a", "set", "2"]);
    saw("data_changed", "/cmd/tree/a");
    write(&["counter", "/cmd/tree", "set", "3"]);
    saw("data_changed", "/cmd/tree");
    // One persistent watch: two quick writes are two events (a re-armed one-shot watch could
    // fold them into one).
    let client = zkrecipes::ClientBuilder::new(cs.clone())
        .connect_blocking()
        .unwrap();
    for v in [4i64, 5] {
        client
            .set_data_blocking("/cmd/tree", &v.to_be_bytes(), None)
            .unwrap();
    }
    wait_for(
        "three data_changed of /cmd/tree",
        Duration::from_secs(20),
        || {
            events()
                .iter()
                .filter(|e| *e == &("data_changed".to_string(), "/cmd/tree".to_string()))
                .count()
                == 3
        },
    );
    client
        .delete_blocking("/cmd/tree/a", Default::default())
        .unwrap();
    saw("deleted", "/cmd/tree/a");
    client.close_blocking();
}

#[test]
fn namespace_and_digest_auth_reach_what_other_clients_wrote() {
    use zkrecipes::client::{Acl, Permission};
    let server = TestingServer::start();
    let cs = server.connect_string();

    // A creator-only counter written by a client authenticated as app:secret.
    let owner = zkrecipes::ClientBuilder::new(cs.clone())
        .auth("digest", b"app:secret".to_vec())
        .acl(vec![Acl::new(Permission::ALL, "auth", "")])
        .connect_blocking()
        .unwrap();
    owner
        .create_blocking("/secure", &42i64.to_be_bytes(), Default::default())
        .unwrap();
    owner.close_blocking();
    let o = run(zkr(&cs).args(["counter", "/secure", "get"]));
    assert_one_line_error(&o, 1, "not authorized");
    let o = run(zkr(&cs).args(["--auth", "app:secret", "counter", "/secure", "get"]));
    assert_eq!(stdout(&o), "42\n", "{}", stderr(&o));
    let o = run(zkr(&cs)
        .env("ZKR_AUTH", "app:secret")
        .args(["counter", "/secure", "get"]));
    assert_eq!(stdout(&o), "42\n", "{}", stderr(&o));

    // --namespace / ZKR_NAMESPACE: paths are relative to /NS.
    let o = run(zkr(&cs).args(["--namespace", "team", "counter", "/jobs", "set", "5"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&run(zkr(&cs).args(["counter", "/team/jobs", "get"]))),
        "5\n"
    );
    let o = run(zkr(&cs)
        .env("ZKR_NAMESPACE", "team")
        .args(["inspect", "/jobs", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["path"].as_str(), v["value"].as_i64()),
        (Some("/jobs"), Some(5))
    );
}

/// `watch --exact`: a stat-only cache; a change made while zkr is cut off from the server is
/// printed after the reconnect, flagged `"resync": true`, then `resynced`.
#[test]
fn watch_exact_prints_what_a_resync_finds_after_a_cut() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let proxy = zkrecipes_testing::FaultProxy::start(&cs);
    let client = zkrecipes::ClientBuilder::new(cs.clone())
        .connect_blocking()
        .unwrap();
    let create = |p: &str| {
        client
            .create_blocking(p, b"", zkrecipes::CreateOptions::default().parents())
            .unwrap();
    };
    create("/exact/a");
    let watch = Lines::spawn({
        let mut c = zkr(&proxy.connect_string());
        c.args([
            "--session-timeout",
            "20s",
            "watch",
            "/exact",
            "--recursive",
            "--exact",
        ]);
        c
    });
    wait_for(
        "the cache's watch on /exact",
        Duration::from_secs(20),
        || server.four_letter("wchp").contains("/exact"),
    );
    let events = || -> Vec<(String, String, bool)> {
        watch
            .json()
            .iter()
            .map(|e| {
                (
                    e["type"].as_str().unwrap().to_string(),
                    e["path"].as_str().unwrap().to_string(),
                    e["resync"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let saw = |kind: &str, path: &str, resync: bool| {
        let want = (kind.to_string(), path.to_string(), resync);
        wait_for(&format!("{want:?}"), Duration::from_secs(30), || {
            events().contains(&want)
        });
    };
    saw("initialized", "/exact", false);
    create("/exact/b");
    saw("created", "/exact/b", false);
    assert!(
        !events().iter().any(|e| e.1 == "/exact/a"),
        "no events for the initial load: {:?}",
        events()
    );
    // Cut zkr off (its session lives on), change the tree, let it back.
    proxy.cut();
    client
        .delete_blocking("/exact/a", Default::default())
        .unwrap();
    create("/exact/c");
    proxy.restore();
    saw("deleted", "/exact/a", true);
    saw("created", "/exact/c", true);
    saw("resynced", "/exact", true);
    client.close_blocking();
}
