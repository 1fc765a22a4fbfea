//! Waiting, the way every recipe waits: for a deadline, a one-shot watch, the client closing or
//! a connection-state change — and, after any wake-up, reading again.
//!
//! A wait never decides anything. A watch firing, a state change or a spurious wake-up only
//! sends the recipe back to read (through the retry policy, so a server that stays away ends in
//! a connection error, never a hang); only the read answers. The deadline comes from the
//! caller's timeout ([`crate::timeout`] decides what a timeout means, this module how long it
//! lasts).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use crate::client::Watch;
use crate::{Client, ConnectionState, Error, Result};

/// When a wait gives up: an instant, or never.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Deadline(Option<Instant>);

impl Deadline {
    /// No deadline: wait without limit.
    pub(crate) const NEVER: Deadline = Deadline(None);

    /// `now + timeout`; [`NEVER`](Self::NEVER) without a timeout or when it does not fit.
    pub(crate) fn after(timeout: Option<Duration>) -> Deadline {
        Deadline(timeout.and_then(|t| Instant::now().checked_add(t)))
    }

    /// Whether it has passed (never for [`NEVER`](Self::NEVER)).
    pub(crate) fn passed(self) -> bool {
        self.0.is_some_and(|d| Instant::now() >= d)
    }

    /// The time left, as a timeout for a call that takes one (`None`: no limit).
    pub(crate) fn remaining(self) -> Option<Duration> {
        self.0.map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The instant, if any.
    pub(crate) fn instant(self) -> Option<Instant> {
        self.0
    }

    /// The earlier of the two.
    pub(crate) fn earliest(self, other: Deadline) -> Deadline {
        match (self.0, other.0) {
            (Some(a), Some(b)) => Deadline(Some(a.min(b))),
            (a, b) => Deadline(a.or(b)),
        }
    }

    /// Runs `op` with this deadline (or an earlier one already bounding the task) bounding
    /// every retry inside it: [`Client::retry`](crate::Client) cuts its pauses and its wait for
    /// a connection at the deadline, and once it has passed gives up with the last error
    /// instead of sleeping on. A caller's timeout then ends the call on time even while the
    /// connection is lost (a policy's 30 s pause does not hold an 8 s acquire for 30 s); a
    /// request already sent still waits for its reply or the request timeout. Tasks spawned
    /// inside are not bounded: a background cleanup goes on after the deadline.
    pub(crate) async fn bounding<F: Future>(self, op: F) -> F::Output {
        BOUND.scope(self.earliest(Deadline::bound()), op).await
    }

    /// The deadline bounding the current task's retries ([`bounding`](Self::bounding));
    /// [`NEVER`](Self::NEVER) outside one.
    pub(crate) fn bound() -> Deadline {
        BOUND.try_with(|d| *d).unwrap_or(Deadline::NEVER)
    }

    /// Sleeps until the deadline (forever for [`NEVER`](Self::NEVER)).
    pub(crate) async fn sleep(self) {
        match self.0 {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    }
}

tokio::task_local! {
    /// See [`Deadline::bounding`].
    static BOUND: Deadline;
}

/// Sleeps `duration` (a retry policy's pause), cut short by `deadline`; `Closed` if the client
/// is closed first.
pub(crate) async fn pause(client: &Client, duration: Duration, deadline: Deadline) -> Result<()> {
    tokio::select! {
        _ = Deadline::after(Some(duration)).earliest(deadline).sleep() => Ok(()),
        _ = client.closed() => Err(Error::closed()),
    }
}

/// Why a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// A watch fired, or the connection state changed: read again.
    Again,
    /// The deadline passed.
    Deadline,
    /// The client was closed.
    Closed,
}

/// The connection-state changes from now on. Subscribe before reading, so that a change
/// between the read and the wait is seen.
pub(crate) fn states(client: &Client) -> broadcast::Receiver<ConnectionState> {
    client.subscribe_events()
}

/// Waits for the first of: any of `watches` firing, `deadline`, the client closing, a
/// connection-state change on `states`.
pub(crate) async fn wait(
    client: &Client,
    watches: Vec<Watch>,
    deadline: Deadline,
    states: &mut broadcast::Receiver<ConnectionState>,
) -> Wake {
    tokio::select! {
        _ = any_fires(watches) => Wake::Again,
        _ = deadline.sleep() => Wake::Deadline,
        _ = client.closed() => Wake::Closed,
        _ = states.recv() => Wake::Again,
    }
}

/// Waits for `watch` to fire, `deadline` or the client closing (a waiter whose watch alone
/// tells it when to look again: a lock's predecessor, a semaphore's leases).
pub(crate) async fn watch(client: &Client, watch: Watch, deadline: Deadline) -> Wake {
    tokio::select! {
        _ = watch.changed() => Wake::Again,
        _ = deadline.sleep() => Wake::Deadline,
        _ = client.closed() => Wake::Closed,
    }
}

/// Resolves when the first of `watches` fires; never with none.
async fn any_fires(watches: Vec<Watch>) {
    if watches.is_empty() {
        return std::future::pending().await;
    }
    let mut fired: Vec<_> = watches.into_iter().map(|w| Box::pin(w.changed())).collect();
    std::future::poll_fn(|cx: &mut Context<'_>| {
        let any = fired.iter_mut().any(|f| Pin::new(f).poll(cx).is_ready());
        if any {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_combine_and_pass() {
        assert!(!Deadline::NEVER.passed());
        assert_eq!(Deadline::after(None), Deadline::NEVER);
        assert_eq!(Deadline::after(Some(Duration::MAX)), Deadline::NEVER);
        assert!(Deadline::after(Some(Duration::ZERO)).passed());
        let soon = Deadline::after(Some(Duration::from_secs(1)));
        let later = Deadline::after(Some(Duration::from_secs(60)));
        assert_eq!(soon.earliest(later), soon);
        assert_eq!(later.earliest(soon), soon);
        assert_eq!(Deadline::NEVER.earliest(later), later);
        assert_eq!(Deadline::NEVER.remaining(), None);
        assert!(soon
            .remaining()
            .is_some_and(|r| r <= Duration::from_secs(1)));
    }
}
