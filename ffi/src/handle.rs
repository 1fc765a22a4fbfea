//! Handles: the opaque objects the library gives out (`zkr_client`, `zkr_mutex`, ...), with a
//! cheap check against use after free, double free and the wrong type.
//!
//! A handle is a heap block that starts with a tag naming its type; the C pointer points at
//! that block. Every call on a handle compares the tag (one load and a compare) before
//! touching anything else, and `_free` clears it before tearing the value down. So a call on a
//! freed handle, a second `_free`, or a `zkr_semaphore *` passed as a `zkr_mutex *` is
//! `ZKR_INVALID_ARGUMENT` ("handle already freed or not a zkr_mutex") instead of memory
//! corruption.
//!
//! After `fork()`, a handle the parent made is closed in the child: every call on it is
//! `ZKR_CLOSED`, and its `_free` leaves it (the parent's session and holds are not touched).
//!
//! Limits: a freed block is not given back to the allocator at once. The last [`QUARANTINE`]
//! freed blocks are kept (their value dropped, only the tag left), so misuse of any of them is
//! always caught, under ASan and valgrind too. An older freed block has gone back to the
//! allocator and may hold anything by now, even another live handle of the same type: using it
//! is undefined behaviour, as in any C library, although the check still catches it in most
//! cases. Pointers the library never returned are not detected reliably either.

use std::collections::VecDeque;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use zkrecipes::{Error, Result};

use crate::boundary::{ffi_boundary, non_null};
use crate::status::set_last_error;

/// How many freed handle blocks are kept for the check (each a few dozen bytes).
pub(crate) const QUARANTINE: usize = 1024;

/// A type the library hands out as an opaque pointer.
pub(crate) trait Handle: Sized + Send + Sync + 'static {
    /// The C type's name, "zkr_mutex".
    const NAME: &'static str;
    /// How the argument is named in messages ("mutex is NULL").
    const ARG: &'static str;
    /// The tag of live handles of this type, derived from the name.
    const TAG: u64 = tag_of(Self::NAME);

    /// Called by `_free` before the value is dropped: unregister callbacks, close.
    fn before_free(&self) {}
}

/// `impl Handle` for a handle type: its C name is the type's name; `$arg` names the argument in
/// messages; the optional block runs in `_free` before the value is dropped, with `$h` bound to
/// the handle.
macro_rules! handle {
    ($t:ident, $arg:literal) => {
        handle!($t, $arg, |_h| {});
    };
    ($t:ident, $arg:literal, |$h:ident| $before_free:block) => {
        impl $crate::handle::Handle for $t {
            const NAME: &'static str = stringify!($t);
            const ARG: &'static str = $arg;

            fn before_free(&self) {
                let $h = self;
                $before_free
            }
        }
    };
}
pub(crate) use handle;

/// What the C pointer points at.
#[repr(C)]
struct Block<T> {
    tag: AtomicU64,
    /// The process that made it: after `fork()` the child's copy of a parent's handle is closed
    /// to the child (a copied hold would look held and valid in both processes, and a copied
    /// client would end the parent's session when closed or freed).
    pid: u32,
    value: ManuallyDrop<T>,
}

/// The tag of a freed handle (never a type's tag: those are odd).
const FREED: u64 = 0xfee0_fee0_fee0_fee0;

/// FNV-1a of the name, made odd (so never 0 and never [`FREED`]).
const fn tag_of(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash | 1
}

/// A new handle owning `value`, for the C caller.
pub(crate) fn new_handle<T: Handle>(value: T) -> *mut T {
    let block = Box::new(Block {
        tag: AtomicU64::new(T::TAG),
        pid: zkrecipes::runtime::process_id(),
        value: ManuallyDrop::new(value),
    });
    Box::into_raw(block).cast()
}

fn stale<T: Handle>() -> Error {
    Error::InvalidArgument(
        format!(
            "{} is not a live {}: the handle was already freed, or is not a {}",
            T::ARG,
            T::NAME,
            T::NAME
        )
        .into(),
    )
}

/// The handle behind a C pointer, if it is one of type `T` that was not freed: the one checked
/// cast of the C face, every export's way to its handle.
pub(crate) fn handle_ref<'a, T: Handle>(ptr: *const T) -> Result<&'a T> {
    let block = non_null(ptr, T::ARG)?.cast::<Block<T>>();
    // SAFETY: by the C caller's contract 1 (`boundary`), `ptr` came from `new_handle` for some
    // handle type: a block live or in quarantine (never deallocated there), so its tag is
    // readable; the tag says whether the value behind it is a live `T`.
    let block = unsafe { block.as_ref() };
    if block.tag.load(Ordering::Acquire) != T::TAG {
        return Err(stale::<T>());
    }
    if block.pid != zkrecipes::runtime::process_id() {
        return Err(forked::<T>());
    }
    Ok(&block.value)
}

fn forked<T: Handle>() -> Error {
    Error::Closed(
        format!(
            "this {} was made by the parent process before fork(): it is closed in the child \
             (make a new client and recipes there)",
            T::NAME
        )
        .into(),
    )
}

