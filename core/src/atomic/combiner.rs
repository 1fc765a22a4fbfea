//! Combining: concurrent adds from one process to one counter become one compare-and-set.
//!
//! There is one [`Combiner`] per (client, counter path, width), found through a process-wide
//! registry, and shared by every counter instance on that path. A caller queues its delta; if
//! no round is running, a leader task is spawned. The leader takes every queued delta, computes
//! each caller's pre/post value in queue order (as if the calls had run one after the other),
//! and writes the sum with one conditional write — first at the cached version, reading the
//! node only after a conflict. While a round is in flight new callers queue up for the next
//! one, so N concurrent callers cost about one round trip per round instead of N contended
//! ones.
//!
//! Clients of one process can meet on one counter too (a pool of sessions, one client per
//! worker thread). Clients with the same identity (connect string and credentials, see
//! `Config::identity`) share a [`Lane`] per counter node: their rounds take turns (first come,
//! first served), and each round starts from what the previous one learned, whichever client
//! made it. So they do not race each other's conditional writes: a write conflicts only with
//! other processes, and the next round is sent the moment the previous one's reply is in,
//! not after its caller's thread has woken and asked again. A turn is only an ordering: every
//! write stays conditional on the version it was computed from, so a round that stops waiting
//! for its turn (after [`TURN_WAIT`], when a holder's write hangs on a lost connection) is as
//! safe as one without lanes, and so is knowledge passed on that turns out stale.
//!
//! Each request keeps its own semantics: a Curator-style `add` refuses an overflow
//! (`Overflow`; Curator's wraps) and gives up (`succeeded == false`) when its retry policy
//! says so, counting one try per round it took
//! part in; an `add_and_get` reports overflow as an error and retries until its caller's
//! deadline. A request still queued when its caller gives up (timeout, dropped future) is
//! withdrawn and certainly not applied; once its round is in flight, the caller gets
//! [`Error::OutcomeUnknown`] instead.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use once_cell::sync::Lazy;
use tokio::sync::{oneshot, Notify};

use super::engine::{Engine, Written};
use super::Width;
use crate::retry::RetryPolicy;
use crate::{runtime, Client, Error, Result};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    /// The identity of the client's shared state (its address, unique while it lives; a live
    /// combiner holds the client, so a key of a live combiner cannot be reused).
    client: usize,
    full_path: String,
    width: Width,
}

/// Process-wide shared objects by key, held weakly: the entry of an object goes with it.
struct Registry<K, V>(Lazy<Mutex<HashMap<K, Weak<V>>>>);

impl<K: Eq + std::hash::Hash + Clone, V> Registry<K, V> {
    const fn new() -> Self {
        Registry(Lazy::new(|| Mutex::new(HashMap::new())))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Weak<V>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live object of `key`, or a new one from `make` (called under the registry's lock).
    fn get_or(&self, key: &K, make: impl FnOnce() -> V) -> Arc<V> {
        let mut map = self.lock();
        if let Some(found) = map.get(key).and_then(Weak::upgrade) {
            return found;
        }
        let made = Arc::new(make());
        map.insert(key.clone(), Arc::downgrade(&made));
        made
    }

    /// From an object's `Drop`: forgets `key` unless a new object already took it.
    fn forget(&self, key: &K) {
        let mut map = self.lock();
        if map.get(key).is_some_and(|w| w.strong_count() == 0) {
            map.remove(key);
        }
    }
}

static REGISTRY: Registry<Key, Combiner> = Registry::new();

/// A lane's key: the clients' identity (not the client), the node, the width.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct LaneKey {
    identity: u64,
    full_path: String,
    width: Width,
}

static LANES: Registry<LaneKey, Lane> = Registry::new();

/// How long a round waits for its turn before it goes without one (see the module notes).
/// Rounds take about a round trip each; this is for a holder stuck on a lost connection.
const TURN_WAIT: Duration = Duration::from_millis(500);

/// One counter node as the clients of this process with one identity write it: turns, and the
/// last thing any of them learned (see the module notes).
pub(crate) struct Lane {
    key: LaneKey,
    turn: tokio::sync::Mutex<()>,
    learned: Mutex<Option<(super::engine::Known<i64>, Instant)>>,
    /// A round gave up waiting: until the holder ends its round, rounds do not wait.
    stalled: std::sync::atomic::AtomicBool,
    /// Rounds that went without a turn (for tests: only those can meet a conflict from this
    /// process).
    unturned: std::sync::atomic::AtomicU64,
}

impl Drop for Lane {
    fn drop(&mut self) {
        LANES.forget(&self.key);
    }
}

fn lane_for(client: &Client, full_path: &str, width: Width) -> Arc<Lane> {
    let key = LaneKey {
        identity: client.cfg().identity,
        full_path: full_path.to_string(),
        width,
    };
    LANES.get_or(&key, || Lane {
        key: key.clone(),
        turn: tokio::sync::Mutex::new(()),
        learned: Mutex::new(None),
        stalled: std::sync::atomic::AtomicBool::new(false),
        unturned: std::sync::atomic::AtomicU64::new(0),
    })
}

/// A round's turn on its lane: on the way out, what the round learned goes on to the next.
struct Turn<'a> {
    lane: &'a Lane,
    engine: &'a Engine<Width>,
    held: Option<tokio::sync::MutexGuard<'a, ()>>,
}

