//! `zkr lock` against a real ZooKeeper: mutual exclusion with Curator, lost holds, killed and
//! signalled holders, timeouts and the other lock kinds.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use common::*;

/// Sections each zkr loop runs, and the Curator worker's (2 × 80 + 40 = 200 in all).
/// `ZKR_CLI_LONG=1` multiplies them by 10 for a manual long run.
fn sections() -> (usize, usize) {
    if std::env::var_os("ZKR_CLI_LONG").is_some() {
        (800, 400)
    } else {
        (80, 40)
    }
}

/// What a section mark in the shared file says.
#[derive(Debug, PartialEq)]
enum Mark {
    Enter(String, i64),
    Exit(String, i64),
}

fn parse_mark(line: &str) -> Option<Mark> {
    let f: Vec<&str> = line.split_whitespace().collect();
    match f.as_slice() {
        ["enter", who, token] => Some(Mark::Enter(who.to_string(), token.parse().ok()?)),
        ["exit", who, token] => Some(Mark::Exit(who.to_string(), token.parse().ok()?)),
        // The Curator worker: "start java ID TOKEN NS" / "end java ID TOKEN NS".
        ["start", "java", id, token, _] => {
            Some(Mark::Enter(format!("java-{id}"), token.parse().ok()?))
        }
        ["end", "java", id, token, _] => {
            Some(Mark::Exit(format!("java-{id}"), token.parse().ok()?))
        }
        _ => None,
    }
}

#[test]
fn two_zkr_loops_and_a_curator_worker_never_overlap_and_fencing_tokens_increase() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("acceptance1");
    let log = dir.path("marks");
    let go = dir.path("go");
    let (per_loop, java_sections) = sections();

    let mut java = Reap(
        curator_worker()
            .args([
                "--role",
                "mutex",
                "--connect",
                &cs,
                "--path",
                "/acceptance/one",
            ])
            .args(["--iterations", &java_sections.to_string(), "--id", "j"])
            .arg("--log")
            .arg(&log)
            .arg("--go")
            .arg(&go)
            .spawn()
            .expect("start the Curator worker"),
    );
    wait_for(
        "the Curator worker to connect",
        Duration::from_secs(60),
        || lines(&log).iter().any(|l| l.starts_with("ready java")),
    );

    // Each loop: `zkr lock /p -- sh -c '…'` appending its enter and exit marks to the file.
    let script = format!(
        "for i in $(seq {per_loop}); do \
           \"$ZKR\" lock /acceptance/one -- sh -c 'echo \"enter $WHO $ZKR_FENCING_TOKEN\" >> \"$LOG\"; \
                                               echo \"exit $WHO $ZKR_FENCING_TOKEN\" >> \"$LOG\"' || exit 1; \
         done"
    );
    let start = Instant::now();
    let mut loops: Vec<Reap> = ["a", "b"]
        .iter()
        .map(|who| {
            Reap(
                Command::new("sh")
                    .args(["-c", &script])
                    .env("ZKR", ZKR)
                    .env("ZKR_SERVER", &cs)
                    .env("WHO", format!("zkr-{who}"))
                    .env("LOG", &log)
                    .spawn()
                    .expect("start a loop"),
            )
        })
        .collect();
    std::fs::write(&go, b"").unwrap();
    for (i, l) in loops.iter_mut().enumerate() {
        let status = wait_exit(&mut l.0, &format!("zkr loop {i}"), Duration::from_secs(240));
        assert!(status.success(), "zkr loop {i} failed: {status}");
    }
    let status = wait_exit(&mut java.0, "the Curator worker", Duration::from_secs(60));
    assert!(status.success(), "the Curator worker failed: {status}");
    eprintln!(
        "{} sections in {:?}",
        2 * per_loop + java_sections,
        start.elapsed()
    );

    let marks: Vec<Mark> = lines(&log).iter().filter_map(|l| parse_mark(l)).collect();
    assert_eq!(
        marks.len(),
        2 * (2 * per_loop + java_sections),
        "every section entered and left once"
    );
    let mut last_token = i64::MIN;
    let mut by_runtime = std::collections::HashMap::new();
    for pair in marks.chunks(2) {
        match pair {
            [Mark::Enter(who, t), Mark::Exit(who2, t2)] if who == who2 && t == t2 => {
                assert!(
                    *t > last_token,
                    "fencing token {t} after {last_token}: tokens must increase"
                );
                last_token = *t;
                *by_runtime
                    .entry(who.split('-').next().unwrap().to_string())
                    .or_insert(0) += 1;
            }
            other => panic!("sections overlap: {other:?}"),
        }
    }
    assert_eq!(by_runtime["zkr"], 2 * per_loop);
    assert_eq!(by_runtime["java"], java_sections);
}

