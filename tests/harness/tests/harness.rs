//! Tests of the harness itself, against real ZooKeeper servers. No sleeps: every wait is on a
//! condition with a deadline.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use zkrecipes_testing::{expire_session, four_letter, FaultProxy, TestingCluster, TestingServer};
use zookeeper_client::{Acls, Client, CreateMode, SessionState, StateWatcher};

const WAIT: Duration = Duration::from_secs(30);

async fn connect(connect_string: &str) -> Client {
    let connector = Client::connector().with_session_timeout(Duration::from_secs(20));
    connector
        .connect(connect_string)
        .await
        .expect("connect to ZooKeeper")
}

async fn create(client: &Client, path: &str, data: &[u8], mode: CreateMode) {
    client
        .create(path, data, &mode.with_acls(Acls::anyone_all()))
        .await
        .expect("create");
}

/// Waits (30 s at most) until the watched session is in state `want`.
async fn wait_state(watcher: &mut StateWatcher, want: SessionState) {
    let reached = async {
        while watcher.state() != want {
            watcher.changed().await;
        }
    };
    tokio::time::timeout(WAIT, reached)
        .await
        .unwrap_or_else(|_| panic!("session not {want:?} within 30 s"));
}

/// Polls `done` until true; panics after 30 s.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "not within 30 s: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn round_trip(client: &Client, path: &str) -> Duration {
    let start = Instant::now();
    client.get_data(path).await.expect("get_data");
    start.elapsed()
}

#[tokio::test]
async fn standalone_serves_stops_and_restarts_with_its_data() {
    let server = TestingServer::start();
    assert!(server.four_letter("srvr").contains("Mode: standalone"));
    assert_eq!(
        server.connect_string(),
        format!("127.0.0.1:{}", server.port())
    );
    let first_pid = server.pid().expect("running");

    let client = connect(&server.connect_string()).await;
    create(&client, "/kept", b"v1", CreateMode::Persistent).await;
    drop(client);

    server.restart();
    assert_ne!(server.pid(), Some(first_pid));
    let client = connect(&server.connect_string()).await;
    assert_eq!(
        client.get_data("/kept").await.expect("get after restart").0,
        b"v1"
    );
    drop(client);

    server.stop();
    assert!(!server.is_running() && server.pid().is_none());
    assert_eq!(server.four_letter("srvr"), "");
    server.start();
    server.kill(); // a crash loses nothing acknowledged either
    assert!(!server.is_running());
    server.start();
    let client = connect(&server.connect_string()).await;
    assert_eq!(
        client.get_data("/kept").await.expect("get after crash").0,
        b"v1"
    );
}

#[test]
fn pause_silences_the_server_until_resumed_and_drop_cleans_up() {
    let server = TestingServer::start();
    server.pause();
    assert!(server.is_paused() && server.is_running());
    assert_eq!(server.four_letter("srvr"), "");
    server.resume();
    assert!(!server.is_paused());
    assert!(server.four_letter("srvr").contains("Mode: standalone"));

    let (pid, dir) = (server.pid().expect("running"), server.dir().to_owned());
    server.pause();
    drop(server); // resumes, stops and removes the directory
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    assert!(!dir.exists());
}

