//! kazoo's recipes: `NativeSetPartitioner`, and the leases (`nonBlockingLease`,
//! `multiNonBlockingLease`), on kazoo's node layout.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use napi::bindgen_prelude::{FnArgs, Function, Object};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use zkrecipes::partition::{
    LeaseOptions, MultiNonBlockingLease, NonBlockingLease, PartitionState, PartitionerOptions,
    SetPartitioner,
};

use crate::args;
use crate::boundary::{promise, promise_on, promise_timed, sync};
use crate::client::NativeClient;
use crate::error::{invalid, CoreResult};
use crate::events::{EmitFn, Emitter, Event};
use crate::value::Out;

/// The partition states, in the core's order.
#[napi]
pub fn partition_states(env: Env) -> napi::Result<Vec<String>> {
    sync(&env, || {
        Ok(PartitionState::ALL
            .iter()
            .map(|s| s.name().to_string())
            .collect())
    })
}

fn state_arg(name: &str) -> CoreResult<PartitionState> {
    PartitionState::from_name(name).ok_or_else(|| {
        invalid(format!(
            "{name:?} is not a partition state (ALLOCATING, ACQUIRED, RELEASE, FAILURE)"
        ))
    })
}

/// Options of `NativeSetPartitioner` (checked in `lib/partition.js`).
#[napi(object)]
pub struct PartitionerInit {
    /// This member's identifier (`undefined`: `<hostname>-<pid>`).
    pub identifier: Option<String>,
    /// How long the party must be unchanged before dividing, ms.
    pub time_boundary_ms: f64,
    /// How long one attempt at a partition's lock waits, ms.
    pub max_reaction_time_ms: f64,
}

/// What `lib/partition.js`'s wrapper of a user's `partitionFunc` answers: this member's
/// partitions, or the message of what the function threw or why its answer is not a list of
/// names.
#[napi(object)]
pub struct ShareAnswer {
    /// The partitions this member takes.
    pub share: Option<Vec<String>>,
    /// What went wrong.
    pub error: Option<String>,
}

/// The JS side of a partition function: `(identifier, members, set) => ShareAnswer`.
pub type PartitionFn<'a> = Function<'a, FnArgs<(String, Vec<String>, Vec<String>)>, ShareAnswer>;

type ShareArgs = (String, Vec<String>, Vec<String>);
type PartitionTsfn =
    ThreadsafeFunction<ShareArgs, ShareAnswer, FnArgs<ShareArgs>, Status, false, true>;

/// How long a division waits for the JS thread to answer the partition function.
const PARTITION_FUNC_WAIT: Duration = Duration::from_secs(30);

/// The core's partition function: asks `tsfn` on the JS thread and waits for the answer (the
/// core calls it on its blocking pool, never on the JS thread).
fn ask_share(
    tsfn: &PartitionTsfn,
    identifier: &str,
    members: &[String],
    set: &[String],
) -> zkrecipes::Result<Vec<String>> {
    let failed = |why: String| {
        zkrecipes::Error::InvalidArgument(format!("partitionFunc failed: {why}").into())
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let status = tsfn.call_with_return_value(
        (identifier.to_string(), members.to_vec(), set.to_vec()),
        ThreadsafeFunctionCallMode::NonBlocking,
        move |answer, _env| {
            let _ = tx.send(answer.map_err(|e| e.reason.clone()));
            Ok(())
        },
    );
    if status != Status::Ok {
        return Err(zkrecipes::Error::Closed(
            format!("partitionFunc cannot be called ({status}): is the environment exiting?")
                .into(),
        ));
    }
    let answer = rx
        .recv_timeout(PARTITION_FUNC_WAIT)
        .map_err(|_| {
            failed(format!(
                "no answer from the JS thread within {PARTITION_FUNC_WAIT:?}"
            ))
        })?
        .map_err(failed)?;
    match (answer.share, answer.error) {
        (_, Some(e)) => Err(failed(e)),
        (Some(share), None) => Ok(share),
        (None, None) => Err(failed("no answer".into())),
    }
}

/// kazoo's SetPartitioner; `emit` receives `'state'` with each new state.
#[napi]
pub struct NativeSetPartitioner {
    inner: Arc<SetPartitioner>,
}

#[napi]
impl NativeSetPartitioner {
    /// A member of the partitioner at `path` dividing `set`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        client: &NativeClient,
        path: String,
        set: Vec<String>,
        init: PartitionerInit,
        emit: EmitFn<'_>,
        partition_func: Option<PartitionFn<'_>>,
    ) -> napi::Result<Self> {
        sync(&env, || {
            let mut options = PartitionerOptions {
                identifier: init.identifier,
                time_boundary: args::positive_duration("timeBoundaryMs", init.time_boundary_ms)?,
                max_reaction_time: args::positive_duration(
                    "maxReactionTimeMs",
                    init.max_reaction_time_ms,
                )?,
                partition_func: None,
            };
            if let Some(f) = partition_func {
                let tsfn: PartitionTsfn = f
                    .build_threadsafe_function::<ShareArgs>()
                    .weak::<true>()
                    .callee_handled::<false>()
                    .build_callback(|ctx| Ok(FnArgs::from(ctx.value)))?;
                options = options
                    .partition_func(move |me, members, set| ask_share(&tsfn, me, members, set));
            }
            let p = SetPartitioner::new(&client.inner, &path, &set, options)?;
            let emitter = Emitter::new(emit)?;
            p.add_listener(move |s| emitter.emit(Event::new("state", Out::Str(s.name().into()))));
            Ok(NativeSetPartitioner { inner: Arc::new(p) })
        })
    }

    /// Joins the party; resolves once joined.
    #[napi]
    pub fn start<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |p| async move { p.start().await })
    }

    /// `[state, partitions]` in one reading.
    #[napi]
    pub fn snapshot(&self, env: Env) -> napi::Result<Out> {
        sync(&env, || {
            let (state, parts) = self.inner.snapshot();
            Ok(Out::Array(vec![
                Out::Str(state.name().into()),
                Out::strings(parts),
            ]))
        })
    }

    /// The state's name.
    #[napi(getter)]
    pub fn state(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.state().name().to_string()))
    }

    /// This member's identifier.
    #[napi(getter)]
    pub fn identifier(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.identifier().to_string()))
    }

    /// The partitioner's path.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.path().to_string()))
    }

    /// Resolves to whether it is ACQUIRED once no longer ALLOCATING (or the time ran out).
    #[napi]
    pub fn wait_for_acquire<'env>(
        &self,
        env: &'env Env,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise_timed(env, &self.inner, timeout_ms, |p, t| async move {
            p.wait_for_acquire(t).await
        })
    }

    /// Resolves to the state once it differs from `seen` (or the time ran out).
    #[napi]
    pub fn wait_for_change<'env>(
        &self,
        env: &'env Env,
        seen: String,
        timeout_ms: Option<f64>,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let p = self.inner.clone();
            let seen = state_arg(&seen)?;
            let timeout = args::timeout("timeoutMs", timeout_ms)?;
            Ok(async move { Ok(p.wait_for_change(seen, timeout).await.name().to_string()) })
        })
    }

    /// Releases the partitions' locks and allocates again.
    #[napi]
    pub fn release_set<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |p| async move { p.release_set().await })
    }

    /// FAILURE at once, then the locks released and the party left.
    #[napi]
    pub fn finish<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise_on(env, &self.inner, |p| async move { p.finish().await })
    }
}

