//! The lock family's other members: InterProcessSemaphoreMutex, InterProcessSemaphoreV2 (with
//! its leases) and InterProcessMultiLock. The mutex and the read/write lock are in `lock.rs`,
//! with what every lock handle shares.

use std::ffi::{c_char, CString};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, OnceLock};
use std::task::Poll;

use zkrecipes::lock::{
    InterProcessLock, InterProcessMultiLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2,
    Lease, LeaseLost,
};
use zkrecipes::Error;

use crate::atomic::zkr_shared_count;
use crate::boundary::{
    arg_out, arg_out_opt, arg_slice, arg_str, arg_timeout, ffi_boundary, ffi_call, handle_call,
    handle_out, recipe_new, wait,
};
use crate::callback::lock;
use crate::client::{zkr_client, zkr_connection_state};
use crate::handle::{free_handle, handle, handle_ref, new_handle};
use crate::lock::{
    acquire, acquired_here, lock_handle, lost_policy, release, zkr_lock_lost_policy, LockHandle,
};
use crate::status::zkr_status;
use crate::types::{thread_owner, zkr_owner, zkr_string_list};
use crate::vocab::CList;

// ---------------------------------------------------------------------------------------------
// InterProcessSemaphoreMutex

/// Curator's InterProcessSemaphoreMutex: a mutex that is NOT reentrant (a second acquire waits,
/// even from the same thread) and not owned: whoever holds the handle may release it, from any
/// thread. That is why it has no `_as` twins. Built on a one-lease semaphore (its layout).
pub struct zkr_semaphore_mutex {
    mutex: InterProcessSemaphoreMutex,
}

handle!(zkr_semaphore_mutex, "mutex");

lock_handle!(zkr_semaphore_mutex, mutex);

/// Makes a semaphore mutex on `path`. Free with zkr_semaphore_mutex_free.
#[no_mangle]
pub extern "C" fn zkr_semaphore_mutex_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_semaphore_mutex,
) -> zkr_status {
    recipe_new("zkr_semaphore_mutex_new", c, path, out, |c, path| {
        Ok(zkr_semaphore_mutex {
            mutex: InterProcessSemaphoreMutex::new(c, path)?,
        })
    })
}

/// Acquires, waiting at most `timeout_ms` (-1: forever); `*acquired` tells whether it was.
#[no_mangle]
pub extern "C" fn zkr_semaphore_mutex_acquire(
    m: *mut zkr_semaphore_mutex,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    acquire(
        "zkr_semaphore_mutex_acquire",
        m,
        thread_owner(),
        timeout_ms,
        acquired,
    )
}

/// Releases; ZKR_NOT_OWNER if this handle does not hold it.
#[no_mangle]
pub extern "C" fn zkr_semaphore_mutex_release(m: *mut zkr_semaphore_mutex) -> zkr_status {
    release("zkr_semaphore_mutex_release", m, thread_owner())
}

/// Whether this handle holds it.
#[no_mangle]
pub extern "C" fn zkr_semaphore_mutex_is_acquired_in_this_process(
    m: *const zkr_semaphore_mutex,
    acquired: *mut bool,
) -> zkr_status {
    acquired_here(
        "zkr_semaphore_mutex_is_acquired_in_this_process",
        m,
        acquired,
    )
}

/// Frees a semaphore mutex; a hold still held is returned in the background. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_semaphore_mutex_free(m: *mut zkr_semaphore_mutex) {
    free_handle("zkr_semaphore_mutex_free", m)
}

// ---------------------------------------------------------------------------------------------
// InterProcessSemaphoreV2

/// Curator's InterProcessSemaphoreV2: at most `max_leases` leases held at a time across every
/// process using the path. Thread-safe.
pub struct zkr_semaphore {
    semaphore: InterProcessSemaphoreV2,
}

handle!(zkr_semaphore, "semaphore");

/// Leases taken by zkr_semaphore_acquire. Return them with zkr_semaphore_return_leases, then
/// free the handle with zkr_leases_free (which returns, in the background, any lease still in it).
pub struct zkr_leases {
    leases: Mutex<Vec<Lease>>,
}

handle!(zkr_leases, "leases");

/// Makes a semaphore on `path` allowing `max_leases` (>= 1) leases at once. Free with
/// zkr_semaphore_free.
#[no_mangle]
pub extern "C" fn zkr_semaphore_new(
    c: *mut zkr_client,
    path: *const c_char,
    max_leases: u32,
    out: *mut *mut zkr_semaphore,
) -> zkr_status {
    recipe_new("zkr_semaphore_new", c, path, out, |c, path| {
        let semaphore = InterProcessSemaphoreV2::new(c, path, max_leases as usize)?;
        Ok(zkr_semaphore { semaphore })
    })
}