impl Lane {
    /// Waits for this round's turn (up to [`TURN_WAIT`], or not at all while the lane is
    /// stalled), then hands the engine what the previous round learned.
    async fn enter<'a>(&'a self, engine: &'a Engine<Width>) -> Turn<'a> {
        let held = if let Ok(free) = self.turn.try_lock() {
            Some(free)
        } else if self.stalled.load(Ordering::SeqCst) {
            None
        } else {
            match tokio::time::timeout(TURN_WAIT, self.turn.lock()).await {
                Ok(held) => Some(held),
                Err(_) => {
                    self.stalled.store(true, Ordering::SeqCst);
                    None
                }
            }
        };
        if held.is_none() {
            self.unturned.fetch_add(1, Ordering::Relaxed);
        }
        let learned = *self.learned.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((known, at)) = learned {
            engine.adopt(known, at);
        }
        Turn {
            lane: self,
            engine,
            held,
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some((known, at)) = self.engine.learned() {
            super::engine::keep_newer(
                &mut self.lane.learned.lock().unwrap_or_else(|e| e.into_inner()),
                known,
                at,
            );
        }
        if self.held.take().is_some() {
            self.lane.stalled.store(false, Ordering::SeqCst);
        }
    }
}

/// The combiner of `client` for the counter at `path` (created on first use).
pub(crate) fn combiner_for(client: &Client, path: &str, width: Width) -> Arc<Combiner> {
    let key = Key {
        client: client.counters() as *const _ as usize,
        full_path: client.full_path(path).into_owned(),
        width,
    };
    REGISTRY.get_or(&key, || Combiner {
        lane: lane_for(client, &key.full_path, width),
        key: key.clone(),
        engine: Arc::new(Engine::new(client.clone(), path, width)),
        queue: Mutex::new(Queue {
            waiting: VecDeque::new(),
            leader: false,
            next_id: 1,
        }),
        arrived: Notify::new(),
    })
}

/// How a queued delta is added.
#[derive(Clone, Debug)]
pub(crate) enum Mode {
    /// `add_and_get`: overflow is an error; conflicts are retried until the caller's deadline.
    Checked,
    /// Curator's `add`: after a conflict, `policy` decides whether to try again (an overflow
    /// is refused too, where Curator wraps).
    Curator { policy: RetryPolicy },
}

/// A combined add's outcome for one caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Combined {
    pub(crate) succeeded: bool,
    pub(crate) pre: i64,
    pub(crate) post: i64,
    pub(crate) tries: u32,
    pub(crate) elapsed: Duration,
}

