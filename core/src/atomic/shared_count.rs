//! [`SharedCount`]: Curator's SharedCount, a watched 4-byte integer — a typed view of the
//! shared value machinery in [`super::shared_value`] (as Curator builds SharedCount on
//! SharedValue), which holds the watch, re-read and versioned-set rules for both.

use super::engine::Int32;
use super::shared_value::{Heard, Reader, Watched};
use super::VersionedValue;
use crate::client::ConnectionState;
use crate::dispatch::ListenerId;
use crate::{runtime, Client, Result};

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
/// fails with [`Error::Overflow`](crate::Error::Overflow) explaining this, instead of silently writing
/// unconditionally; `set_count` moves the version on.
///
/// An empty node reads as 0 (as the distributed counters do); data of another length is
/// [`Error::CorruptedData`](crate::Error::CorruptedData). A bad value written by someone else is reported, not hidden:
/// listeners hear [`SharedCountEvent::CorruptedData`] and [`get_count`](Self::get_count) fails
/// until a valid value is written (Curator keeps returning the stale count silently).
pub struct SharedCount {
    watched: Watched<Int32>,
}

impl std::fmt::Debug for SharedCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCount")
            .field("path", &self.watched.path())
            .field("phase", &self.watched.phase())
            .field("current", &self.watched.current())
            .finish()
    }
}

impl SharedCount {
    /// A shared count at `path` (validated) whose node is created with `seed` by
    /// [`start`](Self::start) if it does not exist. Before `start`, the count is the seed at
    /// version -1.
    pub fn new(client: &Client, path: &str, seed: i32) -> Result<SharedCount> {
        Ok(SharedCount {
            watched: Watched::new(client, path, seed, Int32, "SharedCount")?,
        })
    }

    /// A reader that follows this count without owning it (the semaphore's max leases).
    pub(crate) fn reader(&self) -> Reader<Int32> {
        self.watched.reader()
    }

    /// The path.
    pub fn path(&self) -> &str {
        self.watched.path()
    }

    /// Creates the node with the seed if missing, reads it and starts watching. Once only:
    /// a second call is `InvalidArgument`, a call after [`close`](Self::close) is `Closed`. If
    /// it fails (connection, corrupted data), it may be called again.
    pub async fn start(&self) -> Result<()> {
        self.watched.start().await
    }

    /// The count as last seen (the seed before [`start`](Self::start)); `CorruptedData` while
    /// the node holds data that is not a count (never a stale value as if nothing happened).
    pub fn get_count(&self) -> Result<i32> {
        self.get_versioned_value().map(|v| v.value)
    }

    /// The count with its data version, for [`try_set_count`](Self::try_set_count);
    /// `CorruptedData` like [`get_count`](Self::get_count).
    pub fn get_versioned_value(&self) -> Result<VersionedValue<i32>> {
        self.watched.get_versioned_value()
    }

    /// Sets the count whatever it was.
    /// After a lost reply it is resent only if certainly not applied (the node unchanged, or one
    /// other write further): `OutcomeUnknown` when the node moved on further, is gone or cannot be
    /// read again, for ours may have been applied and overwritten since (Curator resends it
    /// blindly, over any write that landed after it).
    pub async fn set_count(&self, count: i32) -> Result<()> {
        self.watched.set("set_count", count).await
    }

    /// Sets the count to `count` only if it is still at `previous` (as returned by
    /// [`get_versioned_value`](Self::get_versioned_value)). False if `previous` is stale (then
    /// the fresh value is read, for `get_versioned_value`); `Err(OutcomeUnknown)` if the
    /// write's reply was lost and its fate cannot be known; `Err(Overflow)` at data version -1
    /// (see the type's documentation).
    pub async fn try_set_count(&self, previous: &VersionedValue<i32>, count: i32) -> Result<bool> {
        self.watched.try_set("try_set_count", previous, count).await
    }

    /// Adds a listener; returns an id for [`remove_listener`](Self::remove_listener).
    /// Listeners run on the count's dispatcher ([`crate::dispatch`]): one at a time, in order,
    /// off the async workers.
    pub fn add_listener(
        &self,
        listener: impl Fn(SharedCountEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        self.watched.add_listener(move |e: &Heard<i32>| {
            listener(match e {
                Heard::Changed(v) => SharedCountEvent::CountChanged(*v),
                Heard::State(s) => SharedCountEvent::StateChanged(*s),
                Heard::Corrupted { version } => {
                    SharedCountEvent::CorruptedData { version: *version }
                }
            })
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
