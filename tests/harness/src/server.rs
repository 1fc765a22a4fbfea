//! ZooKeeper server processes: [`TestingServerHandle`], [`TestingServer`], [`TestingCluster`].

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpStream, ToSocketAddrs};
use std::ops::Deref;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use once_cell::sync::Lazy;

use crate::install::{ensure_zookeeper_installed, zookeeper_install, MAIN_CLASS};
use crate::kerberos::KerberosMaterial;
use crate::ports::{self, Reservation};
use crate::reconfig::{self, Member};
use crate::secure::{Deployment, Security, TlsMaterial};
use crate::{wait_until, TempDir};

const START_TIMEOUT: Duration = Duration::from_secs(30);
const STOP_GRACE: Duration = Duration::from_secs(5);
/// A session timeout that outlives any [`TestingServerHandle::restart`]: a stop takes at most twice
/// the 5 s grace (SIGTERM, then SIGKILL), a start at most 30 s before it panics, and 20 s more
/// is left for the client's reconnection. A test that asserts its session survives a stop and
/// start uses at least this: with less, a loaded machine's slow JVM start keeps the client
/// suspended for a whole session timeout, it declares the session LOST (Curator's rule), and
/// the test fails though nothing is wrong. The harness allows up to 120 s.
pub const OUTLIVES_A_RESTART: Duration = STOP_GRACE
    .saturating_mul(2)
    .saturating_add(START_TIMEOUT)
    .saturating_add(Duration::from_secs(20));
const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(20);
const START_ATTEMPTS: usize = 5;
/// Extra JVM flags of a server (one per line), read at each start: the JAAS file and the
/// superuser of a secured server.
pub(crate) const JVM_FLAGS_FILE: &str = "jvm.flags";
/// Small, quick-starting JVMs: tests start many of them on small machines. With
/// `ZKR_HARNESS_FULL_JIT=1` in the environment (benchmarks), `-XX:TieredStopAtLevel=1` (C1 only)
/// is left out so the server runs with the normal tiered JIT.
const JVM_FLAGS: &[&str] = &[
    "-Xms16m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.net.preferIPv4Stack=true",
    // Reap empty CONTAINER nodes within a second (default: a minute), so tests can see it.
    "-Dznode.container.checkIntervalMs=250",
    // TTL create modes (PERSISTENT_WITH_TTL, PERSISTENT_SEQUENTIAL_WITH_TTL) are refused unless
    // the server enables extended types; the same container check reaps expired TTL nodes.
    "-Dzookeeper.extendedTypesEnabled=true",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
];

/// Sends a four-letter-word command (`srvr`, `stat`, `cons`, `dump`, `wchc`, `wchp`, `mntr`,
/// `ruok`, ...) to `address` (`"host:port"`) and returns the answer, or `""` if the server
/// does not answer within 2 s (stopped, paused, unreachable).
pub fn four_letter(address: &str, cmd: &str) -> String {
    let ask = || -> io::Result<String> {
        let addr = address
            .to_socket_addrs()?
            .next()
            .ok_or(io::ErrorKind::InvalidInput)?;
        let mut stream = TcpStream::connect_timeout(&addr, FOUR_LETTER_TIMEOUT)?;
        stream.set_read_timeout(Some(FOUR_LETTER_TIMEOUT))?;
        stream.set_write_timeout(Some(FOUR_LETTER_TIMEOUT))?;
        stream.write_all(cmd.as_bytes())?;
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer); // keeps what arrived before an error
        Ok(String::from_utf8_lossy(&answer).into_owned())
    };
    ask().unwrap_or_default()
}

/// The value of the `Mode:` line of a `srvr` answer (`standalone`, `leader`, `follower`, ...).
pub(crate) fn mode(srvr: &str) -> Option<&str> {
    srvr.lines()
        .find_map(|l| l.strip_prefix("Mode:"))
        .map(str::trim)
}

/// One ZooKeeper server process of a [`TestingServer`] or [`TestingCluster`].
///
/// All methods take `&self` and are blocking; they can be called from any thread. Each server
/// lives in its own directory (`zoo.cfg`, `data/`, `zookeeper.log`), which survives
/// [`stop`](Self::stop)/[`start`](Self::start), so data survives restarts.
#[derive(Debug)]
pub struct TestingServerHandle {
    index: usize,
    host: Ipv4Addr,
    port: u16,
    secure_port: Option<u16>,
    dir: PathBuf,
    standalone: bool,
    detached: bool,
    proc: Mutex<Proc>,
    /// Its quorum and election ports and role, in a reconfigurable ensemble.
    pub(crate) member: Option<Member>,
    /// Its ports, kept its own while it is stopped (see [`crate::ports`]).
    ports: Vec<Reservation>,
}

