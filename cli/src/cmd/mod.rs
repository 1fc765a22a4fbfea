//! The commands. Each is a face over the core's public API: it checks its input, calls the
//! recipe, and maps what happened to output and an exit code.

pub mod barrier;
pub mod counter;
pub mod discover;
pub mod elect;
pub mod ensemble;
pub mod inspect;
pub mod lock;
pub mod member;
pub mod node;
pub mod observe;
pub mod queue;
pub mod watch;

use crate::exit::Failure;

/// Checks a recipe path before connecting (bad input is exit 1 without a server): a valid
/// absolute ZooKeeper path other than the root, whose children are everyone's.
pub fn check_group_path(what: &str, path: &str) -> Result<(), Failure> {
    check_path(path)?;
    if path == "/" {
        return Err(Failure::usage(format!(
            "{what} path must not be the root \"/\": its participants are created as children of it"
        )));
    }
    Ok(())
}

/// Checks a node path before connecting.
pub fn check_path(path: &str) -> Result<(), Failure> {
    zkrecipes::path::validate_path(path).map_err(|e| Failure::usage(e.message().to_string()))
}

/// `HOST:PID`, the default participant id and lock data: enough for `zkr inspect` to say who.
pub fn default_id() -> String {
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}:{}", std::process::id())
}

/// What a command run by `lock` or `elect` needs to reach the same ensemble with `zkr` (the
/// credentials are not passed on: they stay where the user put them).
pub fn ensemble_env(global: &crate::args::Global) -> Vec<(&'static str, String)> {
    let mut env = vec![("ZKR_SERVER", global.server.clone())];
    if let Some(ns) = &global.namespace {
        env.push(("ZKR_NAMESPACE", ns.clone()));
    }
    env
}

/// Connects, unless a stopping signal comes first: then `Ok(Err(exit code))`.
pub async fn connect_or_signal(
    global: &crate::args::Global,
    signals: &mut crate::child::Signals,
) -> Result<Result<zkrecipes::Client, i32>, Failure> {
    tokio::select! {
        c = crate::connect::connect(global) => c.map(Ok),
        sig = signals.recv() => Ok(Err(crate::exit::signalled(sig as i32))),
    }
}

/// A command's environment: `own` variables, then the session and what `zkr` inside it needs.
pub fn command_env(
    global: &crate::args::Global,
    client: &zkrecipes::Client,
    own: Vec<(&'static str, String)>,
) -> Vec<(&'static str, String)> {
    let mut env = own;
    env.push((
        "ZKR_SESSION_ID",
        crate::connect::session_hex(client.session_id()),
    ));
    env.extend(ensemble_env(global));
    env
}
