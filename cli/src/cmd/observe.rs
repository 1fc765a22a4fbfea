//! `zkr observe PATH [--until COND [--timeout D]]`: the leader of a latch or selector group and
//! every change, on the core's LeaderObserver (it never joins the group).

use serde_json::json;
use tokio::time::Instant;

use zkrecipes::leader::{LeaderObserver, Participant};

use crate::args::{Global, ObserveArgs, Until};
use crate::connect;
use crate::exit::{Failure, Outcome, CONNECT, OK};
use crate::output::{write_failure, Printer};

pub async fn run(global: &Global, args: ObserveArgs) -> Outcome {
    super::check_group_path("election", &args.path)?;
    connect::check(global)?;
    let client = connect::connect(global).await?;
    let outcome = observe(global, &client, &args).await;
    connect::close(&client).await;
    outcome
}

fn leader_id(p: &Participant) -> Option<&str> {
    p.is_leader.then_some(p.id.as_str())
}

fn matches(until: &Until, first: Option<&str>, now: Option<&str>, seen_change: bool) -> bool {
    match until {
        Until::Change => seen_change && first != now,
        Until::None => now.is_none(),
        Until::Any => now.is_some(),
        Until::Id(id) => now == Some(id.as_str()),
    }
}

async fn observe(global: &Global, client: &zkrecipes::Client, args: &ObserveArgs) -> Outcome {
    let path = &args.path;
    let mut observer = LeaderObserver::start(client, path)
        .await
        .map_err(|e| Failure::from_core(&format!("observe {path}"), e))?;
    let mut out = Printer::new();
    let deadline = args.timeout.map(|d| Instant::now() + d);
    let mut leader = observer.leader();
    let first = leader_id(&leader).map(str::to_string);
    let mut seen_change = false;
    loop {
        let now = leader_id(&leader);
        let printed = if global.json {
            out.json(&json!({
                "time": humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
                "path": path,
                "leader": now,
            }))
        } else {
            out.line(&format!("leader: {}", now.unwrap_or("(none)")))
        };
        printed.map_err(write_failure)?;
        if let Some(until) = &args.until {
            if matches(until, first.as_deref(), now, seen_change) {
                return Ok(OK);
            }
        }
        leader = tokio::select! {
            changed = observer.changed() => match changed {
                Some(p) => p,
                None => return Err(Failure::new(CONNECT, format!("observe {path}: the observer stopped"))),
            },
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                return Err(Failure::timeout(format!(
                    "observe {path}: --until {} not met within {}",
                    until_text(args.until.as_ref()),
                    humantime::format_duration(args.timeout.unwrap_or_default())
                )));
            }
        };
        seen_change = true;
    }
}

fn until_text(until: Option<&Until>) -> String {
    match until {
        Some(Until::Change) => "change".into(),
        Some(Until::None) => "none".into(),
        Some(Until::Any) => "any".into(),
        Some(Until::Id(id)) => format!("id={id}"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_conditions() {
        assert!(!matches(&Until::Change, Some("a"), Some("a"), false));
        assert!(matches(&Until::Change, Some("a"), Some("b"), true));
        assert!(matches(&Until::Change, Some("a"), None, true));
        assert!(matches(&Until::None, Some("a"), None, true));
        assert!(matches(&Until::Any, None, Some("x"), false));
        assert!(matches(&Until::Id("b".into()), None, Some("b"), true));
        assert!(!matches(&Until::Id("b".into()), None, Some("c"), true));
    }
}
