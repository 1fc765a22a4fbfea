//! `zkr node` (create, get, set, delete, ls) and `zkr acl` (get, set, digest) against a real
//! ZooKeeper: outputs, JSON, the modes and options, and the documented exit codes.

mod common;

use common::*;

/// A failure is one line on stderr with the documented code.
fn assert_fails(o: &std::process::Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "exit code; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("zkr: error: "), "{err:?}");
    assert!(err.contains(needle), "{needle:?} in {err:?}");
}

fn ok(o: std::process::Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        stderr(&o)
    );
    stdout(&o)
}

fn json(o: std::process::Output) -> serde_json::Value {
    serde_json::from_str(&ok(o)).expect("one JSON object")
}

#[test]
fn node_create_get_set_ls_delete_round_trip() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let node = |args: &[&str]| run(zkr(&cs).arg("node").args(args));

    // create: parents, data, the created path printed; sequential modes print the sequence.
    assert_eq!(
        ok(node(&["create", "/app/config", "v1", "--parents"])),
        "/app/config\n"
    );
    let seq = ok(node(&[
        "create",
        "/app/job-",
        "--mode",
        "persistent_sequential",
    ]));
    assert!(seq.starts_with("/app/job-00000000"), "{seq}");
    assert_fails(&node(&["create", "/app/config", "again"]), 1, "exists");
    assert_fails(
        &node(&["create", "/missing/parent/x"]),
        1,
        "/missing/parent/x",
    );
    assert_fails(&node(&["create", "/app/e", "--mode", "bogus"]), 1, "--mode");
    assert_fails(
        &node(&["create", "/app/e", "--mode", "ephemeral", "--ttl", "1m"]),
        1,
        "--ttl",
    );

    // get: the data and a newline; --stat zkCli's stat lines; JSON with the stat.
    assert_eq!(ok(node(&["get", "/app/config"])), "v1\n");
    let with_stat = ok(node(&["get", "/app/config", "--stat"]));
    assert!(with_stat.starts_with("v1\ncZxid = 0x"), "{with_stat}");
    assert!(with_stat.contains("\ndataVersion = 0\n"), "{with_stat}");
    let v = json(run(zkr(&cs).args(["--json", "node", "get", "/app/config"])));
    assert_eq!(v["data"], "v1");
    assert_eq!(v["data_hex"], "7631");
    assert_eq!(v["stat"]["version"], 0);
    assert_fails(&node(&["get", "/app/nothing"]), 1, "/app/nothing");

    // set: at a version (a mismatch is 1), from stdin with "-".
    assert_eq!(
        ok(node(&["set", "/app/config", "v2", "--version", "0"])),
        ""
    );
    assert_fails(
        &node(&["set", "/app/config", "v3", "--version", "0"]),
        1,
        "version",
    );
    let mut set = zkr(&cs);
    set.args(["node", "set", "/app/config", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = set.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"from\nstdin").unwrap();
    }
    assert!(child.wait_with_output().unwrap().status.success());
    assert_eq!(ok(node(&["get", "/app/config"])), "from\nstdin\n");

    // compressed: stored as Curator's GZIP, read back with --compressed.
    ok(node(&["create", "/app/z", "zipped", "--compressed"]));
    assert_eq!(ok(node(&["get", "/app/z", "--compressed"])), "zipped\n");
    let raw = json(run(zkr(&cs).args(["--json", "node", "get", "/app/z"])));
    assert!(
        raw["data_hex"].as_str().unwrap().starts_with("1f8b"),
        "GZIP on the server: {raw}"
    );
    ok(node(&["set", "/app/z", "again", "--compressed"]));
    assert_eq!(ok(node(&["get", "/app/z", "--compressed"])), "again\n");

    // TTL and container modes (the harness enables extended types).
    assert_eq!(
        ok(node(&["create", "/app/ttl", "t", "--ttl", "10m"])),
        "/app/ttl\n"
    );
    assert_eq!(ok(node(&["get", "/app/ttl"])), "t\n");
    ok(node(&["create", "/app/box", "--mode", "container"]));

    // ls: sorted children; --stat adds the node's stat; JSON.
    let ls = ok(node(&["ls", "/app"]));
    let names: Vec<&str> = ls.lines().collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(
        names.contains(&"config") && names.contains(&"ttl") && names.len() == 5,
        "{ls}"
    );
    let ls = ok(node(&["ls", "/app", "-s"]));
    assert!(ls.contains("\nnumChildren = 5\n"), "{ls}");
    let v = json(run(zkr(&cs).args(["--json", "node", "ls", "/app"])));
    assert_eq!(v["children"].as_array().unwrap().len(), 5);
    assert_eq!(v["stat"]["num_children"], 5);

    // delete: at a version; a node with children is 1 unless --recursive.
    assert_fails(
        &node(&["delete", "/app/config", "--version", "0"]),
        1,
        "version",
    );
    ok(node(&["delete", "/app/config"]));
    assert_fails(&node(&["get", "/app/config"]), 1, "/app/config");
    assert_fails(&node(&["delete", "/app"]), 1, "/app");
    ok(node(&["delete", "/app", "--recursive"]));
    assert_fails(&node(&["ls", "/app"]), 1, "/app");
    assert_fails(&node(&["delete", "/"]), 1, "root");

    // Bad input needs no server; no server is 2.
    let nowhere = "127.0.0.1:1";
    assert_fails(
        &run(zkr(nowhere).args(["node", "get", "relative"])),
        1,
        "absolute",
    );
    assert_fails(
        &run(zkr(nowhere).args(["--connect-timeout", "1s", "node", "get", "/x"])),
        2,
        "could not connect",
    );
}

