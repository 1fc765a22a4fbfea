//! The lock family: InterProcessMutex (and the read/write lock's two halves, which are mutexes).

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};

use zkrecipes::lock::{
    InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, LockLostPolicy,
};
use zkrecipes::{Error, Owner, Result};

use crate::boundary::{
    arg_out, arg_ref, arg_str, arg_timeout, block_on, ffi_boundary, ffi_call, non_null,
};
use crate::callback::{CallbackThread, Registration, UserData};
use crate::client::{client_arg, zkr_client};
use crate::status::zkr_status;
use crate::types::{zkr_owner, zkr_string_list};

/// Called when a hold of a lock is lost: the connection went SUSPENDED or LOST (per the lock's
/// lost policy) or the client was closed. `owner` is the owner whose hold was lost; it should
/// stop trusting the lock and release it (the release then succeeds). It runs on a thread of the
/// library dedicated to this lock handle's callbacks (never the acquiring thread), one call at a
/// time; any zkr_ function may be called inside, including a release with zkr_mutex_release_as.
/// It must not throw (C++) or longjmp out.
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
/// like zkr_lock_lost_callback: on a library thread of this handle, where any zkr_ call is
/// allowed. It must not throw (C++) or longjmp out.
pub type zkr_revoke_callback =
    Option<unsafe extern "C" fn(owner: zkr_owner, user_data: *mut c_void)>;

/// A C callback of a lock handle taking an owner (lost or revoke), replaced by its setter.
#[derive(Default)]
pub(crate) struct OwnerSlot {
    current: Mutex<Option<(OwnerCallback, UserData, Arc<Registration>)>>,
}

type OwnerCallback = Option<unsafe extern "C" fn(owner: zkr_owner, user_data: *mut c_void)>;

impl OwnerSlot {
    /// Installs (or, with `None`, removes) the callback; the previous one is disabled first.
    fn set(&self, callback: OwnerCallback, user_data: UserData) {
        let previous = {
            let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
            let prev = cur.take();
            if callback.is_some() {
                *cur = Some((callback, user_data, Registration::new()));
            }
            prev
        };
        if let Some((_, _, reg)) = previous {
            reg.disable();
        }
    }

    fn fire(&self, thread: &CallbackThread, owner: Owner) {
        let cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((Some(cb), ud, reg)) = cur.as_ref() {
            let (cb, ud, reg) = (*cb, *ud, reg.clone());
            thread.post(Box::new(move || {
                let ud = ud;
                reg.run(|| unsafe { cb(zkr_owner { id: owner.as_raw() }, ud.0) })
            }));
        }
    }
}

/// Curator's InterProcessMutex: a reentrant mutex shared by every process (C, Python, Node,
/// Rust, Java/Curator) that uses the same path. Reentrant per owner: the same owner may acquire
/// again and must release as many times; other owners contend, in this process too. Thread-safe:
/// one handle may be used by many threads at once (each thread is its own owner).
pub struct zkr_mutex {
    mutex: InterProcessMutex,
    callbacks: Arc<CallbackThread>,
    lost: Arc<OwnerSlot>,
    revoke: Arc<OwnerSlot>,
}

/// A core listener that forwards to a slot's C callback on the handle's callback thread; weak,
/// so that a freed handle's slot simply stops firing.
fn forwarder(
    thread: &Arc<CallbackThread>,
    slot: &Arc<OwnerSlot>,
) -> impl Fn(Owner) + Send + Sync + 'static {
    let (thread, slot) = (Arc::downgrade(thread), Arc::downgrade(slot));
    move |owner| {
        if let (Some(t), Some(s)) = (thread.upgrade(), slot.upgrade()) {
            s.fire(&t, owner);
        }
    }
}

impl zkr_mutex {
    pub(crate) fn wrap(mutex: InterProcessMutex) -> *mut zkr_mutex {
        let callbacks = CallbackThread::new("zkr-cb-lock");
        let lost = Arc::new(OwnerSlot::default());
        mutex.on_lost(forwarder(&callbacks, &lost));
        let revoke = Arc::new(OwnerSlot::default());
        Box::into_raw(Box::new(zkr_mutex {
            mutex,
            callbacks,
            lost,
            revoke,
        }))
    }
}