#[derive(Debug, Default)]
struct Proc {
    child: Option<Child>,
    pid: u32,
}

#[derive(Debug)]
struct StartError {
    bind_conflict: bool,
    message: String,
}

impl TestingServerHandle {
    /// A server added to a reconfigurable ensemble (see [`TestingCluster::add_server`]).
    pub(crate) fn member(
        index: usize,
        host: Ipv4Addr,
        port: u16,
        dir: PathBuf,
        member: Member,
        detached: bool,
        ports: Vec<Reservation>,
    ) -> TestingServerHandle {
        TestingServerHandle {
            index,
            host,
            port,
            secure_port: None,
            dir,
            standalone: false,
            detached,
            proc: Mutex::default(),
            member: Some(member),
            ports,
        }
    }

    pub(crate) fn set_standalone(&mut self, standalone: bool) {
        self.standalone = standalone;
    }

    /// Index of this server in its ensemble (0 for a standalone server); its `myid` is `index + 1`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// `"127.0.0.x:PORT"`, the client address of this server.
    pub fn connect_string(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The loopback address the server listens on (`127.0.0.(index+1)`).
    pub fn host(&self) -> Ipv4Addr {
        self.host
    }

    /// Client port (plaintext; every server has one, TLS or not).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The TLS client port (`secureClientPort`) of a server started with
    /// [`Security::tls`](crate::Security::tls); `None` without TLS.
    pub fn secure_port(&self) -> Option<u16> {
        self.secure_port
    }

    /// `"127.0.0.x:SECUREPORT"`, the TLS client address of this server; `None` without TLS.
    pub fn secure_connect_string(&self) -> Option<String> {
        self.secure_port.map(|port| format!("{}:{port}", self.host))
    }

    /// Directory holding `zoo.cfg`, `data/` and `zookeeper.log`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's log (stdout and stderr of every run, appended).
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("zookeeper.log")
    }

    fn cfg_path(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }

    /// Process id, if the server process is alive (running or paused).
    pub fn pid(&self) -> Option<u32> {
        self.live_pid(&mut self.lock())
    }

    /// Whether the server process is alive (a paused server is still running).
    pub fn is_running(&self) -> bool {
        self.pid().is_some()
    }

    /// Whether the server process is stopped by [`pause`](Self::pause).
    pub fn is_paused(&self) -> bool {
        self.pid().is_some_and(|pid| proc_state(pid) == Some('T'))
    }

    /// Sends a four-letter word to this server; `""` if it does not answer (see [`four_letter`]).
    pub fn four_letter(&self, cmd: &str) -> String {
        four_letter(&self.connect_string(), cmd)
    }

    /// Starts the server again (same port, same data) and waits until it answers `srvr`
    /// (standalone: with a `Mode:` line; ensemble member: with anything, since it serves only
    /// once a quorum is up, see [`TestingCluster::wait_for_quorum`]). No-op if it is running.
    /// Panics with the log's tail if it does not come up within 30 s.
    pub fn start(&self) {
        if let Err(e) = self.spawn().and_then(|offset| self.await_ready(offset)) {
            self.kill();
            panic!("{}", e.message);
        }
    }

    /// Stops the server: SIGTERM (resuming it if paused), SIGKILL after 5 s, then waits for
    /// the process to be gone. No-op if it is not running.
    pub fn stop(&self) {
        let mut p = self.lock();
        self.terminate_locked(&mut p);
        if !self.wait_exit(&mut p, STOP_GRACE) {
            self.signal(&mut p, libc::SIGKILL);
            self.wait_exit(&mut p, STOP_GRACE);
        }
    }

    /// [`stop`](Self::stop) then [`start`](Self::start).
    pub fn restart(&self) {
        self.stop();
        self.start();
    }

    /// Kills the server with SIGKILL (a crash) and waits for the process to be gone.
    pub fn kill(&self) {
        let mut p = self.lock();
        self.signal(&mut p, libc::SIGKILL);
        self.wait_exit(&mut p, STOP_GRACE);
    }

    /// Freezes the server with SIGSTOP (it keeps its sockets but answers nothing, like a hung
    /// machine) and waits until the kernel reports it stopped. Panics if it is not running.
    pub fn pause(&self) {
        self.stop_or_continue(libc::SIGSTOP, true);
    }

    /// Resumes a [`pause`](Self::pause)d server with SIGCONT. Panics if it is not running.
    pub fn resume(&self) {
        self.stop_or_continue(libc::SIGCONT, false);
    }

