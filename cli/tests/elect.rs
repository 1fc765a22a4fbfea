//! `zkr elect` and `zkr observe` against a real ZooKeeper.

mod common;

use std::time::Duration;

use nix::sys::signal::Signal;

use common::*;

/// The command each participant runs: checks that no earlier leader's command is alive, records
/// its pid and its start, then becomes `sleep 600` (exec: the pid stays the command's).
fn leader_command(dir: &TempDir) -> String {
    let (pids, log) = (dir.path("pids"), dir.path("log"));
    format!(
        "for p in $(cat {pids} 2>/dev/null); do \
           if [ -e /proc/$p/status ] && ! grep -q '^State:.*Z' /proc/$p/status \
              && grep -q sleep /proc/$p/cmdline; then echo \"overlap $p\" >> {log}; fi; \
         done; \
         echo $$ >> {pids}; echo \"start $ZKR_LEADER_ID $ZKR_FENCING_TOKEN\" >> {log}; exec sleep 600",
        pids = pids.display(),
        log = log.display()
    )
}

fn starts(dir: &TempDir) -> Vec<String> {
    let log = lines(&dir.path("log"));
    assert!(
        !log.iter().any(|l| l.starts_with("overlap")),
        "two leaders' commands ran at once: {log:?}"
    );
    log.into_iter()
        .filter_map(|l| {
            l.strip_prefix("start ")
                .map(|s| s.split(' ').next().unwrap().to_string())
        })
        .collect()
}

#[test]
fn three_electors_run_one_command_at_a_time_and_a_killed_leader_hands_over() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("elect");
    let command = leader_command(&dir);
    let mut electors: Vec<(String, Reap)> = ["p1", "p2", "p3"]
        .iter()
        .map(|id| {
            let child = zkr(&cs)
                .args([
                    "--session-timeout",
                    "2s",
                    "elect",
                    "/acceptance/four",
                    "--id",
                    id,
                    "--",
                ])
                .args(["sh", "-c", &command])
                .spawn()
                .unwrap();
            (id.to_string(), Reap(child))
        })
        .collect();
    wait_for(
        "three participants and one leader",
        Duration::from_secs(30),
        || members(&cs, "/acceptance/four").len() == 3 && starts(&dir).len() == 1,
    );
    let first = starts(&dir)[0].clone();
    let pids = || -> Vec<u32> {
        lines(&dir.path("pids"))
            .iter()
            .map(|p| p.parse().unwrap())
            .collect()
    };
    let leader_pid = pids()[0];
    assert_eq!(
        members(&cs, "/acceptance/four")[0]["data"],
        first.as_str(),
        "the leader heads the line"
    );

    // kill -9 the leader's zkr: its command dies with it, another's starts once the session expires.
    let i = electors.iter().position(|(id, _)| *id == first).unwrap();
    let (_, mut killed) = electors.remove(i);
    signal(killed.0.id(), Signal::SIGKILL);
    let _ = killed.0.wait();
    wait_for("a second leader's command", Duration::from_secs(20), || {
        starts(&dir).len() == 2
    });
    assert!(
        !alive(leader_pid),
        "the killed leader's command died with it"
    );
    let second = starts(&dir)[1].clone();
    assert_ne!(second, first);

    // SIGTERM to the new leader's zkr: passed on to its command (sleep dies: 128+15), leadership
    // released at once, the third starts.
    let i = electors.iter().position(|(id, _)| *id == second).unwrap();
    let (_, mut stopped) = electors.remove(i);
    signal(stopped.0.id(), Signal::SIGTERM);
    let status = wait_exit(
        &mut stopped.0,
        "the signalled leader",
        Duration::from_secs(20),
    );
    assert_eq!(status.code(), Some(128 + 15));
    wait_for(
        "the third leader's command",
        Duration::from_secs(10),
        || starts(&dir).len() == 3,
    );
    assert!(pids()[..2].iter().all(|p| !alive(*p)));
    let (_, mut last) = electors.remove(0);
    signal(last.0.id(), Signal::SIGTERM);
    assert_eq!(
        wait_exit(&mut last.0, "the last leader", Duration::from_secs(20)).code(),
        Some(143)
    );
    assert!(starts(&dir).len() == 3, "one command per leadership");
}

#[test]
fn a_latch_elector_with_requeue_runs_again_and_observe_follows_the_leader() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("requeue");
    let runs = dir.path("runs");

    let observer = Lines::spawn({
        let mut c = zkr(&cs);
        c.args([
            "observe",
            "/elect/requeue",
            "--json",
            "--until",
            "id=b",
            "--timeout",
            "60s",
        ]);
        c
    });
    wait_for("the observer's first line", Duration::from_secs(20), || {
        !observer.lines().is_empty()
    });
    assert_eq!(
        observer.json()[0]["leader"],
        serde_json::Value::Null,
        "nobody leads yet"
    );

    // `a` leads and holds; `b` queues with --requeue and a command that ends at once.
    let mut a = Reap(
        zkr(&cs)
            .args([
                "elect",
                "/elect/requeue",
                "--latch",
                "--id",
                "a",
                "--",
                "sleep",
                "600",
            ])
            .spawn()
            .unwrap(),
    );
    wait_for("a to lead", Duration::from_secs(20), || {
        members(&cs, "/elect/requeue")
            .first()
            .is_some_and(|m| m["data"] == "a" && m["role"] == "leader")
    });
    let mut b = Reap(
        zkr(&cs)
            .args([
                "elect",
                "/elect/requeue",
                "--latch",
                "--requeue",
                "--id",
                "b",
                "--",
            ])
            .args(["sh", "-c", &format!("echo run >> {}", runs.display())])
            .spawn()
            .unwrap(),
    );
    wait_for("b to queue", Duration::from_secs(20), || {
        members(&cs, "/elect/requeue").len() == 2
    });
    assert!(lines(&runs).is_empty(), "b does not run while a leads");

    signal(a.0.id(), Signal::SIGTERM);
    assert_eq!(
        wait_exit(&mut a.0, "a", Duration::from_secs(20)).code(),
        Some(143)
    );
    wait_for("b to run three times", Duration::from_secs(30), || {
        lines(&runs).len() >= 3
    });
    let mut observer = observer;
    let status = wait_exit(
        &mut observer.child,
        "observe --until id=b",
        Duration::from_secs(20),
    );
    assert!(status.success(), "observe exits 0 once b leads");
    let seen: Vec<serde_json::Value> = observer
        .json()
        .iter()
        .map(|v| v["leader"].clone())
        .collect();
    assert_eq!(seen.first(), Some(&serde_json::Value::Null));
    assert_eq!(seen.last(), Some(&serde_json::json!("b")));
    assert!(seen.contains(&serde_json::json!("a")), "{seen:?}");

    signal(b.0.id(), Signal::SIGTERM);
    let status = wait_exit(&mut b.0, "b", Duration::from_secs(20));
    assert!(status.code().is_some(), "b exits when signalled");
}

