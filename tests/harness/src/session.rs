//! Expiring ZooKeeper sessions server-side.

use std::future::Future;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use zookeeper_client::SessionInfo;

use crate::{four_letter, wait_until};

const EXPIRE_TIMEOUT: Duration = Duration::from_secs(30);
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Expires `session` server-side, the way Curator's tests do, and returns once the servers
/// have dropped it (its ephemeral nodes are gone by then): [`expire_session_id`] with the
/// session's id and password. The client that owns the session sees `SessionState::Expired`
/// when it reconnects. Panics after 30 s.
///
/// ```no_run
/// # async fn demo(client: zookeeper_client::Client, server: &zkrecipes_testing::TestingServer) {
/// let mut state = client.state_watcher(); // before expiring, not to miss the change
/// zkrecipes_testing::expire_session(&server.connect_string(), client.session().clone());
/// while state.changed().await != zookeeper_client::SessionState::Expired {}
/// # }
/// ```
pub fn expire_session(connect_string: &str, session: SessionInfo) {
    expire_session_id(connect_string, session.id().0, session.password());
}

/// Like [`expire_session`], for a session known only by its id and password (as clients in
/// other languages report them, e.g. kazoo's `client_id`); speaks the wire protocol directly
/// (ConnectRequest for that session, then CloseSession, sent together). Used by
/// `zk-harness expire`. Completion is observed by polling the `dump` and `cons` four-letter
/// words of every server in `connect_string` until none mentions the session. Panics after
/// 30 s, naming what each server still shows.
///
/// On an ensemble the close goes through a member the session is not connected to, when there
/// is one. Through the victim's own member it can leave a zombie: the re-attach drops the
/// victim's connection there, and if the victim reconnects to that member while the leader is
/// still validating our re-attach, the close then ends only the closing connection. The
/// victim's new connection stays open on a session that no longer exists, answering pings,
/// and the victim is never told its session expired. A close through another member drops the
/// victim's connection only once the session is closed, so its reconnect is refused. A
/// standalone server leaves no choice, and the same race happens there (3 rounds in 12 in a
/// stress run), but the zombie only lasts until its next ping: the server then finds the
/// session gone and drops the connection, so the call may take up to about the victim's
/// session timeout (8 to 20 s with a 20 s timeout in that run).
pub fn expire_session_id(connect_string: &str, session_id: i64, password: &[u8]) {
    let hex = format!("{session_id:#x}"); // as ZooKeeper prints it: 0x + lowercase hex
    let mut last_error = String::from("no server in the connect string");
    let closed = wait_until(EXPIRE_TIMEOUT, Duration::from_millis(50), || {
        let (holding, others): (Vec<String>, Vec<String>) =
            servers(connect_string).into_iter().partition(|server| {
                mentions(&four_letter(server, "cons"), &hex)
                    .next()
                    .is_some()
            });
        others.iter().chain(&holding).any(|server| {
            close_session(server, session_id, password)
                .map_err(|e| last_error = format!("{server}: {e}"))
                .is_ok()
        })
    });
    if !closed {
        panic!("zkrecipes-testing: cannot close session {hex} within 30 s: {last_error}");
    }
    if let Some(seen) = await_session_gone(connect_string, &hex) {
        panic!(
            "zkrecipes-testing: session {hex} is still known to {connect_string} 30 s after it \
             was closed (wrong password, or no server answering four-letter words?); last seen: {seen}"
        );
    }
}

/// The lines of a four-letter-word answer that name session `hex`.
fn mentions<'a>(answer: &'a str, hex: &'a str) -> impl Iterator<Item = &'a str> {
    answer.lines().filter(move |line| {
        line.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| word == hex)
    })
}

/// `host:port` of each server of a connect string (`tcp://` prefixes and chroot removed).
fn servers(connect_string: &str) -> Vec<String> {
    connect_string
        .split(',')
        .map(|s| s.trim().trim_start_matches("tcp://"))
        .map(|s| s.split('/').next().unwrap_or_default())
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.contains(':') {
                s.to_owned()
            } else {
                format!("{s}:2181")
            }
        })
        .collect()
}

/// Polls `dump` and `cons` of every server until none mentions session `hex` and at least one
/// answered: `None` then. After 30 s, `Some(where it was last seen)`: each server's lines
/// naming the session, or that no server answered.
fn await_session_gone(connect_string: &str, hex: &str) -> Option<String> {
    let mut seen = String::new();
    let gone = wait_until(EXPIRE_TIMEOUT, Duration::from_millis(10), || {
        let mut answered = false;
        seen.clear();
        for server in servers(connect_string) {
            for cmd in ["dump", "cons"] {
                let answer = four_letter(&server, cmd);
                answered |= !answer.is_empty();
                for line in mentions(&answer, hex) {
                    seen.push_str(&format!("[{server} {cmd}] {} ", line.trim()));
                }
            }
        }
        if !answered {
            seen = "no server answered dump/cons".to_owned();
        }
        answered && seen.is_empty()
    });
    (!gone).then_some(seen)
}

