//! The zkrecipes fault suite: the recipes against real ZooKeeper servers that die, pause or get
//! cut off, and lock holders that are killed or frozen. The scenarios are in `tests/faults.rs`;
//! this library has what they share with the child programs: [`child`] (holders written in
//! every runtime, driven over their stdin/stdout) and [`fenced`] (the resource a lock protects,
//! guarded by fencing tokens).
//!
//! ```text
//! tests/faults/run            # short configuration (what CI runs), summary table at the end
//! tests/faults/run --long     # thousands of operations per scenario
//! ```
//!
//! See `docs/FAULTS.md` for the scenarios, the invariants checked and the latest figures.

pub mod child;
pub mod fenced;

use std::thread;
use std::time::{Duration, Instant};

/// Waits (bounded) until `done` holds, looking every 10 ms; panics with `what` otherwise.
pub fn eventually(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out ({timeout:?}) waiting for: {what}"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// The hold of `owner` on `m`, watched from inside its critical section: samples
/// `is_held_valid` every `poll` for `hold`, or until the hold is seen invalid. Returns the
/// first and last instants it was seen valid (none if never) and whether it was seen invalid.
pub fn sample_hold(
    m: &zkrecipes::lock::InterProcessMutex,
    owner: zkrecipes::Owner,
    hold: Duration,
    poll: Duration,
) -> (Option<(Instant, Instant)>, bool) {
    let start = Instant::now();
    let mut seen: Option<(Instant, Instant)> = None;
    loop {
        let now = Instant::now();
        if !m.is_held_valid(owner) {
            return (seen, true);
        }
        seen = Some((seen.map_or(now, |(first, _)| first), now));
        if now - start >= hold {
            return (seen, false);
        }
        thread::sleep(poll);
    }
}