    fn stop_or_continue(&self, signal: libc::c_int, stopped: bool) {
        let pid = self
            .pid()
            .unwrap_or_else(|| panic!("ZooKeeper server {} is not running", self.index));
        // SAFETY: plain kill(2) on the pid of our live child.
        unsafe { libc::kill(pid as libc::pid_t, signal) };
        wait_until(STOP_GRACE, Duration::from_millis(2), || {
            (proc_state(pid) == Some('T')) == stopped
        });
    }

    fn lock(&self) -> MutexGuard<'_, Proc> {
        self.proc.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pid if the process is alive; reaps and forgets it once it has exited.
    fn live_pid(&self, p: &mut Proc) -> Option<u32> {
        let alive = p.pid != 0
            && match &mut p.child {
                Some(child) => matches!(child.try_wait(), Ok(None)),
                None => is_server_process(p.pid, &self.cfg_path()),
            };
        if !alive {
            *p = Proc::default();
        }
        alive.then_some(p.pid)
    }

    fn signal(&self, p: &mut Proc, signal: libc::c_int) -> bool {
        // SAFETY: plain kill(2) on a pid that is alive and ours (checked just before).
        self.live_pid(p)
            .is_some_and(|pid| unsafe { libc::kill(pid as libc::pid_t, signal) } == 0)
    }

    fn terminate_locked(&self, p: &mut Proc) {
        if self.signal(p, libc::SIGTERM) {
            self.signal(p, libc::SIGCONT); // a paused JVM handles SIGTERM only once resumed
        }
    }

    /// Sends SIGTERM without waiting (see [`stop`](Self::stop)).
    fn terminate(&self) {
        self.terminate_locked(&mut self.lock());
    }

    fn wait_exit(&self, p: &mut Proc, timeout: Duration) -> bool {
        wait_until(timeout, Duration::from_millis(5), || {
            self.live_pid(p).is_none()
        })
    }

    /// Launches the process unless it is alive; returns the log size before the launch.
    fn spawn(&self) -> Result<u64, StartError> {
        let failed = |e: io::Error| StartError {
            bind_conflict: false,
            message: format!(
                "zkrecipes-testing: cannot launch ZooKeeper server {}: {e}",
                self.index
            ),
        };
        let mut p = self.lock();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(failed)?;
        let offset = log.metadata().map_err(failed)?.len();
        if self.live_pid(&mut p).is_some() {
            return Ok(offset);
        }
        let zookeeper = zookeeper_install();
        let mut cmd = Command::new(&zookeeper.java);
        let full_jit = std::env::var_os("ZKR_HARNESS_FULL_JIT").is_some_and(|v| v == "1");
        let extra = match fs::read_to_string(self.dir.join(JVM_FLAGS_FILE)) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(failed(e)),
        };
        cmd.args(
            JVM_FLAGS
                .iter()
                .filter(|f| !(full_jit && **f == "-XX:TieredStopAtLevel=1")),
        )
        .args(extra.lines().filter(|l| !l.is_empty()))
        .arg("-cp")
        .arg(&zookeeper.classpath)
        .arg(MAIN_CLASS)
        .arg(self.cfg_path())
        .current_dir(&self.dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(failed)?)
        .stderr(log);
        let (detached, parent) = (self.detached, std::process::id() as libc::pid_t);
        // The JVM holds the port reservations too: a detached server keeps its ports after
        // `zk-harness` exits.
        let fds: Vec<RawFd> = self.ports.iter().map(Reservation::fd).collect();
        // SAFETY: the hook only makes async-signal-safe calls (setsid, prctl, getppid, fcntl).
        unsafe {
            cmd.pre_exec(move || {
                ports::inherit(&fds)?;
                child_setup(detached, parent)
            })
        };
        let child = spawn_from_keeper(cmd).map_err(failed)?;
        p.pid = child.id();
        p.child = Some(child);
        Ok(offset)
    }

    fn await_ready(&self, log_offset: u64) -> Result<(), StartError> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let srvr = self.four_letter("srvr");
            let serving = mode(&srvr).is_some() || (!self.standalone && !srvr.is_empty());
            // The answer must come from this server's own process: a server that could not
            // bind its port would otherwise pass for started while another one answers there.
            // The secure port is bound by a second connection factory, maybe after `srvr`
            // answers on the first.
            if serving
                && self.listens_on(self.port)
                && self.secure_port.map_or(true, |port| self.listens_on(port))
            {
                return Ok(());
            }
            let (what, log) = if !self.is_running() {
                ("exited while starting", self.log_since(log_offset))
            } else if Instant::now() >= deadline {
                (
                    "did not answer `srvr` within 30 s",
                    self.log_since(log_offset),
                )
            } else {
                thread::sleep(POLL);
                continue;
            };
            return Err(self.error(what, &log));
        }
    }

    /// Whether this server's process has a socket listening on `host:port` (from `/proc`, so
    /// nothing connects to it: a TLS port would log a failed handshake).
    fn listens_on(&self, port: u16) -> bool {
        self.pid()
            .is_some_and(|pid| pid_listens(pid, self.host, port))
    }

    fn error(&self, what: &str, log: &str) -> StartError {
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        StartError {
            bind_conflict: log.contains("Address already in use"),
            message: format!(
                "zkrecipes-testing: ZooKeeper server {} ({}) {what}; last lines of {}:\n{tail}",
                self.index,
                self.connect_string(),
                self.log_path().display()
            ),
        }
    }

    fn log_since(&self, offset: u64) -> String {
        let log = fs::read(self.log_path()).unwrap_or_default();
        String::from_utf8_lossy(log.get(offset as usize..).unwrap_or_default()).into_owned()
    }
}