/// A request's claim: who decides its fate when its caller gives up during a round.
const PENDING: u8 = 0;
/// Its delta is part of a write in flight: the caller can no longer withdraw it.
const WRITING: u8 = 1;
/// Its caller gave up first: the round must leave it out.
const CANCELLED: u8 = 2;
/// Its caller gave up while a write carrying it was in flight (and was told `OutcomeUnknown`):
/// that write may land, but no later one may carry it.
const ABANDONED: u8 = 3;

struct Request {
    id: u64,
    claim: Arc<AtomicU8>,
    delta: i64,
    mode: Mode,
    start: Instant,
    tries: u32,
    not_before: Option<Instant>,
    reply: oneshot::Sender<Result<Combined>>,
}

impl Request {
    /// Takes the request into the coming write, unless its caller gave up.
    fn claim_for_write(&self) -> bool {
        self.claim
            .compare_exchange(PENDING, WRITING, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
            || self.claim.load(Ordering::SeqCst) == WRITING
    }

    /// Whether its caller gave up during a write carrying it.
    fn abandoned(&self) -> bool {
        self.claim.load(Ordering::SeqCst) == ABANDONED
    }

    /// Back to pending (the write did not happen, or a conflict sends it to the next round).
    fn unclaim(&self) {
        let _ = self
            .claim
            .compare_exchange(WRITING, PENDING, Ordering::SeqCst, Ordering::SeqCst);
    }

    fn answer(self, result: Result<Combined>) {
        let _ = self.reply.send(result);
    }

    fn done(&self, succeeded: bool, pre: i64, post: i64) -> Result<Combined> {
        Ok(Combined {
            succeeded,
            pre,
            post,
            tries: self.tries,
            elapsed: self.start.elapsed(),
        })
    }
}

/// If the leader task ends abnormally (a panic: a bug of ours), callers must not wait forever
/// for it: answer them, and let the next caller start a new leader.
struct LeaderGuard {
    combiner: Arc<Combiner>,
    armed: bool,
}

impl Drop for LeaderGuard {
    fn drop(&mut self) {
        if self.armed {
            let mut q = self.combiner.lock();
            q.leader = false;
            for r in q.waiting.drain(..) {
                r.answer(Err(Error::Internal(
                    format!(
                        "counter {}: the combining task failed",
                        self.combiner.engine.path
                    )
                    .into(),
                )));
            }
        }
    }
}

enum Next {
    Stop,
    Wait(Instant),
    Round(Vec<Request>),
}

struct Queue {
    waiting: VecDeque<Request>,
    leader: bool,
    next_id: u64,
}

/// See the module documentation.
pub(crate) struct Combiner {
    key: Key,
    lane: Arc<Lane>,
    pub(crate) engine: Arc<Engine<Width>>,
    queue: Mutex<Queue>,
    arrived: Notify,
}

impl Drop for Combiner {
    /// The last counter on this path and client is gone: forget the registry's entry (unless a
    /// new combiner already took the key meanwhile), so the registry never keeps dead entries.
    fn drop(&mut self) {
        REGISTRY.forget(&self.key);
    }
}

#[cfg(test)]
fn registered_under(prefix: &str) -> usize {
    REGISTRY
        .lock()
        .keys()
        .filter(|k| k.full_path.starts_with(prefix))
        .count()
}

/// A queued add; await [`Ticket::wait`]. Dropping it before the answer withdraws the request
/// if its round has not started.
pub(crate) struct Ticket {
    combiner: Arc<Combiner>,
    id: u64,
    claim: Arc<AtomicU8>,
    rx: oneshot::Receiver<Result<Combined>>,
    finished: bool,
}

impl Combiner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `delta`; the answer comes through the ticket.
    pub(crate) fn submit(self: &Arc<Self>, delta: i64, mode: Mode) -> Ticket {
        let (reply, rx) = oneshot::channel();
        let mut q = self.lock();
        let id = q.next_id;
        q.next_id += 1;
        let claim = Arc::new(AtomicU8::new(PENDING));
        q.waiting.push_back(Request {
            id,
            claim: claim.clone(),
            delta,
            mode,
            start: Instant::now(),
            tries: 0,
            not_before: None,
            reply,
        });
        if !q.leader {
            q.leader = true;
            runtime::spawn(self.clone().lead());
        } else {
            self.arrived.notify_one();
        }
        drop(q);
        Ticket {
            combiner: self.clone(),
            id,
            claim,
            rx,
            finished: false,
        }
    }