/// Makes a mutex on `path` (an absolute ZooKeeper path; lock nodes are created under it). No
/// server call is made yet. Free with zkr_mutex_free.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_mutex,
) -> zkr_status {
    ffi_call("zkr_mutex_new", || {
        let client = client_arg(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(out, "out")?;
        if client.is_closed() {
            return Err(Error::Closed(
                format!("mutex {path}: the client is closed").into(),
            ));
        }
        out.write(zkr_mutex::wrap(InterProcessMutex::new(client, path)?));
        Ok(())
    })
}

fn acquire(
    function: &str,
    m: *mut zkr_mutex,
    owner: Result<Owner>,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    ffi_call(function, || {
        let m = unsafe { arg_ref(m, "mutex") }?;
        let out = unsafe { arg_out(acquired, "acquired") }?;
        let owner = owner?;
        let timeout = arg_timeout(timeout_ms)?;
        out.write(block_on(m.mutex.acquire(owner, timeout))??);
        Ok(())
    })
}

/// Acquires the mutex for the calling thread, waiting at most `timeout_ms` (-1: forever; 0: try
/// once). `*acquired` tells whether it was acquired (false: timed out). A re-entry by the same
/// thread returns at once. A timed-out acquire leaves no node behind.
///
/// Errors: ZKR_CLOSED (client closed, also while waiting), connection errors once the retry
/// policy gives up, and for a re-entry of a hold that was lost, the error that lost it.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_acquire(
    m: *mut zkr_mutex,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    acquire(
        "zkr_mutex_acquire",
        m,
        Ok(Owner::current_thread()),
        timeout_ms,
        acquired,
    )
}

/// zkr_mutex_acquire for an explicit owner.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_acquire_as(
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

fn release(function: &str, m: *mut zkr_mutex, owner: Result<Owner>) -> zkr_status {
    ffi_call(function, || {
        let m = unsafe { arg_ref(m, "mutex") }?;
        let owner = owner?;
        block_on(m.mutex.release(owner))?
    })
}

/// Releases one acquire of the calling thread; the last one deletes the lock node.
/// ZKR_NOT_OWNER if this thread does not hold the mutex (a release never goes below zero);
/// ZKR_CLOSED if the client was closed meanwhile (the node went with the session). Releasing a
/// hold that was reported lost is ZKR_OK.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_release(m: *mut zkr_mutex) -> zkr_status {
    release("zkr_mutex_release", m, Ok(Owner::current_thread()))
}

/// zkr_mutex_release for an explicit owner (from any thread).
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_release_as(m: *mut zkr_mutex, owner: zkr_owner) -> zkr_status {
    release("zkr_mutex_release_as", m, owner.to_core())
}

fn owned(function: &str, m: *const zkr_mutex, owner: Result<Owner>, out: *mut bool) -> zkr_status {
    ffi_call(function, || {
        let m = unsafe { arg_ref(m, "mutex") }?;
        let out = unsafe { arg_out(out, "owned") }?;
        out.write(m.mutex.is_owned_by(owner?));
        Ok(())
    })
}

/// Whether the calling thread holds the mutex (Curator's isOwnedByCurrentThread). A hold
/// reported lost still counts until released; see zkr_mutex_is_held_valid.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_is_owned(
    m: *const zkr_mutex,
    owned_out: *mut bool,
) -> zkr_status {
    owned(
        "zkr_mutex_is_owned",
        m,
        Ok(Owner::current_thread()),
        owned_out,
    )
}

/// zkr_mutex_is_owned for an explicit owner.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_is_owned_as(
    m: *const zkr_mutex,
    owner: zkr_owner,
    owned_out: *mut bool,
) -> zkr_status {
    owned("zkr_mutex_is_owned_as", m, owner.to_core(), owned_out)
}

/// Whether any owner holds the mutex through this handle.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_is_acquired_in_this_process(
    m: *const zkr_mutex,
    acquired: *mut bool,
) -> zkr_status {
    ffi_call("zkr_mutex_is_acquired_in_this_process", || {
        let m = arg_ref(m, "mutex")?;
        let out = arg_out(acquired, "acquired")?;
        out.write(m.mutex.is_acquired_in_this_process());
        Ok(())
    })
}

fn held_valid(
    function: &str,
    m: *const zkr_mutex,
    owner: Result<Owner>,
    out: *mut bool,
) -> zkr_status {
    ffi_call(function, || {
        let m = unsafe { arg_ref(m, "mutex") }?;
        let out = unsafe { arg_out(out, "valid") }?;
        out.write(m.mutex.is_held_valid(owner?));
        Ok(())
    })
}