/// Options of the leases (checked in `lib/partition.js`).
#[napi(object)]
pub struct LeaseInit {
    /// Who holds the lease (`undefined`: this host's name).
    pub identifier: Option<String>,
    /// The clock reading to use, ms since 1970 (`undefined`: the system clock).
    pub now_ms: Option<f64>,
    /// How long to wait for the lease's lock, ms (`undefined`: no limit).
    pub timeout_ms: Option<f64>,
}

fn lease_options(init: LeaseInit) -> CoreResult<LeaseOptions> {
    let now = match init.now_ms {
        Some(ms) if !ms.is_finite() || ms < 0.0 => {
            return Err(invalid(format!(
                "now must be a time after 1970, got {ms} ms"
            )))
        }
        Some(ms) => Some(UNIX_EPOCH + Duration::from_secs_f64(ms / 1000.0)),
        None => None,
    };
    Ok(LeaseOptions {
        identifier: init.identifier,
        now,
        lock_timeout: args::timeout("timeoutMs", init.timeout_ms)?,
    })
}

fn end_ms(t: Option<SystemTime>) -> Out {
    t.and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(Out::Null, |d| Out::Number(d.as_millis() as f64))
}

/// kazoo's NonBlockingLease: resolves to `[obtained, endMs | null]`.
#[napi]
pub fn non_blocking_lease<'env>(
    env: &'env Env,
    client: &NativeClient,
    path: String,
    duration_ms: f64,
    init: LeaseInit,
) -> napi::Result<Object<'env>> {
    promise(env, || {
        let c = client.inner.clone();
        let d = args::duration("durationMs", duration_ms)?;
        let options = lease_options(init)?;
        Ok(async move {
            let l = NonBlockingLease::obtain(&c, &path, d, options).await?;
            Ok(Out::Array(vec![Out::Bool(l.obtained()), end_ms(l.end())]))
        })
    })
}

/// kazoo's MultiNonBlockingLease: resolves to `[obtained, index | null, endMs | null]`.
#[napi]
pub fn multi_non_blocking_lease<'env>(
    env: &'env Env,
    client: &NativeClient,
    count: f64,
    path: String,
    duration_ms: f64,
    init: LeaseInit,
) -> napi::Result<Object<'env>> {
    promise(env, || {
        let c = client.inner.clone();
        if count.fract() != 0.0 || !(0.0..=u32::MAX as f64).contains(&count) {
            return Err(
                invalid(format!("count must be a non-negative integer, got {count}")).into(),
            );
        }
        let d = args::duration("durationMs", duration_ms)?;
        let options = lease_options(init)?;
        Ok(async move {
            let l = MultiNonBlockingLease::obtain(&c, count as u32, &path, d, options).await?;
            Ok(Out::Array(vec![
                Out::Bool(l.obtained()),
                l.index().map_or(Out::Null, |i| Out::Number(i.into())),
                end_ms(l.lease().and_then(|l| l.end())),
            ]))
        })
    })
}
