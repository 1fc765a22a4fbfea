//! The session's life: opening one, following its states into Curator's, and replacing it
//! when it is lost (LOST, then a new session, RECONNECTED), as Curator does.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use zookeeper_client as zk;

use super::{wire, Config, ConnectionState, Inner};
use crate::{Error, Result};

/// How long a connection may stay silent: the connection timeout, at most 2/5 of the session
/// timeout (pings go out at 3/8 of it).
pub(crate) fn read_timeout(cfg: &Config) -> Duration {
    cfg.connection_timeout.min(cfg.session_timeout * 2 / 5)
}

pub(crate) async fn open_session(cfg: Arc<Config>) -> Result<(zk::Client, zk::StateWatcher)> {
    let mut connector = zk::Client::connector()
        .with_session_timeout(cfg.session_timeout)
        .with_readonly(cfg.can_be_read_only)
        // Bounds each connection attempt: a server that accepts and then stays silent is left
        // after the connection timeout (never later than 2/5 of the session timeout, the wire
        // client's own default), not after a share of the session timeout. The wire client
        // also uses it as the read timeout of an established connection.
        .with_connection_timeout(read_timeout(&cfg));
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
                "could not connect to ZooKeeper at {} within the connection timeout of {:?}: {}",
                cfg.connect_string,
                cfg.connection_timeout,
                diagnose(&cfg.connect_string).await
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

/// Why no server of `connect` gave us a session: each host is looked up, connected to and sent
/// a ZooKeeper handshake, and what went wrong is said per host (DNS, refused, silent, not
/// ZooKeeper). Only on the failure path; each probe is bounded by two seconds.
pub(crate) async fn diagnose(connect: &str) -> String {
    let hosts: Vec<String> = connect
        .split('/')
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| {
            if h.rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
            {
                h.to_string()
            } else {
                format!("{h}:2181")
            }
        })
        .collect();
    let probes = hosts
        .iter()
        .map(|h| async move { format!("{h}: {}", probe(h).await) });
    let mut out = Vec::with_capacity(hosts.len());
    for p in probes {
        out.push(p.await);
    }
    out.join("; ")
}

async fn probe(host: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const LIMIT: Duration = Duration::from_secs(2);
    let addrs = match tokio::time::timeout(LIMIT, tokio::net::lookup_host(host)).await {
        Err(_) => return "DNS lookup timed out".into(),
        Ok(Err(e)) => return format!("DNS lookup failed ({e})"),
        Ok(Ok(a)) => a.collect::<Vec<_>>(),
    };
    let Some(addr) = addrs.first() else {
        return "the name has no address".into();
    };
    let mut stream = match tokio::time::timeout(LIMIT, tokio::net::TcpStream::connect(addr)).await {
        Err(_) => {
            return format!(
                "no answer to a TCP connect to {addr} within 2 s (host down or filtered)"
            )
        }
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return format!("connection refused at {addr} (no server listens on that port)")
        }
        Ok(Err(e)) => return format!("cannot connect to {addr} ({e})"),
        Ok(Ok(s)) => s,
    };
    // A ConnectRequest for a new session: protocol 0, last zxid 0, a short timeout, no session,
    // an empty 16-byte password, not read-only.
    let mut req = Vec::with_capacity(48);
    req.extend(0i32.to_be_bytes());
    req.extend(0i64.to_be_bytes());
    req.extend(4000i32.to_be_bytes());
    req.extend(0i64.to_be_bytes());
    req.extend(16i32.to_be_bytes());
    req.extend([0u8; 16]);
    req.push(0);
    let frame = [&(req.len() as i32).to_be_bytes()[..], &req].concat();
    if let Err(e) = stream.write_all(&frame).await {
        return format!("the connection to {addr} failed at the handshake ({e})");
    }
    let mut len = [0u8; 4];
    match tokio::time::timeout(LIMIT, stream.read_exact(&mut len)).await {
        Err(_) => format!("{addr} accepted the connection but did not answer a ZooKeeper handshake within 2 s (not a ZooKeeper server, or a paused or overloaded one)"),
        Ok(Err(_)) => format!("{addr} closed the connection at the handshake (not a ZooKeeper server, or one refusing clients, e.g. over its connection limit)"),
        Ok(Ok(_)) => match i32::from_be_bytes(len) {
            16..=64 => format!("{addr} answered the handshake as a ZooKeeper server (the session was not established in time: overloaded, or a read-only server while read-only is off?)"),
            n => format!("{addr} answered, but not like a ZooKeeper server (bad handshake: frame of {n} bytes)"),
        },
    }
}
