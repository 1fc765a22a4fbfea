//! [`CachedAtomicLong`] and [`CachedAtomicInteger`]: Curator's id ranges reserved from a
//! distributed counter.

use tokio::sync::Mutex;

use super::value::blocking;
use super::{AtomicStats, AtomicValue, DistributedAtomicInteger, DistributedAtomicLong};
use crate::{Error, Result};

/// The range being handed out: the `add` that reserved it and how many of it are used.
struct Range<T> {
    reserved: AtomicValue<T>,
    index: T,
}

macro_rules! cached_number {
    ($(#[$doc:meta])* $name:ident, $counter:ident, $t:ty) => {
        $(#[$doc])*
        pub struct $name {
            counter: $counter,
            cache_factor: $t,
            range: Mutex<Option<Range<$t>>>,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("path", &self.counter.path())
                    .field("cache_factor", &self.cache_factor)
                    .finish()
            }
        }

        impl $name {
            /// Ids from `counter`, `cache_factor` (at least 1) reserved at a time.
            pub fn new(counter: $counter, cache_factor: $t) -> Result<$name> {
                if cache_factor < 1 {
                    return Err(Error::invalid(format!(
                        "{} on {}: the cache factor must be at least 1, not {cache_factor}",
                        stringify!($name),
                        counter.path()
                    )));
                }
                Ok($name {
                    counter,
                    cache_factor,
                    range: Mutex::new(None),
                })
            }

            /// The counter ranges are reserved from.
            pub fn counter(&self) -> &$counter {
                &self.counter
            }

            /// How many ids one reservation takes.
            pub fn cache_factor(&self) -> $t {
                self.cache_factor
            }

            /// Curator's `next`: the next id, from the range reserved last; when that is used
            /// up, one Curator-style `add(cache_factor)` on the counter reserves the next
            /// range (its stats are the result's). The id is `post_value` (`pre_value + 1`),
            /// as Curator gives it; check `succeeded` (false when the reserving add gave up
            /// against other writers; nothing is handed out then). An error (including
            /// `OutcomeUnknown` for a reservation whose fate cannot be known) hands out
            /// nothing either, and the next call reserves a fresh range: ids may be skipped,
            /// never handed out twice, across every process and language sharing the counter.
            /// Thread-safe: concurrent callers are served one at a time.
            pub async fn next(&self) -> Result<AtomicValue<$t>> {
                let mut range = self.range.lock().await;
                let mut stats = AtomicStats::default();
                if range.is_none() {
                    let reserved = self.counter.add(self.cache_factor).await?;
                    stats = reserved.stats;
                    if !reserved.succeeded {
                        return Ok(AtomicValue {
                            succeeded: false,
                            pre_value: 0,
                            post_value: 0,
                            stats,
                        });
                    }
                    *range = Some(Range { reserved, index: 0 });
                }
                let r = range.as_mut().expect("a range was just reserved");
                let pre = r.reserved.pre_value.wrapping_add(r.index);
                r.index += 1;
                if r.index >= self.cache_factor {
                    *range = None;
                }
                Ok(AtomicValue {
                    succeeded: true,
                    pre_value: pre,
                    post_value: pre.wrapping_add(1),
                    stats,
                })
            }

            /// [`next`](Self::next) for the blocking face.
            pub fn next_blocking(&self) -> Result<AtomicValue<$t>> {
                blocking(self.next())
            }
        }
    };
}

cached_number!(
    /// Curator's `CachedAtomicLong`: ids handed out from ranges reserved in a
    /// [`DistributedAtomicLong`], `cache_factor` at a time, so that most ids cost no server
    /// call. Each range is one `add(cache_factor)`: ids `pre + 1 ..= pre + cache_factor`
    /// belong to this object alone, so no id is ever handed out twice across processes that
    /// share the counter (Curator's `CachedAtomicLong` among them); ids of a range not used up
    /// when the object is dropped are skipped.
    CachedAtomicLong,
    DistributedAtomicLong,
    i64
);

cached_number!(
    /// Curator's `CachedAtomicInteger`: [`CachedAtomicLong`] over a
    /// [`DistributedAtomicInteger`].
    CachedAtomicInteger,
    DistributedAtomicInteger,
    i32
);
