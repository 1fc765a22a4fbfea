//! zkrecipes patch: tokio-backed replacements for `async_net::TcpStream` and `async_io::Timer`.
//!
//! Upstream does its socket I/O and timers on async-io's global reactor, driven by a process-wide
//! "async-io" thread that does not survive `fork()`. These shims keep upstream's call sites
//! (futures-io traits, `Timer::{after, at, never, interval}`) but run everything on the current
//! tokio runtime instead. They also set TCP_NODELAY on every connection (see PATCHES.md).

use std::future::Future;
use std::io::{IoSlice, Result};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use futures::io::{AsyncRead, AsyncWrite};

/// zkrecipes patch 24: runs `f`, which may block (a Kerberos library asking its KDC for a
/// ticket), on tokio's blocking pool instead of the thread driving the runtime, so that every
/// other session of the process goes on meanwhile. `Err` with the panic's text if `f` panicked.
pub async fn unblock<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> std::result::Result<T, String> {
    tokio::task::spawn_blocking(f).await.map_err(|e| match e.try_into_panic() {
        Ok(panic) => panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_string()),
        Err(e) => e.to_string(),
    })
}

/// A tokio TCP stream exposing the futures-io traits upstream code expects.
#[derive(Debug)]
pub struct TcpStream(tokio::net::TcpStream, Option<(Arc<CountsInput>, Waker)>);

impl TcpStream {
    pub async fn connect(addr: (&str, u16)) -> Result<Self> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        // Do not let Nagle hold back pipelined requests until earlier replies arrive.
        let _ = stream.set_nodelay(true);
        Ok(Self(stream, None))
    }

    /// zkrecipes patch 22: the address connected to.
    pub fn peer_addr(&self) -> Result<std::net::SocketAddr> {
        self.0.peer_addr()
    }

    /// zkrecipes patch 22: a connection to one address (the one an earlier connection reached).
    pub async fn connect_to(addr: std::net::SocketAddr) -> Result<Self> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        let _ = stream.set_nodelay(true);
        Ok(Self(stream, None))
    }
}

/// zkrecipes patch 17: how many times input on a connection has woken the task reading it, in
/// this process. A caller driving the runtime compares it before and after the runtime's last
/// poll of its I/O driver: a change means a reading task was woken and may still be queued.
pub fn input_wakes() -> u64 {
    INPUT_WAKES.load(Ordering::SeqCst)
}

static INPUT_WAKES: AtomicU64 = AtomicU64::new(0);

/// The waker a read registers with tokio: counts the wake, then wakes the reading task.
#[derive(Debug)]
pub struct CountsInput(Waker);

impl Wake for CountsInput {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        INPUT_WAKES.fetch_add(1, Ordering::SeqCst);
        self.0.wake_by_ref();
    }
}

impl AsyncRead for TcpStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<Result<usize>> {
        let this = self.get_mut();
        // The counting waker is made again only when the reading task's waker changes.
        let counting = match &this.1 {
            Some((counts, waker)) if counts.0.will_wake(cx.waker()) => waker,
            _ => {
                let counts = Arc::new(CountsInput(cx.waker().clone()));
                &this.1.insert((counts.clone(), Waker::from(counts))).1
            },
        };
        let mut cx = Context::from_waker(counting);
        let mut buf = tokio::io::ReadBuf::new(buf);
        ready!(tokio::io::AsyncRead::poll_read(Pin::new(&mut this.0), &mut cx, &mut buf))?;
        Poll::Ready(Ok(buf.filled().len()))
    }
}

impl AsyncWrite for TcpStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<Result<usize>> {
        tokio::io::AsyncWrite::poll_write(Pin::new(&mut self.get_mut().0), cx, buf)
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<Result<usize>> {
        tokio::io::AsyncWrite::poll_write_vectored(Pin::new(&mut self.get_mut().0), cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        tokio::io::AsyncWrite::poll_flush(Pin::new(&mut self.get_mut().0), cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        tokio::io::AsyncWrite::poll_shutdown(Pin::new(&mut self.get_mut().0), cx)
    }
}

/// A tokio-backed stand-in for `async_io::Timer`: a future that resolves to the instant it fired
/// at; a periodic timer keeps firing each time it is polled to completion; `never` never fires.
#[derive(Debug)]
pub struct Timer {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    period: Option<Duration>,
}

impl Timer {
    pub fn never() -> Self {
        Self { sleep: None, period: None }
    }

    pub fn after(duration: Duration) -> Self {
        Self { sleep: Some(Box::pin(tokio::time::sleep(duration))), period: None }
    }

    pub fn at(deadline: Instant) -> Self {
        Self { sleep: Some(Box::pin(tokio::time::sleep_until(deadline.into()))), period: None }
    }

    pub fn interval(period: Duration) -> Self {
        Self { sleep: Some(Box::pin(tokio::time::sleep(period))), period: Some(period) }
    }
}

impl Future for Timer {
    type Output = Instant;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Instant> {
        let this = self.get_mut();
        let Some(sleep) = this.sleep.as_mut() else {
            return Poll::Pending;
        };
        ready!(sleep.as_mut().poll(cx));
        let fired = sleep.deadline().into_std();
        match this.period {
            Some(period) => sleep.as_mut().reset(tokio::time::Instant::now() + period),
            None => this.sleep = None,
        }
        Poll::Ready(fired)
    }
}
