//! kazoo's SetPartitioner: the members of a party divide a set of partitions among themselves.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::assign::partition_set;
use super::kazoo_lock::{HeldLock, KazooLock};
use crate::client::{CreateMode, DeleteOptions, Parents, Watch};
use crate::dispatch::{Dispatcher, ListenerId};
use crate::lifecycle::{Lifecycle, Phase};
use crate::lock::internals::DeletedListener;
use crate::wait::Deadline;
use crate::{path, runtime, Client, ConnectionState, Error, Result};

/// kazoo's `PartitionState`: where a [`SetPartitioner`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PartitionState {
    /// The set is being divided: waiting for the party to be stable for the time boundary,
    /// then taking the locks of this member's partitions. The state after start and after
    /// [`release_set`](SetPartitioner::release_set).
    Allocating,
    /// This member holds the lock of every partition in
    /// [`partitions`](SetPartitioner::partitions); no other member holds any of them.
    Acquired,
    /// The party changed, the connection changed state, or a held lock node was deleted by
    /// someone else: stop working on the partitions and call
    /// [`release_set`](SetPartitioner::release_set) soon (other members wait for it).
    Release,
    /// For good: the session was lost, the client closed, an error, or
    /// [`finish`](SetPartitioner::finish). Make a new partitioner to take part again.
    Failure,
}

impl PartitionState {
    /// Every state.
    pub const ALL: &'static [PartitionState] = &[
        PartitionState::Allocating,
        PartitionState::Acquired,
        PartitionState::Release,
        PartitionState::Failure,
    ];

    /// kazoo's name: `ALLOCATING`, `ACQUIRED`, `RELEASE`, `FAILURE` (every face's spelling).
    pub const fn name(self) -> &'static str {
        match self {
            PartitionState::Allocating => "ALLOCATING",
            PartitionState::Acquired => "ACQUIRED",
            PartitionState::Release => "RELEASE",
            PartitionState::Failure => "FAILURE",
        }
    }

    /// The state of a [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<PartitionState> {
        Self::ALL.iter().copied().find(|s| s.name() == name)
    }
}

impl std::fmt::Display for PartitionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// kazoo's `partition_func`: given this member's identifier, the party's identifiers (in the
/// listing's order) and the whole set (in the order given), the partitions this member takes.
/// Every member of a party must compute the same division, or members wait for locks another
/// member keeps (never both holding one: each partition has one lock). Runs on a thread of the
/// library's blocking pool once per allocation; an error, a partition not in the set or one
/// named twice makes the partitioner [`Failure`](PartitionState::Failure) (logged with the
/// reason).
pub type PartitionFunc =
    Arc<dyn Fn(&str, &[String], &[String]) -> Result<Vec<String>> + Send + Sync>;

/// Options of a [`SetPartitioner`] (kazoo's keyword arguments and defaults).
#[derive(Clone)]
pub struct PartitionerOptions {
    /// This member's identifier in the party (it decides the member's share). Default:
    /// `<hostname>-<pid>` (kazoo: `<fqdn>-<pid>`). Must not be empty or contain `/`.
    pub identifier: Option<String>,
    /// How long the party must stay unchanged before the set is divided (kazoo's
    /// `time_boundary`, 30 s).
    pub time_boundary: Duration,
    /// How long one attempt at a partition's lock waits before checking whether the party
    /// changed meanwhile (kazoo's `max_reaction_time`, 1 s).
    pub max_reaction_time: Duration,
    /// How the set is divided (kazoo's `partition_func`); `None`: kazoo's default,
    /// [`partition_set`], which kazoo members compute too.
    pub partition_func: Option<PartitionFunc>,
}

impl PartitionerOptions {
    /// These options with `f` as the [`partition_func`](Self::partition_func).
    pub fn partition_func(
        mut self,
        f: impl Fn(&str, &[String], &[String]) -> Result<Vec<String>> + Send + Sync + 'static,
    ) -> Self {
        self.partition_func = Some(Arc::new(f));
        self
    }
}

impl Default for PartitionerOptions {
    fn default() -> Self {
        PartitionerOptions {
            identifier: None,
            time_boundary: Duration::from_secs(30),
            max_reaction_time: Duration::from_secs(1),
            partition_func: None,
        }
    }
}

