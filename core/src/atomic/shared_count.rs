//! [`SharedCount`]: Curator's SharedCount / SharedValue, a watched 4-byte integer.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use super::engine::{check_counter_node, Engine, Known, Written};
use super::{version_is_newer, version_minus_one, VersionedValue, Width};
use crate::client::{ConnectionState, CreateMode, CreateOptions, NodeEvent, Watch};
use crate::dispatch::{Dispatcher, ListenerId};
use crate::lifecycle::{Lifecycle, Phase};
use crate::wait::Deadline;
use crate::{path, runtime, Client, Error, Result};

/// What a [`SharedCount`] listener hears (Curator's `SharedCountListener`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedCountEvent {
    /// The count changed (by any client, this one included): the value and its version.
    CountChanged(VersionedValue<i32>),
    /// The client's connection state changed. After `Reconnected` the count is read again
    /// (and a `CountChanged` follows if it moved meanwhile).
    StateChanged(ConnectionState),
    /// The node was overwritten with data that is not a count (not 4 bytes) at this data
    /// version: [`get_count`](SharedCount::get_count) fails with `CorruptedData` until a valid
    /// value is written (a `CountChanged` follows then).
    CorruptedData {
        /// The data version of the bad value.
        version: i32,
    },
}

/// How long the watcher waits before reading again after a failed read.
const REREAD_AFTER: Duration = Duration::from_millis(500);

struct State {
    current: VersionedValue<i32>,
    czxid: i64,
    /// Whether `current` came from the server (before `start`, it is the seed at version -1).
    initialized: bool,
    /// The version of the last `CountChanged` (or `CorruptedData`) given to listeners.
    notified: Option<i32>,
    /// The node holds data that is not a count: the error, and the version it was read at.
    corrupted: Option<(i32, Error)>,
}

impl State {
    /// Whether a value at `version` of the node created at `czxid` replaces ours: the first
    /// one does, one of a recreated node does, otherwise only a newer version in wrapping
    /// order (CURATOR-688: Curator's `>=` refused every version after the wrap to `i32::MIN`).
    fn takes(&self, version: i32, czxid: i64) -> bool {
        !self.initialized || self.czxid != czxid || version_is_newer(version, self.current.version)
    }
}

struct Inner {
    engine: Engine,
    seed: i32,
    state: Mutex<State>,
    /// Listeners, under the dispatcher's guarantee ([`crate::dispatch`]).
    listeners: Dispatcher<SharedCountEvent>,
    life: Lifecycle,
    stop: watch::Sender<bool>,
}

/// Curator's `SharedCount`: an `i32` in one node (4 bytes, big-endian), kept up to date in
/// every client that watches it.
///
/// [`start`](Self::start) creates the node with the seed if it is missing and reads it with a
/// watch; from then on [`get_count`](Self::get_count) answers from memory and listeners hear
/// every change made by any client (each watch event is followed by a re-read, and the count
/// is read again after the connection comes back). [`try_set_count`](Self::try_set_count)
/// writes only if the count is still at the version the caller saw.
///
/// **Data version wrap (CURATOR-688)**: ZooKeeper's data version is an `i32` that wraps from
/// `i32::MAX` to `i32::MIN`. Curator compared versions with `>=` and stopped updating at the
/// wrap; we compare them in wrapping (serial-number) order, so the count keeps updating across
/// it. A node whose version is exactly -1 (reached on servers without ZOOKEEPER-4743) cannot
/// be written conditionally, since ZooKeeper reads -1 as "any version": `try_set_count` then
/// fails with [`Error::Overflow`] explaining this, instead of silently writing
/// unconditionally; `set_count` moves the version on.
///
/// An empty node reads as 0 (as the distributed counters do); data of another length is
/// [`Error::CorruptedData`]. A bad value written by someone else is reported, not hidden:
/// listeners hear [`SharedCountEvent::CorruptedData`] and [`get_count`](Self::get_count) fails
/// until a valid value is written (Curator keeps returning the stale count silently).
pub struct SharedCount {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SharedCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.inner.lock();
        f.debug_struct("SharedCount")
            .field("path", &self.inner.engine.path)
            .field("phase", &self.inner.life.phase())
            .field("current", &st.current)
            .finish()
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn path(&self) -> &str {
        &self.engine.path
    }

    fn client(&self) -> &Client {
        &self.engine.client
    }

