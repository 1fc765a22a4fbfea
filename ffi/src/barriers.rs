//! Barriers: DistributedBarrier and DistributedDoubleBarrier.

use std::ffi::c_char;

use zkrecipes::barriers::{DistributedBarrier, DistributedDoubleBarrier};

use crate::boundary::{arg_timeout, handle_call, handle_out, recipe_new, wait};
use crate::client::zkr_client;
use crate::handle::{free_handle, handle};
use crate::status::zkr_status;

/// Curator's DistributedBarrier: waiters block while the node at the barrier's path exists.
/// Thread-safe.
pub struct zkr_barrier {
    barrier: DistributedBarrier,
}

handle!(zkr_barrier, "barrier");

/// Makes a barrier on `path`. No server call is made yet. Free with zkr_barrier_free.
#[no_mangle]
pub extern "C" fn zkr_barrier_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_barrier,
) -> zkr_status {
    recipe_new("zkr_barrier_new", c, path, out, |c, path| {
        Ok(zkr_barrier {
            barrier: DistributedBarrier::new(c, path)?,
        })
    })
}

/// Sets the barrier (creates its node and persistent parents); already set is ZKR_OK.
#[no_mangle]
pub extern "C" fn zkr_barrier_set(b: *mut zkr_barrier) -> zkr_status {
    handle_call("zkr_barrier_set", b, |b| wait(b.barrier.set_barrier()))
}

/// Removes the barrier (deletes its node), releasing every waiter; not set is ZKR_OK.
#[no_mangle]
pub extern "C" fn zkr_barrier_remove(b: *mut zkr_barrier) -> zkr_status {
    handle_call("zkr_barrier_remove", b, |b| {
        wait(b.barrier.remove_barrier())
    })
}

/// Waits at most `timeout_ms` (-1: no limit; 0: look once) until the barrier is removed.
/// `*released` is true once a read showed the node gone, false if the timeout passed first.
/// A lost connection that does not come back under the retry policy is a connection error.
#[no_mangle]
pub extern "C" fn zkr_barrier_wait(
    b: *mut zkr_barrier,
    timeout_ms: i64,
    released: *mut bool,
) -> zkr_status {
    handle_out("zkr_barrier_wait", b, released, "released", |b| {
        wait(b.barrier.wait_on_barrier(arg_timeout(timeout_ms)?))
    })
}

/// Frees a barrier handle (the barrier node is left as it is). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_barrier_free(b: *mut zkr_barrier) {
    free_handle("zkr_barrier_free", b)
}

/// Curator's DistributedDoubleBarrier: one member; members enter together once `member_qty`
/// have arrived (a threshold, not a limit) and leave together. Thread-safe.
pub struct zkr_double_barrier {
    barrier: DistributedDoubleBarrier,
}

handle!(zkr_double_barrier, "double_barrier");

/// Makes a member of the double barrier on `path` for `member_qty` (>= 1) members. No server
/// call is made yet. Free with zkr_double_barrier_free.
#[no_mangle]
pub extern "C" fn zkr_double_barrier_new(
    c: *mut zkr_client,
    path: *const c_char,
    member_qty: u32,
    out: *mut *mut zkr_double_barrier,
) -> zkr_status {
    recipe_new("zkr_double_barrier_new", c, path, out, |c, path| {
        Ok(zkr_double_barrier {
            barrier: DistributedDoubleBarrier::new(c, path, member_qty as usize)?,
        })
    })
}

/// Enters, waiting at most `timeout_ms` (-1: no limit) until `member_qty` members are in.
/// `*entered` is true once a read showed the barrier open; false on timeout (this member's node
/// is deleted again). Entering twice is the same membership: a member already in stays in,
/// whatever entering again answers (a timeout or an error does not take it out).
#[no_mangle]
pub extern "C" fn zkr_double_barrier_enter(
    b: *mut zkr_double_barrier,
    timeout_ms: i64,
    entered: *mut bool,
) -> zkr_status {
    handle_out("zkr_double_barrier_enter", b, entered, "entered", |b| {
        wait(b.barrier.enter(arg_timeout(timeout_ms)?))
    })
}

/// Leaves, waiting at most `timeout_ms` (-1: no limit) until every member has left. `*left` is
/// true once a read showed no member; false on timeout (this member's node is gone either way).
#[no_mangle]
pub extern "C" fn zkr_double_barrier_leave(
    b: *mut zkr_double_barrier,
    timeout_ms: i64,
    left: *mut bool,
) -> zkr_status {
    handle_out("zkr_double_barrier_leave", b, left, "left", |b| {
        wait(b.barrier.leave(arg_timeout(timeout_ms)?))
    })
}

/// Frees a member handle (its node goes with the session, or with zkr_double_barrier_leave).
/// NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_double_barrier_free(b: *mut zkr_double_barrier) {
    free_handle("zkr_double_barrier_free", b)
}