#[test]
fn a_lost_hold_stops_the_command_before_the_next_holder_enters() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let dir = TempDir::new("lost");
    let log = dir.path("log");
    let log_s = log.to_str().unwrap();

    let mut first = Reap(
        zkr(&proxy.connect_string())
            .args(["--session-timeout", "2s", "lock", "/acceptance/two", "--grace", "5s", "--"])
            .args(["sh", "-c", &format!(
                "exec 2>/dev/null; trap 'echo term >> {log_s}; exit 0' TERM; echo enter1 >> {log_s}; \
                 while :; do sleep 0.05; done"
            )])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    wait_for(
        "the first holder's command",
        Duration::from_secs(20),
        || lines(&log).contains(&"enter1".to_string()),
    );
    let mut second = Reap(
        zkr(&server.connect_string())
            .args([
                "lock",
                "/acceptance/two",
                "--",
                "sh",
                "-c",
                &format!("echo enter2 >> {log_s}"),
            ])
            .spawn()
            .unwrap(),
    );
    wait_for(
        "the second contender to queue",
        Duration::from_secs(20),
        || members(&server.connect_string(), "/acceptance/two").len() == 2,
    );

    proxy.blackhole();
    let status = wait_exit(&mut first.0, "the cut-off holder", Duration::from_secs(30));
    assert_eq!(status.code(), Some(4), "a lost hold exits 4");
    let status = wait_exit(&mut second.0, "the next holder", Duration::from_secs(30));
    assert!(status.success());
    assert_eq!(
        lines(&log),
        ["enter1", "term", "enter2"],
        "SIGTERM before the next holder enters"
    );
    let mut err = String::new();
    std::io::Read::read_to_string(first.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        err.starts_with("zkr: error: lost the hold on lock /acceptance/two"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

#[test]
fn a_holder_killed_with_sigkill_frees_the_lock_within_the_session_timeout_and_its_command_dies() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("kill9");
    let (pidfile, log) = (dir.path("pid"), dir.path("log"));
    let session_timeout = Duration::from_secs(2);

    let mut holder = Reap(
        zkr(&cs)
            .args(["--session-timeout", "2s", "lock", "/acceptance/three", "--"])
            .args([
                "sh",
                "-c",
                &format!("echo $$ > {}; exec sleep 600", pidfile.display()),
            ])
            .spawn()
            .unwrap(),
    );
    wait_for("the holder's command", Duration::from_secs(20), || {
        lines(&pidfile)
            .first()
            .is_some_and(|l| l.parse::<u32>().is_ok())
    });
    let command_pid: u32 = lines(&pidfile)[0].parse().unwrap();
    let mut next = Reap(
        zkr(&cs)
            .args(["lock", "/acceptance/three", "--", "sh", "-c"])
            .arg(format!("echo entered >> {}", log.display()))
            .spawn()
            .unwrap(),
    );
    wait_for(
        "the next contender to queue",
        Duration::from_secs(20),
        || members(&cs, "/acceptance/three").len() == 2,
    );

    signal(holder.0.id(), Signal::SIGKILL);
    let killed = Instant::now();
    let _ = holder.0.wait();
    wait_for(
        "the killed holder's command to die with it",
        Duration::from_secs(5),
        || !alive(command_pid),
    );
    let status = wait_exit(&mut next.0, "the next holder", Duration::from_secs(30));
    let waited = killed.elapsed();
    assert!(status.success());
    assert_eq!(lines(&log), ["entered"]);
    // The server expires the session one session timeout after it last heard from it (in ticks
    // of 200 ms); then the waiter's watch fires.
    assert!(
        waited < session_timeout + Duration::from_millis(1500),
        "the next holder entered {waited:?} after the kill (session timeout {session_timeout:?})"
    );
    eprintln!("next holder entered {waited:?} after kill -9 (session timeout {session_timeout:?})");
}

#[test]
fn a_signalled_zkr_passes_the_signal_on_releases_at_once_and_exits_with_the_commands_code() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("sigterm");
    let (pidfile, log) = (dir.path("pid"), dir.path("log"));
    let log_s = log.to_str().unwrap();

    // A long session: the lock must be released by zkr, not by the session's expiry.
    let mut holder = Reap(
        zkr(&cs)
            .args([
                "--session-timeout",
                "60s",
                "lock",
                "/acceptance/three-b",
                "--",
            ])
            .args([
                "sh",
                "-c",
                &format!(
                "trap 'echo term >> {log_s}; exit 3' TERM; echo $$ > {}; echo enter >> {log_s}; \
                 while :; do sleep 0.05; done",
                pidfile.display()
            ),
            ])
            .spawn()
            .unwrap(),
    );
    wait_for("the holder's command", Duration::from_secs(20), || {
        lines(&log).contains(&"enter".to_string())
    });
    let command_pid: u32 = lines(&pidfile)[0].parse().unwrap();
    let mut next = Reap(
        zkr(&cs)
            .args([
                "lock",
                "/acceptance/three-b",
                "--",
                "sh",
                "-c",
                &format!("echo enter2 >> {log_s}"),
            ])
            .spawn()
            .unwrap(),
    );
    wait_for(
        "the next contender to queue",
        Duration::from_secs(20),
        || members(&cs, "/acceptance/three-b").len() == 2,
    );

    let signalled = Instant::now();
    signal(holder.0.id(), Signal::SIGTERM);
    let status = wait_exit(
        &mut holder.0,
        "the signalled holder",
        Duration::from_secs(20),
    );
    assert_eq!(status.code(), Some(3), "zkr exits with its command's code");
    assert!(!alive(command_pid), "the command is not orphaned");
    let status = wait_exit(&mut next.0, "the next holder", Duration::from_secs(20));
    assert!(status.success());
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "released at once, not at the session's expiry: {:?}",
        signalled.elapsed()
    );
    assert_eq!(lines(&log), ["enter", "term", "enter2"]);
}

