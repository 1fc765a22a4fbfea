//! [`DistributedBarrier`]: Curator's barrier — waiters block while the node at the barrier's
//! path exists.

use std::time::Duration;

use crate::client::{OrNone, Parents};
use crate::wait::{self, Deadline, Wake};
use crate::{path, runtime, Client, CreateMode, Error, Result};

/// Curator's `DistributedBarrier`: [`set_barrier`](Self::set_barrier) creates the node at
/// `path`, [`remove_barrier`](Self::remove_barrier) deletes it, and
/// [`wait_on_barrier`](Self::wait_on_barrier) blocks while it exists.
///
/// A wait answers `true` only after a read shows the node gone; a watch or a connection-state
/// change only makes it read again. While the connection is lost the read waits for it under
/// the client's retry policy, so a server that stays away ends the wait with a connection
/// error, never a hang.
#[derive(Clone, Debug)]
pub struct DistributedBarrier {
    client: Client,
    path: String,
}

impl DistributedBarrier {
    /// A barrier at `path` (validated). Refuses a closed client.
    pub fn new(client: &Client, path: &str) -> Result<DistributedBarrier> {
        path::validate_path(path)?;
        if path == "/" {
            return Err(Error::invalid("a barrier cannot be the root node"));
        }
        client.ensure_open_for("DistributedBarrier", path)?;
        Ok(DistributedBarrier {
            client: client.clone(),
            path: path.to_string(),
        })
    }

    /// The barrier's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sets the barrier: creates its node (and persistent parents, as Curator's
    /// `creatingParentsIfNeeded`); a barrier already set is fine.
    pub async fn set_barrier(&self) -> Result<()> {
        let path = self.path.as_str();
        self.client
            .retry(|s| async move {
                let created = s.create_with_parents(
                    path,
                    &[],
                    CreateMode::Persistent,
                    None,
                    Parents::Persistent,
                );
                match created.await {
                    Ok(_) | Err(Error::NodeExists(_)) => Ok(()),
                    Err(e) => Err(e),
                }
            })
            .await
            .map_err(|e| e.context(format!("set barrier {path}")))
    }

    /// Removes the barrier: deletes its node, releasing every waiter; a barrier not set is fine.
    pub async fn remove_barrier(&self) -> Result<()> {
        let path = self.path.as_str();
        self.client
            .retry(|s| async move { s.delete(path, None).await.or_none().map(|_| ()) })
            .await
            .map_err(|e| e.context(format!("remove barrier {path}")))
    }

    /// Waits until the barrier is removed, at most `timeout` (`None`: no limit). `true` once a
    /// read shows the node gone, `false` when the timeout passed first.
    pub async fn wait_on_barrier(&self, timeout: Option<Duration>) -> Result<bool> {
        let deadline = Deadline::after(timeout);
        deadline
            .bounding(async move {
                let path = self.path.as_str();
                loop {
                    let mut states = wait::states(&self.client);
                    let (stat, watch) = self
                        .client
                        .retry(|s| async move { s.exists_watch(path).await })
                        .await
                        .map_err(|e| e.context(format!("wait on barrier {path}")))?;
                    if stat.is_none() {
                        return Ok(true);
                    }
                    match wait::wait(&self.client, vec![watch], deadline, &mut states).await {
                        Wake::Again => {}
                        Wake::Deadline => return Ok(false),
                        Wake::Closed => return Err(Error::closed()),
                    }
                }
            })
            .await
    }

    /// [`set_barrier`](Self::set_barrier) for the blocking face.
    pub fn set_barrier_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.set_barrier())?
    }

    /// [`remove_barrier`](Self::remove_barrier) for the blocking face.
    pub fn remove_barrier_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.remove_barrier())?
    }

    /// [`wait_on_barrier`](Self::wait_on_barrier) for the blocking face.
    pub fn wait_on_barrier_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.wait_on_barrier(timeout))?
    }
}
