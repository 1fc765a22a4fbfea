//! Reconfigurable ensembles: the harness's dynamic configuration, joiners that sync before they
//! are members, and `reconfig` through ZooKeeper's own protocol (`zookeeper_client` used
//! directly, authenticated as the ensemble's superuser). Every wait is on a condition.

use std::time::Duration;

use zkrecipes_testing::{Security, ServerRole, TestingCluster};
use zookeeper_client::{Client, EnsembleUpdate};

const WAIT: Duration = Duration::from_secs(30);

async fn superuser(connect: &str) -> Client {
    Client::connector()
        .with_session_timeout(Duration::from_secs(20))
        .with_auth("digest", b"super:secret")
        .connect(connect)
        .await
        .unwrap_or_else(|e| panic!("connect to {connect}: {e}"))
}

/// The ids of the `server.N=` lines of `/zookeeper/config`'s data.
fn ids(config: &[u8]) -> Vec<u64> {
    let text = String::from_utf8_lossy(config);
    let mut ids: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("server.")?.split('=').next()?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_join_and_leave_a_reconfigurable_ensemble() {
    let mut cluster =
        TestingCluster::start_reconfigurable(3, Security::new().superuser("super", "secret"));
    assert!(cluster.is_reconfigurable());
    let spec = cluster.server(0).reconfig_spec().unwrap();
    assert!(
        spec.starts_with("server.1=127.0.0.1:") && spec.contains(":participant;127.0.0.1:"),
        "{spec}"
    );
    let client = superuser(&cluster.connect_string()).await;
    let (data, _) = client.get_config().await.unwrap();
    let text = String::from_utf8_lossy(&data).into_owned();
    assert_eq!(ids(&data), vec![1, 2, 3], "{text}");
    for i in 0..3 {
        let line = cluster.server(i).reconfig_spec().unwrap();
        assert!(text.contains(&line), "{line} not in {text}");
    }
    let (lines, version) = cluster.server(1).current_config().unwrap();
    assert_eq!(lines.len(), 3);
    assert!(text.contains(&format!("version={version}")), "{text}");

    // Two joiners, one of each role; neither is a member before the reconfig.
    let four = cluster.add_server(ServerRole::Participant);
    let five = cluster.add_server(ServerRole::Observer);
    assert_eq!((four, five), (3, 4));
    assert_eq!(cluster.server(five).role(), Some(ServerRole::Observer));
    let (data, _) = client.get_config().await.unwrap();
    assert_eq!(ids(&data), vec![1, 2, 3]);

    let joining = [
        cluster.server(four).reconfig_spec().unwrap(),
        cluster.server(five).reconfig_spec().unwrap(),
    ];
    let joining: Vec<&str> = joining.iter().map(String::as_str).collect();
    let (data, _) = client
        .update_ensemble(
            EnsembleUpdate::Incremental {
                joinings: joining.iter().copied(),
                leavings: [].iter().copied(),
            },
            None,
        )
        .await
        .expect("reconfig adding two servers");
    assert_eq!(ids(&data), vec![1, 2, 3, 4, 5]);
    assert!(cluster.wait_for_members(&[1, 2, 3, 4, 5], WAIT));
    let observer_mode = cluster.server(five).four_letter("srvr");
    assert!(observer_mode.contains("Mode: observer"), "{observer_mode}");

    // Two leave: one of the first members and the new observer. A member that leaves (or a
    // leader handing over) may drop its clients' connections before the reply is sent: the
    // outcome is then read back after the client reconnects.
    let removed = client
        .update_ensemble(
            EnsembleUpdate::Incremental {
                joinings: [].iter().copied(),
                leavings: ["2", "5"].iter().copied(),
            },
            None,
        )
        .await;
    match removed {
        Ok((data, _)) => assert_eq!(ids(&data), vec![1, 3, 4]),
        Err(zookeeper_client::Error::ConnectionLoss) => {}
        Err(e) => panic!("reconfig removing two servers: {e}"),
    }
    assert!(cluster.wait_for_members(&[1, 3, 4], WAIT));
    let client = superuser(&cluster.server(0).connect_string()).await;
    let (data, _) = client.get_config().await.unwrap();
    assert_eq!(ids(&data), vec![1, 3, 4]);
}

/// Runs `zk-harness ARGS...`; returns (success, stdout, stderr).
fn cli(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zk-harness"))
        .args(args)
        .output()
        .expect("run zk-harness");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The scratch directories of the CLI test: servers stopped and files removed even on failure.
struct CliDirs(Vec<std::path::PathBuf>);

impl Drop for CliDirs {
    fn drop(&mut self) {
        for dir in &self.0 {
            cli(&["stop", "--dir", dir.to_str().expect("utf-8 path")]);
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some(base) = self.0.first().and_then(|dir| dir.parent()) {
            let _ = std::fs::remove_dir(base);
        }
    }
}

/// `zk-harness start --reconfigurable` and `add-server`: a detached reconfigurable ensemble (of
/// one member, to stay light), a joiner started as an observer that a superuser's reconfig
/// makes a member, and its record in the state file surviving a reload (`stop-server`,
/// `start-server`). `add-server` refuses servers not started reconfigurable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_starts_a_reconfigurable_ensemble_and_adds_a_member() {
    let base = std::env::temp_dir().join(format!("zkr-cli-reconfig-{}", std::process::id()));
    let dirs = CliDirs(vec![base.join("dynamic"), base.join("static")]);
    let (dynamic, fixed) = (
        dirs.0[0].to_str().expect("utf-8 path"),
        dirs.0[1].to_str().expect("utf-8 path"),
    );
    let (ok, out, err) = cli(&[
        "start",
        "--dir",
        dynamic,
        "--reconfigurable",
        "--superuser",
        "super:secret",
    ]);
    assert!(ok, "{err}");
    let connect = out.trim().to_owned();
    assert!(connect.starts_with("127.0.0.1:"), "{out}");

    let (ok, out, err) = cli(&["add-server", "--dir", dynamic, "--role", "observer"]);
    assert!(ok, "{err}");
    let spec = out.trim().to_owned();
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        spec.starts_with("server.2=127.0.0.2:") && spec.contains(":observer;127.0.0.2:"),
        "{spec}"
    );
    let state = std::fs::read_to_string(dirs.0[0].join("zk-harness.state")).unwrap();
    assert!(state.contains("servers=2\n"), "{state}");
    assert!(state.contains("server1_member="), "{state}");

    // Not a member until a reconfig by the superuser adds it.
    let client = superuser(&connect).await;
    let (data, _) = client.get_config().await.unwrap();
    assert_eq!(ids(&data), vec![1]);
    let (data, _) = client
        .update_ensemble(
            EnsembleUpdate::Incremental {
                joinings: [spec.as_str()].iter().copied(),
                leavings: [].iter().copied(),
            },
            None,
        )
        .await
        .expect("reconfig adding the observer");
    assert_eq!(ids(&data), vec![1, 2]);
    assert!(String::from_utf8_lossy(&data).contains(&spec));

    // The state file keeps the new member: it restarts with the configuration it was given.
    // First the member must have applied the reconfig: until then its files hold the leader's
    // configuration it synced with (without itself), and ZooKeeper would refuse to start it
    // ("My id 2 not in the peer list").
    let text = String::from_utf8_lossy(&data).into_owned();
    let version = text
        .lines()
        .find(|l| l.starts_with("version="))
        .unwrap_or_else(|| panic!("no version in {text}"))
        .to_owned();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (_, conf, _) = cli(&["four-letter", "--dir", dynamic, "--server", "1", "conf"]);
        if conf.contains(&spec) && conf.lines().any(|l| l.trim() == version) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{conf}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (ok, _, err) = cli(&["stop-server", "--dir", dynamic, "--server", "1"]);
    assert!(ok, "{err}");
    let (ok, _, err) = cli(&["start-server", "--dir", dynamic, "--server", "1"]);
    assert!(ok, "{err}");
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (_, srvr, _) = cli(&["four-letter", "--dir", dynamic, "--server", "1", "srvr"]);
        if srvr.contains("Mode: observer") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{srvr}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, conf, _) = cli(&["four-letter", "--dir", dynamic, "--server", "1", "conf"]);
    assert!(conf.contains(&spec), "{conf}");

    // A standalone server cannot take a member.
    let (ok, _, err) = cli(&["start", "--dir", fixed]);
    assert!(ok, "{err}");
    let (ok, _, err) = cli(&["add-server", "--dir", fixed]);
    assert!(!ok && err.contains("--reconfigurable"), "{err}");
    let (ok, _, err) = cli(&["add-server", "--dir", dynamic, "--role", "leader"]);
    assert!(!ok && err.contains("--role participant|observer"), "{err}");
    drop(client);
    drop(dirs);
}