/// Whether the calling thread holds the mutex and the hold is still trustworthy: not reported
/// lost, same session, client open, and (default policy) connected right now.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_is_held_valid(
    m: *const zkr_mutex,
    valid: *mut bool,
) -> zkr_status {
    held_valid(
        "zkr_mutex_is_held_valid",
        m,
        Ok(Owner::current_thread()),
        valid,
    )
}

/// zkr_mutex_is_held_valid for an explicit owner.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_is_held_valid_as(
    m: *const zkr_mutex,
    owner: zkr_owner,
    valid: *mut bool,
) -> zkr_status {
    held_valid("zkr_mutex_is_held_valid_as", m, owner.to_core(), valid)
}

fn fencing_token(
    function: &str,
    m: *const zkr_mutex,
    owner: Result<Owner>,
    token: *mut i64,
) -> zkr_status {
    ffi_call(function, || {
        let m = unsafe { arg_ref(m, "mutex") }?;
        let out = unsafe { arg_out(token, "token") }?;
        match m.mutex.fencing_token(owner?) {
            Some(t) => out.write(t),
            None => {
                return Err(Error::NotOwner(
                    format!(
                        "fencing token of lock {}: this owner does not hold it",
                        m.mutex.path()
                    )
                    .into(),
                ))
            }
        }
        Ok(())
    })
}

/// The fencing token of the calling thread's hold: the lock node's czxid, strictly greater than
/// any earlier holder's. Hand it to the guarded resource so it can reject a stale holder.
/// ZKR_NOT_OWNER if this thread does not hold the mutex.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_fencing_token(
    m: *const zkr_mutex,
    token: *mut i64,
) -> zkr_status {
    fencing_token(
        "zkr_mutex_fencing_token",
        m,
        Ok(Owner::current_thread()),
        token,
    )
}

/// zkr_mutex_fencing_token for an explicit owner.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_fencing_token_as(
    m: *const zkr_mutex,
    owner: zkr_owner,
    token: *mut i64,
) -> zkr_status {
    fencing_token("zkr_mutex_fencing_token_as", m, owner.to_core(), token)
}

/// The lock's nodes in line order (holder first), as full paths, in `*nodes` (free with
/// zkr_string_list_free); empty if nobody holds or waits.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_participant_nodes(
    m: *mut zkr_mutex,
    nodes: *mut *mut zkr_string_list,
) -> zkr_status {
    ffi_call("zkr_mutex_participant_nodes", || {
        let m = arg_ref(m, "mutex")?;
        let out = arg_out(nodes, "nodes")?;
        let list = block_on(m.mutex.participant_nodes())??;
        out.write(zkr_string_list::from_vec(list)?);
        Ok(())
    })
}

/// Sets (replaces) the callback called when a hold of this mutex is lost; a NULL callback removes
/// it. When this returns, the previous callback is not running (unless this is called from
/// inside it) and will not run again, so its user_data may be freed.
///
/// The callback is called on another thread (see its type).
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_set_lost_callback(
    m: *mut zkr_mutex,
    callback: zkr_lock_lost_callback,
    user_data: *mut c_void,
) -> zkr_status {
    ffi_call("zkr_mutex_set_lost_callback", || {
        let m = arg_ref(m, "mutex")?;
        m.lost.set(callback, UserData(user_data));
        Ok(())
    })
}

/// Curator's makeRevocable: from now on, this handle's lock nodes carry empty data and are
/// watched; when another process calls zkr_lock_attempt_revoke on one of them, `callback(owner)`
/// runs so that the owner may release. Applies to acquires that start after this call. Calling
/// it again replaces the callback; a NULL callback stops the calls (the nodes stay watched).
/// When this returns, a replaced callback is not running (unless called from inside it).
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_make_revocable(
    m: *mut zkr_mutex,
    callback: zkr_revoke_callback,
    user_data: *mut c_void,
) -> zkr_status {
    ffi_call("zkr_mutex_make_revocable", || {
        let m = arg_ref(m, "mutex")?;
        m.revoke.set(callback, UserData(user_data));
        if callback.is_some() {
            m.mutex.make_revocable(forwarder(&m.callbacks, &m.revoke));
        }
        Ok(())
    })
}

