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
