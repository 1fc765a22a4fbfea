//! Finding a ZooKeeper server to run: a given class path (`ZKRECIPES_ZOOKEEPER_JAR`), an Apache
//! ZooKeeper release (`ZOOKEEPER_HOME`), or Debian's `zookeeper` package (installed on demand
//! when running as root).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

pub(crate) const MAIN_CLASS: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
const DEBIAN_JAVA: &str = "/usr/bin/java";
const DEBIAN_JAR: &str = "/usr/share/java/zookeeper.jar";
const DEBIAN_CONF_DIR: &str = "/etc/zookeeper/conf";
/// Debian's zookeeper.jar ships no SLF4J binding; this one (from libslf4j-java, a dependency)
/// makes the server log to stderr, which the harness redirects to a file.
const SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";
/// Netty jars that Debian's zookeeper.jar (3.8.0) leaves out of its manifest's `Class-Path`
/// although its Netty connection factories need them: without netty-codec, a
/// `secureClientPort` (NettyServerCnxnFactory's SslHandler) and the Java client's
/// ClientCnxnSocketNetty fail with `NoClassDefFoundError: io/netty/handler/codec/...`. They come
/// with libnetty-java, a dependency of the package.
const DEBIAN_NETTY_EXTRAS: &[&str] = &[
    "/usr/share/java/netty-codec.jar",
    "/usr/share/java/netty-resolver.jar",
    "/usr/share/java/netty-transport-native-unix-common.jar",
];

/// The environment variable naming ZooKeeper's jar (or a `:`-separated class path: the jar and
/// its dependencies). Checked first.
pub const ZOOKEEPER_JAR_ENV: &str = "ZKRECIPES_ZOOKEEPER_JAR";
/// The environment variable naming an unpacked Apache ZooKeeper binary release
/// (`apache-zookeeper-3.x.y-bin`, jars in `lib/`). Checked second.
pub const ZOOKEEPER_HOME_ENV: &str = "ZOOKEEPER_HOME";

/// A ZooKeeper server this machine can run: the `java` launcher and the server's class path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZooKeeperInstall {
    /// The Java launcher: `$JAVA_HOME/bin/java`, else `java` on `PATH`, else `/usr/bin/java`.
    pub java: PathBuf,
    /// The class path holding `QuorumPeerMain` and its dependencies.
    pub classpath: String,
    /// The main ZooKeeper jar (the first entry of the class path that names one).
    pub jar: PathBuf,
    /// Where it was found, for messages: `ZKRECIPES_ZOOKEEPER_JAR`, `ZOOKEEPER_HOME=...` or
    /// `Debian's zookeeper package`.
    pub source: String,
}

fn java() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let java = Path::new(&home).join("bin").join("java");
        if java.is_file() {
            return Some(java);
        }
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("java"))
            .find(|java| java.is_file())
    });
    on_path.or_else(|| Some(PathBuf::from(DEBIAN_JAVA)).filter(|java| java.is_file()))
}

const HOW_TO_INSTALL: &str = "Install one of: Debian/Ubuntu's package (`sudo apt-get update && \
     sudo apt-get install -y zookeeper`, which brings Java); or an Apache ZooKeeper binary \
     release (apache-zookeeper-3.x.y-bin.tar.gz from https://zookeeper.apache.org/releases.html) \
     with ZOOKEEPER_HOME set to its directory; or set ZKRECIPES_ZOOKEEPER_JAR to ZooKeeper's jar \
     and its dependencies (`:`-separated). A Java runtime (11+) is needed too: JAVA_HOME, `java` \
     on PATH, or `sudo apt-get install -y default-jre-headless`.";

