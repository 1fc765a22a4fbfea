//! ZooKeeper test harness for zkrecipes, in the spirit of Apache Curator's `curator-test`.
//!
//! Everything here runs **real** ZooKeeper servers (found by [`find_zookeeper`]: a given jar,
//! `ZOOKEEPER_HOME`, or Debian's `zookeeper` package, installed on demand by
//! [`zookeeper_install`] as root) bound to loopback addresses only:
//!
//! * [`TestingServer`]: one standalone server in its own temporary directory.
//! * [`TestingCluster`]: an ensemble (usually 3 servers), server `i` on `127.0.0.(i+1)`.
//! * [`TestingServerHandle`]: per-server control (stop, start, restart, kill, pause, resume,
//!   four-letter words), shared by both of the above.
//! * [`Security`]: servers and ensembles with TLS (client auth none, want or need), SASL
//!   users, SASL required and x509 identities, with a CA, certificates and keys made at test
//!   time ([`TlsMaterial`]); `TestingServer::start_secure`, `TestingCluster::start_secure`.
//! * [`FaultProxy`]: a TCP proxy that can cut, blackhole or delay client connections.
//! * [`expire_session`]: expires a client's session server-side, the Curator way.
//! * The `zk-harness` binary exposes the same to tests written in other languages.
//!
//! The API is blocking and needs no async runtime from the caller: it works from plain
//! `#[test]` functions and from `#[tokio::test]` ones alike (the fault proxy runs its own
//! runtime on its own thread). Waits are always on conditions with deadlines.
//!
//! ```no_run
//! use zkrecipes_testing::TestingServer;
//!
//! let server = TestingServer::start();
//! assert!(server.four_letter("srvr").contains("Mode: standalone"));
//! let connect = server.connect_string(); // "127.0.0.1:PORT"
//! # drop(connect);
//! server.restart(); // same port, same data
//! ```

#![warn(missing_docs)]

use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

mod install;
mod kerberos;
mod ports;
mod proxy;
mod reconfig;
mod secure;
mod server;
mod session;

pub use install::{
    ensure_zookeeper_installed, find_zookeeper, zookeeper_install, ZooKeeperInstall,
    ZOOKEEPER_HOME_ENV, ZOOKEEPER_JAR_ENV,
};
pub use kerberos::{KerberosMaterial, KERBEROS_REALM};
pub use proxy::FaultProxy;
pub use reconfig::ServerRole;
pub use secure::{
    ClientAuth, ClientIdentity, Security, ServerCert, TlsMaterial, WRONG_SERVER_NAME,
};
pub use server::{
    four_letter, TestingCluster, TestingServer, TestingServerHandle, OUTLIVES_A_RESTART,
};
pub use session::{expire_client_session, expire_session, expire_session_id};

/// Support for the `zk-harness` binary (detached servers); not a stable API.
#[doc(hidden)]
pub mod detached {
    pub use crate::reconfig::{add_detached_member, attach_member, member_record};
    pub use crate::server::{attach, launch_detached};
}

/// The children of `path`, none if the node is gone. Recipes make their parents containers,
/// which the harness's servers reap within 250 ms of their emptying: a test that checks a
/// recipe left nothing under one must take either answer. Panics on any other error.
pub async fn children_left(client: &zkrecipes::Client, path: &str) -> Vec<String> {
    match client.get_children(path).await {
        Ok(children) => children,
        Err(zkrecipes::Error::NoNode(_)) => Vec::new(),
        Err(e) => panic!("children of {path}: {e}"),
    }
}

/// Polls `done` every `every` until it returns true (-> true) or `timeout` passes (-> false).
fn wait_until(timeout: Duration, every: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(every);
    }
}

/// A directory `std::env::temp_dir()/zkr-XXXXXXXX`, removed with its contents on drop.
///
/// A server kept in a `static` is never dropped: its process dies with the test binary, its
/// directory stays. So each directory names its process in [`OWNER_FILE`], and making one first
/// removes those of processes that are gone.
#[derive(Debug)]
struct TempDir(PathBuf);

/// The file in a [`TempDir`] with the id of the process that made it.
const OWNER_FILE: &str = "owner.pid";

impl TempDir {
    fn new() -> TempDir {
        remove_orphaned_dirs(&std::env::temp_dir());
        loop {
            let path = std::env::temp_dir().join(format!("zkr-{:08x}", fastrand::u32(..)));
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    let owner = path.join(OWNER_FILE);
                    if let Err(e) = std::fs::write(&owner, std::process::id().to_string()) {
                        panic!("zkrecipes-testing: cannot write {}: {e}", owner.display());
                    }
                    return TempDir(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("zkrecipes-testing: cannot create {}: {e}", path.display()),
            }
        }
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes the [`TempDir`]s under `tmp` whose process is gone (only ours: `zkr-` and eight hex
/// digits, with an [`OWNER_FILE`]; a directory without one, or whose process lives, is left).
fn remove_orphaned_dirs(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let ours = name
            .to_str()
            .and_then(|n| n.strip_prefix("zkr-"))
            .is_some_and(|hex| hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        if !ours {
            continue;
        }
        let dir = entry.path();
        let owner = std::fs::read_to_string(dir.join(OWNER_FILE))
            .ok()
            .and_then(|s| s.trim().parse::<libc::pid_t>().ok());
        if owner.is_some_and(|pid| pid > 0 && !process_lives(pid)) {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// Whether process `pid` exists (one of another user's counts: `EPERM`).
fn process_lives(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 sends nothing; kill only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}