/// Whether process `pid` has a TCP socket listening on `host:port` (from `/proc/PID/net/tcp`
/// and its file descriptors; nothing connects).
pub(crate) fn pid_listens(pid: u32, host: Ipv4Addr, port: u16) -> bool {
    let local = format!("{:08X}:{port:04X}", u32::from_ne_bytes(host.octets()));
    let tcp = fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    let inodes: Vec<String> = tcp
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() > 9 && f[1] == local && f[3] == "0A")
        .map(|f| format!("socket:[{}]", f[9]))
        .collect();
    if inodes.is_empty() {
        return false;
    }
    fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .filter_map(|entry| fs::read_link(entry.ok()?.path()).ok())
        .any(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
}

/// Runs in the child between fork and exec.
pub(crate) fn child_setup(detached: bool, parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: async-signal-safe libc calls only.
    unsafe {
        if detached {
            // Its own session: survives the `zk-harness` CLI and its terminal.
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
        } else {
            // Dies with the test process, even if that one crashes.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
    }
    Ok(())
}

type Job = Box<dyn FnOnce() + Send>;

/// PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, and test threads come
/// and go (a server may outlive the test that started it, e.g. in a shared fixture), so servers
/// are forked from this thread, which lives as long as the process.
static KEEPER: Lazy<mpsc::Sender<Job>> = Lazy::new(|| {
    let (tx, rx) = mpsc::channel::<Job>();
    thread::Builder::new()
        .name("zkr-process-keeper".into())
        .spawn(move || rx.into_iter().for_each(|job| job()))
        .expect("zkrecipes-testing: cannot start the process keeper thread");
    tx
});

pub(crate) fn spawn_from_keeper(mut cmd: Command) -> io::Result<Child> {
    let (tx, rx) = mpsc::channel();
    KEEPER
        .send(Box::new(move || {
            let _ = tx.send(cmd.spawn());
        }))
        .expect("zkrecipes-testing: process keeper thread is gone");
    rx.recv()
        .expect("zkrecipes-testing: process keeper thread is gone")
}

/// Whether `pid` is alive (not a zombie) and is the server of `cfg` (guards against pid reuse
/// when only a pid is known, as in the `zk-harness` CLI).
fn is_server_process(pid: u32, cfg: &Path) -> bool {
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    cmdline
        .split(|&b| b == 0)
        .any(|arg| arg == cfg.as_os_str().as_encoded_bytes())
}

/// The state letter of `/proc/PID/stat` (`R`, `S`, `T` for stopped, `Z` ...).
fn proc_state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The addresses of `n` servers: server `i` on `127.0.0.(i+1)`.
fn hosts(n: usize) -> Vec<Ipv4Addr> {
    assert!(
        (1..=254).contains(&n),
        "an ensemble has 1 to 254 servers, not {n}"
    );
    (1..=n as u8).map(|i| Ipv4Addr::new(127, 0, 0, i)).collect()
}

/// Creates fresh server directories for `n` servers under `root` (a standalone server if
/// `n == 1`), on free ports: server `i` on `127.0.0.(i+1)`, secured as `deployment` says.
fn configure(
    root: &Path,
    n: usize,
    detached: bool,
    deployment: &Deployment,
    dynamic: bool,
) -> Vec<TestingServerHandle> {
    let hosts = hosts(n);
    // [client, quorum, election, secure client] ports, reserved for the servers' lifetime.
    let mut reserved: Vec<Vec<Reservation>> = hosts
        .iter()
        .map(|&h| (0..4).map(|_| ports::reserve(h, false)).collect())
        .collect();
    let ports: Vec<[u16; 4]> = reserved
        .iter()
        .map(|r| [r[0].port(), r[1].port(), r[2].port(), r[3].port()])
        .collect();
    let mut members = String::new();
    let dynamic_members: Vec<Member> = ports
        .iter()
        .enumerate()
        .map(|(i, &[_, quorum, election, _])| Member::participant(i, quorum, election))
        .collect();
    if n > 1 && !dynamic {
        for (i, (host, [_, quorum, election, _])) in hosts.iter().zip(&ports).enumerate() {
            members += &format!("server.{}={host}:{quorum}:{election}\n", i + 1);
        }
    }
    let dynamic_file: String = hosts
        .iter()
        .zip(&ports)
        .zip(&dynamic_members)
        .map(|((&host, &[port, ..]), m)| format!("{}\n", m.spec(host, port)))
        .collect();
    let mut servers = Vec::new();
    for (index, (&host, &[port, _, _, secure])) in hosts.iter().zip(&ports).enumerate() {
        let dir = root.join(format!("server{index}"));
        let data = dir.join("data");
        let _ = fs::remove_dir_all(&dir);
        let secure_port = deployment.secure().then_some(secure);
        let client = if dynamic {
            reconfig::static_lines(&dir)
        } else {
            format!("clientPortAddress={host}\nclientPort={port}\n")
        };
        let config = format!(
            "tickTime=200\ninitLimit=10\nsyncLimit=5\ndataDir={}\n{client}\
             minSessionTimeout=400\nmaxSessionTimeout=120000\nmaxClientCnxns=0\n\
             4lw.commands.whitelist=*\nadmin.enableServer=false\nforceSync=no\npreAllocSize=1024\n\
             {members}{}",
            data.display(),
            deployment.zoo_cfg(index, host, secure_port),
        );
        let written = fs::create_dir_all(&data)
            .and_then(|()| {
                if n > 1 || dynamic {
                    fs::write(data.join("myid"), format!("{}\n", index + 1))
                } else {
                    Ok(())
                }
            })
            .and_then(|()| {
                if dynamic {
                    fs::write(dir.join(reconfig::DYNAMIC_FILE), &dynamic_file)
                } else {
                    Ok(())
                }
            })
            .and_then(|()| fs::write(dir.join("zoo.cfg"), config))
            .and_then(|()| {
                let flags: String = deployment
                    .jvm_flags(index)
                    .iter()
                    .map(|f| format!("{f}\n"))
                    .collect();
                fs::write(dir.join(JVM_FLAGS_FILE), flags)
            });
        if let Err(e) = written {
            panic!(
                "zkrecipes-testing: cannot write the configuration in {}: {e}",
                dir.display()
            );
        }
        let (standalone, proc) = (n == 1 && !dynamic, Mutex::default());
        let member = dynamic.then(|| dynamic_members[index].clone());
        servers.push(TestingServerHandle {
            index,
            host,
            port,
            secure_port,
            dir,
            standalone,
            detached,
            proc,
            member,
            ports: std::mem::take(&mut reserved[index]),
        });
    }
    servers
}

/// Configures and starts `n` servers under `root`, secured as `security` says, and waits until
/// they serve (and, for an ensemble, agree on one leader); retries on fresh ports if a port was
/// taken meanwhile.
fn launch(
    root: &Path,
    n: usize,
    detached: bool,
    security: &Security,
    dynamic: bool,
) -> (Vec<TestingServerHandle>, Deployment) {
    ensure_zookeeper_installed();
    let deployment = Deployment::prepare(root, &hosts(n), security);
    for attempt in 1.. {
        let servers = configure(root, n, detached, &deployment, dynamic);
        let started = servers
            .iter()
            .map(TestingServerHandle::spawn)
            .collect::<Result<Vec<_>, _>>()
            .and_then(|offsets| {
                servers
                    .iter()
                    .zip(offsets)
                    .try_for_each(|(s, o)| s.await_ready(o))
            });
        let error = match started {
            Ok(()) if n == 1 && !dynamic => return (servers, deployment),
            // Every server must have joined: one that died (e.g. on a port conflict) does not
            // prevent a quorum of the others.
            Ok(())
                if quorum_leader(&servers, START_TIMEOUT).is_some()
                    && servers.iter().all(TestingServerHandle::is_running) =>
            {
                return (servers, deployment)
            }
            Ok(()) => {
                let what = "(no quorum of all servers with one leader within 30 s)";
                let errors: Vec<_> = servers
                    .iter()
                    .map(|s| s.error(what, &s.log_since(0)))
                    .collect();
                StartError {
                    bind_conflict: errors.iter().any(|e| e.bind_conflict),
                    message: errors
                        .into_iter()
                        .map(|e| e.message)
                        .collect::<Vec<_>>()
                        .join("\n"),
                }
            }
            Err(e) => e,
        };
        stop_all(&servers);
        if !error.bind_conflict || attempt == START_ATTEMPTS {
            panic!("{}", error.message);
        }
    }
    unreachable!()
}

fn stop_all(servers: &[TestingServerHandle]) {
    servers.iter().for_each(TestingServerHandle::terminate);
    servers.iter().for_each(TestingServerHandle::stop);
}

/// Waits until more than half of the servers run, every running (not paused) one reports a
/// `Mode:`, and exactly one of them is the leader; returns its index.
fn quorum_leader(servers: &[TestingServerHandle], timeout: Duration) -> Option<usize> {
    let mut leader = None;
    wait_until(timeout, POLL, || {
        leader = None;
        let live: Vec<_> = servers
            .iter()
            .filter(|s| s.is_running() && !s.is_paused())
            .collect();
        if live.len() <= servers.len() / 2 {
            return false;
        }
        for server in live {
            match mode(&server.four_letter("srvr")) {
                Some("leader") if leader.replace(server.index).is_some() => return false,
                Some(_) => {}
                None => return false,
            }
        }
        leader.is_some()
    })
    .then_some(leader?)
}

/// A standalone ZooKeeper server for tests, like Curator's `TestingServer`.
///
/// Runs in its own temporary directory (`std::env::temp_dir()/zkr-XXXXXXXX`) on a free port
/// of 127.0.0.1 with `tickTime=200`, session timeouts from 400 ms to 120 s and every
/// four-letter word enabled. All [`TestingServerHandle`] methods are available through `Deref`
/// (`stop`, `start`, `restart`, `kill`, `pause`, `resume`, `four_letter`, `pid`, ...).
/// Dropping it stops the server (resuming it first if paused) and removes the directory. The
/// server is also SIGKILLed if the test process dies.
#[derive(Debug)]
pub struct TestingServer {
    server: TestingServerHandle,
    deployment: Deployment,
    _dir: TempDir,
}

impl TestingServer {
    /// Starts a standalone server and waits until it answers `srvr` (panics after 30 s, with
    /// the tail of its log). Installs ZooKeeper first if needed, see
    /// [`ensure_zookeeper_installed`](crate::ensure_zookeeper_installed).
    pub fn start() -> TestingServer {
        TestingServer::start_secure(Security::default())
    }

    /// [`start`](Self::start) with TLS, SASL, x509 identities... as `security` says (see
    /// [`Security`]); the server also keeps its plaintext port. Makes the TLS material
    /// ([`tls`](Self::tls)) first; waits until the secure port listens too. Panics if ZooKeeper
    /// cannot do what `security` asks, saying why.
    pub fn start_secure(security: Security) -> TestingServer {
        let dir = TempDir::new();
        let (mut servers, deployment) = launch(dir.path(), 1, false, &security, false);
        let server = servers.pop().expect("one server");
        TestingServer {
            server,
            deployment,
            _dir: dir,
        }
    }

    /// The CA, certificates and keys of a server started with TLS; `None` without TLS.
    pub fn tls(&self) -> Option<&TlsMaterial> {
        self.deployment.tls.as_ref()
    }

    /// How the server was secured (`Security::default()` for [`start`](Self::start)).
    pub fn security(&self) -> &Security {
        &self.deployment.security
    }

    /// The KDC, principals, keytabs and ticket cache of a server started with
    /// [`Security::kerberos`]; `None` without Kerberos.
    pub fn kerberos(&self) -> Option<&KerberosMaterial> {
        self.deployment.kerberos()
    }
}

impl Deref for TestingServer {
    type Target = TestingServerHandle;

    fn deref(&self) -> &TestingServerHandle {
        &self.server
    }
}

impl Drop for TestingServer {
    fn drop(&mut self) {
        self.server.stop();
    }
}

/// A ZooKeeper ensemble for tests, like Curator's `TestingCluster`.
///
/// Server `i` (0-based, `myid` `i+1`) listens for clients, quorum and election traffic on
/// `127.0.0.(i+1)`, with the same settings as [`TestingServer`] plus `initLimit=10`,
/// `syncLimit=5`. Dropping it stops every server and removes the temporary directory.
#[derive(Debug)]
pub struct TestingCluster {
    servers: Vec<TestingServerHandle>,
    deployment: Deployment,
    _dir: TempDir,
}

impl TestingCluster {
    /// Starts `n` servers (3 typically; 1 gives a standalone server) and waits until each
    /// answers `srvr` and exactly one is the leader. Panics after 30 s with the servers' logs.
    pub fn start(n: usize) -> TestingCluster {
        TestingCluster::start_secure(n, Security::default())
    }

    /// Starts `n` servers (1 or more) as a **reconfigurable** ensemble: ZooKeeper's dynamic
    /// reconfiguration is on (`reconfigEnabled=true`, `standaloneEnabled=false`), the members
    /// are in a dynamic configuration file with their client addresses
    /// (`server.ID=127.0.0.x:QUORUM:ELECTION:participant;127.0.0.x:PORT`), and
    /// [`add_server`](Self::add_server) starts more servers for a `reconfig` to add. A
    /// `reconfig` is refused to clients that are not authorized to write `/zookeeper/config`:
    /// give the ensemble a [`Security::superuser`] and authenticate the client as it
    /// (`digest`, `name:password`). See the module `reconfig` notes for how joiners start.
    pub fn start_reconfigurable(n: usize, security: Security) -> TestingCluster {
        let dir = TempDir::new();
        let (servers, deployment) = launch(dir.path(), n, false, &security, true);
        TestingCluster {
            servers,
            deployment,
            _dir: dir,
        }
    }

    pub(crate) fn root(&self) -> &Path {
        self._dir.path()
    }

    pub(crate) fn deployment_jvm_flags(&self, index: usize) -> Vec<String> {
        self.deployment.jvm_flags(index)
    }

    pub(crate) fn push_server(&mut self, server: TestingServerHandle) {
        self.servers.push(server);
    }

    /// [`start`](Self::start) with every server secured as `security` says (see [`Security`]):
    /// one CA for the ensemble, each server's certificate for its own `127.0.0.x`. TLS is for
    /// clients only: quorum and election traffic stay plaintext.
    pub fn start_secure(n: usize, security: Security) -> TestingCluster {
        let dir = TempDir::new();
        let (servers, deployment) = launch(dir.path(), n, false, &security, false);
        TestingCluster {
            servers,
            deployment,
            _dir: dir,
        }
    }

    /// The CA, certificates and keys of an ensemble started with TLS; `None` without TLS.
    pub fn tls(&self) -> Option<&TlsMaterial> {
        self.deployment.tls.as_ref()
    }

    /// How the ensemble was secured (`Security::default()` for [`start`](Self::start)).
    pub fn security(&self) -> &Security {
        &self.deployment.security
    }

    /// The KDC, principals, keytabs and ticket cache of an ensemble started with
    /// [`Security::kerberos`]; `None` without Kerberos.
    pub fn kerberos(&self) -> Option<&KerberosMaterial> {
        self.deployment.kerberos()
    }

    /// `"127.0.0.1:s1,127.0.0.2:s2,..."`, the TLS client address of every server; `None`
    /// without TLS.
    pub fn secure_connect_string(&self) -> Option<String> {
        self.servers
            .iter()
            .map(TestingServerHandle::secure_connect_string)
            .collect::<Option<Vec<_>>>()
            .map(|all| all.join(","))
    }

    /// `"127.0.0.1:p1,127.0.0.2:p2,..."`, every server of the ensemble.
    pub fn connect_string(&self) -> String {
        self.servers
            .iter()
            .map(TestingServerHandle::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `"127.0.0.x:p,..."` of the servers `indexes` (0-based), in index order whatever the
    /// order given: what a client's host list is after an ensemble change to those members.
    pub fn connect_string_of(&self, indexes: &[usize]) -> String {
        let mut indexes = indexes.to_vec();
        indexes.sort_unstable();
        indexes
            .iter()
            .map(|&i| self.servers[i].connect_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Index of the running, unpaused server that lists session `session_id` among its
    /// connections (its `cons` answer): where a client is connected now.
    pub fn server_with_session(&self, session_id: i64) -> Option<usize> {
        let sid = format!("sid={session_id:#x}");
        self.servers
            .iter()
            .filter(|s| s.is_running() && !s.is_paused())
            .find(|s| s.four_letter("cons").contains(&sid))
            .map(|s| s.index)
    }

    /// Number of servers.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Always false: an ensemble has at least one server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Server `i` (0-based). Its methods take `&self`, so this is enough to stop, kill, pause...
    pub fn server(&self, i: usize) -> &TestingServerHandle {
        &self.servers[i]
    }

    /// Server `i`, mutably (same methods as [`server`](Self::server)).
    pub fn server_mut(&mut self, i: usize) -> &mut TestingServerHandle {
        &mut self.servers[i]
    }

    /// All servers.
    pub fn servers(&self) -> &[TestingServerHandle] {
        &self.servers
    }

    /// Index of the server whose `srvr` says `Mode: leader` now, skipping stopped and paused ones.
    pub fn leader_index(&self) -> Option<usize> {
        let live = self
            .servers
            .iter()
            .filter(|s| s.is_running() && !s.is_paused());
        live.into_iter()
            .find(|s| mode(&s.four_letter("srvr")) == Some("leader"))
            .map(|s| s.index)
    }

    /// Waits until a majority of servers runs, every running, unpaused server reports a mode and
    /// exactly one is the leader. Returns the leader's index, or `None` after `timeout`.
    pub fn wait_for_quorum(&self, timeout: Duration) -> Option<usize> {
        quorum_leader(&self.servers, timeout)
    }
}

impl Drop for TestingCluster {
    fn drop(&mut self) {
        stop_all(&self.servers);
    }
}

/// Starts `n` servers under `dir` in their own sessions, without dying with this process,
/// secured as `security` says; returns them and their TLS material. `reconfigurable`: as
/// [`TestingCluster::start_reconfigurable`] does (a dynamic configuration, members to add with
/// [`add_detached_member`](crate::reconfig::add_detached_member)).
pub fn launch_detached(
    dir: &Path,
    n: usize,
    security: &Security,
    reconfigurable: bool,
) -> (Vec<TestingServerHandle>, Option<TlsMaterial>) {
    assert!(
        !security.kerberos,
        "zkrecipes-testing: detached servers (zk-harness) have no Kerberos yet: its KDC lives \
         with the TestingServer or TestingCluster that started it"
    );
    let (servers, deployment) = launch(dir, n, true, security, reconfigurable);
    (servers, deployment.tls)
}

/// A handle on server `index` of an ensemble of `n` started by [`launch_detached`], from what
/// was recorded about it: its directory ([`TestingServerHandle::dir`]), addresses and, if it
/// runs, its pid (checked against `/proc/PID/cmdline` before any signal).
pub fn attach(
    dir: PathBuf,
    n: usize,
    index: usize,
    host: Ipv4Addr,
    port: u16,
    secure_port: Option<u16>,
    pid: u32,
) -> TestingServerHandle {
    let proc = Mutex::new(Proc { child: None, pid });
    // Its running JVM holds its ports; if it is stopped, take them back for its next start.
    let ports = [Some(port), secure_port]
        .into_iter()
        .flatten()
        .filter_map(ports::reclaim)
        .collect();
    TestingServerHandle {
        index,
        host,
        port,
        secure_port,
        dir,
        standalone: n == 1,
        detached: true,
        proc,
        member: None,
        ports,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_taken_client_port_is_reported_as_a_bind_conflict() {
        ensure_zookeeper_installed();
        let dir = TempDir::new();
        let deployment = Deployment::prepare(dir.path(), &hosts(1), &Security::default());
        let server = configure(dir.path(), 1, false, &deployment, false)
            .pop()
            .expect("one server");
        let _taken = TcpListener::bind((server.host, server.port)).expect("bind the port first");
        let error = server
            .spawn()
            .and_then(|offset| server.await_ready(offset))
            .unwrap_err();
        assert!(error.bind_conflict, "{}", error.message);
        assert!(!server.is_running());
    }

    /// A restarted server whose port another ZooKeeper took meanwhile must not pass for
    /// started because that other server answers `srvr` there: its clients would silently
    /// work on the other server's database (a counter would count from zero again).
    #[test]
    fn a_restart_is_not_fooled_by_another_server_on_its_port() {
        ensure_zookeeper_installed();
        let (dir_a, dir_b) = (TempDir::new(), TempDir::new());
        let deployment = Deployment::prepare(dir_a.path(), &hosts(1), &Security::default());
        let a = configure(dir_a.path(), 1, false, &deployment, false)
            .pop()
            .expect("one server");
        a.start();
        a.stop();
        // Another ZooKeeper, configured on a's client port, starts while a is down.
        let b = configure(dir_b.path(), 1, false, &deployment, false)
            .pop()
            .expect("one server");
        let cfg = fs::read_to_string(b.cfg_path()).unwrap().replace(
            &format!("clientPort={}\n", b.port),
            &format!("clientPort={}\n", a.port),
        );
        fs::write(b.cfg_path(), cfg).unwrap();
        b.spawn().unwrap();
        assert!(
            wait_until(START_TIMEOUT, POLL, || mode(&a.four_letter("srvr"))
                .is_some()),
            "the other server did not come up on {}",
            a.connect_string()
        );
        let error = a
            .spawn()
            .and_then(|offset| a.await_ready(offset))
            .expect_err("a's restart passed for started while another server held its port");
        assert!(error.bind_conflict, "{}", error.message);
        assert!(!a.is_running());
        b.stop();
    }

    #[test]
    fn modes_and_process_states_are_parsed() {
        assert_eq!(
            mode("Zxid: 0x0\nMode: follower\nNode count: 5\n"),
            Some("follower")
        );
        assert_eq!(
            mode("This ZooKeeper instance is not currently serving requests\n"),
            None
        );
        assert!(matches!(proc_state(std::process::id()), Some('R' | 'S')));
        assert!(!is_server_process(
            std::process::id(),
            Path::new("/nonexistent/zoo.cfg")
        ));
    }
}
