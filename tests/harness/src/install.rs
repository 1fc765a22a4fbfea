//! Locating (and, as root, installing) Debian's `zookeeper` package.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

pub(crate) const JAVA: &str = "/usr/bin/java";
pub(crate) const MAIN_CLASS: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
const JAR: &str = "/usr/share/java/zookeeper.jar";
const CONF_DIR: &str = "/etc/zookeeper/conf";
/// Debian's zookeeper.jar ships no SLF4J binding; this one (from libslf4j-java, a dependency)
/// makes the server log to stderr, which the harness redirects to a file.
const SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";

fn installed() -> bool {
    Path::new(JAR).is_file() && Path::new(JAVA).is_file()
}

/// Makes sure a ZooKeeper server can be run and returns the path of `zookeeper.jar`.
///
/// Uses Debian's `zookeeper` package (jar `/usr/share/java/zookeeper.jar`, java
/// `/usr/bin/java`). If it is missing and the process runs as root, installs it with
/// `apt-get update && apt-get install -y zookeeper` (Java comes with it; apt's output goes to
/// stderr). Otherwise, or if installing fails, **panics** with instructions: tests needing
/// ZooKeeper never silently skip. Called by every `start` in this crate.
pub fn ensure_zookeeper_installed() -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if installed() {
        return PathBuf::from(JAR);
    }
    // SAFETY: geteuid has no preconditions.
    let problem = if unsafe { libc::geteuid() } != 0 {
        "this process is not root, so it cannot install the package itself".to_owned()
    } else {
        match apt_install() {
            Ok(()) if installed() => return PathBuf::from(JAR),
            Ok(()) => format!("apt-get installed `zookeeper` but {JAR} or {JAVA} is still missing"),
            Err(e) => e,
        }
    };
    panic!(
        "zkrecipes-testing: no ZooKeeper server on this machine ({JAR} and {JAVA} are needed) and \
         {problem}.\nFix: run `sudo apt-get update && sudo apt-get install -y zookeeper` \
         (Debian/Ubuntu package `zookeeper`, which brings Java), then run the tests again."
    )
}

fn apt_install() -> Result<(), String> {
    for args in [
        &["update", "-q"][..],
        &["install", "-y", "-q", "zookeeper"][..],
    ] {
        let status = Command::new("apt-get")
            .args(["-o", "DPkg::Lock::Timeout=300"])
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .stdout(std::io::stderr()) // keep stdout clean (zk-harness prints one line there)
            .status()
            .map_err(|e| format!("running `apt-get` failed: {e}"))?;
        if !status.success() {
            return Err(format!("`apt-get {}` failed ({status})", args.join(" ")));
        }
    }
    Ok(())
}

/// The server's Java class path.
pub(crate) fn classpath() -> String {
    let mut cp = format!("{CONF_DIR}:{JAR}");
    if Path::new(SLF4J_SIMPLE).is_file() {
        cp = format!("{cp}:{SLF4J_SIMPLE}");
    }
    cp
}
