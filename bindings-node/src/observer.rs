//! `NativeLeaderObserver`: who leads a LeaderLatch / LeaderSelector group, without joining it
//! (the core's `LeaderObserver`, etcd's Observe). `lib/leader.js`'s `LeaderObserver` wraps it.

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;
use tokio::sync::watch;
use zkrecipes::leader::{LeaderObserver, Participant};
use zkrecipes::{Client, Error};

use crate::args;
use crate::boundary::{promise, sync};
use crate::client::NativeClient;
use crate::error::invalid;
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

struct Started {
    observer: LeaderObserver,
    /// This object's cursor: `waitChanged` resolves to each change once, in order.
    changes: Arc<Mutex<watch::Receiver<Participant>>>,
}

enum Slot {
    NotStarted,
    Starting,
    Started(Started),
    Closed,
}

/// The native observer; `emit` receives `'change'` with `{ id, isLeader }`.
#[napi]
pub struct NativeLeaderObserver {
    client: Client,
    path: String,
    emitter: Emitter,
    slot: Arc<Mutex<Slot>>,
}

impl NativeLeaderObserver {
    fn closed(&self, why: &str) -> Error {
        Error::Closed(format!("the leader observer of {} {why}", self.path).into())
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[napi]
impl NativeLeaderObserver {
    /// An observer of the group at `path` (not started).
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        emit: EmitFn<'_>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            zkrecipes::path::validate_path(&path)?;
            Ok(NativeLeaderObserver {
                client: client.inner.clone(),
                path,
                emitter: Emitter::new(emit)?,
                slot: Arc::new(Mutex::new(Slot::NotStarted)),
            })
        })
    }

    /// Starts observing; resolves once the current leader is known.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise(env, || {
            {
                let mut slot = self.slot();
                match &*slot {
                    Slot::NotStarted => *slot = Slot::Starting,
                    Slot::Closed => return Err(self.closed("is closed").into()),
                    _ => {
                        return Err(invalid(format!(
                            "the leader observer of {} is already started",
                            self.path
                        ))
                        .into())
                    }
                }
            }
            let client = self.client.clone();
            let path = self.path.clone();
            let slot = self.slot.clone();
            let emitter = self.emitter.clone();
            Ok(async move {
                let observer = match LeaderObserver::start(&client, &path).await {
                    Ok(o) => o,
                    Err(e) => {
                        // Startable again, unless close() came meanwhile: closed stays closed.
                        let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
                        if !matches!(&*s, Slot::Closed) {
                            *s = Slot::NotStarted;
                        }
                        return Err(e);
                    }
                };
                observer.add_listener(move |p| {
                    emitter.emit(Event::new("change", Out::participant(&p)));
                });
                let mut changes = observer.subscribe();
                changes.borrow_and_update();
                let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
                match &*s {
                    // close() came while starting: stop at once.
                    Slot::Closed => {
                        let mut observer = observer;
                        observer.close();
                    }
                    _ => {
                        *s = Slot::Started(Started {
                            observer,
                            changes: Arc::new(Mutex::new(changes)),
                        })
                    }
                }
                Ok(Out::Undefined)
            })
        })
    }

    /// The group path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.path.clone()))
    }

    /// The leader as last seen, `{ id, isLeader }` (`{ id: '', isLeader: false }` when nobody
    /// leads); `null` before `start()` resolved and after `close()`.
    #[napi(getter)]
    pub fn leader(&self, env: Env) -> napi::Result<Out> {
        sync(&env, || {
            Ok(match &*self.slot() {
                Slot::Started(s) => Out::participant(&s.observer.leader()),
                _ => Out::Null,
            })
        })
    }

    /// Resolves to the next new leader since the last call (or start), or `null` once
    /// `timeout_ms` passed (`undefined`: no limit); rejects with `ZKR_CLOSED` once closed.
    #[napi]
    pub fn wait_changed<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let timeout = args::timeout("timeoutMs", timeout_ms)?;
            let cursor = match &*self.slot() {
                Slot::Started(s) => s.changes.clone(),
                Slot::Closed => return Err(self.closed("is closed").into()),
                _ => return Err(self.closed("is not started: await start() first").into()),
            };
            Ok(async move {
                let mut rx = cursor.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let changed = match timeout {
                    Some(t) => match tokio::time::timeout(t, rx.changed()).await {
                        Ok(r) => r,
                        Err(_) => return Ok(Out::Null),
                    },
                    None => rx.changed().await,
                };
                if changed.is_err() {
                    return Err(Error::Closed(
                        "the leader observer (or its client) is closed".into(),
                    ));
                }
                let p = rx.borrow_and_update().clone();
                *cursor.lock().unwrap_or_else(|e| e.into_inner()) = rx;
                Ok(Out::participant(&p))
            })
        })
    }

    /// Stops observing (its watch is removed from the server); pending `waitChanged` calls
    /// reject with `ZKR_CLOSED`. Idempotent.
    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            let old = std::mem::replace(&mut *self.slot(), Slot::Closed);
            if let Slot::Started(mut s) = old {
                s.observer.close();
            }
            Ok(())
        })
    }
}
