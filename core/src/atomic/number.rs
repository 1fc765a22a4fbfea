//! [`DistributedAtomicLong`] and [`DistributedAtomicInteger`]: Curator's distributed numbers.

use std::sync::Arc;
use std::time::Duration;

use super::combiner::{combiner_for, Combiner, Mode};
use super::value::{blocking, check_atomic, Atomic};
use super::{AtomicStats, AtomicValue, PromotedToLock, Width};
use crate::retry::RetryPolicy;
use crate::{Client, Error, Result};

/// The width-independent counter behind both public types (values as `i64`): the shared
/// Curator-style operations ([`Atomic`], over the counter's big-endian codec) plus combining
/// for `add`.
#[derive(Clone)]
struct Number {
    atomic: Atomic<Width>,
    combiner: Arc<Combiner>,
}

/// A counter's view of the shared operations' values: a missing node counts as 0.
fn counted(v: AtomicValue<Option<i64>>) -> AtomicValue<i64> {
    AtomicValue {
        succeeded: v.succeeded,
        pre_value: v.pre_value.unwrap_or(0),
        post_value: v.post_value.unwrap_or(0),
        stats: v.stats,
    }
}

impl Number {
    fn new(
        client: &Client,
        path: &str,
        width: Width,
        retry: Option<RetryPolicy>,
        promoted: Option<PromotedToLock>,
    ) -> Result<Number> {
        let (retry, promotion) = check_atomic(client, path, "counter", retry, promoted)?;
        let combiner = combiner_for(client, path, width);
        Ok(Number {
            atomic: Atomic::new(combiner.engine.clone(), retry, promotion),
            combiner,
        })
    }

    fn path(&self) -> &str {
        &self.atomic.engine.path
    }

    fn width(&self) -> Width {
        self.atomic.engine.codec
    }

    async fn get(&self) -> Result<AtomicValue<i64>> {
        self.atomic.get().await.map(counted)
    }

    /// Curator's `add`, but an overflow is refused (`Overflow`) where Curator wraps; combined
    /// with concurrent adds; then promotion if configured.
    async fn add(&self, delta: i64) -> Result<AtomicValue<i64>> {
        self.atomic.engine.check_open()?;
        let c = self
            .combiner
            .submit(
                delta,
                Mode::Curator {
                    policy: self.atomic.retry.clone(),
                },
            )
            .wait(None)
            .await?;
        let result = AtomicValue {
            succeeded: c.succeeded,
            pre_value: Some(c.pre),
            post_value: c.succeeded.then_some(c.post),
            stats: AtomicStats {
                optimistic_tries: c.tries,
                optimistic_time: c.elapsed,
                ..AtomicStats::default()
            },
        };
        let mut result = result;
        if !result.succeeded && self.atomic.promotion.is_some() {
            let width = self.width();
            let path = self.path().to_string();
            self.atomic
                .promoted(&mut result, &move |previous: Option<&i64>| {
                    let previous = previous.copied().unwrap_or(0);
                    width
                        .checked_add(previous, delta)
                        .ok_or_else(|| super::overflow("add", delta, previous, width, &path))
                })
                .await?;
        }
        Ok(counted(result))
    }

    async fn add_and_get(&self, delta: i64, timeout: Option<Duration>) -> Result<i64> {
        self.atomic.engine.check_open()?;
        Ok(self
            .combiner
            .submit(delta, Mode::Checked)
            .wait(timeout)
            .await?
            .post)
    }

    async fn compare_and_set(&self, expected: i64, new: i64) -> Result<AtomicValue<i64>> {
        // Curator compares the node's bytes; the engine compares decoded values, so that an
        // empty node (which reads as 0 everywhere) matches an expected 0. A missing node never
        // matches, as in Curator.
        self.atomic
            .compare_and_set(&expected, new)
            .await
            .map(counted)
    }

    async fn try_set(&self, value: i64) -> Result<AtomicValue<i64>> {
        self.atomic
            .try_set_with(move |_| Ok(value))
            .await
            .map(counted)
    }

