//! Events from the core to JS. Every listener of the core runs on its dispatcher
//! (`zkrecipes::dispatch`: one at a time, in event order, off the async workers); ours only
//! queue the event on a threadsafe function, which calls `emit(name, payload, extra)` on the
//! JS thread. One threadsafe function per native object, so its events keep their order on the
//! way to JS too (a client's 'state' events and its one-shot watches share one).
//!
//! Weak (unref'd), so a listener never keeps the event loop alive (after `close()` nothing
//! does); non-blocking, so a slow JS thread never stalls the dispatcher; events for a worker
//! thread whose environment is gone are dropped.

use std::sync::Arc;

use napi::bindgen_prelude::{FnArgs, Function};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Status;

use crate::value::Out;

/// One event: its name (`'state'`, `'lost'`, `'isLeader'`, `'watch'`, ...) and payload.
#[derive(Clone, Debug)]
pub(crate) struct Event {
    pub(crate) name: &'static str,
    pub(crate) payload: Out,
    /// A second argument (SharedCount's version, a watch's event), if any.
    pub(crate) extra: Out,
}

impl Event {
    pub(crate) fn new(name: &'static str, payload: Out) -> Event {
        Event::with(name, payload, Out::Undefined)
    }

    pub(crate) fn with(name: &'static str, payload: Out, extra: Out) -> Event {
        Event {
            name,
            payload,
            extra,
        }
    }
}

/// The JS callback type: `(name, payload, extra) => void`.
pub(crate) type EmitFn<'a> = Function<'a, FnArgs<(String, Out, Out)>, UnknownReturnValue>;

type Tsfn =
    ThreadsafeFunction<Event, UnknownReturnValue, FnArgs<(String, Out, Out)>, Status, false, true>;

/// A cloneable, thread-safe handle that emits events on the JS thread.
#[derive(Clone)]
pub(crate) struct Emitter {
    tsfn: Arc<Tsfn>,
}

impl Emitter {
    /// Wraps a JS function `(name, payload, extra) => void` (on the JS thread).
    pub(crate) fn new(emit: EmitFn<'_>) -> napi::Result<Emitter> {
        let tsfn = emit
            .build_threadsafe_function::<Event>()
            .weak::<true>()
            .callee_handled::<false>()
            .build_callback(|ctx| {
                Ok(FnArgs::from((
                    ctx.value.name.to_string(),
                    ctx.value.payload,
                    ctx.value.extra,
                )))
            })?;
        Ok(Emitter {
            tsfn: Arc::new(tsfn),
        })
    }

    /// Queues the event for the JS thread (from any thread). Dropped if the JS environment is
    /// shutting down.
    pub(crate) fn emit(&self, event: Event) {
        let _ = self
            .tsfn
            .call(event, ThreadsafeFunctionCallMode::NonBlocking);
    }
}
