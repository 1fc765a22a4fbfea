//! `zkr member PATH [--id ID] [--data DATA] -- CMD…`
//!
//! Semantics (docs/CLI.md § member): the command runs while this process is a member of the
//! group at PATH (Curator's GroupMember: the ephemeral node PATH/ID holding DATA). The
//! registration is kept through reconnects, deletes and session expiry; it ends when the
//! command exits. If another live session holds the id, zkr exits 1 before running anything
//! and leaves that session's node alone; if that happens while the command runs (our session
//! expired and someone took the id), the command is stopped and zkr exits 4.

use tokio::sync::mpsc;

use zkrecipes::nodes::{GroupMember, PersistentNodeEventKind};

use crate::args::{Global, MemberArgs};
use crate::child::{self, Signals, Spec};
use crate::connect;
use crate::exit::{signalled, Failure, Outcome};

pub async fn run(global: &Global, args: MemberArgs) -> Outcome {
    super::check_path(&args.path)?;
    connect::check(global)?;
    let id = args.id.clone().unwrap_or_else(super::default_id);
    let mut signals = Signals::install()?;
    let client = match super::connect_or_signal(global, &mut signals).await? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let path = &args.path;
    let fail = |e| Failure::from_core(&format!("member {path}"), e);
    let data = args.data.clone().unwrap_or_default();
    let member = GroupMember::new(&client, path, &id, data.as_bytes()).map_err(fail)?;
    let (conflicts, mut conflict) = mpsc::unbounded_channel();
    member.node().add_listener(move |e| match e.kind {
        PersistentNodeEventKind::Registered => eprintln!("zkr: registered as {}", e.path),
        PersistentNodeEventKind::Unregistered => {
            eprintln!("zkr: {} is gone; registering again", e.path)
        }
        PersistentNodeEventKind::Conflict => {
            let _ = conflicts.send(e.path.clone());
        }
    });
    let outcome = tokio::select! {
        r = member.start() => r.map_err(fail),
        sig = signals.recv() => {
            let _ = member.close().await;
            connect::close(&client).await;
            return Ok(signalled(sig as i32));
        }
    };
    if let Err(f) = outcome {
        let _ = member.close().await;
        connect::close(&client).await;
        return Err(f);
    }
    let node = member.node().actual_path().unwrap_or_default();
    let own = vec![
        ("ZKR_MEMBER_PATH", path.clone()),
        ("ZKR_MEMBER_ID", id.clone()),
        ("ZKR_MEMBER_NODE", node),
    ];
    let spec = Spec {
        argv: &args.run.command,
        env: super::command_env(global, &client, own),
        foreground: args.run.foreground,
    };
    let outcome = match child::spawn(spec) {
        Err(f) => Err(f),
        Ok(mut running) => {
            let lost = async move {
                match conflict.recv().await {
                    Some(p) => format!("another session holds {p}"),
                    None => std::future::pending().await,
                }
            };
            let ended = child::supervise(&mut running, &mut signals, lost, args.run.grace).await;
            match ended.lost {
                Some(reason) if ended.stop_signal.is_none() => Err(Failure::lost(format!(
                    "left the group {path}: {reason}; the command was stopped (exit code {})",
                    ended.code
                ))),
                _ => Ok(ended.code),
            }
        }
    };
    let _ = member.close().await;
    connect::close(&client).await;
    outcome
}
