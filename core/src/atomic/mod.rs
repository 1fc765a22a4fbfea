//! Distributed counters and values: [`DistributedAtomicLong`], [`DistributedAtomicInteger`]
//! and [`SharedCount`] (issue 5); [`DistributedAtomicValue`], [`SharedValue`],
//! [`CachedAtomicLong`] and [`CachedAtomicInteger`] (issue 32), with Curator 5.x's node layout.
//!
//! # Wire layout (what Curator reads and writes)
//! * `DistributedAtomicLong`: the counter node holds 8 bytes, big-endian two's complement
//!   (`DistributedAtomicInteger`: 4 bytes). A missing or empty node counts as 0.
//! * `SharedCount`: the node holds a 4-byte big-endian `int`.
//! * `DistributedAtomicValue`, `SharedValue`: the node holds the bytes as they are.
//! * `CachedAtomicLong`/`Integer`: no node of their own; each range is one `add` on the
//!   counter's node.
//!
//! # One home for each rule
//! * `engine.rs`: one value node's reads and conditional writes, and what a lost reply means
//!   (below), over a codec (the counters' big-endian numbers, or bytes).
//! * `value.rs`: the Curator-style operations (`get`, `compare_and_set`, `try_set` with its
//!   optimistic loop and the promoted lock, `force_set`, `initialize`) for the counters and
//!   `DistributedAtomicValue` alike; `combiner.rs` adds combining to the counters' `add`.
//! * `shared_value.rs`: the watch, re-read and versioned-set rules of `SharedValue`, of which
//!   `SharedCount` is a typed view (as in Curator).
//!
//! Where we read more strictly than Curator: Curator decodes the first 8 (4) bytes of any
//! longer node; we refuse data that is neither empty nor exactly 8 (4) bytes with
//! [`Error::CorruptedData`] naming the path, so that a counter
//! pointed at the wrong node (a lock node holding an address, say) says so instead of counting
//! from garbage. Curator itself only ever writes exactly 8 (4) bytes, so nothing it writes is
//! refused. A counter node must also be persistent: an ephemeral node (a lock or latch node)
//! or a container (a lock's directory, which the server deletes once it has no children) is
//! refused with `InvalidArgument`, since counting there would silently lose the count.
//!
//! # Curator's semantics, and ours beyond them
//! The Curator-style operations (`add`, `increment`, `try_set`, ...) return an
//! [`AtomicValue`] whose `succeeded` must be checked, exactly as Curator's do: an optimistic
//! loop under the instance's retry policy, then (if configured) the same under an
//! `InterProcessMutex` at the [`PromotedToLock`] path. Beyond Curator:
//!
//! * `add_and_get(delta, timeout)` returns the new value or an error, never "not succeeded";
//!   overflow is [`Error::Overflow`] there, and in `add` too (Curator's `add` wraps like
//!   Java's `long`; ours refuses a result that does not fit and leaves the counter as it was).
//! * **Combining**: concurrent `add`/`add_and_get` calls on one counter path through one
//!   [`Client`](crate::Client) are merged into one compare-and-set round; every caller gets its
//!   own pre/post values, as if the calls had run one after the other.
//! * **Turns between clients**: the rounds of several clients of one process on one counter
//!   (same connect string and credentials: a pool of sessions, a client per worker thread)
//!   take turns, each starting from what the previous one learned. They never lose a version
//!   to each other, so a round conflicts only with other processes, and the next round leaves
//!   as soon as the previous reply is in. A turn is only an ordering (every write stays
//!   conditional), and a round waits for one at most 500 ms.
//! * **Cached version**: a round first tries the versioned write at the last known version and
//!   value, and reads the node only after `BadVersion`.
//! * **Exactly once or say so**: a write whose reply is lost is never blindly retried.
//!   Once connected again we `sync` and re-read the node: if its version did not move, the
//!   write was not applied and never will be, and it is resent (still conditional on that
//!   version); if another writer took the next version with other data, ours was refused. If
//!   the node holds exactly our bytes at the next version, the write may be ours or an
//!   identical one from another session that started from the same value (two increments
//!   from 41 both write 42), and ZooKeeper does not say who wrote a version: the operation
//!   fails with [`Error::OutcomeUnknown`], as it does when the node moved further on or
//!   cannot be read again. Any other error from a write operation means its write was not
//!   applied. (The full argument is in the comments of `atomic/engine.rs`.) The unconditional
//!   writes (`force_set`, `SharedCount::set_count`, `SharedValue::set_value`) re-read the same
//!   way: our bytes on the node → done; the node unchanged, or one other write further (ours
//!   was not applied) → resent; moved on further, gone or unreadable → `OutcomeUnknown`, for
//!   ours may have been applied and overwritten since. Curator resends
//!   them blindly, which overwrites a write that landed after the first application (another
//!   client's increment, acknowledged to it, lost).