    /// Takes back a request whose caller gives up: true if it is certainly left out of every
    /// write (it was queued, or its round has not started writing); false if a write carrying
    /// it is (or was) in flight: then it is marked abandoned, and no later write carries it.
    fn withdraw(&self, id: u64, claim: &AtomicU8) -> bool {
        if self.dequeue(id) {
            return true;
        }
        loop {
            match claim.load(Ordering::SeqCst) {
                CANCELLED => return true,
                ABANDONED => return false,
                from => {
                    let to = if from == PENDING {
                        CANCELLED
                    } else {
                        ABANDONED
                    };
                    if claim
                        .compare_exchange(from, to, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                    {
                        return to == CANCELLED;
                    }
                    // The round moved it between pending and writing meanwhile: look again.
                }
            }
        }
    }

    fn dequeue(&self, id: u64) -> bool {
        let mut q = self.lock();
        match q.waiting.iter().position(|r| r.id == id) {
            Some(i) => {
                q.waiting.remove(i);
                true
            }
            None => false,
        }
    }

    /// The leader: runs rounds until the queue is empty.
    async fn lead(self: Arc<Self>) {
        let mut guard = LeaderGuard {
            combiner: self.clone(),
            armed: true,
        };
        loop {
            match self.next_batch() {
                Next::Stop => {
                    guard.armed = false;
                    return;
                }
                Next::Wait(until) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(until.into()) => {},
                        _ = self.arrived.notified() => {},
                        _ = self.engine.client.closed() => {},
                    }
                }
                Next::Round(batch) => {
                    let again = self.round(batch).await;
                    let mut q = self.lock();
                    for r in again.into_iter().rev() {
                        q.waiting.push_front(r);
                    }
                }
            }
        }
    }

    /// What the leader does next: a round with every ready request, a wait for the earliest
    /// retry time, or stop (queue empty, or the client closed: then everyone is answered).
    fn next_batch(&self) -> Next {
        let mut q = self.lock();
        q.waiting.retain(|r| !r.reply.is_closed());
        if q.waiting.is_empty() {
            q.leader = false;
            return Next::Stop;
        }
        if self.engine.client.is_closed() {
            for r in q.waiting.drain(..) {
                r.answer(Err(Error::Closed(
                    format!("counter {}: the client is closed", self.engine.path).into(),
                )));
            }
            q.leader = false;
            return Next::Stop;
        }
        let now = Instant::now();
        let (ready, later): (VecDeque<Request>, VecDeque<Request>) = q
            .waiting
            .drain(..)
            .partition(|r| r.not_before.map_or(true, |t| t <= now));
        q.waiting = later;
        if ready.is_empty() {
            Next::Wait(
                q.waiting
                    .iter()
                    .filter_map(|r| r.not_before)
                    .min()
                    .unwrap_or(now),
            )
        } else {
            Next::Round(Vec::from(ready))
        }
    }

    /// One compare-and-set round for `batch`; returns the requests to queue again.
    async fn round(&self, mut batch: Vec<Request>) -> Vec<Request> {
        batch.retain(|r| !r.reply.is_closed());
        if batch.is_empty() {
            return batch;
        }
        let engine = &self.engine;
        let _turn = self.lane.enter(engine).await;
        let (mut base, mut fresh) = match engine.cached() {
            Some(known) => (known, false),
            None => match engine.read().await {
                Ok(known) => (known, true),
                Err(e) => return fail_all(batch, e),
            },
        };
        loop {
            let plan = plan(engine.codec, base.value(), &batch);
            if plan.overflows && !fresh {
                // Decide overflow only against the node as read, never a cached guess.
                match engine.read().await {
                    Ok(known) => (base, fresh) = (known, true),
                    Err(e) => return fail_all(batch, e),
                }
                continue;
            }
            if !plan.writes {
                self.answer(batch, &plan);
                return Vec::new();
            }
            // From here on the callers can no longer withdraw: leave out whoever already did.
            let before = batch.len();
            batch.retain(Request::claim_for_write);
            if batch.len() != before {
                batch.iter().for_each(Request::unclaim);
                if batch.is_empty() {
                    return batch;
                }
                continue;
            }
            // Sent only while none of its callers has given up (a caller that gives up during
            // the write is told OutcomeUnknown: no send after that may carry its delta).
            let written = engine
                .write_while(&base, plan.total, &|| !batch.iter().any(Request::abandoned))
                .await;
            match written {
                Ok(None) => {
                    // Nothing of it applied, nothing more sent: on without the callers gone.
                    batch.retain(|r| !r.abandoned());
                    batch.iter().for_each(Request::unclaim);
                    if batch.is_empty() {
                        return batch;
                    }
                }
                Ok(Some(Written::Applied(_))) => {
                    self.answer(batch, &plan);
                    return Vec::new();
                }
                Ok(Some(Written::Conflict)) if !fresh => {
                    // The cached version was stale: this try goes on with the node as read.
                    batch.iter().for_each(Request::unclaim);
                    match engine.read().await {
                        Ok(known) => (base, fresh) = (known, true),
                        Err(e) => return fail_all(batch, e),
                    }
                }
                Ok(Some(Written::Conflict)) => break,
                Err(e @ Error::OutcomeUnknown(_)) => {
                    // Deltas that overflowed were not part of the write: evaluate them again.
                    let mut again = Vec::new();
                    for (r, slot) in batch.into_iter().zip(&plan.slots) {
                        match slot {
                            Slot::Overflow { .. } => {
                                r.unclaim();
                                again.push(r)
                            }
                            Slot::Add { .. } => r.answer(Err(e.clone())),
                        }
                    }
                    return again;
                }
                Err(e) => return fail_all(batch, e),
            }
        }
        // Another writer won this version, against a fresh read: one try for every caller.
        let pre = base.value();
        let now = Instant::now();
        let mut again = Vec::new();
        for mut r in batch {
            r.unclaim();
            r.tries += 1;
            let sleep = match &r.mode {
                Mode::Curator { policy } => {
                    match policy.next_sleep(r.tries - 1, r.start.elapsed()) {
                        None => {
                            let result = r.done(false, pre, 0);
                            r.answer(result);
                            continue;
                        }
                        Some(sleep) => sleep,
                    }
                }
                Mode::Checked => contention_backoff(r.tries),
            };
            r.not_before = (!sleep.is_zero()).then(|| now + sleep);
            again.push(r);
        }
        again
    }

    /// Answers every request of a committed round (or of a round that wrote nothing because
    /// every delta overflowed).
    fn answer(&self, batch: Vec<Request>, plan: &Plan) {
        let width = self.engine.codec;
        for (mut r, slot) in batch.into_iter().zip(&plan.slots) {
            r.tries += 1;
            let result = match *slot {
                Slot::Add { pre, post } => r.done(true, pre, post),
                Slot::Overflow { pre } => {
                    let op = match r.mode {
                        Mode::Checked => "add_and_get",
                        Mode::Curator { .. } => "add",
                    };
                    Err(super::overflow(op, r.delta, pre, width, &self.engine.path))
                }
            };
            r.answer(result);
        }
    }
}

