//! InterProcessSemaphoreV2 (leases across processes) and InterProcessSemaphoreMutex (a
//! non-reentrant mutex built on it), as Curator has them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::internals::{create_lock_node, NodeGuard};
use super::mutex::InterProcessMutex;
use crate::atomic::SharedCount;
use crate::wait::{self, Deadline, Wake};
use crate::{path, runtime, Client, CreateMode, Error, Owner, Result};

pub(crate) const LOCK_PARENT: &str = "locks";
pub(crate) const LEASE_PARENT: &str = "leases";
pub(crate) const LEASE_BASE_NAME: &str = "lease-";

/// One lease of an [`InterProcessSemaphoreV2`]: the node `leases/_c_<uuid>-lease-<seq>`.
/// Return it with [`release`](Lease::release); dropping it returns it too (in the background).
pub struct Lease {
    client: Client,
    path: String,
    czxid: i64,
    /// The session that made the node: the node goes when that session does.
    session: i64,
    /// Set once [`release`](Lease::release) starts: shared with the lost signals, for which a
    /// node deleted by its own return is no loss.
    returned: Arc<AtomicBool>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("path", &self.path)
            .field("czxid", &self.czxid)
            .finish()
    }
}

impl Lease {
    /// The lease node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The lease node's czxid (increases with every lease made).
    pub fn czxid(&self) -> i64 {
        self.czxid
    }

    /// The data stored in the lease node.
    pub async fn data(&self) -> Result<Vec<u8>> {
        self.client.get_data(&self.path).await.map(|(d, _)| d)
    }

    /// Returns the lease: deletes its node (guaranteed delete; a node already gone is fine).
    pub async fn release(self) -> Result<()> {
        self.returned.store(true, Ordering::SeqCst);
        self.client.delete_ours(&self.path).await
    }

    /// [`release`](Self::release) for the blocking face.
    pub fn release_blocking(self) -> Result<()> {
        runtime::try_block_on(self.release())?
    }

    /// A future that resolves when this lease can no longer be counted on, saying why: the
    /// connection enters a state `policy` treats as a loss (Curator's
    /// `ConnectionStateErrorPolicy`: SUSPENDED under `Standard`, LOST under both), the client
    /// closes, the client's session is no longer the one that made the lease, or the lease node
    /// is gone or another session's (checked once, with one read inside the future). It
    /// watches the connection from the moment it is made (not from its first poll), so work
    /// started after making it is covered; it never resolves while the lease stays good, also
    /// after it is returned. For `select!` next to the work done under the lease, as
    /// [`InterProcessMutex::lost_signal`] for a mutex.
    pub fn lost_signal(
        &self,
        policy: crate::LostPolicy,
    ) -> impl std::future::Future<Output = LeaseLost> + Send + 'static {
        let client = self.client.clone();
        let mut states = client.state_stream();
        let (node, session, returned) = (self.path.clone(), self.session, self.returned.clone());
        async move {
            let gone = |state: crate::ConnectionState| {
                if client.is_closed() {
                    Some(LeaseLost::Closed)
                } else if policy.is_error_state(state) {
                    Some(LeaseLost::State(state))
                } else if client.session_id() != session {
                    Some(LeaseLost::SessionChanged)
                } else {
                    None
                }
            };
            if let Some(why) = gone(client.state()) {
                return why;
            }
            let watch_states = async {
                while let Some(state) = states.next().await {
                    if let Some(why) = gone(state) {
                        return why;
                    }
                }
                LeaseLost::Closed
            };
            tokio::pin!(watch_states);
            // A read that fails says nothing: the states decide then.
            let ours = async {
                match client.exists(&node).await {
                    Ok(Some(stat)) => stat.ephemeral_owner == session,
                    Ok(None) => false,
                    Err(_) => true,
                }
            };
            tokio::select! {
                why = &mut watch_states => return why,
                // Deleted by its own return (the read came after it): no loss.
                ours = ours => if !ours && !returned.load(Ordering::SeqCst) {
                    return LeaseLost::NodeGone;
                },
            }
            watch_states.await
        }
    }
}