impl std::fmt::Debug for PartitionerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionerOptions")
            .field("identifier", &self.identifier)
            .field("time_boundary", &self.time_boundary)
            .field("max_reaction_time", &self.max_reaction_time)
            .field(
                "partition_func",
                &self.partition_func.as_ref().map(|_| "<function>"),
            )
            .finish()
    }
}

/// kazoo's SetPartitioner: divides `set` among the members of the party at `path`, each
/// partition to exactly one member, and divides it again when members come or go.
///
/// A member joins the party (`path/party`), waits until the party has not changed for the
/// time boundary, computes its share with kazoo's function ([`partition_set`]) and takes kazoo's
/// Lock of each of its partitions (`path/locks/<partition>`) — only then is it
/// [`Acquired`](PartitionState::Acquired). A change of the party afterwards makes it
/// [`Release`](PartitionState::Release); the user stops working on the partitions and calls
/// [`release_set`](Self::release_set), which releases the locks and allocates again. A
/// partition is therefore never held by two members: whatever two members believe about the
/// party, a partition's lock has one holder, and a member is `Acquired` only while it holds the
/// locks of all its partitions. kazoo processes on the same path take part on equal terms (the
/// layout is kazoo's: see the module notes and docs/PARTITIONER.md).
///
/// Connection states, as kazoo: `LOST` makes it [`Failure`](PartitionState::Failure) (the
/// session's nodes are gone); any other change (`SUSPENDED`, `RECONNECTED`, …) makes an
/// allocating or acquired member `Release` (its locks may be in doubt). Beyond kazoo: the
/// deletion of a held lock node by someone else makes it `Release` too, a member whose party
/// node was deleted joins again instead of stalling, and a closed client is `Failure`.
pub struct SetPartitioner {
    shared: Arc<Shared>,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

struct Shared {
    client: Client,
    path: String,
    party_path: String,
    lock_path: String,
    set: Vec<String>,
    identifier: String,
    /// Our party node: `<32 hex>-<identifier>`.
    party_node: String,
    options: PartitionerOptions,
    life: Lifecycle,
    st: Mutex<St>,
    /// The state id after every change (kazoo's `state_id`).
    changed: watch::Sender<u64>,
    dispatcher: Dispatcher<PartitionState>,
    /// Held by a join's create, and by the removal of the node a failed start may have left
    /// (`leave_after_failed_join`): that removal never deletes the node of a start after it.
    join_gate: tokio::sync::Mutex<()>,
    /// The user's partition function (taken out of `options`), dropped at FAILURE: a face's
    /// function (a Python or JS one) may refer back to the partitioner that holds it, a cycle no
    /// collector sees through native code.
    partition_func: Mutex<Option<PartitionFunc>>,
}

struct St {
    state: PartitionState,
    state_id: u64,
    partitions: Vec<String>,
    locks: Vec<HeldLock>,
}

impl std::fmt::Debug for SetPartitioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetPartitioner")
            .field("path", &self.shared.path)
            .field("identifier", &self.shared.identifier)
            .field("state", &self.state())
            .finish()
    }
}

/// How an allocation ended.
enum Step {
    /// Acquired at this state id; the watch on the party (from the listing the share was
    /// computed from).
    Acquired(u64, Changed),
    /// The party changed while taking the locks: allocate again.
    Again,
    /// The state was changed by someone else (release_set, a connection change, finish).
    StateChanged,
    /// Closed or failed: the driver ends.
    Exit,
}

/// A party watch turned into a flag that can be looked at without waiting.
struct Changed {
    rx: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

impl Changed {
    fn new(w: Watch) -> Changed {
        let (tx, rx) = watch::channel(false);
        let task = runtime::spawn(async move {
            w.changed().await;
            let _ = tx.send(true);
        });
        Changed { rx, task }
    }

    fn fired(&self) -> bool {
        *self.rx.borrow()
    }