/// Attaches to the session on `server` and closes it (Ok too if the server says it is gone).
fn close_session(server: &str, id: i64, password: &[u8]) -> io::Result<()> {
    let addr = server
        .to_socket_addrs()?
        .next()
        .ok_or(io::ErrorKind::InvalidInput)?;
    let mut stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    let mut connect = Vec::new();
    connect.extend(0i32.to_be_bytes()); // protocol version
    connect.extend(0i64.to_be_bytes()); // last zxid seen
    connect.extend(10_000i32.to_be_bytes()); // session timeout, ms
    connect.extend(id.to_be_bytes());
    connect.extend((password.len() as i32).to_be_bytes());
    connect.extend(password);
    connect.push(0); // not read-only
                     // The join and the CloseSession (xid 1, op -11) go out together, before any reply: the
                     // server holds the second request until the session is re-attached here, so the victim
                     // cannot get back onto its session in between (a close from a connection that no longer
                     // owns the session would be refused), and it sees one clean loss, no flapping.
    let close = [1i32.to_be_bytes(), (-11i32).to_be_bytes()].concat();
    stream.write_all(&[frame(&connect), frame(&close)].concat())?;
    // ConnectResponse: protocol version, timeout (0 if the session is unknown), id, password.
    let reply = recv_frame(&mut stream)?;
    let timeout = reply.get(4..8).ok_or(io::ErrorKind::InvalidData)?;
    if i32::from_be_bytes(timeout.try_into().expect("4 bytes")) <= 0 {
        return Ok(());
    }
    // The close's ReplyHeader (xid, zxid, err) comes once the session is closed, or with an
    // error. On an ensemble the victim can win a race: kicked off its server by our re-attach,
    // it reconnects to a third server, which re-validates the session with the leader before
    // our close gets there; the leader then refuses our close as coming from a connection that
    // no longer owns the session (SESSIONMOVED) and the session lives on. An error is returned
    // so that the caller attaches and closes again.
    let reply = recv_frame(&mut stream)?;
    let err = reply.get(12..16).ok_or(io::ErrorKind::InvalidData)?;
    match i32::from_be_bytes(err.try_into().expect("4 bytes")) {
        0 | SESSION_EXPIRED => Ok(()),
        code => Err(io::Error::other(format!(
            "the server refused CloseSession with error {code}{}",
            if code == SESSION_MOVED {
                " (SESSIONMOVED: the client re-attached elsewhere first)"
            } else {
                ""
            }
        ))),
    }
}

/// ZooKeeper's `KeeperException.Code` values met when closing a session.
const SESSION_EXPIRED: i32 = -112;
const SESSION_MOVED: i32 = -118;

fn frame(body: &[u8]) -> Vec<u8> {
    [&(body.len() as i32).to_be_bytes(), body].concat()
}

fn recv_frame(stream: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut len = [0; 4];
    stream.read_exact(&mut len)?;
    let mut body = vec![0; i32::from_be_bytes(len).clamp(0, 1 << 20) as usize];
    stream.read_exact(&mut body)?;
    Ok(body)
}

/// Expires a [`zkrecipes::Client`]'s session on the server (Curator's KillSession) and resolves
/// once the client has seen it go (`LOST`, or a new session, or the client dropped): its
/// ephemeral nodes — locks, latch nodes — are gone then.
///
/// Everything the wait needs is taken from `client` before this returns: the future holds no
/// handle to it, so a state listener may drop the client's last handle meanwhile (a C test
/// freeing its client from its LOST callback).
pub fn expire_client_session(
    client: &zkrecipes::Client,
) -> impl Future<Output = Result<(), String>> + Send + 'static {
    let credentials = client.session_credentials();
    // The servers the client uses now (an ensemble tracker may have replaced its connect
    // string's).
    let connect = client.current_connect_string();
    let mut states = client.state_stream();
    async move {
        let (id, password) =
            credentials.ok_or_else(|| "the client has no session to expire".to_owned())?;
        let servers = connect.clone();
        tokio::task::spawn_blocking(move || {
            std::panic::catch_unwind(|| expire_session_id(&servers, id, &password))
                .map_err(|_| format!("could not expire session {id:#x} via {servers}"))
        })
        .await
        .map_err(|e| e.to_string())??;
        // Wait until the client has seen the session go (it reconnects and hears "expired").
        let wait = async {
            loop {
                match states.next().await {
                    Some(zkrecipes::ConnectionState::Lost) | None => return,
                    Some(_) => {}
                }
            }
        };
        tokio::time::timeout(EXPIRE_TIMEOUT, wait).await.map_err(|_| {
            format!("session {id:#x} was closed on the server, but the client did not report LOST within 30 s")
        })
    }
}