/// Why a [`Lease`] was lost ([`Lease::lost_signal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseLost {
    /// The connection entered this state, which the policy treats as a loss.
    State(crate::ConnectionState),
    /// The client was closed.
    Closed,
    /// The client's session is another than the one that made the lease (the lease node went
    /// with the old one).
    SessionChanged,
    /// The lease node is gone, or belongs to another session.
    NodeGone,
}

impl LeaseLost {
    /// The names of the kinds, in order: the one spelling every face uses (`STATE`, `CLOSED`,
    /// `SESSION_CHANGED`, `NODE_GONE`; the C codes are their places, from 1).
    pub const KINDS: &'static [&'static str] = &["STATE", "CLOSED", "SESSION_CHANGED", "NODE_GONE"];

    /// This loss's kind, one of [`KINDS`](Self::KINDS).
    pub const fn kind_name(self) -> &'static str {
        Self::KINDS[match self {
            LeaseLost::State(_) => 0,
            LeaseLost::Closed => 1,
            LeaseLost::SessionChanged => 2,
            LeaseLost::NodeGone => 3,
        }]
    }

    /// The connection state that was the loss, for [`State`](Self::State).
    pub const fn state(self) -> Option<crate::ConnectionState> {
        match self {
            LeaseLost::State(s) => Some(s),
            _ => None,
        }
    }
}

impl std::fmt::Display for LeaseLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeaseLost::State(crate::ConnectionState::Suspended) => {
                f.write_str("the connection to ZooKeeper was suspended")
            }
            LeaseLost::State(crate::ConnectionState::Lost) => {
                f.write_str("the ZooKeeper session was lost")
            }
            LeaseLost::State(s) => write!(f, "the connection state is {s}"),
            LeaseLost::Closed => f.write_str("the client was closed"),
            LeaseLost::SessionChanged => {
                f.write_str("the ZooKeeper session changed (the lease went with the old one)")
            }
            LeaseLost::NodeGone => {
                f.write_str("the lease node is gone or belongs to another session")
            }
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.returned.load(Ordering::SeqCst) && !self.client.is_closed() {
            self.client.delete_ours_in_background(&self.path);
        }
    }
}

/// Where the most leases held at once comes from.
enum MaxLeases {
    /// A number fixed at construction.
    Fixed(usize),
    /// A [`SharedCount`], read live (Curator's `SharedCountReader` constructor).
    Count(crate::atomic::CountReader),
}

impl MaxLeases {
    /// The limit in force now (a count below 1 admits nobody).
    fn now(&self) -> usize {
        match self {
            MaxLeases::Fixed(n) => *n,
            MaxLeases::Count(c) => usize::try_from(c.current()).unwrap_or(0),
        }
    }

    /// Changes whenever the limit may have (never for a fixed one).
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        match self {
            MaxLeases::Fixed(_) => None,
            MaxLeases::Count(c) => Some(c.subscribe()),
        }
    }
}

struct Shared {
    client: Client,
    path: String,
    leases_path: String,
    lock: InterProcessMutex,
    max_leases: MaxLeases,
    data: Vec<u8>,
}

/// Curator's InterProcessSemaphoreV2: at most `max_leases` leases are held at a time across
/// every process using `path`. To take one, a contender holds the mutex at `path/locks`,
/// creates `path/leases/_c_<uuid>-lease-<seq>`, and waits (watching the leases' children)
/// until there are no more than `max_leases` of them; then it lets the mutex go.
#[derive(Clone)]
pub struct InterProcessSemaphoreV2 {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for InterProcessSemaphoreV2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessSemaphoreV2")
            .field("path", &self.shared.path)
            .field("max_leases", &self.shared.max_leases.now())
            .field(
                "from_shared_count",
                &matches!(self.shared.max_leases, MaxLeases::Count(_)),
            )
            .finish()
    }
}