/// Makes a semaphore on `path` whose max leases are `count`'s value, read live (Curator's
/// constructor taking a SharedCountReader): raising the count lets waiters in at once; lowering
/// it takes no lease back but admits nobody until fewer than the new count are held (below 1:
/// nobody). Start the count (zkr_shared_count_start) to follow its changes. The semaphore reads
/// the count without owning its handle: after the count is closed or freed, its last value
/// stays the limit. Free with zkr_semaphore_free.
#[no_mangle]
pub extern "C" fn zkr_semaphore_new_with_count(
    c: *mut zkr_client,
    path: *const c_char,
    count: *const zkr_shared_count,
    out: *mut *mut zkr_semaphore,
) -> zkr_status {
    recipe_new("zkr_semaphore_new_with_count", c, path, out, |c, path| {
        let count = &handle_ref(count)?.count;
        let semaphore = InterProcessSemaphoreV2::with_count(c, path, count)?;
        Ok(zkr_semaphore { semaphore })
    })
}

/// Acquires `qty` (>= 1; more than a fixed max_leases is ZKR_INVALID_ARGUMENT at once, more than
/// a count's value waits, as the count may be raised) leases, all or nothing, waiting at most
/// `timeout_ms` (-1: forever). `*leases` receives them (free with
/// zkr_leases_free), or NULL if the timeout passed first (then none is held).
#[no_mangle]
pub extern "C" fn zkr_semaphore_acquire(
    s: *mut zkr_semaphore,
    qty: u32,
    timeout_ms: i64,
    leases: *mut *mut zkr_leases,
) -> zkr_status {
    handle_out("zkr_semaphore_acquire", s, leases, "leases", |s| {
        let timeout = arg_timeout(timeout_ms)?;
        let got = wait(s.semaphore.acquire(qty as usize, timeout))?;
        Ok(got.map_or(std::ptr::null_mut(), |leases| {
            new_handle(zkr_leases {
                leases: Mutex::new(leases),
            })
        }))
    })
}

/// Returns every lease still in `leases` (deleting their nodes). The handle stays valid (and
/// empty) until zkr_leases_free; returning an empty set is ZKR_OK. On failure the first error is
/// reported after trying them all.
#[no_mangle]
pub extern "C" fn zkr_semaphore_return_leases(
    s: *mut zkr_semaphore,
    leases: *mut zkr_leases,
) -> zkr_status {
    handle_call("zkr_semaphore_return_leases", s, |s| {
        let taken = std::mem::take(&mut *lock(&handle_ref(leases)?.leases));
        wait(s.semaphore.return_all(taken))
    })
}

/// How many leases `leases` holds.
#[no_mangle]
pub extern "C" fn zkr_leases_count(leases: *const zkr_leases, count: *mut usize) -> zkr_status {
    handle_out("zkr_leases_count", leases, count, "count", |l| {
        Ok(lock(&l.leases).len())
    })
}

/// The lease nodes' paths, in `*paths` (free with zkr_string_list_free).
#[no_mangle]
pub extern "C" fn zkr_leases_paths(
    leases: *const zkr_leases,
    paths: *mut *mut zkr_string_list,
) -> zkr_status {
    handle_out("zkr_leases_paths", leases, paths, "paths", |l| {
        zkr_string_list::from_vec(
            lock(&l.leases)
                .iter()
                .map(|x| x.path().to_string())
                .collect(),
        )
    })
}

/// Why a lease of a set can no longer be counted on (zkr_leases_wait_lost): ZKR_LEASE_LOST_NONE
/// when the timeout passed first, else the kind of the core's LeaseLost (names:
/// zkr_lease_lost_name).
pub type zkr_lease_lost = u32;
/// Not lost: the timeout passed first.
pub const ZKR_LEASE_LOST_NONE: zkr_lease_lost = 0;
/// The connection entered a state the lost policy counts as a loss (`*state` says which:
/// ZKR_STATE_SUSPENDED under ZKR_LOCK_LOST_ON_SUSPENDED, ZKR_STATE_LOST under both).
pub const ZKR_LEASE_LOST_STATE: zkr_lease_lost = 1;
/// The client was closed.
pub const ZKR_LEASE_LOST_CLOSED: zkr_lease_lost = 2;
/// The client's session is another than the one that made the lease: the lease node went with
/// the old one.
pub const ZKR_LEASE_LOST_SESSION_CHANGED: zkr_lease_lost = 3;
/// The lease node is gone, or belongs to another session.
pub const ZKR_LEASE_LOST_NODE_GONE: zkr_lease_lost = 4;