#[test]
fn timeouts_exit_3_and_read_locks_and_semaphores_admit_several() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("kinds");
    let flag = dir.path("hold");

    // A writer holds /rw until the flag file appears.
    let hold = format!("while [ ! -e {} ]; do sleep 0.02; done", flag.display());
    let mut writer = Reap(
        zkr(&cs)
            .args(["lock", "/kinds/rw", "--write", "--", "sh", "-c", &hold])
            .spawn()
            .unwrap(),
    );
    wait_for("the writer to hold", Duration::from_secs(20), || {
        members(&cs, "/kinds/rw")
            .first()
            .is_some_and(|m| m["role"] == "holder")
    });
    let o = run(zkr(&cs).args([
        "lock",
        "/kinds/rw",
        "--read",
        "--timeout",
        "300ms",
        "--",
        "true",
    ]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("was not acquired within 300ms"),
        "{}",
        stderr(&o)
    );
    std::fs::write(&flag, b"").unwrap();
    assert!(wait_exit(&mut writer.0, "the writer", Duration::from_secs(20)).success());
    std::fs::remove_file(&flag).unwrap();

    // Two readers at once: each waits (inside the lock) until both are in.
    let both = |who: &str| {
        format!(
            "touch {dir}/{who}; while [ ! -e {dir}/r1 ] || [ ! -e {dir}/r2 ]; do sleep 0.02; done",
            dir = dir.path("").display()
        )
    };
    let mut r1 = Reap(
        zkr(&cs)
            .args([
                "lock",
                "/kinds/rw",
                "--read",
                "--timeout",
                "20s",
                "--",
                "sh",
                "-c",
                &both("r1"),
            ])
            .spawn()
            .unwrap(),
    );
    let mut r2 = Reap(
        zkr(&cs)
            .args([
                "lock",
                "/kinds/rw",
                "--read",
                "--timeout",
                "20s",
                "--",
                "sh",
                "-c",
                &both("r2"),
            ])
            .spawn()
            .unwrap(),
    );
    assert!(wait_exit(&mut r1.0, "reader 1", Duration::from_secs(30)).success());
    assert!(wait_exit(&mut r2.0, "reader 2", Duration::from_secs(30)).success());

    // A semaphore of 2 leases admits two at once and a third waits.
    let lease = |who: &str| {
        format!(
            "echo $ZKR_LOCK_NODE > {dir}/{who}; while [ ! -e {dir}/release ]; do sleep 0.02; done",
            dir = dir.path("").display()
        )
    };
    let mut s1 = Reap(
        zkr(&cs)
            .args([
                "lock",
                "/kinds/sem",
                "--semaphore",
                "2",
                "--",
                "sh",
                "-c",
                &lease("s1"),
            ])
            .spawn()
            .unwrap(),
    );
    let mut s2 = Reap(
        zkr(&cs)
            .args([
                "lock",
                "/kinds/sem",
                "--semaphore",
                "2",
                "--",
                "sh",
                "-c",
                &lease("s2"),
            ])
            .spawn()
            .unwrap(),
    );
    wait_for("two leases", Duration::from_secs(20), || {
        dir.path("s1").exists() && dir.path("s2").exists()
    });
    assert!(
        lines(&dir.path("s1"))[0].starts_with("/kinds/sem/leases/_c_"),
        "ZKR_LOCK_NODE is the lease node"
    );
    let report = inspect(&cs, "/kinds/sem");
    assert_eq!(report["kind"], "semaphore");
    assert_eq!(report["leases"].as_array().unwrap().len(), 2);
    let o = run(zkr(&cs).args([
        "lock",
        "/kinds/sem",
        "--semaphore",
        "2",
        "--timeout",
        "300ms",
        "--",
        "true",
    ]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    std::fs::write(dir.path("release"), b"").unwrap();
    assert!(wait_exit(&mut s1.0, "lease 1", Duration::from_secs(20)).success());
    assert!(wait_exit(&mut s2.0, "lease 2", Duration::from_secs(20)).success());

    // The command's own failures: its exit code; 127 for a command that does not exist.
    let o = run(zkr(&cs).args(["lock", "/kinds/m", "--", "sh", "-c", "exit 42"]));
    assert_eq!(o.status.code(), Some(42));
    let o = run(zkr(&cs).args(["lock", "/kinds/m", "--", "/no/such/command"]));
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert!(members(&cs, "/kinds/m").is_empty(), "released");
}

#[test]
fn waiting_on_a_terminal_shows_place_and_holder_and_nothing_extra_without_one() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("tty");
    let release = dir.path("release");
    let mut holder = Reap(
        zkr(&cs)
            .args(["lock", "/tty/lock", "--id", "the-holder", "--", "sh", "-c"])
            .arg(format!(
                "while [ ! -e {} ]; do sleep 0.02; done",
                release.display()
            ))
            .spawn()
            .unwrap(),
    );
    wait_for("the holder", Duration::from_secs(20), || {
        members(&cs, "/tty/lock").len() == 1
    });

    // On a terminal (script(1) gives zkr a pseudo-terminal): the status line.
    let o = Command::new("script")
        .args(["-q", "-e", "-c"])
        .arg(format!("{ZKR} lock /tty/lock --timeout 1500ms -- true"))
        .arg("/dev/null")
        .env("ZKR_SERVER", &cs)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script(1) from util-linux");
    let screen = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{screen}");
    assert!(
        screen.contains("zkr: waiting for lock /tty/lock: 2 of 2 in line, held by the-holder for"),
        "status line on a terminal: {screen:?}"
    );

    // Not a terminal: only the timeout's one line.
    let o = run(zkr(&cs).args(["lock", "/tty/lock", "--timeout", "500ms", "--", "true"]));
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stderr(&o).lines().count(), 1, "{:?}", stderr(&o));
    assert!(stderr(&o).starts_with("zkr: error: lock /tty/lock was not acquired within 500ms"));

    std::fs::write(&release, b"").unwrap();
    assert!(wait_exit(&mut holder.0, "the holder", Duration::from_secs(20)).success());
}

