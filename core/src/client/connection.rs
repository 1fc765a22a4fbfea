//! The session's life: opening one, following its states into Curator's, and replacing it
//! when it is lost (LOST, then a new session, RECONNECTED), as Curator does.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use zookeeper_client as zk;

use super::builder::split_connect_string;
use super::{wire, Config, ConnectionState, Inner};
use crate::Error;

/// How long a connection may stay silent: the connection timeout, at most 2/5 of the session
/// timeout (pings go out at 3/8 of it).
pub(crate) fn read_timeout(cfg: &Config) -> Duration {
    cfg.connection_timeout.min(cfg.session_timeout * 2 / 5)
}

/// A new session: the wire client, its states, and the record of why connections failed
/// (kept for the session's life: a refusal on a later reconnection says why too).
pub(crate) type Opened = (zk::Client, zk::StateWatcher, Arc<ConnectFailures>);

/// Why no session could be opened.
pub(crate) struct OpenFailure {
    pub(crate) error: Error,
    /// Every server refused a TLS certificate (the server's, by us, or ours, by the server):
    /// `error` is `AuthFailed`. Final for a first connect, retried after LOST (a certificate
    /// renewed on the servers, or rotated on disk here, is picked up then).
    pub(crate) tls_refused: bool,
}

impl From<Error> for OpenFailure {
    fn from(error: Error) -> OpenFailure {
        OpenFailure {
            error,
            tls_refused: false,
        }
    }
}

/// Opens a session on the servers of `hosts` (the connect string, or the members the
/// ensemble tracker last read).
pub(crate) async fn open_session(
    cfg: Arc<Config>,
    hosts: String,
) -> std::result::Result<Opened, OpenFailure> {
    let failures = Arc::new(ConnectFailures::new(&hosts, &cfg));
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
    if let Some(tls) = &cfg.tls {
        connector = connector.with_tls(tls.clone());
    }
    if let Some(sasl) = &cfg.sasl {
        connector = connector.with_sasl(sasl.wire());
    }
    let record = failures.clone();
    connector =
        connector.with_connection_error_hook(move |endpoint, error| record.record(endpoint, error));
    // The wire client gives up on a new session after the session timeout (its `Timeout`);
    // the connection timeout is the user's bound, so start again until it is reached (a busy
    // TLS server or machine can take longer than one session timeout to answer).
    let connect = async {
        loop {
            let attempt = connector.clone();
            let r = if cfg.tls.is_some() && cfg.tls_every_host {
                attempt.secure_connect(&hosts).await
            } else {
                attempt.connect(&hosts).await
            };
            match r {
                Err(zk::Error::Timeout) => {
                    tracing::info!(hosts = %hosts, "no session within the session timeout; trying again within the connection timeout");
                }
                r => return r,
            }
        }
    };
    let outcome = tokio::select! {
        r = tokio::time::timeout(cfg.connection_timeout, connect) => r,
        refusal = failures.every_server_refused_tls() => return Err(OpenFailure {
            error: Error::AuthFailed(
                format!(
                    "TLS with ZooKeeper at {} failed: {refusal}",
                    cfg.connect_string
                )
                .into(),
            ),
            tls_refused: true,
        }),
    };
    match outcome {
        Err(_) => {
            let tls = cfg.tls.is_some();
            let mut why = failures.summary();
            let probes = diagnose(&hosts, tls).await;
            if !why.is_empty() {
                why = format!("{why}; ");
            }
            Err(Error::Timeout(
                format!(
                    "could not connect to ZooKeeper at {} within the connection timeout of {:?}: {why}{probes}",
                    hosts, cfg.connection_timeout,
                )
                .into(),
            )
            .into())
        }
        Ok(Err(zk::Error::AuthFailed)) => Err(auth_failed(&cfg, &failures).into()),
        Ok(Err(e)) => Err(match e {
            zk::Error::BadArguments(_) | zk::Error::NoHosts => {
                Error::invalid(format!("connect string {:?}: {e}", cfg.connect_string))
            }
            e => wire::error(e, "connect to", &cfg.connect_string),
        }
        .into()),
        Ok(Ok(client)) => {
            let states = client.state_watcher();
            Ok((client, states, failures))
        }
    }
}

/// The `AuthFailed` error of a refused session, saying what was refused.
pub(crate) fn auth_failed(cfg: &Config, failures: &ConnectFailures) -> Error {
    let detail = failures.summary();
    auth_failed_because(cfg, &detail)
}