/// The kinds of a lost lease as C numbers: the core's names (`LeaseLost::KINDS`) from 1, after
/// ZKR_LEASE_LOST_NONE.
pub(crate) const LEASE_LOST_KINDS: CList<&'static str> = CList {
    all: LeaseLost::KINDS,
    first: ZKR_LEASE_LOST_STATE,
    prefix: "ZKR_LEASE_LOST_",
    name: std::convert::identity,
};

type LostSignal = Pin<Box<dyn Future<Output = LeaseLost> + Send>>;

/// The first of `signals` to resolve (the first in set order when several are ready).
async fn any_lost(mut signals: Vec<LostSignal>) -> LeaseLost {
    std::future::poll_fn(move |cx| {
        for signal in &mut signals {
            if let Poll::Ready(why) = signal.as_mut().poll(cx) {
                return Poll::Ready(why);
            }
        }
        Poll::Pending
    })
    .await
}

/// Blocks until any lease of `leases` can no longer be counted on, or `timeout_ms` passes (-1: no
/// limit; 0: looks once). `*reason` gets why (the core's Lease lost signal, for each lease of the
/// set): ZKR_LEASE_LOST_STATE (the connection entered a state `policy` counts as a loss:
/// ZKR_LOCK_LOST_ON_SUSPENDED, SUSPENDED or LOST; ZKR_LOCK_LOST_ON_SESSION_LOSS, LOST only),
/// ZKR_LEASE_LOST_CLOSED (the client was closed), ZKR_LEASE_LOST_SESSION_CHANGED (the client
/// runs on another session than the one that made the lease), ZKR_LEASE_LOST_NODE_GONE (a lease
/// node is gone or another session's; read once), or ZKR_LEASE_LOST_NONE when the timeout passed
/// first (ZKR_OK all the same). `state` may be NULL; it is written only with
/// ZKR_LEASE_LOST_STATE (the state that was the loss).
///
/// It never answers while the leases stay good; leases returned by zkr_semaphore_return_leases
/// during the wait do not end it. A set whose leases were all returned before the call is
/// ZKR_CLOSED. A bad `policy` or timeout is ZKR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn zkr_leases_wait_lost(
    leases: *const zkr_leases,
    policy: zkr_lock_lost_policy,
    timeout_ms: i64,
    reason: *mut zkr_lease_lost,
    state: *mut zkr_connection_state,
) -> zkr_status {
    ffi_call("zkr_leases_wait_lost", || {
        let (l, reason) = (handle_ref(leases)?, arg_out(reason, "reason")?);
        let state = arg_out_opt(state);
        let policy = lost_policy(policy, "ZKR_LOCK_LOST_*")?;
        let timeout = arg_timeout(timeout_ms)?;
        // The signals watch the connection from here on; the set is not locked while waiting.
        let signals: Vec<LostSignal> = lock(&l.leases)
            .iter()
            .map(|lease| Box::pin(lease.lost_signal(policy)) as LostSignal)
            .collect();
        if signals.is_empty() {
            return Err(Error::Closed(
                "every lease of the set was returned (a returned lease can no longer be lost)"
                    .into(),
            ));
        }
        let why =
            wait(async move { Ok(zkrecipes::timeout::within(timeout, any_lost(signals)).await) })?;
        let Some(why) = why else {
            reason.write(ZKR_LEASE_LOST_NONE);
            return Ok(());
        };
        if let (Some(out), Some(s)) = (state, why.state()) {
            out.write(zkr_connection_state::of(s));
        }
        reason.write(LEASE_LOST_KINDS.to_c(why.kind_name()));
        Ok(())
    })
}

/// The name of a zkr_lease_lost ("NONE", "STATE", "CLOSED", "SESSION_CHANGED", "NODE_GONE"), or
/// "UNKNOWN". A static string: never NULL, never freed.
#[no_mangle]
pub extern "C" fn zkr_lease_lost_name(reason: u32) -> *const c_char {
    ffi_boundary("zkr_lease_lost_name", c"UNKNOWN".as_ptr(), || {
        static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
        match reason {
            ZKR_LEASE_LOST_NONE => c"NONE".as_ptr(),
            _ => LEASE_LOST_KINDS
                .c_name(&NAMES, reason)
                .unwrap_or(c"UNKNOWN".as_ptr()),
        }
    })
}

/// Frees a lease set; leases still in it are returned in the background. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_leases_free(leases: *mut zkr_leases) {
    free_handle("zkr_leases_free", leases)
}

