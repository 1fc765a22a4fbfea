//! [`PerProcess`]: a value built once per process and read without a lock, which a child made
//! by `fork()` never locks, drops or uses: it builds its own.
//!
//! A `static Mutex` is not fork-safe: if another thread held it at the instant of the fork,
//! the child inherits it locked with no thread to unlock it, and its first call hangs forever.
//! The runtime and the lock recipes' delay line are reached on every call, so a fork in a
//! threaded program could land in such a window.

use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use super::process_id;

struct Slot<T> {
    pid: u32,
    value: T,
}

/// A value built once per process (see the module docs). Meant to be a `static`; each value
/// lives as long as its process (a parent's is leaked in the child, never dropped there).
pub(crate) struct PerProcess<T: 'static> {
    current: AtomicPtr<Slot<T>>,
    /// The process one of whose threads builds the value now (0: none). A parent's claim seen
    /// in a child is stale: its builder does not exist there.
    building: AtomicU32,
}

impl<T: Send + Sync + 'static> PerProcess<T> {
    pub(crate) const fn new() -> PerProcess<T> {
        PerProcess {
            current: AtomicPtr::new(std::ptr::null_mut()),
            building: AtomicU32::new(0),
        }
    }

    /// This process's value, built by `init` on first use in the process (by one thread; the
    /// others wait for it).
    pub(crate) fn get_or_init(&'static self, init: impl FnOnce() -> T) -> &'static T {
        let pid = process_id();
        let mut init = Some(init);
        loop {
            if let Some(value) = self.here(pid) {
                return value;
            }
            let claimed = self.building.load(Ordering::Acquire);
            if claimed == pid {
                // Another thread of this process is building it.
                std::thread::yield_now();
                continue;
            }
            if self
                .building
                .compare_exchange(claimed, pid, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            /// Gives the claim back, also if `init` panics (another thread may try then).
            struct Claim<'a>(&'a AtomicU32);
            impl Drop for Claim<'_> {
                fn drop(&mut self) {
                    self.0.store(0, Ordering::Release);
                }
            }
            let _claim = Claim(&self.building);
            if let Some(value) = self.here(pid) {
                return value;
            }
            let build = init.take().expect("built once per call");
            let slot: &'static Slot<T> = Box::leak(Box::new(Slot {
                pid,
                value: build(),
            }));
            // The slot it replaces (if any) is a parent's: leaked, as documented.
            self.current
                .store(slot as *const Slot<T> as *mut Slot<T>, Ordering::Release);
            return &slot.value;
        }
    }

    fn here(&'static self, pid: u32) -> Option<&'static T> {
        // SAFETY: a non-null pointer is a leaked `Slot`, never freed.
        let slot = unsafe { self.current.load(Ordering::Acquire).as_ref() }?;
        (slot.pid == pid).then_some(&slot.value)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Many threads asking at once get the one value, built once.
    #[test]
    fn one_value_per_process_built_once() {
        static BUILT: AtomicU32 = AtomicU32::new(0);
        static VALUE: PerProcess<u64> = PerProcess::new();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(|| {
                    *VALUE.get_or_init(|| {
                        BUILT.fetch_add(1, Ordering::SeqCst);
                        std::thread::yield_now();
                        42
                    }) as *const u64 as usize
                })
            })
            .collect();
        let addresses: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(addresses.windows(2).all(|w| w[0] == w[1]), "one value");
        assert_eq!(BUILT.load(Ordering::SeqCst), 1, "built once");
    }

    /// A child forked while another thread holds the value's lock gets a value of its own and
    /// never touches the parent's (its lock stays held in the child: locking it would hang).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_forked_child_builds_its_own_value() {
        static VALUE: PerProcess<Mutex<u32>> = PerProcess::new();
        let parent = VALUE.get_or_init(|| Mutex::new(process_id()));
        let held = parent.lock().unwrap();
        assert!(
            crate::runtime::in_forked_child(|| {
                let own = VALUE.get_or_init(|| Mutex::new(process_id()));
                !std::ptr::eq(own, parent)
                    && own.try_lock().map(|v| *v == process_id()).unwrap_or(false)
            }),
            "the child did not get a value of its own"
        );
        drop(held);
        assert!(std::ptr::eq(VALUE.get_or_init(|| Mutex::new(0)), parent));
    }
}
