//! `zkr lock PATH [--timeout D] [--read|--write|--semaphore N] -- CMD…`

use std::future::Future;

use zkrecipes::leader::LostPolicy;
use zkrecipes::lock::{
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, Lease, LockLostPolicy,
};
use zkrecipes::{Client, ConnectionState, Owner};

use crate::args::{Global, LockArgs, LostPolicyArg};
use crate::child::{self, Signals, Spec};
use crate::connect::{self, session_hex};
use crate::exit::{signalled, Failure, Outcome};
use crate::status::{self, Waiting};

pub async fn run(global: &Global, args: LockArgs) -> Outcome {
    super::check_group_path("lock", &args.path)?;
    connect::check(global)?;
    let id = args.id.clone().unwrap_or_else(super::default_id);
    let mut signals = Signals::install()?;
    let client = tokio::select! {
        c = connect::connect(global) => c?,
        sig = signals.recv() => return Ok(signalled(sig as i32)),
    };
    let outcome = hold_and_run(global, &client, &args, id, &mut signals).await;
    connect::close(&client).await;
    outcome
}

/// What we contend with.
enum Contender {
    Mutex(InterProcessMutex),
    Semaphore(InterProcessSemaphoreV2),
}

/// What we hold.
enum Held {
    Mutex(InterProcessMutex, Owner),
    Lease(Lease),
}

async fn hold_and_run(
    global: &Global,
    client: &Client,
    args: &LockArgs,
    id: String,
    signals: &mut Signals,
) -> Outcome {
    let path = &args.path;
    let fail = |e| Failure::from_core(&format!("lock {path}"), e);
    let policy = match args.lost_policy {
        LostPolicyArg::Standard => LockLostPolicy::Standard,
        LostPolicyArg::Session => LockLostPolicy::Session,
    };
    let data = id.into_bytes();
    let contender = if let Some(n) = args.semaphore {
        Contender::Semaphore(
            InterProcessSemaphoreV2::with_data(client, path, n as usize, data).map_err(fail)?,
        )
    } else if args.read || args.write {
        let rw = InterProcessReadWriteLock::with_data(client, path, data).map_err(fail)?;
        let side = if args.read {
            rw.read_lock()
        } else {
            rw.write_lock()
        };
        Contender::Mutex(side.clone().with_lost_policy(policy))
    } else {
        Contender::Mutex(
            InterProcessMutex::with_data(client, path, data)
                .map_err(fail)?
                .with_lost_policy(policy),
        )
    };
    let owner = Owner::new();
    let waiting = match contender {
        Contender::Semaphore(_) => Waiting::Lease,
        Contender::Mutex(_) => Waiting::Lock,
    };
    let acquire = async {
        match &contender {
            Contender::Mutex(m) => Ok(m
                .acquire(owner, args.timeout)
                .await?
                .then(|| Held::Mutex(m.clone(), owner))),
            Contender::Semaphore(s) => Ok(s
                .acquire(1, args.timeout)
                .await?
                .and_then(|mut leases| leases.pop())
                .map(Held::Lease)),
        }
    };
    // Dropping an unfinished acquire (a signal) deletes its node; closing the session follows.
    let held = tokio::select! {
        r = acquire => r.map_err(fail)?,
        sig = signals.recv() => return Ok(signalled(sig as i32)),
        _ = status::follow(client.clone(), path.clone(), waiting) => unreachable!("status::follow never returns"),
    };
    let Some(held) = held else {
        let waited = args.timeout.map(humantime::format_duration);
        return Err(Failure::timeout(format!(
            "lock {path} was not acquired within {}",
            waited.map(|d| d.to_string()).unwrap_or_default()
        )));
    };
    // A hold already doubtful (the connection went between the grant and now) runs nothing.
    if let Held::Mutex(m, owner) = &held {
        if !m.is_held_valid(*owner) {
            let _ = release(held).await;
            return Err(Failure::lost(format!(
                "lost the hold on lock {path} ({}) before the command started",
                lost_reason(client.state())
            )));
        }
    }
    let (token, node) = match &held {
        Held::Mutex(m, owner) => (
            m.fencing_token(*owner).unwrap_or_default(),
            m.lock_node(*owner).unwrap_or_default(),
        ),
        Held::Lease(l) => (l.czxid(), l.path().to_string()),
    };
    let mut env = vec![
        ("ZKR_FENCING_TOKEN", token.to_string()),
        ("ZKR_LOCK_PATH", path.clone()),
        ("ZKR_LOCK_NODE", node),
        ("ZKR_SESSION_ID", session_hex(client.session_id())),
    ];
    env.extend(super::ensemble_env(global));
    let spawned = child::spawn(Spec {
        argv: &args.run.command,
        env,
        foreground: args.run.foreground,
    });
    let mut running = match spawned {
        Ok(r) => r,
        Err(f) => {
            let _ = release(held).await;
            return Err(f);
        }
    };
    let lost = lost_signal(client, &held, args.lost_policy).await;
    let ended = child::supervise(&mut running, signals, lost, args.run.grace).await;
    let released = release(held).await;
    if let Some(reason) = ended.lost {
        return Err(Failure::lost(format!(
            "lost the hold on lock {path} ({reason}); the command was stopped (exit code {})",
            ended.code
        )));
    }
    if let Err(e) = released {
        eprintln!(
            "zkr: warning: releasing lock {path}: {}; its node goes with the session, which zkr closes now",
            crate::exit::describe(&e)
        );
    }
    Ok(ended.code)
}

