//! InterProcessReadWriteLock: Curator's reentrant read/write lock across processes.

use super::internals::{Driver, Internals, Sorter, READ_LOCK_NAME, WRITE_LOCK_NAME};
use super::mutex::InterProcessMutex;
use super::plain::Kind;
use crate::{Client, Result};

/// Curator's InterProcessReadWriteLock: a pair of [`InterProcessMutex`]es on one path. Readers
/// share; a writer is exclusive. Fair: both kinds queue in one line (`__READ__` and `__WRIT__`
/// nodes sorted together on their sequence), a writer waits for every earlier node, a reader
/// waits only for an earlier writer.
///
/// Reentrancy is per [`Owner`](crate::Owner), for both locks. The owner holding the write lock
/// may also take the read lock (right away, keeping the write lock's place in line, as Curator
/// 5.5+ does), then release the write lock: a downgrade. Only while its write hold is intact: on
/// a lost one not yet released (its session expired, its node deleted) the read acquire is
/// refused, as re-entering that hold is, since another client may hold the write lock by then.
/// The other way round (read, then write) never succeeds: the writer would wait for its own
/// reader.
#[derive(Clone, Debug)]
pub struct InterProcessReadWriteLock {
    read: InterProcessMutex,
    write: InterProcessMutex,
}

impl InterProcessReadWriteLock {
    /// A read/write lock on `path` (validated).
    pub fn new(client: &Client, path: &str) -> Result<InterProcessReadWriteLock> {
        InterProcessReadWriteLock::with_data(client, path, Vec::new())
    }

    /// A read/write lock whose nodes carry `data`.
    pub fn with_data(
        client: &Client,
        path: &str,
        data: Vec<u8>,
    ) -> Result<InterProcessReadWriteLock> {
        let internals = |lock_name: &'static str, driver: Driver| Internals {
            client: client.clone(),
            base: path.to_string(),
            lock_name,
            sorter: Sorter::ReadWrite,
            driver,
        };
        let write = InterProcessMutex::build(
            internals(WRITE_LOCK_NAME, Driver::Standard { max_leases: 1 }),
            Kind::Write,
            data.clone(),
            None,
        )?;
        let read = InterProcessMutex::build(
            internals(READ_LOCK_NAME, Driver::Read),
            Kind::Read,
            data,
            Some(write.downgrade()),
        )?;
        Ok(InterProcessReadWriteLock { read, write })
    }

    /// The lock for reading (shared). Its `participant_nodes` lists the `__READ__` nodes.
    pub fn read_lock(&self) -> &InterProcessMutex {
        &self.read
    }

    /// The lock for writing (exclusive). Its `participant_nodes` lists the `__WRIT__` nodes.
    pub fn write_lock(&self) -> &InterProcessMutex {
        &self.write
    }
}
