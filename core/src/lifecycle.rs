//! Start once, close once: Curator's recipe `State` (LATENT → STARTED → CLOSED), checked in one
//! place with one message, for every recipe that has a `start()` and a `close()` (latch,
//! selector, shared count, persistent node, persistent watcher, caches).
//!
//! Starting twice is `InvalidArgument` ("cannot be started more than once", Curator's words);
//! starting after close, or a call that needs a started recipe after close, is `Closed`; a call
//! that needs a started recipe before `start()` is `InvalidArgument`. A start that waits for the
//! server and fails (or is cancelled) leaves the recipe unstarted, so it may be started again.
//! The partitioner's and the queue sharder's starts run as their own task (they join a party or
//! an election half way): a caller that stops waiting does not cancel them, and a second start
//! while the first still runs is `InvalidArgument`.

use tokio::sync::watch;

use crate::{Client, Error, Result};

/// Where a recipe is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Made, not started.
    Latent,
    /// A start that waits for the server is under way.
    Starting,
    /// Started.
    Started,
    /// Closed, for good.
    Closed,
}

/// One recipe's phase, observable (recipes that wait on their phase subscribe to it).
#[derive(Debug)]
pub(crate) struct Lifecycle {
    phase: watch::Sender<Phase>,
    /// The recipe's name and path, for messages ("LeaderLatch /services/leader").
    recipe: &'static str,
    path: String,
}

impl Lifecycle {
    /// A recipe named `recipe` on `path`, not started.
    pub(crate) fn new(recipe: &'static str, path: &str) -> Lifecycle {
        Lifecycle {
            phase: watch::channel(Phase::Latent).0,
            recipe,
            path: path.to_string(),
        }
    }

    /// The phase now.
    pub(crate) fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// Whether it is started and not closed.
    pub(crate) fn is_started(&self) -> bool {
        self.phase() == Phase::Started
    }

    /// The phase's changes, for a wait that must end on close.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// LATENT → STARTED, for a start that cannot fail once it begins (a background task does
    /// the rest). Refuses a closed client, a second start and a start after close.
    pub(crate) fn start(&self, client: &Client) -> Result<()> {
        self.begin(client, Phase::Started)
    }

    /// LATENT → STARTING, for a start that waits for the server: [`Starting::finish`] makes it
    /// STARTED; dropping the guard unfinished (the start failed or was cancelled) makes it
    /// LATENT again.
    pub(crate) fn begin_start(&self, client: &Client) -> Result<Starting<'_>> {
        self.begin(client, Phase::Starting)?;
        Ok(Starting {
            life: self,
            finished: false,
        })
    }

    fn begin(&self, client: &Client, to: Phase) -> Result<()> {
        if client.is_closed() {
            return Err(Error::Closed(
                format!("start {}: the client is closed", self.name()).into(),
            ));
        }
        let mut previous = Phase::Latent;
        self.phase.send_if_modified(|p| {
            previous = *p;
            let latent = *p == Phase::Latent;
            if latent {
                *p = to;
            }
            latent
        });
        match previous {
            Phase::Latent => Ok(()),
            Phase::Closed => Err(self.closed_error("start")),
            Phase::Starting | Phase::Started => Err(Error::invalid(format!(
                "{}: cannot be started more than once",
                self.name()
            ))),
        }
    }

    /// Marks it closed; the phase it had (`Closed` when it was closed already, so a second
    /// close can do nothing).
    pub(crate) fn close(&self) -> Phase {
        let mut previous = Phase::Closed;
        self.phase.send_if_modified(|p| {
            previous = std::mem::replace(p, Phase::Closed);
            previous != Phase::Closed
        });
        previous
    }

    /// `Ok` while started; otherwise the error of `op` on a recipe not started (yet) or closed.
    pub(crate) fn check_started(&self, op: &str) -> Result<()> {
        match self.phase() {
            Phase::Started => Ok(()),
            Phase::Closed => Err(self.closed_error(op)),
            Phase::Latent | Phase::Starting => Err(self.not_started_error(op)),
        }
    }

    /// `Closed`, naming the operation and the recipe.
    pub(crate) fn closed_error(&self, op: &str) -> Error {
        Error::Closed(format!("{op} on {}: it is closed", self.name()).into())
    }

    /// `InvalidArgument`: `op` needs a started recipe.
    pub(crate) fn not_started_error(&self, op: &str) -> Error {
        Error::invalid(format!(
            "{op} on {}: it is not started; call start() first",
            self.name()
        ))
    }

    fn name(&self) -> String {
        format!("{} {}", self.recipe, self.path)
    }
}

/// A start under way (see [`Lifecycle::begin_start`]).
#[must_use]
pub(crate) struct Starting<'a> {
    life: &'a Lifecycle,
    finished: bool,
}

impl Starting<'_> {
    /// The start succeeded: STARTED, with `install` run in the same step, so that a close either
    /// comes first (then `install` does not run, and this is `Closed`) or sees what `install`
    /// set up.
    pub(crate) fn finish<T>(mut self, install: impl FnOnce() -> T) -> Result<T> {
        self.finished = true;
        let mut out = None;
        self.life.phase.send_if_modified(|p| {
            let starting = *p == Phase::Starting;
            if starting {
                *p = Phase::Started;
                out = Some(install());
            }
            starting
        });
        out.ok_or_else(|| self.life.closed_error("start"))
    }
}

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.life.phase.send_if_modified(|p| {
                let starting = *p == Phase::Starting;
                if starting {
                    *p = Phase::Latent;
                }
                starting
            });
        }
    }
}