/// The wire client's words for the two refusals (`session/mod.rs`), as they appear in a
/// failure's summary: keyed on these, not on a bare code a host name may contain.
const REQUIRES_SASL: &str = "(SESSIONCLOSEDREQUIRESASLAUTH, -124)";
const AUTH_REFUSED: &str = "(AUTHFAILED, -115)";

fn auth_failed_because(cfg: &Config, detail: &str) -> Error {
    let requires_sasl = detail.contains(REQUIRES_SASL);
    let schemes = || {
        let mut s: Vec<&str> = cfg.auth.iter().map(|(scheme, _)| scheme.as_str()).collect();
        s.dedup();
        s.join(", ")
    };
    let what = match &cfg.sasl {
        Some(sasl)
            if detail.contains("cannot start a SASL") || detail.contains("cannot configure a SASL") =>
        {
            format!(
                "SASL {} could not start in this client (for the server, nothing was sent)",
                sasl.mechanism()
            )
        }
        // The mechanism failed on this side (rsasl's words): for GSSAPI, most often no ticket
        // for the server's service principal (none cached, and the KDC unknown to the realm,
        // silent, or without that principal).
        Some(sasl) if detail.contains("internal mechanism error") => format!(
            "this client's SASL {} mechanism failed{} (the library's reason below)",
            sasl.mechanism(),
            if sasl.mechanism() == "GSSAPI" {
                ": no Kerberos ticket for the server's service principal could be had from the ticket cache or the KDC"
            } else {
                ""
            }
        ),
        Some(sasl) if requires_sasl => format!(
            "the server requires SASL authentication and closed the session before this client's SASL {} exchange as {:?} completed",
            sasl.mechanism(),
            sasl.username()
        ),
        Some(sasl) => format!(
            "the server refused SASL {} authentication as {:?} (wrong password or unknown user)",
            sasl.mechanism(),
            sasl.username()
        ),
        // No SASL: an `auth` packet of ours was refused (an unknown scheme, or credentials a
        // server-side authentication provider refused).
        None if !requires_sasl && !cfg.auth.is_empty() && detail.contains(AUTH_REFUSED) => format!(
            "the server refused this client's authentication (scheme {}: a scheme the server does not know, or credentials its authentication provider refused)",
            schemes()
        ),
        None => "the server requires authentication (SASL: zookeeper.sessionRequireClientSASLAuth or enforce.auth) and this client has none configured (set SASL options)".to_string(),
    };
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(" [{detail}]")
    };
    Error::AuthFailed(
        format!(
            "authentication with ZooKeeper at {} failed: {what}; not retried{detail}",
            cfg.connect_string
        )
        .into(),
    )
}

/// Why each server of a connect string could not be connected to, as the wire client reports
/// it, and whether every server refused the TLS handshake for a certificate (which retrying
/// cannot cure: the connect fails at once instead of at the connection timeout).
pub(crate) struct ConnectFailures {
    servers: usize,
    /// Whether we present a client certificate (else a refused handshake means "none given").
    client_cert: bool,
    last: std::sync::Mutex<Vec<(String, String)>>,
    refused: tokio::sync::Notify,
}

impl ConnectFailures {
    fn new(hosts: &str, cfg: &Config) -> ConnectFailures {
        ConnectFailures {
            servers: split_connect_string(hosts).0.len().max(1),
            client_cert: cfg.tls_client_cert,
            last: Default::default(),
            refused: tokio::sync::Notify::new(),
        }
    }