/// Curator's Revoker.attemptRevoke: asks the holder of the lock node `node_path` (one of
/// zkr_mutex_participant_nodes) to release, by writing `__REVOKE__` into it. A node already gone
/// is ZKR_OK. Only holders that called zkr_mutex_make_revocable hear it.
#[no_mangle]
pub unsafe extern "C" fn zkr_lock_attempt_revoke(
    c: *mut zkr_client,
    node_path: *const c_char,
) -> zkr_status {
    ffi_call("zkr_lock_attempt_revoke", || {
        let client = client_arg(c, "client")?;
        let node_path = arg_str(node_path, "node_path")?;
        block_on(zkrecipes::lock::attempt_revoke(client, node_path))?
    })
}

/// Sets when a hold counts as lost: ZKR_LOCK_LOST_ON_SUSPENDED (default) or
/// ZKR_LOCK_LOST_ON_SESSION_LOSS. Applies to the connection changes that follow.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_set_lost_policy(
    m: *mut zkr_mutex,
    policy: zkr_lock_lost_policy,
) -> zkr_status {
    ffi_call("zkr_mutex_set_lost_policy", || {
        let m = arg_ref(m, "mutex")?;
        m.mutex.set_lost_policy(match policy {
            ZKR_LOCK_LOST_ON_SUSPENDED => LockLostPolicy::Standard,
            ZKR_LOCK_LOST_ON_SESSION_LOSS => LockLostPolicy::Session,
            other => {
                return Err(Error::InvalidArgument(
                    format!("lost policy {other} is not a ZKR_LOCK_LOST_* value").into(),
                ))
            }
        });
        Ok(())
    })
}

/// Frees a mutex handle: its lost callback is removed (waiting for a running call to return,
/// unless called from inside it). Holds still held through this handle are NOT released: their
/// lock nodes stay until the session ends, as with Curator; release before freeing. NULL does
/// nothing. The handle must not be in use by another thread.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_mutex_free(m: *mut zkr_mutex) {
    ffi_boundary("zkr_mutex_free", (), || {
        if m.is_null() {
            return;
        }
        let m = Box::from_raw(m);
        m.lost.set(None, UserData(std::ptr::null_mut()));
        m.revoke.set(None, UserData(std::ptr::null_mut()));
        m.callbacks.shutdown();
        drop(m);
    })
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

/// Makes a read/write lock on `path`. Free with zkr_rwlock_free.
#[no_mangle]
pub unsafe extern "C" fn zkr_rwlock_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_rwlock,
) -> zkr_status {
    ffi_call("zkr_rwlock_new", || {
        let client = client_arg(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(out, "out")?;
        if client.is_closed() {
            return Err(Error::Closed(
                format!("read/write lock {path}: the client is closed").into(),
            ));
        }
        let lock = InterProcessReadWriteLock::new(client, path)?;
        out.write(Box::into_raw(Box::new(zkr_rwlock { lock })));
        Ok(())
    })
}

/// The read half, as a new zkr_mutex handle (free it with zkr_mutex_free, before or after the
/// zkr_rwlock). Every handle of one half shares its holds.
#[no_mangle]
pub unsafe extern "C" fn zkr_rwlock_read_lock(
    rw: *mut zkr_rwlock,
    out: *mut *mut zkr_mutex,
) -> zkr_status {
    ffi_call("zkr_rwlock_read_lock", || {
        let rw = arg_ref(rw, "rwlock")?;
        arg_out(out, "out")?.write(zkr_mutex::wrap(rw.lock.read_lock().clone()));
        Ok(())
    })
}

/// The write half, as a new zkr_mutex handle (free it with zkr_mutex_free).
#[no_mangle]
pub unsafe extern "C" fn zkr_rwlock_write_lock(
    rw: *mut zkr_rwlock,
    out: *mut *mut zkr_mutex,
) -> zkr_status {
    ffi_call("zkr_rwlock_write_lock", || {
        let rw = arg_ref(rw, "rwlock")?;
        arg_out(out, "out")?.write(zkr_mutex::wrap(rw.lock.write_lock().clone()));
        Ok(())
    })
}

/// Frees a read/write lock handle (handles of its halves stay valid). NULL does nothing.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_rwlock_free(rw: *mut zkr_rwlock) {
    ffi_boundary("zkr_rwlock_free", (), || {
        if !rw.is_null() {
            drop(Box::from_raw(rw));
        }
    })
}

// ---------------------------------------------------------------------------------------------
// InterProcessSemaphoreMutex

