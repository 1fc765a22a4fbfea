//! `zkr inspect` against a real ZooKeeper, with zkr's and Curator's participants.

mod common;

use std::time::Duration;

use nix::sys::signal::Signal;

use common::*;

#[test]
fn a_mutex_lists_its_holder_and_waiters_curators_included_in_queue_order_with_sessions() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("inspect");
    let (session_file, java_log, go) = (dir.path("session"), dir.path("java"), dir.path("go"));

    let mut holder = Reap(
        zkr(&cs)
            .args(["lock", "/acceptance/five", "--id", "holder", "--"])
            .args([
                "sh",
                "-c",
                &format!(
                    "echo $ZKR_SESSION_ID > {}; exec sleep 600",
                    session_file.display()
                ),
            ])
            .spawn()
            .unwrap(),
    );
    wait_for("the holder", Duration::from_secs(20), || {
        !lines(&session_file).is_empty()
    });
    let holder_session = lines(&session_file)[0].clone();
    let mut waiter = Reap(
        zkr(&cs)
            .args([
                "lock",
                "/acceptance/five",
                "--id",
                "zkr-waiter",
                "--",
                "true",
            ])
            .spawn()
            .unwrap(),
    );
    wait_for("zkr's waiter", Duration::from_secs(20), || {
        members(&cs, "/acceptance/five").len() == 2
    });
    let mut java = Reap(
        curator_worker()
            .args([
                "--role",
                "mutex-hold",
                "--connect",
                &cs,
                "--path",
                "/acceptance/five",
                "--id",
                "jw",
            ])
            .arg("--log")
            .arg(&java_log)
            .arg("--go")
            .arg(&go)
            .spawn()
            .unwrap(),
    );
    wait_for("Curator's waiter", Duration::from_secs(60), || {
        members(&cs, "/acceptance/five").len() == 3
    });
    let java_session = lines(&java_log)
        .iter()
        .find_map(|l| l.strip_prefix("session java jw ").map(str::to_string))
        .expect("the worker logs its session");

    let report = inspect(&cs, "/acceptance/five");
    assert_eq!(report["kind"], "mutex");
    let m = report["members"].as_array().unwrap();
    let got: Vec<(&str, &str, &str)> = m
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["session"].as_str().unwrap(),
                m["data"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got[0], ("holder", holder_session.as_str(), "holder"));
    assert_eq!((got[1].0, got[1].2), ("waiting", "zkr-waiter"), "{got:?}");
    assert!(
        ![holder_session.as_str(), java_session.as_str()].contains(&got[1].1),
        "{got:?}"
    );
    assert_eq!(
        (got[2].0, got[2].1),
        ("waiting", java_session.as_str()),
        "Curator's waiter last: {got:?}"
    );
    assert!(m
        .windows(2)
        .all(|w| w[0]["fencing_token"].as_i64() < w[1]["fencing_token"].as_i64()));
    assert!(m
        .iter()
        .all(|m| m["node"].as_str().unwrap().contains("-lock-")));

    // The text form: one row per member, in the same order.
    let o = run(zkr(&cs).args(["inspect", "/acceptance/five"]));
    let text = stdout(&o);
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("-lock-")).collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(
        rows[0].contains("holder") && rows[0].contains(&holder_session),
        "{text}"
    );
    assert!(rows[2].contains(&java_session), "{text}");

    // Let them all go: the holder's zkr on SIGTERM, the waiters in turn.
    signal(holder.0.id(), Signal::SIGTERM);
    wait_exit(&mut holder.0, "the holder", Duration::from_secs(20));
    assert!(wait_exit(&mut waiter.0, "zkr's waiter", Duration::from_secs(20)).success());
    wait_for("Curator to hold", Duration::from_secs(20), || {
        lines(&java_log)
            .iter()
            .any(|l| l.starts_with("acquired java jw"))
    });
    std::fs::write(&go, b"").unwrap();
    assert!(wait_exit(&mut java.0, "the Curator worker", Duration::from_secs(30)).success());
}

#[test]
fn a_latch_lists_its_leader_first_and_counters_show_their_values() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let mut electors = Vec::new();
    for id in ["first", "second", "third"] {
        electors.push(Reap(
            zkr(&cs)
                .args([
                    "elect",
                    "/inspect/latch",
                    "--latch",
                    "--id",
                    id,
                    "--",
                    "sleep",
                    "600",
                ])
                .spawn()
                .unwrap(),
        ));
        wait_for(id, Duration::from_secs(20), || {
            members(&cs, "/inspect/latch")
                .iter()
                .any(|m| m["data"] == id)
        });
    }
    let report = inspect(&cs, "/inspect/latch");
    assert_eq!(report["kind"], "leader_latch");
    let roles: Vec<(String, String)> = report["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().into(),
                m["data"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        roles,
        [
            ("leader", "first"),
            ("participant", "second"),
            ("participant", "third")
        ]
        .map(|(r, d)| (r.to_string(), d.to_string()))
    );
    for e in &mut electors {
        signal(e.0.id(), Signal::SIGTERM);
    }
    for e in &mut electors {
        wait_exit(&mut e.0, "an elector", Duration::from_secs(20));
    }

    let o = run(zkr(&cs).args(["counter", "/inspect/counter", "set", "-7"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let report = inspect(&cs, "/inspect/counter");
    assert_eq!(
        (report["kind"].as_str(), report["value"].as_i64()),
        (Some("counter"), Some(-7))
    );
    let o = run(zkr(&cs).args(["shared-count", "/inspect/count", "set", "12"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let report = inspect(&cs, "/inspect/count");
    assert_eq!(
        (report["kind"].as_str(), report["value"].as_i64()),
        (Some("shared_count"), Some(12))
    );
    let o = run(zkr(&cs).args(["inspect", "/inspect/none"]));
    assert_eq!(o.status.code(), Some(1), "no such node is bad input");
}
