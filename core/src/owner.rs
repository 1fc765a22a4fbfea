//! Owners: who holds a lock. Curator ties reentrancy to a Java thread; we tie it to an
//! [`Owner`], an opaque 64-bit value. Faces map their own notion (thread, asyncio task,
//! async context, explicit handle) onto owners.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(1);

/// An opaque owner identity. Two owners are the same exactly when their values are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner(u64);

thread_local! {
    static THREAD_OWNER: Cell<Owner> = Cell::new(Owner::new());
}

/// Runs `f` with an owner of its own as the calling thread's [`Owner::current_thread`], the
/// thread's own restored after. Every user callback the library runs on its pool threads (a
/// listener, a one-off call, a partition function) runs this way: those threads run the
/// callbacks of every client and recipe of the process one after another, so by thread a hold
/// taken in one callback and kept after it would let any later callback on that thread in as
/// a re-entry, and could be released by none of its own later calls except by chance.
pub(crate) fn as_own_owner<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(Owner);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = THREAD_OWNER.try_with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(THREAD_OWNER.with(|o| o.replace(Owner::new())));
    f()
}

impl Owner {
    /// A fresh owner, distinct from every other owner made in this process.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Owner {
        Owner(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The owner of the calling OS thread (the same value for the thread's whole life), except
    /// inside a callback the library runs on its own threads (a listener, a partition
    /// function): there each call is an owner of its own, so a lock it takes by thread must be
    /// released in that same call (or taken with an explicit owner).
    pub fn current_thread() -> Owner {
        THREAD_OWNER.with(Cell::get)
    }

    /// An owner from a value that a face manages itself (for example a JS async-context id
    /// mapped into its own range). Values made by [`Owner::new`] are small counters; faces that
    /// mint their own should set the top bit to stay clear of them.
    pub const fn from_raw(raw: u64) -> Owner {
        Owner(raw)
    }

    /// The raw value.
    pub const fn as_raw(self) -> u64 {
        self.0
    }
}