    /// Takes a value read or written at `version` if it is newer than what we have.
    fn update(&self, version: i32, czxid: i64, value: i32) {
        let mut st = self.lock();
        if st.takes(version, czxid) {
            st.current = VersionedValue { version, value };
            st.czxid = czxid;
            st.initialized = true;
            st.corrupted = None;
        }
    }

    /// Records a value that does not decode, read at `version`, and tells listeners once.
    fn corrupted(&self, version: i32, czxid: i64, error: Error) {
        let fresh = {
            let mut st = self.lock();
            if !st.takes(version, czxid) {
                return;
            }
            st.current.version = version;
            st.czxid = czxid;
            st.corrupted = Some((version, error));
            let fresh = st.notified.is_none_or_newer(version);
            if fresh {
                st.notified = Some(version);
            }
            fresh
        };
        if fresh {
            tracing::error!(path = %self.path(), version, "shared count node holds data that is not a count");
            self.emit(SharedCountEvent::CorruptedData { version });
        }
    }

    /// Tells listeners about a value the watcher read, unless they heard of it already.
    fn notify_read(&self, version: i32, value: i32) {
        let fresh = {
            let mut st = self.lock();
            let fresh = st.notified.is_none_or_newer(version);
            if fresh {
                st.notified = Some(version);
            }
            fresh
        };
        if fresh {
            self.emit(SharedCountEvent::CountChanged(VersionedValue {
                version,
                value,
            }));
        }
    }

    fn emit(&self, event: SharedCountEvent) {
        if self.life.phase() != Phase::Closed {
            self.listeners.emit(event);
        }
    }
}

trait NewerThan {
    fn is_none_or_newer(&self, version: i32) -> bool;
}

impl NewerThan for Option<i32> {
    fn is_none_or_newer(&self, version: i32) -> bool {
        match *self {
            None => true,
            Some(old) => version_is_newer(version, old),
        }
    }
}

fn decode(path: &str, data: &[u8]) -> Result<i32> {
    Width::I32.decode(path, data).map(|v| v as i32)
}

impl SharedCount {
    /// A shared count at `path` (validated) whose node is created with `seed` by
    /// [`start`](Self::start) if it does not exist. Before `start`, the count is the seed at
    /// version -1.
    pub fn new(client: &Client, path: &str, seed: i32) -> Result<SharedCount> {
        client.ensure_open_for("SharedCount", path)?;
        path::validate_path(path)?;
        if path == "/" {
            return Err(Error::invalid("the root node cannot be a shared count"));
        }
        Ok(SharedCount {
            inner: Arc::new(Inner {
                engine: Engine::new(client.clone(), path, Width::I32),
                seed,
                state: Mutex::new(State {
                    current: VersionedValue {
                        version: -1,
                        value: seed,
                    },
                    czxid: 0,
                    initialized: false,
                    notified: None,
                    corrupted: None,
                }),
                listeners: Dispatcher::new(),
                life: Lifecycle::new("SharedCount", path),
                stop: watch::channel(false).0,
            }),
        })
    }

    /// The path.
    pub fn path(&self) -> &str {
        self.inner.path()
    }

    /// Creates the node with the seed if missing, reads it and starts watching. Once only:
    /// a second call is `InvalidArgument`, a call after [`close`](Self::close) is `Closed`. If
    /// it fails (connection, corrupted data), it may be called again.
    pub async fn start(&self) -> Result<()> {
        let starting = self.inner.life.begin_start(self.inner.client())?;
        let watch = self.start_inner().await?;
        // Closed meanwhile: the watcher is not started.
        starting.finish(|| {
            runtime::spawn(watch);
        })
    }

