//! Waiting for a recipe's condition to change: a one-shot watch, a deadline, the client
//! closing, or a connection-state change (after which the recipe reads again, through the retry
//! policy, so a server that stays away ends in a connection error rather than a hang).

use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use crate::client::Watch;
use crate::{Client, ConnectionState};

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

/// Subscribe before reading, so that a state change between the read and the wait is seen.
pub(crate) fn states(client: &Client) -> broadcast::Receiver<ConnectionState> {
    client.subscribe_events()
}

/// Waits for the first of: any of `watches` firing, `deadline`, the client closing, a
/// connection-state event on `states`.
pub(crate) async fn wait(
    client: &Client,
    watches: Vec<Watch>,
    deadline: Option<Instant>,
    states: &mut broadcast::Receiver<ConnectionState>,
) -> Wake {
    let any_watch = async {
        if watches.is_empty() {
            std::future::pending::<()>().await;
        }
        let fired = watches.into_iter().map(|w| Box::pin(w.changed()));
        futures_select_all(fired).await;
    };
    tokio::select! {
        _ = any_watch => Wake::Again,
        _ = sleep_until(deadline) => Wake::Deadline,
        _ = client.closed() => Wake::Closed,
        _ = states.recv() => Wake::Again,
    }
}

/// The first of several futures to finish (a small `select_all`).
async fn futures_select_all<F: std::future::Future + Unpin>(futs: impl Iterator<Item = F>) {
    let mut futs: Vec<F> = futs.collect();
    std::future::poll_fn(|cx| {
        for f in futs.iter_mut() {
            if std::pin::Pin::new(f).poll(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Sleeps until `deadline`, or forever without one.
pub(crate) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// `now + timeout`, or `None` (no limit) without a timeout or when it does not fit.
pub(crate) fn deadline_of(timeout: Option<Duration>) -> Option<Instant> {
    timeout.and_then(|t| Instant::now().checked_add(t))
}

/// Whether `deadline` has passed.
pub(crate) fn passed(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}
