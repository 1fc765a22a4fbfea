//! The lock family: InterProcessMutex (and the read/write lock's halves, which are mutexes),
//! the semaphores and the multi lock.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Weak};
use std::time::Duration;

use zkrecipes::lock::{
    CohortOptions, FencingToken, InterProcessLock, InterProcessMutex, InterProcessReadWriteLock,
};
use zkrecipes::{Error, ListenerId, LostPolicy, Owner, Result};

use crate::boundary::{arg_out, arg_str, arg_timeout, handle_call, handle_out, recipe_new, wait};
use crate::callback::{Slot, UserData};
use crate::client::zkr_client;
use crate::handle::{free_handle, handle, new_handle, Handle};
use crate::status::zkr_status;
use crate::types::{thread_owner, zkr_owner, zkr_string_list};

// ---------------------------------------------------------------------------------------------
// What the lock handles share

/// A handle whose lock is one of Curator's InterProcessLock family.
pub(crate) trait LockHandle: Handle {
    fn lock(&self) -> &dyn InterProcessLock;
}

/// `impl LockHandle` for a handle whose lock is its field `$field`.
macro_rules! lock_handle {
    ($t:ident, $field:ident) => {
        impl LockHandle for $t {
            fn lock(&self) -> &dyn InterProcessLock {
                &self.$field
            }
        }
    };
}
pub(crate) use lock_handle;

/// acquire / acquire_as of every lock handle.
pub(crate) fn acquire<H: LockHandle>(
    function: &str,
    h: *mut H,
    owner: Result<Owner>,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    handle_out(function, h, acquired, "acquired", |h| {
        let (owner, timeout) = (owner?, arg_timeout(timeout_ms)?);
        wait(h.lock().acquire(owner, timeout))
    })
}

/// release / release_as of every lock handle.
pub(crate) fn release<H: LockHandle>(
    function: &str,
    h: *mut H,
    owner: Result<Owner>,
) -> zkr_status {
    handle_call(function, h, |h| wait(h.lock().release(owner?)))
}

/// is_acquired_in_this_process of every lock handle.
pub(crate) fn acquired_here<H: LockHandle>(
    function: &str,
    h: *const H,
    acquired: *mut bool,
) -> zkr_status {
    handle_out(function, h, acquired, "acquired", |h| {
        Ok(h.lock().is_acquired_in_this_process())
    })
}

