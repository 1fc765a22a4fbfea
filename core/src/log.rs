//! Diagnostics: zkrecipes logs structured events with [`tracing`] (targets `zkrecipes::…`), and
//! this module bridges them into other ecosystems' loggers.
//!
//! What is logged, and at which level: connection state changes (INFO; SUSPENDED and LOST at
//! WARN), session expiry and replacement (WARN), retries with their attempt and delay (DEBUG;
//! giving up at WARN), protected-create recovery (INFO; the node of an abandoned create that
//! could not be deleted, WARN, naming it), guaranteed-delete retries (DEBUG), lost lock holds
//! and leadership (WARN; leadership given up by a close, INFO), corrupted nodes (ERROR). The wire client's own
//! warnings (target `zookeeper_client`) are passed on at WARN and above.
//!
//! A Rust program uses its own `tracing` subscriber. The faces (Python's `logging`, Node, C)
//! call [`set_logger`]: a minimal subscriber that hands each record to one callback, on the
//! logging dispatcher ([`crate::dispatch`]'s guarantee: one record at a time, in order, never
//! on an async worker). Nothing is formatted or queued for levels that are off, and with no
//! logger set every call site is a no-op.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record as SpanRecord};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

use crate::dispatch::Dispatcher;
use crate::{Error, Result};

/// A log level, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Something failed that the caller will hear about too, or data is corrupted.
    Error = 1,
    /// Something went wrong that the library handles: a lost hold, a session expiry.
    Warn = 2,
    /// A notable change: connected, reconnected, a protected node recovered.
    Info = 3,
    /// What the library does: retries, deletes in the background.
    Debug = 4,
    /// Every step.
    Trace = 5,
}

impl Level {
    /// Every level, most severe first.
    pub const ALL: &'static [Level] = &[
        Level::Error,
        Level::Warn,
        Level::Info,
        Level::Debug,
        Level::Trace,
    ];

    /// `ERROR`, `WARN`, `INFO`, `DEBUG`, `TRACE`.
    pub const fn name(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
            Level::Trace => "TRACE",
        }
    }

    /// The level with this name (ASCII case-insensitive; `WARNING` too).
    pub fn from_name(name: &str) -> Result<Level> {
        let n = name.trim();
        if n.eq_ignore_ascii_case("warning") {
            return Ok(Level::Warn);
        }
        Level::ALL
            .iter()
            .copied()
            .find(|l| l.name().eq_ignore_ascii_case(n))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{name:?} is not a log level; expected one of ERROR, WARN, INFO, DEBUG, TRACE"
                ))
            })
    }

    fn of(l: &tracing::Level) -> Level {
        match *l {
            tracing::Level::ERROR => Level::Error,
            tracing::Level::WARN => Level::Warn,
            tracing::Level::INFO => Level::Info,
            tracing::Level::DEBUG => Level::Debug,
            tracing::Level::TRACE => Level::Trace,
        }
    }
}

/// One log record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// How severe.
    pub level: Level,
    /// Where it comes from: `zkrecipes::client`, `zkrecipes::lock`, ...
    pub target: String,
    /// The message, followed by the fields as `key=value`.
    pub message: String,
    /// The structured fields (the message not included), in order.
    pub fields: Vec<(String, String)>,
}

type Sink = Arc<dyn Fn(&Record) + Send + Sync>;

/// 0: off; otherwise the most verbose level passed on.
static MAX: AtomicU8 = AtomicU8::new(0);

struct Bridge {
    dispatcher: Dispatcher<Record>,
    sink: Mutex<Option<(crate::ListenerId, Sink)>>,
}

static BRIDGE: OnceLock<Arc<Bridge>> = OnceLock::new();

/// Sends zkrecipes' log records of `max_level` and more severe to `sink` (one record at a time,
/// in order, on the logging dispatcher), replacing an earlier sink; `None` turns logging off.
/// The first call installs zkrecipes' subscriber as the process's global `tracing` default;
/// it fails with `InvalidArgument` if the program already installed another one (a Rust
/// program: configure that one instead).
pub fn set_logger(
    max_level: Option<Level>,
    sink: impl Fn(&Record) + Send + Sync + 'static,
) -> Result<()> {
    let bridge = bridge()?;
    {
        let mut slot = bridge.sink.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((id, _)) = slot.take() {
            let _ = bridge.dispatcher.remove(id); // our own id
        }
        let sink: Sink = Arc::new(sink);
        let s = sink.clone();
        let id = bridge.dispatcher.add(move |r: &Record| s(r));
        *slot = Some((id, sink));
    }
    set_max_level(max_level);
    Ok(())
}

/// Changes the level passed on (`None`: off) without changing the sink.
pub fn set_max_level(max_level: Option<Level>) {
    MAX.store(max_level.map_or(0, |l| l as u8), Ordering::SeqCst);
    tracing::callsite::rebuild_interest_cache();
}