fn fail_all(batch: Vec<Request>, e: Error) -> Vec<Request> {
    for r in batch {
        r.answer(Err(e.clone()));
    }
    Vec::new()
}

/// Backoff between conflicting rounds of `add_and_get` against other processes: none at
/// first, then a random pause growing to 100 ms, so that contending processes spread out.
fn contention_backoff(tries: u32) -> Duration {
    if tries < 2 {
        return Duration::ZERO;
    }
    let cap_ms = (1u64 << tries.min(7)).min(100);
    Duration::from_millis(fastrand::u64(0..=cap_ms))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Add { pre: i64, post: i64 },
    Overflow { pre: i64 },
}

struct Plan {
    slots: Vec<Slot>,
    /// The value to write.
    total: i64,
    overflows: bool,
    writes: bool,
}

/// Each caller's pre/post value, in queue order, from `base`.
fn plan(width: Width, base: i64, batch: &[Request]) -> Plan {
    let mut acc = base;
    let mut slots = Vec::with_capacity(batch.len());
    let (mut overflows, mut writes) = (false, false);
    for r in batch {
        let next = width.checked_add(acc, r.delta);
        match next {
            Some(post) => {
                slots.push(Slot::Add { pre: acc, post });
                acc = post;
                writes = true;
            }
            None => {
                slots.push(Slot::Overflow { pre: acc });
                overflows = true;
            }
        }
    }
    Plan {
        slots,
        total: acc,
        overflows,
        writes,
    }
}