    /// Creates and reads the node; the watcher to run from then on.
    async fn start_inner(&self) -> Result<impl std::future::Future<Output = ()> + Send + 'static> {
        let inner = &self.inner;
        let client = inner.client();
        // Subscribe before reading so that no state change between the two is missed.
        let states = client.subscribe_events();
        let seed = inner.seed.to_be_bytes();
        match client
            .create(
                inner.path(),
                &seed,
                CreateOptions::new(CreateMode::Persistent).parents(),
            )
            .await
        {
            Ok(_) | Err(Error::NodeExists(_)) => {}
            Err(e) => return Err(e),
        }
        let (data, stat, watch) = client.get_data_watch(inner.path()).await?;
        check_counter_node(inner.path(), &stat)?;
        let value = decode(inner.path(), &data)?;
        inner.update(stat.version, stat.czxid, value);
        inner.lock().notified = Some(stat.version);
        Ok(watch_count(inner.clone(), states, watch))
    }

    /// The count as last seen (the seed before [`start`](Self::start)); `CorruptedData` while
    /// the node holds data that is not a count (never a stale value as if nothing happened).
    pub fn get_count(&self) -> Result<i32> {
        self.get_versioned_value().map(|v| v.value)
    }

    /// The count with its data version, for [`try_set_count`](Self::try_set_count);
    /// `CorruptedData` like [`get_count`](Self::get_count).
    pub fn get_versioned_value(&self) -> Result<VersionedValue<i32>> {
        let st = self.inner.lock();
        match &st.corrupted {
            Some((_, e)) => Err(e.clone()),
            None => Ok(st.current),
        }
    }

    /// Sets the count whatever it was.
    pub async fn set_count(&self, count: i32) -> Result<()> {
        let inner = &self.inner;
        inner.life.check_started("set_count")?;
        // An unconditional write may be repeated safely: the client's retrying set is right.
        let stat = inner
            .client()
            .set_data(inner.path(), &count.to_be_bytes(), None)
            .await?;
        inner.update(stat.version, stat.czxid, count);
        Ok(())
    }

    /// Sets the count to `count` only if it is still at `previous` (as returned by
    /// [`get_versioned_value`](Self::get_versioned_value)). False if `previous` is stale (then
    /// the fresh value is read, for `get_versioned_value`); `Err(OutcomeUnknown)` if the
    /// write's reply was lost and its fate cannot be known; `Err(Overflow)` at data version -1
    /// (see the type's documentation).
    pub async fn try_set_count(&self, previous: &VersionedValue<i32>, count: i32) -> Result<bool> {
        let inner = &self.inner;
        inner.life.check_started("try_set_count")?;
        let (current, czxid) = {
            let st = inner.lock();
            (st.current, st.czxid)
        };
        if *previous != current {
            return Ok(false);
        }
        if previous.version == -1 {
            return Err(version_minus_one(inner.path()));
        }
        let base = Known::Present {
            version: previous.version,
            czxid,
            value: previous.value as i64,
        };
        match inner.engine.write(base, count as i64).await? {
            Written::Applied(Known::Present { version, czxid, .. }) => {
                inner.update(version, czxid, count);
                Ok(true)
            }
            Written::Applied(Known::Missing) => {
                Err(Error::Internal("a write reported a missing node".into()))
            }
            Written::Conflict => {
                // Curator reads the value again so that the caller can retry with it.
                let client = inner.client();
                match client.get_data(inner.path()).await {
                    Ok((data, stat)) => {
                        if let Ok(value) = decode(inner.path(), &data) {
                            inner.update(stat.version, stat.czxid, value);
                        }
                    }
                    Err(Error::NoNode(_)) => {}
                    Err(e) => return Err(e),
                }
                Ok(false)
            }
        }
    }

    /// Adds a listener; returns an id for [`remove_listener`](Self::remove_listener).
    /// Listeners run on the count's dispatcher ([`crate::dispatch`]): one at a time, in order,
    /// off the async workers.
    pub fn add_listener(
        &self,
        listener: impl Fn(SharedCountEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        self.inner
            .listeners
            .add(move |e: &SharedCountEvent| listener(*e))
    }

    /// Removes a listener; whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.inner.listeners.remove(id)
    }

    /// Stops watching and drops the listeners (none is called after this returns). The node
    /// stays. Closing twice is a no-op; every later call but the getters gets `Closed`.
    pub fn close(&self) {
        let inner = &self.inner;
        inner.life.close();
        inner.stop.send_replace(true);
        inner.listeners.clear();
    }

    /// [`start`](Self::start) for the blocking face.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }

    /// [`set_count`](Self::set_count) for the blocking face.
    pub fn set_count_blocking(&self, count: i32) -> Result<()> {
        runtime::try_block_on(self.set_count(count))?
    }

    /// [`try_set_count`](Self::try_set_count) for the blocking face.
    pub fn try_set_count_blocking(
        &self,
        previous: &VersionedValue<i32>,
        count: i32,
    ) -> Result<bool> {
        runtime::try_block_on(self.try_set_count(previous, count))?
    }
}

