//! An MIT Kerberos KDC for tests ([`Security::kerberos`](crate::Security::kerberos)): a realm in
//! the server's temporary directory (`kdb5_util`, `kadmin.local`), `krb5kdc` on a free loopback
//! port, run by the test process (no root needed beyond installing Debian's `krb5-kdc`,
//! `krb5-admin-server` and `krb5-user`), and the principals, keytabs and ticket cache a test
//! needs ([`KerberosMaterial`]).

use std::fs::{self, File};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use crate::install::apt_install;
use crate::ports::{self, Reservation};
use crate::server::{child_setup, pid_listens, spawn_from_keeper};
use crate::wait_until;

/// The realm of every test KDC.
pub const KERBEROS_REALM: &str = "ZKRECIPES.TEST";
const START_ATTEMPTS: usize = 5;
const KDC_START_TIMEOUT: Duration = Duration::from_secs(30);

/// The realm, configuration, principals, keytabs and ticket cache of a Kerberos-secured server
/// or ensemble, made when it started, in [`dir`](Self::dir) (gone with the server).
///
/// The KDC (`krb5kdc`) listens on [`kdc`](Self::kdc), TCP and UDP. Server `i` is the
/// principal [`server_principal(i)`](Self::server_principal) =
/// `zookeeper/127.0.0.(i+1)@ZKRECIPES.TEST` (the host part is the address clients dial, no
/// reverse DNS). The client principal has a keytab and a ticket cache holding its TGT (`kinit`
/// was run). ZooKeeper records the session's identity as `sasl:<client principal>`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KerberosMaterial {
    /// The directory of every file below, and of the KDC's database and logs.
    pub dir: PathBuf,
    /// `ZKRECIPES.TEST`.
    pub realm: String,
    /// `"127.0.0.1:PORT"`: the KDC, TCP and UDP.
    pub kdc: String,
    /// The `krb5.conf` of the realm (`KRB5_CONFIG` for MIT tools and libraries,
    /// `-Djava.security.krb5.conf` for Java); it names the ticket cache as default.
    pub krb5_conf: PathBuf,
    /// `zkr-client@ZKRECIPES.TEST`.
    pub client_principal: String,
    /// The client principal's keytab.
    pub client_keytab: PathBuf,
    /// A `FILE:` ticket cache holding the client principal's TGT (`kinit -kt` done at start;
    /// valid for an hour).
    pub ccache: PathBuf,
    /// A Java JAAS file with a `Client` section logging in as the client principal from its
    /// keytab (for `-Djava.security.auth.login.config`).
    pub client_jaas: PathBuf,
}

impl KerberosMaterial {
    /// The principal of server `index`: `zookeeper/127.0.0.(index+1)@ZKRECIPES.TEST`.
    pub fn server_principal(&self, index: usize) -> String {
        format!("zookeeper/127.0.0.{}@{}", index + 1, self.realm)
    }

    /// The keytab of server `index`'s principal.
    pub fn server_keytab(&self, index: usize) -> PathBuf {
        self.dir.join(format!("zookeeper-{index}.keytab"))
    }

    /// The environment MIT tools (`kinit`, `klist`) and libraries (libgssapi_krb5) need for this
    /// realm: `KRB5_CONFIG` and `KRB5CCNAME`.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("KRB5_CONFIG".into(), self.krb5_conf.display().to_string()),
            (
                "KRB5CCNAME".into(),
                format!("FILE:{}", self.ccache.display()),
            ),
        ]
    }
}

/// A running KDC, killed (and waited for) on drop.
#[derive(Debug)]
pub(crate) struct Kdc {
    pub(crate) material: KerberosMaterial,
    child: Mutex<Child>,
    _port: Reservation,
}