/// `_free`: NULL does nothing; a freed or foreign handle records the error (for
/// zkr_last_error_message) and does nothing; otherwise the handle is torn down. By the header's
/// rule for `_free`, no other call on the handle is running, except its callbacks: the one this
/// may be called from, and running ones that `before_free` waits for after closing the handle.
pub(crate) fn free_handle<T: Handle>(function: &str, ptr: *mut T) {
    ffi_boundary(function, (), || {
        let Some(p) = NonNull::new(ptr) else { return };
        let block = p.cast::<Block<T>>();
        // SAFETY: as in `handle_ref`: a block from `new_handle`, its tag readable.
        let tag = unsafe { &block.as_ref().tag };
        if tag
            .compare_exchange(T::TAG, FREED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            set_last_error(&format!(
                "{function}: {} (ZKR_INVALID_ARGUMENT)",
                stale::<T>().message()
            ));
            return;
        }
        // SAFETY: as above; the block stays allocated.
        if unsafe { block.as_ref().pid } != zkrecipes::runtime::process_id() {
            // A forked child's copy of the parent's handle: nothing of it is torn down here
            // (closing the copied client would end the parent's session); the copy is left.
            return;
        }
        // SAFETY: the live block of a `T`; winning the exchange makes this the only `_free`.
        // A shared borrow: a callback of the handle may still be running, holding its own
        // (`before_free` closes the handle, then waits for its callbacks to return).
        let value = unsafe { &(*block.as_ptr()).value };
        value.before_free();
        // SAFETY: every callback has returned and, by the contract, no other call uses the
        // value now: the only borrow; dropped once (the tag is FREED, so no call reaches it).
        unsafe { ManuallyDrop::drop(&mut (*block.as_ptr()).value) };
        quarantine(block);
    })
}

/// A freed block waiting to go back to the allocator.
struct Freed {
    block: NonNull<u8>,
    dealloc: unsafe fn(NonNull<u8>),
}

// SAFETY: a freed block holds only its tag (the value was dropped); deallocating it from any
// thread is fine.
unsafe impl Send for Freed {}

static FREED_BLOCKS: Mutex<VecDeque<Freed>> = Mutex::new(VecDeque::new());

fn quarantine<T: Handle>(block: NonNull<Block<T>>) {
    /// # Safety
    /// `block` is a `Block<T>` from `new_handle` whose value was dropped.
    unsafe fn dealloc<T>(block: NonNull<u8>) {
        // SAFETY: this function's contract; `ManuallyDrop` keeps the value from a second drop.
        drop(unsafe { Box::from_raw(block.cast::<Block<T>>().as_ptr()) });
    }
    let evicted = {
        let mut freed = FREED_BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
        freed.push_back(Freed {
            block: block.cast(),
            dealloc: dealloc::<T>,
        });
        if freed.len() > QUARANTINE {
            freed.pop_front()
        } else {
            None
        }
    };
    if let Some(old) = evicted {
        // SAFETY: queued above with its own type's `dealloc`, value dropped, and out of the
        // queue now, so deallocated once.
        unsafe { (old.dealloc)(old.block) };
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    use super::*;

    #[derive(Debug)]
    struct Probe(Arc<AtomicUsize>);
    impl Handle for Probe {
        const NAME: &'static str = "zkr_probe";
        const ARG: &'static str = "probe";
        fn before_free(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    impl Drop for Probe {
        fn drop(&mut self) {
            self.0.fetch_add(10, Ordering::SeqCst);
        }
    }

    struct Other;
    impl Handle for Other {
        const NAME: &'static str = "zkr_other";
        const ARG: &'static str = "other";
    }

    #[test]
    fn a_freed_or_foreign_handle_is_refused_and_freed_once() {
        let count = Arc::new(AtomicUsize::new(0));
        let p = new_handle(Probe(count.clone()));
        assert!(handle_ref(p).is_ok());
        free_handle("zkr_probe_free", p);
        assert_eq!(
            count.load(Ordering::SeqCst),
            11,
            "before_free, then one drop"
        );
        // Freed, but quarantined: its tag is still readable.
        let e = handle_ref(p).unwrap_err();
        assert!(e.message().contains("already freed"), "{e}");
        // A second free is refused and drops nothing.
        free_handle("zkr_probe_free", p);
        assert_eq!(count.load(Ordering::SeqCst), 11);
        let o = new_handle(Other);
        // A live handle of another type: the tag differs.
        let e = handle_ref::<Probe>(o.cast()).unwrap_err();
        assert!(e.message().contains("not a zkr_probe"), "{e}");
        free_handle("zkr_other_free", o);
        free_handle::<Probe>("zkr_probe_free", std::ptr::null_mut());
    }

    #[test]
    fn tags_differ_per_type_and_from_freed() {
        assert_ne!(Probe::TAG, Other::TAG);
        assert_ne!(Probe::TAG, FREED);
        assert_eq!(Probe::TAG & 1, 1);
    }
}
