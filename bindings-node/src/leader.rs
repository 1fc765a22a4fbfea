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
    CancelReason, CloseMode, LatchState, LeaderLatch, LeaderSelector, LeadershipContext,
    LeadershipEvent, LostPolicy, Participant, SelectorState,
};

use crate::args;
use crate::client::NativeClient;
use crate::error::{from_core, invalid, CoreResult};
use crate::events::{EmitFn, Emitter, Event, Payload};
use crate::promise;
use crate::value::Out;

fn lost_policy(p: Option<String>) -> CoreResult<LostPolicy> {
    match p.as_deref() {
        None | Some("standard") => Ok(LostPolicy::Standard),
        Some("session") => Ok(LostPolicy::Session),
        Some(other) => Err(invalid(format!(
            "lostPolicy must be 'standard' or 'session', got {other:?}"
        ))),
    }
}

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

fn participant(p: &Participant) -> Out {
    Out::Object(vec![
        ("id", Out::Str(p.id.clone())),
        ("isLeader", Out::Bool(p.is_leader)),
    ])
}

fn participants(v: &[Participant]) -> Out {
    Out::Array(v.iter().map(participant).collect())
}

fn leadership_event(e: LeadershipEvent) -> Event {
    match e {
        LeadershipEvent::IsLeader => Event::new("isLeader", Payload::None),
        LeadershipEvent::NotLeader => Event::new("notLeader", Payload::None),
    }
}

/// Curator's LeaderLatch. `index.js`'s `LeaderLatch` wraps it.
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
        lost_policy_name: Option<String>,
    ) -> napi::Result<Self> {
        let build = || -> CoreResult<LeaderLatch> {
            let latch = LeaderLatch::new(&client.inner, &path, &id)?;
            if let Some(mode) = close_mode(close_mode_name)? {
                latch.set_close_mode(mode);
            }
            latch.set_lost_policy(lost_policy(lost_policy_name)?)?;
            Ok(latch)
        };
        let latch = build().map_err(|e| from_core(&env, &e))?;
        let emitter = Emitter::new(emit)?;
        latch.add_event_listener(move |e| emitter.emit(leadership_event(e)));
        Ok(NativeLeaderLatch {
            inner: Arc::new(latch),
        })
    }

    /// Joins the election.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let latch = self.inner.clone();
        promise::spawn(env, async move {
            latch.start().await?;
            Ok(Out::Undefined)
        })
    }

    /// Resolves to whether this participant leads within `timeout_ms` (`undefined`: no limit).
    #[napi(js_name = "await")]
    pub fn await_leadership<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        let timeout = match args::timeout("timeoutMs", timeout_ms) {
            Ok(t) => t,
            Err(e) => return promise::rejected(env, e),
        };
        let latch = self.inner.clone();
        promise::spawn(env, async move { latch.await_leadership(timeout).await })
    }

    /// Whether this participant leads now.
    #[napi]
    pub fn has_leadership(&self) -> bool {
        self.inner.has_leadership()
    }

    /// The leadership epoch (our node's czxid) while leading, else `null`.
    #[napi(getter)]
    pub fn leadership_epoch(&self) -> Option<BigInt> {
        self.inner.leadership_epoch().map(BigInt::from)
    }

    /// Our node's path, once created.
    #[napi(getter)]
    pub fn our_path(&self) -> Option<String> {
        self.inner.our_path()
    }

    /// `LATENT`, `STARTED` or `CLOSED`.
    #[napi(getter)]
    pub fn state(&self) -> String {
        match self.inner.state() {
            LatchState::Latent => "LATENT",
            LatchState::Started => "STARTED",
            LatchState::Closed => "CLOSED",
        }
        .to_string()
    }

    /// The participant id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.inner.id().to_string()
    }

    /// The latch path.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.inner.path().to_string()
    }

    /// Resolves to the current leader `{ id, isLeader }`.
    #[napi]
    pub fn get_leader<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let latch = self.inner.clone();
        promise::spawn(
            env,
            async move { Ok(participant(&latch.get_leader().await?)) },
        )
    }

    /// Resolves to every participant in order.
    #[napi]
    pub fn get_participants<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let latch = self.inner.clone();
        promise::spawn(env, async move {
            Ok(participants(&latch.get_participants().await?))
        })
    }

    /// Leaves the election (with `mode`, or the latch's close mode).
    #[napi]
    pub fn close<'env>(&self, env: &'env Env, mode: Option<String>) -> napi::Result<Object<'env>> {
        let mode = match close_mode(mode) {
            Ok(m) => m,
            Err(e) => return promise::rejected(env, e),
        };
        let latch = self.inner.clone();
        promise::spawn(env, async move {
            match mode {
                Some(mode) => latch.close_with(mode).await?,
                None => latch.close().await?,
            }
            Ok(Out::Undefined)
        })
    }
}

