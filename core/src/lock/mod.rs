//! Curator's lock family: [`InterProcessMutex`] and friends (issue 3).
//!
//! Wire layout (Curator 5.x, DESIGN.md): each contender creates a protected
//! ephemeral-sequential node `_c_<uuid>-lock-<10 digits>` under the lock path (parents as
//! containers); the children sorted on the text after the last `lock-` form the line, the
//! holder is index 0, and each waiter watches only its predecessor with getData, so one
//! release wakes one waiter. The read/write lock names its nodes `__READ__`/`__WRIT__`;
//! the semaphore takes the mutex at `path/locks` before creating `path/leases/_c_<uuid>-lease-<seq>`.

mod cohort;
pub(crate) mod internals;
mod mode;
mod multi;
mod mutex;
mod plain;
mod rwlock;
pub(crate) mod semaphore;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

pub use self::cohort::CohortOptions;
pub use self::mode::{FencingToken, ReleaseStatus};
pub use self::multi::InterProcessMultiLock;
pub use self::mutex::{InterProcessMutex, LockLostPolicy};
pub use self::rwlock::InterProcessReadWriteLock;
pub use self::semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, LeaseLost};
use crate::{path, runtime, Client, Error, Owner, Result};

/// A boxed future, for [`InterProcessLock`]'s object-safe methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Curator's InterProcessLock: what every lock of the family offers, object-safe, so that an
/// [`InterProcessMultiLock`] can combine different kinds.
pub trait InterProcessLock: Send + Sync {
    /// Acquires for `owner` within `timeout` (`None`: until acquired); whether it was acquired.
    fn acquire(&self, owner: Owner, timeout: Option<Duration>) -> BoxFuture<'_, Result<bool>>;

    /// Releases `owner`'s hold.
    fn release(&self, owner: Owner) -> BoxFuture<'_, Result<()>>;

    /// Whether the lock is held in this process.
    fn is_acquired_in_this_process(&self) -> bool;

    /// Why `owner`'s hold is no longer to be trusted — reported lost, or its node gone with a
    /// session that ended (the client is on another now) — or `None` while it is intact or
    /// nothing is held. [`InterProcessMultiLock`] asks every lock it took before it answers.
    /// The default (a lock that cannot tell) is `None`.
    fn lost_hold(&self, owner: Owner) -> Option<Error> {
        let _ = owner;
        None
    }
}

impl InterProcessLock for InterProcessMutex {
    fn acquire(&self, owner: Owner, timeout: Option<Duration>) -> BoxFuture<'_, Result<bool>> {
        Box::pin(InterProcessMutex::acquire(self, owner, timeout))
    }

    fn release(&self, owner: Owner) -> BoxFuture<'_, Result<()>> {
        Box::pin(InterProcessMutex::release(self, owner))
    }

    fn is_acquired_in_this_process(&self) -> bool {
        InterProcessMutex::is_acquired_in_this_process(self)
    }

    fn lost_hold(&self, owner: Owner) -> Option<Error> {
        InterProcessMutex::lost_hold(self, owner)
    }
}

/// Not reentrant and not owned: the owner is ignored (any owner may release).
impl InterProcessLock for InterProcessSemaphoreMutex {
    fn acquire(&self, _owner: Owner, timeout: Option<Duration>) -> BoxFuture<'_, Result<bool>> {
        Box::pin(InterProcessSemaphoreMutex::acquire(self, timeout))
    }

    fn release(&self, _owner: Owner) -> BoxFuture<'_, Result<()>> {
        Box::pin(InterProcessSemaphoreMutex::release(self))
    }

    fn is_acquired_in_this_process(&self) -> bool {
        InterProcessSemaphoreMutex::is_acquired_in_this_process(self)
    }

    fn lost_hold(&self, _owner: Owner) -> Option<Error> {
        InterProcessSemaphoreMutex::lost_hold(self)
    }
}