    async fn wait(&mut self) {
        let _ = self.rx.wait_for(|f| *f).await;
    }
}

impl Drop for Changed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SetPartitioner {
    /// A member of the partitioner at `path` dividing `set`. Nothing happens on the server
    /// before [`start`](Self::start).
    ///
    /// Errors: `InvalidArgument` for a bad path, an identifier that is empty or not part of a
    /// node name, a partition that is not a node name (empty, `/`, `.`, `..`) or appears
    /// twice, a zero time boundary or reaction time; `Closed` on a closed client.
    pub fn new<S: AsRef<str>>(
        client: &Client,
        path: &str,
        set: &[S],
        options: PartitionerOptions,
    ) -> Result<SetPartitioner> {
        client.ensure_open_for("SetPartitioner", path)?;
        path::validate_path(path)?;
        let lock_path = path::join(path, "locks");
        let party_path = path::join(path, "party");
        let identifier = options
            .identifier
            .clone()
            .unwrap_or_else(|| format!("{}-{}", super::hostname(), std::process::id()));
        if identifier.is_empty() || identifier.contains('/') {
            return Err(Error::invalid(format!(
                "partitioner identifier {identifier:?} must be part of a node name: not empty, no '/'"
            )));
        }
        let party_node = format!("{}-{identifier}", uuid::Uuid::new_v4().simple());
        path::validate_path(&path::join(&party_path, &party_node)).map_err(|e| {
            Error::invalid(format!(
                "partitioner identifier {identifier:?}: {}",
                e.message()
            ))
        })?;
        let mut seen = HashSet::new();
        for p in set {
            let p = p.as_ref();
            if p.is_empty() || p.contains('/') || p == "." || p == ".." {
                return Err(Error::invalid(format!(
                    "partition {p:?} must be a node name: not empty, no '/', not . or .."
                )));
            }
            path::validate_path(&path::join(&lock_path, p))
                .map_err(|e| Error::invalid(format!("partition {p:?}: {}", e.message())))?;
            if !seen.insert(p) {
                return Err(Error::invalid(format!(
                    "partition {p:?} appears twice in the set"
                )));
            }
        }
        let mut options = options;
        let partition_func = options.partition_func.take();
        if options.time_boundary.is_zero() || options.max_reaction_time.is_zero() {
            return Err(Error::invalid(
                "time_boundary and max_reaction_time must be more than zero",
            ));
        }
        Ok(SetPartitioner {
            shared: Arc::new(Shared {
                client: client.clone(),
                path: path.to_string(),
                party_path,
                lock_path,
                set: set.iter().map(|p| p.as_ref().to_string()).collect(),
                identifier,
                party_node,
                options,
                life: Lifecycle::new("SetPartitioner", path),
                st: Mutex::new(St {
                    state: PartitionState::Allocating,
                    state_id: 0,
                    partitions: Vec::new(),
                    locks: Vec::new(),
                }),
                changed: watch::channel(0).0,
                dispatcher: Dispatcher::new(),
                join_gate: tokio::sync::Mutex::new(()),
                partition_func: Mutex::new(partition_func),
            }),
            tasks: Arc::default(),
        })
    }

    /// Joins the party (`path`, `path/locks` and `path/party` made PERSISTENT, as kazoo makes
    /// them) and starts allocating in the background; returns once joined. The state is
    /// [`Allocating`](PartitionState::Allocating).
    ///
    /// Errors: `InvalidArgument` when started twice; `Closed`; connection errors after the
    /// retry policy (it may then be started again).
    ///
    /// A start whose caller stops waiting (a timeout around it, a cancelled task) goes on to
    /// its end (its own task): dropped once its party node was made, it would leave a member
    /// counted, and given a share nobody takes, while this object stayed unstarted.
    pub async fn start(&self) -> Result<()> {
        let (sh, tasks) = (self.shared.clone(), self.tasks.clone());
        runtime::run_to_end(async move { Self::start_as_task(sh, &tasks).await }).await
    }

