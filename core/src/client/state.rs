//! Connection states, Curator's vocabulary.

use std::fmt;

use tokio::sync::broadcast;

/// Curator's ConnectionState.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnectionState {
    /// The first successful connection.
    Connected,
    /// The connection was lost; the session may still be alive. Locks and leadership must be
    /// treated as uncertain (Curator's standard policy drops them here).
    Suspended,
    /// Connected again after SUSPENDED or LOST (after LOST, with a new session).
    Reconnected,
    /// The session is gone: it expired on the server, or SUSPENDED lasted the negotiated session
    /// timeout. Ephemeral nodes of the old session (locks, latches) are gone or going.
    Lost,
    /// Connected to a read-only server (only when the client allows read-only mode).
    ReadOnly,
}

impl ConnectionState {
    /// CONNECTED, RECONNECTED and READ_ONLY.
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            ConnectionState::Connected | ConnectionState::Reconnected | ConnectionState::ReadOnly
        )
    }

    /// Every state.
    pub const ALL: &'static [ConnectionState] = &[
        ConnectionState::Connected,
        ConnectionState::Suspended,
        ConnectionState::Reconnected,
        ConnectionState::Lost,
        ConnectionState::ReadOnly,
    ];

    /// Curator's name: `CONNECTED`, `SUSPENDED`, `RECONNECTED`, `LOST`, `READ_ONLY` (the one
    /// spelling every face uses).
    pub const fn name(self) -> &'static str {
        self.as_str()
    }

    /// Curator's name: `CONNECTED`, `SUSPENDED`, `RECONNECTED`, `LOST`, `READ_ONLY`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ConnectionState::Connected => "CONNECTED",
            ConnectionState::Suspended => "SUSPENDED",
            ConnectionState::Reconnected => "RECONNECTED",
            ConnectionState::Lost => "LOST",
            ConnectionState::ReadOnly => "READ_ONLY",
        }
    }
}

impl fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a hold (a lock) or a leadership counts as lost (Curator's `ConnectionStateErrorPolicy`).
/// One policy for the lock family and the leader recipes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LostPolicy {
    /// Curator's `StandardConnectionStateErrorPolicy`: SUSPENDED already counts (the session
    /// may be expiring unseen, and another process may hold the lock or lead by the time the
    /// connection is back), as does LOST. The safe default.
    #[default]
    Standard,
    /// Curator's `SessionConnectionStateErrorPolicy`: only LOST (or a new session) counts; a
    /// SUSPENDED connection that comes back keeps the hold or leadership. Cheaper failovers,
    /// weaker guarantee: fence writes with the fencing token or leadership epoch.
    Session,
}

impl LostPolicy {
    /// Whether `state` ends holds and leadership under this policy.
    pub fn is_error_state(self, state: ConnectionState) -> bool {
        match state {
            ConnectionState::Lost => true,
            ConnectionState::Suspended => self == LostPolicy::Standard,
            ConnectionState::Connected
            | ConnectionState::Reconnected
            | ConnectionState::ReadOnly => false,
        }
    }
}

/// A stream of connection-state changes (Rust's face of Curator's ConnectionStateListener).
pub struct StateStream {
    pub(crate) rx: broadcast::Receiver<ConnectionState>,
    /// The client's closed flag: the changes published before close are still handed out,
    /// then `None`.
    pub(crate) closed: tokio::sync::watch::Receiver<bool>,
}

impl StateStream {
    /// The next state change; `None` once the client is closed (or dropped), after the
    /// changes published before that. A receiver that fell behind by more than 64 changes
    /// skips to the oldest one it still has.
    pub async fn next(&mut self) -> Option<ConnectionState> {
        use broadcast::error::{RecvError, TryRecvError};
        loop {
            match self.rx.try_recv() {
                Ok(s) => return Some(s),
                Err(TryRecvError::Lagged(_)) => continue,
                Err(TryRecvError::Closed) => return None,
                Err(TryRecvError::Empty) => {}
            }
            if *self.closed.borrow() {
                return None;
            }
            tokio::select! {
                r = self.rx.recv() => match r {
                    Ok(s) => return Some(s),
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return None,
                },
                // Closed: look once more for what came before it.
                r = self.closed.changed() => if r.is_err() {
                    // The client is gone: what it published before, then `None`.
                    return self.rx.try_recv().ok();
                },
            }
        }
    }
}
