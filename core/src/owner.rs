//! Owners: who holds a lock. Curator ties reentrancy to a Java thread; we tie it to an
//! [`Owner`], an opaque 64-bit value. Faces map their own notion (thread, asyncio task,
//! async context, explicit handle) onto owners.

use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(1);

/// An opaque owner identity. Two owners are the same exactly when their values are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner(u64);

thread_local! {
    static THREAD_OWNER: Owner = Owner::new();
}

impl Owner {
    /// A fresh owner, distinct from every other owner made in this process.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Owner {
        Owner(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The owner of the calling OS thread (the same value for the thread's whole life).
    pub fn current_thread() -> Owner {
        THREAD_OWNER.with(|o| *o)
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