enum One {
    Got(Lease),
    TimedOut,
    Missing,
    /// A lease made outside the internal lock's session, given back: take both again at once.
    Again,
}

impl InterProcessSemaphoreV2 {
    /// A semaphore on `path` (validated) with `max_leases` (at least 1).
    pub fn new(client: &Client, path: &str, max_leases: usize) -> Result<InterProcessSemaphoreV2> {
        InterProcessSemaphoreV2::with_data(client, path, max_leases, Vec::new())
    }

    /// A semaphore whose lease nodes carry `data` (Curator's setNodeData).
    pub fn with_data(
        client: &Client,
        path: &str,
        max_leases: usize,
        data: Vec<u8>,
    ) -> Result<InterProcessSemaphoreV2> {
        if max_leases == 0 {
            path::validate_path(path)?;
            return Err(Error::invalid(format!(
                "semaphore {path}: max leases must be at least 1"
            )));
        }
        Self::make(client, path, MaxLeases::Fixed(max_leases), data)
    }

    /// Curator's `InterProcessSemaphoreV2(client, path, SharedCountReader)`: the most leases
    /// held at once is `count`'s value, read live. Raising the count lets waiters in at once;
    /// lowering it takes no lease back, but admits nobody until fewer than the new count are
    /// held (a count below 1 admits nobody). Start the count ([`SharedCount::start`]) to follow
    /// its changes; before that (or after it is closed) its last value counts. The semaphore
    /// does not own the count: closing or dropping the count freezes the limit at its last
    /// value.
    pub fn with_count(
        client: &Client,
        path: &str,
        count: &SharedCount,
    ) -> Result<InterProcessSemaphoreV2> {
        Self::with_count_and_data(client, path, count, Vec::new())
    }

    /// [`with_count`](Self::with_count) whose lease nodes carry `data`.
    pub fn with_count_and_data(
        client: &Client,
        path: &str,
        count: &SharedCount,
        data: Vec<u8>,
    ) -> Result<InterProcessSemaphoreV2> {
        Self::make(client, path, MaxLeases::Count(count.reader()), data)
    }

    fn make(
        client: &Client,
        path: &str,
        max_leases: MaxLeases,
        data: Vec<u8>,
    ) -> Result<InterProcessSemaphoreV2> {
        path::validate_path(path)?;
        path::validate_data(path, &data)?;
        let lock = InterProcessMutex::new(client, &path::join(path, LOCK_PARENT))?;
        Ok(InterProcessSemaphoreV2 {
            shared: Arc::new(Shared {
                client: client.clone(),
                path: path.to_string(),
                leases_path: path::join(path, LEASE_PARENT),
                lock,
                max_leases,
                data,
            }),
        })
    }

    /// The semaphore's path.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The most leases held at once (for one made [`with_count`](Self::with_count), the
    /// count's value now; below 1 it is 0).
    pub fn max_leases(&self) -> usize {
        self.shared.max_leases.now()
    }

    /// Whether the limit comes from a [`SharedCount`] ([`with_count`](Self::with_count)).
    pub fn is_count_driven(&self) -> bool {
        matches!(self.shared.max_leases, MaxLeases::Count(_))
    }

