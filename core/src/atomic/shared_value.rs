//! [`SharedValue`]: Curator's SharedValue, a watched value in one node; and the one home of
//! the watch/re-read/versioned-set rules that [`SharedCount`](super::SharedCount) (Curator
//! builds its SharedCount on SharedValue too) shares: a [`Watched`] value over a codec
//! (the bytes as they are, or SharedCount's 4-byte `int`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use super::engine::{check_value_node, Bytes, Codec, Engine, Known, Written};
use super::{version_is_newer, version_minus_one, VersionedValue};
use crate::client::{ConnectionState, CreateMode, CreateOptions, NodeEvent, Watch};
use crate::dispatch::{Dispatcher, ListenerId};
use crate::lifecycle::{Lifecycle, Phase};
use crate::wait::Deadline;
use crate::{path, runtime, Client, Error, Result};

/// What a watched value's listeners hear (each view maps it to its public event).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Heard<V> {
    /// The value changed (by any client, this one included).
    Changed(VersionedValue<V>),
    /// The client's connection state changed.
    State(ConnectionState),
    /// The node holds data that does not decode, at this data version.
    Corrupted { version: i32 },
}

/// How long the watcher waits before reading again after a failed read.
const REREAD_AFTER: Duration = Duration::from_millis(500);

struct State<V> {
    current: VersionedValue<V>,
    czxid: i64,
    /// Whether `current` came from the server (before `start`, it is the seed at version -1).
    initialized: bool,
    /// The node (its czxid) and version of the last `Changed` (or `Corrupted`) given to
    /// listeners: a node deleted and created again starts at version 0 and is news too.
    notified: Option<(i64, i32)>,
    /// The node holds data that does not decode: the error, and the version it was read at.
    corrupted: Option<(i32, Error)>,
}

impl<V> State<V> {
    /// Whether a value at `version` of the node created at `czxid` replaces ours: the first
    /// one does, one of a recreated node does, otherwise only a newer version in wrapping
    /// order (CURATOR-688: Curator's `>=` refused every version after the wrap to `i32::MIN`).
    fn takes(&self, version: i32, czxid: i64) -> bool {
        !self.initialized || self.czxid != czxid || version_is_newer(version, self.current.version)
    }
}

struct Inner<C: Codec> {
    engine: Engine<C>,
    seed: C::Value,
    state: Mutex<State<C::Value>>,
    /// Listeners, under the dispatcher's guarantee ([`crate::dispatch`]).
    listeners: Dispatcher<Heard<C::Value>>,
    life: Lifecycle,
    stop: watch::Sender<bool>,
    /// Bumped whenever the value taken changes (for readers that wait on it: the semaphore
    /// whose max leases come from a SharedCount).
    taken: watch::Sender<u64>,
}

impl<C: Codec> Inner<C> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<C::Value>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn path(&self) -> &str {
        &self.engine.path
    }

    fn client(&self) -> &Client {
        &self.engine.client
    }

    /// Takes a value read or written at `version` if it is newer than what we have.
    fn update(&self, version: i32, czxid: i64, value: C::Value) {
        let took = {
            let mut st = self.lock();
            let took = st.takes(version, czxid);
            if took {
                st.current = VersionedValue { version, value };
                st.czxid = czxid;
                st.initialized = true;
                st.corrupted = None;
            }
            took
        };
        if took {
            self.taken.send_modify(|n| *n = n.wrapping_add(1));
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
            let fresh = st.notified.is_none_or_newer(czxid, version);
            if fresh {
                st.notified = Some((czxid, version));
            }
            fresh
        };
        if fresh {
            tracing::error!(path = %self.path(), version, "shared {} node holds data that does not decode", self.engine.codec.noun());
            self.emit(Heard::Corrupted { version });
        }
    }

    /// Tells listeners about a value the watcher read, unless they heard of it already.
    fn notify_read(&self, version: i32, czxid: i64, value: C::Value) {
        let fresh = {
            let mut st = self.lock();
            let fresh = st.notified.is_none_or_newer(czxid, version);
            if fresh {
                st.notified = Some((czxid, version));
            }
            fresh
        };
        if fresh {
            self.emit(Heard::Changed(VersionedValue { version, value }));
        }
    }

    fn emit(&self, event: Heard<C::Value>) {
        if self.life.phase() != Phase::Closed {
            self.listeners.emit(event);
        }
    }
}

trait NewerThan {
    fn is_none_or_newer(&self, czxid: i64, version: i32) -> bool;
}