impl Drop for Kdc {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

const HOW: &str = "Kerberos tests need MIT Kerberos' KDC and tools: `sudo apt-get update && \
                   sudo apt-get install -y krb5-kdc krb5-admin-server krb5-user`";

/// `name` from PATH, `/usr/sbin` or `/usr/bin`.
fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The MIT tools, installed with apt-get when missing and running as root; panics with the fix
/// otherwise.
fn tools() -> [PathBuf; 4] {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let names = ["kdb5_util", "kadmin.local", "krb5kdc", "kinit"];
    let find = || -> Option<[PathBuf; 4]> {
        Some([
            tool(names[0])?,
            tool(names[1])?,
            tool(names[2])?,
            tool(names[3])?,
        ])
    };
    if let Some(found) = find() {
        return found;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        panic!("zkrecipes-testing: no {} found; {HOW}", names.join("/"));
    }
    if let Err(e) = apt_install(&["krb5-kdc", "krb5-admin-server", "krb5-user"]) {
        panic!("zkrecipes-testing: {e}; {HOW}");
    }
    find().unwrap_or_else(|| {
        panic!("zkrecipes-testing: apt-get ran but {names:?} are missing; {HOW}")
    })
}

/// Runs an MIT tool with the realm's environment; panics with its output on failure.
fn run(program: &Path, args: &[&str], env: &[(&str, &Path)]) {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("zkrecipes-testing: cannot run {}: {e}", program.display()));
    if !out.status.success() {
        panic!(
            "zkrecipes-testing: `{} {}` failed ({}): {}{}",
            program.display(),
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn write(path: &Path, text: &str) {
    fs::write(path, text)
        .unwrap_or_else(|e| panic!("zkrecipes-testing: cannot write {}: {e}", path.display()));
}

impl Kdc {
    /// Makes a realm under `dir` (emptied first) with a principal and keytab for each server
    /// of `hosts` and one client principal, starts `krb5kdc` on a free loopback port, waits until
    /// it listens and fills the client's ticket cache. Panics, saying why and how to fix it, if
    /// that cannot be done.
    pub(crate) fn start(dir: &Path, hosts: &[Ipv4Addr]) -> Kdc {
        let [kdb5_util, kadmin, krb5kdc, kinit] = tools();
        for attempt in 1..=START_ATTEMPTS {
            let _ = fs::remove_dir_all(dir);
            fs::create_dir_all(dir).unwrap_or_else(|e| {
                panic!("zkrecipes-testing: cannot create {}: {e}", dir.display())
            });
            // Free for both TCP and UDP (the KDC listens on both), kept while the KDC lives.
            let reservation = ports::reserve(Ipv4Addr::LOCALHOST, true);
            let port = reservation.port();
            let realm = KERBEROS_REALM;
            let material = KerberosMaterial {
                dir: dir.to_owned(),
                realm: realm.to_owned(),
                kdc: format!("127.0.0.1:{port}"),
                krb5_conf: dir.join("krb5.conf"),
                client_principal: format!("zkr-client@{realm}"),
                client_keytab: dir.join("client.keytab"),
                ccache: dir.join("ccache"),
                client_jaas: dir.join("client-jaas.conf"),
            };
            let d = dir.display();
            write(
                &material.krb5_conf,
                &format!(
                    "[libdefaults]\n    default_realm = {realm}\n    dns_lookup_realm = false\n    \
                     dns_lookup_kdc = false\n    rdns = false\n    dns_canonicalize_hostname = false\n    \
                     udp_preference_limit = 1\n    ticket_lifetime = 1h\n    \
                     default_ccache_name = FILE:{d}/ccache\n\
                     [realms]\n    {realm} = {{\n        kdc = 127.0.0.1:{port}\n    }}\n\
                     [domain_realm]\n    127.0.0.1 = {realm}\n    localhost = {realm}\n"
                ),
            );
            let profile = dir.join("kdc.conf");
            write(
                &profile,
                &format!(
                    "[kdcdefaults]\n    kdc_listen = 127.0.0.1:{port}\n    \
                     kdc_tcp_listen = 127.0.0.1:{port}\n\
                     [realms]\n    {realm} = {{\n        database_name = {d}/principal\n        \
                     key_stash_file = {d}/stash\n        acl_file = {d}/kadm5.acl\n        \
                     max_life = 1h\n        supported_enctypes = aes256-cts-hmac-sha1-96:normal \
                     aes128-cts-hmac-sha1-96:normal\n    }}\n\
                     [logging]\n    kdc = FILE:{d}/kdc.log\n"
                ),
            );
            write(&dir.join("kadm5.acl"), "");
            let env = [
                ("KRB5_CONFIG", material.krb5_conf.as_path()),
                ("KRB5_KDC_PROFILE", profile.as_path()),
            ];
            let master = format!("zkr-master-{:016x}", fastrand::u64(..));
            run(
                &kdb5_util,
                &["create", "-s", "-r", realm, "-P", &master],
                &env,
            );
            let mut principals: Vec<(String, PathBuf)> = (0..hosts.len())
                .map(|i| (material.server_principal(i), material.server_keytab(i)))
                .collect();
            principals.push((
                material.client_principal.clone(),
                material.client_keytab.clone(),
            ));
            for (principal, keytab) in &principals {
                let add = format!("addprinc -randkey {principal}");
                run(&kadmin, &["-r", realm, "-q", &add], &env);
                let ktadd = format!("ktadd -k {} {principal}", keytab.display());
                run(&kadmin, &["-r", realm, "-q", &ktadd], &env);
            }

            let out = File::create(dir.join("kdc.out"))
                .unwrap_or_else(|e| panic!("zkrecipes-testing: cannot create kdc.out: {e}"));
            let mut cmd = Command::new(&krb5kdc);
            // The pid file puts this realm's directory on the KDC's command line.
            cmd.args(["-n", "-r", realm, "-P"])
                .arg(dir.join("kdc.pid"))
                .envs(env)
                .stdin(Stdio::null())
                .stdout(out.try_clone().expect("clone a file handle"))
                .stderr(out);
            let parent = std::process::id() as libc::pid_t;
            // SAFETY: the hook only makes async-signal-safe calls (prctl, getppid).
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                    child_setup(false, parent)
                })
            };
            let mut child = spawn_from_keeper(cmd)
                .unwrap_or_else(|e| panic!("zkrecipes-testing: cannot start krb5kdc: {e}"));
            let pid = child.id();
            let listening = wait_until(KDC_START_TIMEOUT, Duration::from_millis(10), || {
                matches!(child.try_wait(), Ok(Some(_)))
                    || pid_listens(pid, Ipv4Addr::LOCALHOST, port)
            }) && matches!(child.try_wait(), Ok(None));
            if !listening {
                let _ = child.kill();
                let _ = child.wait();
                let log = fs::read_to_string(dir.join("kdc.log")).unwrap_or_default()
                    + &fs::read_to_string(dir.join("kdc.out")).unwrap_or_default();
                if log.contains("Address already in use") && attempt < START_ATTEMPTS {
                    continue;
                }
                panic!(
                    "zkrecipes-testing: krb5kdc did not listen on 127.0.0.1:{port} within 30 s: \
                     {log}"
                );
            }
            let kdc = Kdc {
                material,
                child: Mutex::new(child),
                _port: reservation,
            };
            let m = &kdc.material;
            let ccache = format!("FILE:{}", m.ccache.display());
            let keytab = m.client_keytab.display().to_string();
            run(
                &kinit,
                &["-c", &ccache, "-kt", &keytab, &m.client_principal],
                &[("KRB5_CONFIG", m.krb5_conf.as_path())],
            );
            write(
                &m.client_jaas,
                &format!(
                    "Client {{\n    com.sun.security.auth.module.Krb5LoginModule required\n    \
                     useKeyTab=true\n    keyTab=\"{keytab}\"\n    storeKey=true\n    \
                     useTicketCache=false\n    principal=\"{}\";\n}};\n",
                    m.client_principal
                ),
            );
            return kdc;
        }
        unreachable!("the loop returns or panics")
    }

    /// The JAAS `Server` section of server `index`: Krb5LoginModule with its keytab.
    pub(crate) fn server_jaas(&self, index: usize) -> String {
        format!(
            "Server {{\n    com.sun.security.auth.module.Krb5LoginModule required\n    \
             useKeyTab=true\n    keyTab=\"{}\"\n    storeKey=true\n    useTicketCache=false\n    \
             principal=\"{}\";\n}};\n",
            self.material.server_keytab(index).display(),
            self.material.server_principal(index)
        )
    }
}