    async fn start_as_task(sh: Arc<Shared>, tasks: &Mutex<Vec<JoinHandle<()>>>) -> Result<()> {
        let starting = sh.life.begin_start(&sh.client)?;
        sh.client
            .ensure_path(&sh.lock_path, Parents::Persistent)
            .await?;
        sh.client
            .ensure_path(&sh.party_path, Parents::Persistent)
            .await?;
        if let Err(e) = sh.join().await {
            drop(starting); // not started: Latent again before the removal looks
            leave_after_failed_join(&sh);
            return Err(e);
        }
        let weak = Arc::downgrade(&sh);
        let states = sh.client.subscribe_events();
        let started = starting.finish(|| {
            let mut tasks = tasks.lock().unwrap_or_else(|e| e.into_inner());
            tasks.push(runtime::spawn(drive(weak.clone())));
            tasks.push(runtime::spawn(follow_connection(weak, states)));
        });
        if let Err(e) = started {
            // Finished while joining: `finish` left before our party node was made (its
            // delete found nothing); leave now, or every member would count a member that
            // never takes its share.
            sh.fail_out().await;
            return Err(e);
        }
        tracing::debug!(path = %sh.path, identifier = %sh.identifier, "partitioner joined the party");
        Ok(())
    }

    /// [`start`](Self::start) for the blocking face.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }

    /// The state now.
    pub fn state(&self) -> PartitionState {
        self.shared.lock().state
    }

    /// The partitions this member holds: its share while [`Acquired`](PartitionState::Acquired)
    /// (sorted), nothing in any other state (kazoo keeps showing the last share; a member that
    /// is told to release should not go on working on it).
    pub fn partitions(&self) -> Vec<String> {
        let st = self.shared.lock();
        if st.state == PartitionState::Acquired {
            st.partitions.clone()
        } else {
            Vec::new()
        }
    }

    /// The state and the partitions in one reading: `(state, partitions)` (the partitions are
    /// empty unless `Acquired`).
    pub fn snapshot(&self) -> (PartitionState, Vec<String>) {
        let st = self.shared.lock();
        let parts = if st.state == PartitionState::Acquired {
            st.partitions.clone()
        } else {
            Vec::new()
        };
        (st.state, parts)
    }

    /// This member's identifier.
    pub fn identifier(&self) -> &str {
        &self.shared.identifier
    }

    /// The partitioner's path.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The set being divided, as given.
    pub fn set(&self) -> &[String] {
        &self.shared.set
    }

    /// kazoo's `wait_for_acquire`: waits while [`Allocating`](PartitionState::Allocating), at
    /// most `timeout` (`None`: no limit); whether it is [`Acquired`](PartitionState::Acquired)
    /// then (`false` in `Release` or `Failure`, and when the time ran out).
    ///
    /// Errors: `InvalidArgument` before start.
    pub async fn wait_for_acquire(&self, timeout: Option<Duration>) -> Result<bool> {
        let sh = &self.shared;
        if sh.life.phase() == crate::lifecycle::Phase::Latent {
            return Err(sh.life.not_started_error("wait_for_acquire"));
        }
        let deadline = Deadline::after(timeout);
        let mut rx = sh.changed.subscribe();
        loop {
            match self.state() {
                PartitionState::Allocating => {}
                s => return Ok(s == PartitionState::Acquired),
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return Ok(false) },
                _ = deadline.sleep() => return Ok(false),
            }
        }
    }

