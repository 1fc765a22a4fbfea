//! The two modes of one [`InterProcessMutex`](super::InterProcessMutex) object, as types: the
//! plain mutex (`plain.rs`) and cohort handoffs (`cohort.rs`, which wraps a plain one). The
//! mutex calls its mode once per method; neither mode knows the mutex.

use std::sync::Arc;

use super::cohort::CohortOptions;
use super::BoxFuture;
use crate::dispatch::ListenerId;
use crate::wait::Deadline;
use crate::{Error, Owner, Result};

/// What a [`release`](super::InterProcessMutex::release_with_status) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseStatus {
    /// A reentrant hold went down by one; this many acquires remain to be released.
    StillHeld(u32),
    /// The last release: our lock node is deleted.
    Released,
    /// The hold had already been reported lost (connection SUSPENDED/LOST); it is now gone,
    /// and its node was deleted if it was still there.
    WasLost,
}

/// A fencing token that also orders holds handed over inside one process: the lock node's
/// czxid, then the number of local handoffs on that node before this hold (0 for the first
/// holder of a node, and always 0 without cohort handoffs). Compare tokens as pairs (the
/// derived order) or as [`wide`](Self::wide) integers; a guarded resource that keeps the
/// largest token it has seen rejects every stale holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken {
    /// The lock node's czxid (the plain
    /// [`fencing_token`](super::InterProcessMutex::fencing_token)).
    pub zxid: i64,
    /// Local handoffs on that node before this hold.
    pub handoff: u32,
}

impl FencingToken {
    /// `zxid << 32 | handoff`: one integer with the same order (Python's int, Node's bigint).
    pub fn wide(self) -> u128 {
        ((self.zxid as u64 as u128) << 32) | u128::from(self.handoff)
    }
}

/// A listener of lost holds, given the owner whose hold was lost.
pub(crate) type LostListener = Arc<dyn Fn(Owner) + Send + Sync>;

/// The per-owner behaviour of a mutex object; see the public methods of
/// [`InterProcessMutex`](super::InterProcessMutex) for what each promises.
pub(crate) trait Mode: Send + Sync {
    fn acquire(&self, owner: Owner, deadline: Deadline) -> BoxFuture<'_, Result<bool>>;
    fn release(&self, owner: Owner) -> BoxFuture<'_, Result<ReleaseStatus>>;
    fn is_owned_by(&self, owner: Owner) -> bool;
    fn is_acquired_in_this_process(&self) -> bool;
    fn fencing_token(&self, owner: Owner) -> Option<FencingToken>;
    fn lock_node(&self, owner: Owner) -> Option<String>;
    /// The session that made `owner`'s lock node (lost or not), if it holds one.
    fn held_session(&self, owner: Owner) -> Option<i64>;
    fn is_held_valid(&self, owner: Owner) -> bool;
    /// Why `owner`'s hold is not intact (reported lost, or its node of another session than
    /// the client's); `None` while intact or not held.
    fn lost_hold(&self, owner: Owner) -> Option<Error>;
    /// Resolves when `owner`'s current hold ends: `true` if lost, `false` if released first.
    fn lost_signal(&self, owner: Owner) -> BoxFuture<'static, bool>;
    fn on_lost(&self, listener: LostListener) -> ListenerId;
    fn make_revocable(&self, listener: LostListener) -> Result<()>;
    /// Owners waiting in memory (cohort handoffs; 0 for a plain mutex).
    fn local_waiters(&self) -> usize;
    fn cohort_options(&self) -> Option<CohortOptions>;
}