impl NewerThan for Option<(i64, i32)> {
    /// Whether `version` of the node made at `czxid` is news: another node (deleted and made
    /// again) always is, otherwise a newer version in wrapping order.
    fn is_none_or_newer(&self, czxid: i64, version: i32) -> bool {
        match *self {
            None => true,
            Some((was, old)) => was != czxid || version_is_newer(version, old),
        }
    }
}

/// A value in one node, kept up to date by a watch (Curator's SharedValue), over a codec. The
/// public [`SharedValue`] and [`SharedCount`](super::SharedCount) are views of it. Dropping it
/// closes it.
pub(crate) struct Watched<C: Codec> {
    inner: Arc<Inner<C>>,
}

/// A reader of a watched value that does not own it (dropping it closes nothing): what an
/// `InterProcessSemaphoreV2` keeps of the SharedCount that gives its max leases.
#[derive(Clone)]
pub(crate) struct Reader<C: Codec> {
    inner: Arc<Inner<C>>,
}

impl<C: Codec> Reader<C> {
    /// The last value that decoded (the seed before start), whatever came since.
    pub(crate) fn current(&self) -> C::Value {
        self.inner.lock().current.value.clone()
    }

    /// A receiver that changes whenever the value taken does; subscribe before reading.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.taken.subscribe()
    }
}

impl<C: Codec> Watched<C> {
    /// A watched value at `path` (validated) whose node `start` creates with `seed` if it does
    /// not exist. Before `start`, the value is the seed at version -1. `recipe` names it in
    /// messages ("SharedCount").
    pub(crate) fn new(
        client: &Client,
        path: &str,
        seed: C::Value,
        codec: C,
        recipe: &'static str,
    ) -> Result<Watched<C>> {
        client.ensure_open_for(recipe, path)?;
        path::validate_path(path)?;
        if path == "/" {
            return Err(Error::invalid(format!(
                "the root node cannot be a {recipe}"
            )));
        }
        path::validate_data(path, &codec.encode(&seed))?;
        Ok(Watched {
            inner: Arc::new(Inner {
                engine: Engine::new(client.clone(), path, codec),
                seed: seed.clone(),
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
                life: Lifecycle::new(recipe, path),
                stop: watch::channel(false).0,
                taken: watch::channel(0).0,
            }),
        })
    }

    pub(crate) fn reader(&self) -> Reader<C> {
        Reader {
            inner: self.inner.clone(),
        }
    }

    pub(crate) fn path(&self) -> &str {
        self.inner.path()
    }

    /// The lifecycle's phase (for `Debug`).
    pub(crate) fn phase(&self) -> Phase {
        self.inner.life.phase()
    }

    /// Creates the node with the seed if missing, reads it and starts watching. Once only.
    pub(crate) async fn start(&self) -> Result<()> {
        let starting = self.inner.life.begin_start(self.inner.client())?;
        let watch = self.start_inner().await?;
        // Closed meanwhile: the watcher is not started.
        starting.finish(|| {
            runtime::spawn(watch);
        })
    }

