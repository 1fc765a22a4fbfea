//! `zkr queue put PATH DATA… [--distributed [--multi]]` and
//! `zkr queue take PATH [--timeout D] [--distributed [--lock-path L]]`.
//!
//! The simple queue by default (Curator's SimpleDistributedQueue, `qn-<seq>` raw bytes);
//! Curator's DistributedQueue (`queue-<seq>`, its item framing) with `--distributed`. A take
//! with a lock path completes the item only after it was written to stdout: a zkr that dies
//! before leaves it for another consumer. One that cannot write gives the item back: released
//! where it was with a lock path, put back at the tail (with its key) without one, and the
//! simple queue's offered again.

use std::io::Write;

use serde_json::json;
use tokio::sync::mpsc;

use zkrecipes::queue::{DistributedQueue, QueueOptions, SimpleDistributedQueue};
use zkrecipes::Client;

use crate::args::{Global, QueueCommand, QueuePutArgs, QueueTakeArgs};
use crate::child::Signals;
use crate::connect;
use crate::exit::{signalled, Failure, Outcome, OK};
use crate::output::{write_failure, Printer};

pub async fn run(global: &Global, command: QueueCommand) -> Outcome {
    let (path, lock) = match &command {
        QueueCommand::Put(a) => (a.path.as_str(), None),
        QueueCommand::Take(a) => (a.path.as_str(), a.lock_path.as_deref()),
    };
    super::check_group_path("queue", path)?;
    if let Some(lock) = lock {
        super::check_group_path("lock", lock)?;
    }
    connect::check(global)?;
    let mut signals = Signals::install()?;
    let client = match super::connect_or_signal(global, &mut signals).await? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let outcome = tokio::select! {
        o = async {
            match &command {
                QueueCommand::Put(a) => put(global, &client, a).await,
                QueueCommand::Take(a) => take(global, &client, a).await,
            }
        } => o,
        sig = signals.recv() => Ok(signalled(sig as i32)),
    };
    connect::close(&client).await;
    outcome
}

async fn put(global: &Global, client: &Client, args: &QueuePutArgs) -> Outcome {
    let path = &args.path;
    let fail = |e| Failure::from_core(&format!("queue put {path}"), e);
    let mut out = Printer::new();
    let mut print = |node: &str| {
        if global.json {
            out.json(&json!({ "path": path, "node": node }))
        } else {
            out.line(node)
        }
        .map_err(write_failure)
    };
    if !args.distributed {
        let q = SimpleDistributedQueue::new(client, path).map_err(fail)?;
        for d in &args.data {
            let node = q.offer(d.as_bytes()).await.map_err(fail)?;
            print(&node)?;
        }
        return Ok(OK);
    }
    let q = DistributedQueue::new(client, path, QueueOptions::default()).map_err(fail)?;
    // The put listener says which node each put made (it hears every completed put).
    let (tx, mut nodes) = mpsc::unbounded_channel();
    q.add_put_listener(move |e| {
        let _ = tx.send(e.node.clone());
    });
    let items: Vec<Vec<&[u8]>> = if args.multi {
        vec![args.data.iter().map(|d| d.as_bytes()).collect()]
    } else {
        args.data.iter().map(|d| vec![d.as_bytes()]).collect()
    };
    for messages in items {
        if args.multi {
            q.put_multi(&messages, None).await.map_err(fail)?;
        } else {
            q.put(messages[0], None).await.map_err(fail)?;
        }
        let node = nodes.recv().await.unwrap_or_default();
        print(&node)?;
    }
    Ok(OK)
}

async fn take(global: &Global, client: &Client, args: &QueueTakeArgs) -> Outcome {
    let path = &args.path;
    let fail = |e| Failure::from_core(&format!("queue take {path}"), e);
    let waited = || {
        Failure::timeout(format!(
            "queue take {path}: no item within {}",
            humantime::format_duration(args.timeout.unwrap_or_default())
        ))
    };
    if !args.distributed {
        let q = SimpleDistributedQueue::new(client, path).map_err(fail)?;
        let data = q
            .take(args.timeout)
            .await
            .map_err(fail)?
            .ok_or_else(waited)?;
        if let Err(e) = write_item(global, path, None, std::slice::from_ref(&data)) {
            // Not delivered: offered again (at the tail), handed to nobody, not lost.
            if let Err(back) = q.give_back(data).await {
                eprintln!("zkr: queue take {path}: the item could not be put back: {back}");
            }
            return Err(write_failure(e));
        }
        return Ok(OK);
    }
    let options = QueueOptions {
        lock_path: args.lock_path.clone(),
        ..QueueOptions::default()
    };
    let q = DistributedQueue::new(client, path, options).map_err(fail)?;
    let item = q
        .take(args.timeout)
        .await
        .map_err(fail)?
        .ok_or_else(waited)?;
    match write_item(global, path, Some(item.node()), item.messages()) {
        Ok(()) => {
            item.done().await.map_err(fail)?;
            Ok(OK)
        }
        Err(e) => {
            // Not delivered: given back for another consumer (where it was, with a lock path;
            // put back at the tail with its key without one, since the take removed it).
            if let Err(back) = item.give_back().await {
                eprintln!("zkr: queue take {path}: the item could not be given back: {back}");
            }
            Err(write_failure(e))
        }
    }
}

/// Writes an item: its messages as lines (raw bytes), or one JSON object.
fn write_item(
    global: &Global,
    path: &str,
    node: Option<&str>,
    messages: &[Vec<u8>],
) -> std::io::Result<()> {
    if global.json {
        let texts: Vec<String> = messages
            .iter()
            .map(|m| String::from_utf8_lossy(m).into_owned())
            .collect();
        let mut v = json!({ "path": path, "data": texts.first().cloned().unwrap_or_default() });
        if let Some(node) = node {
            v["node"] = json!(node);
        }
        if messages.len() != 1 {
            v["messages"] = json!(texts);
        }
        return Printer::new().json(&v);
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for m in messages {
        out.write_all(m)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
