//! `zkr elect PATH [--id ID] [--requeue] [--latch] -- CMD…`
//!
//! Semantics (docs/CLI.md § elect): leadership lasts while the command runs. With the default
//! LeaderSelector, the command is `take_leadership`: it starts when our mutex node reaches the
//! head of the line and the node is released when it exits. With `--latch`, the command runs
//! while our LeaderLatch leads and zkr leaves the latch when it exits. A lost leadership stops
//! the command (SIGTERM, SIGKILL after the grace period). `--requeue` runs it again at each new
//! leadership until zkr is signalled; otherwise zkr ends with the first term.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use zkrecipes::leader::{CancelReason, LeaderLatch, LeaderSelector, LeadershipContext, LostPolicy};
use zkrecipes::participants::participants;
use zkrecipes::{Client, ErrorKind};

use crate::args::{ElectArgs, Global, LostPolicyArg};
use crate::child::{self, Ended, Signals, Spec};
use crate::connect::{self, session_hex};
use crate::exit::{signalled, Failure, Outcome, CONNECT};
use crate::status::{self, Waiting};

pub async fn run(global: &Global, args: ElectArgs) -> Outcome {
    super::check_group_path("election", &args.path)?;
    connect::check(global)?;
    let id = args.id.clone().unwrap_or_else(super::default_id);
    let mut signals = Signals::install()?;
    let client = tokio::select! {
        c = connect::connect(global) => c?,
        sig = signals.recv() => return Ok(signalled(sig as i32)),
    };
    let outcome = if args.latch {
        run_latch(global, &client, &args, &id, &mut signals).await
    } else {
        run_selector(global, &client, &args, &id, &mut signals).await
    };
    connect::close(&client).await;
    outcome
}

fn policy(args: &ElectArgs) -> LostPolicy {
    match args.lost_policy {
        LostPolicyArg::Standard => LostPolicy::Standard,
        LostPolicyArg::Session => LostPolicy::Session,
    }
}

fn env(
    global: &Global,
    client: &Client,
    path: &str,
    id: &str,
    token: Option<i64>,
) -> Vec<(&'static str, String)> {
    let mut env = vec![
        (
            "ZKR_FENCING_TOKEN",
            token.map(|t| t.to_string()).unwrap_or_default(),
        ),
        ("ZKR_ELECTION_PATH", path.to_string()),
        ("ZKR_LEADER_ID", id.to_string()),
        ("ZKR_SESSION_ID", session_hex(client.session_id())),
    ];
    env.extend(super::ensemble_env(global));
    env
}

fn timed_out(args: &ElectArgs) -> Failure {
    let d = args.timeout.map(humantime::format_duration);
    Failure::timeout(format!(
        "not leading {} within {}",
        args.path,
        d.map(|d| d.to_string()).unwrap_or_default()
    ))
}

/// One full attempt to lead, as the server sees it: waits (at most `limit`) until our node is in
/// the line at `path` (a selector's worker makes it in the background; a latch's is made when
/// start() returns) and says whether it heads the line, i.e. whether our recipe is about to
/// lead. `--timeout` is only looked at once this answered: 0s means "try once", as for `lock`,
/// not "give up before the first server round trip". A line that cannot be read, or a node
/// that does not show up within `limit`, is an attempt that failed.
async fn heads_the_line(client: &Client, path: &str, limit: Duration) -> bool {
    let session = client.session_id();
    let look = async {
        loop {
            // The watch first, then the read: a node added after the read fires it.
            let watch = match client.get_children_watch(path).await {
                Ok((_, w)) => w,
                Err(e) if e.kind() == ErrorKind::NoNode => match client.exists_watch(path).await {
                    Ok((None, w)) => w,
                    Ok((Some(_), _)) => continue, // made meanwhile: watch its children
                    Err(_) => return false,
                },
                Err(_) => return false,
            };
            match participants(client, path).await {
                Ok(line) => {
                    if let Some(place) = line.position_of(session) {
                        return place == 0;
                    }
                }
                Err(e) if e.kind() == ErrorKind::NoNode => {}
                Err(_) => return false,
            }
            let _ = watch.changed().await;
        }
    };
    tokio::time::timeout(limit, look).await.unwrap_or(false)
}