mod cached;
mod combiner;
mod engine;
mod number;
mod shared_count;
mod shared_value;
mod value;

use std::time::Duration;

pub use self::cached::{CachedAtomicInteger, CachedAtomicLong};
pub use self::number::{DistributedAtomicInteger, DistributedAtomicLong};
pub use self::shared_count::{SharedCount, SharedCountEvent};
pub use self::shared_value::{SharedValue, SharedValueEvent};
pub use self::value::DistributedAtomicValue;

/// What a count-driven semaphore keeps of its [`SharedCount`]: a reader that does not own it.
pub(crate) type CountReader = shared_value::Reader<engine::Int32>;

use crate::retry::RetryPolicy;
use crate::{path, Error, Result};

/// What one attempt statistics say (Curator's `AtomicStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicStats {
    /// Compare-and-set tries in optimistic mode. A combined round counts one try for every
    /// caller whose value it carried.
    pub optimistic_tries: u32,
    /// Tries made while holding the promoted lock.
    pub promoted_lock_tries: u32,
    /// Time spent in optimistic mode (including the retry policy's sleeps).
    pub optimistic_time: Duration,
    /// Time spent in promoted mode, including the wait for the lock.
    pub promoted_time: Duration,
}

/// The result of a Curator-style counter or value operation (Curator's `AtomicValue`).
///
/// As in Curator: when `succeeded` is false nothing was written, `pre_value` is the last value
/// read and `post_value` is 0 (`None` for a [`DistributedAtomicValue`], whose values are
/// `Option<Vec<u8>>`: `None` where Curator has `null`, a missing node).
/// [`DistributedAtomicLong::get`] always succeeds, with `pre_value == post_value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicValue<T> {
    /// Whether the operation's write was applied. Always check it (or use `add_and_get`).
    pub succeeded: bool,
    /// The value before the operation.
    pub pre_value: T,
    /// The value after the operation (0 if it did not succeed).
    pub post_value: T,
    /// Tries and times.
    pub stats: AtomicStats,
}

/// A value with the ZooKeeper data version it was read at (Curator's `VersionedValue`).
///
/// `version` is the node's data version, an `i32` that ZooKeeper increments on every write and
/// that wraps from `i32::MAX` to `i32::MIN` (see [`SharedCount`] for how the wrap is handled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VersionedValue<T> {
    /// The node's data version.
    pub version: i32,
    /// The value.
    pub value: T,
}

/// Arguments for promotion to a lock (Curator's `PromotedToLock`): when the optimistic tries
/// of an operation fail, an `InterProcessMutex` at [`path`](Self::path) is taken and the
/// operation is tried again under it, with its own retry policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromotedToLock {
    path: String,
    max_lock_time: Option<Duration>,
    retry_policy: RetryPolicy,
}

impl PromotedToLock {
    /// A builder; [`lock_path`](PromotedToLockBuilder::lock_path) is required.
    pub fn builder() -> PromotedToLockBuilder {
        PromotedToLockBuilder {
            path: None,
            max_lock_time: None,
            retry_policy: Self::default_retry_policy(),
        }
    }

    /// Promotion to a lock at `lock_path`, waiting for it without limit, one try under it
    /// (Curator's defaults).
    pub fn new(lock_path: &str) -> Result<PromotedToLock> {
        Self::builder().lock_path(lock_path).build()
    }

    /// Curator's default: `RetryNTimes(0, 0)`, one try under the lock.
    fn default_retry_policy() -> RetryPolicy {
        RetryPolicy::NTimes {
            n: 0,
            sleep: Duration::ZERO,
        }
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How long to wait for the lock (`None`: without limit).
    pub fn max_lock_time(&self) -> Option<Duration> {
        self.max_lock_time
    }

    /// The retry policy for tries under the lock.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry_policy
    }
}