    /// Acquires `qty` leases, waiting at most `timeout` (`None`: until acquired). All or
    /// nothing: on timeout the leases already taken are returned and the answer is `None`.
    pub async fn acquire(
        &self,
        qty: usize,
        timeout: Option<Duration>,
    ) -> Result<Option<Vec<Lease>>> {
        let s = &self.shared;
        if qty == 0 {
            return Err(Error::invalid(format!(
                "acquire from semaphore {}: qty must be at least 1",
                s.path
            )));
        }
        if let (MaxLeases::Fixed(max), true) = (&s.max_leases, qty > s.max_leases.now()) {
            let max = *max;
            // Curator waits forever here: no holder can ever make room for more than all.
            // (A count-driven limit may be raised: then the acquire waits, as Curator's.)
            return Err(Error::invalid(format!(
                "acquire {qty} leases from semaphore {}: it has only {max} in all, so this could never succeed",
                s.path
            )));
        }
        if s.client.is_closed() {
            return Err(Error::Closed(
                format!("acquire from semaphore {}: the client is closed", s.path).into(),
            ));
        }
        let deadline = Deadline::after(timeout);
        let mut leases: Vec<Lease> = Vec::with_capacity(qty);
        while leases.len() < qty {
            let start = Instant::now();
            let mut retries = 0;
            // Leases given back at once (each needs a session that ended under the internal
            // lock; a few in a row go through the retry policy's pauses as a missing lease does).
            let mut again = 0;
            loop {
                let one = match deadline.bounding(self.acquire_one(deadline)).await {
                    Ok(One::Again) if again < 3 => {
                        again += 1;
                        continue;
                    }
                    Ok(One::Again) => Ok(One::Missing),
                    other => other,
                };
                match one {
                    Ok(One::Got(lease)) => {
                        // A lease taken earlier in this acquire on a session given up since
                        // went with that session (Curator keeps it, and its caller holds one
                        // lease fewer than it counts, letting one holder too many in): it is
                        // returned and taken again on this session.
                        let session = lease.session;
                        leases.push(lease);
                        if leases.iter().any(|l| l.session != session) {
                            let (live, dead) =
                                leases.into_iter().partition(|l| l.session == session);
                            leases = live;
                            tracing::debug!(semaphore = %s.path, "leases of an earlier session: taken again");
                            return_all(dead, deadline).await;
                        }
                        break;
                    }
                    Ok(One::TimedOut) => {
                        return_all(leases, deadline).await;
                        return Ok(None);
                    }
                    // Our lease node went with an expired session (or a request in flight when
                    // it expired failed): take another one on the new session.
                    Ok(One::Missing | One::Again) | Err(Error::SessionExpired(_)) => {
                        match s.client.retry_policy().next_sleep(retries, start.elapsed()) {
                            // Our lease node vanished (session loss): try again, as Curator does.
                            Some(sleep) => {
                                retries += 1;
                                // Cut short by the caller's deadline: the next try then times out.
                                wait::pause(&s.client, sleep, deadline).await?;
                            }
                            None => {
                                return_all(leases, deadline).await;
                                return Err(Error::NoNode(format!(
                                "acquire from semaphore {}: sequential path not found - possible session loss",
                                s.path
                            ).into()));
                            }
                        }
                    }
                    // The connection was lost and the deadline passed before it came back:
                    // timed out (the retry policy's pauses are not waited out past it).
                    Err(e) if e.is_retryable() && deadline.passed() => {
                        tracing::debug!(semaphore = %s.path, error = %e, "the acquire's deadline passed while the connection was lost");
                        return_all(leases, deadline).await;
                        return Ok(None);
                    }
                    Err(e) => {
                        return_all(leases, deadline).await;
                        return Err(e);
                    }
                }
            }
        }
        Ok(Some(leases))
    }

    async fn acquire_one(&self, deadline: Deadline) -> Result<One> {
        let s = &self.shared;
        let remaining = deadline.remaining();
        // A fresh owner per take: tasks of one thread must not re-enter each other's hold.
        let owner = Owner::new();
        if !s.lock.acquire(owner, remaining).await? {
            return Ok(One::TimedOut);
        }
        let mut unlock = Unlock {
            lock: s.lock.clone(),
            owner,
            armed: true,
        };
        let result = self.create_and_wait(owner, deadline).await;
        let _ = s.lock.release(owner).await;
        unlock.armed = false;
        result
    }

