//! Events from the core to JS: one weak (unref'd) threadsafe function per native object,
//! calling `emit(name, payload)` on the JS thread. Weak, so a listener never keeps the event
//! loop alive (after `close()` nothing does); non-blocking, so a slow JS thread never stalls the
//! runtime; events from a worker thread whose environment is gone are dropped.

use napi::bindgen_prelude::{BigInt, FnArgs, Function, ToNapiValue};
use napi::sys;
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Status;

/// What an event carries to JS.
#[derive(Clone, Debug)]
pub enum Payload {
    /// `undefined`.
    None,
    /// A string (a connection state's name, a reason).
    Text(String),
    /// A number that fits a JS number (a 32-bit count, a version).
    Number(f64),
    /// An owner id (a BigInt; `index.js` maps it back to its `Owner`).
    Owner(u64),
    /// A boolean (an observed participant's `isLeader`).
    Bool(bool),
}

impl ToNapiValue for Payload {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val {
            Payload::None => unsafe { <()>::to_napi_value(env, ()) },
            Payload::Text(s) => unsafe { String::to_napi_value(env, s) },
            Payload::Number(n) => unsafe { f64::to_napi_value(env, n) },
            Payload::Owner(id) => unsafe { BigInt::to_napi_value(env, BigInt::from(id)) },
            Payload::Bool(b) => unsafe { bool::to_napi_value(env, b) },
        }
    }
}

/// One event: its name (`'state'`, `'lost'`, `'isLeader'`, ...) and payload.
#[derive(Clone, Debug)]
pub(crate) struct Event {
    pub(crate) name: &'static str,
    pub(crate) payload: Payload,
    /// A second argument (SharedCount's version), if any.
    pub(crate) extra: Payload,
}

impl Event {
    pub(crate) fn new(name: &'static str, payload: Payload) -> Event {
        Event {
            name,
            payload,
            extra: Payload::None,
        }
    }
}

/// The JS callback type: `(name, payload, extra) => void`.
pub(crate) type EmitFn<'a> = Function<'a, FnArgs<(String, Payload, Payload)>, UnknownReturnValue>;

type Tsfn = ThreadsafeFunction<
    Event,
    UnknownReturnValue,
    FnArgs<(String, Payload, Payload)>,
    Status,
    false,
    true,
>;

/// A cloneable, thread-safe handle that emits events on the JS thread.
#[derive(Clone)]
pub(crate) struct Emitter {
    tsfn: std::sync::Arc<Tsfn>,
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
            tsfn: std::sync::Arc::new(tsfn),
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