/// Curator's InterProcessSemaphoreMutex: a mutex that is NOT reentrant (a second acquire waits,
/// even from the same thread) and not owned: whoever holds the handle may release it, from any
/// thread. That is why it has no `_as` twins. Built on a one-lease semaphore (its layout).
pub struct zkr_semaphore_mutex {
    mutex: InterProcessSemaphoreMutex,
}

/// Makes a semaphore mutex on `path`. Free with zkr_semaphore_mutex_free.
#[no_mangle]
pub unsafe extern "C" fn zkr_semaphore_mutex_new(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_semaphore_mutex,
) -> zkr_status {
    ffi_call("zkr_semaphore_mutex_new", || {
        let client = client_arg(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(out, "out")?;
        if client.is_closed() {
            return Err(Error::Closed(
                format!("semaphore mutex {path}: the client is closed").into(),
            ));
        }
        let mutex = InterProcessSemaphoreMutex::new(client, path)?;
        out.write(Box::into_raw(Box::new(zkr_semaphore_mutex { mutex })));
        Ok(())
    })
}

/// Acquires, waiting at most `timeout_ms` (-1: forever); `*acquired` tells whether it was.
#[no_mangle]
pub unsafe extern "C" fn zkr_semaphore_mutex_acquire(
    m: *mut zkr_semaphore_mutex,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    ffi_call("zkr_semaphore_mutex_acquire", || {
        let m = arg_ref(m, "mutex")?;
        let out = arg_out(acquired, "acquired")?;
        let timeout = arg_timeout(timeout_ms)?;
        out.write(block_on(m.mutex.acquire(timeout))??);
        Ok(())
    })
}

/// Releases; ZKR_NOT_OWNER if this handle does not hold it.
#[no_mangle]
pub unsafe extern "C" fn zkr_semaphore_mutex_release(m: *mut zkr_semaphore_mutex) -> zkr_status {
    ffi_call("zkr_semaphore_mutex_release", || {
        let m = arg_ref(m, "mutex")?;
        block_on(m.mutex.release())?
    })
}

/// Whether this handle holds it.
#[no_mangle]
pub unsafe extern "C" fn zkr_semaphore_mutex_is_acquired_in_this_process(
    m: *const zkr_semaphore_mutex,
    acquired: *mut bool,
) -> zkr_status {
    ffi_call("zkr_semaphore_mutex_is_acquired_in_this_process", || {
        let m = arg_ref(m, "mutex")?;
        arg_out(acquired, "acquired")?.write(m.mutex.is_acquired_in_this_process());
        Ok(())
    })
}

/// Frees a semaphore mutex; a hold still held is returned in the background. NULL does nothing.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_semaphore_mutex_free(m: *mut zkr_semaphore_mutex) {
    ffi_boundary("zkr_semaphore_mutex_free", (), || {
        if !m.is_null() {
            drop(Box::from_raw(m));
        }
    })
}

// ---------------------------------------------------------------------------------------------
// InterProcessSemaphoreV2

/// Curator's InterProcessSemaphoreV2: at most `max_leases` leases held at a time across every
/// process using the path. Thread-safe.
pub struct zkr_semaphore {
    semaphore: InterProcessSemaphoreV2,
}

/// Leases taken by zkr_semaphore_acquire. Return them with zkr_semaphore_return_leases, then
/// free the handle with zkr_leases_free (which returns, in the background, any lease still in it).
pub struct zkr_leases {
    leases: Mutex<Vec<Lease>>,
}

/// Makes a semaphore on `path` allowing `max_leases` (>= 1) leases at once. Free with
/// zkr_semaphore_free.
#[no_mangle]
pub unsafe extern "C" fn zkr_semaphore_new(
    c: *mut zkr_client,
    path: *const c_char,
    max_leases: u32,
    out: *mut *mut zkr_semaphore,
) -> zkr_status {
    ffi_call("zkr_semaphore_new", || {
        let client = client_arg(c, "client")?;
        let path = arg_str(path, "path")?;
        let out = arg_out(out, "out")?;
        if client.is_closed() {
            return Err(Error::Closed(
                format!("semaphore {path}: the client is closed").into(),
            ));
        }
        let semaphore = InterProcessSemaphoreV2::new(client, path, max_leases as usize)?;
        out.write(Box::into_raw(Box::new(zkr_semaphore { semaphore })));
        Ok(())
    })
}