/// When a hold or a leadership counts as lost (Curator's ConnectionStateErrorPolicy), for
/// zkr_mutex_set_lost_policy and the leader recipes.
pub(crate) fn lost_policy(policy: u32, what: &str) -> Result<LostPolicy> {
    match policy {
        0 => Ok(LostPolicy::Standard),
        1 => Ok(LostPolicy::Session),
        other => Err(Error::InvalidArgument(
            format!("lost policy {other} is not a {what} value").into(),
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// InterProcessMutex

/// Called when a hold of a lock is lost: the connection went SUSPENDED or LOST (per the lock's
/// lost policy), the lock node was deleted by someone else (noticed once the hold has lasted
/// 100 ms: the holder's watch on its node is set then), or the client was closed. `owner` is
/// the owner whose hold was lost; it should stop trusting the lock and release it (the release
/// then succeeds). It runs on a library thread (never one of the library's async workers, and
/// as an owner of its own: see zkr_owner), one call at a time with this lock's other callbacks; any zkr_
/// function may be called inside, including a release with zkr_mutex_release_as. It must not
/// throw (C++) or longjmp out.
pub type zkr_lock_lost_callback =
    Option<unsafe extern "C" fn(owner: zkr_owner, user_data: *mut c_void)>;

/// When a hold counts as lost (Curator's ConnectionStateErrorPolicy).
pub type zkr_lock_lost_policy = u32;
/// Lost as soon as the connection is SUSPENDED or LOST (the default; the safe choice).
pub const ZKR_LOCK_LOST_ON_SUSPENDED: zkr_lock_lost_policy = 0;
/// Lost only when the session is LOST; a SUSPENDED connection that comes back keeps the hold.
pub const ZKR_LOCK_LOST_ON_SESSION_LOSS: zkr_lock_lost_policy = 1;

/// Called when another process asks this owner to give up its hold (Curator's revocation: it
/// wrote `__REVOKE__` into our lock node with zkr_lock_attempt_revoke). Revocation is
/// cooperative: the owner decides whether to release (with zkr_mutex_release_as(m, owner)). Runs
/// like zkr_lock_lost_callback. It must not throw (C++) or longjmp out.
pub type zkr_revoke_callback =
    Option<unsafe extern "C" fn(owner: zkr_owner, user_data: *mut c_void)>;

/// Curator's InterProcessMutex: a reentrant mutex shared by every process (C, Python, Node,
/// Rust, Java/Curator) that uses the same path. Reentrant per owner: the same owner may acquire
/// again and must release as many times; other owners contend, in this process too. Thread-safe:
/// one handle may be used by many threads at once (each thread is its own owner).
pub struct zkr_mutex {
    mutex: InterProcessMutex,
    lost: Arc<Slot<zkr_lock_lost_callback>>,
    revoke: Arc<Slot<zkr_revoke_callback>>,
    lost_listener: ListenerId,
}

handle!(zkr_mutex, "mutex", |m| {
    let _ = m.mutex.remove_lost_listener(m.lost_listener); // our own id
    m.lost.set(None, UserData(std::ptr::null_mut()));
    m.revoke.set(None, UserData(std::ptr::null_mut()));
});

lock_handle!(zkr_mutex, mutex);

/// A core listener calling a slot's C callback with the owner; weak, so that the slot of a freed
/// handle is simply gone.
fn owner_listener(
    slot: &Arc<Slot<zkr_lock_lost_callback>>,
) -> impl Fn(Owner) + Send + Sync + 'static {
    let slot: Weak<Slot<zkr_lock_lost_callback>> = Arc::downgrade(slot);
    move |owner| {
        if let Some(s) = slot.upgrade() {
            s.fire((zkr_owner::from(owner),));
        }
    }
}

impl zkr_mutex {
    fn new(mutex: InterProcessMutex) -> zkr_mutex {
        let lost = Arc::new(Slot::new());
        let lost_listener = mutex.on_lost(owner_listener(&lost));
        zkr_mutex {
            mutex,
            lost,
            revoke: Arc::new(Slot::new()),
            lost_listener,
        }
    }
}

/// Makes a mutex on `path` (an absolute ZooKeeper path; lock nodes are created under it). No
/// server call is made yet. Free with zkr_mutex_free.
#[no_mangle]
pub extern "C" fn zkr_mutex_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_mutex,
) -> zkr_status {
    recipe_new("zkr_mutex_new", c, path, out, |c, path| {
        Ok(zkr_mutex::new(InterProcessMutex::new(c, path)?))
    })
}

/// The cohort options of zkr_mutex_new_cohort, checked.
fn cohort_options(max_handoffs: u32, max_hold_ms: i64) -> Result<CohortOptions> {
    if max_handoffs == 0 {
        return Err(Error::InvalidArgument(
            "max_handoffs is 0; it must be at least 1 (zkr_mutex_new makes a mutex without handoffs)"
                .into(),
        ));
    }
    if max_hold_ms < 0 {
        return Err(Error::InvalidArgument(
            format!("max_hold_ms is {max_hold_ms}; it must not be negative").into(),
        ));
    }
    Ok(CohortOptions {
        max_handoffs,
        max_hold: Duration::from_millis(max_hold_ms as u64),
    })
}

/// Makes a mutex on `path` with cohort handoffs: the owners (threads, or explicit owners) that
/// acquire through THIS handle queue in memory behind the handle's one lock node, and a release
/// hands the hold to the next of them without a round trip to ZooKeeper. To other processes the
/// handle is one contender with one node, so mutual exclusion across processes (Curator's, on
/// the same path) is exactly zkr_mutex_new's, and inside the process one owner holds at a time.
///
/// Fairness bound: a node is handed over locally at most `max_handoffs` (>= 1) times, and for at
/// most `max_hold_ms` (>= 0) milliseconds since it was granted; then, if another contender
/// waits on the path, the node is released and the local owners queue again behind it (with
/// nobody else waiting the budget starts over). The core's defaults are 64 and 20 ms.
///
/// The plain fencing token (the node's czxid) is shared by the local holders of one node: fence
/// with zkr_mutex_fencing_token_wide. Every other zkr_mutex_* call works per owner as usual;
/// zkr_mutex_make_revocable is ZKR_INVALID_ARGUMENT on such a handle. Handles made by
/// zkr_rwlock_read_lock / zkr_rwlock_write_lock never have handoffs.
///
/// ZKR_INVALID_ARGUMENT for `max_handoffs` 0 or a negative `max_hold_ms`, besides what
/// zkr_mutex_new refuses. No server call is made yet. Free with zkr_mutex_free.
#[no_mangle]
pub extern "C" fn zkr_mutex_new_cohort(
    c: *mut zkr_client,
    path: *const c_char,
    max_handoffs: u32,
    max_hold_ms: i64,
    out: *mut *mut zkr_mutex,
) -> zkr_status {
    recipe_new("zkr_mutex_new_cohort", c, path, out, |c, path| {
        let options = cohort_options(max_handoffs, max_hold_ms)?;
        let mutex = InterProcessMutex::new(c, path)?.with_cohort(options)?;
        Ok(zkr_mutex::new(mutex))
    })
}

/// Acquires the mutex for the calling thread, waiting at most `timeout_ms` (-1: forever; 0: try
/// once). `*acquired` tells whether it was acquired (false: timed out). A re-entry by the same
/// thread returns at once. A timed-out acquire leaves no node behind.
///
/// Errors: ZKR_CLOSED (client closed, also while waiting), connection errors once the retry
/// policy gives up, and for a re-entry of a hold that was lost, the error that lost it.
#[no_mangle]
pub extern "C" fn zkr_mutex_acquire(
    m: *mut zkr_mutex,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    acquire("zkr_mutex_acquire", m, thread_owner(), timeout_ms, acquired)
}

/// zkr_mutex_acquire for an explicit owner.
#[no_mangle]
pub extern "C" fn zkr_mutex_acquire_as(
    m: *mut zkr_mutex,
    owner: zkr_owner,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    acquire(
        "zkr_mutex_acquire_as",
        m,
        owner.to_core(),
        timeout_ms,
        acquired,
    )
}

/// Releases one acquire of the calling thread; the last one deletes the lock node.
/// ZKR_NOT_OWNER if this thread does not hold the mutex (a release never goes below zero);
/// ZKR_CLOSED if the client was closed meanwhile (the node went with the session). Releasing a
/// hold that was reported lost is ZKR_OK.
#[no_mangle]
pub extern "C" fn zkr_mutex_release(m: *mut zkr_mutex) -> zkr_status {
    release("zkr_mutex_release", m, thread_owner())
}

/// zkr_mutex_release for an explicit owner (from any thread).
#[no_mangle]
pub extern "C" fn zkr_mutex_release_as(m: *mut zkr_mutex, owner: zkr_owner) -> zkr_status {
    release("zkr_mutex_release_as", m, owner.to_core())
}

/// A question about one owner's hold, asked by a plain call (the thread's owner) or its `_as`
/// twin.
fn ask<T>(
    function: &str,
    m: *const zkr_mutex,
    owner: Result<Owner>,
    out: *mut T,
    what: &str,
    question: impl FnOnce(&InterProcessMutex, Owner) -> Result<T>,
) -> zkr_status {
    handle_out(function, m, out, what, |m| question(&m.mutex, owner?))
}

fn is_owned(m: &InterProcessMutex, owner: Owner) -> Result<bool> {
    Ok(m.is_owned_by(owner))
}

fn is_held_valid(m: &InterProcessMutex, owner: Owner) -> Result<bool> {
    Ok(m.is_held_valid(owner))
}

fn fencing_token(m: &InterProcessMutex, owner: Owner) -> Result<i64> {
    m.fencing_token(owner).ok_or_else(|| {
        Error::NotOwner(
            format!(
                "fencing token of lock {}: this owner does not hold it",
                m.path()
            )
            .into(),
        )
    })
}

/// Whether the calling thread holds the mutex (Curator's isOwnedByCurrentThread). A hold
/// reported lost still counts until released; see zkr_mutex_is_held_valid.
#[no_mangle]
pub extern "C" fn zkr_mutex_is_owned(m: *const zkr_mutex, owned_out: *mut bool) -> zkr_status {
    ask(
        "zkr_mutex_is_owned",
        m,
        thread_owner(),
        owned_out,
        "owned",
        is_owned,
    )
}

/// zkr_mutex_is_owned for an explicit owner.
#[no_mangle]
pub extern "C" fn zkr_mutex_is_owned_as(
    m: *const zkr_mutex,
    owner: zkr_owner,
    owned_out: *mut bool,
) -> zkr_status {
    ask(
        "zkr_mutex_is_owned_as",
        m,
        owner.to_core(),
        owned_out,
        "owned",
        is_owned,
    )
}

/// Whether any owner holds the mutex through this handle.
#[no_mangle]
pub extern "C" fn zkr_mutex_is_acquired_in_this_process(
    m: *const zkr_mutex,
    acquired: *mut bool,
) -> zkr_status {
    acquired_here("zkr_mutex_is_acquired_in_this_process", m, acquired)
}

/// Whether the calling thread holds the mutex and the hold is still trustworthy: not reported
/// lost, same session, client open, and (default policy) connected right now.
#[no_mangle]
pub extern "C" fn zkr_mutex_is_held_valid(m: *const zkr_mutex, valid: *mut bool) -> zkr_status {
    ask(
        "zkr_mutex_is_held_valid",
        m,
        thread_owner(),
        valid,
        "valid",
        is_held_valid,
    )
}

/// zkr_mutex_is_held_valid for an explicit owner.
#[no_mangle]
pub extern "C" fn zkr_mutex_is_held_valid_as(
    m: *const zkr_mutex,
    owner: zkr_owner,
    valid: *mut bool,
) -> zkr_status {
    ask(
        "zkr_mutex_is_held_valid_as",
        m,
        owner.to_core(),
        valid,
        "valid",
        is_held_valid,
    )
}

/// The fencing token of the calling thread's hold: the lock node's czxid, strictly greater than
/// any earlier holder's. Hand it to the guarded resource so it can reject a stale holder.
/// ZKR_NOT_OWNER if this thread does not hold the mutex. On a handle made by
/// zkr_mutex_new_cohort the local holders of one node share this token: fence with
/// zkr_mutex_fencing_token_wide instead.
#[no_mangle]
pub extern "C" fn zkr_mutex_fencing_token(m: *const zkr_mutex, token: *mut i64) -> zkr_status {
    ask(
        "zkr_mutex_fencing_token",
        m,
        thread_owner(),
        token,
        "token",
        fencing_token,
    )
}

/// zkr_mutex_fencing_token for an explicit owner.
#[no_mangle]
pub extern "C" fn zkr_mutex_fencing_token_as(
    m: *const zkr_mutex,
    owner: zkr_owner,
    token: *mut i64,
) -> zkr_status {
    ask(
        "zkr_mutex_fencing_token_as",
        m,
        owner.to_core(),
        token,
        "token",
        fencing_token,
    )
}

/// The wide fencing token of one owner's hold, in two out-parameters (both checked first,
/// written only on success).
fn fencing_token_wide(
    function: &str,
    m: *const zkr_mutex,
    owner: Result<Owner>,
    zxid: *mut i64,
    handoff: *mut u32,
) -> zkr_status {
    handle_call(function, m, |m| {
        let (zxid, handoff) = (arg_out(zxid, "zxid")?, arg_out(handoff, "handoff")?);
        let FencingToken {
            zxid: z,
            handoff: h,
        } = m.mutex.fencing_token_wide(owner?).ok_or_else(|| {
            Error::NotOwner(
                format!(
                    "wide fencing token of lock {}: this owner does not hold it",
                    m.mutex.path()
                )
                .into(),
            )
        })?;
        zxid.write(z);
        handoff.write(h);
        Ok(())
    })
}

/// The wide fencing token of the calling thread's hold: `*zxid` is the lock node's czxid (the
/// plain token) and `*handoff` the number of local handoffs on that node before this hold (0 for
/// the node's first holder, and always 0 on a mutex without cohort handoffs). Compare tokens as
/// (zxid, handoff) pairs, lexicographically (zxid first), or as one integer
/// zxid * 2^32 + handoff (128 bits); each holder's is strictly greater than every earlier
/// holder's, across processes and across the in-memory handoffs of zkr_mutex_new_cohort. Every
/// process fencing one resource must use the same kind of token: all wide, or (only where no
/// process uses cohort handoffs) all plain; a plain token never compares with a wide one.
/// ZKR_NOT_OWNER if this thread does not hold the mutex.
#[no_mangle]
pub extern "C" fn zkr_mutex_fencing_token_wide(
    m: *const zkr_mutex,
    zxid: *mut i64,
    handoff: *mut u32,
) -> zkr_status {
    fencing_token_wide(
        "zkr_mutex_fencing_token_wide",
        m,
        thread_owner(),
        zxid,
        handoff,
    )
}

/// zkr_mutex_fencing_token_wide for an explicit owner.
#[no_mangle]
pub extern "C" fn zkr_mutex_fencing_token_wide_as(
    m: *const zkr_mutex,
    owner: zkr_owner,
    zxid: *mut i64,
    handoff: *mut u32,
) -> zkr_status {
    fencing_token_wide(
        "zkr_mutex_fencing_token_wide_as",
        m,
        owner.to_core(),
        zxid,
        handoff,
    )
}

/// How many owners wait in this handle's local queue (zkr_mutex_new_cohort) right now, in `*n`;
/// always 0 for a mutex without cohort handoffs. A snapshot, for monitoring and tests.
#[no_mangle]
pub extern "C" fn zkr_mutex_local_waiters(m: *const zkr_mutex, n: *mut usize) -> zkr_status {
    handle_out("zkr_mutex_local_waiters", m, n, "n", |m| {
        Ok(m.mutex.local_waiters())
    })
}

/// The lock's nodes in line order (holder first), as full paths, in `*nodes` (free with
/// zkr_string_list_free); empty if nobody holds or waits.
#[no_mangle]
pub extern "C" fn zkr_mutex_participant_nodes(
    m: *mut zkr_mutex,
    nodes: *mut *mut zkr_string_list,
) -> zkr_status {
    handle_out("zkr_mutex_participant_nodes", m, nodes, "nodes", |m| {
        zkr_string_list::from_vec(wait(m.mutex.participant_nodes())?)
    })
}

/// Sets (replaces) the callback called when a hold of this mutex is lost; a NULL callback removes
/// it. When this returns, the previous callback is not running (unless this is called from
/// inside it) and will not run again, so its user_data may be freed.
///
/// The callback is called on another thread (see its type).
#[no_mangle]
pub extern "C" fn zkr_mutex_set_lost_callback(
    m: *mut zkr_mutex,
    callback: zkr_lock_lost_callback,
    user_data: *mut c_void,
) -> zkr_status {
    handle_call("zkr_mutex_set_lost_callback", m, |m| {
        m.lost.set(callback, UserData(user_data));
        Ok(())
    })
}

/// Curator's makeRevocable: from now on, this handle's lock nodes carry empty data and are
/// watched; when another process calls zkr_lock_attempt_revoke on one of them, `callback(owner)`
/// runs so that the owner may release. Applies to acquires that start after this call. Calling
/// it again replaces the callback; a NULL callback stops the calls (the nodes stay watched).
/// When this returns, a replaced callback is not running (unless called from inside it).
/// ZKR_INVALID_ARGUMENT on a handle made by zkr_mutex_new_cohort (its one node serves every
/// local owner; nothing is changed).
#[no_mangle]
pub extern "C" fn zkr_mutex_make_revocable(
    m: *mut zkr_mutex,
    callback: zkr_revoke_callback,
    user_data: *mut c_void,
) -> zkr_status {
    handle_call("zkr_mutex_make_revocable", m, |m| {
        // A cohort handle refuses it whatever the callback (the core says why).
        if callback.is_some() || m.mutex.cohort_options().is_some() {
            m.mutex.make_revocable(owner_listener(&m.revoke))?;
        }
        m.revoke.set(callback, UserData(user_data));
        Ok(())
    })
}

/// Curator's Revoker.attemptRevoke: asks the holder of the lock node `node_path` (one of
/// zkr_mutex_participant_nodes) to release, by writing `__REVOKE__` into it. A node already gone
/// is ZKR_OK. Only holders that called zkr_mutex_make_revocable hear it.
#[no_mangle]
pub extern "C" fn zkr_lock_attempt_revoke(
    c: *mut zkr_client,
    node_path: *const c_char,
) -> zkr_status {
    handle_call("zkr_lock_attempt_revoke", c, |c| {
        let node_path = arg_str(node_path, "node_path")?;
        wait(zkrecipes::lock::attempt_revoke(&c.client, node_path))
    })
}

/// Sets when a hold counts as lost: ZKR_LOCK_LOST_ON_SUSPENDED (default) or
/// ZKR_LOCK_LOST_ON_SESSION_LOSS. Applies to the connection changes that follow.
#[no_mangle]
pub extern "C" fn zkr_mutex_set_lost_policy(
    m: *mut zkr_mutex,
    policy: zkr_lock_lost_policy,
) -> zkr_status {
    handle_call("zkr_mutex_set_lost_policy", m, |m| {
        m.mutex
            .set_lost_policy(lost_policy(policy, "ZKR_LOCK_LOST_*")?);
        Ok(())
    })
}

/// Frees a mutex handle: its lost and revoke callbacks are removed (waiting for a running call to
/// return, unless called from inside it). Holds still held through this handle are NOT released:
/// their lock nodes stay until the session ends, as with Curator; release before freeing. NULL
/// does nothing. The handle must not be in use by another thread. A handle already freed is
/// detected in most cases (see docs/C_API.md).
#[no_mangle]
pub extern "C" fn zkr_mutex_free(m: *mut zkr_mutex) {
    free_handle("zkr_mutex_free", m)
}

// ---------------------------------------------------------------------------------------------
// InterProcessReadWriteLock

/// Curator's InterProcessReadWriteLock: a read half (shared) and a write half (exclusive) on one
/// path, both reentrant per owner and fair (one line for both kinds). The owner holding the
/// write lock may also take the read lock and then release the write lock (a downgrade); the
/// other way round never succeeds. Get the halves with zkr_rwlock_read_lock and
/// zkr_rwlock_write_lock: they are zkr_mutex handles, used with every zkr_mutex_* call.
pub struct zkr_rwlock {
    lock: InterProcessReadWriteLock,
}

handle!(zkr_rwlock, "rwlock");

/// Makes a read/write lock on `path`. Free with zkr_rwlock_free.
#[no_mangle]
pub extern "C" fn zkr_rwlock_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_rwlock,
) -> zkr_status {
    recipe_new("zkr_rwlock_new", c, path, out, |c, path| {
        Ok(zkr_rwlock {
            lock: InterProcessReadWriteLock::new(c, path)?,
        })
    })
}

/// The read half, as a new zkr_mutex handle (free it with zkr_mutex_free, before or after the
/// zkr_rwlock). Every handle of one half shares its holds.
#[no_mangle]
pub extern "C" fn zkr_rwlock_read_lock(
    rw: *mut zkr_rwlock,
    out: *mut *mut zkr_mutex,
) -> zkr_status {
    handle_out("zkr_rwlock_read_lock", rw, out, "out", |rw| {
        Ok(new_handle(zkr_mutex::new(rw.lock.read_lock().clone())))
    })
}

/// The write half, as a new zkr_mutex handle (free it with zkr_mutex_free).
#[no_mangle]
pub extern "C" fn zkr_rwlock_write_lock(
    rw: *mut zkr_rwlock,
    out: *mut *mut zkr_mutex,
) -> zkr_status {
    handle_out("zkr_rwlock_write_lock", rw, out, "out", |rw| {
        Ok(new_handle(zkr_mutex::new(rw.lock.write_lock().clone())))
    })
}

/// Frees a read/write lock handle (handles of its halves stay valid). NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_rwlock_free(rw: *mut zkr_rwlock) {
    free_handle("zkr_rwlock_free", rw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cohort_options_refuse_no_handoffs_and_a_negative_hold() {
        let e = cohort_options(0, 5).unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument(ref m) if m.contains("max_handoffs is 0")),
            "{e}"
        );
        for ms in [-1, i64::MIN] {
            let e = cohort_options(8, ms).unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument(ref m) if m.contains("max_hold_ms is -")),
                "{e}"
            );
        }
        assert_eq!(
            cohort_options(1, 0).unwrap(),
            CohortOptions {
                max_handoffs: 1,
                max_hold: Duration::ZERO
            }
        );
        assert_eq!(
            cohort_options(u32::MAX, i64::MAX).unwrap().max_hold,
            Duration::from_millis(i64::MAX as u64)
        );
    }
}
