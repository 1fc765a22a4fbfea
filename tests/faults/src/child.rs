//! Child processes of the fault suite: lock holders written once per runtime (Rust: the test
//! binary re-run; C, Python, Node and Java/Curator: `tests/faults/children/`), talking to the
//! test over their stdin and stdout.
//!
//! A child prints lines `ZKR_CHILD_<KIND> <args...>`; anything else on its stdout (libtest's own
//! output when the child is the test binary) is passed over. The test sees those lines as
//! [`Event`]s, in order, and may answer any of them with a line on the child's stdin.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use crate::eventually;

/// How long a child may take to answer, change state or exit.
const WAIT: Duration = Duration::from_secs(30);

/// The environment variables that make the test binary run a test's child side (see
/// [`Program::rust_test`]).
pub const CHILD_CONNECT: &str = "ZKR_FAULTS_CHILD_CONNECT";
pub const CHILD_PATH: &str = "ZKR_FAULTS_CHILD_PATH";

const MARK: &str = "ZKR_CHILD_";

/// One `ZKR_CHILD_<KIND> <args...>` line of a child, stamped when the test read it.
#[derive(Clone, Debug)]
pub struct Event {
    pub kind: String,
    pub args: Vec<String>,
    pub at: Instant,
}

impl Event {
    /// Argument `i`, parsed; panics with the line if it is missing or malformed.
    pub fn arg<T: std::str::FromStr>(&self, i: usize) -> T {
        self.args
            .get(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("bad child line: {} {:?}", self.kind, self.args))
    }
}

/// A child program, written once per runtime.
#[derive(Clone, Copy, Debug)]
pub struct Program {
    /// The test whose body runs the Rust version when the test binary is re-run with
    /// [`CHILD_CONNECT`] and [`CHILD_PATH`] set.
    pub rust_test: &'static str,
    /// `children/{stem}.py`, `.js` and `.c`.
    pub stem: &'static str,
    /// `children/{java}.java` (a single-file source program on the Curator jars).
    pub java: &'static str,
}

/// The repository's root (this crate is `tests/faults`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// Fails loudly, saying how to fix it, when a child runtime is not set up.
fn require(path: &Path, fix: &str) {
    assert!(
        path.exists(),
        "{} is missing: run {fix} (the fault suite runs lock holders written in every runtime)",
        path.display()
    );
}

/// Runs a build step; panics with its output if it fails or cannot start.
fn build_step(cmd: &mut Command, what: &str, fix: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run it ({e}): {fix}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Builds `children/{stem}.c` the way a C user would: `scripts/install-c` (a debug build of the
/// ffi crate, staged with the header and a pkg-config file under the target dir), then `cc`.
fn build_c(stem: &str) -> PathBuf {
    let root = repo_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(|t| root.join(t))
        .unwrap_or_else(|| root.join("target"));
    let dir = target.join("faults-children");
    let prefix = dir.join("prefix");
    // Fault binaries may run side by side (tests/faults/run --jobs): one build at a time in this
    // directory, or one's cc could read the header another's install-c is rewriting.
    std::fs::create_dir_all(&dir).expect("create the C children's build directory");
    let lock = std::fs::File::create(dir.join(".build.lock")).expect("create the C build lock");
    // SAFETY: flock on a descriptor this function owns; it is released when `lock` is dropped.
    let locked = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
    assert_eq!(
        locked,
        0,
        "flock {}: {}",
        dir.join(".build.lock").display(),
        std::io::Error::last_os_error()
    );
    build_step(
        Command::new(root.join("scripts/install-c"))
            .arg(&prefix)
            .current_dir(&root),
        "scripts/install-c (a debug build of the ffi crate)",
        "is cargo on PATH?",
    );
    let flags = build_step(
        Command::new("pkg-config")
            .args(["--cflags", "--libs", "zkrecipes"])
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
        "pkg-config",
        "apt-get install -y pkg-config",
    );
    let exe = dir.join(stem);
    build_step(
        Command::new("cc")
            .args([
                "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-pthread",
            ])
            .arg(root.join(format!("tests/faults/children/{stem}.c")))
            .arg("-o")
            .arg(&exe)
            .args(flags.split_whitespace())
            .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display())),
        &format!("cc children/{stem}.c"),
        "apt-get install -y build-essential",
    );
    drop(lock);
    exe
}

/// Checks (and for C builds, once per test process) what `runtimes` need, then makes commands
/// that start `program` in each of them.
pub struct Children {
    program: Program,
    c: Option<PathBuf>,
}

impl Children {
    pub fn prepare(program: Program, runtimes: &[&str]) -> Children {
        let root = repo_root();
        let mut c = None;
        for runtime in runtimes {
            match *runtime {
                "rust" => {}
                "c" => {
                    // Built once per test process.
                    static BUILT: Mutex<BTreeMap<&str, PathBuf>> = Mutex::new(BTreeMap::new());
                    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
                    let exe = built
                        .entry(program.stem)
                        .or_insert_with(|| build_c(program.stem));
                    c = Some(exe.clone());
                }
                "python" => require(&root.join(".venv/bin/python"), "scripts/setup-python"),
                "node" => require(
                    &root.join("bindings-node/zkrecipes.node"),
                    "scripts/setup-node",
                ),
                "java" => require(
                    &root.join("tests/interop/java/target/lib"),
                    "scripts/setup-interop",
                ),
                other => panic!("unknown runtime {other}"),
            }
        }
        Children { program, c }
    }

