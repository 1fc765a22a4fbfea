//! The command run under a lock or a leadership: how it is started, which signals it gets,
//! and how it is stopped when the hold is lost.
//!
//! Decisions (docs/CLI.md § Signals):
//! * The command runs in a process group of its own (`setpgid(0, 0)`, like coreutils' `timeout`),
//!   so that a signal reaches the whole job: `sh -c 'a; b'` and what it started. With
//!   `--foreground` it stays in zkr's group (and the terminal's foreground group) so it can
//!   read the terminal; signals then go to the command's process only.
//! * SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to zkr are passed on. In
//!   `--foreground` mode SIGINT and SIGQUIT are not: the terminal already sent them to the
//!   command, which shares its process group.
//! * The command gets `PR_SET_PDEATHSIG = SIGKILL`: if zkr is killed with SIGKILL, nobody is left
//!   to release the lock, which goes when the session expires, and the command must not run on
//!   unguarded. The kernel then kills the command's process, not its children.
//! * When the hold is lost: SIGTERM, then SIGKILL after the grace period, to the group.
//! * The command is spawned on the thread that runs zkr's main future (the process's main
//!   thread): PR_SET_PDEATHSIG fires when the *thread* that forked the child ends.

use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::task::Poll;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{self as nsig, Signal};
use nix::unistd::Pid;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;

use crate::exit::{signalled, Failure, CANNOT_EXECUTE, INTERNAL, NOT_FOUND};

/// The signals zkr catches while it works for a command, in the order they are checked.
const CAUGHT: [(Signal, bool); 6] = [
    // (signal, whether it asks zkr to stop)
    (Signal::SIGTERM, true),
    (Signal::SIGINT, true),
    (Signal::SIGHUP, true),
    (Signal::SIGQUIT, true),
    (Signal::SIGUSR1, false),
    (Signal::SIGUSR2, false),
];

/// Signals sent to zkr, caught from the start of `lock`/`elect` so that none of them kills zkr
/// while it holds a lock or has a child to pass it to.
pub struct Signals {
    streams: Vec<(Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    pub fn install() -> Result<Signals, Failure> {
        let mut streams = Vec::with_capacity(CAUGHT.len());
        for (sig, _) in CAUGHT {
            let stream = signal(SignalKind::from_raw(sig as i32)).map_err(|e| {
                Failure::new(INTERNAL, format!("cannot catch {}: {e}", sig.as_str()))
            })?;
            streams.push((sig, stream));
        }
        Ok(Signals { streams })
    }

    /// The next signal received.
    pub async fn recv(&mut self) -> Signal {
        std::future::poll_fn(|cx| {
            for (sig, stream) in &mut self.streams {
                if let Poll::Ready(Some(())) = stream.poll_recv(cx) {
                    return Poll::Ready(*sig);
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// Whether `sig` asks zkr to stop (as opposed to a signal only passed on, SIGUSR1/2).
pub fn stops(sig: Signal) -> bool {
    CAUGHT.iter().any(|(s, stop)| *s == sig && *stop)
}

/// A command to run.
pub struct Spec<'a> {
    pub argv: &'a [OsString],
    pub env: Vec<(&'static str, String)>,
    pub foreground: bool,
}

/// A running command.
pub struct Running {
    child: tokio::process::Child,
    pid: Pid,
    group: bool,
}

/// Starts the command: 127 if it does not exist, 126 if it cannot be executed.
pub fn spawn(spec: Spec<'_>) -> Result<Running, Failure> {
    let Some((program, args)) = spec.argv.split_first() else {
        return Err(Failure::usage("no command after '--'"));
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    if !spec.foreground {
        cmd.process_group(0);
    }
    let parent = Pid::this();
    // SAFETY: the closure runs in the forked child before exec and only makes two system calls
    // (prctl, getppid), both async-signal-safe; it allocates nothing (Errno converts to an
    // io::Error without allocating).
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
            // zkr died between fork and prctl: the death signal will never come.
            if nix::unistd::getppid() != parent {
                return Err(io::Error::from(Errno::ESRCH));
            }
            Ok(())
        });
    }
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(false);
    let name = program.to_string_lossy();
    match cmd.spawn() {
        Ok(child) => {
            let Some(pid) = child.id() else {
                return Err(Failure::new(INTERNAL, format!("{name}: no process id")));
            };
            Ok(Running {
                child,
                pid: Pid::from_raw(pid as i32),
                group: !spec.foreground,
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Failure::new(
            NOT_FOUND,
            format!("cannot run {name:?}: command not found"),
        )),
        Err(e) => Err(Failure::new(
            CANNOT_EXECUTE,
            format!("cannot run {name:?}: {e}"),
        )),
    }
}

impl Running {
    /// Sends `sig` to the command (its whole process group unless `--foreground`). Only called
    /// while the child is not reaped, so its pid (and group id) cannot have been reused.
    fn send(&self, sig: Signal) {
        let _ = if self.group {
            nsig::killpg(self.pid, sig)
        } else {
            nsig::kill(self.pid, sig)
        };
    }

    /// Passes on a signal zkr received.
    fn forward(&self, sig: Signal) {
        if !self.group && matches!(sig, Signal::SIGINT | Signal::SIGQUIT) {
            return; // the terminal sent it to the command as well
        }
        self.send(sig);
    }
}

/// How a supervised command ended.
#[derive(Debug)]
pub struct Ended {
    /// Its exit code (128+N when killed by signal N).
    pub code: i32,
    /// Why it was stopped, when the hold or leadership was lost.
    pub lost: Option<String>,
    /// The first stopping signal zkr passed on to it, if any.
    pub stop_signal: Option<Signal>,
}

/// Waits for the command to end, passing on signals; when `lost` resolves (with a reason) the
/// command gets SIGTERM, then SIGKILL after `grace`.
pub async fn supervise(
    running: &mut Running,
    signals: &mut Signals,
    lost: impl Future<Output = String>,
    grace: Duration,
) -> Ended {
    tokio::pin!(lost);
    let mut lost_reason: Option<String> = None;
    let mut kill_at: Option<Instant> = None;
    let mut stop_signal = None;
    loop {
        tokio::select! {
            status = running.child.wait() => {
                let code = match status {
                    Ok(s) => s.code().unwrap_or_else(|| signalled(s.signal().unwrap_or(0))),
                    Err(_) => INTERNAL,
                };
                return Ended { code, lost: lost_reason, stop_signal };
            }
            sig = signals.recv() => {
                running.forward(sig);
                if stops(sig) {
                    stop_signal.get_or_insert(sig);
                }
            }
            reason = &mut lost, if lost_reason.is_none() => {
                running.send(Signal::SIGTERM);
                lost_reason = Some(reason);
                kill_at = Some(Instant::now() + grace);
            }
            _ = tokio::time::sleep_until(kill_at.unwrap_or_else(Instant::now)), if kill_at.is_some() => {
                running.send(Signal::SIGKILL);
                kill_at = None;
            }
        }
    }
}
