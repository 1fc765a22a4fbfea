//! `zkr counter PATH get|add N|set N|cas OLD NEW` (DistributedAtomicLong) and
//! `zkr shared-count PATH get|set N` (SharedCount).

use serde_json::json;

use zkrecipes::atomic::{DistributedAtomicInteger, DistributedAtomicLong, SharedCount};
use zkrecipes::Client;

use crate::args::{CounterArgs, CounterOp, Global, SharedCountArgs, SharedCountOp};
use crate::connect;
use crate::exit::{Failure, Outcome, CAS_FAILED, OK};
use crate::output::{write_failure, Printer};

pub async fn run_counter(global: &Global, args: CounterArgs) -> Outcome {
    super::check_group_path("counter", &args.path)?;
    connect::check(global)?;
    let client = connect::connect(global).await?;
    let outcome = counter(global, &client, &args).await;
    connect::close(&client).await;
    outcome
}

async fn counter(global: &Global, client: &Client, args: &CounterArgs) -> Outcome {
    let path = &args.path;
    let fail = |e| Failure::from_core(&format!("counter {path}"), e);
    let counter = DistributedAtomicLong::new(client, path, None, None).map_err(fail)?;
    let mut out = Printer::new();
    let mut print = |value: i64, extra: Option<(&str, bool)>| {
        if global.json {
            let mut v = json!({ "path": path, "value": value });
            if let Some((key, b)) = extra {
                v[key] = json!(b);
            }
            out.json(&v)
        } else {
            out.line(&value.to_string())
        }
        .map_err(write_failure)
    };
    match args.op {
        CounterOp::Get => {
            let v = counter.get().await.map_err(fail)?;
            print(v.post_value, None)?;
        }
        CounterOp::Add { delta } => {
            let v = counter.add_and_get(delta, None).await.map_err(fail)?;
            print(v, None)?;
        }
        CounterOp::Set { value } => {
            counter.force_set(value).await.map_err(fail)?;
            print(value, None)?;
        }
        CounterOp::Cas { old, new } => {
            let v = counter.compare_and_set(old, new).await.map_err(fail)?;
            if v.succeeded {
                print(new, Some(("succeeded", true)))?;
            } else {
                print(v.pre_value, Some(("succeeded", false)))?;
                // The value read equals OLD: the counter does not exist (it reads as 0, and a
                // compare-and-set never matches a missing node, as in Curator), or another
                // writer got in between the read and the versioned write.
                let why = if v.pre_value != old {
                    format!("counter {path} is {}, not {old}", v.pre_value)
                } else if client.exists(path).await.map_err(fail)?.is_none() {
                    format!(
                        "counter {path} does not exist yet (it reads as 0, but compare-and-set \
                         never matches a missing counter; set or add creates it)"
                    )
                } else {
                    format!("counter {path} changed while it was compared")
                };
                return Err(Failure::new(
                    CAS_FAILED,
                    format!("{why}: nothing was written"),
                ));
            }
        }
    }
    Ok(OK)
}

pub async fn run_shared_count(global: &Global, args: SharedCountArgs) -> Outcome {
    super::check_group_path("shared count", &args.path)?;
    connect::check(global)?;
    let client = connect::connect(global).await?;
    let outcome = shared_count(global, &client, &args).await;
    connect::close(&client).await;
    outcome
}

async fn shared_count(global: &Global, client: &Client, args: &SharedCountArgs) -> Outcome {
    let path = &args.path;
    let fail = |e| Failure::from_core(&format!("shared count {path}"), e);
    let value = match args.op {
        // A read that writes nothing: SharedCount's start() would create a missing node. The
        // 4-byte encoding is DistributedAtomicInteger's too, and it reads a missing node as 0.
        SharedCountOp::Get => {
            let reader = DistributedAtomicInteger::new(client, path, None, None).map_err(fail)?;
            reader.get().await.map_err(fail)?.post_value
        }
        SharedCountOp::Set { value } => {
            let count = SharedCount::new(client, path, value).map_err(fail)?;
            count.start().await.map_err(fail)?;
            let set = count.set_count(value).await;
            count.close();
            set.map_err(fail)?;
            value
        }
    };
    let mut out = Printer::new();
    if global.json {
        out.json(&json!({ "path": path, "value": value }))
    } else {
        out.line(&value.to_string())
    }
    .map_err(write_failure)?;
    Ok(OK)
}