    async fn force_set(&self, value: i64) -> Result<()> {
        self.atomic.force_set(value).await
    }

    async fn initialize(&self, value: i64) -> Result<bool> {
        self.atomic.initialize(value).await
    }
}

macro_rules! distributed_number {
    ($(#[$doc:meta])* $name:ident, $t:ty, $width:expr) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name {
            inner: Number,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("path", &self.inner.path())
                    .field("retry", &self.inner.atomic.retry)
                    .field("promoted_to_lock", &self.inner.atomic.promotion.as_ref().map(|p| &p.config))
                    .finish()
            }
        }

        impl $name {
            /// A counter at `path` (validated; the node is created on the first write).
            /// `retry` governs the optimistic compare-and-set tries of the Curator-style
            /// operations (`None`: the client's retry policy); `promoted_to_lock`, if given,
            /// adds Curator's fallback to an `InterProcessMutex` after they fail.
            pub fn new(
                client: &Client,
                path: &str,
                retry: Option<RetryPolicy>,
                promoted_to_lock: Option<PromotedToLock>,
            ) -> Result<$name> {
                Ok($name { inner: Number::new(client, path, $width, retry, promoted_to_lock)? })
            }

            /// The counter's path.
            pub fn path(&self) -> &str {
                self.inner.path()
            }

            fn typed(v: AtomicValue<i64>) -> AtomicValue<$t> {
                // Values were computed at this width, so the conversion is exact.
                AtomicValue { succeeded: v.succeeded, pre_value: v.pre_value as $t, post_value: v.post_value as $t, stats: v.stats }
            }

            /// The current value (0 if the node does not exist); always succeeds, with
            /// `pre_value == post_value`.
            pub async fn get(&self) -> Result<AtomicValue<$t>> {
                self.inner.get().await.map(Self::typed)
            }

            /// Curator's `add`: adds `delta`, combined with concurrent adds of this process.
            /// Check `succeeded`: false when the retry policy (and the promoted lock, if any)
            /// gave up against other writers. `Err(OutcomeUnknown)` if a write's reply was lost
            /// and its fate cannot be known. Unlike Curator, which wraps (`Long.MAX_VALUE + 1`
            /// becomes `Long.MIN_VALUE` with `succeeded == true`), a result that does not fit
            /// is refused with `Err(Overflow)` and the counter is left unchanged.
            pub async fn add(&self, delta: $t) -> Result<AtomicValue<$t>> {
                self.inner.add(delta as i64).await.map(Self::typed)
            }

            /// Curator's `subtract`: adds `-delta`; `Err(Overflow)` when that does not fit
            /// (`subtract(MIN)`, or a result past the type's range).
            pub async fn subtract(&self, delta: $t) -> Result<AtomicValue<$t>> {
                match delta.checked_neg() {
                    Some(negated) => self.add(negated).await,
                    None => Err(Error::Overflow(format!(
                        "subtract({delta}) on {}: -({delta}) does not fit",
                        self.path()
                    ).into())),
                }
            }

            /// `add(1)`.
            pub async fn increment(&self) -> Result<AtomicValue<$t>> {
                self.add(1).await
            }

            /// `add(-1)`.
            pub async fn decrement(&self) -> Result<AtomicValue<$t>> {
                self.add(-1).await
            }

            /// Sets `new` if the value is `expected` (one try, as Curator). Fails if the node
            /// does not exist or another writer got in between.
            pub async fn compare_and_set(&self, expected: $t, new: $t) -> Result<AtomicValue<$t>> {
                self.inner.compare_and_set(expected as i64, new as i64).await.map(Self::typed)
            }

            /// Curator's `trySet`: sets `value` with the optimistic loop (and promotion);
            /// check `succeeded`.
            pub async fn try_set(&self, value: $t) -> Result<AtomicValue<$t>> {
                self.inner.try_set(value as i64).await.map(Self::typed)
            }

            /// Sets `value` unconditionally, creating the node if needed.
            /// After a lost reply it is resent only if certainly not applied (the node
            /// unchanged, or one other write further): `OutcomeUnknown` when the node moved on
            /// further, is gone or cannot be read again, for ours may have been applied and
            /// overwritten since (Curator resends it blindly, over any write that landed after
            /// it).
            pub async fn force_set(&self, value: $t) -> Result<()> {
                self.inner.force_set(value as i64).await
            }

            /// Creates the node with `value` if it does not exist; false if it did.
            pub async fn initialize(&self, value: $t) -> Result<bool> {
                self.inner.initialize(value as i64).await
            }

            /// Beyond Curator: adds `delta` and returns the new value, or an error — never a
            /// silent failure. Conflicts are retried (combined with this process's other
            /// adds) until `timeout` (`None`: no limit beyond the client's connection and
            /// retry bounds). Errors: `Overflow` (nothing written), `Timeout` (not applied),
            /// `OutcomeUnknown` (the write's fate cannot be known), `Closed`, and the
            /// connection errors, which all mean not applied.
            pub async fn add_and_get(&self, delta: $t, timeout: Option<Duration>) -> Result<$t> {
                self.inner.add_and_get(delta as i64, timeout).await.map(|v| v as $t)
            }

            /// [`get`](Self::get) for the blocking face.
            pub fn get_blocking(&self) -> Result<AtomicValue<$t>> {
                blocking(self.get())
            }

            /// [`add`](Self::add) for the blocking face.
            pub fn add_blocking(&self, delta: $t) -> Result<AtomicValue<$t>> {
                blocking(self.add(delta))
            }

            /// [`subtract`](Self::subtract) for the blocking face.
            pub fn subtract_blocking(&self, delta: $t) -> Result<AtomicValue<$t>> {
                blocking(self.subtract(delta))
            }

            /// [`increment`](Self::increment) for the blocking face.
            pub fn increment_blocking(&self) -> Result<AtomicValue<$t>> {
                blocking(self.increment())
            }

            /// [`decrement`](Self::decrement) for the blocking face.
            pub fn decrement_blocking(&self) -> Result<AtomicValue<$t>> {
                blocking(self.decrement())
            }

            /// [`compare_and_set`](Self::compare_and_set) for the blocking face.
            pub fn compare_and_set_blocking(&self, expected: $t, new: $t) -> Result<AtomicValue<$t>> {
                blocking(self.compare_and_set(expected, new))
            }

            /// [`try_set`](Self::try_set) for the blocking face.
            pub fn try_set_blocking(&self, value: $t) -> Result<AtomicValue<$t>> {
                blocking(self.try_set(value))
            }

            /// [`force_set`](Self::force_set) for the blocking face.
            pub fn force_set_blocking(&self, value: $t) -> Result<()> {
                blocking(self.force_set(value))
            }

            /// [`initialize`](Self::initialize) for the blocking face.
            pub fn initialize_blocking(&self, value: $t) -> Result<bool> {
                blocking(self.initialize(value))
            }

            /// [`add_and_get`](Self::add_and_get) for the blocking face.
            pub fn add_and_get_blocking(&self, delta: $t, timeout: Option<Duration>) -> Result<$t> {
                blocking(self.add_and_get(delta, timeout))
            }
        }
    };
}

distributed_number!(
    /// Curator's `DistributedAtomicLong`: a 64-bit counter in one node (8 bytes, big-endian
    /// two's complement; missing or empty = 0), shared with Curator processes.
    ///
    /// Concurrent adds through one client are combined into one compare-and-set round; see
    /// the [module documentation](crate::atomic) for the semantics and guarantees.
    DistributedAtomicLong,
    i64,
    Width::I64
);

distributed_number!(
    /// Curator's `DistributedAtomicInteger`: a 32-bit counter in one node (4 bytes,
    /// big-endian two's complement; missing or empty = 0). Same operations as
    /// [`DistributedAtomicLong`], with `i32` arithmetic.
    DistributedAtomicInteger,
    i32,
    Width::I32
);
