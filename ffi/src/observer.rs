//! LeaderObserver: who leads a LeaderLatch or LeaderSelector group, without joining it.

use std::ffi::{c_char, c_void};
use std::ptr;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use zkrecipes::leader::{LeaderObserver, Participant};
use zkrecipes::{Error, ListenerId, Result};

use crate::boundary::{arg_timeout, handle_out, recipe_new, wait};
use crate::callback::{lock, CCallback, CallbackType, Closing, Listeners, Listening};
use crate::client::zkr_client;
use crate::handle::handle;
use crate::leader::{participant, participant_box, zkr_participant};
use crate::status::zkr_status;
use crate::types::zkr_string_free;

// ---------------------------------------------------------------------------------------------
// LeaderObserver

/// Called with each new leader of an observed group (`leader` is valid only during the call; its
/// id is "" when nobody leads). Runs on a library thread, one call at a time, in order with the
/// observer's other listeners; any zkr_ function may be called inside. It must not throw (C++)
/// or longjmp out.
pub type zkr_leader_observer_callback =
    Option<unsafe extern "C" fn(leader: *const zkr_participant, user_data: *mut c_void)>;

/// Follows the leader of a LeaderLatch or LeaderSelector group without joining it (etcd's
/// Observe), with one children watch. Thread-safe.
pub struct zkr_leader_observer {
    observer: Mutex<LeaderObserver>,
    /// Our own receiver, so that zkr_leader_observer_wait_changed sees every change once.
    changes: Mutex<watch::Receiver<Participant>>,
    listeners: Listeners<zkr_leader_observer_callback>,
}

// No listener starts once the free begins; the observer is closed, and only then are running
// listeners waited for (one blocked in zkr_leader_observer_wait_changed, which the close ends,
// would otherwise hold the free for good).
handle!(zkr_leader_observer, "observer", |o| {
    o.shut_all();
    lock(&o.observer).close();
    o.unregister_all();
});

impl Closing for zkr_leader_observer {
    fn close_handle(&self) -> Result<()> {
        lock(&self.observer).close();
        Ok(())
    }
}

impl Listening for zkr_leader_observer {
    type Callback = zkr_leader_observer_callback;

    fn listeners(&self) -> &Listeners<zkr_leader_observer_callback> {
        &self.listeners
    }

    fn register(&self, cb: Arc<CCallback<ObserverFn>>) -> Result<ListenerId> {
        Ok(lock(&self.observer).add_listener(move |p| {
            let Ok(c) = participant(&p) else { return };
            cb.call((&c,));
            // Made by `participant` above, freed once.
            zkr_string_free(c.id);
        }))
    }

    /// Takes the observer's lock only for the removal: `unregister_all` then waits for a
    /// running callback without it (the callback may be calling zkr_leader_observer_leader).
    fn unregister(&self, id: ListenerId) -> Result<bool> {
        lock(&self.observer).remove_listener(id)
    }
}

type ObserverFn = <zkr_leader_observer_callback as CallbackType>::Fn;

/// Starts observing the group at `path`; returns once the current leader is known (the path
/// need not exist yet). Free with zkr_leader_observer_free.
#[no_mangle]
pub extern "C" fn zkr_leader_observer_start(
    c: *mut zkr_client,
    path: *const c_char,
    out: *mut *mut zkr_leader_observer,
) -> zkr_status {
    recipe_new("zkr_leader_observer_start", c, path, out, |c, path| {
        let observer = wait(LeaderObserver::start(c, path))?;
        let mut changes = observer.subscribe();
        changes.borrow_and_update();
        Ok(zkr_leader_observer {
            observer: Mutex::new(observer),
            changes: Mutex::new(changes),
            listeners: Listeners::default(),
        })
    })
}

/// The leader as last seen (free with zkr_participant_free); {"", false} when nobody leads.
#[no_mangle]
pub extern "C" fn zkr_leader_observer_leader(
    o: *const zkr_leader_observer,
    leader: *mut *mut zkr_participant,
) -> zkr_status {
    handle_out("zkr_leader_observer_leader", o, leader, "leader", |o| {
        participant_box(&lock(&o.observer).leader())
    })
}

/// Waits for the next change of leader (since the last call, or since start), at most
/// `timeout_ms` (-1: forever). `*leader` receives the new leader (free with
/// zkr_participant_free), or NULL if the timeout passed first. ZKR_CLOSED once the observer or
/// its client is closed.
#[no_mangle]
pub extern "C" fn zkr_leader_observer_wait_changed(
    o: *mut zkr_leader_observer,
    timeout_ms: i64,
    leader: *mut *mut zkr_participant,
) -> zkr_status {
    handle_out(
        "zkr_leader_observer_wait_changed",
        o,
        leader,
        "leader",
        |o| {
            let timeout = arg_timeout(timeout_ms)?;
            let mut rx = lock(&o.changes).clone();
            let changed =
                wait(async { Ok(zkrecipes::timeout::within(timeout, rx.changed()).await) })?;
            match changed {
                None => Ok(ptr::null_mut()),
                Some(Err(_)) => Err(Error::Closed(
                    "the leader observer (or its client) is closed".into(),
                )),
                Some(Ok(())) => {
                    let p = rx.borrow_and_update().clone();
                    // Remember what this caller saw, for the next call.
                    *lock(&o.changes) = rx;
                    participant_box(&p)
                }
            }
        },
    )
}