    /// The command that starts the program in `runtime` on `connect`, lock `path`.
    pub fn command(&self, runtime: &str, connect: &str, path: &str) -> Command {
        let root = repo_root();
        let children = root.join("tests/faults/children");
        let mut cmd = match runtime {
            "rust" => {
                let mut c = Command::new(std::env::current_exe().expect("current_exe"));
                c.args([self.program.rust_test, "--exact", "--nocapture"])
                    .args(["--test-threads=1"])
                    .env(CHILD_CONNECT, connect)
                    .env(CHILD_PATH, path)
                    .env_remove("ZKR_FAULTS_LONG");
                return c;
            }
            "c" => Command::new(self.c.as_ref().expect("Children::prepare with \"c\"")),
            "python" => {
                let mut c = Command::new(root.join(".venv/bin/python"));
                c.arg(children.join(format!("{}.py", self.program.stem)));
                c
            }
            "node" => {
                let mut c = Command::new("node");
                c.arg(children.join(format!("{}.js", self.program.stem)));
                c
            }
            "java" => {
                let mut c = Command::new("java");
                c.args(["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp"])
                    .arg(format!(
                        "{}/*",
                        root.join("tests/interop/java/target/lib").display()
                    ))
                    .arg(children.join(format!("{}.java", self.program.java)));
                c
            }
            other => panic!("unknown runtime {other}"),
        };
        cmd.args([connect, path]);
        cmd
    }
}

/// A running child; killed (SIGKILL, even when stopped) when dropped.
pub struct ChildProcess {
    name: String,
    child: Child,
    events: mpsc::Receiver<Event>,
}

impl ChildProcess {
    /// Starts `cmd` (stdin and stdout piped, stderr inherited). `answer` sees every event
    /// first, on the reading thread, and may answer it with a line on the child's stdin.
    pub fn spawn(
        name: &str,
        mut cmd: Command,
        mut answer: impl FnMut(&Event) -> Option<String> + Send + 'static,
    ) -> ChildProcess {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn the {name} child process: {e}"));
        let stdout = child.stdout.take().unwrap();
        // The child holds its lock until its stdin closes: the reader keeps it open.
        let mut stdin = child.stdin.take().unwrap();
        let (tx, events) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // libtest may have printed "test NAME ... " on the same line.
                let Some(at) = line.find(MARK) else { continue };
                let mut words = line[at + MARK.len()..].split_whitespace();
                let event = Event {
                    kind: words.next().unwrap_or_default().to_string(),
                    args: words.map(str::to_string).collect(),
                    at: Instant::now(),
                };
                if let Some(reply) = answer(&event) {
                    let _ = writeln!(stdin, "{reply}").and_then(|_| stdin.flush());
                }
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        ChildProcess {
            name: name.to_string(),
            child,
            events,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next event, waiting at most `timeout`; panics if none comes or the child exits.
    pub fn next(&mut self, timeout: Duration) -> Event {
        match self.events.recv_timeout(timeout) {
            Ok(e) => e,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("the {} child said nothing for {timeout:?}", self.name)
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!(
                "the {} child exited early ({:?})",
                self.name,
                self.child.try_wait()
            ),
        }
    }

    /// Reads events until one of kind `kinds`; returns it and the ones read before it.
    pub fn until(&mut self, kinds: &[&str], timeout: Duration) -> (Event, Vec<Event>) {
        let deadline = Instant::now() + timeout;
        let mut before = Vec::new();
        loop {
            let e = self.next(deadline.saturating_duration_since(Instant::now()));
            if kinds.contains(&e.kind.as_str()) {
                return (e, before);
            }
            before.push(e);
        }
    }

    /// The events read so far and not yet taken, without waiting.
    pub fn drain(&self) -> Vec<Event> {
        self.events.try_iter().collect()
    }

    /// Freezes the child (SIGSTOP, like a long GC pause) and waits until the kernel says so.
    pub fn stop(&self) {
        self.signal("STOP");
        self.wait_state("stopped", |s| s == 'T');
    }

    /// Lets a stopped child run again (SIGCONT) and waits until it is no longer stopped.
    pub fn resume(&self) {
        self.signal("CONT");
        self.wait_state("running again", |s| s != 'T');
    }

    /// kill -9, then reaps it.
    pub fn kill(&mut self) {
        self.child.kill().expect("kill -9 the child");
        let _ = self.child.wait();
    }

    /// Waits (bounded) for the child to exit and asserts it succeeded.
    pub fn wait_success(&mut self, timeout: Duration) {
        let mut status = None;
        eventually(&format!("the {} child exits", self.name), timeout, || {
            status = self.child.try_wait().expect("wait for the child");
            status.is_some()
        });
        let status = status.unwrap();
        assert!(status.success(), "the {} child failed: {status}", self.name);
    }

    fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .args(["-s", sig, &self.pid().to_string()])
            .status()
            .expect("run kill(1)");
        assert!(status.success(), "kill -s {sig} {}: {status}", self.pid());
    }

    /// Waits until the state letter in /proc/PID/stat satisfies `ok`.
    fn wait_state(&self, what: &str, ok: impl Fn(char) -> bool) {
        let stat = format!("/proc/{}/stat", self.pid());
        eventually(&format!("the {} child is {what}", self.name), WAIT, || {
            let text = std::fs::read_to_string(&stat).unwrap_or_default();
            // "PID (comm) S ...": the state follows the last ')'.
            text.rfind(')')
                .and_then(|i| text[i + 1..].trim_start().chars().next())
                .is_some_and(&ok)
        });
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