impl Drop for SharedCount {
    fn drop(&mut self) {
        self.close();
    }
}

type WatchFuture = Pin<Box<dyn Future<Output = NodeEvent> + Send>>;

async fn next_event(w: &mut Option<WatchFuture>) -> NodeEvent {
    match w {
        Some(f) => f.as_mut().await,
        None => std::future::pending().await,
    }
}

/// The watcher: re-reads after every watch event and after reconnection, and notifies.
async fn watch_count(
    inner: Arc<Inner>,
    mut states: broadcast::Receiver<ConnectionState>,
    first: Watch,
) {
    let mut stop = inner.stop.subscribe();
    let client_closed = inner.client().closed();
    tokio::pin!(client_closed);
    let mut watch: Option<WatchFuture> = Some(Box::pin(first.changed()));
    let mut reread_at = Deadline::NEVER;
    loop {
        let reread = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            _ = &mut client_closed => return,
            _ = next_event(&mut watch) => {
                watch = None;
                true
            },
            state = states.recv() => match state {
                Ok(state) => {
                    inner.emit(SharedCountEvent::StateChanged(state));
                    // After RECONNECTED (possibly a new session, whose watches are gone) the
                    // value may have moved while we were away.
                    matches!(state, ConnectionState::Reconnected | ConnectionState::Connected)
                },
                Err(broadcast::error::RecvError::Lagged(_)) => true,
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = reread_at.sleep() => true,
        };
        if !reread {
            continue;
        }
        reread_at = Deadline::NEVER;
        match read_and_watch(&inner).await {
            Ok(w) => watch = Some(w),
            Err(_) if inner.life.phase() == Phase::Closed => return,
            Err(_) => reread_at = Deadline::after(Some(REREAD_AFTER)),
        }
    }
}

/// Reads the count with a new watch (or, if the node is gone, watches for its creation).
async fn read_and_watch(inner: &Inner) -> Result<WatchFuture> {
    let client = inner.client();
    loop {
        match client.get_data_watch(inner.path()).await {
            Ok((data, stat, watch)) => {
                // A value that does not decode is reported (an event, and `get_count` fails),
                // and the watch goes on so that a repaired value is seen.
                match decode(inner.path(), &data) {
                    Ok(value) => {
                        inner.update(stat.version, stat.czxid, value);
                        inner.notify_read(stat.version, value);
                    }
                    Err(e) => inner.corrupted(stat.version, stat.czxid, e),
                }
                return Ok(Box::pin(watch.changed()));
            }
            Err(Error::NoNode(_)) => {
                let (stat, watch) = client.exists_watch(inner.path()).await?;
                if stat.is_none() {
                    // A recreated node starts again at version 0: listen for any version.
                    inner.lock().notified = None;
                    return Ok(Box::pin(watch.changed()));
                }
                // Created between the two reads: read it again.
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(version: i32) -> State {
        State {
            current: VersionedValue { version, value: 1 },
            czxid: 7,
            initialized: true,
            notified: None,
            corrupted: None,
        }
    }

    #[test]
    fn updates_keep_flowing_across_the_version_wrap() {
        // CURATOR-688: after i32::MAX the server's version is i32::MIN, then i32::MIN + 1, ...
        assert!(at(i32::MAX).takes(i32::MIN, 7));
        assert!(at(i32::MIN).takes(i32::MIN + 1, 7));
        assert!(at(-2).takes(0, 7)); // ZOOKEEPER-4743 servers skip -1
        assert!(at(-2).takes(-1, 7));
        // Older values (a slow read racing our own write) never move the count back.
        assert!(!at(5).takes(4, 7));
        assert!(!at(i32::MIN).takes(i32::MAX, 7));
        assert!(!at(5).takes(5, 7));
        // A recreated node (other czxid) starts again at version 0 and is taken.
        assert!(at(5).takes(0, 8));
        // Before the first read anything is taken.
        let mut fresh = at(-1);
        fresh.initialized = false;
        assert!(fresh.takes(-5, 7));
    }

    #[test]
    fn listeners_hear_versions_after_the_wrap() {
        assert!(Some(i32::MAX).is_none_or_newer(i32::MIN));
        assert!(None.is_none_or_newer(3));
        assert!(!Some(3).is_none_or_newer(3));
    }
}
