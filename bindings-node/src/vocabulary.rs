//! The core's vocabulary, handed to JS once at load time: `lib/vocabulary.js` builds
//! `ErrorCode`, `CreateMode`, `ConnectionState`, `WatchedEventType`, `CancelReason`,
//! `LeaseLostReason` and `LogLevel` from it, so that no word is spelled twice.

use napi::Env;
use napi_derive::napi;
use zkrecipes::leader::CancelReason;
use zkrecipes::log::Level;
use zkrecipes::{ConnectionState, CreateMode, ErrorKind, NodeEventKind};

use crate::boundary::sync;

/// An error kind: `err.code` is `'ZKR_' + name`; `code` is the C face's `zkr_status` number.
#[napi(object)]
pub struct ErrorKindInfo {
    pub name: String,
    pub code: u32,
}

/// Why leadership was cancelled, and the kind of the error that says so (`null` for an
/// interrupt, which is no failure of ZooKeeper's).
#[napi(object)]
pub struct CancelReasonInfo {
    pub name: String,
    pub error_kind: Option<String>,
}

/// Every word the faces share.
#[napi(object)]
pub struct Vocabulary {
    pub error_kinds: Vec<ErrorKindInfo>,
    pub create_modes: Vec<String>,
    pub node_event_types: Vec<String>,
    pub connection_states: Vec<String>,
    pub cancel_reasons: Vec<CancelReasonInfo>,
    pub lease_lost_reasons: Vec<String>,
    pub log_levels: Vec<String>,
}

fn names<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> Vec<String> {
    all.iter().map(|v| name(*v).to_string()).collect()
}

/// The core's lists: error kinds, create modes, watch event types, connection states, cancel
/// reasons, the kinds of a lost lease and log levels.
#[napi]
pub fn vocabulary(env: Env) -> napi::Result<Vocabulary> {
    sync(&env, || {
        Ok(Vocabulary {
            error_kinds: ErrorKind::ALL
                .iter()
                .map(|k| ErrorKindInfo {
                    name: k.name().to_string(),
                    code: k.code(),
                })
                .collect(),
            create_modes: names(CreateMode::ALL, CreateMode::name),
            node_event_types: names(NodeEventKind::ALL, NodeEventKind::name),
            connection_states: names(ConnectionState::ALL, ConnectionState::name),
            cancel_reasons: CancelReason::ALL
                .iter()
                .map(|r| CancelReasonInfo {
                    name: r.name().to_string(),
                    error_kind: r.error_kind().map(|k| k.name().to_string()),
                })
                .collect(),
            lease_lost_reasons: zkrecipes::lock::LeaseLost::KINDS
                .iter()
                .map(|r| r.to_string())
                .collect(),
            log_levels: names(Level::ALL, Level::name),
        })
    })
}
