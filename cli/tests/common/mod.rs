//! Helpers of the zkr CLI tests: the real `zkr` binary against a real ZooKeeper (the harness),
//! the Curator worker of tests/interop/java, and waiting on conditions with deadlines.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[allow(unused_imports)]
pub use zkrecipes_testing::{FaultProxy, TestingServer};

pub const ZKR: &str = env!("CARGO_BIN_EXE_zkr");

/// A `zkr` command pointed at `server`, with a short connection timeout.
pub fn zkr(server: &str) -> Command {
    let mut c = Command::new(ZKR);
    c.env("ZKR_SERVER", server)
        .env("ZKR_CONNECT_TIMEOUT", "10s")
        .env_remove("ZKR_NAMESPACE")
        .env_remove("ZKR_AUTH")
        .env_remove("ZKR_SESSION_TIMEOUT")
        .env_remove("ZKR_TLS")
        .env_remove("ZKR_TLS_CA")
        .env_remove("ZKR_TLS_CERT")
        .env_remove("ZKR_TLS_KEY")
        .env_remove("ZKR_TLS_NO_VERIFY_HOSTNAME")
        .env_remove("ZKR_SASL_USER")
        .env_remove("ZKR_SASL_PASSWORD")
        .env_remove("ZKR_SASL_PASSWORD_FILE")
        .env_remove("ZKR_SASL_MECHANISM")
        .stdin(Stdio::null());
    c
}

/// Runs to the end; panics on a spawn failure.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run zkr")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Waits until `cond` holds, polling every 20 ms; panics naming `what` after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return;
        }
        if Instant::now() > deadline {
            panic!("timed out after {limit:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for a child to exit within `limit`; kills it and panics otherwise.
pub fn wait_exit(child: &mut Child, what: &str, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A file's lines (none if it does not exist yet).
pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// A fresh temporary directory, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "zkr-test-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A process's lines of stdout, collected by a thread as they come.
pub struct Lines {
    pub child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Lines {
    pub fn spawn(mut cmd: Command) -> Lines {
        let mut child = cmd.stdout(Stdio::piped()).spawn().expect("spawn");
        let out = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                match line {
                    Ok(l) => sink.lock().unwrap().push(l),
                    Err(_) => return,
                }
            }
        });
        Lines { child, lines }
    }

    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    pub fn json(&self) -> Vec<serde_json::Value> {
        self.lines()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
            .collect()
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Kills a child on drop (a test that fails leaves no process behind).
pub struct Reap(pub Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends `sig` to a process.
pub fn signal(pid: u32, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).expect("kill");
}

/// Whether a process is alive (not gone, not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(s) => !s
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
        Err(_) => false,
    }
}

/// The Curator 5.9 worker of tests/interop/java (built by scripts/setup-curator-worker).
pub fn curator_worker() -> Command {
    let jar = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/interop/java/target/curator-worker.jar");
    if !jar.exists() {
        panic!(
            "the Curator worker is not built: {} is missing. Build it with scripts/setup-curator-worker \
             (Java 17+ and Maven; scripts/test runs it first)",
            jar.display()
        );
    }
    if Command::new("java").arg("-version").output().is_err() {
        panic!("java is not installed: run scripts/setup-curator-worker (it installs Java 17 and Maven)");
    }
    let mut c = Command::new("java");
    c.arg("-jar").arg(jar).stdin(Stdio::null());
    c
}

/// `zkr inspect PATH --json`, parsed.
pub fn inspect(server: &str, path: &str) -> serde_json::Value {
    let o = run(zkr(server).args(["inspect", path, "--json"]));
    assert!(o.status.success(), "inspect {path}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("inspect JSON")
}

/// The members of a lock or latch path, per `zkr inspect --json` (empty if none).
pub fn members(server: &str, path: &str) -> Vec<serde_json::Value> {
    let o = run(zkr(server).args(["inspect", path, "--json"]));
    if !o.status.success() {
        return Vec::new();
    }
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("inspect JSON");
    v["members"].as_array().cloned().unwrap_or_default()
}
