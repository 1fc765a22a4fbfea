//! The session's life: opening one, following its states into Curator's, and replacing it
//! when it is lost (LOST, then a new session, RECONNECTED), as Curator does.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use zookeeper_client as zk;

use super::{wire, Config, ConnectionState, Inner};
use crate::{Error, Result};

pub(crate) async fn open_session(cfg: Arc<Config>) -> Result<(zk::Client, zk::StateWatcher)> {
    let mut connector = zk::Client::connector()
        .with_session_timeout(cfg.session_timeout)
        .with_readonly(cfg.can_be_read_only)
        // Bounds each connection attempt: a server that accepts and then stays silent is left
        // after the connection timeout, not after a share of the session timeout.
        .with_connection_timeout(cfg.connection_timeout);
    for (scheme, cred) in &cfg.auth {
        connector = connector.with_auth(scheme, cred);
    }
    match tokio::time::timeout(
        cfg.connection_timeout,
        connector.connect(&cfg.connect_string),
    )
    .await
    {
        Err(_) => Err(Error::Timeout(
            format!(
                "could not connect to ZooKeeper at {} within the connection timeout of {:?}",
                cfg.connect_string, cfg.connection_timeout
            )
            .into(),
        )),
        Ok(Err(e)) => Err(match e {
            zk::Error::BadArguments(_) | zk::Error::NoHosts => {
                Error::invalid(format!("connect string {:?}: {e}", cfg.connect_string))
            }
            e => wire::error(e, "connect to", &cfg.connect_string),
        }),
        Ok(Ok(client)) => {
            let states = client.state_watcher();
            Ok((client, states))
        }
    }
}

/// Follows the session's states and turns them into Curator's, replacing a lost session.
pub(crate) async fn manage_connection(inner: Weak<Inner>, mut states: zk::StateWatcher) {
    let mut suspended_since: Option<Instant> = None;
    loop {
        let (closed_rx, session_timeout) = match inner.upgrade() {
            Some(i) => (
                i.closed.subscribe(),
                i.session
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .map(|z| z.session_timeout())
                    .unwrap_or(i.cfg.session_timeout),
            ),
            None => return,
        };
        let mut closed_rx = closed_rx;
        if *closed_rx.borrow() {
            return;
        }
        let lost_deadline = suspended_since.map(|t| t + session_timeout);
        let lost = tokio::select! {
            s = states.changed() => {
                let Some(i) = inner.upgrade() else { return };
                match s {
                    zk::SessionState::Disconnected => {
                        suspended_since.get_or_insert_with(Instant::now);
                        tracing::warn!(session = %format_args!("{:#x}", i.session_id.load(Ordering::Relaxed)), timeout = ?session_timeout, "connection SUSPENDED: locks and leadership are in doubt until it comes back");
                        i.publish(ConnectionState::Suspended);
                        false
                    },
                    zk::SessionState::SyncConnected => {
                        suspended_since = None;
                        tracing::info!(session = %format_args!("{:#x}", i.session_id.load(Ordering::Relaxed)), "connection RECONNECTED (same session)");
                        i.publish(ConnectionState::Reconnected);
                        false
                    },
                    zk::SessionState::ConnectedReadOnly => {
                        suspended_since = None;
                        tracing::info!("connected to a read-only server (READ_ONLY)");
                        i.publish(ConnectionState::ReadOnly);
                        false
                    },
                    zk::SessionState::Closed => return,
                    zk::SessionState::Expired => {
                        tracing::warn!(session = %format_args!("{:#x}", i.session_id.load(Ordering::Relaxed)), "session expired on the server: LOST; its ephemeral nodes (locks, latch nodes) are gone");
                        true
                    },
                    zk::SessionState::AuthFailed => {
                        tracing::error!("authentication failed: LOST");
                        true
                    },
                }
            },
            _ = async { match lost_deadline { Some(d) => tokio::time::sleep_until(d.into()).await, None => std::future::pending().await } } => {
                tracing::warn!(timeout = ?session_timeout, "SUSPENDED for the whole session timeout: the session is presumed expired (LOST)");
                true
            },
            _ = closed_rx.wait_for(|c| *c) => return,
        };
        if !lost {
            continue;
        }
        // LOST: the session is gone (or presumed gone after SUSPENDED for a whole session
        // timeout, as Curator 3+ decides). Drop it and open a new one.
        suspended_since = None;
        {
            let Some(i) = inner.upgrade() else { return };
            i.replace_session(None);
            i.publish(ConnectionState::Lost);
        }
        let mut backoff = Duration::from_millis(50);
        loop {
            let Some(i) = inner.upgrade() else { return };
            if i.is_closed.load(Ordering::SeqCst) {
                return;
            }
            let cfg = i.cfg.clone();
            drop(i);
            match open_session(cfg).await {
                Ok((zk, new_states)) => {
                    let Some(i) = inner.upgrade() else { return };
                    if i.is_closed.load(Ordering::SeqCst) {
                        return;
                    }
                    tracing::info!(session = %format_args!("{:#x}", zk.session_id().0), "new session opened after LOST");
                    i.replace_session(Some(zk));
                    states = new_states;
                    i.publish(
                        if states.peek_state() == zk::SessionState::ConnectedReadOnly {
                            ConnectionState::ReadOnly
                        } else {
                            ConnectionState::Reconnected
                        },
                    );
                    break;
                }
                Err(e) => {
                    tracing::debug!(error = %e, retry_in = ?backoff, "could not open a new session yet");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
    }
}
