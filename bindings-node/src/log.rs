//! The core's log records (`zkrecipes::log`) delivered to a JS function: `setLogger(sink,
//! level)` in `lib/log.js`. One sink per process (the core's rule); records come one at a time,
//! in order, from the logging dispatcher, through a weak threadsafe function to the JS thread
//! that set the sink.

use napi::Env;
use napi_derive::napi;
use zkrecipes::log::{self, Level, Record};

use crate::boundary::sync;
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

fn record(r: &Record) -> Event {
    let fields = r
        .fields
        .iter()
        .map(|(k, v)| Out::Array(vec![Out::Str(k.clone()), Out::Str(v.clone())]))
        .collect();
    Event::with(
        "log",
        Out::Object(vec![
            ("level", Out::Str(r.level.name().to_string())),
            ("target", Out::Str(r.target.clone())),
            ("message", Out::Str(r.message.clone())),
        ]),
        Out::Array(fields),
    )
}

/// Sends the core's records of `level` (`ERROR` ... `TRACE`) and more severe to `emit('log',
/// { level, target, message }, [[key, value], ...])`, replacing an earlier sink; without
/// `emit`, logging is turned off.
#[napi]
pub fn set_logger(env: Env, emit: Option<EmitFn<'_>>, level: Option<String>) -> napi::Result<()> {
    sync(&env, || {
        match emit {
            None => log::set_max_level(None),
            Some(emit) => {
                let level = Level::from_name(level.as_deref().unwrap_or("INFO"))?;
                let emitter = Emitter::new(emit)?;
                log::set_logger(Some(level), move |r: &Record| emitter.emit(record(r)))?;
            }
        }
        Ok(())
    })
}