async fn release(held: Held) -> zkrecipes::Result<()> {
    match held {
        Held::Mutex(m, owner) => m.release(owner).await,
        Held::Lease(l) => l.release().await,
    }
}

/// A future that resolves, with a reason, when the hold is lost.
async fn lost_signal(
    client: &Client,
    held: &Held,
    policy: LostPolicyArg,
) -> std::pin::Pin<Box<dyn Future<Output = String> + Send>> {
    match held {
        Held::Mutex(m, owner) => {
            let signal = m.lost_signal(*owner);
            let client = client.clone();
            Box::pin(async move {
                if signal.await {
                    lost_reason(client.state())
                } else {
                    std::future::pending().await
                }
            })
        }
        Held::Lease(lease) => {
            Box::pin(lease_lost(client.clone(), lease.path().to_string(), policy).await)
        }
    }
}

fn lost_reason(state: ConnectionState) -> String {
    match state {
        ConnectionState::Suspended => "the connection to ZooKeeper was suspended".into(),
        ConnectionState::Lost => "the ZooKeeper session was lost".into(),
        s => format!("the connection state is {s} and the session may have changed"),
    }
}

/// The core's Lease has no lost signal: watch the connection with the same policy as the
/// mutex's (Curator's ConnectionStateErrorPolicy), from a state stream taken before checking
/// that the lease node still belongs to this session.
async fn lease_lost(
    client: Client,
    node: String,
    policy: LostPolicyArg,
) -> impl Future<Output = String> + Send {
    let policy = match policy {
        LostPolicyArg::Standard => LostPolicy::Standard,
        LostPolicyArg::Session => LostPolicy::Session,
    };
    let mut states = client.state_stream();
    let session = client.session_id();
    // A failed read says nothing: the state stream decides then.
    let ours = match client.exists(&node).await {
        Ok(Some(stat)) => stat.ephemeral_owner == session,
        Ok(None) => false,
        Err(_) => true,
    };
    async move {
        if !ours || policy.is_error_state(client.state()) || client.session_id() != session {
            return lost_reason(client.state());
        }
        while let Some(state) = states.next().await {
            if policy.is_error_state(state) || client.session_id() != session {
                return lost_reason(state);
            }
        }
        "the client was closed".into()
    }
}
