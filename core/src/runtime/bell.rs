//! How the background driver sleeps while it does not drive, and what wakes it.
//!
//! A blocking call drives the runtime itself and, when it ends, leaves nobody driving: the
//! background driver takes over only after [`super::BACKGROUND_AFTER`] (waking it at the end of
//! every call would put a thread wake-up on every call). Input that arrives in that gap (a
//! watch notification for another session, a reply to an async call, a task woken from a plain
//! thread) must not wait for the timer. So on Linux the driver sleeps in an epoll set of its
//! own that holds, besides a bell ([`Bell::ring`]), **the runtime's own epoll set**, armed only
//! while no blocking call is in flight ([`Bell::arm`] when the last one ends, [`Bell::disarm`]
//! when the first one starts: one `epoll_ctl` each, no wake-up). Whatever makes the runtime's
//! set ready while nobody drives (a socket's input, tokio's own waker for a task woken from
//! another thread) wakes the driver at once. Timers alone do not: a timer that falls due in
//! the gap runs up to `BACKGROUND_AFTER` late.
//!
//! tokio does not hand out its epoll descriptor, so [`Bell::new`] finds it: the process's epoll
//! set that lists a socket just registered with the runtime (`/proc/self/fdinfo`). If none does
//! (or not Linux), the bell is a condition variable and the gap is covered by the timer alone.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use tokio::runtime::Runtime;

