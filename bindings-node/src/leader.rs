//! Leader election: `NativeLeaderLatch` and `NativeLeaderSelector` (with its per-term
//! `NativeLeadershipContext`).

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{BigInt, FnArgs, Function, Object};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Env, Status};
use napi_derive::napi;
use tokio::sync::oneshot;
use zkrecipes::leader::{
    CloseMode, LatchState, LeaderLatch, LeaderSelector, LeadershipContext, LeadershipEvent,
    SelectorState,
};

use crate::args;
use crate::boundary::{promise, promise_on, promise_timed, sync};
use crate::client::NativeClient;
use crate::error::{invalid, CoreResult};
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

fn close_mode(m: Option<String>) -> CoreResult<Option<CloseMode>> {
    match m.as_deref() {
        None => Ok(None),
        Some("SILENT") => Ok(Some(CloseMode::Silent)),
        Some("NOTIFY_LEADER") => Ok(Some(CloseMode::NotifyLeader)),
        Some(other) => Err(invalid(format!(
            "closeMode must be 'SILENT' or 'NOTIFY_LEADER', got {other:?}"
        ))),
    }
}

/// The methods a latch and a selector share (`$state` is its life-cycle enum), in their own
/// `#[napi]` block.
macro_rules! participant_methods {
    ($native:ident, $state:ident) => {
        #[napi]
        impl $native {
            /// Whether this participant leads now.
            #[napi]
            pub fn has_leadership(&self, env: Env) -> napi::Result<bool> {
                sync(&env, || Ok(self.inner.has_leadership()))
            }

            /// The leadership epoch while leading (a latch: our node's czxid; a selector: the
            /// term's fencing token), else `null`.
            #[napi(getter)]
            pub fn leadership_epoch(&self, env: Env) -> napi::Result<Option<BigInt>> {
                sync(&env, || Ok(self.inner.leadership_epoch().map(BigInt::from)))
            }

            /// `LATENT`, `STARTED` or `CLOSED`.
            #[napi(getter)]
            pub fn state(&self, env: Env) -> napi::Result<String> {
                sync(&env, || {
                    Ok(match self.inner.state() {
                        $state::Latent => "LATENT",
                        $state::Started => "STARTED",
                        $state::Closed => "CLOSED",
                    }
                    .to_string())
                })
            }

            /// The participant id.
            #[napi(getter)]
            pub fn id(&self, env: Env) -> napi::Result<String> {
                sync(&env, || Ok(self.inner.id().to_string()))
            }

            /// The election's path.
            #[napi(getter)]
            pub fn path(&self, env: Env) -> napi::Result<String> {
                sync(&env, || Ok(self.inner.path().to_string()))
            }

            /// Resolves to the current leader `{ id, isLeader }`.
            #[napi]
            pub fn get_leader<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
                promise_on(env, &self.inner, |p| async move {
                    Ok(Out::participant(&p.get_leader().await?))
                })
            }

            /// Resolves to every participant in queue order.
            #[napi]
            pub fn get_participants<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
                promise_on(env, &self.inner, |p| async move {
                    Ok(Out::participants(&p.get_participants().await?))
                })
            }
        }
    };
}

/// Curator's LeaderLatch. `lib/leader.js`'s `LeaderLatch` wraps it.
#[napi]
pub struct NativeLeaderLatch {
    inner: Arc<LeaderLatch>,
}

#[napi]
impl NativeLeaderLatch {
    /// A latch on `path` for participant `id`; `emit` receives `'isLeader'` / `'notLeader'`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        id: String,
        emit: EmitFn<'_>,
        close_mode_name: Option<String>,
        lost_policy: Option<String>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let latch = LeaderLatch::new(&client.inner, &path, &id)?;
            if let Some(mode) = close_mode(close_mode_name)? {
                latch.set_close_mode(mode);
            }
            latch.set_lost_policy(args::lost_policy(lost_policy)?)?;
            let emitter = Emitter::new(emit)?;
            latch.add_event_listener(move |e| {
                emitter.emit(Event::new(
                    match e {
                        LeadershipEvent::IsLeader => "isLeader",
                        LeadershipEvent::NotLeader => "notLeader",
                    },
                    Out::Undefined,
                ))
            });
            Ok(NativeLeaderLatch {
                inner: Arc::new(latch),
            })
        })
    }

    /// Joins the election.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |latch| async move { latch.start().await })
    }

    /// Resolves to whether this participant leads within `timeout_ms` (`undefined`: no limit).
    #[napi(js_name = "await")]
    pub fn await_leadership<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |latch, t| async move {
            latch.await_leadership(t).await
        })
    }

    /// Our node's path, once created.
    #[napi(getter)]
    pub fn our_path(&self, env: Env) -> napi::Result<Option<String>> {
        sync(&env, || Ok(self.inner.our_path()))
    }

    /// Leaves the election (with `mode`, or the latch's close mode).
    #[napi]
    pub fn close<'env>(&self, env: &'env Env, mode: Option<String>) -> napi::Result<Object<'env>> {
        promise(env, || {
            let mode = close_mode(mode)?;
            let latch = self.inner.clone();
            Ok(async move {
                match mode {
                    Some(mode) => latch.close_with(mode).await,
                    None => latch.close().await,
                }
            })
        })
    }
}

participant_methods!(NativeLeaderLatch, LatchState);