/// Curator's `Revoker.attemptRevoke`: writes `__REVOKE__` into the lock node at `node_path`
/// (typically one of [`InterProcessMutex::participant_nodes`]) to ask its holder to release.
/// A node that is already gone is fine. Revocation is cooperative: the holder's
/// [`make_revocable`](InterProcessMutex::make_revocable) listener decides.
pub async fn attempt_revoke(client: &Client, node_path: &str) -> Result<()> {
    path::validate_path(node_path)?;
    match client
        .set_data(node_path, internals::REVOKE_MESSAGE, None)
        .await
    {
        Ok(_) | Err(Error::NoNode(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// [`attempt_revoke`] for the blocking face.
pub fn attempt_revoke_blocking(client: &Client, node_path: &str) -> Result<()> {
    runtime::try_block_on(attempt_revoke(client, node_path))?
}

#[cfg(test)]
mod tests {
    use super::internals::{Driver, Predicate, Sorter};

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sorts_on_the_text_after_the_last_lock_name() {
        let mut c = names(&[
            "_c_b0000000-0000-4000-8000-000000000000-lock-0000000002",
            "_c_a0000000-0000-4000-8000-000000000000-lock-0000000010",
            "_c_c0000000-0000-4000-8000-000000000000-lock-0000000001",
        ]);
        Sorter::Standard("lock-").sort(&mut c);
        assert!(
            c[0].ends_with("0000000001")
                && c[1].ends_with("0000000002")
                && c[2].ends_with("0000000010")
        );
    }

    #[test]
    fn read_write_nodes_share_one_order() {
        let mut c = names(&[
            "_c_1-__WRIT__0000000003",
            "_c_2-__READ__0000000001",
            "_c_3-__READ__0000000004",
        ]);
        Sorter::ReadWrite.sort(&mut c);
        assert_eq!(
            c,
            names(&[
                "_c_2-__READ__0000000001",
                "_c_1-__WRIT__0000000003",
                "_c_3-__READ__0000000004"
            ])
        );
    }

    #[test]
    fn standard_driver_watches_the_predecessor_only() {
        let mut c = names(&["c-lock-3", "a-lock-1", "b-lock-2"]);
        let d = Driver::Standard { max_leases: 1 };
        let s = Sorter::Standard("lock-");
        assert_eq!(
            d.gets_the_lock(s, &mut c, "a-lock-1", false),
            Predicate::Granted
        );
        assert_eq!(
            d.gets_the_lock(s, &mut c, "c-lock-3", false),
            Predicate::Watch("b-lock-2".into())
        );
        assert_eq!(
            d.gets_the_lock(s, &mut c, "z-lock-9", false),
            Predicate::Missing
        );
    }

    /// The unsorted predicate gives what Curator's (sort, then index) gives, ties included.
    #[test]
    fn standard_driver_agrees_with_a_sorted_listing() {
        let sorter = Sorter::Standard("lock-");
        for round in 0..300 {
            let n = 1 + round % 40;
            let mut listing: Vec<String> = (0..n)
                .map(|i| format!("_c_{i}-lock-{:010}", fastrand::u32(0..(n as u32 / 2 + 1))))
                .collect();
            fastrand::shuffle(&mut listing);
            let mut sorted = listing.clone();
            sorter.sort(&mut sorted);
            for max_leases in 1..4 {
                let driver = Driver::Standard { max_leases };
                for ours in &listing {
                    let i = sorted.iter().position(|c| c == ours).expect("listed");
                    let expected = if i < max_leases {
                        Predicate::Granted
                    } else {
                        Predicate::Watch(sorted[i - max_leases].clone())
                    };
                    let got = driver.gets_the_lock(sorter, &mut listing.clone(), ours, false);
                    assert_eq!(got, expected, "{listing:?} {ours} {max_leases}");
                }
            }
        }
    }

    #[test]
    fn read_driver_waits_only_for_an_earlier_writer() {
        let c = names(&["w2__WRIT__4", "r1__READ__1", "r2__READ__3", "w1__WRIT__2"]);
        let s = Sorter::ReadWrite;
        let read =
            |ours: &str, held: bool| Driver::Read.gets_the_lock(s, &mut c.clone(), ours, held);
        assert_eq!(read("r1__READ__1", false), Predicate::Granted);
        assert_eq!(
            read("r2__READ__3", false),
            Predicate::Watch("w1__WRIT__2".into())
        );
        assert_eq!(read("r2__READ__3", true), Predicate::Granted);
        assert_eq!(read("nope", false), Predicate::Missing);
    }
}