/// zkr's options for the tests that cut its connection: each try of an operation on a dead
/// connection waits up to the connect timeout (four tries in all), and the session outlives
/// the test.
const CUT_OPTIONS: [&str; 4] = ["--connect-timeout", "4s", "--session-timeout", "30s"];

/// zkr's own limit on giving a hold back and on closing the session (cli/src/connect.rs).
const CLOSE_LIMIT: Duration = Duration::from_secs(2);

/// `zkr --server PROXY lock PATH ARGS… -- sh -c SCRIPT`, stdout collected, stderr piped.
fn holder_via(proxy: &FaultProxy, path: &str, args: &[&str], script: &str) -> Lines {
    let mut c = zkr(&proxy.connect_string());
    c.args(CUT_OPTIONS)
        .args(["lock", path])
        .args(args)
        .args(["--", "sh", "-c", script])
        .stderr(std::process::Stdio::piped());
    Lines::spawn(c)
}

fn stderr_of(l: &mut Lines) -> String {
    let mut err = String::new();
    std::io::Read::read_to_string(l.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    err
}

#[test]
fn a_lost_lease_stops_the_command_and_zkr_exits_4_within_grace_and_the_close_limit() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let grace = Duration::from_secs(1);
    let mut holder = holder_via(
        &proxy,
        "/lease/lost",
        &["--semaphore", "1", "--grace", "1s"],
        "echo started; exec sleep 60",
    );
    wait_for("the command", Duration::from_secs(30), || {
        holder.lines().contains(&"started".to_string())
    });
    let cut = Instant::now();
    proxy.cut();
    let status = wait_exit(
        &mut holder.child,
        "zkr after the cut",
        Duration::from_secs(90),
    );
    let took = cut.elapsed();
    let err = stderr_of(&mut holder);
    assert_eq!(status.code(), Some(4), "{err}");
    assert!(
        err.starts_with("zkr: error: lost the hold on lock /lease/lost"),
        "{err}"
    );
    // Stopped at the cut, the command died at SIGTERM: then at most the close limit (the
    // lease's delete is not waited for on a dead connection), not the client's four tries.
    let limit = grace + CLOSE_LIMIT + Duration::from_secs(5);
    assert!(
        took < limit,
        "zkr exited {took:?} after the cut (limit {limit:?}): {err}"
    );
    eprintln!("exit 4 came {took:?} after the cut");
}

