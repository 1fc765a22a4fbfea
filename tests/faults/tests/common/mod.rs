//! What the leader-kill scenarios of `cache.rs` and `watch.rs` share.

use std::thread;
use std::time::Duration;

use zkrecipes::{Client, ClientBuilder};
use zkrecipes_testing::TestingCluster;

pub const WAIT: Duration = Duration::from_secs(60);

/// The long configuration (`ZKR_FAULTS_LONG=1`, `tests/faults/run --long`).
pub fn long() -> bool {
    std::env::var("ZKR_FAULTS_LONG").is_ok_and(|v| v == "1")
}

/// A client with an 8 s session (it survives a leader kill; its server's death costs a
/// reconnect, not the session).
pub fn client_to(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(8))
        .connect_blocking()
        .expect("connect")
}

/// Kills the ensemble's leader 2 times over 12 s (long: 5 over 30 s): each time waits for the
/// survivors' new leader, restarts the killed server after a while and waits for the full
/// quorum. Returns how many kills it did.
pub fn kill_leaders(cluster: &TestingCluster) -> u32 {
    let (kills, run) = if long() {
        (5, Duration::from_secs(30))
    } else {
        (2, Duration::from_secs(12))
    };
    let between = run / (kills + 1);
    for _ in 0..kills {
        thread::sleep(between);
        let leader = cluster.wait_for_quorum(WAIT).expect("a leader");
        cluster.server(leader).kill();
        cluster
            .wait_for_quorum(WAIT)
            .expect("the survivors elect a leader");
        thread::sleep(between / 2);
        cluster.server(leader).start();
        cluster
            .wait_for_quorum(WAIT)
            .expect("quorum with the restarted server");
    }
    thread::sleep(between);
    kills
}