/// Looks for a ZooKeeper server without installing anything: `ZKRECIPES_ZOOKEEPER_JAR`, then
/// `ZOOKEEPER_HOME`, then Debian's package. The error says what is missing and how to install
/// it.
pub fn find_zookeeper() -> Result<ZooKeeperInstall, String> {
    let with_java = |classpath: String, jar: PathBuf, source: String| match java() {
        Some(java) => Ok(ZooKeeperInstall {
            java,
            classpath,
            jar,
            source,
        }),
        None => Err(format!(
            "found ZooKeeper ({source}) but no Java runtime: set JAVA_HOME, put `java` on PATH, or \
             run `sudo apt-get install -y default-jre-headless`"
        )),
    };
    if let Some(given) = std::env::var_os(ZOOKEEPER_JAR_ENV).filter(|v| !v.is_empty()) {
        let entries: Vec<PathBuf> = std::env::split_paths(&given).collect();
        if let Some(missing) = entries.iter().find(|p| !p.exists()) {
            return Err(format!(
                "{ZOOKEEPER_JAR_ENV} names {}, which does not exist. {HOW_TO_INSTALL}",
                missing.display()
            ));
        }
        let jar = entries.first().cloned().unwrap_or_default();
        let classpath = given.to_string_lossy().into_owned();
        return with_java(classpath, jar, ZOOKEEPER_JAR_ENV.to_owned());
    }
    if let Some(home) = std::env::var_os(ZOOKEEPER_HOME_ENV).filter(|v| !v.is_empty()) {
        let home = PathBuf::from(home);
        let mut jars: Vec<PathBuf> = [home.join("lib"), home.clone()]
            .iter()
            .filter_map(|dir| std::fs::read_dir(dir).ok())
            .flatten()
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jar"))
            .collect();
        jars.sort();
        let is_server_jar = |p: &&PathBuf| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("zookeeper-3") && !n.contains("jute"))
        };
        let Some(jar) = jars.iter().find(is_server_jar).cloned() else {
            return Err(format!(
                "{ZOOKEEPER_HOME_ENV}={} holds no zookeeper-3.*.jar (in lib/ or at the top): it must \
                 be an unpacked binary release (the -bin tarball, not the source one). {HOW_TO_INSTALL}",
                home.display()
            ));
        };
        let mut classpath = vec![home.join("conf")];
        classpath.extend(jars);
        let classpath = std::env::join_paths(classpath)
            .map_err(|e| format!("{ZOOKEEPER_HOME_ENV}: {e}"))?
            .to_string_lossy()
            .into_owned();
        return with_java(
            classpath,
            jar,
            format!("{ZOOKEEPER_HOME_ENV}={}", home.display()),
        );
    }
    if Path::new(DEBIAN_JAR).is_file() {
        let mut classpath = format!("{DEBIAN_CONF_DIR}:{DEBIAN_JAR}");
        for extra in std::iter::once(SLF4J_SIMPLE).chain(DEBIAN_NETTY_EXTRAS.iter().copied()) {
            if Path::new(extra).is_file() {
                classpath = format!("{classpath}:{extra}");
            }
        }
        return with_java(
            classpath,
            DEBIAN_JAR.into(),
            "Debian's zookeeper package".to_owned(),
        );
    }
    Err(format!(
        "no ZooKeeper server on this machine ({ZOOKEEPER_JAR_ENV} and {ZOOKEEPER_HOME_ENV} are \
         unset and {DEBIAN_JAR} is missing). {HOW_TO_INSTALL}"
    ))
}

/// Makes sure a ZooKeeper server can be run and returns where it is.
///
/// Looks for it with [`find_zookeeper`]. If none is found, no location was given
/// (`ZKRECIPES_ZOOKEEPER_JAR`, `ZOOKEEPER_HOME`) and the process runs as root, installs
/// Debian's package with `apt-get update && apt-get install -y zookeeper` (Java comes with it;
/// apt's output goes to stderr). Otherwise **panics** with instructions: tests needing
/// ZooKeeper never silently skip. Called by every `start` in this crate.
pub fn zookeeper_install() -> ZooKeeperInstall {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let not_found = match find_zookeeper() {
        Ok(found) => return found,
        Err(e) => e,
    };
    let given = [ZOOKEEPER_JAR_ENV, ZOOKEEPER_HOME_ENV]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()));
    // SAFETY: geteuid has no preconditions.
    let problem = if given || unsafe { libc::geteuid() } != 0 {
        not_found
    } else {
        match apt_install(&["zookeeper"]) {
            Ok(()) => match find_zookeeper() {
                Ok(found) => return found,
                Err(e) => format!("apt-get installed `zookeeper` but: {e}"),
            },
            Err(e) => format!("{e}; {not_found}"),
        }
    };
    panic!("zkrecipes-testing: {problem}")
}

/// Makes sure a ZooKeeper server can be run and returns the path of its jar: see
/// [`zookeeper_install`].
pub fn ensure_zookeeper_installed() -> PathBuf {
    zookeeper_install().jar
}

/// `apt-get update && apt-get install -y PACKAGES`, apt's output on stderr.
pub(crate) fn apt_install(packages: &[&str]) -> Result<(), String> {
    let install: Vec<&str> = ["install", "-y", "-q"]
        .iter()
        .chain(packages)
        .copied()
        .collect();
    for args in [&["update", "-q"][..], &install[..]] {
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