impl Ticket {
    /// Waits for the answer, at most `timeout`. A timeout while the request is still queued is
    /// `Error::Timeout` (not applied); while its write is in flight, `Error::OutcomeUnknown`.
    pub(crate) async fn wait(mut self, timeout: Option<Duration>) -> Result<Combined> {
        let received = match timeout {
            None => (&mut self.rx).await,
            Some(limit) => match tokio::time::timeout(limit, &mut self.rx).await {
                Ok(received) => received,
                Err(_) => {
                    self.finished = true;
                    let path = &self.combiner.engine.path;
                    if self.combiner.withdraw(self.id, &self.claim) {
                        return Err(Error::Timeout(format!(
                            "add on {path}: no compare-and-set round got through within {limit:?}; the delta was not applied"
                        ).into()));
                    }
                    return match self.rx.try_recv() {
                        Ok(result) => result,
                        Err(_) => Err(Error::OutcomeUnknown(format!(
                            "add on {path}: timed out after {limit:?} while the write carrying this delta was in flight"
                        ).into())),
                    };
                }
            },
        };
        self.finished = true;
        received.unwrap_or_else(|_| {
            Err(Error::Internal(
                "the counter's combiner stopped without an answer".into(),
            ))
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.finished {
            // A cancelled caller: withdraw if still queued (else the round drops it when it
            // sees the closed reply channel, or it is already in flight).
            self.combiner.withdraw(self.id, &self.claim);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connected(server: &zkrecipes_testing::TestingServer) -> Client {
        crate::ClientBuilder::new(server.connect_string())
            .connect_blocking()
            .unwrap()
    }

    #[test]
    fn the_registry_forgets_a_combiner_when_its_last_counter_goes() {
        let server = zkrecipes_testing::TestingServer::start();
        let client = connected(&server);
        let counters: Vec<_> = (0..5)
            .map(|i| {
                crate::atomic::DistributedAtomicLong::new(
                    &client,
                    &format!("/registry-test/c{i}"),
                    None,
                    None,
                )
                .unwrap()
            })
            .collect();
        for c in &counters {
            assert_eq!(c.add_and_get_blocking(1, None).unwrap(), 1);
        }
        // Two counter objects on one path share one combiner (one entry).
        let twin =
            crate::atomic::DistributedAtomicLong::new(&client, "/registry-test/c0", None, None)
                .unwrap();
        assert_eq!(twin.add_and_get_blocking(1, None).unwrap(), 2);
        assert_eq!(registered_under("/registry-test/"), 5);
        // A round's task may hold its combiner a moment after answering: wait (bounded).
        let settles_at = |n: usize| {
            let deadline = Instant::now() + std::time::Duration::from_secs(10);
            while registered_under("/registry-test/") != n {
                assert!(
                    Instant::now() < deadline,
                    "the registry kept {} entries, wanted {n}",
                    registered_under("/registry-test/")
                );
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        };
        drop(counters);
        settles_at(1); // c0's twin lives on
        drop(twin);
        settles_at(0);
        client.close_blocking();
    }

    /// Clients of one identity on one counter: exact, every value once, and (when every round
    /// had its turn) not one conflicting write or extra read between them.
    #[test]
    fn clients_of_one_identity_take_turns_and_never_conflict() {
        const CLIENTS: usize = 6;
        const EACH: i64 = 150;
        let server = zkrecipes_testing::TestingServer::start();
        let clients: Vec<Client> = (0..CLIENTS).map(|_| connected(&server)).collect();
        let path = "/lane-test/turns";
        let lane = lane_for(&clients[0], path, Width::I64);
        let values: Vec<i64> = std::thread::scope(|s| {
            let threads: Vec<_> = clients
                .iter()
                .map(|c| {
                    s.spawn(move || {
                        let n =
                            crate::atomic::DistributedAtomicLong::new(c, path, None, None).unwrap();
                        (0..EACH)
                            .map(|_| n.add_and_get_blocking(1, None).unwrap())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            threads
                .into_iter()
                .flat_map(|t| t.join().unwrap())
                .collect()
        });
        let total = CLIENTS as i64 * EACH;
        let mut sorted = values.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=total).collect::<Vec<_>>(), "every value once");
        let check =
            crate::atomic::DistributedAtomicLong::new(&clients[0], path, None, None).unwrap();
        assert_eq!(check.get_blocking().unwrap().post_value, total);
        let (mut creates, mut sets) = (0, 0);
        for c in &clients {
            let r = c.request_counts();
            creates += r.create;
            sets += r.set_data;
        }
        // The first increment creates the node (and its parent); every other one is one
        // setData: no round of this process lost a version to another.
        let unturned = lane.unturned.load(Ordering::Relaxed);
        if unturned == 0 {
            assert_eq!(sets, total as u64 - 1, "{creates} creates");
        } else {
            // A round waited past TURN_WAIT (a very loaded machine): those went without.
            assert!(sets >= total as u64 - 1);
        }
        assert!(
            unturned < total as u64 / 10,
            "{unturned} rounds without a turn"
        );
        for c in clients {
            c.close_blocking();
        }
    }

    /// Lanes are per identity and node: other credentials, another path, a namespace or
    /// another width get their own.
    #[test]
    fn lanes_are_shared_only_within_one_identity() {
        let server = zkrecipes_testing::TestingServer::start();
        let connect = |auth: Option<&str>, ns: Option<&str>| {
            let mut b = crate::ClientBuilder::new(server.connect_string());
            if let Some(a) = auth {
                b = b.auth("digest", a.as_bytes().to_vec());
            }
            if let Some(ns) = ns {
                b = b.namespace(ns);
            }
            b.connect_blocking().unwrap()
        };
        let (a, b) = (connect(None, None), connect(None, None));
        let (alice, alice2, bob) = (
            connect(Some("alice:pw"), None),
            connect(Some("alice:pw"), None),
            connect(Some("bob:pw"), None),
        );
        let spaced = connect(None, Some("ns"));
        let lane = |c: &Client, p: &str, w: Width| lane_for(c, &c.full_path(p), w);
        let (long, int) = (Width::I64, Width::I32);
        // (one client, path, width; the other; whether they share a lane)
        let cases = [
            ((&a, "/c", long), (&b, "/c", long), true),
            ((&alice, "/c", long), (&alice2, "/c", long), true),
            ((&a, "/c", long), (&alice, "/c", long), false),
            ((&alice, "/c", long), (&bob, "/c", long), false),
            ((&a, "/c", long), (&a, "/d", long), false),
            ((&a, "/c", long), (&a, "/c", int), false),
            ((&a, "/c", long), (&spaced, "/c", long), false),
            // The namespaced client's /c is the plain client's /ns/c: one node, one lane.
            ((&a, "/ns/c", long), (&spaced, "/c", long), true),
        ];
        for (n, ((c1, p1, w1), (c2, p2, w2), shared)) in cases.into_iter().enumerate() {
            let same = Arc::ptr_eq(&lane(c1, p1, w1), &lane(c2, p2, w2));
            assert_eq!(same, shared, "case {n}");
        }
        for c in [a, b, alice, alice2, bob, spaced] {
            c.close_blocking();
        }
    }

    /// A turn held too long (a holder's write hanging on a lost connection) delays the others
    /// by at most TURN_WAIT once: they go on without turns, still exact, until a round with a
    /// turn ends.
    #[test]
    fn a_stuck_turn_does_not_stop_the_others() {
        let server = zkrecipes_testing::TestingServer::start();
        let client = connected(&server);
        let path = "/lane-test/stuck";
        let n = crate::atomic::DistributedAtomicLong::new(&client, path, None, None).unwrap();
        assert_eq!(n.add_and_get_blocking(1, None).unwrap(), 1);
        let lane = lane_for(&client, path, Width::I64);
        let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
        let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let lane = lane.clone();
            std::thread::spawn(move || {
                let _held = lane.turn.blocking_lock();
                held_tx.send(()).unwrap();
                hold_rx.recv().ok();
            })
        };
        held_rx.recv().unwrap();
        let before = lane.unturned.load(Ordering::Relaxed);
        for want in 2..=5 {
            assert_eq!(
                n.add_and_get_blocking(1, Some(std::time::Duration::from_secs(30)))
                    .unwrap(),
                want
            );
        }
        assert_eq!(lane.unturned.load(Ordering::Relaxed) - before, 4);
        assert!(lane.stalled.load(Ordering::SeqCst), "waits once, then not");
        hold_tx.send(()).unwrap();
        holder.join().unwrap();
        assert_eq!(n.add_and_get_blocking(1, None).unwrap(), 6);
        assert!(
            !lane.stalled.load(Ordering::SeqCst),
            "a round with its turn clears it"
        );
        client.close_blocking();
    }

    fn req(delta: i64, mode: Mode) -> Request {
        Request {
            id: 0,
            claim: Arc::default(),
            delta,
            mode,
            start: Instant::now(),
            tries: 0,
            not_before: None,
            reply: oneshot::channel().0,
        }
    }

    #[test]
    fn plan_serializes_callers_in_queue_order() {
        let batch = [
            req(1, Mode::Checked),
            req(5, Mode::Checked),
            req(-2, Mode::Checked),
        ];
        let p = plan(Width::I64, 10, &batch);
        assert_eq!(
            p.slots,
            vec![
                Slot::Add { pre: 10, post: 11 },
                Slot::Add { pre: 11, post: 16 },
                Slot::Add { pre: 16, post: 14 }
            ]
        );
        assert_eq!(p.total, 14);
        assert!(p.writes && !p.overflows);
    }

    #[test]
    fn plan_skips_overflowing_adds_of_either_mode_and_never_wraps() {
        let curator = Mode::Curator {
            policy: RetryPolicy::default(),
        };
        let batch = [
            req(1, Mode::Checked),
            req(1, Mode::Checked),
            req(1, curator),
            req(-1, Mode::Checked),
        ];
        let p = plan(Width::I32, (i32::MAX - 1) as i64, &batch);
        let max = i32::MAX as i64;
        assert_eq!(
            p.slots,
            vec![
                Slot::Add {
                    pre: max - 1,
                    post: max
                },
                Slot::Overflow { pre: max },
                Slot::Overflow { pre: max },
                Slot::Add {
                    pre: max,
                    post: max - 1
                },
            ]
        );
        assert!(p.overflows && p.writes);
        assert_eq!(p.total, max - 1);
    }

    #[test]
    fn backoff_starts_at_zero_and_stays_bounded() {
        assert_eq!(contention_backoff(1), Duration::ZERO);
        for tries in 2..40 {
            assert!(contention_backoff(tries) <= Duration::from_millis(100));
        }
    }
}