fn cancel_reason_name(r: CancelReason) -> &'static str {
    match r {
        CancelReason::ConnectionSuspended => "CONNECTION_SUSPENDED",
        CancelReason::SessionLost => "SESSION_LOST",
        CancelReason::Interrupted => "INTERRUPTED",
        CancelReason::Closed => "CLOSED",
    }
}

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
    pub fn term(&self) -> f64 {
        self.ctx.term() as f64
    }

    /// The term's fencing token (the lock node's czxid).
    #[napi(getter)]
    pub fn fencing_token(&self) -> Option<BigInt> {
        self.ctx.fencing_token().map(BigInt::from)
    }

    /// The participant id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.ctx.id().to_string()
    }

    /// The leader path.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.ctx.path().to_string()
    }

    /// Why leadership was cancelled, or `null`.
    #[napi(getter)]
    pub fn cancel_reason(&self) -> Option<String> {
        self.ctx
            .cancel_reason()
            .map(|r| cancel_reason_name(r).to_string())
    }

    /// Calls `emit('cancel', REASON)` once leadership is cancelled (at once if it is).
    #[napi]
    pub fn on_cancel(&self, emit: EmitFn<'_>) -> napi::Result<()> {
        let emitter = Emitter::new(emit)?;
        self.ctx.on_cancel(move |r| {
            emitter.emit(Event::new(
                "cancel",
                Payload::Text(cancel_reason_name(r).into()),
            ))
        });
        Ok(())
    }

    /// Ends this term: `takeLeadership` returned.
    #[napi]
    pub fn finish(&self) {
        if let Some(done) = self.done.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = done.send(());
        }
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
        lost_policy_name: Option<String>,
    ) -> napi::Result<Self> {
        // Weak: a selector waiting for leadership does not by itself keep the process alive
        // (its open client does).
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
        let build = || -> CoreResult<LeaderSelector> {
            let s = LeaderSelector::new(&client.inner, &path, &id, take_leadership)?;
            s.set_lost_policy(lost_policy(lost_policy_name)?)?;
            Ok(s)
        };
        let inner = build().map_err(|e| from_core(&env, &e))?;
        Ok(NativeLeaderSelector {
            inner: Arc::new(inner),
        })
    }

    /// Requeue by itself after every term (Curator's autoRequeue()).
    #[napi]
    pub fn auto_requeue(&self) {
        self.inner.auto_requeue();
    }

    /// Joins the queue (returns at once).
    #[napi]
    pub fn start(&self, env: Env) -> napi::Result<()> {
        self.inner.start().map_err(|e| from_core(&env, &e))
    }

    /// Queues again; whether it was queued now.
    #[napi]
    pub fn requeue(&self, env: Env) -> napi::Result<bool> {
        self.inner.requeue().map_err(|e| from_core(&env, &e))
    }

    /// Cancels the current term (`ctx.signal` aborts with INTERRUPTED).
    #[napi]
    pub fn interrupt_leadership(&self) {
        self.inner.interrupt_leadership();
    }

    /// Whether this participant leads now.
    #[napi]
    pub fn has_leadership(&self) -> bool {
        self.inner.has_leadership()
    }

    /// The current term's fencing token, while leading.
    #[napi(getter)]
    pub fn leadership_epoch(&self) -> Option<BigInt> {
        self.inner.leadership_epoch().map(BigInt::from)
    }

    /// How many terms this selector has started.
    #[napi(getter)]
    pub fn leadership_count(&self) -> f64 {
        self.inner.leadership_count() as f64
    }

    /// `LATENT`, `STARTED` or `CLOSED`.
    #[napi(getter)]
    pub fn state(&self) -> String {
        match self.inner.state() {
            SelectorState::Latent => "LATENT",
            SelectorState::Started => "STARTED",
            SelectorState::Closed => "CLOSED",
        }
        .to_string()
    }

    /// The participant id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.inner.id().to_string()
    }

    /// The leader path.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.inner.path().to_string()
    }

    /// Resolves to the current leader.
    #[napi]
    pub fn get_leader<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let s = self.inner.clone();
        promise::spawn(env, async move { Ok(participant(&s.get_leader().await?)) })
    }

    /// Resolves to every participant in queue order.
    #[napi]
    pub fn get_participants<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let s = self.inner.clone();
        promise::spawn(env, async move {
            Ok(participants(&s.get_participants().await?))
        })
    }

    /// Leaves for good; resolves once the current term (if any) has finished.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let s = self.inner.clone();
        promise::spawn(env, async move {
            s.close().await?;
            Ok(Out::Undefined)
        })
    }
}
