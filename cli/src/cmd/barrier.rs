//! `zkr barrier enter|leave PATH --members N [--timeout D]` (Curator's
//! DistributedDoubleBarrier).
//!
//! `enter` is a rendezvous: it exits 0 once N members are in. Its member node goes with zkr's
//! session when zkr exits; the members still in are other processes' (Curator's, or the faces').
//! `leave` waits until every member has left (a member of its own that never entered: it only
//! waits). Both exit 3 when the timeout passes first; a signal ends them with 128+N, their node
//! gone.

use serde_json::json;

use zkrecipes::barriers::DistributedDoubleBarrier;

use crate::args::{BarrierArgs, BarrierCommand, Global};
use crate::child::Signals;
use crate::connect;
use crate::exit::{signalled, Failure, Outcome, OK};
use crate::output::{write_failure, Printer};

pub async fn run(global: &Global, command: BarrierCommand) -> Outcome {
    let (args, entering) = match &command {
        BarrierCommand::Enter(a) => (a, true),
        BarrierCommand::Leave(a) => (a, false),
    };
    super::check_group_path("barrier", &args.path)?;
    if args.members == 0 {
        return Err(Failure::usage("--members must be at least 1"));
    }
    connect::check(global)?;
    let mut signals = Signals::install()?;
    let client = match super::connect_or_signal(global, &mut signals).await? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let outcome = tokio::select! {
        o = barrier(global, &client, args, entering) => o,
        sig = signals.recv() => Ok(signalled(sig as i32)),
    };
    connect::close(&client).await;
    outcome
}

async fn barrier(
    global: &Global,
    client: &zkrecipes::Client,
    args: &BarrierArgs,
    entering: bool,
) -> Outcome {
    let path = &args.path;
    let verb = if entering { "enter" } else { "leave" };
    let fail = |e| Failure::from_core(&format!("barrier {verb} {path}"), e);
    let b = DistributedDoubleBarrier::new(client, path, args.members).map_err(fail)?;
    let done = if entering {
        b.enter(args.timeout).await
    } else {
        b.leave(args.timeout).await
    }
    .map_err(fail)?;
    if !done {
        let what = if entering {
            format!("{} members were not in", args.members)
        } else {
            "members were still in".to_string()
        };
        return Err(Failure::timeout(format!(
            "barrier {verb} {path}: {what} after {}",
            humantime::format_duration(args.timeout.unwrap_or_default())
        )));
    }
    let mut out = Printer::new();
    if global.json {
        let state = if entering { "entered" } else { "left" };
        out.json(&json!({ "path": path, "state": state, "members": args.members }))
            .map_err(write_failure)?;
    }
    Ok(OK)
}