/// The lease nodes, as full paths in sequence order, in `*nodes` (free with
/// zkr_string_list_free).
#[no_mangle]
pub extern "C" fn zkr_semaphore_participant_nodes(
    s: *mut zkr_semaphore,
    nodes: *mut *mut zkr_string_list,
) -> zkr_status {
    handle_out("zkr_semaphore_participant_nodes", s, nodes, "nodes", |s| {
        zkr_string_list::from_vec(wait(s.semaphore.participant_nodes())?)
    })
}

/// Frees a semaphore handle (lease sets stay valid). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_semaphore_free(s: *mut zkr_semaphore) {
    free_handle("zkr_semaphore_free", s)
}

// ---------------------------------------------------------------------------------------------
// InterProcessMultiLock

/// Curator's InterProcessMultiLock: several InterProcessMutexes taken as one, in order, all or
/// nothing (a timeout or an error releases those already taken), released in reverse order.
/// Reentrant per owner like its mutexes. The timeout bounds the whole acquire.
pub struct zkr_multi_lock {
    lock: InterProcessMultiLock,
}

handle!(zkr_multi_lock, "multi_lock");

lock_handle!(zkr_multi_lock, lock);

/// Makes a multi lock over `count` mutex paths (at least one, no duplicates). Free with
/// zkr_multi_lock_free.
///
/// `paths` points to `count` NUL-terminated strings.
#[no_mangle]
pub extern "C" fn zkr_multi_lock_new(
    c: *mut zkr_client,
    paths: *const *const c_char,
    count: usize,
    out: *mut *mut zkr_multi_lock,
) -> zkr_status {
    handle_out("zkr_multi_lock_new", c, out, "out", |c| {
        // The slice first: it checks `count` before anything is sized by it.
        let paths = arg_slice(paths, count, "paths")?;
        let mut list = Vec::with_capacity(paths.len());
        for (i, p) in paths.iter().enumerate() {
            list.push(arg_str(*p, &format!("paths[{i}]"))?);
        }
        let lock = InterProcessMultiLock::new(&c.client, &list)?;
        Ok(new_handle(zkr_multi_lock { lock }))
    })
}

/// Acquires every lock for the calling thread within `timeout_ms` (-1: forever); `*acquired`
/// tells whether all were (if not, none is held). A lock taken early whose hold was lost while
/// the others were awaited (its session ended: another process may hold it now; or, with the
/// standard lost policy, the connection was suspended) is not answered as held: everything is released and the status is that lock's (ZKR_SESSION_EXPIRED,
/// ZKR_CONNECTION_LOSS or ZKR_CLOSED).
#[no_mangle]
pub extern "C" fn zkr_multi_lock_acquire(
    m: *mut zkr_multi_lock,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    acquire(
        "zkr_multi_lock_acquire",
        m,
        thread_owner(),
        timeout_ms,
        acquired,
    )
}

/// zkr_multi_lock_acquire for an explicit owner.
#[no_mangle]
pub extern "C" fn zkr_multi_lock_acquire_as(
    m: *mut zkr_multi_lock,
    owner: zkr_owner,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    acquire(
        "zkr_multi_lock_acquire_as",
        m,
        owner.to_core(),
        timeout_ms,
        acquired,
    )
}

/// Releases every lock (reverse order) for the calling thread; tries them all and reports the
/// first error (ZKR_NOT_OWNER if this thread holds none).
#[no_mangle]
pub extern "C" fn zkr_multi_lock_release(m: *mut zkr_multi_lock) -> zkr_status {
    release("zkr_multi_lock_release", m, thread_owner())
}

/// zkr_multi_lock_release for an explicit owner.
#[no_mangle]
pub extern "C" fn zkr_multi_lock_release_as(
    m: *mut zkr_multi_lock,
    owner: zkr_owner,
) -> zkr_status {
    release("zkr_multi_lock_release_as", m, owner.to_core())
}

/// Whether every lock is held in this process.
#[no_mangle]
pub extern "C" fn zkr_multi_lock_is_acquired_in_this_process(
    m: *const zkr_multi_lock,
    acquired: *mut bool,
) -> zkr_status {
    acquired_here("zkr_multi_lock_is_acquired_in_this_process", m, acquired)
}

/// Frees a multi lock handle (holds still held are not released; see zkr_mutex_free). NULL does
/// nothing.
#[no_mangle]
pub extern "C" fn zkr_multi_lock_free(m: *mut zkr_multi_lock) {
    free_handle("zkr_multi_lock_free", m)
}