/// The runtime's epoll set, to look at without taking anything from it.
#[derive(Clone, Copy)]
pub(super) struct SettlePoint(#[cfg(target_os = "linux")] std::os::fd::RawFd);

impl SettlePoint {
    /// Whether input waits in the runtime's epoll set, unread (a non-blocking `poll`).
    pub(super) fn input_waiting(self) -> bool {
        #[cfg(target_os = "linux")]
        {
            linux::readable(self.0)
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }
}

pub(super) struct Bell {
    #[cfg(target_os = "linux")]
    watch: Option<linux::Watch>,
    rung: Mutex<bool>,
    cv: Condvar,
}

impl Bell {
    /// The bell for `rt`, which nothing may have driven yet.
    pub(super) fn new(rt: &Runtime) -> Bell {
        #[cfg(not(target_os = "linux"))]
        let _ = rt;
        Bell {
            #[cfg(target_os = "linux")]
            watch: linux::Watch::new(rt),
            rung: Mutex::new(false),
            cv: Condvar::new(),
        }
    }

    /// Whether input in the gap wakes the driver (false: only the timer covers the gap).
    #[cfg(test)]
    pub(super) fn watches_input(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.watch.is_some()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// Whether input now wakes the sleeper (the runtime's set is armed).
    #[cfg(all(test, target_os = "linux"))]
    pub(super) fn armed(&self) -> bool {
        self.watch
            .as_ref()
            .is_some_and(|w| w.armed.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// What a blocking call looks at as it ends (`super::settle`); `None` without a watch.
    pub(super) fn settle_point(&self) -> Option<SettlePoint> {
        #[cfg(target_os = "linux")]
        {
            self.watch.as_ref().map(|w| SettlePoint(w.runtime_set))
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }

    /// The runtime's epoll set, for an event loop to poll ([`super::loop_source`]).
    #[cfg(unix)]
    pub(super) fn loop_source(&self) -> Option<std::os::fd::RawFd> {
        #[cfg(target_os = "linux")]
        {
            self.watch.as_ref().map(|w| w.runtime_set)
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }

    /// Wakes the sleeper (now, or its next [`wait`](Self::wait) returns at once).
    pub(super) fn ring(&self) {
        #[cfg(target_os = "linux")]
        if let Some(w) = &self.watch {
            w.ring();
            return;
        }
        *self.rung.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_one();
    }

    /// Input to the runtime wakes the sleeper from now on (until it has, once).
    pub(super) fn arm(&self) {
        #[cfg(target_os = "linux")]
        if let Some(w) = &self.watch {
            w.set_armed(true);
        }
    }

    /// Input to the runtime no longer wakes the sleeper (someone else drives it).
    pub(super) fn disarm(&self) {
        #[cfg(target_os = "linux")]
        if let Some(w) = &self.watch {
            w.set_armed(false);
        }
    }

    /// Sleeps until rung, until input when armed, or for `timeout` (`None`: no limit). True when
    /// the runtime's own epoll set was ready (input, or a task woken from another thread).
    pub(super) fn wait(&self, timeout: Option<Duration>) -> bool {
        #[cfg(target_os = "linux")]
        if let Some(w) = &self.watch {
            return w.wait(timeout);
        }
        let mut rung = self.rung.lock().unwrap_or_else(|e| e.into_inner());
        if !*rung {
            rung = match timeout {
                Some(t) => {
                    self.cv
                        .wait_timeout(rung, t)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => self.cv.wait(rung).unwrap_or_else(|e| e.into_inner()),
            };
        }
        *rung = false;
        false
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::time::Duration;

    use tokio::runtime::Runtime;

    const BELL: u64 = 1;
    const INPUT: u64 = 2;

    /// The driver's epoll set: an eventfd (the bell) and the runtime's epoll set (one-shot).
    pub(super) struct Watch {
        outer: OwnedFd,
        bell: OwnedFd,
        /// The runtime's epoll descriptor (tokio's; it lives as long as the runtime, which is
        /// never dropped in this process).
        pub(super) runtime_set: RawFd,
        /// Whether the runtime's set is armed (saves a redundant `epoll_ctl`).
        pub(super) armed: std::sync::atomic::AtomicBool,
    }

    fn cvt(r: libc::c_int) -> std::io::Result<libc::c_int> {
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }

    impl Watch {
        pub(super) fn new(rt: &Runtime) -> Option<Watch> {
            let runtime_set = find_runtime_set(rt)?;
            // SAFETY: plain system calls on descriptors this function creates and owns.
            let made = unsafe {
                cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC)).and_then(|outer| {
                    let outer = OwnedFd::from_raw_fd(outer);
                    let bell = OwnedFd::from_raw_fd(cvt(libc::eventfd(
                        0,
                        libc::EFD_CLOEXEC | libc::EFD_NONBLOCK,
                    ))?);
                    Ok((outer, bell))
                })
            };
            let (outer, bell) = match made {
                Ok(m) => m,
                Err(e) => {
                    tracing::debug!("the runtime's driver watches its timer only: {e}");
                    return None;
                }
            };
            let w = Watch {
                outer,
                bell,
                runtime_set,
                armed: std::sync::atomic::AtomicBool::new(false),
            };
            let added = w
                .ctl(
                    libc::EPOLL_CTL_ADD,
                    w.bell.as_raw_fd(),
                    libc::EPOLLIN as u32,
                    BELL,
                )
                .and_then(|()| {
                    w.ctl(
                        libc::EPOLL_CTL_ADD,
                        runtime_set,
                        libc::EPOLLONESHOT as u32,
                        INPUT,
                    )
                });
            match added {
                Ok(()) => Some(w),
                Err(e) => {
                    tracing::debug!("the runtime's driver watches its timer only: {e}");
                    None
                }
            }
        }

        fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, tag: u64) -> std::io::Result<()> {
            let mut ev = libc::epoll_event { events, u64: tag };
            // SAFETY: `ev` is a valid epoll_event for the call's duration; the descriptors are
            // open (ours, or the runtime's, which outlives this watch).
            cvt(unsafe { libc::epoll_ctl(self.outer.as_raw_fd(), op, fd, &mut ev) }).map(|_| ())
        }

        pub(super) fn ring(&self) {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to our eventfd. It cannot fail short of the
            // counter overflowing (2^64 - 2 rings unread), which would only mean already rung.
            unsafe {
                libc::write(self.bell.as_raw_fd(), (&one as *const u64).cast(), 8);
            }
        }

        pub(super) fn set_armed(&self, armed: bool) {
            // Callers hold the driver's `edges` lock: no two changes race.
            if self.armed.swap(armed, std::sync::atomic::Ordering::Relaxed) == armed {
                return;
            }
            let events = libc::EPOLLONESHOT as u32 | if armed { libc::EPOLLIN as u32 } else { 0 };
            if let Err(e) = self.ctl(libc::EPOLL_CTL_MOD, self.runtime_set, events, INPUT) {
                // Cannot happen with valid descriptors; the timer still covers the gap.
                tracing::debug!("arming the runtime's driver watch failed: {e}");
            }
        }

        pub(super) fn wait(&self, timeout: Option<Duration>) -> bool {
            let ms = match timeout {
                None => -1,
                // Rounded up: a wait never ends before its time.
                Some(t) => t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int,
            };
            let mut events = [libc::epoll_event { events: 0, u64: 0 }; 2];
            // SAFETY: `events` has room for the 2 entries we pass as its length.
            let n = unsafe { libc::epoll_wait(self.outer.as_raw_fd(), events.as_mut_ptr(), 2, ms) };
            let mut input = false;
            for ev in events.iter().take(n.max(0) as usize) {
                match ev.u64 {
                    BELL => {
                        let mut count: u64 = 0;
                        // SAFETY: reads 8 bytes into a live u64 from our non-blocking eventfd
                        // (resets the bell; EAGAIN if another read got it first, harmless).
                        unsafe {
                            libc::read(self.bell.as_raw_fd(), (&mut count as *mut u64).cast(), 8);
                        }
                    }
                    _ => {
                        // One-shot: the kernel disarmed it. (Racing an `arm`, this may only
                        // make the next `arm` repeat itself or a `disarm` be skipped: at worst
                        // a wake-up for nothing, never a missed one.)
                        self.armed
                            .store(false, std::sync::atomic::Ordering::Relaxed);
                        input = true
                    }
                }
            }
            input
        }
    }

    /// Whether `fd` is readable now (for an epoll set: events wait in it, unread).
    pub(super) fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        n == 1 && p.revents & libc::POLLIN != 0
    }

    /// The process's epoll descriptors (`/proc/self/fd` links to `anon_inode:[eventpoll]`).
    fn epoll_fds() -> Vec<RawFd> {
        let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
            return Vec::new();
        };
        dir.filter_map(|e| {
            let e = e.ok()?;
            let fd: RawFd = e.file_name().to_str()?.parse().ok()?;
            let link = std::fs::read_link(e.path()).ok()?;
            (link.as_os_str() == "anon_inode:[eventpoll]").then_some(fd)
        })
        .collect()
    }

    /// tokio's epoll descriptor for `rt`: the epoll set in which a socket registered with the
    /// runtime appears (`/proc/self/fdinfo` lists an epoll set's files as `tfd:` lines, with
    /// their descriptor number and inode: both must match, since another set may still list a
    /// closed descriptor's number for a file that lives on under another one). tokio holds two
    /// descriptors of that one set; either will do.
    fn find_runtime_set(rt: &Runtime) -> Option<RawFd> {
        use std::os::unix::fs::MetadataExt;
        let found = {
            let _in_runtime = rt.enter();
            let pair = tokio::net::UnixStream::pair().ok()?;
            let fd = pair.0.as_raw_fd();
            let ino = std::fs::metadata(format!("/proc/self/fd/{fd}")).ok()?.ino();
            let (fd, ino) = (fd.to_string(), format!("ino:{ino:x}"));
            epoll_fds().into_iter().find(|set| {
                std::fs::read_to_string(format!("/proc/self/fdinfo/{set}")).is_ok_and(|info| {
                    info.lines().any(|l| {
                        l.strip_prefix("tfd:").is_some_and(|rest| {
                            rest.split_whitespace().next() == Some(fd.as_str())
                                && rest.split_whitespace().any(|w| w == ino)
                        })
                    })
                })
            })
        };
        if found.is_none() {
            tracing::debug!(
                "the runtime's epoll set was not found: its driver watches its timer only"
            );
        }
        found
    }
}