/// Builder of [`PromotedToLock`] (Curator's `PromotedToLock.Builder`).
#[derive(Clone, Debug)]
pub struct PromotedToLockBuilder {
    path: Option<String>,
    max_lock_time: Option<Duration>,
    retry_policy: RetryPolicy,
}

impl PromotedToLockBuilder {
    /// The path of the mutex (required).
    pub fn lock_path(mut self, path: &str) -> Self {
        self.path = Some(path.to_string());
        self
    }

    /// The retry policy for tries under the lock (default: one try).
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry_policy = policy;
        self
    }

    /// How long to wait for the lock (default: without limit).
    pub fn timeout(mut self, max_lock_time: Duration) -> Self {
        self.max_lock_time = Some(max_lock_time);
        self
    }

    /// Checks the path and the policy.
    pub fn build(self) -> Result<PromotedToLock> {
        let path = self
            .path
            .ok_or_else(|| Error::invalid("PromotedToLock: a lock path is required"))?;
        path::validate_path(&path)?;
        if path == "/" {
            return Err(Error::invalid(
                "PromotedToLock: the root node cannot be a lock path",
            ));
        }
        self.retry_policy.validate()?;
        Ok(PromotedToLock {
            path,
            max_lock_time: self.max_lock_time,
            retry_policy: self.retry_policy,
        })
    }
}

/// The two encodings of Curator's distributed numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Width {
    /// `DistributedAtomicInteger`, `SharedCount`: 4 bytes.
    I32,
    /// `DistributedAtomicLong`: 8 bytes.
    I64,
}

impl Width {
    pub(crate) fn bytes(self) -> usize {
        match self {
            Width::I32 => 4,
            Width::I64 => 8,
        }
    }

    pub(crate) fn type_name(self) -> &'static str {
        match self {
            Width::I32 => "i32",
            Width::I64 => "i64",
        }
    }

    /// Big-endian two's complement (Java's `ByteBuffer.putLong`/`putInt`).
    pub(crate) fn encode(self, value: i64) -> Vec<u8> {
        match self {
            Width::I32 => (value as i32).to_be_bytes().to_vec(),
            Width::I64 => value.to_be_bytes().to_vec(),
        }
    }

    /// Decodes a counter node: empty is 0 (Curator's rule), exactly `bytes()` bytes is the
    /// value, anything else is corrupted data naming the path.
    pub(crate) fn decode(self, path: &str, data: &[u8]) -> Result<i64> {
        if data.is_empty() {
            return Ok(0);
        }
        match (self, data.len() == self.bytes()) {
            (Width::I64, true) => Ok(i64::from_be_bytes(data.try_into().expect("8 bytes"))),
            (Width::I32, true) => Ok(i32::from_be_bytes(data.try_into().expect("4 bytes")) as i64),
            _ => Err(corrupted(path, data, self.bytes())),
        }
    }

    pub(crate) fn checked_add(self, a: i64, b: i64) -> Option<i64> {
        match self {
            Width::I32 => (a as i32).checked_add(b as i32).map(i64::from),
            Width::I64 => a.checked_add(b),
        }
    }
}

/// The refusal of an add whose result does not fit the counter's width.
pub(crate) fn overflow(op: &str, delta: i64, pre: i64, width: Width, path: &str) -> Error {
    Error::Overflow(
        format!(
            "{op}({delta}) on {path}: {pre} + {delta} does not fit in {}; the counter is unchanged",
            width.type_name()
        )
        .into(),
    )
}

/// Curator's "Corrupted data for node" message, with our expectation added.
pub(crate) fn corrupted(path: &str, data: &[u8], expected: usize) -> Error {
    let shown: Vec<String> = data.iter().take(32).map(|b| format!("0x{b:02x}")).collect();
    let more = if data.len() > 32 { ", ..." } else { "" };
    tracing::error!(%path, bytes = data.len(), expected, "corrupted counter node");
    Error::CorruptedData(format!(
        "corrupted data for node {path:?}: {} bytes [{}{more}]; a counter holds exactly {expected} bytes (big-endian) or nothing",
        data.len(),
        shown.join(", ")
    ).into())
}