    /// Makes a lease node while `owner` holds the internal lock, and waits until it counts.
    async fn create_and_wait(&self, owner: Owner, deadline: Deadline) -> Result<One> {
        let s = &self.shared;
        // A cancelled acquire never leaves a lease node behind.
        let (created, _) = create_lock_node(
            &s.client,
            &s.leases_path,
            LEASE_BASE_NAME,
            &s.data,
            CreateMode::EphemeralSequential,
            false,
        )
        .await?;
        let mut guard = NodeGuard::new(&s.client, &created.path);
        let name = created.name.clone();
        let lease_session = created.session;
        // A lease counts only if made under the internal lock. One made on another session than
        // the lock's node (its create resent on a new session after the one holding the lock
        // ended) was not: the next contender may hold the lock by now, and two such leases
        // against the last free one wait for each other for good (Curator's hole). It is given
        // back, and the lock and a lease are taken again on this session.
        if s.lock.held_session(owner) != Some(lease_session) {
            tracing::debug!(semaphore = %s.path, "a lease made outside the internal lock's session: taken again");
            let _ = guard.delete_now().await;
            return Ok(One::Again);
        }
        // Subscribed before each listing: a change of a count-driven limit after the listing
        // wakes the wait below (Curator's count listener notifies the waiter).
        let mut limit_changes = s.max_leases.changes();
        loop {
            if let Some(rx) = limit_changes.as_mut() {
                rx.borrow_and_update();
            }
            let (children, watch) = match s.client.get_children_watch(&s.leases_path).await {
                Ok(listed) => listed,
                // Our lease node went with its session (and the emptied `leases` container may
                // have been reaped): take another one, as a lost node is handled below.
                Err(Error::SessionExpired(_) | Error::NoNode(_)) => return Ok(One::Missing),
                Err(e) => return Err(e),
            };
            if !children.contains(&name) || s.client.session_id() != lease_session {
                return Ok(One::Missing);
            }
            if children.len() <= s.max_leases.now() {
                guard.disarm();
                return Ok(One::Got(Lease {
                    client: s.client.clone(),
                    path: created.path,
                    czxid: created.czxid,
                    session: lease_session,
                    returned: Arc::new(AtomicBool::new(false)),
                }));
            }
            if deadline.passed() {
                let _ = guard.delete_now().await;
                return Ok(One::TimedOut);
            }
            let woke = match limit_changes.as_mut() {
                None => wait::watch(&s.client, watch, deadline).await,
                Some(rx) => tokio::select! {
                    w = wait::watch(&s.client, watch, deadline) => w,
                    // The limit changed: list again (a closed count sender never fires).
                    Ok(()) = rx.changed() => Wake::Again,
                },
            };
            match woke {
                Wake::Again => {}
                Wake::Deadline => {
                    let _ = guard.delete_now().await;
                    return Ok(One::TimedOut);
                }
                Wake::Closed => return Err(Error::closed()),
            }
        }
    }

    /// [`acquire`](Self::acquire) for the blocking face.
    pub fn acquire_blocking(
        &self,
        qty: usize,
        timeout: Option<Duration>,
    ) -> Result<Option<Vec<Lease>>> {
        runtime::try_block_on(self.acquire(qty, timeout))?
    }

    /// Returns a lease (Curator's returnLease).
    pub async fn return_lease(&self, lease: Lease) -> Result<()> {
        lease.release().await
    }

