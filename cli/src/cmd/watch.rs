//! `zkr watch PATH [--recursive]`: changes as JSON lines.
//!
//! The core does not expose persistent watches yet (`Client::add_watch` is planned), so this is
//! built on one-shot watches, each re-armed after it fires: an exists watch per node (created,
//! deleted, data changed) and a children watch per node (children changed). With --recursive,
//! descendants are discovered from the children lists, and their creation and deletion are
//! reported from the difference between two lists. The gap this leaves: changes made while a
//! watch is re-armed are folded (two quick writes can give one `data_changed`; a child created
//! and deleted in between is not seen). A persistent recursive watch will close it.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use zkrecipes::client::NodeEventKind;
use zkrecipes::{path, Client, Error};

use crate::args::{Global, WatchArgs};
use crate::connect;
use crate::exit::{Failure, Outcome, CONNECT};
use crate::output::{write_failure, Printer};

struct Event {
    kind: &'static str,
    path: String,
}

struct Ctx {
    client: Client,
    root: String,
    recursive: bool,
    events: mpsc::UnboundedSender<Event>,
}

impl Ctx {
    fn emit(&self, kind: &'static str, path: &str) {
        let _ = self.events.send(Event {
            kind,
            path: path.to_string(),
        });
    }
}

pub async fn run(global: &Global, args: WatchArgs) -> Outcome {
    super::check_path(&args.path)?;
    connect::check(global)?;
    let client = connect::connect(global).await?;
    // Fail early on what would fail every watch (no authorization, say).
    if let Err(e) = client.exists(&args.path).await {
        return Err(Failure::from_core(&format!("watch {}", args.path), e));
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        root: args.path.clone(),
        recursive: args.recursive,
        events: tx,
    });
    spawn_node(&ctx, args.path.clone(), true);
    drop(ctx);
    let mut out = Printer::new();
    while let Some(event) = rx.recv().await {
        out.json(&json!({
            "time": humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            "type": event.kind,
            "path": event.path,
        }))
        .map_err(write_failure)?;
    }
    Err(Failure::new(
        CONNECT,
        format!("watch {}: the client was closed", args.path),
    ))
}

fn spawn_node(ctx: &Arc<Ctx>, node: String, initial: bool) {
    tokio::spawn(data_loop(ctx.clone(), node.clone()));
    tokio::spawn(child_loop(ctx.clone(), node, initial));
}

async fn backoff(tries: &mut u32) {
    let ms = 50u64 << (*tries).min(5);
    *tries += 1;
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Created / deleted / data changed of one node. For the root, creation and deletion come from
/// here; for descendants, from their parent's children lists (so they are not reported twice).
async fn data_loop(ctx: Arc<Ctx>, node: String) {
    let is_root = node == ctx.root;
    let mut tries = 0;
    loop {
        let (stat, watch) = match ctx.client.exists_watch(&node).await {
            Ok(w) => w,
            Err(Error::Closed(_)) => return,
            Err(_) => {
                backoff(&mut tries).await;
                continue;
            }
        };
        tries = 0;
        if stat.is_none() && !is_root {
            return;
        }
        let event = watch.changed().await;
        match event.kind {
            NodeEventKind::Created if is_root => ctx.emit("created", &node),
            NodeEventKind::Deleted if is_root => ctx.emit("deleted", &node),
            NodeEventKind::Deleted => return,
            NodeEventKind::DataChanged => ctx.emit("data_changed", &node),
            NodeEventKind::SessionEnded if is_root => ctx.emit("session_ended", &node),
            _ => {}
        }
    }
}

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Children changed of one node; with --recursive, starts following new children and reports
/// the children that came and went. `initial`: the children seen first are not "created".
fn child_loop(ctx: Arc<Ctx>, node: String, initial: bool) -> BoxFuture {
    Box::pin(async move {
        let is_root = node == ctx.root;
        let mut known: Option<BTreeSet<String>> =
            if initial { None } else { Some(BTreeSet::new()) };
        let mut tries = 0;
        loop {
            match ctx.client.get_children_watch(&node).await {
                Ok((children, watch)) => {
                    tries = 0;
                    if ctx.recursive {
                        let now: BTreeSet<String> = children.into_iter().collect();
                        let before = known.take();
                        for child in &now {
                            if before.as_ref().is_some_and(|b| b.contains(child)) {
                                continue;
                            }
                            let full = path::join(&node, child);
                            if before.is_some() {
                                ctx.emit("created", &full);
                            }
                            spawn_node(&ctx, full, before.is_none());
                        }
                        for gone in before.iter().flatten().filter(|c| !now.contains(*c)) {
                            ctx.emit("deleted", &path::join(&node, gone));
                        }
                        known = Some(now);
                    }
                    match watch.changed().await.kind {
                        NodeEventKind::ChildrenChanged => ctx.emit("children_changed", &node),
                        NodeEventKind::Deleted if !is_root => return,
                        _ => {}
                    }
                }
                Err(Error::NoNode(_)) if is_root => {
                    // Wait for the root to exist (its data loop reports the creation).
                    match ctx.client.exists_watch(&node).await {
                        Ok((None, watch)) => drop(watch.changed().await),
                        Ok((Some(_), _)) => {}
                        Err(Error::Closed(_)) => return,
                        Err(_) => backoff(&mut tries).await,
                    }
                    if ctx.recursive {
                        known = Some(BTreeSet::new());
                    }
                }
                Err(Error::NoNode(_)) | Err(Error::Closed(_)) => return,
                Err(_) => backoff(&mut tries).await,
            }
        }
    })
}