    /// Creates and reads the node; the watcher to run from then on.
    async fn start_inner(&self) -> Result<impl Future<Output = ()> + Send + 'static> {
        let inner = &self.inner;
        let client = inner.client();
        // Subscribe before reading so that no state change between the two is missed.
        let states = client.subscribe_events();
        let seed = inner.engine.codec.encode(&inner.seed);
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
        check_value_node(inner.engine.codec.noun(), inner.path(), &stat, &data)?;
        let value = inner.engine.codec.decode(inner.path(), &data)?;
        inner.update(stat.version, stat.czxid, value);
        inner.lock().notified = Some((stat.czxid, stat.version));
        Ok(watch_value(inner.clone(), states, watch))
    }

    /// The value with its data version as last taken, whatever came since (for a codec whose
    /// every value decodes).
    pub(crate) fn current(&self) -> VersionedValue<C::Value> {
        self.inner.lock().current.clone()
    }

    /// The value with its data version; `CorruptedData` while the node holds data that does
    /// not decode.
    pub(crate) fn get_versioned_value(&self) -> Result<VersionedValue<C::Value>> {
        let st = self.inner.lock();
        match &st.corrupted {
            Some((_, e)) => Err(e.clone()),
            None => Ok(st.current.clone()),
        }
    }

    /// Sets the value whatever it was (`op` names the caller's method in errors).
    pub(crate) async fn set(&self, op: &str, value: C::Value) -> Result<()> {
        let inner = &self.inner;
        inner.life.check_started(op)?;
        let data = inner.engine.codec.encode(&value);
        path::validate_data(inner.path(), &data)?;
        // An unconditional write; after a lost reply, resent only when certainly not applied
        // (Curator's resends it blindly, overwriting any write that landed after the first).
        let before = {
            let st = inner.lock();
            (st.czxid != 0).then_some(Known::Present {
                version: st.current.version,
                czxid: st.czxid,
                value: (),
            })
        };
        let stat = inner
            .engine
            .force_write(value.clone(), before, false)
            .await?;
        inner.update(stat.version, stat.czxid, value);
        Ok(())
    }

    /// Sets the value only if it is still at `previous`; false if `previous` is stale (then
    /// the fresh value is read, as Curator does).
    pub(crate) async fn try_set(
        &self,
        op: &str,
        previous: &VersionedValue<C::Value>,
        value: C::Value,
    ) -> Result<bool> {
        let inner = &self.inner;
        inner.life.check_started(op)?;
        path::validate_data(inner.path(), &inner.engine.codec.encode(&value))?;
        let (current, czxid) = {
            let st = inner.lock();
            (st.current.clone(), st.czxid)
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
            value: previous.value.clone(),
        };
        match inner.engine.write(&base, value.clone()).await? {
            Written::Applied(Known::Present { version, czxid, .. }) => {
                inner.update(version, czxid, value);
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
                        if let Ok(value) = inner.engine.codec.decode(inner.path(), &data) {
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

    pub(crate) fn add_listener(
        &self,
        listener: impl Fn(&Heard<C::Value>) + Send + Sync + 'static,
    ) -> ListenerId {
        self.inner.listeners.add(listener)
    }

    pub(crate) fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.inner.listeners.remove(id)
    }

    /// Stops watching and drops the listeners. The node stays.
    pub(crate) fn close(&self) {
        let inner = &self.inner;
        inner.life.close();
        inner.stop.send_replace(true);
        inner.listeners.clear();
    }
}

impl<C: Codec> Drop for Watched<C> {
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
async fn watch_value<C: Codec>(
    inner: Arc<Inner<C>>,
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
                    // Curator's SharedValueListener is a ConnectionStateListener too.
                    inner.emit(Heard::State(state));
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

/// Reads the value with a new watch (or, if the node is gone, watches for its creation).
async fn read_and_watch<C: Codec>(inner: &Inner<C>) -> Result<WatchFuture> {
    let client = inner.client();
    loop {
        match client.get_data_watch(inner.path()).await {
            Ok((data, stat, watch)) => {
                // A value that does not decode is reported (an event, and the getters fail),
                // and the watch goes on so that a repaired value is seen.
                match inner.engine.codec.decode(inner.path(), &data) {
                    Ok(value) => {
                        inner.update(stat.version, stat.czxid, value.clone());
                        inner.notify_read(stat.version, stat.czxid, value);
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

/// What a [`SharedValue`] listener hears (Curator's `SharedValueListener`, which is a
/// connection-state listener too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SharedValueEvent {
    /// The value changed (by any client, this one included): the bytes and their version.
    ValueChanged(VersionedValue<Vec<u8>>),
    /// The client's connection state changed. After `Reconnected` the value is read again
    /// (and a `ValueChanged` follows if it moved meanwhile).
    StateChanged(ConnectionState),
}

/// Curator's `SharedValue`: bytes in one node, kept up to date in every client that watches
/// it, with versioned (compare-and-set) writes.
///
/// [`start`](Self::start) creates the node with the seed if it is missing (its parents as
/// containers, as Curator's) and reads it with a watch; from then on [`get_value`](Self::get_value)
/// answers from memory and listeners hear every change made by any client (each watch event
/// is followed by a re-read, and the value is read again after the connection comes back).
/// [`try_set_value`](Self::try_set_value) writes only if the value is still at the version the
/// caller saw; a write whose reply is lost is resent only once a re-read proves it was not
/// applied, otherwise it is [`Error::OutcomeUnknown`].
///
/// Versions compare in wrapping order across `i32::MAX` (CURATOR-688), and a node at data
/// version -1 cannot be written conditionally ([`Error::Overflow`], where Curator throws
/// `IllegalTrySetVersionException`), exactly as for [`SharedCount`](super::SharedCount), which
/// is this recipe over a 4-byte `int`. The node must be a persistent leaf (`InvalidArgument`
/// from `start` otherwise: a value on an ephemeral node or a directory would be lost).
pub struct SharedValue {
    watched: Watched<Bytes>,
}

impl std::fmt::Debug for SharedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedValue")
            .field("path", &self.watched.path())
            .field("phase", &self.watched.phase())
            .finish()
    }
}

impl SharedValue {
    /// A shared value at `path` (validated) whose node [`start`](Self::start) creates with
    /// `seed` if it does not exist. Before `start`, the value is the seed at version -1.
    pub fn new(client: &Client, path: &str, seed: &[u8]) -> Result<SharedValue> {
        Ok(SharedValue {
            watched: Watched::new(client, path, seed.to_vec(), Bytes, "SharedValue")?,
        })
    }

    /// The path.
    pub fn path(&self) -> &str {
        self.watched.path()
    }

    /// Creates the node with the seed if missing, reads it and starts watching. Once only:
    /// a second call is `InvalidArgument`, a call after [`close`](Self::close) is `Closed`. If
    /// it fails (connection), it may be called again.
    pub async fn start(&self) -> Result<()> {
        self.watched.start().await
    }

    /// The value as last seen (the seed before [`start`](Self::start)); no server call.
    pub fn get_value(&self) -> Vec<u8> {
        self.get_versioned_value().value
    }

    /// The value with its data version, for [`try_set_value`](Self::try_set_value).
    pub fn get_versioned_value(&self) -> VersionedValue<Vec<u8>> {
        // Bytes always decode: there is never a corrupted value to report.
        self.watched.current()
    }

    /// Sets the value whatever it was (`InvalidArgument` before [`start`](Self::start),
    /// `Closed` after [`close`](Self::close), as every write).
    /// After a lost reply it is resent only if certainly not applied (the node unchanged, or one
    /// other write further): `OutcomeUnknown` when the node moved on further, is gone or cannot be
    /// read again, for ours may have been applied and overwritten since (Curator resends it
    /// blindly, over any write that landed after it).
    pub async fn set_value(&self, value: &[u8]) -> Result<()> {
        self.watched.set("set_value", value.to_vec()).await
    }

    /// Sets the value to `value` only if it is still at `previous` (as returned by
    /// [`get_versioned_value`](Self::get_versioned_value)). False if `previous` is stale
    /// (then the fresh value is read, for `get_versioned_value`); `Err(OutcomeUnknown)` if the
    /// write's reply was lost and its fate cannot be known; `Err(Overflow)` at data version -1.
    pub async fn try_set_value(
        &self,
        previous: &VersionedValue<Vec<u8>>,
        value: &[u8],
    ) -> Result<bool> {
        self.watched
            .try_set("try_set_value", previous, value.to_vec())
            .await
    }

    /// Adds a listener; returns an id for [`remove_listener`](Self::remove_listener).
    /// Listeners run on the value's dispatcher ([`crate::dispatch`]): one at a time, in order,
    /// off the async workers.
    pub fn add_listener(
        &self,
        listener: impl Fn(SharedValueEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        self.watched
            .add_listener(move |e: &Heard<Vec<u8>>| match e {
                Heard::Changed(v) => listener(SharedValueEvent::ValueChanged(v.clone())),
                Heard::State(s) => listener(SharedValueEvent::StateChanged(*s)),
                // Bytes always decode.
                Heard::Corrupted { .. } => {}
            })
    }

    /// Removes a listener; whether it was there (`false` for one removed before).
    /// `InvalidArgument` for an id that another client or recipe gave out.
    pub fn remove_listener(&self, id: ListenerId) -> Result<bool> {
        self.watched.remove_listener(id)
    }

    /// Stops watching and drops the listeners (none is called after this returns). The node
    /// stays. Closing twice is a no-op; every later call but the getters gets `Closed`.
    pub fn close(&self) {
        self.watched.close();
    }

    /// [`start`](Self::start) for the blocking face.
    pub fn start_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.start())?
    }

    /// [`set_value`](Self::set_value) for the blocking face.
    pub fn set_value_blocking(&self, value: &[u8]) -> Result<()> {
        runtime::try_block_on(self.set_value(value))?
    }

    /// [`try_set_value`](Self::try_set_value) for the blocking face.
    pub fn try_set_value_blocking(
        &self,
        previous: &VersionedValue<Vec<u8>>,
        value: &[u8],
    ) -> Result<bool> {
        runtime::try_block_on(self.try_set_value(previous, value))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(version: i32) -> State<i32> {
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
        // Older values (a slow read racing our own write) never move the value back.
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
        assert!(Some((7, i32::MAX)).is_none_or_newer(7, i32::MIN));
        assert!(None.is_none_or_newer(7, 3));
        assert!(!Some((7, 3)).is_none_or_newer(7, 3));
        // A node deleted and made again: version 0 of it is news after version 5 of the old.
        assert!(Some((7, 5)).is_none_or_newer(8, 0));
    }
}
