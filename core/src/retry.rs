//! Curator's retry policies, with Curator's formulas.

use std::time::Duration;

use crate::{Error, Result};

/// Curator caps ExponentialBackoffRetry at 29 retries (so `1 << (n + 1)` stays an i32).
pub const MAX_EXPONENTIAL_RETRIES: u32 = 29;

/// How an operation that failed with a retryable error (connection loss, server-side operation
/// timeout, session moved) is tried again. Session expiry is never retried silently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetryPolicy {
    /// `base * max(1, rand(1 << (n + 1)))`, clamped to `max_sleep`, at most `max_retries`.
    ExponentialBackoff {
        /// The base of each sleep.
        base_sleep: Duration,
        /// How many retries at most.
        max_retries: u32,
        /// The longest sleep.
        max_sleep: Duration,
    },
    /// Exponential backoff whose every sleep is bounded by `max_sleep` (Curator's
    /// BoundedExponentialBackoffRetry).
    BoundedExponentialBackoff {
        /// The base of each sleep.
        base_sleep: Duration,
        /// The longest sleep.
        max_sleep: Duration,
        /// How many retries at most.
        max_retries: u32,
    },
    /// `n` retries, `sleep` between them.
    NTimes {
        /// How many retries.
        n: u32,
        /// The sleep before each.
        sleep: Duration,
    },
    /// One retry after `sleep`.
    OneTime {
        /// The sleep before it.
        sleep: Duration,
    },
    /// Retries while less than `max_elapsed` has passed since the first try.
    UntilElapsed {
        /// How long after the first try retries stop.
        max_elapsed: Duration,
        /// The sleep before each retry.
        sleep: Duration,
    },
    /// Retries forever, `sleep` between tries.
    Forever {
        /// The sleep before each retry.
        sleep: Duration,
    },
}

impl Default for RetryPolicy {
    /// Exponential backoff, 1 s base, 3 retries (API.md's default).
    fn default() -> Self {
        RetryPolicy::exponential_backoff(Duration::from_secs(1), 3)
    }
}

impl RetryPolicy {
    /// Curator's `ExponentialBackoffRetry(base, maxRetries)`: no cap on a single sleep beyond
    /// `i32::MAX` ms; `max_retries` is clamped to 29.
    pub fn exponential_backoff(base_sleep: Duration, max_retries: u32) -> RetryPolicy {
        RetryPolicy::ExponentialBackoff {
            base_sleep,
            max_retries: max_retries.min(MAX_EXPONENTIAL_RETRIES),
            max_sleep: Duration::from_millis(i32::MAX as u64),
        }
    }

    /// Checks the policy's numbers, so that a face can report a bad option up front.
    pub fn validate(&self) -> Result<()> {
        match self {
            RetryPolicy::ExponentialBackoff { max_retries, .. }
            | RetryPolicy::BoundedExponentialBackoff { max_retries, .. }
                if *max_retries > MAX_EXPONENTIAL_RETRIES =>
            {
                Err(Error::invalid(format!(
                    "retry policy: max_retries {max_retries} is above Curator's limit of {MAX_EXPONENTIAL_RETRIES}"
                )))
            },
            RetryPolicy::BoundedExponentialBackoff { base_sleep, max_sleep, .. } if max_sleep < base_sleep => {
                Err(Error::invalid("retry policy: max_sleep is shorter than base_sleep"))
            },
            _ => Ok(()),
        }
    }

    /// Whether retry number `retry_count` (0 for the first retry) may happen after `elapsed`
    /// since the first try, and if so how long to sleep first. `rand_below(n)` returns a
    /// uniform integer in `0..n` (injectable for tests).
    pub fn next_sleep_with(
        &self,
        retry_count: u32,
        elapsed: Duration,
        rand_below: impl FnOnce(u32) -> u32,
    ) -> Option<Duration> {
        match *self {
            RetryPolicy::ExponentialBackoff {
                base_sleep,
                max_retries,
                max_sleep,
            } => (retry_count < max_retries)
                .then(|| exponential(base_sleep, retry_count, rand_below).min(max_sleep)),
            RetryPolicy::BoundedExponentialBackoff {
                base_sleep,
                max_sleep,
                max_retries,
            } => (retry_count < max_retries.min(MAX_EXPONENTIAL_RETRIES))
                .then(|| exponential(base_sleep, retry_count, rand_below).min(max_sleep)),
            RetryPolicy::NTimes { n, sleep } => (retry_count < n).then_some(sleep),
            RetryPolicy::OneTime { sleep } => (retry_count < 1).then_some(sleep),
            RetryPolicy::UntilElapsed { max_elapsed, sleep } => {
                (elapsed < max_elapsed).then_some(sleep)
            }
            RetryPolicy::Forever { sleep } => Some(sleep),
        }
    }