/// ZooKeeper's data versions wrap from `i32::MAX` to `i32::MIN`; `a` is newer than `b` when it
/// is ahead by less than half the circle (serial-number arithmetic, RFC 1982). Curator's plain
/// `>=` got stuck at the wrap (CURATOR-688).
pub(crate) fn version_is_newer(a: i32, b: i32) -> bool {
    a.wrapping_sub(b) > 0
}

/// The message for a conditional write at data version -1, which ZooKeeper reads as "any
/// version" (a node's version reaches -1 after wrapping past `i32::MAX` on servers without
/// ZOOKEEPER-4743).
pub(crate) fn version_minus_one(path: &str) -> Error {
    Error::Overflow(
        format!(
        "the data version of {path} wrapped past i32::MAX and is now -1, which ZooKeeper reads as \
         'any version': a conditional write is impossible at this version. An unconditional write \
         (force_set / set_count) moves the version on to 0"
    )
        .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_java_bytebuffer() {
        assert_eq!(Width::I64.encode(1), vec![0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(Width::I64.encode(-1), vec![0xff; 8]);
        assert_eq!(Width::I64.encode(i64::MIN), vec![0x80, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Width::I32.encode(258), vec![0, 0, 1, 2]);
        assert_eq!(Width::I32.encode(-2), vec![0xff, 0xff, 0xff, 0xfe]);
        for v in [0, 1, -1, i64::MAX, i64::MIN, 1 << 40] {
            assert_eq!(Width::I64.decode("/c", &Width::I64.encode(v)).unwrap(), v);
        }
        for v in [0, 1, -1, i32::MAX as i64, i32::MIN as i64] {
            assert_eq!(Width::I32.decode("/c", &Width::I32.encode(v)).unwrap(), v);
        }
    }

    #[test]
    fn empty_is_zero_and_wrong_lengths_are_corrupted() {
        assert_eq!(Width::I64.decode("/c", &[]).unwrap(), 0);
        assert_eq!(Width::I32.decode("/c", &[]).unwrap(), 0);
        for bad in [&[1u8, 2, 3][..], &[0; 7], &[0; 9], &[0; 4]] {
            let e = Width::I64.decode("/my/counter", bad).unwrap_err();
            assert!(matches!(e, Error::CorruptedData(_)), "{e}");
            assert!(e.message().contains("/my/counter"), "{e}");
        }
        let e = Width::I32.decode("/c", &[0xab, 0xcd, 0xef]).unwrap_err();
        assert!(e.message().contains("0xab, 0xcd, 0xef"), "{e}");
        assert!(Width::I32.decode("/c", &[0; 8]).is_err());
    }

    #[test]
    fn arithmetic_per_width() {
        assert_eq!(Width::I32.checked_add(i32::MAX as i64, 1), None);
        assert_eq!(Width::I32.checked_add(5, -7), Some(-2));
        assert_eq!(Width::I64.checked_add(i64::MIN, -1), None);
    }

    #[test]
    fn versions_compare_across_the_wrap() {
        assert!(version_is_newer(1, 0));
        assert!(!version_is_newer(0, 0));
        assert!(!version_is_newer(0, 1));
        // CURATOR-688: i32::MAX + 1 wraps to i32::MIN, which is newer, not older.
        assert!(version_is_newer(i32::MIN, i32::MAX));
        assert!(version_is_newer(i32::MIN + 5, i32::MAX - 5));
        assert!(!version_is_newer(i32::MAX, i32::MIN));
        assert!(version_is_newer(0, -2));
    }

    #[test]
    fn promoted_to_lock_needs_a_valid_path() {
        assert!(matches!(
            PromotedToLock::builder().build(),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            PromotedToLock::new("no-slash"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            PromotedToLock::new("/"),
            Err(Error::InvalidArgument(_))
        ));
        let p = PromotedToLock::builder()
            .lock_path("/locks/c")
            .timeout(Duration::from_secs(2))
            .retry_policy(RetryPolicy::NTimes {
                n: 2,
                sleep: Duration::from_millis(5),
            })
            .build()
            .unwrap();
        assert_eq!(p.path(), "/locks/c");
        assert_eq!(p.max_lock_time(), Some(Duration::from_secs(2)));
        assert_eq!(
            PromotedToLock::new("/l").unwrap().retry_policy(),
            &RetryPolicy::NTimes {
                n: 0,
                sleep: Duration::ZERO
            }
        );
    }
}