#[test]
fn a_server_outlives_the_thread_that_started_it() {
    // As a shared fixture's server would: PR_SET_PDEATHSIG must not fire when that thread ends.
    let server = std::thread::spawn(TestingServer::start)
        .join()
        .expect("start in a thread");
    let srvr = server.four_letter("srvr");
    assert!(srvr.contains("Mode: standalone"), "{srvr:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_elects_a_new_leader_when_the_leader_dies() {
    let cluster = TestingCluster::start(3);
    let hosts: Vec<String> = cluster
        .servers()
        .iter()
        .map(|s| s.host().to_string())
        .collect();
    assert_eq!(hosts, ["127.0.0.1", "127.0.0.2", "127.0.0.3"]);
    assert_eq!(cluster.connect_string().split(',').count(), 3);
    let modes: Vec<String> = cluster
        .servers()
        .iter()
        .map(|s| s.four_letter("srvr"))
        .collect();
    assert_eq!(
        modes.iter().filter(|m| m.contains("Mode: leader")).count(),
        1,
        "{modes:?}"
    );
    assert_eq!(
        modes
            .iter()
            .filter(|m| m.contains("Mode: follower"))
            .count(),
        2,
        "{modes:?}"
    );
    let leader = cluster.leader_index().expect("a leader");

    let client = connect(&cluster.connect_string()).await;
    create(&client, "/replicated", b"x", CreateMode::Persistent).await;

    let ephemeral = connect(&cluster.connect_string()).await;
    create(&ephemeral, "/ephemeral", b"e", CreateMode::Ephemeral).await;
    expire_session(&cluster.connect_string(), ephemeral.session().clone());
    assert!(client
        .check_stat("/ephemeral")
        .await
        .expect("check_stat")
        .is_none());

    cluster.server(leader).kill();
    let new_leader = cluster.wait_for_quorum(WAIT).expect("a new leader");
    assert_ne!(new_leader, leader);
    assert_eq!(cluster.leader_index(), Some(new_leader));
    let survivor = cluster.server((leader + 1) % 3).connect_string();
    let other = connect(&survivor).await;
    assert_eq!(
        other
            .get_data("/replicated")
            .await
            .expect("get from survivor")
            .0,
        b"x"
    );

    cluster.server(leader).start();
    assert!(cluster.wait_for_quorum(WAIT).is_some());
    eventually("the restarted server follows", || {
        cluster
            .server(leader)
            .four_letter("srvr")
            .contains("Mode: follower")
    });
}

#[tokio::test]
async fn proxy_forwards_and_cut_disconnects_until_restored() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = connect(&proxy.connect_string()).await;
    create(&client, "/through-proxy", b"p", CreateMode::Persistent).await;
    assert_eq!(
        client.get_data("/through-proxy").await.expect("get").0,
        b"p"
    );
    assert_eq!(proxy.connections(), 1);
    assert!(proxy.bytes_forwarded() > 0);

    let mut state = client.state_watcher();
    proxy.cut();
    assert_eq!(proxy.connections(), 0);
    wait_state(&mut state, SessionState::Disconnected).await;
    assert_eq!(four_letter(&proxy.connect_string(), "srvr"), "");

    proxy.restore();
    wait_state(&mut state, SessionState::SyncConnected).await;
    assert_eq!(
        client
            .get_data("/through-proxy")
            .await
            .expect("get after restore")
            .0,
        b"p"
    );
}