/// After the first attempt answered: heading the line, the term is on its way (our recipe
/// needs its own answer from the server), so the deadline leaves it that long.
fn after_first_look(deadline: Option<Instant>, heads: bool, client: &Client) -> Option<Instant> {
    match deadline {
        Some(d) if heads => Some(d.max(Instant::now() + client.connection_timeout())),
        d => d,
    }
}

/// What to do after a term.
enum Next {
    Exit(Outcome),
    Again,
}

fn after_term(args: &ElectArgs, ended: Ended) -> Next {
    if ended.stop_signal.is_some() {
        return Next::Exit(Ok(ended.code));
    }
    match ended.lost {
        Some(reason) if !args.requeue => Next::Exit(Err(Failure::lost(format!(
            "lost the leadership of {} ({reason}); the command was stopped (exit code {})",
            args.path, ended.code
        )))),
        Some(reason) => {
            eprintln!(
                "zkr: lost the leadership of {} ({reason}); the command was stopped (exit code {}); waiting to lead again",
                args.path, ended.code
            );
            Next::Again
        }
        None if args.requeue => Next::Again,
        None => Next::Exit(Ok(ended.code)),
    }
}

type Term = (LeadershipContext, oneshot::Sender<()>);

async fn run_selector(
    global: &Global,
    client: &Client,
    args: &ElectArgs,
    id: &str,
    signals: &mut Signals,
) -> Outcome {
    let path = &args.path;
    let fail = |e| Failure::from_core(&format!("elect {path}"), e);
    // take_leadership hands each term to this (main) task, which runs the command, and waits
    // until the command is done: leadership is released only after it stopped.
    let (tx, mut terms) = mpsc::unbounded_channel::<Term>();
    let selector = LeaderSelector::new(client, path, id, move |ctx: LeadershipContext| {
        let tx = tx.clone();
        async move {
            let (done, wait) = oneshot::channel();
            if tx.send((ctx, done)).is_ok() {
                let _ = wait.await;
            }
        }
    })
    .map_err(fail)?
    .with_lost_policy(policy(args))
    .map_err(fail)?;
    // Always requeue while waiting: without it the core's selector (like Curator's) leaves the
    // line silently after an acquire that failed on connection trouble, and zkr would wait
    // forever. Without --requeue it is switched off before the one term ends.
    selector.auto_requeue();
    selector.start().map_err(fail)?;
    let mut deadline = args.timeout.map(|d| Instant::now() + d);
    // The deadline counts only once the first attempt answered (see heads_the_line).
    let mut looked = deadline.is_none();
    let first_look = heads_the_line(client, path, client.connection_timeout());
    tokio::pin!(first_look);
    let outcome = loop {
        let (ctx, done) = tokio::select! {
            t = terms.recv() => match t {
                Some(t) => t,
                None => break Err(Failure::new(CONNECT, format!("elect {path}: the selector stopped"))),
            },
            sig = signals.recv() => break Ok(signalled(sig as i32)),
            heads = &mut first_look, if !looked => {
                looked = true;
                deadline = after_first_look(deadline, heads, client);
                continue;
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() && looked => {
                break Err(timed_out(args));
            }
            _ = status::follow(client.clone(), path.clone(), Waiting::Leadership) => unreachable!("status::follow never returns"),
        };
        deadline = None;
        looked = true;
        let spawned = child::spawn(Spec {
            argv: &args.run.command,
            env: env(global, client, path, id, ctx.fencing_token()),
            foreground: args.run.foreground,
        });
        let mut running = match spawned {
            Ok(r) => r,
            Err(f) => {
                selector.set_auto_requeue(false);
                break Err(f);
            }
        };
        let lost = {
            let ctx = ctx.clone();
            async move { cancel_text(ctx.cancelled().await) }
        };
        let ended = child::supervise(&mut running, signals, lost, args.run.grace).await;
        let next = after_term(args, ended);
        if let Next::Exit(_) = next {
            selector.set_auto_requeue(false);
        }
        drop(done);
        match next {
            Next::Exit(o) => break o,
            Next::Again => continue,
        }
    };
    // Terms handed over but not taken: their take_leadership returns when they are dropped.
    terms.close();
    while terms.try_recv().is_ok() {}
    let _ = selector.close().await;
    outcome
}

fn cancel_text(reason: CancelReason) -> String {
    match reason {
        CancelReason::ConnectionSuspended => "the connection to ZooKeeper was suspended".into(),
        CancelReason::SessionLost => "the ZooKeeper session was lost".into(),
        CancelReason::Interrupted => "leadership was interrupted".into(),
        CancelReason::Closed => "the election was closed".into(),
    }
}

async fn run_latch(
    global: &Global,
    client: &Client,
    args: &ElectArgs,
    id: &str,
    signals: &mut Signals,
) -> Outcome {
    let path = &args.path;
    let fail = |e| Failure::from_core(&format!("elect {path}"), e);
    let mut deadline = args.timeout.map(|d| Instant::now() + d);
    // The deadline counts only once the first attempt answered (see heads_the_line).
    let mut looked = deadline.is_none();
    loop {
        let latch = LeaderLatch::new(client, path, id)
            .map_err(fail)?
            .with_lost_policy(policy(args))
            .map_err(fail)?;
        latch.start().await.map_err(fail)?;
        let mut watch = latch.leadership_watch();
        let first_look = heads_the_line(client, path, client.connection_timeout());
        tokio::pin!(first_look);
        let outcome = loop {
            while !watch.is_leader() {
                tokio::select! {
                    changed = watch.changed() => if changed.is_none() {
                        return Err(Failure::new(CONNECT, format!("elect {path}: the latch was closed")));
                    },
                    sig = signals.recv() => {
                        let _ = latch.close().await;
                        return Ok(signalled(sig as i32));
                    }
                    heads = &mut first_look, if !looked => {
                        looked = true;
                        deadline = after_first_look(deadline, heads, client);
                    }
                    _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() && looked => {
                        let _ = latch.close().await;
                        return Err(timed_out(args));
                    }
                    _ = status::follow(client.clone(), path.clone(), Waiting::Leadership) => unreachable!("status::follow never returns"),
                }
            }
            deadline = None;
            looked = true;
            let spawned = child::spawn(Spec {
                argv: &args.run.command,
                env: env(global, client, path, id, latch.leadership_epoch()),
                foreground: args.run.foreground,
            });
            let mut running = match spawned {
                Ok(r) => r,
                Err(f) => {
                    let _ = latch.close().await;
                    return Err(f);
                }
            };
            // The watch last reported leading (is_leader() above, before the spawn), so any
            // change it reports from then on ends the term: leadership lost (Some(false)),
            // lost and regained before this was first polled (Some(true): another may have led
            // meanwhile), or the latch closed (None). Nothing between that is_leader() and the
            // first poll goes unseen.
            let lost = async {
                let now = watch.changed().await;
                match client.state() {
                    zkrecipes::ConnectionState::Suspended => {
                        "the connection to ZooKeeper was suspended".to_string()
                    }
                    zkrecipes::ConnectionState::Lost => {
                        "the ZooKeeper session was lost".to_string()
                    }
                    _ if now == Some(true) => {
                        "the latch stopped leading for a while (it leads again)".to_string()
                    }
                    _ => "the latch stopped leading".to_string(),
                }
            };
            let ended = child::supervise(&mut running, signals, lost, args.run.grace).await;
            let lost = ended.lost.is_some();
            match after_term(args, ended) {
                // Lost with --requeue: the latch stays in the line and may lead again.
                Next::Again if lost => continue,
                // The command ended: leave; with --requeue join again at the end of the line.
                Next::Again => break None,
                Next::Exit(o) => break Some(o),
            }
        };
        let _ = latch.close().await;
        if let Some(outcome) = outcome {
            return outcome;
        }
    }
}
