//! Ports for the servers the harness starts, kept theirs while the servers are stopped.
//!
//! A server's ports must stay its own for the life of its [`TestingServerHandle`]: a test that
//! stops and restarts a server (or has it killed) keeps its clients' connect string, and if
//! another server took the port meanwhile, the "restarted" server would in fact be that other
//! one, with another database: a counter would silently count from zero again. Ports handed out
//! by the kernel (`bind` to port 0, the local port of every outgoing connection) come from its
//! ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`), so the harness picks its ports
//! *below* that range, where the kernel never hands one out, and reserves each one against every
//! other process using this harness with an exclusive `flock` on `$TMPDIR/zkrecipes-ports/PORT`.
//! The lock files stay (empty, at most one per port of the range): deleting one while another
//! process opens it would let two processes lock two different files of the same name.
//! A [`Reservation`] holds the lock; the server's JVM inherits it too (see
//! [`inherit`]), so a detached server (`zk-harness`) keeps its ports after the
//! command that started it exits.
//!
//! [`TestingServerHandle`]: crate::TestingServerHandle

use std::fs::{self, File, OpenOptions};
use std::io;
use std::net::{Ipv4Addr, TcpListener, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;

/// The lowest port handed out (well above the usual fixed service ports).
const FLOOR: u16 = 12_000;
/// Below this many ports under the ephemeral range, the kernel's own choice is used instead
/// (still reserved against other harness processes).
const MIN_SPAN: u16 = 2_000;
const ATTEMPTS: usize = 10_000;

/// A port kept for one server; dropping it frees the port (unless a server process inherited
/// the lock and still runs).
#[derive(Debug)]
pub(crate) struct Reservation {
    port: u16,
    lock: File,
}

impl Reservation {
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.lock.as_raw_fd()
    }
}

/// Lets a child process inherit reservation locks (`fds` from [`Reservation::fd`]): clears
/// close-on-exec on each. Call in the child between fork and exec; async-signal-safe (`fcntl`).
pub(crate) fn inherit(fds: &[RawFd]) -> io::Result<()> {
    for &fd in fds {
        // SAFETY: fcntl on a descriptor of this process.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The range ports are picked from: `[FLOOR, ephemeral start)`, or `None` when that is too
/// small (then the kernel picks, as `bind` to port 0 does).
fn range() -> Option<(u16, u16)> {
    let text = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let low: u16 = text.split_whitespace().next()?.parse().ok()?;
    (low > FLOOR && low - FLOOR >= MIN_SPAN).then_some((FLOOR, low))
}

fn lock_dir() -> PathBuf {
    std::env::temp_dir().join("zkrecipes-ports")
}

/// Takes the lock of `port` if no other holder has it.
fn lock(port: u16) -> io::Result<Option<File>> {
    let dir = lock_dir();
    fs::create_dir_all(&dir)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(port.to_string()))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(Some(file));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(None)
    } else {
        Err(e)
    }
}

/// Reserves a port that is free on `host` (TCP, and UDP too when `udp`), held by no other
/// harness user, and outside the kernel's ephemeral range when the machine has room below it.
/// Panics (with the reason) if none can be found.
pub(crate) fn reserve(host: Ipv4Addr, udp: bool) -> Reservation {
    let range = range();
    for _ in 0..ATTEMPTS {
        let port = match range {
            Some((low, high)) => fastrand::u16(low..high),
            None => TcpListener::bind((host, 0))
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .unwrap_or_else(|e| panic!("zkrecipes-testing: cannot bind a port on {host}: {e}")),
        };
        let lock = match lock(port) {
            Ok(Some(lock)) => lock,
            Ok(None) => continue,
            Err(e) => panic!(
                "zkrecipes-testing: cannot lock {}: {e}",
                lock_dir().join(port.to_string()).display()
            ),
        };
        // Free now? (Something outside the harness may use it; the lock only rules out us.)
        let free = TcpListener::bind((host, port)).is_ok()
            && (!udp || UdpSocket::bind((host, port)).is_ok());
        if free {
            return Reservation { port, lock };
        }
    }
    panic!("zkrecipes-testing: no free port on {host} after {ATTEMPTS} tries")
}

/// Takes the reservation of a port already chosen (a detached server's, found again by
/// `zk-harness`), if no live process holds it; `None` if one does (its server still runs and
/// keeps it).
pub(crate) fn reclaim(port: u16) -> Option<Reservation> {
    lock(port)
        .ok()
        .flatten()
        .map(|lock| Reservation { port, lock })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_ports_are_distinct_below_the_ephemeral_range_and_held() {
        let host = Ipv4Addr::LOCALHOST;
        let held: Vec<Reservation> = (0..20).map(|_| reserve(host, false)).collect();
        let mut ports: Vec<u16> = held.iter().map(Reservation::port).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 20, "a port was handed out twice: {ports:?}");
        if let Some((low, high)) = range() {
            assert!(
                ports.iter().all(|p| (low..high).contains(p)),
                "{ports:?} not in [{low}, {high})"
            );
        }
        // Another holder (another open file: as another process would) cannot take them...
        for r in &held {
            assert!(
                lock(r.port()).unwrap().is_none(),
                "port {} was not held",
                r.port()
            );
            assert!(reclaim(r.port()).is_none());
        }
        // ...until they are released. Not always at once: a process another test thread forks
        // to start a server shares this process's open files until it execs (their descriptors
        // close on exec), and other processes may take a released port for themselves. So: one
        // of the released ports can be reserved again, within a deadline.
        let ports: Vec<u16> = held.iter().map(Reservation::port).collect();
        drop(held);
        let mut again = None;
        let reserved = crate::wait_until(
            std::time::Duration::from_secs(30),
            std::time::Duration::from_millis(10),
            || {
                again = ports.iter().find_map(|&p| reclaim(p));
                again.is_some()
            },
        );
        assert!(
            reserved,
            "none of the released ports {ports:?} could be reserved again within 30 s"
        );
        assert!(ports.contains(&again.unwrap().port()));
    }
}
