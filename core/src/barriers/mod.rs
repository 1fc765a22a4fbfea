//! Barriers (issue 18): [`DistributedBarrier`] and [`DistributedDoubleBarrier`], with Curator
//! 5.x's node layout, so that Curator processes and ours share one barrier.
//!
//! # Wire layout
//! * `DistributedBarrier`: the barrier is the node at `path` itself (persistent); waiters wait
//!   for it to be deleted.
//! * `DistributedDoubleBarrier`: each member is an ephemeral child `path/<uuid>` (a random
//!   UUID, as Curator names it); the member that sees `member_qty` children creates the
//!   persistent `path/ready`; leaving deletes the member's node, and the last one to go deletes
//!   `ready`.
//!
//! # Curator's failures we avoid
//! * A wait answers `true` only after a read shows the condition holds: a wake-up (a watch, a
//!   connection-state change, a spurious one) only makes us read again (Curator's `enter()`
//!   could return true on a spurious wakeup).
//! * A timed-out or failed `enter()` deletes its member node, so it is not counted as a member
//!   (CURATOR-80).
//! * Entering again is idempotent: a member node already there in our session is ours, not
//!   `NodeExists` (CURATOR-330); one lost with an expired session is made again.
//! * A `ready` node left over from an earlier round (its members gone without deleting it) is
//!   told apart by its mzxid: it is older than every current member, so the members count
//!   again instead of passing at once, and the member that counts `member_qty` writes it (the
//!   same empty data, at the version it read) to make it this round's. It is never deleted by
//!   `enter`: every `ready` is at version 0, so a delete judged on a read could remove the one
//!   another member has just made for this round.
//! * `leave(timeout)` honours its timeout and never loops without waiting (CURATOR-233,
//!   CURATOR-536).
//! * A waiter whose connection is lost reads again through the retry policy: when the server
//!   stays away it gets a connection error, never a hang.

mod barrier;
mod double;

pub use self::barrier::DistributedBarrier;
pub use self::double::DistributedDoubleBarrier;
