//! Leader election: [`LeaderLatch`], [`LeaderSelector`] and [`LeaderObserver`] (issue 4).
//!
//! Both recipes keep Curator 5.x's node layout, so Curator/Java processes take part in the same
//! elections:
//!
//! * **LeaderLatch**: each participant creates a protected ephemeral-sequential node
//!   `<path>/_c_<uuid>-latch-<10 digits>` holding its id (UTF-8). The participant whose node
//!   sorts first (on the text after the last `latch-`) leads, as long as it is started; the
//!   others watch their predecessor with `getData`.
//! * **LeaderSelector**: an [`InterProcessMutex`](crate::lock::InterProcessMutex) on the leader
//!   path (`_c_<uuid>-lock-<10 digits>` nodes holding the id). The holder leads while its
//!   `take_leadership` callback runs and releases the mutex when it returns.
//! * **LeaderObserver**: etcd's Observe — "who leads now" for processes that do not take part,
//!   built on a children watch; it understands both layouts.
//!
//! Where Curator has known double-leader bugs we do better: each latch runs one serialized
//! state machine (watch events and connection events never race); a RECONNECTED never deletes
//! and recreates the latch node (it re-checks); the node counts only when its ephemeral owner is
//! the current session; and the leader gets a *leadership epoch* (its node's czxid) to fence
//! its writes with.

pub(crate) mod common;
mod context;
mod latch;
mod observer;
mod selector;

pub use common::{CloseMode, LeadershipEvent, ListenerId, LostPolicy, Participant};
pub use context::{CancelReason, LeadershipContext};
pub use latch::{LatchState, LeaderLatch, LeadershipEvents, LeadershipWatch};
pub use observer::{observe, LeaderObserver};
pub use selector::{LeaderSelector, SelectorState};
