//! What `take_leadership` gets ([`LeadershipContext`]: the term's cancellation and fencing
//! token) and why a term is cut short ([`CancelReason`]).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::dispatch::Dispatcher;
use crate::Client;

/// Why leadership was cancelled (Curator's `CancelLeadershipException`, as a value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CancelReason {
    /// The connection was SUSPENDED (standard policy): another participant may lead soon.
    ConnectionSuspended,
    /// The session was LOST (or the hold otherwise became invalid): another participant may
    /// lead already.
    SessionLost,
    /// [`LeaderSelector::interrupt_leadership`](super::LeaderSelector::interrupt_leadership) was called.
    Interrupted,
    /// The selector (or its client) was closed.
    Closed,
}

impl CancelReason {
    /// Every reason.
    pub const ALL: &'static [CancelReason] = &[
        CancelReason::ConnectionSuspended,
        CancelReason::SessionLost,
        CancelReason::Interrupted,
        CancelReason::Closed,
    ];

    /// The one spelling every face uses: `CONNECTION_SUSPENDED`, `SESSION_LOST`,
    /// `INTERRUPTED`, `CLOSED`.
    pub const fn name(self) -> &'static str {
        match self {
            CancelReason::ConnectionSuspended => "CONNECTION_SUSPENDED",
            CancelReason::SessionLost => "SESSION_LOST",
            CancelReason::Interrupted => "INTERRUPTED",
            CancelReason::Closed => "CLOSED",
        }
    }

    /// The error kind a face reports for work cut short by this reason (`None` for an
    /// interrupt, which is not a failure of ZooKeeper's).
    pub const fn error_kind(self) -> Option<crate::ErrorKind> {
        match self {
            CancelReason::ConnectionSuspended => Some(crate::ErrorKind::ConnectionLoss),
            CancelReason::SessionLost => Some(crate::ErrorKind::SessionExpired),
            CancelReason::Interrupted => None,
            CancelReason::Closed => Some(crate::ErrorKind::Closed),
        }
    }
}

type CancelCallback = Box<dyn FnOnce(CancelReason) + Send>;

struct CancelInner {
    reason: Mutex<Option<CancelReason>>,
    cv: Condvar,
    tx: watch::Sender<Option<CancelReason>>,
    callbacks: Mutex<Vec<CancelCallback>>,
}

struct CtxInner {
    cancel: CancelInner,
    /// The selector's dispatcher: cancellation callbacks run there.
    callbacks: Arc<Dispatcher<()>>,
    fencing_token: Option<i64>,
    id: String,
    path: String,
    term: u64,
    client: Client,
}

/// What `take_leadership` gets: the term's cancellation token and its fencing token.
///
/// Leadership lasts while `take_leadership` runs. When it is cancelled — the connection is
/// SUSPENDED or LOST (per the [`LostPolicy`](crate::LostPolicy)), [`interrupt_leadership`](super::LeaderSelector::interrupt_leadership),
/// or [`close`](super::LeaderSelector::close) — the callee must stop acting as leader and return
/// promptly; the mutex is released when it returns. Cloning shares the token.
#[derive(Clone)]
pub struct LeadershipContext {
    inner: Arc<CtxInner>,
}

impl std::fmt::Debug for LeadershipContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeadershipContext")
            .field("path", &self.inner.path)
            .field("id", &self.inner.id)
            .field("term", &self.inner.term)
            .field("fencing_token", &self.inner.fencing_token)
            .field("cancelled", &self.cancel_reason())
            .finish()
    }
}

impl LeadershipContext {
    pub(super) fn new(
        client: Client,
        path: String,
        id: String,
        term: u64,
        fencing_token: Option<i64>,
        callbacks: Arc<Dispatcher<()>>,
    ) -> LeadershipContext {
        LeadershipContext {
            inner: Arc::new(CtxInner {
                callbacks,
                cancel: CancelInner {
                    reason: Mutex::new(None),
                    cv: Condvar::new(),
                    tx: watch::channel(None).0,
                    callbacks: Mutex::new(Vec::new()),
                },
                fencing_token,
                id,
                path,
                term,
                client,
            }),
        }
    }

    /// Whether leadership is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel_reason().is_some()
    }

    /// Why leadership was cancelled, if it was.
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        *self
            .inner
            .cancel
            .reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves when leadership is cancelled, with the reason (for `select!` next to the work).
    pub async fn cancelled(&self) -> CancelReason {
        let mut rx = self.inner.cancel.tx.subscribe();
        // The sender lives in `self`: it cannot be gone while we wait.
        let reason = rx
            .wait_for(|r| r.is_some())
            .await
            .map(|r| *r)
            .ok()
            .flatten();
        reason.unwrap_or(CancelReason::Closed)
    }

    /// Blocks the calling thread until leadership is cancelled (`Some(reason)`) or `timeout`
    /// passes (`None`); for blocking `take_leadership` callbacks. `None` timeout: no deadline.
    pub fn wait_cancelled(&self, timeout: Option<Duration>) -> Option<CancelReason> {
        let c = &self.inner.cancel;
        let guard = c.reason.lock().unwrap_or_else(|e| e.into_inner());
        match timeout {
            None => *c
                .cv
                .wait_while(guard, |r| r.is_none())
                .unwrap_or_else(|e| e.into_inner()),
            Some(t) => {
                *c.cv
                    .wait_timeout_while(guard, t, |r| r.is_none())
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        }
    }

    /// Calls `f(reason)` once when leadership is cancelled (at once if it already is), on the
    /// selector's dispatcher ([`crate::dispatch`]: it may block and use the blocking API). For
    /// faces: set a Python `threading.Event`, abort a JS `AbortController`.
    pub fn on_cancel(&self, f: impl FnOnce(CancelReason) + Send + 'static) {
        let c = &self.inner.cancel;
        let reason = c.reason.lock().unwrap_or_else(|e| e.into_inner());
        match *reason {
            Some(r) => {
                drop(reason);
                run_callbacks(&self.inner.callbacks, vec![Box::new(f)], r);
            }
            None => c
                .callbacks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Box::new(f)),
        }
    }

    /// The fencing token of this leadership term: the lock node's czxid, strictly greater than
    /// any earlier leader's. Pass it to the resources the leader writes to.
    pub fn fencing_token(&self) -> Option<i64> {
        self.inner.fencing_token
    }

    /// The leader path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// This participant's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Which leadership term of this selector this is (1 for the first).
    pub fn term(&self) -> u64 {
        self.inner.term
    }

    /// The client (Curator passes it to `takeLeadership`).
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// Cancels; the first reason wins. Returns whether this call cancelled.
    pub(super) fn cancel(&self, reason: CancelReason) -> bool {
        let c = &self.inner.cancel;
        let mut r = c.reason.lock().unwrap_or_else(|e| e.into_inner());
        if r.is_some() {
            return false;
        }
        *r = Some(reason);
        c.cv.notify_all();
        c.tx.send_replace(Some(reason));
        // Taken under the reason lock: on_cancel either ran before (queued) or sees the reason.
        let callbacks = std::mem::take(&mut *c.callbacks.lock().unwrap_or_else(|e| e.into_inner()));
        drop(r);
        run_callbacks(&self.inner.callbacks, callbacks, reason);
        true
    }
}

fn run_callbacks(d: &Dispatcher<()>, callbacks: Vec<CancelCallback>, reason: CancelReason) {
    for cb in callbacks {
        d.call(move || cb(reason));
    }
}