    /// Returns every lease (Curator's returnAll); the first error, if any, after trying all.
    pub async fn return_all(&self, leases: Vec<Lease>) -> Result<()> {
        let mut first = Ok(());
        for lease in leases {
            if let Err(e) = lease.release().await {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// The lease nodes, as full paths in sequence order.
    pub async fn participant_nodes(&self) -> Result<Vec<String>> {
        let s = &self.shared;
        let mut children = match s.client.get_children(&s.leases_path).await {
            Ok(c) => c,
            Err(Error::NoNode(_)) => Vec::new(),
            Err(e) => return Err(e),
        };
        super::internals::Sorter::Standard(LEASE_BASE_NAME).sort(&mut children);
        Ok(children
            .into_iter()
            .map(|c| path::join(&s.leases_path, &c))
            .collect())
    }
}

/// Returns the leases an acquire took (newest first), bounded by the acquire's deadline: once
/// it has passed, a delete the connection cannot carry goes on in the background (the deletes
/// are guaranteed, [`Client::delete_ours`]) instead of holding the acquire for the connection
/// timeout and the retry policy's pauses.
async fn return_all(leases: Vec<Lease>, deadline: Deadline) {
    deadline
        .bounding(async {
            for lease in leases.into_iter().rev() {
                let _ = lease.release().await;
            }
        })
        .await
}

/// Lets the `locks` mutex go if an acquire is cancelled while holding it.
struct Unlock {
    lock: InterProcessMutex,
    owner: Owner,
    armed: bool,
}

impl Drop for Unlock {
    fn drop(&mut self) {
        if self.armed {
            let (lock, owner) = (self.lock.clone(), self.owner);
            runtime::spawn(async move {
                let _ = lock.release(owner).await;
            });
        }
    }
}

/// Curator's InterProcessSemaphoreMutex: a mutex that is not reentrant (a second acquire
/// waits even from the same owner) and that any owner may release. Built on an
/// [`InterProcessSemaphoreV2`] with one lease, so it shares that layout.
#[derive(Clone, Debug)]
pub struct InterProcessSemaphoreMutex {
    semaphore: InterProcessSemaphoreV2,
    lease: Arc<Mutex<Option<Lease>>>,
}

impl InterProcessSemaphoreMutex {
    /// A semaphore mutex on `path` (validated).
    pub fn new(client: &Client, path: &str) -> Result<InterProcessSemaphoreMutex> {
        Ok(InterProcessSemaphoreMutex {
            semaphore: InterProcessSemaphoreV2::new(client, path, 1)?,
            lease: Arc::new(Mutex::new(None)),
        })
    }

    /// Acquires, waiting at most `timeout` (`None`: until acquired); whether it was acquired.
    pub async fn acquire(&self, timeout: Option<Duration>) -> Result<bool> {
        match self.semaphore.acquire(1, timeout).await? {
            Some(mut leases) => {
                let lease = leases.pop();
                *self.lease.lock().unwrap_or_else(|e| e.into_inner()) = lease;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Releases; `NotOwner` if it is not acquired by this object.
    pub async fn release(&self) -> Result<()> {
        let lease = self.lease.lock().unwrap_or_else(|e| e.into_inner()).take();
        match lease {
            Some(lease) => lease.release().await,
            None => Err(Error::NotOwner(
                format!(
                    "release semaphore mutex {}: not acquired",
                    self.semaphore.path()
                )
                .into(),
            )),
        }
    }

    /// [`acquire`](Self::acquire) for the blocking face.
    pub fn acquire_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.acquire(timeout))?
    }

    /// [`release`](Self::release) for the blocking face.
    pub fn release_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.release())?
    }

    /// Why the lease held is no longer to be trusted (it went with a session that ended), or
    /// `None` (held on the client's session, or nothing held).
    pub(crate) fn lost_hold(&self) -> Option<Error> {
        let lease = self.lease.lock().unwrap_or_else(|e| e.into_inner());
        let lease = lease.as_ref()?;
        if lease.client.is_closed() {
            return Some(Error::closed());
        }
        (lease.client.session_id() != lease.session).then(|| {
            Error::SessionExpired(
                format!(
                    "lock {}: its lease {} went with the session that made it",
                    self.semaphore.shared.path, lease.path
                )
                .into(),
            )
        })
    }

    /// Whether this object holds it.
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// The path of the lease node held, if any.
    pub fn lease_node(&self) -> Option<String> {
        self.lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|l| l.path.clone())
    }

    /// The semaphore underneath.
    pub fn semaphore(&self) -> &InterProcessSemaphoreV2 {
        &self.semaphore
    }
}
