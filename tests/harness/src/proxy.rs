//! [`FaultProxy`]: a TCP proxy that injects network faults between clients and a server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::wait_until;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Forward,
    Cut,
    Blackhole,
    DropReplies,
    Delay(Duration),
    DelayReplies(Duration),
}

#[derive(Debug)]
struct Shared {
    mode: watch::Sender<Mode>,
    connections: AtomicUsize,
    bytes: AtomicU64,
    client_reads: AtomicU64,
    client_bytes: AtomicU64,
}

/// A TCP proxy on a free 127.0.0.1 port in front of one server, to simulate network faults.
///
/// Point clients at [`connect_string`](Self::connect_string). The controls take effect at once
/// on existing and new connections:
///
/// * [`cut`](Self::cut): closes every connection and closes new ones as soon as they are
///   accepted (the server looks down), until [`restore`](Self::restore).
/// * [`blackhole`](Self::blackhole): connections stay open (new ones are accepted) but bytes
///   are silently dropped both ways, like a network partition: the client notices only by
///   timeouts.
/// * [`drop_replies`](Self::drop_replies): requests still reach the server but its replies are
///   dropped: the server applies a write whose answer the client never sees.
/// * [`delay`](Self::delay): adds latency to every chunk in each direction, keeping order.
/// * [`delay_replies`](Self::delay_replies): the same for the server's replies only: a write
///   is applied at once while its answer is still on its way (a cut then loses it).
/// * [`restore`](Self::restore): forwards normally again.
///
/// It runs on its own thread with its own tokio runtime; dropping it closes every connection
/// and ends the thread.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    upstream: String,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts forwarding a free 127.0.0.1 port to `upstream` (`"host:port"`, e.g.
    /// [`TestingServerHandle::connect_string`](crate::TestingServerHandle::connect_string)).
    pub fn start(upstream: &str) -> FaultProxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .unwrap_or_else(|e| panic!("zkrecipes-testing: FaultProxy cannot bind 127.0.0.1: {e}"));
        let addr = listener
            .local_addr()
            .expect("bound listener has an address");
        let shared = Arc::new(Shared {
            mode: watch::channel(Mode::Forward).0,
            connections: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            client_reads: AtomicU64::new(0),
            client_bytes: AtomicU64::new(0),
        });
        let (shutdown, stop) = oneshot::channel();
        let (sh, up) = (shared.clone(), Arc::<str>::from(upstream));
        let thread = thread::Builder::new()
            .name(format!("zkr-proxy-{}", addr.port()))
            .spawn(move || {
                // Spare workers: a delayed chunk's last stretch is a short blocking sleep (see
                // `wait_until_precise`), and the other tasks must keep running meanwhile.
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(3)
                    .enable_all()
                    .build();
                let runtime =
                    runtime.expect("zkrecipes-testing: cannot build the FaultProxy runtime");
                runtime.block_on(async move {
                    let listener =
                        TcpListener::from_std(listener).expect("listener joins the runtime");
                    tokio::select! {
                        _ = stop => {}
                        () = accept_loop(listener, up, sh) => {}
                    }
                });
                // Dropping the runtime here drops every connection task, closing its sockets.
            })
            .expect("zkrecipes-testing: cannot start the FaultProxy thread");
        FaultProxy {
            addr,
            upstream: upstream.to_owned(),
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `"127.0.0.1:PORT"`, for clients to connect to.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The proxy's port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The `"host:port"` it forwards to.
    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    /// Closes all connections and closes new ones on accept until [`restore`](Self::restore).
    /// Returns once every current connection is closed. From the moment it is called nothing more
    /// is forwarded either way, not even bytes the proxy read or was delaying before: a request
    /// held by [`delay`](Self::delay) never reaches the server.
    pub fn cut(&self) {
        self.shared.mode.send_replace(Mode::Cut);
        wait_until(Duration::from_secs(5), Duration::from_millis(2), || {
            self.connections() == 0
        });
    }

    /// Keeps connections open but silently drops all bytes both ways (a network partition).
    pub fn blackhole(&self) {
        self.shared.mode.send_replace(Mode::Blackhole);
    }

    /// Forwards client-to-server bytes but drops every server-to-client byte: requests are
    /// applied while their replies are lost (the ambiguous-write fault).
    pub fn drop_replies(&self) {
        self.shared.mode.send_replace(Mode::DropReplies);
    }

    /// Delays every chunk by `latency` in each direction (a round trip gets `2 * latency`).
    pub fn delay(&self, latency: Duration) {
        self.shared.mode.send_replace(Mode::Delay(latency));
    }

    /// Delays every server-to-client chunk by `latency`, keeping order; requests pass at once.
    /// Between a write reaching the server and its reply reaching the client there is then
    /// `latency` for a test to see the write applied and [`cut`](Self::cut) the reply off.
    pub fn delay_replies(&self, latency: Duration) {
        self.shared.mode.send_replace(Mode::DelayReplies(latency));
    }

    /// Back to normal forwarding, for new and (after blackhole or delay) existing connections.
    pub fn restore(&self) {
        self.shared.mode.send_replace(Mode::Forward);
    }

    /// Number of client connections currently open through the proxy.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Total bytes delivered so far, both directions.
    pub fn bytes_forwarded(&self) -> u64 {
        self.shared.bytes.load(Ordering::SeqCst)
    }

    /// Reads the proxy has made from its clients' sockets so far (counted as they are read,
    /// whatever the mode). Requests a client writes together arrive in one read, so this tells
    /// a test whether a client pipelined them or wrote them one by one.
    pub fn client_reads(&self) -> u64 {
        self.shared.client_reads.load(Ordering::SeqCst)
    }

    /// Bytes the proxy has read from its clients' sockets so far (counted as they are read,
    /// whatever the mode): a test waits on it to know that a request has left the client and is
    /// in the proxy's hands (a client's own count of requests says only that it queued one).
    pub fn client_bytes_read(&self) -> u64 {
        self.shared.client_bytes.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(listener: TcpListener, upstream: Arc<str>, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((client, _)) if *shared.mode.borrow() != Mode::Cut => {
                tokio::spawn(connection(client, upstream.clone(), shared.clone()));
            }
            Ok(_) => {} // cut: dropping the socket closes it at once
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Counts a connection while it lives.
struct Counted(Arc<Shared>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn connection(client: TcpStream, upstream: Arc<str>, shared: Arc<Shared>) {
    shared.connections.fetch_add(1, Ordering::SeqCst);
    let _counted = Counted(shared.clone());
    let mut mode = shared.mode.subscribe();
    let Ok(server) = TcpStream::connect(&*upstream).await else {
        return;
    };
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let ((client_read, client_write), (server_read, server_write)) =
        (client.into_split(), server.into_split());
    // Either direction ending (after flushing what it had) or a cut closes both sockets.
    tokio::select! {
        () = pipe(client_read, server_write, shared.clone(), true) => {}
        () = pipe(server_read, client_write, shared.clone(), false) => {}
        _ = mode.wait_for(|m| *m == Mode::Cut) => {}
    }
}

/// Copies one direction: the reader stamps chunks, the writer delivers each no earlier than
/// its stamp plus the current delay, so order is kept and throughput is not reduced. The
/// reader is a task of its own: while the writer sleeps out a delay, the next chunk is still
/// read and stamped on time (a pipelined request is not held back behind the one before it).
async fn pipe(from: OwnedReadHalf, mut to: OwnedWriteHalf, shared: Arc<Shared>, to_server: bool) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    // A cut forwards nothing more: a chunk read or held (delayed) before the connection task
    // has closed the sockets is dropped, not written. (It once was: a request the test believed
    // held by a delay reached the server through a cut.)
    let blackholed = move |shared: &Shared| match *shared.mode.borrow() {
        Mode::Blackhole | Mode::Cut => true,
        Mode::DropReplies => !to_server,
        _ => false,
    };
    let reader = {
        let shared = shared.clone();
        let mut from = from;
        tokio::spawn(async move {
            let mut buf = vec![0; 64 * 1024];
            while let Ok(n @ 1..) = from.read(&mut buf).await {
                if to_server {
                    shared.client_reads.fetch_add(1, Ordering::SeqCst);
                    shared.client_bytes.fetch_add(n as u64, Ordering::SeqCst);
                }
                if !blackholed(&shared) && tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        })
    };
    // Dropping this future (the other direction ended, or a cut) stops the reader too.
    let _reader = AbortOnDrop(reader);
    while let Some((read_at, chunk)) = rx.recv().await {
        let mode = *shared.mode.borrow();
        match mode {
            Mode::Delay(latency) => wait_until_precise(read_at, latency).await,
            Mode::DelayReplies(latency) if !to_server => wait_until_precise(read_at, latency).await,
            _ => {}
        }
        if blackholed(&shared) {
            continue;
        }
        if to.write_all(&chunk).await.is_err() {
            break;
        }
        shared.bytes.fetch_add(chunk.len() as u64, Ordering::SeqCst);
    }
    let _ = to.shutdown().await;
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Waits until `read_at + latency` to within the OS's sleep precision (tens of microseconds). tokio's
/// timer has 1 ms ticks and rounds every wait up to the next one, which turned a 0.5 ms delay
/// into ~1.5 ms per direction; so sleep coarsely with tokio, then finish with a blocking
/// sleep of at most 2 ms on one of the proxy runtime's spare workers.
async fn wait_until_precise(read_at: Instant, latency: Duration) {
    // A delay past what an `Instant` can hold holds the chunk for good (never a panic).
    let Some(deadline) = read_at.checked_add(latency) else {
        return std::future::pending().await;
    };
    if let Some(coarse) = deadline.checked_sub(Duration::from_millis(2)) {
        if coarse > Instant::now() {
            tokio::time::sleep_until(coarse).await;
        }
    }
    let left = deadline.saturating_duration_since(Instant::now());
    if !left.is_zero() {
        std::thread::sleep(left);
    }
}