/// Acquires `qty` (>= 1) leases, all or nothing, waiting at most `timeout_ms` (-1: forever).
/// `*leases` receives them (free with zkr_leases_free), or NULL if the timeout passed first
/// (then none is held).
#[no_mangle]
pub unsafe extern "C" fn zkr_semaphore_acquire(
    s: *mut zkr_semaphore,
    qty: u32,
    timeout_ms: i64,
    leases: *mut *mut zkr_leases,
) -> zkr_status {
    ffi_call("zkr_semaphore_acquire", || {
        let s = arg_ref(s, "semaphore")?;
        let out = arg_out(leases, "leases")?;
        let timeout = arg_timeout(timeout_ms)?;
        match block_on(s.semaphore.acquire(qty as usize, timeout))?? {
            Some(got) => out.write(Box::into_raw(Box::new(zkr_leases {
                leases: Mutex::new(got),
            }))),
            None => out.write(std::ptr::null_mut()),
        }
        Ok(())
    })
}

/// Returns every lease still in `leases` (deleting their nodes). The handle stays valid (and
/// empty) until zkr_leases_free; returning an empty set is ZKR_OK. On failure the first error is
/// reported after trying them all.
#[no_mangle]
pub unsafe extern "C" fn zkr_semaphore_return_leases(
    s: *mut zkr_semaphore,
    leases: *mut zkr_leases,
) -> zkr_status {
    ffi_call("zkr_semaphore_return_leases", || {
        let s = arg_ref(s, "semaphore")?;
        let l = arg_ref(leases, "leases")?;
        let taken = std::mem::take(&mut *l.leases.lock().unwrap_or_else(|e| e.into_inner()));
        block_on(s.semaphore.return_all(taken))?
    })
}

/// How many leases `leases` holds.
#[no_mangle]
pub unsafe extern "C" fn zkr_leases_count(
    leases: *const zkr_leases,
    count: *mut usize,
) -> zkr_status {
    ffi_call("zkr_leases_count", || {
        let l = arg_ref(leases, "leases")?;
        arg_out(count, "count")?.write(l.leases.lock().unwrap_or_else(|e| e.into_inner()).len());
        Ok(())
    })
}

/// The lease nodes' paths, in `*paths` (free with zkr_string_list_free).
#[no_mangle]
pub unsafe extern "C" fn zkr_leases_paths(
    leases: *const zkr_leases,
    paths: *mut *mut zkr_string_list,
) -> zkr_status {
    ffi_call("zkr_leases_paths", || {
        let l = arg_ref(leases, "leases")?;
        let out = arg_out(paths, "paths")?;
        let list: Vec<String> = l
            .leases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|x| x.path().to_string())
            .collect();
        out.write(zkr_string_list::from_vec(list)?);
        Ok(())
    })
}

/// Frees a lease set; leases still in it are returned in the background. NULL does nothing.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_leases_free(leases: *mut zkr_leases) {
    ffi_boundary("zkr_leases_free", (), || {
        if !leases.is_null() {
            drop(Box::from_raw(leases));
        }
    })
}

/// The lease nodes, as full paths in sequence order, in `*nodes` (free with
/// zkr_string_list_free).
#[no_mangle]
pub unsafe extern "C" fn zkr_semaphore_participant_nodes(
    s: *mut zkr_semaphore,
    nodes: *mut *mut zkr_string_list,
) -> zkr_status {
    ffi_call("zkr_semaphore_participant_nodes", || {
        let s = arg_ref(s, "semaphore")?;
        let out = arg_out(nodes, "nodes")?;
        let list = block_on(s.semaphore.participant_nodes())??;
        out.write(zkr_string_list::from_vec(list)?);
        Ok(())
    })
}

/// Frees a semaphore handle (lease sets stay valid). NULL does nothing.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_semaphore_free(s: *mut zkr_semaphore) {
    ffi_boundary("zkr_semaphore_free", (), || {
        if !s.is_null() {
            drop(Box::from_raw(s));
        }
    })
}

// ---------------------------------------------------------------------------------------------
// InterProcessMultiLock

/// Curator's InterProcessMultiLock: several InterProcessMutexes taken as one, in order, all or
/// nothing (a timeout or an error releases those already taken), released in reverse order.
/// Reentrant per owner like its mutexes. The timeout bounds the whole acquire.
pub struct zkr_multi_lock {
    lock: InterProcessMultiLock,
}