#[test]
fn acl_get_set_and_digest_entries_as_zkcli_writes_them() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    ok(run(zkr(&cs).args(["node", "create", "/secured", "v"])));
    assert_eq!(
        ok(run(zkr(&cs).args(["acl", "get", "/secured"]))),
        "world:anyone:cdrwa\n"
    );

    // digest entries: the same id as the core's (ZooKeeper's generateDigest).
    let digest = ok(run(zkr("127.0.0.1:1").args([
        "acl",
        "digest",
        "alice:secret",
    ])));
    let expected = zkrecipes::Acl::digest(zkrecipes::Permission::ALL, "alice", "secret");
    assert_eq!(digest, format!("digest:{}\n", expected.id));
    let alice = format!("{}:cdrwa", digest.trim());

    // set: several entries, comma-separated or as arguments; get prints them back.
    ok(run(zkr(&cs).args([
        "acl",
        "set",
        "/secured",
        &format!("world:anyone:r,{alice}"),
    ])));
    // The server masks a digest entry's hash ("x") for a caller without ADMIN on the node.
    let got = ok(run(zkr(&cs).args(["acl", "get", "/secured"])));
    assert_eq!(got, "world:anyone:r\ndigest:alice:x:cdrwa\n");
    let got = ok(run(zkr(&cs).args([
        "--auth",
        "alice:secret",
        "acl",
        "get",
        "/secured",
    ])));
    assert_eq!(got, format!("world:anyone:r\n{alice}\n"));
    let v = json(run(zkr(&cs).args(["--json", "acl", "get", "/secured"])));
    assert_eq!(v["aversion"], 1);
    assert_eq!(
        v["acl"][0],
        serde_json::json!({"scheme": "world", "id": "anyone", "perms": "r"})
    );

    // Everyone reads; only alice writes (no permission is 1).
    assert_eq!(ok(run(zkr(&cs).args(["node", "get", "/secured"]))), "v\n");
    assert_fails(
        &run(zkr(&cs).args(["node", "set", "/secured", "x"])),
        1,
        "not authorized",
    );
    ok(run(zkr(&cs).args([
        "--auth",
        "alice:secret",
        "node",
        "set",
        "/secured",
        "x",
    ])));

    // At an ACL version: a mismatch is 1.
    assert_fails(
        &run(zkr(&cs).args([
            "--auth",
            "alice:secret",
            "acl",
            "set",
            "/secured",
            "world:anyone:cdrwa",
            "--version",
            "0",
        ])),
        1,
        "version",
    );
    ok(run(zkr(&cs).args([
        "--auth",
        "alice:secret",
        "acl",
        "set",
        "/secured",
        "world:anyone:cdrwa",
        "auth::a",
        "--version",
        "1",
    ])));
    let got = ok(run(zkr(&cs).args(["acl", "get", "/secured"])));
    assert!(
        got.starts_with("world:anyone:cdrwa\ndigest:alice:"),
        "{got}"
    );

    // Bad entries are refused before connecting.
    let nowhere = "127.0.0.1:1";
    for bad in [
        "world:anyone",
        "world:anyone:rx",
        ":anyone:r",
        "world:anyone:",
    ] {
        assert_fails(
            &run(zkr(nowhere).args(["acl", "set", "/x", bad])),
            1,
            "ACL entry",
        );
    }
    assert_fails(
        &run(zkr(nowhere).args(["acl", "digest", "nocolon"])),
        1,
        "USER:PASSWORD",
    );
    assert_fails(
        &run(zkr(&cs).args(["acl", "get", "/nothing"])),
        1,
        "/nothing",
    );
}