#[test]
fn a_leader_cut_off_from_zookeeper_stops_its_command_before_the_next_leader_starts() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let dir = TempDir::new("elect-lost");
    let log = dir.path("log");
    let log_s = log.to_str().unwrap();
    let run = |who: &str| {
        format!(
            "exec 2>/dev/null; trap 'echo stop {who} >> {log_s}; exit 0' TERM; echo start {who} >> {log_s}; \
             while :; do sleep 0.05; done"
        )
    };
    let mut first = Reap(
        zkr(&proxy.connect_string())
            .args([
                "--session-timeout",
                "2s",
                "elect",
                "/elect/lost",
                "--id",
                "a",
                "--",
                "sh",
                "-c",
                &run("a"),
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    wait_for("a to lead", Duration::from_secs(20), || {
        lines(&log) == ["start a"]
    });
    let mut second = Reap(
        zkr(&server.connect_string())
            .args([
                "elect",
                "/elect/lost",
                "--id",
                "b",
                "--",
                "sh",
                "-c",
                &run("b"),
            ])
            .spawn()
            .unwrap(),
    );
    wait_for("b to queue", Duration::from_secs(20), || {
        members(&server.connect_string(), "/elect/lost").len() == 2
    });
    proxy.blackhole();
    let status = wait_exit(&mut first.0, "the cut-off leader", Duration::from_secs(30));
    assert_eq!(status.code(), Some(4), "lost leadership exits 4");
    wait_for("b to lead", Duration::from_secs(20), || {
        lines(&log).len() == 3
    });
    assert_eq!(
        lines(&log),
        ["start a", "stop a", "start b"],
        "a stopped before b started"
    );
    let mut err = String::new();
    std::io::Read::read_to_string(first.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        err.starts_with("zkr: error: lost the leadership of /elect/lost"),
        "{err}"
    );
    signal(second.0.id(), Signal::SIGTERM);
    assert_eq!(
        wait_exit(&mut second.0, "b", Duration::from_secs(20)).code(),
        Some(0),
        "b's command traps TERM and exits 0"
    );
}

#[test]
fn timeout_0s_makes_one_attempt_it_leads_on_a_free_path_and_gives_up_on_a_taken_one() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("elect-zero");
    for latch in [false, true] {
        let kind = if latch { "latch" } else { "selector" };
        let with_kind = |c: &mut std::process::Command| {
            if latch {
                c.arg("--latch");
            }
        };
        // Nobody leads: the one attempt leads and runs the command (`lock --timeout 0s` alike).
        let free = format!("/elect/zero/free-{kind}");
        let mut c = zkr(&cs);
        c.args(["elect", &free, "--timeout", "0s"]);
        with_kind(&mut c);
        let o = run(c.args(["--", "sh", "-c", "echo ran"]));
        assert_eq!(o.status.code(), Some(0), "{kind}: {}", stderr(&o));
        assert_eq!(stdout(&o), "ran\n", "{kind}");

        // Somebody leads: exit 3 at once, the command not run.
        let taken = format!("/elect/zero/taken-{kind}");
        let release = dir.path(&format!("release-{kind}"));
        let mut c = zkr(&cs);
        c.args(["elect", &taken, "--id", "holder"]);
        with_kind(&mut c);
        c.args(["--", "sh", "-c"]).arg(format!(
            "while [ ! -e {} ]; do sleep 0.02; done",
            release.display()
        ));
        let mut holder = Reap(c.spawn().unwrap());
        wait_for("the holder to lead", Duration::from_secs(20), || {
            members(&cs, &taken)
                .first()
                .is_some_and(|m| m["data"] == "holder" && m["role"] != "waiting")
        });
        let mut c = zkr(&cs);
        c.args(["elect", &taken, "--timeout", "0s"]);
        with_kind(&mut c);
        let o = run(c.args(["--", "sh", "-c", "echo ran"]));
        assert_eq!(o.status.code(), Some(3), "{kind}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{kind}: the command must not run");
        assert!(
            stderr(&o).starts_with(&format!("zkr: error: not leading {taken} within 0s")),
            "{kind}: {}",
            stderr(&o)
        );
        wait_for(
            "the one who gave up to leave the line",
            Duration::from_secs(10),
            || members(&cs, &taken).len() == 1,
        );
        std::fs::write(&release, b"").unwrap();
        assert!(wait_exit(&mut holder.0, "the holder", Duration::from_secs(20)).success());
    }
}