/// `zk-harness proxy` (the C tests' and shell users' proxy) is controlled by stdin lines, one
/// answer line each: a client through it loses its connection on `cut` and gets it back on
/// `restore`; bad commands are answered with an error, and closing stdin ends the proxy.
#[tokio::test]
async fn proxy_command_is_controlled_through_stdin() {
    use std::io::BufRead;
    use std::process::Stdio;
    let server = TestingServer::start();
    let mut child = Command::new(env!("CARGO_BIN_EXE_zk-harness"))
        .args(["proxy", "--upstream", &server.connect_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run zk-harness proxy");
    let mut input = child.stdin.take().unwrap();
    let mut output = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut connect_string = String::new();
    output.read_line(&mut connect_string).unwrap();
    let connect_string = connect_string.trim().to_owned();
    assert!(
        connect_string.starts_with("127.0.0.1:"),
        "{connect_string:?}"
    );
    let mut ask = move |command: &str| -> String {
        writeln!(input, "{command}").unwrap();
        input.flush().unwrap();
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        line.trim().to_owned()
    };
    assert_eq!(ask("connections"), "0");
    let client = connect(&connect_string).await;
    create(&client, "/cli-proxy", b"c", CreateMode::Persistent).await;
    assert_eq!(ask("connections"), "1");
    assert_ne!(ask("bytes"), "0");

    let mut state = client.state_watcher();
    assert_eq!(ask("cut"), "ok");
    wait_state(&mut state, SessionState::Disconnected).await;
    assert_eq!(ask("connections"), "0");
    assert_eq!(ask("restore"), "ok");
    wait_state(&mut state, SessionState::SyncConnected).await;
    assert_eq!(client.get_data("/cli-proxy").await.expect("get").0, b"c");

    assert_eq!(ask("delay 200"), "ok");
    assert!(ask("delay").starts_with("error: delay needs MICROSECONDS"));
    assert!(ask("delay-replies -1").starts_with("error: delay-replies:"));
    assert!(ask("bogus").starts_with("error: unknown command"));
    assert_eq!(ask("restore"), "ok");
    drop(ask);
    let status = child.wait().expect("the proxy ends when its stdin closes");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn proxy_blackhole_drops_bytes_until_restored() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let connector = Client::connector().with_session_timeout(Duration::from_secs(20));
    let client = connector
        .with_connection_timeout(Duration::from_secs(1))
        .connect(&proxy.connect_string())
        .await;
    let client = client.expect("connect through the proxy");
    let mut state = client.state_watcher();

    proxy.blackhole();
    // New connections are accepted and kept open, but nothing comes through.
    let mut probe = TcpStream::connect(proxy.connect_string()).expect("connect to the proxy");
    probe
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    probe.write_all(b"srvr").expect("send");
    let silence = probe
        .read(&mut [0; 64])
        .expect_err("neither an answer nor a close");
    assert!(
        matches!(silence.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{silence}"
    );
    wait_state(&mut state, SessionState::Disconnected).await;

    proxy.restore();
    assert!(four_letter(&proxy.connect_string(), "srvr").contains("Mode:"));
    wait_state(&mut state, SessionState::SyncConnected).await;
    client.check_stat("/").await.expect("request after restore");
}

/// A cut forwards nothing more, not even bytes the proxy had read and was holding for a delay:
/// a test that cuts a delayed request off relies on it never reaching the server. Each round
/// writes and cuts at once, so the proxy reads the bytes either before the cut (they are held,
/// then dropped) or after it (dropped). Before the fix, a chunk read after the cut was written
/// through at once. The upstream here is a plain TCP sink that counts what reaches it: this is
/// the proxy's byte-level contract, which no ZooKeeper reply could show.
#[test]
fn proxy_cut_forwards_nothing_that_a_delay_held() {
    use std::net::TcpListener;
    let sink = TcpListener::bind("127.0.0.1:0").expect("bind the sink");
    let proxy = FaultProxy::start(&sink.local_addr().unwrap().to_string());
    for round in 0..50 {
        proxy.delay(Duration::from_secs(10));
        let mut client = TcpStream::connect(proxy.connect_string()).expect("connect to the proxy");
        let (mut upstream, _) = sink.accept().expect("the proxy connects upstream");
        upstream.set_read_timeout(Some(WAIT)).expect("timeout");
        client.write_all(&[7; 64]).expect("send");
        proxy.cut();
        let mut reached = Vec::new();
        upstream
            .read_to_end(&mut reached)
            .expect("the cut closes the upstream side");
        assert!(
            reached.is_empty(),
            "round {round}: {} bytes reached the server through a cut",
            reached.len()
        );
        proxy.restore();
    }
}

#[tokio::test]
async fn proxy_delay_adds_latency_in_each_direction() {
    let server = TestingServer::start();
    let proxy = FaultProxy::start(&server.connect_string());
    let client = connect(&proxy.connect_string()).await;
    create(&client, "/slow", b"s", CreateMode::Persistent).await;
    let latency = Duration::from_millis(150);
    let before = round_trip(&client, "/slow").await;

    proxy.delay(latency);
    let delayed = round_trip(&client, "/slow").await;
    assert!(
        delayed >= 2 * latency,
        "round trip {delayed:?} (was {before:?}) should include 2 x {latency:?}"
    );

    proxy.restore();
    let after = round_trip(&client, "/slow").await;
    assert!(after < latency, "round trip {after:?} after restore");

    // A delay past what an `Instant` can hold keeps the chunk for good: the connection stays
    // open and unanswered (it used to panic the proxy's connection task, dropping it).
    proxy.delay(Duration::MAX);
    let held = tokio::time::timeout(Duration::from_secs(1), client.check_stat("/slow")).await;
    assert!(
        held.is_err(),
        "a request under an endless delay was answered: {held:?}"
    );
    assert_eq!(proxy.connections(), 1, "the held connection was dropped");
}

#[tokio::test]
async fn expire_session_expires_the_client_and_its_ephemerals() {
    let server = TestingServer::start();
    let client = connect(&server.connect_string()).await;
    create(&client, "/ephemeral", b"e", CreateMode::Ephemeral).await;
    let mut state = client.state_watcher();

    expire_session(&server.connect_string(), client.session().clone());

    let observer = connect(&server.connect_string()).await;
    assert!(observer
        .check_stat("/ephemeral")
        .await
        .expect("check_stat")
        .is_none());
    wait_state(&mut state, SessionState::Expired).await;
    assert!(client.check_stat("/").await.is_err());
}

/// Set in the child copy of `a_crashed_test_process_does_not_leak_its_servers`.
const CRASH_CHILD: &str = "ZKR_HARNESS_CRASH_CHILD";

#[test]
fn a_crashed_test_process_does_not_leak_its_servers() {
    if std::env::var_os(CRASH_CHILD).is_some() {
        // The child: start a server, say where it is, then die without running destructors.
        let server = TestingServer::start();
        println!(
            "pid={} dir={}",
            server.pid().expect("running"),
            server.dir().parent().unwrap().display()
        );
        std::io::stdout().flush().expect("flush");
        std::process::abort();
    }
    let test_binary = std::env::current_exe().expect("test binary");
    let helper = [
        "a_crashed_test_process_does_not_leak_its_servers",
        "--exact",
        "--nocapture",
    ];
    let out = Command::new(test_binary)
        .args(helper)
        .env(CRASH_CHILD, "1")
        .output()
        .expect("run the helper");
    assert!(!out.status.success(), "the helper aborts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("pid="))
        .unwrap_or_else(|| panic!("{stdout}"));
    let (pid, dir) = line.split_once(" dir=").expect("pid and dir");
    eventually("the orphaned server is killed", || {
        std::fs::read(format!("/proc/{pid}/cmdline")).map_or(true, |cmdline| cmdline.is_empty())
    });
    std::fs::remove_dir_all(dir).expect("remove the helper's directory");
}

/// Runs `zk-harness ARGS...`; returns stdout, panicking on failure.
fn cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_zk-harness"))
        .args(args)
        .output()
        .expect("run zk-harness");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "zk-harness {args:?} failed: {}\n{stderr}",
        out.status
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// A scratch directory whose servers are stopped (and which is removed) even if a test fails.
struct CliDir(PathBuf);

impl Drop for CliDir {
    fn drop(&mut self) {
        let dir = self.0.to_str().expect("utf-8 path");
        let _ = Command::new(env!("CARGO_BIN_EXE_zk-harness"))
            .args(["stop", "--dir", dir])
            .output();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Opens a session by hand (wire protocol), returning the socket, session id and password.
fn raw_session(address: &str) -> (TcpStream, i64, Vec<u8>) {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(WAIT)).expect("timeout");
    let request = [
        &0i32.to_be_bytes()[..],
        &0i64.to_be_bytes(),
        &20_000i32.to_be_bytes(),
        &0i64.to_be_bytes(),
    ];
    let body = [&request.concat()[..], &16i32.to_be_bytes(), &[0; 16], &[0]].concat();
    stream
        .write_all(&[&(body.len() as i32).to_be_bytes()[..], &body].concat())
        .expect("send");
    let mut reply = vec![0; 4];
    stream.read_exact(&mut reply).expect("reply length");
    reply.resize(
        i32::from_be_bytes(reply[..4].try_into().unwrap()) as usize,
        0,
    );
    stream.read_exact(&mut reply).expect("reply");
    let id = i64::from_be_bytes(reply[8..16].try_into().unwrap());
    let password_len = i32::from_be_bytes(reply[16..20].try_into().unwrap()) as usize;
    let password = reply[20..20 + password_len].to_vec();
    (stream, id, password)
}

#[tokio::test]
async fn cli_starts_serves_expires_and_stops_detached_servers() {
    let dir = CliDir(std::env::temp_dir().join(format!("zkr-cli-test-{}", std::process::id())));
    let dir_arg = dir.0.to_str().expect("utf-8 path");
    let connect_string = cli(&["start", "--dir", dir_arg]);
    assert!(connect_string.starts_with("127.0.0.1:") && connect_string.ends_with('\n'));
    assert_eq!(connect_string.lines().count(), 1);
    let connect_string = connect_string.trim();

    let state = std::fs::read_to_string(dir.0.join("zk-harness.state")).expect("state file");
    assert!(
        state.contains(&format!("connect_string={connect_string}\n")),
        "{state}"
    );
    let pid: u32 = state
        .lines()
        .find_map(|l| l.strip_prefix("server0_pid="))
        .expect("pid")
        .parse()
        .unwrap();

    let client = connect(connect_string).await;
    create(&client, "/cli", b"c", CreateMode::Persistent).await;
    assert!(cli(&["four-letter", "--dir", dir_arg, "srvr"]).contains("Mode: standalone"));

    let (mut session, id, password) = raw_session(connect_string);
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    cli(&[
        "expire",
        "--dir",
        dir_arg,
        "--session-id",
        &format!("{id:x}"),
        "--password",
        &hex(&password),
    ]);
    assert_eq!(
        session.read(&mut [0; 64]).unwrap_or(0),
        0,
        "the server closes the expired session's socket"
    );
    assert!(!four_letter(connect_string, "dump").contains(&format!("{id:#x}")));

    drop(client);
    cli(&["stop", "--dir", dir_arg]);
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(cmdline.is_empty(), "server process {pid} is still there");
    assert!(!dir.0.join("zk-harness.state").exists());
}

/// A server kept in a `static` is never dropped: its directory outlives the test binary. The
/// next start removes such directories, those of processes that are gone, and only those: a
/// live process's directory and one without an owner file stay.
#[test]
fn the_directories_of_gone_processes_are_removed_by_the_next_start() {
    let tmp = std::env::temp_dir();
    let mut gone = Command::new("true").spawn().expect("run true");
    let gone_pid = gone.id();
    gone.wait().expect("wait for true");
    let make = |owner: Option<u32>| {
        let dir = tmp.join(format!("zkr-{:08x}", fastrand::u32(..)));
        std::fs::create_dir_all(dir.join("server0/data")).unwrap();
        if let Some(pid) = owner {
            std::fs::write(dir.join("owner.pid"), pid.to_string()).unwrap();
        }
        dir
    };
    let (orphan, live, unowned) = (
        make(Some(gone_pid)),
        make(Some(std::process::id())),
        make(None),
    );
    let server = TestingServer::start();
    assert!(!orphan.exists(), "the gone process's directory stayed");
    assert!(
        live.exists() && unowned.exists(),
        "a directory not to touch was removed"
    );
    drop(server);
    std::fs::remove_dir_all(&live).unwrap();
    std::fs::remove_dir_all(&unowned).unwrap();
}