    /// [`next_sleep_with`](Self::next_sleep_with) with a real random source.
    pub fn next_sleep(&self, retry_count: u32, elapsed: Duration) -> Option<Duration> {
        self.next_sleep_with(retry_count, elapsed, |n| fastrand::u32(0..n.max(1)))
    }
}

fn exponential(base: Duration, retry_count: u32, rand_below: impl FnOnce(u32) -> u32) -> Duration {
    let n = retry_count.min(MAX_EXPONENTIAL_RETRIES);
    let factor = rand_below(1u32 << (n + 1)).max(1);
    base.saturating_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn exponential_backoff_follows_curators_formula() {
        let p = RetryPolicy::exponential_backoff(100 * MS, 5);
        // rand returns its bound minus one: the largest possible factor.
        for n in 0..5 {
            let sleep = p.next_sleep_with(n, Duration::ZERO, |b| {
                assert_eq!(b, 1 << (n + 1));
                b - 1
            });
            assert_eq!(sleep, Some(100 * MS * ((1 << (n + 1)) - 1)));
        }
        // factor 0 is raised to 1
        assert_eq!(p.next_sleep_with(0, Duration::ZERO, |_| 0), Some(100 * MS));
        assert_eq!(p.next_sleep_with(5, Duration::ZERO, |_| 1), None);
    }

    #[test]
    fn exponential_backoff_caps_retries_at_29() {
        let p = RetryPolicy::exponential_backoff(MS, 1000);
        assert!(p.next_sleep_with(28, Duration::ZERO, |_| 1).is_some());
        assert_eq!(p.next_sleep_with(29, Duration::ZERO, |_| 1), None);
        assert!(RetryPolicy::ExponentialBackoff {
            base_sleep: MS,
            max_retries: 30,
            max_sleep: MS
        }
        .validate()
        .is_err());
    }

    #[test]
    fn bounded_backoff_clamps_each_sleep() {
        let p = RetryPolicy::BoundedExponentialBackoff {
            base_sleep: 100 * MS,
            max_sleep: 250 * MS,
            max_retries: 10,
        };
        assert_eq!(
            p.next_sleep_with(3, Duration::ZERO, |b| b - 1),
            Some(250 * MS)
        );
        assert_eq!(p.next_sleep_with(0, Duration::ZERO, |_| 2), Some(200 * MS));
        assert_eq!(p.next_sleep_with(10, Duration::ZERO, |_| 1), None);
    }

    #[test]
    fn fixed_policies() {
        let n = RetryPolicy::NTimes {
            n: 2,
            sleep: 7 * MS,
        };
        assert_eq!(n.next_sleep(0, Duration::ZERO), Some(7 * MS));
        assert_eq!(n.next_sleep(1, Duration::ZERO), Some(7 * MS));
        assert_eq!(n.next_sleep(2, Duration::ZERO), None);
        let one = RetryPolicy::OneTime { sleep: 3 * MS };
        assert_eq!(one.next_sleep(0, Duration::ZERO), Some(3 * MS));
        assert_eq!(one.next_sleep(1, Duration::ZERO), None);
        let until = RetryPolicy::UntilElapsed {
            max_elapsed: 50 * MS,
            sleep: 5 * MS,
        };
        assert_eq!(until.next_sleep(100, 49 * MS), Some(5 * MS));
        assert_eq!(until.next_sleep(0, 50 * MS), None);
        let forever = RetryPolicy::Forever { sleep: MS };
        assert_eq!(forever.next_sleep(u32::MAX, Duration::MAX), Some(MS));
    }

    #[test]
    fn default_is_exponential_1s_3_retries() {
        assert_eq!(
            RetryPolicy::default(),
            RetryPolicy::exponential_backoff(Duration::from_secs(1), 3)
        );
    }

    #[test]
    fn real_random_stays_in_range() {
        let p = RetryPolicy::exponential_backoff(10 * MS, 3);
        for _ in 0..1000 {
            let s = p.next_sleep(2, Duration::ZERO).unwrap();
            assert!(s >= 10 * MS && s <= 70 * MS, "{s:?}");
        }
    }
}