    /// [`wait_for_acquire`](Self::wait_for_acquire) for the blocking face.
    pub fn wait_for_acquire_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.wait_for_acquire(timeout))?
    }

    /// Waits until the state differs from `seen`, at most `timeout`; the state then (`seen`
    /// when the time ran out). For loops that react to every change.
    pub async fn wait_for_change(
        &self,
        seen: PartitionState,
        timeout: Option<Duration>,
    ) -> PartitionState {
        let deadline = Deadline::after(timeout);
        let mut rx = self.shared.changed.subscribe();
        loop {
            let now = self.state();
            if now != seen {
                return now;
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return self.state() },
                _ = deadline.sleep() => return self.state(),
            }
        }
    }

    /// [`wait_for_change`](Self::wait_for_change) for the blocking face.
    pub fn wait_for_change_blocking(
        &self,
        seen: PartitionState,
        timeout: Option<Duration>,
    ) -> Result<PartitionState> {
        runtime::try_block_on(self.wait_for_change(seen, timeout))
    }

    /// kazoo's `release_set`: releases the partitions' locks and allocates again (state
    /// [`Allocating`](PartitionState::Allocating)). Call it in `Release`; in `Acquired` it gives
    /// the partitions up and divides the set again; in `Failure` it only releases what is left.
    ///
    /// Errors: `InvalidArgument` before start; a lock that could not be released (its delete
    /// goes on in the background; the partitioner is then `Failure`, as kazoo's).
    pub async fn release_set(&self) -> Result<()> {
        let sh = &self.shared;
        if sh.life.phase() == crate::lifecycle::Phase::Latent {
            return Err(sh.life.not_started_error("release_set"));
        }
        // Out of ACQUIRED before the locks go (in one step with taking them): the partitions are
        // never listed as ours while another member may already hold them, and an allocation
        // that completes meanwhile keeps its state and its locks (setting ALLOCATING after the
        // release would orphan them: the next allocation would queue behind our own nodes).
        let locks = {
            let mut st = sh.lock();
            let locks = std::mem::take(&mut st.locks);
            if st.state != PartitionState::Failure {
                sh.set_state(&mut st, PartitionState::Allocating);
            }
            locks
        };
        if let Err(e) = release_all(locks).await {
            tracing::warn!(path = %sh.path, error = %e, "partitioner: a partition lock could not be released; FAILURE");
            sh.fail_out().await;
            return Err(e);
        }
        Ok(())
    }

    /// [`release_set`](Self::release_set) for the blocking face.
    pub fn release_set_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.release_set())?
    }

    /// kazoo's `finish`: [`Failure`](PartitionState::Failure) at once (the partitions are no
    /// longer this member's), then releases the locks and leaves the party. Finishing twice,
    /// or before start, is fine. The releases and the leave go on if this call is dropped (a
    /// timeout around it, a cancelled task): the member never stays in the party, counted and
    /// given a share it does not take, for the rest of its session.
    pub async fn finish(&self) -> Result<()> {
        self.stop_tasks();
        self.shared.life.close();
        let shared = self.shared.clone();
        runtime::run_to_end(async move {
            shared.fail_out().await;
            Ok(())
        })
        .await
    }

    /// [`finish`](Self::finish) for the blocking face.
    pub fn finish_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.finish())?
    }

    /// Adds a listener that gets every new state (kazoo's `state_change_event`, with the
    /// state); returns its id. Listeners run on the partitioner's dispatcher
    /// ([`crate::dispatch`]).
    pub fn add_listener(
        &self,
        listener: impl Fn(&PartitionState) + Send + Sync + 'static,
    ) -> ListenerId {
        self.shared.dispatcher.add(listener)
    }

    /// Removes a listener; whether it was there. `InvalidArgument` for an id that another
    /// client or recipe gave out.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.shared.dispatcher.remove(id)
    }

    fn stop_tasks(&self) {
        for t in self
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            t.abort();
        }
    }
}