#[test]
fn a_lease_whose_connection_goes_while_its_ownership_is_read_stops_the_command_at_once() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    // Every reply comes a second late: the lease's ownership read, sent as the command starts,
    // is still unanswered when the test sees the command's first line and cuts the connection.
    proxy.delay_replies(Duration::from_secs(1));
    let grace = Duration::from_secs(1);
    let mut holder = holder_via(
        &proxy,
        "/lease/checking",
        &["--semaphore", "1", "--grace", "1s"],
        "echo started; exec sleep 60",
    );
    wait_for("the command", Duration::from_secs(90), || {
        holder.lines().contains(&"started".to_string())
    });
    let cut = Instant::now();
    proxy.cut();
    let status = wait_exit(
        &mut holder.child,
        "zkr after the cut",
        Duration::from_secs(90),
    );
    let took = cut.elapsed();
    let err = stderr_of(&mut holder);
    assert_eq!(status.code(), Some(4), "{err}");
    // The loss is watched while the read runs: not after the read's tries (4 × 4s).
    let limit = grace + CLOSE_LIMIT + Duration::from_secs(5);
    assert!(
        took < limit,
        "zkr exited {took:?} after the cut (limit {limit:?}): {err}"
    );
    eprintln!("exit 4 came {took:?} after the cut");
}

#[test]
fn a_command_that_ends_while_cut_off_under_the_session_policy_does_not_wait_out_the_release() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let dir = TempDir::new("session-release");
    for (i, kind) in [&["--semaphore", "1"][..], &[][..]].into_iter().enumerate() {
        let go = dir.path(&format!("go{i}"));
        let script = format!(
            "echo started; while [ ! -e {} ]; do sleep 0.05; done; echo done",
            go.display()
        );
        let mut args = vec!["--lost-policy", "session"];
        args.extend_from_slice(kind);
        let mut holder = holder_via(&proxy, &format!("/lease/session{i}"), &args, &script);
        wait_for("the command", Duration::from_secs(30), || {
            holder.lines().contains(&"started".to_string())
        });
        // Cut off: under the session policy the hold stays until the session is lost.
        proxy.cut();
        let ended = Instant::now();
        std::fs::write(&go, b"").unwrap();
        let status = wait_exit(
            &mut holder.child,
            "zkr after its command",
            Duration::from_secs(90),
        );
        let took = ended.elapsed();
        let err = stderr_of(&mut holder);
        assert_eq!(status.code(), Some(0), "{kind:?}: {err}");
        assert_eq!(holder.lines(), ["started", "done"]);
        // The release and the close, each at most the close limit, not the client's tries.
        let limit = CLOSE_LIMIT * 2 + Duration::from_secs(5);
        assert!(
            took < limit,
            "{kind:?}: zkr exited {took:?} after its command ended (limit {limit:?}): {err}"
        );
        eprintln!("{kind:?}: exit 0 came {took:?} after the command ended");
        proxy.restore();
    }
}