/// Makes a multi lock over `count` mutex paths (at least one, no duplicates). Free with
/// zkr_multi_lock_free.
///
/// `paths` points to `count` NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn zkr_multi_lock_new(
    c: *mut zkr_client,
    paths: *const *const c_char,
    count: usize,
    out: *mut *mut zkr_multi_lock,
) -> zkr_status {
    ffi_call("zkr_multi_lock_new", || {
        let client = client_arg(c, "client")?;
        let out = arg_out(out, "out")?;
        let list: &[*const c_char] = if count == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(non_null(paths, "paths")?.as_ptr(), count)
        };
        let mut owned = Vec::with_capacity(count);
        for (i, p) in list.iter().enumerate() {
            owned.push(arg_str(*p, &format!("paths[{i}]"))?);
        }
        if client.is_closed() {
            return Err(Error::Closed("multi lock: the client is closed".into()));
        }
        let lock = InterProcessMultiLock::new(client, &owned)?;
        out.write(Box::into_raw(Box::new(zkr_multi_lock { lock })));
        Ok(())
    })
}

fn multi_acquire(
    function: &str,
    m: *mut zkr_multi_lock,
    owner: Result<Owner>,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    ffi_call(function, || {
        let m = unsafe { arg_ref(m, "multi_lock") }?;
        let out = unsafe { arg_out(acquired, "acquired") }?;
        let owner = owner?;
        let timeout = arg_timeout(timeout_ms)?;
        out.write(block_on(m.lock.acquire(owner, timeout))??);
        Ok(())
    })
}

/// Acquires every lock for the calling thread within `timeout_ms` (-1: forever); `*acquired`
/// tells whether all were (if not, none is held).
#[no_mangle]
pub unsafe extern "C" fn zkr_multi_lock_acquire(
    m: *mut zkr_multi_lock,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    multi_acquire(
        "zkr_multi_lock_acquire",
        m,
        Ok(Owner::current_thread()),
        timeout_ms,
        acquired,
    )
}

/// zkr_multi_lock_acquire for an explicit owner.
#[no_mangle]
pub unsafe extern "C" fn zkr_multi_lock_acquire_as(
    m: *mut zkr_multi_lock,
    owner: zkr_owner,
    timeout_ms: i64,
    acquired: *mut bool,
) -> zkr_status {
    multi_acquire(
        "zkr_multi_lock_acquire_as",
        m,
        owner.to_core(),
        timeout_ms,
        acquired,
    )
}

fn multi_release(function: &str, m: *mut zkr_multi_lock, owner: Result<Owner>) -> zkr_status {
    ffi_call(function, || {
        let m = unsafe { arg_ref(m, "multi_lock") }?;
        block_on(m.lock.release(owner?))?
    })
}

/// Releases every lock (reverse order) for the calling thread; tries them all and reports the
/// first error (ZKR_NOT_OWNER if this thread holds none).
#[no_mangle]
pub unsafe extern "C" fn zkr_multi_lock_release(m: *mut zkr_multi_lock) -> zkr_status {
    multi_release("zkr_multi_lock_release", m, Ok(Owner::current_thread()))
}

/// zkr_multi_lock_release for an explicit owner.
#[no_mangle]
pub unsafe extern "C" fn zkr_multi_lock_release_as(
    m: *mut zkr_multi_lock,
    owner: zkr_owner,
) -> zkr_status {
    multi_release("zkr_multi_lock_release_as", m, owner.to_core())
}

/// Whether every lock is held in this process.
#[no_mangle]
pub unsafe extern "C" fn zkr_multi_lock_is_acquired_in_this_process(
    m: *const zkr_multi_lock,
    acquired: *mut bool,
) -> zkr_status {
    ffi_call("zkr_multi_lock_is_acquired_in_this_process", || {
        let m = arg_ref(m, "multi_lock")?;
        arg_out(acquired, "acquired")?.write(m.lock.is_acquired_in_this_process());
        Ok(())
    })
}

/// Frees a multi lock handle (holds still held are not released; see zkr_mutex_free). NULL does
/// nothing.
///
/// Do not use it after this call.
#[no_mangle]
pub unsafe extern "C" fn zkr_multi_lock_free(m: *mut zkr_multi_lock) {
    ffi_boundary("zkr_multi_lock_free", (), || {
        if !m.is_null() {
            drop(Box::from_raw(m));
        }
    })
}
