//! `zkr lock PATH [--timeout D] [--read|--write|--semaphore N] -- CMD…`

use std::future::Future;

use zkrecipes::lock::{
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, Lease, LockLostPolicy,
};
use zkrecipes::{Client, ConnectionState, ErrorKind, Owner};

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
    // Watching for the loss from here on, before the command starts: nothing between the
    // grant and the supervision goes unseen, and no server read stands in the way.
    let lost = lost_signal(client, &held, policy);
    // A hold already doubtful (the connection went between the grant and now) runs nothing.
    let doubtful = match &held {
        Held::Mutex(m, owner) => !m.is_held_valid(*owner),
        Held::Lease(_) => client.is_closed() || policy.is_error_state(client.state()),
    };
    if doubtful {
        drop(lost);
        let _ = release(client, held, true).await;
        return Err(Failure::lost(format!(
            "lost the hold on lock {path} ({}) before the command started",
            lost_reason(client.state())
        )));
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
            drop(lost);
            let _ = release(client, held, false).await;
            return Err(f);
        }
    };
    let ended = child::supervise(&mut running, signals, lost, args.run.grace).await;
    let released = release(client, held, ended.lost.is_some()).await;
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

/// Gives the hold back, waiting at most [`CLOSE_LIMIT`](connect::CLOSE_LIMIT): a delete on a
/// connection that is gone would wait out every retry of the client (connection timeout × 4),
/// while closing the session, which zkr does next, removes our node anyway (or the session's
/// expiry does). A lease already reported `lost` is not deleted here when the connection is
/// down (its node goes in the background, or with the session), as the core's mutex does for a
/// lost hold: exit 4 comes after --grace, not after the client's retries.
async fn release(client: &Client, held: Held, lost: bool) -> zkrecipes::Result<()> {
    let connected = client.state().is_connected();
    let release = async move {
        match held {
            Held::Mutex(m, owner) => m.release(owner).await,
            Held::Lease(l) if lost && !connected => {
                drop(l); // returned in the background (Lease's drop), or with the session
                Ok(())
            }
            Held::Lease(l) => l.release().await,
        }
    };
    match tokio::time::timeout(connect::CLOSE_LIMIT, release).await {
        Ok(r) => r,
        Err(_) => Err(zkrecipes::Error::new(
            ErrorKind::Timeout,
            format!(
                "no answer within {}",
                humantime::format_duration(connect::CLOSE_LIMIT)
            ),
        )),
    }
}

/// A future that resolves, with a reason, when the hold is lost. Made before the command
/// starts, it watches from the moment it is made (not from its first poll).
fn lost_signal(
    client: &Client,
    held: &Held,
    policy: LockLostPolicy,
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
            let signal = lease.lost_signal(policy);
            Box::pin(async move {
                match signal.await {
                    zkrecipes::lock::LeaseLost::State(state) => lost_reason(state),
                    why => why.to_string(),
                }
            })
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