    fn record(&self, endpoint: &str, error: &str) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let explained = explain_connect_error(error, self.client_cert);
        match last.iter_mut().find(|(e, _)| e == endpoint) {
            // An `auth` packet refused: the wire client says so, then ends the connection with
            // a bare "authentication failed"; keep the one that says which. (Not for -124: a
            // SASL exchange the server refused ends with it too, and the bare error that
            // follows is what tells a refusal from a server that wanted SASL first.)
            Some(entry)
                if entry.1.contains(AUTH_REFUSED)
                    && explained.contains("authentication failed") => {}
            Some(entry) => entry.1 = explained,
            None => last.push((endpoint.to_string(), explained)),
        }
        let certificate_refusals = last
            .iter()
            .filter(|(_, e)| e.starts_with(TLS_REFUSAL))
            .count();
        if certificate_refusals >= self.servers {
            self.refused.notify_one();
        }
    }

    async fn every_server_refused_tls(&self) -> String {
        self.refused.notified().await;
        self.summary()
    }

    /// `endpoint: why` for each server that failed, in the order they first failed.
    fn summary(&self) -> String {
        self.last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(endpoint, error)| format!("{endpoint}: {error}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// How an explained certificate refusal begins (either side refused the other's certificate).
const TLS_REFUSAL: &str = "TLS certificate refused: ";

/// What a wire-level connection error means, in the words a user needs (rustls's messages:
/// `invalid peer certificate: ...` when we refuse the server's certificate, `received fatal
/// alert: ...` when the server refuses ours).
fn explain_connect_error(error: &str, client_cert: bool) -> String {
    let lower = error.to_ascii_lowercase();
    if let Some(i) = lower.find("invalid peer certificate: ") {
        let detail = &error[i + "invalid peer certificate: ".len()..];
        let d = detail.to_ascii_lowercase();
        let why = if d.contains("unknownissuer") || d.contains("unknown issuer") {
            "the server's certificate is not signed by a trusted CA (unknown issuer): is the TLS CA the one that signed the server's certificate?"
        } else if d.contains("expired") {
            "the server's certificate has expired"
        } else if d.contains("notvalidyet") || d.contains("not valid yet") {
            "the server's certificate is not valid yet (check the clocks)"
        } else if d.contains("not valid for name") || d.contains("notvalidforname") {
            "the server's certificate does not name the host it was reached at (hostname verification; it can be turned off, at a man-in-the-middle risk)"
        } else if d.contains("revoked") {
            "the server's certificate is revoked"
        } else {
            "the server's certificate was not accepted"
        };
        return format!("{TLS_REFUSAL}{why} ({detail})");
    }
    if let Some(i) = lower.find("received fatal alert: ") {
        let alert = &error[i + "received fatal alert: ".len()..];
        let a = alert.to_ascii_lowercase();
        let refused = [
            "badcertificate",
            "certificateexpired",
            "unknownca",
            "certificateunknown",
            "unsupportedcertificate",
            "certificaterevoked",
            "accessdenied",
            "decrypterror",
        ];
        if a.starts_with("certificaterequired")
            || (!client_cert && refused.iter().any(|r| a.starts_with(r)))
        {
            return format!("{TLS_REFUSAL}the server requires a client certificate and none is configured (alert {alert})");
        }
        if a.starts_with("badcertificate")
            || a.starts_with("certificateexpired")
            || a.starts_with("unknownca")
            || a.starts_with("certificateunknown")
            || a.starts_with("unsupportedcertificate")
            || a.starts_with("certificaterevoked")
            || a.starts_with("accessdenied")
            || a.starts_with("decrypterror")
        {
            return format!("{TLS_REFUSAL}the server rejected the client certificate (missing, expired, or not signed by a CA it trusts; alert {alert})");
        }
        if a.starts_with("handshakefailure") {
            return format!("the TLS handshake failed (alert {alert}): the server may require a client certificate, or share no cipher suite or protocol version with us");
        }
        return format!("the server ended the TLS handshake (alert {alert})");
    }
    if lower.contains("corrupt message")
        || lower.contains("invalidcontenttype")
        || lower.contains("invalid content type")
    {
        return format!(
            "the server did not answer in TLS: does this port speak plaintext ZooKeeper? ({error})"
        );
    }
    error.to_string()
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
                        // Refused: a new session would be refused too (wrong credentials, or a
                        // server that now requires them). LOST, with the reason, and no loop.
                        let error = auth_failed(&i.cfg, &i.connect_failures());
                        tracing::error!(error = %error, "authentication failed: LOST; no new session will be opened");
                        i.fail(error);
                        return;
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
        let mut refusals = TlsRefusals::default();
        loop {
            let Some(i) = inner.upgrade() else { return };
            if i.is_closed.load(Ordering::SeqCst) {
                return;
            }
            let cfg = i.cfg.clone();
            let hosts = i.hosts.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let mut closed_rx = i.closed.subscribe();
            drop(i);
            let pause = match open_session(cfg, hosts).await {
                Ok((zk, new_states, failures)) => {
                    let Some(i) = inner.upgrade() else { return };
                    if i.is_closed.load(Ordering::SeqCst) {
                        return;
                    }
                    tracing::info!(session = %format_args!("{:#x}", zk.session_id().0), "new session opened after LOST");
                    // A TLS refusal of earlier attempts is over: calls wait for the new session.
                    i.clear_failure();
                    i.replace_session(Some(zk));
                    i.set_connect_failures(failures);
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
                Err(OpenFailure {
                    error,
                    tls_refused: true,
                }) => {
                    // Every server refused a certificate. Unlike a first connect (which fails
                    // at once: a configuration error is far likelier then), a refusal after
                    // LOST is an expiry or a rotation in progress (servers renewed before our
                    // CA file, our certificate expired before the rotation job ran, a wrong
                    // clock): Java and Curator keep trying, and so do we, reading the PEM files
                    // again for each attempt. Meanwhile calls fail at once with the reason.
                    let Some(i) = inner.upgrade() else { return };
                    let pause = refusals.next_pause();
                    if refusals.worth_an_error(error.message()) {
                        tracing::error!(error = %error, retry_in = ?pause, "the new session was refused for a TLS certificate; trying again until it is accepted (renew or rotate the certificate)");
                    } else {
                        tracing::debug!(error = %error, retry_in = ?pause, "the new session was refused for a TLS certificate again");
                    }
                    i.fail(error);
                    pause
                }
                Err(OpenFailure {
                    error: e @ Error::AuthFailed(_),
                    ..
                }) => {
                    // SASL (or the server requiring it) refused: as Java's AUTH_FAILED, final.
                    let Some(i) = inner.upgrade() else { return };
                    tracing::error!(error = %e, "the new session was refused: no new session will be opened");
                    i.fail(e);
                    return;
                }
                Err(OpenFailure { error: e, .. }) => {
                    // Not (or no longer) a refusal: calls wait for a session again, as after
                    // any LOST, instead of failing with an earlier refusal's reason.
                    if let Some(i) = inner.upgrade() {
                        i.clear_failure();
                    }
                    let pause = backoff;
                    tracing::debug!(error = %e, retry_in = ?pause, "could not open a new session yet");
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    pause
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = closed_rx.wait_for(|c| *c) => return,
            }
        }
    }
}

/// The pauses between new sessions refused for a TLS certificate after LOST (0.5 s, doubling to
/// [`TLS_REFUSAL_MAX_PAUSE`]), and which refusals are logged at ERROR: the first, one whose
/// reason changed (numbers aside: rustls puts the verification time in an expiry's reason), and
/// then one a minute.
#[derive(Default)]
struct TlsRefusals {
    pause: Option<Duration>,
    logged: Option<(String, Instant)>,
}

/// The longest pause between two attempts at a new session refused for a TLS certificate.
const TLS_REFUSAL_MAX_PAUSE: Duration = Duration::from_secs(5);

impl TlsRefusals {
    fn next_pause(&mut self) -> Duration {
        let pause = self.pause.map_or(Duration::from_millis(500), |p| {
            (p * 2).min(TLS_REFUSAL_MAX_PAUSE)
        });
        self.pause = Some(pause);
        pause
    }

    fn worth_an_error(&mut self, reason: &str) -> bool {
        let reason: String = reason.chars().filter(|c| !c.is_ascii_digit()).collect();
        let due = match &self.logged {
            None => true,
            Some((last, at)) => *last != reason || at.elapsed() >= Duration::from_secs(60),
        };
        if due {
            self.logged = Some((reason, Instant::now()));
        }
        due
    }
}

/// Why no server of `connect` gave us a session: each host is looked up, connected to and sent
/// a ZooKeeper handshake, and what went wrong is said per host (DNS, refused, silent, not
/// ZooKeeper, the other protocol: TLS where plaintext was spoken or the reverse). Only on the
/// failure path; each probe is bounded by two seconds.
pub(crate) async fn diagnose(connect: &str, tls_every_host: bool) -> String {
    // Every host at once: an ensemble of silent servers costs one probe's time, not one each.
    let probes: Vec<_> = split_connect_string(connect)
        .0
        .into_iter()
        .map(|host| {
            let address = host.with_port();
            let tls = host.tls.unwrap_or(tls_every_host);
            let probed = address.clone();
            (
                address,
                tokio::spawn(async move { probe(&probed, tls).await }),
            )
        })
        .collect();
    let mut out = Vec::with_capacity(probes.len());
    for (address, probe) in probes {
        let why = probe.await.unwrap_or_else(|_| "not probed".to_string());
        out.push(format!("{address}: {why}"));
    }
    out.join("; ")
}

const PROBE_LIMIT: Duration = Duration::from_secs(2);

async fn probe(host: &str, tls: bool) -> String {
    let addr = match tokio::time::timeout(PROBE_LIMIT, tokio::net::lookup_host(host)).await {
        Err(_) => return "DNS lookup timed out".into(),
        Ok(Err(e)) => return format!("DNS lookup failed ({e})"),
        Ok(Ok(mut a)) => match a.next() {
            Some(a) => a,
            None => return "the name has no address".into(),
        },
    };
    let plain = match plaintext_handshake(addr, false).await {
        Ok(answer) => answer,
        Err(why) => return why,
    };
    match (plain, tls) {
        (Handshake::ZooKeeper, true) => format!("{addr} speaks plaintext ZooKeeper, not TLS: connect to the server's secureClientPort, or without TLS"),
        (Handshake::ZooKeeper, false) => format!("{addr} answered the handshake as a ZooKeeper server (the session was not established in time: overloaded, or a read-only server while read-only is off?)"),
        (Handshake::Closed | Handshake::Silent, _) if speaks_tls(addr).await => {
            if tls {
                format!("{addr} speaks TLS and accepts connections; the TLS session or the ZooKeeper session on it did not come up in time")
            } else {
                format!("{addr} speaks TLS (a secureClientPort): configure TLS to connect to it")
            }
        }
        (Handshake::Closed, _) if matches!(plaintext_handshake(addr, true).await, Ok(Handshake::ZooKeeper)) => {
            format!("{addr} is a read-only ZooKeeper server (cut off from its quorum): it takes only clients that allow read-only sessions (can_be_read_only)")
        }
        (Handshake::Closed, _) => format!("{addr} closed the connection at the handshake (not a ZooKeeper server, or one refusing clients, e.g. over its connection limit)"),
        (Handshake::Silent, _) => format!("{addr} accepted the connection but did not answer a ZooKeeper handshake within 2 s (not a ZooKeeper server, or a paused or overloaded one)"),
        (Handshake::Other(n), _) => format!("{addr} answered, but not like a ZooKeeper server (bad handshake: frame of {n} bytes)"),
    }
}

enum Handshake {
    ZooKeeper,
    Closed,
    Silent,
    Other(i32),
}

async fn connect_probe(
    addr: std::net::SocketAddr,
) -> std::result::Result<tokio::net::TcpStream, String> {
    match tokio::time::timeout(PROBE_LIMIT, tokio::net::TcpStream::connect(addr)).await {
        Err(_) => Err(format!(
            "no answer to a TCP connect to {addr} within 2 s (host down or filtered)"
        )),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(format!(
            "connection refused at {addr} (no server listens on that port)"
        )),
        Ok(Err(e)) => Err(format!("cannot connect to {addr} ({e})")),
        Ok(Ok(s)) => Ok(s),
    }
}

/// Sends a plaintext ConnectRequest (allowing a read-only session or not) and classifies the
/// answer.
async fn plaintext_handshake(
    addr: std::net::SocketAddr,
    read_only: bool,
) -> std::result::Result<Handshake, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = connect_probe(addr).await?;
    // A ConnectRequest for a new session: protocol 0, last zxid 0, a short timeout, no session,
    // an empty 16-byte password, read-only or not.
    let mut req = Vec::with_capacity(48);
    req.extend(0i32.to_be_bytes());
    req.extend(0i64.to_be_bytes());
    req.extend(4000i32.to_be_bytes());
    req.extend(0i64.to_be_bytes());
    req.extend(16i32.to_be_bytes());
    req.extend([0u8; 16]);
    req.push(u8::from(read_only));
    let frame = [&(req.len() as i32).to_be_bytes()[..], &req].concat();
    if let Err(e) = stream.write_all(&frame).await {
        return Err(format!(
            "the connection to {addr} failed at the handshake ({e})"
        ));
    }
    let mut len = [0u8; 4];
    Ok(
        match tokio::time::timeout(PROBE_LIMIT, stream.read_exact(&mut len)).await {
            Err(_) => Handshake::Silent,
            Ok(Err(_)) => Handshake::Closed,
            Ok(Ok(_)) => match i32::from_be_bytes(len) {
                16..=64 => Handshake::ZooKeeper,
                n => Handshake::Other(n),
            },
        },
    )
}

/// Whether `addr` answers a TLS ClientHello with a TLS record (a handshake or an alert).
async fn speaks_tls(addr: std::net::SocketAddr) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = connect_probe(addr).await else {
        return false;
    };
    // A minimal TLS 1.2 ClientHello: a fixed random, no session, a few common suites, no
    // extensions. Any TLS server answers it with a handshake record or an alert.
    let suites: [u8; 8] = [0xc0, 0x2f, 0xc0, 0x2b, 0x00, 0x9c, 0x00, 0x2f];
    let mut body = vec![0x03, 0x03];
    body.extend([0x5a; 32]);
    body.push(0);
    body.extend((suites.len() as u16).to_be_bytes());
    body.extend(suites);
    body.extend([1, 0]);
    let mut hello = vec![0x01];
    hello.extend(&(body.len() as u32).to_be_bytes()[1..]);
    hello.extend(body);
    let mut record = vec![0x16, 0x03, 0x01];
    record.extend((hello.len() as u16).to_be_bytes());
    record.extend(hello);
    if stream.write_all(&record).await.is_err() {
        return false;
    }
    let mut first = [0u8; 1];
    matches!(
        tokio::time::timeout(PROBE_LIMIT, stream.read_exact(&mut first)).await,
        Ok(Ok(_)) if first[0] == 0x15 || first[0] == 0x16
    )
}

#[cfg(test)]
mod tests {
    use super::explain_connect_error as explain;
    use super::{TlsRefusals, AUTH_REFUSED, REQUIRES_SASL, TLS_REFUSAL, TLS_REFUSAL_MAX_PAUSE};
    use std::time::Duration;

    #[test]
    fn tls_refusals_after_lost_back_off_to_a_few_seconds_and_log_changes() {
        let mut r = TlsRefusals::default();
        let pauses: Vec<Duration> = (0..8).map(|_| r.next_pause()).collect();
        assert_eq!(pauses[0], Duration::from_millis(500));
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]), "{pauses:?}");
        assert_eq!(*pauses.last().unwrap(), TLS_REFUSAL_MAX_PAUSE);
        let expired = |t: u64| {
            format!(
                "certificate expired: verification time {t}, but certificate is not valid after 1"
            )
        };
        assert!(r.worth_an_error(&expired(2)));
        assert!(!r.worth_an_error(&expired(7)), "only the time changed");
        assert!(r.worth_an_error("unknown issuer"));
        assert!(!r.worth_an_error("unknown issuer"));
    }

    #[test]
    fn rustls_errors_are_explained_in_a_users_words() {
        let unknown = explain("invalid peer certificate: UnknownIssuer", true);
        assert!(
            unknown.starts_with("TLS certificate refused: "),
            "{unknown}"
        );
        assert!(unknown.contains("unknown issuer"), "{unknown}");
        let expired = explain(
            "invalid peer certificate: certificate expired: verification time 2, but certificate is not valid after 1",
            false,
        );
        assert!(expired.contains("has expired"), "{expired}");
        let name = explain("invalid peer certificate: certificate not valid for name \"127.0.0.1\"; certificate is only valid for DnsName(\"wrong.example\")", false);
        assert!(name.contains("does not name the host"), "{name}");
        // The server refusing: with no certificate of ours, it wanted one.
        let none = explain("received fatal alert: BadCertificate", false);
        assert!(
            none.contains("requires a client certificate and none is configured"),
            "{none}"
        );
        let ours = explain("received fatal alert: CertificateUnknown", true);
        assert!(
            ours.contains("the server rejected the client certificate"),
            "{ours}"
        );
        assert_eq!(explain("connection refused", true), "connection refused");
        // A handshake_failure alert is a cipher or protocol mismatch as often as a missing
        // certificate: not a refusal that fails the connect at once.
        let handshake = explain("received fatal alert: HandshakeFailure", false);
        assert!(!handshake.starts_with(TLS_REFUSAL), "{handshake}");
        assert!(handshake.contains("share no cipher suite"), "{handshake}");
    }

    #[test]
    fn the_sasl_requirement_is_read_from_the_wire_marker_not_a_host_name() {
        let refused =
            "tcp://zk-1240.prod:2181: the server refused the authentication (AUTHFAILED, -115)";
        assert!(!refused.contains(REQUIRES_SASL));
        assert!(refused.contains(AUTH_REFUSED));
        let required = "tcp://zk:2181: the server closed the session: it requires SASL authentication first (SESSIONCLOSEDREQUIRESASLAUTH, -124)";
        assert!(required.contains(REQUIRES_SASL));
    }
}
