//! Jobs that start after a fixed delay unless called off first, at no cost per job beyond a
//! queue entry: a [`DelayLine`].
//!
//! The lock recipes watch a held node only once the hold has lasted a while
//! (`lock::internals::OWN_NODE_WATCH_DELAY`), so that a short hold sends no request. A task and
//! a timer per hold cost about 7 µs of CPU per uncontended acquire + release on the bench VM
//! (a spawn, a wake-up to end it, and a timer newly registered ahead of the runtime's next
//! wake-up, which makes tokio write to its eventfd and return from one more `epoll_wait`). One
//! line per delay instead queues the jobs in order (the delay is the same for all, so they fall
//! due in the order they came) behind one task with one timer: that task wakes when its first
//! live job falls due, drops the jobs called off meanwhile, and sleeps until the next live one.
//! Under a stream of short holds it wakes about once per delay, whatever the rate.
//!
//! Fork-safe like the runtime: a line inherited across `fork()` is never touched (its task was
//! on the parent's runtime, and its lock may have been held at the fork); the child starts an
//! empty one.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::per_process::PerProcess;

/// A job that starts after the line's delay unless its caller drops the stop sender first.
type Job = Box<dyn FnOnce(watch::Receiver<()>) + Send>;

struct Entry {
    due: Instant,
    /// Closed (the sender dropped): called off.
    stop: watch::Receiver<()>,
    job: Job,
}

impl Entry {
    fn called_off(&self) -> bool {
        self.stop.has_changed().is_err()
    }
}

#[derive(Default)]
struct Line {
    queue: VecDeque<Entry>,
    /// The line's task is alive: it will look at the queue again.
    running: bool,
}

/// Jobs that each start a fixed delay after they were queued, unless called off (see the
/// module docs). Meant to be a `static`.
pub(crate) struct DelayLine {
    delay: Duration,
    /// This process's queue (a parent's, inherited across `fork()`, is never touched).
    line: PerProcess<Mutex<Line>>,
}

impl DelayLine {
    pub(crate) const fn new(delay: Duration) -> DelayLine {
        DelayLine {
            delay,
            line: PerProcess::new(),
        }
    }

    fn line(&'static self) -> std::sync::MutexGuard<'static, Line> {
        self.line
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Starts `job` on the runtime after the delay, unless `stop` is dropped before; the job
    /// gets a receiver of `stop` (closed when the caller drops it later). Must be called on
    /// the runtime (from a task or a blocking call).
    pub(crate) fn schedule(
        &'static self,
        stop: &watch::Sender<()>,
        job: impl FnOnce(watch::Receiver<()>) + Send + 'static,
    ) {
        let entry = Entry {
            due: Instant::now() + self.delay,
            stop: stop.subscribe(),
            job: Box::new(job),
        };
        let mut line = self.line();
        // Jobs called off at the front go now, so that the queue holds about one delay's worth.
        while line.queue.front().is_some_and(Entry::called_off) {
            line.queue.pop_front();
        }
        line.queue.push_back(entry);
        if !line.running {
            line.running = true;
            drop(line);
            super::spawn(self.run());
        }
    }

    /// The line's task: starts the jobs that fall due, drops those called off, and sleeps
    /// until the next live one; ends when the queue is empty.
    async fn run(&'static self) {
        // One timer for the task's life, moved to each next due time.
        let mut timer = Box::pin(tokio::time::sleep_until(Instant::now()));
        loop {
            let (due_now, next) = {
                let mut line = self.line();
                let now = Instant::now();
                let mut due_now = Vec::new();
                while let Some(front) = line.queue.front() {
                    if front.called_off() {
                        line.queue.pop_front();
                    } else if front.due <= now {
                        due_now.extend(line.queue.pop_front());
                    } else {
                        break;
                    }
                }
                let next = line.queue.front().map(|e| e.due);
                if next.is_none() {
                    line.running = false;
                }
                (due_now, next)
            };
            for entry in due_now {
                (entry.job)(entry.stop);
            }
            let Some(next) = next else {
                return;
            };
            timer.as_mut().reset(next);
            timer.as_mut().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::runtime;

    const WAIT: std::time::Duration = Duration::from_secs(30);

    /// Jobs start after the delay (not before), in order, and those called off never start:
    /// the last job is live, and the jobs fall due in order, so once it has started every job
    /// that was going to start has.
    #[test]
    fn jobs_start_after_the_delay_in_order_unless_called_off() {
        static LINE: DelayLine = DelayLine::new(Duration::from_millis(50));
        let (tx, rx) = mpsc::channel();
        let queued = Instant::now();
        let mut live = Vec::new();
        runtime::block_on(async {
            for i in 0..7 {
                let (stop, _) = watch::channel(());
                let tx = tx.clone();
                LINE.schedule(&stop, move |_| {
                    let _ = tx.send((i, Instant::now()));
                });
                if i % 2 == 0 {
                    live.push(stop);
                } // else dropped here: called off
            }
        });
        let mut started = Vec::new();
        while started.last().map(|(i, _)| *i) != Some(6) {
            started.push(
                rx.recv_timeout(WAIT)
                    .expect("the last live job never started"),
            );
        }
        let order: Vec<i32> = started.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, vec![0, 2, 4, 6], "only the live jobs, in order");
        for (i, at) in &started {
            assert!(
                at.duration_since(queued) >= Duration::from_millis(50),
                "job {i} started before its delay"
            );
        }
        drop(live);
    }

    /// A started job's receiver closes when its caller drops the stop sender.
    #[test]
    fn a_started_job_hears_the_stop() {
        static LINE: DelayLine = DelayLine::new(Duration::from_millis(10));
        let (started_tx, started_rx) = mpsc::channel();
        let (closed_tx, closed_rx) = mpsc::channel();
        let (stop, _) = watch::channel(());
        runtime::block_on(async {
            LINE.schedule(&stop, move |mut stopped| {
                let _ = started_tx.send(());
                runtime::spawn(async move {
                    let _ = closed_tx.send(stopped.changed().await.is_err());
                });
            });
        });
        started_rx
            .recv_timeout(WAIT)
            .expect("the job never started");
        drop(stop);
        let closed = closed_rx
            .recv_timeout(WAIT)
            .expect("the job never heard the stop");
        assert!(closed, "the started job's receiver did not close");
    }

    /// The line's task ends when its queue is empty, and a job queued later starts a new one.
    #[test]
    fn the_line_starts_again_after_it_emptied() {
        static LINE: DelayLine = DelayLine::new(Duration::from_millis(5));
        for round in 0..3 {
            let (tx, rx) = mpsc::channel();
            let (stop, _) = watch::channel(());
            runtime::block_on(async {
                LINE.schedule(&stop, move |_| {
                    let _ = tx.send(());
                });
            });
            rx.recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("round {round}: the job never started"));
            let idle = || {
                let line = LINE.line();
                !line.running && line.queue.is_empty()
            };
            let deadline = std::time::Instant::now() + WAIT;
            while !idle() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "round {round}: the line never emptied"
                );
                std::thread::yield_now();
            }
        }
    }
}