impl Drop for SetPartitioner {
    fn drop(&mut self) {
        self.stop_tasks();
        self.shared.dispatcher.clear();
        if self.shared.life.close() != crate::lifecycle::Phase::Closed {
            // Not finished: leave the party and give the locks up in the background.
            let sh = self.shared.clone();
            runtime::spawn(async move { sh.fail_out().await });
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, St> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_state(&self, st: &mut St, state: PartitionState) {
        st.state = state;
        st.state_id += 1;
        if state != PartitionState::Acquired {
            st.partitions.clear();
        }
        self.changed.send_replace(st.state_id);
        self.dispatcher.emit(state);
        match state {
            PartitionState::Failure => {
                drop(
                    self.partition_func
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take(),
                );
                tracing::warn!(path = %self.path, identifier = %self.identifier, "partitioner: FAILURE")
            }
            _ => {
                tracing::debug!(path = %self.path, identifier = %self.identifier, %state, "partitioner state")
            }
        }
    }

    /// Sets `state` if the state is one of `from`; whether it did.
    fn transition(&self, from: &[PartitionState], state: PartitionState) -> bool {
        let mut st = self.lock();
        if from.contains(&st.state) {
            self.set_state(&mut st, state);
            true
        } else {
            false
        }
    }

    /// Creates our party node (EPHEMERAL, the identifier as data); one found is ours (its
    /// name has our uuid).
    async fn join(&self) -> Result<()> {
        let _gate = self.join_gate.lock().await;
        let node = path::join(&self.party_path, &self.party_node);
        let data = self.identifier.as_bytes();
        match self
            .client
            .retry(|s| {
                let node = node.as_str();
                async move {
                    s.create_with_parents(
                        node,
                        data,
                        CreateMode::Ephemeral,
                        None,
                        Parents::Persistent,
                    )
                    .await
                }
            })
            .await
        {
            Ok(_) | Err(Error::NodeExists(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// kazoo's `_fail_out`: FAILURE, the locks given up, the party left.
    async fn fail_out(&self) {
        let locks = {
            let mut st = self.lock();
            if st.state != PartitionState::Failure {
                self.set_state(&mut st, PartitionState::Failure);
            }
            std::mem::take(&mut st.locks)
        };
        let _ = release_all(locks).await;
        if !self.client.is_closed() {
            let _ = self
                .client
                .delete_ours(&path::join(&self.party_path, &self.party_node))
                .await;
        }
    }

    /// Whether an allocation that began at `id` must stop: the state changed, or the party.
    fn abort_needed(&self, id: u64, changed: &Changed) -> Option<Step> {
        if self.lock().state_id != id {
            Some(Step::StateChanged)
        } else if changed.fired() {
            Some(Step::Again)
        } else {
            None
        }
    }

    /// Waits until the party has not changed for the time boundary (kazoo's
    /// PatientChildrenWatch); the listing and its watch. `None` when the state changed or the
    /// client closed meanwhile.
    async fn patient_children(&self, id: u64) -> Result<Option<(Vec<String>, Changed)>> {
        let mut state_rx = self.changed.subscribe();
        loop {
            let (children, w) = match self.client.get_children_watch(&self.party_path).await {
                Ok(r) => r,
                Err(Error::NoNode(_)) => {
                    // The party node was deleted: make it, join again, look again.
                    self.client
                        .ensure_path(&self.party_path, Parents::Persistent)
                        .await?;
                    self.join().await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut changed = Changed::new(w);
            tokio::select! {
                _ = tokio::time::sleep(self.options.time_boundary) => {
                    if !changed.fired() {
                        return Ok(Some((children, changed)));
                    }
                }
                _ = changed.wait() => {}
                _ = state_rx.wait_for(|v| *v != id) => return Ok(None),
                _ = self.client.closed() => return Ok(None),
            }
        }
    }

    /// This member's share from the user's partition function, run on the blocking pool (it
    /// may be slow, or wait for another thread: a Python or JS function), checked against the set.
    async fn custom_share(&self, f: PartitionFunc, members: &[&str]) -> Result<Vec<String>> {
        let identifier = self.identifier.clone();
        let members: Vec<String> = members.iter().map(|m| m.to_string()).collect();
        let set = self.set.clone();
        let share = runtime::spawn_callback(move || f(&identifier, &members, &set))
            .await
            .map_err(|e| Error::invalid(format!("the partition function panicked: {e}")))??;
        let mut seen = HashSet::new();
        for p in &share {
            if !self.set.contains(p) {
                return Err(Error::invalid(format!(
                    "the partition function returned {p:?}, which is not in the set"
                )));
            }
            if !seen.insert(p.as_str()) {
                return Err(Error::invalid(format!(
                    "the partition function returned {p:?} twice"
                )));
            }
        }
        // Sorted, as kazoo's default share is: `partitions` says so, and every member takes its
        // locks in one order (two members whose functions disagree cannot each hold a lock the
        // other waits for).
        let mut share = share;
        share.sort_unstable();
        Ok(share)
    }

    /// One allocation (kazoo's `_allocate_transition`), begun in ALLOCATING at `id`.
    async fn allocate(self: &Arc<Self>, id: u64) -> Step {
        let (children, changed) = match self.patient_children(id).await {
            Ok(Some(r)) => r,
            Ok(None) => return Step::StateChanged,
            Err(Error::Closed(_)) => return Step::Exit,
            Err(e) => {
                tracing::warn!(path = %self.path, error = %e, "partitioner: the party could not be read");
                self.fail_out().await;
                return Step::Exit;
            }
        };
        let members: Vec<&str> = children
            .iter()
            .map(|c| c.find('-').map_or(c.as_str(), |i| &c[i + 1..]))
            .collect();
        if !children.contains(&self.party_node) {
            // Our party node was deleted by someone else: join again (kazoo stalls here).
            tracing::info!(path = %self.path, identifier = %self.identifier, "partitioner: our party node is gone; joining again");
            return match self.join().await {
                Ok(()) => Step::Again,
                Err(Error::Closed(_)) => Step::Exit,
                Err(e) => {
                    tracing::warn!(path = %self.path, error = %e, "partitioner: could not join the party again");
                    self.fail_out().await;
                    Step::Exit
                }
            };
        }
        if members.iter().filter(|m| **m == self.identifier).count() > 1 {
            tracing::warn!(path = %self.path, identifier = %self.identifier,
                "partitioner: two members share this identifier; they get the same share and only one can hold it");
        }
        let custom = self
            .partition_func
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let share = match custom {
            None => match partition_set(&self.identifier, &members, &self.set) {
                Some(share) => share,
                None => return Step::Again,
            },
            Some(f) => match self.custom_share(f, &members).await {
                Ok(share) => share,
                Err(e) => {
                    tracing::warn!(path = %self.path, identifier = %self.identifier, error = %e,
                        "partitioner: the partition function failed; FAILURE");
                    self.fail_out().await;
                    return Step::Exit;
                }
            },
        };
        let mut held: Vec<HeldLock> = Vec::with_capacity(share.len());
        let weak = Arc::downgrade(self);
        let deleted: DeletedListener = Arc::new(move |node: &str| {
            if let Some(sh) = weak.upgrade() {
                tracing::warn!(path = %sh.path, %node, "partitioner: a held partition lock was deleted by someone else; RELEASE");
                sh.transition(
                    &[PartitionState::Allocating, PartitionState::Acquired],
                    PartitionState::Release,
                );
            }
        });
        for p in &share {
            let lock = KazooLock::new(&self.client, &path::join(&self.lock_path, p));
            loop {
                let attempt = lock
                    .acquire(
                        self.identifier.as_bytes(),
                        Some(self.options.max_reaction_time),
                        Some(deleted.clone()),
                    )
                    .await;
                match attempt {
                    Ok(Some(h)) => {
                        held.push(h);
                        break;
                    }
                    Ok(None) => {
                        if let Some(step) = self.abort_needed(id, &changed) {
                            let _ = release_all(held).await;
                            return step;
                        }
                    }
                    Err(Error::Closed(_)) => return Step::Exit,
                    Err(e) => {
                        tracing::warn!(path = %self.path, partition = %p, error = %e, "partitioner: a partition lock failed");
                        let _ = release_all(held).await;
                        self.fail_out().await;
                        return Step::Exit;
                    }
                }
            }
            if let Some(step) = self.abort_needed(id, &changed) {
                let _ = release_all(held).await;
                return step;
            }
        }
        {
            let mut st = self.lock();
            if st.state_id == id && !changed.fired() {
                st.locks = held;
                st.partitions = share;
                self.set_state(&mut st, PartitionState::Acquired);
                return Step::Acquired(st.state_id, changed);
            }
        }
        let _ = release_all(held).await;
        self.abort_needed(id, &changed).unwrap_or(Step::Again)
    }
}

async fn release_all(locks: Vec<HeldLock>) -> Result<()> {
    let mut first_error = None;
    for l in locks {
        let node = l.path().to_string();
        if let Err(e) = l.release().await {
            tracing::debug!(%node, error = %e, "partition lock release failed (continued in the background)");
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The partitioner's driver: allocates in ALLOCATING, watches the party in ACQUIRED, waits in
/// RELEASE, ends in FAILURE.
async fn drive(weak: Weak<Shared>) {
    enum Woke {
        Party,
        State,
        Closed,
    }
    let mut acquired_watch: Option<(u64, Changed)> = None;
    loop {
        let Some(sh) = weak.upgrade() else { return };
        let mut rx = sh.changed.subscribe();
        let (state, id) = {
            let st = sh.lock();
            (st.state, st.state_id)
        };
        match state {
            PartitionState::Failure => return,
            PartitionState::Allocating => {
                acquired_watch = None;
                match sh.allocate(id).await {
                    Step::Acquired(at, changed) => acquired_watch = Some((at, changed)),
                    Step::Again | Step::StateChanged => {}
                    Step::Exit => {
                        if sh.client.is_closed() {
                            sh.transition(
                                &[
                                    PartitionState::Allocating,
                                    PartitionState::Acquired,
                                    PartitionState::Release,
                                ],
                                PartitionState::Failure,
                            );
                        }
                        return;
                    }
                }
            }
            PartitionState::Acquired | PartitionState::Release => {
                let closed = sh.client.closed();
                drop(sh);
                let mut watch = acquired_watch.take().filter(|(at, _)| *at == id);
                let woke = {
                    let party = async {
                        match watch.as_mut() {
                            Some((_, changed)) => changed.wait().await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        _ = party => Woke::Party,
                        _ = rx.wait_for(|v| *v != id) => Woke::State,
                        _ = closed => Woke::Closed,
                    }
                };
                let Some(sh) = weak.upgrade() else { return };
                match woke {
                    Woke::Party => {
                        let mut st = sh.lock();
                        if st.state_id == id && st.state == PartitionState::Acquired {
                            tracing::debug!(path = %sh.path, "partitioner: the party changed; RELEASE");
                            sh.set_state(&mut st, PartitionState::Release);
                        }
                    }
                    Woke::State => {}
                    Woke::Closed => {
                        sh.transition(
                            &[PartitionState::Acquired, PartitionState::Release],
                            PartitionState::Failure,
                        );
                        return;
                    }
                }
            }
        }
    }
}

/// kazoo's `_establish_sessionwatch`: LOST → FAILURE (and leave); any other change → RELEASE
/// unless releasing or failed already.
async fn follow_connection(
    weak: Weak<Shared>,
    mut states: tokio::sync::broadcast::Receiver<ConnectionState>,
) {
    loop {
        let state = match states.recv().await {
            Ok(s) => s,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let Some(sh) = weak.upgrade() else { return };
        if state == ConnectionState::Lost {
            tracing::warn!(path = %sh.path, "partitioner: the session was lost");
            sh.fail_out().await;
            return;
        }
        sh.transition(
            &[PartitionState::Allocating, PartitionState::Acquired],
            PartitionState::Release,
        );
    }
}

/// A start whose join failed (the retry policy gave up on the connection) may have made our
/// party node all the same (its reply lost): the other members would count a member that
/// never takes its share (kazoo's too) until the session ends. Once connected again, it is
/// deleted, unless the object was started again meanwhile (the new start's join adopts the
/// node; the gate keeps the two apart) — also after the object is dropped.
fn leave_after_failed_join(sh: &Arc<Shared>) {
    let weak = Arc::downgrade(sh);
    let client = sh.client.downgrade();
    let node = path::join(&sh.party_path, &sh.party_node);
    runtime::spawn(async move {
        loop {
            let Some(c) = client.upgrade() else {
                return;
            };
            if c.is_closed() {
                return;
            }
            if c.wait_for_state(Duration::from_secs(1), |s| s.is_connected())
                .await
                .is_err()
            {
                continue;
            }
            let sh = weak.upgrade();
            if let Some(sh) = &sh {
                // A start under way: its end decides (started: the node, if any, is that
                // start's; failed before its join, or closed: still ours to remove).
                let mut phase = sh.life.subscribe();
                let settled = *phase
                    .wait_for(|p| *p != Phase::Starting)
                    .await
                    .expect("the lifecycle lives in `sh`");
                if settled == Phase::Started {
                    return;
                }
            }
            let _gate = match &sh {
                Some(sh) => Some(sh.join_gate.lock().await),
                None => None,
            };
            match sh.as_ref().map(|sh| sh.life.phase()) {
                Some(Phase::Started) => return,
                Some(Phase::Starting) => continue, // another start began: wait for its end
                _ => {}
            }
            match c.delete(&node, DeleteOptions::default()).await {
                Ok(()) | Err(Error::NoNode(_)) | Err(Error::Closed(_)) => return,
                Err(e) => {
                    tracing::debug!(node = %node, error = %e, "could not remove the party node of a failed start; trying again");
                }
            }
        }
    });
}
