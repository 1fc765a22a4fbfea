//! InterProcessMultiLock: several locks taken as one, all or nothing.

use std::sync::Arc;
use std::time::Duration;

use super::{BoxFuture, InterProcessLock, InterProcessMutex};
use crate::wait::Deadline;
use crate::{runtime, Client, Error, Owner, Result};

/// Curator's InterProcessMultiLock: acquires every lock in order, all or nothing (a timeout or
/// error releases those already taken, in reverse order), and releases in reverse order.
///
/// Unlike Curator, whose timeout applies to each lock in turn, the timeout here bounds the
/// whole acquire.
#[derive(Clone)]
pub struct InterProcessMultiLock {
    locks: Vec<Arc<dyn InterProcessLock>>,
}

impl std::fmt::Debug for InterProcessMultiLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterProcessMultiLock")
            .field("locks", &self.locks.len())
            .finish()
    }
}

impl InterProcessMultiLock {
    /// An [`InterProcessMutex`] for each path (each validated; no duplicates, at least one).
    pub fn new(client: &Client, paths: &[&str]) -> Result<InterProcessMultiLock> {
        for (i, p) in paths.iter().enumerate() {
            if paths[..i].contains(p) {
                return Err(Error::invalid(format!(
                    "multi lock: path {p} is given twice (it would wait for itself)"
                )));
            }
        }
        let locks = paths
            .iter()
            .map(|p| {
                InterProcessMutex::new(client, p).map(|m| Arc::new(m) as Arc<dyn InterProcessLock>)
            })
            .collect::<Result<Vec<_>>>()?;
        InterProcessMultiLock::from_locks(locks)
    }

    /// A multi lock over any locks of the family (at least one).
    pub fn from_locks(locks: Vec<Arc<dyn InterProcessLock>>) -> Result<InterProcessMultiLock> {
        if locks.is_empty() {
            return Err(Error::invalid("multi lock: no locks given"));
        }
        Ok(InterProcessMultiLock { locks })
    }

    /// Acquires every lock for `owner` within `timeout` (`None`: until acquired); whether all
    /// were acquired. On `false` or an error none is held. Cancelling (dropping the future)
    /// releases those already taken.
    ///
    /// Unlike Curator's, a lock taken early whose hold was lost while the later ones were
    /// awaited (its node went with a session that ended, so another process may hold it now;
    /// or, with the standard policy, the connection was suspended) is not answered as held:
    /// everything is released and the error is that lock's ([`InterProcessLock::lost_hold`]):
    /// `SessionExpired`, `ConnectionLoss`, or `Closed`.
    pub async fn acquire(&self, owner: Owner, timeout: Option<Duration>) -> Result<bool> {
        let deadline = Deadline::after(timeout);
        let mut taken = Taken {
            locks: Vec::new(),
            owner,
        };
        for lock in &self.locks {
            match lock.acquire(owner, deadline.remaining()).await {
                Ok(true) => taken.locks.push(lock.clone()),
                Ok(false) => {
                    taken.release_all().await;
                    return Ok(false);
                }
                Err(e) => {
                    taken.release_all().await;
                    return Err(e);
                }
            }
        }
        // Each lock taken was held when it answered; one taken early may have been lost since.
        if let Some(e) = taken.locks.iter().find_map(|l| l.lost_hold(owner)) {
            taken.release_all().await;
            return Err(e.context(
                "multi lock: a lock taken earlier was lost while the others were awaited; none is held",
            ));
        }
        taken.locks.clear();
        Ok(true)
    }

    /// Releases every lock in reverse order; tries them all and returns the first error. The
    /// releases go on if this call is dropped (a timeout around it, a cancelled task): as
    /// Curator's, which carries on through an interrupt, a release begun is never left half
    /// done with the remaining locks held until the session ends.
    pub async fn release(&self, owner: Owner) -> Result<()> {
        let locks = self.locks.clone();
        runtime::run_to_end(async move {
            let mut first = Ok(());
            for lock in locks.iter().rev() {
                if let Err(e) = lock.release(owner).await {
                    if first.is_ok() {
                        first = Err(e);
                    }
                }
            }
            first
        })
        .await
    }

    /// [`acquire`](Self::acquire) for the blocking face, owned by the calling thread.
    pub fn acquire_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.acquire(Owner::current_thread(), timeout))?
    }

    /// [`release`](Self::release) for the blocking face, by the calling thread.
    pub fn release_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.release(Owner::current_thread()))?
    }

    /// Whether every lock is held in this process (Curator's choice for a multi lock).
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.locks.iter().all(|l| l.is_acquired_in_this_process())
    }

    /// The locks, in acquire order.
    pub fn locks(&self) -> &[Arc<dyn InterProcessLock>] {
        &self.locks
    }
}

/// Locks taken so far; released in reverse order if the acquire does not complete.
struct Taken {
    locks: Vec<Arc<dyn InterProcessLock>>,
    owner: Owner,
}

impl Taken {
    async fn release_all(&mut self) {
        while let Some(lock) = self.locks.pop() {
            let _ = lock.release(self.owner).await;
        }
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        let locks = std::mem::take(&mut self.locks);
        if locks.is_empty() {
            return;
        }
        let owner = self.owner;
        runtime::spawn(async move {
            for lock in locks.into_iter().rev() {
                let _ = lock.release(owner).await;
            }
        });
    }
}

impl InterProcessLock for InterProcessMultiLock {
    fn acquire(&self, owner: Owner, timeout: Option<Duration>) -> BoxFuture<'_, Result<bool>> {
        Box::pin(InterProcessMultiLock::acquire(self, owner, timeout))
    }

    fn release(&self, owner: Owner) -> BoxFuture<'_, Result<()>> {
        Box::pin(InterProcessMultiLock::release(self, owner))
    }

    fn is_acquired_in_this_process(&self) -> bool {
        InterProcessMultiLock::is_acquired_in_this_process(self)
    }

    fn lost_hold(&self, owner: Owner) -> Option<Error> {
        self.locks.iter().find_map(|l| l.lost_hold(owner))
    }
}