/// The level passed on now (`None`: off).
pub fn max_level() -> Option<Level> {
    match MAX.load(Ordering::Relaxed) {
        0 => None,
        n => Level::ALL.get(n as usize - 1).copied(),
    }
}

fn bridge() -> Result<Arc<Bridge>> {
    if let Some(b) = BRIDGE.get() {
        return Ok(b.clone());
    }
    let b = Arc::new(Bridge {
        dispatcher: Dispatcher::new(),
        sink: Mutex::new(None),
    });
    let installed =
        tracing::dispatcher::set_global_default(tracing::Dispatch::new(Forwarder(b.clone())));
    match installed {
        Ok(()) => {
            let _ = BRIDGE.set(b);
            Ok(BRIDGE.get().expect("just set").clone())
        }
        // Lost a race with another thread of ours: theirs is installed.
        Err(_) if BRIDGE.get().is_some() => Ok(BRIDGE.get().expect("checked").clone()),
        Err(_) => Err(Error::invalid(
            "another tracing subscriber is installed in this process: zkrecipes logs through `tracing` (targets zkrecipes::*), configure that subscriber instead",
        )),
    }
}

/// Whether a record of `meta` is passed on at the current level.
fn wanted(meta: &Metadata<'_>) -> bool {
    let max = MAX.load(Ordering::Relaxed);
    if max == 0 {
        return false;
    }
    let level = Level::of(meta.level()) as u8;
    let target = meta.target();
    if target.starts_with("zkrecipes") {
        level <= max
    } else if target.starts_with("zookeeper_client") {
        level <= max.min(Level::Warn as u8)
    } else {
        false
    }
}

struct Forwarder(Arc<Bridge>);

impl Subscriber for Forwarder {
    fn register_callsite(&self, _meta: &'static Metadata<'static>) -> Interest {
        // The level can change at run time: decide at each event (cheap: one atomic load).
        Interest::sometimes()
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        meta.is_event() && wanted(meta)
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        use tracing::level_filters::LevelFilter;
        Some(match max_level() {
            None => LevelFilter::OFF,
            Some(Level::Error) => LevelFilter::ERROR,
            Some(Level::Warn) => LevelFilter::WARN,
            Some(Level::Info) => LevelFilter::INFO,
            Some(Level::Debug) => LevelFilter::DEBUG,
            Some(Level::Trace) => LevelFilter::TRACE,
        })
    }

    // Spans (the wire client instruments its connects) carry nothing we pass on.
    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _span: &Id, _values: &SpanRecord<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        if !wanted(meta) {
            return;
        }
        let mut v = Fields::default();
        event.record(&mut v);
        let mut message = v.message;
        for (k, val) in &v.fields {
            let _ = write!(message, " {k}={val}");
        }
        self.0.dispatcher.emit(Record {
            level: Level::of(meta.level()),
            target: meta.target().to_string(),
            message: message.trim_start().to_string(),
            fields: v.fields,
        });
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

#[derive(Default)]
struct Fields {
    message: String,
    fields: Vec<(String, String)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            self.fields
                .push((field.name().to_string(), value.to_string()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = text;
        } else {
            self.fields.push((field.name().to_string(), text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn records_reach_the_sink_in_order_with_fields_and_levels_filter() {
        let (tx, rx) = mpsc::channel::<Record>();
        let tx = Mutex::new(tx);
        // The logger is the process's: the other tests of this binary log through it too
        // (a client's WARN on another thread came first once). Only this test's targets, and
        // the one that must not be passed on, are looked at.
        set_logger(Some(Level::Info), move |r| {
            if r.target == "zkrecipes::test" || r.target == "elsewhere" {
                let _ = tx.lock().unwrap().send(r.clone());
            }
        })
        .unwrap();
        tracing::debug!(target: "zkrecipes::test", "not passed on at INFO");
        tracing::warn!(target: "zkrecipes::test", attempt = 2, path = "/a", "retrying");
        tracing::info!(target: "elsewhere", "not ours");
        tracing::info!(target: "zkrecipes::test", "second");
        let r = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(r.level, Level::Warn);
        assert_eq!(r.target, "zkrecipes::test");
        assert_eq!(r.message, "retrying attempt=2 path=/a");
        assert_eq!(
            r.fields,
            vec![("attempt".into(), "2".into()), ("path".into(), "/a".into())]
        );
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)).unwrap().message,
            "second"
        );
        set_max_level(None);
        tracing::error!(target: "zkrecipes::test", "off");
        set_max_level(Some(Level::Error));
        tracing::error!(target: "zkrecipes::test", "on again");
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)).unwrap().message,
            "on again"
        );
        assert_eq!(Level::from_name("warning").unwrap(), Level::Warn);
        assert!(Level::from_name("loud").is_err());
    }
}
