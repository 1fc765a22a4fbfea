//! `zkr watch PATH [--recursive]`: changes as JSON lines, from one persistent watch (ZooKeeper
//! 3.6+'s addWatch, the core's [`PersistentWatcher`]) — recursive with `--recursive`.
//!
//! A persistent watch does not miss changes between two events (a one-shot watch, re-armed
//! after each event, folds them). A recursive watch reports no children changes, so with
//! `--recursive` a `children_changed` of the parent is printed after each `created` or
//! `deleted` of a node below PATH (what a plain watch on the parent would have said).
//! Connection events are printed too: changes made while disconnected are not reported by
//! ZooKeeper, and `reconnected` says so.
//!
//! `--exact` uses a stat-only cache instead (the core's [`Cache`]), whose resync after a
//! reconnect or a new session finds what the watch could not report: nothing is missed.

use serde_json::json;

use tokio::sync::mpsc;
use zkrecipes::cache::{Cache, CacheEventType, CacheOptions};
use zkrecipes::client::PersistentWatcher;
use zkrecipes::path;

use crate::args::{Global, WatchArgs};
use crate::connect;
use crate::exit::{Failure, Outcome, CONNECT};
use crate::output::{write_failure, Printer};

pub async fn run(global: &Global, args: WatchArgs) -> Outcome {
    super::check_path(&args.path)?;
    connect::check(global)?;
    let client = connect::connect(global).await?;
    let what = format!("watch {}", args.path);
    if args.exact {
        return exact(&client, &args, &what).await;
    }
    let watcher = PersistentWatcher::new(&client, &args.path, args.recursive)
        .map_err(|e| Failure::from_core(&what, e))?;
    let mut events = watcher.events();
    watcher
        .start()
        .await
        .map_err(|e| Failure::from_core(&what, e))?;
    let mut out = Printer::new();
    let mut print = |kind: &str, path: &str| {
        out.json(&json!({
            "time": now(),
            "type": kind,
            "path": path,
        }))
        .map_err(write_failure)
    };
    while let Some(event) = events.next().await {
        let kind = event.name().to_ascii_lowercase();
        let node = event.path().unwrap_or(&args.path);
        print(&kind, node)?;
        if args.recursive && node != args.path && matches!(kind.as_str(), "created" | "deleted") {
            print("children_changed", path::parent(node))?;
        }
    }
    Err(Failure::new(
        CONNECT,
        format!("{what}: the client was closed"),
    ))
}

fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// `--exact`: the changes a stat-only cache sees (no events for the initial load, one
/// `initialized` when it is complete).
async fn exact(client: &zkrecipes::Client, args: &WatchArgs, what: &str) -> Outcome {
    let opts = CacheOptions {
        data: false,
        max_depth: if args.recursive { None } else { Some(1) },
        initial_events: false,
        initialized_event: true,
        ..CacheOptions::default()
    };
    let cache = Cache::new(client, &args.path, opts).map_err(|e| Failure::from_core(what, e))?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    cache.listen(move |e| {
        let _ = tx.send(e.clone());
    });
    cache
        .start()
        .await
        .map_err(|e| Failure::from_core(what, e))?;
    let mut out = Printer::new();
    while let Some(e) = rx.recv().await {
        let kind = match e.kind {
            CacheEventType::Created => "created",
            CacheEventType::Changed => "data_changed",
            CacheEventType::Deleted => "deleted",
            CacheEventType::Resynced => "resynced",
            CacheEventType::Initialized => "initialized",
        };
        out.json(&json!({ "time": now(), "type": kind, "path": e.path, "resync": e.resync }))
            .map_err(write_failure)?;
    }
    Err(Failure::new(
        CONNECT,
        format!("{what}: the client was closed"),
    ))
}