/// One leadership term, handed to JS's `takeLeadership`: its tokens, its cancellation, and
/// `finish()` to end it (the core releases the leader mutex once it is called, or once this
/// object is collected).
#[napi]
pub struct NativeLeadershipContext {
    ctx: LeadershipContext,
    done: Mutex<Option<oneshot::Sender<()>>>,
}

#[napi]
impl NativeLeadershipContext {
    /// Which term of the selector this is (1 for the first).
    #[napi(getter)]
    pub fn term(&self, env: Env) -> napi::Result<f64> {
        sync(&env, || Ok(self.ctx.term() as f64))
    }

    /// The term's fencing token (the lock node's czxid).
    #[napi(getter)]
    pub fn fencing_token(&self, env: Env) -> napi::Result<Option<BigInt>> {
        sync(&env, || Ok(self.ctx.fencing_token().map(BigInt::from)))
    }

    /// The participant id.
    #[napi(getter)]
    pub fn id(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.ctx.id().to_string()))
    }

    /// The leader path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.ctx.path().to_string()))
    }

    /// Why leadership was cancelled (the core's reason name), or `null`.
    #[napi(getter)]
    pub fn cancel_reason(&self, env: Env) -> napi::Result<Option<String>> {
        sync(&env, || {
            Ok(self.ctx.cancel_reason().map(|r| r.name().to_string()))
        })
    }

    /// Calls `emit('cancel', REASON)` once leadership is cancelled (at once if it is), from
    /// the selector's dispatcher.
    #[napi]
    pub fn on_cancel(&self, env: Env, emit: EmitFn<'_>) -> napi::Result<()> {
        sync(&env, || {
            let emitter = Emitter::new(emit)?;
            self.ctx.on_cancel(move |r| {
                emitter.emit(Event::new("cancel", Out::Str(r.name().to_string())))
            });
            Ok(())
        })
    }

    /// Ends this term: `takeLeadership` returned.
    #[napi]
    pub fn finish(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            if let Some(done) = self.done.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = done.send(());
            }
            Ok(())
        })
    }
}

type Term = (LeadershipContext, oneshot::Sender<()>);
type TakeFn<'a> = Function<'a, FnArgs<(NativeLeadershipContext,)>, UnknownReturnValue>;
type TakeTsfn = ThreadsafeFunction<
    Term,
    UnknownReturnValue,
    FnArgs<(NativeLeadershipContext,)>,
    Status,
    false,
    true,
>;

/// Curator's LeaderSelector: leadership lasts while JS's `takeLeadership(ctx)` runs.
#[napi]
pub struct NativeLeaderSelector {
    inner: Arc<LeaderSelector>,
}

#[napi]
impl NativeLeaderSelector {
    /// A selector on `path` for `id`; `take(ctx)` is called on the JS thread for each term and
    /// must call `ctx.finish()` when the term's work is over.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        id: String,
        take: TakeFn<'_>,
        lost_policy: Option<String>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            // Weak: a selector waiting for leadership does not by itself keep the process
            // alive (its open client does).
            let tsfn: TakeTsfn = take
                .build_threadsafe_function::<Term>()
                .weak::<true>()
                .callee_handled::<false>()
                .build_callback(|ctx| {
                    let (lctx, done) = ctx.value;
                    Ok(FnArgs::from((NativeLeadershipContext {
                        ctx: lctx,
                        done: Mutex::new(Some(done)),
                    },)))
                })?;
            let tsfn = Arc::new(tsfn);
            let take_leadership = move |ctx: LeadershipContext| {
                let (done, finished) = oneshot::channel();
                let status = tsfn.call((ctx, done), ThreadsafeFunctionCallMode::NonBlocking);
                async move {
                    if status == Status::Ok {
                        // Err: the context was dropped (collected, or the JS environment went away).
                        let _ = finished.await;
                    }
                }
            };
            let s = LeaderSelector::new(&client.inner, &path, &id, take_leadership)?;
            s.set_lost_policy(args::lost_policy(lost_policy)?)?;
            Ok(NativeLeaderSelector { inner: Arc::new(s) })
        })
    }

    /// Requeue by itself after every term (Curator's autoRequeue()).
    #[napi]
    pub fn auto_requeue(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            self.inner.auto_requeue();
            Ok(())
        })
    }

    /// Joins the queue (returns at once).
    #[napi]
    pub fn start(&self, env: Env) -> napi::Result<()> {
        sync(&env, || Ok(self.inner.start()?))
    }

    /// Queues again; whether it was queued now.
    #[napi]
    pub fn requeue(&self, env: Env) -> napi::Result<bool> {
        sync(&env, || Ok(self.inner.requeue()?))
    }

    /// Cancels the current term (`ctx.signal` aborts with INTERRUPTED).
    #[napi]
    pub fn interrupt_leadership(&self, env: Env) -> napi::Result<()> {
        sync(&env, || {
            self.inner.interrupt_leadership();
            Ok(())
        })
    }

    /// How many terms this selector has started.
    #[napi(getter)]
    pub fn leadership_count(&self, env: Env) -> napi::Result<f64> {
        sync(&env, || Ok(self.inner.leadership_count() as f64))
    }

    /// Leaves for good; resolves once the current term (if any) has finished.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |s| async move { s.close().await })
    }
}

participant_methods!(NativeLeaderSelector, SelectorState);
