//! `zkr ensemble config` and `zkr ensemble reconfig` against a real reconfigurable ensemble
//! (3 members, a digest superuser): the members table and JSON, a change refused without the
//! superuser, a member removed, a stale version, bad input; and a standalone server.

mod common;

use common::*;
use zkrecipes_testing::{Security, TestingCluster};

fn ok(o: std::process::Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        stderr(&o)
    );
    stdout(&o)
}

fn fails(o: &std::process::Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "exit code; stderr: {err}");
    assert!(err.starts_with("zkr: error: "), "{err:?}");
    assert!(err.contains(needle), "{needle:?} in {err:?}");
}

#[test]
fn ensemble_config_and_reconfig_on_a_reconfigurable_ensemble() {
    let cluster =
        TestingCluster::start_reconfigurable(3, Security::new().superuser("super", "secret"));
    let cs = cluster.connect_string();
    let ensemble = |args: &[&str]| run(zkr(&cs).arg("ensemble").args(args));
    let admin = |args: &[&str]| {
        run(zkr(&cs)
            .args(["--auth", "super:secret", "ensemble"])
            .args(args))
    };

    // The members table: one line per member, then the version.
    let text = ok(ensemble(&["config"]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    for (i, line) in lines[..3].iter().enumerate() {
        let s = cluster.server(i);
        assert!(
            line.starts_with(&format!("{} PARTICIPANT 127.0.0.{}:", i + 1, i + 1)),
            "{line}"
        );
        assert!(
            line.ends_with(&format!(" {}", s.connect_string())),
            "{line}"
        );
    }
    assert!(lines[3].starts_with("version=0x"), "{text}");
    let config: serde_json::Value =
        serde_json::from_str(&ok(ensemble(&["config", "--json"]))).unwrap();
    assert_eq!(config["connect_string"], cs);
    let version = config["version_hex"].as_str().unwrap().to_string();
    assert_eq!(
        config["members"][2]["server_line"],
        cluster.server(2).reconfig_spec().unwrap()
    );

    // Without the superuser: refused, nothing changed.
    fails(&ensemble(&["reconfig", "--remove", "3"]), 1, "superuser");
    // Bad input, before connecting or sending.
    fails(&admin(&["reconfig"]), 1, "--add, --remove or --members");
    fails(
        &admin(&["reconfig", "--add", "4=127.0.0.4:1:2;3"]),
        1,
        "server line",
    );
    fails(
        &admin(&["reconfig", "--from-version=-1"]),
        1,
        "--from-version",
    );
    fails(
        &admin(&[
            "reconfig",
            "--members",
            "server.1=127.0.0.1:1:2;3",
            "--remove",
            "2",
        ]),
        1,
        "--members",
    );

    // Member 3 leaves, from the version read.
    let after = ok(admin(&[
        "reconfig",
        "--remove",
        "3",
        "--from-version",
        &version,
    ]));
    let ids: Vec<&str> = after
        .lines()
        .filter(|l| !l.starts_with("version="))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2"], "{after}");
    assert!(cluster.wait_for_members(&[1, 2], std::time::Duration::from_secs(30)));
    // The same version again is stale.
    fails(
        &admin(&["reconfig", "--remove", "2", "--from-version", &version]),
        1,
        "version",
    );
}

#[test]
fn a_standalone_server_has_no_members_and_refuses_reconfig() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let o = run(zkr(&cs).args(["ensemble", "config", "--json"]));
    let config: serde_json::Value = serde_json::from_str(&ok(o)).unwrap();
    assert_eq!(config["members"], serde_json::json!([]));
    assert_eq!(config["version"], 0);
    fails(
        &run(zkr(&cs).args(["ensemble", "reconfig", "--remove", "2"])),
        1,
        "reconfigEnabled",
    );
}
