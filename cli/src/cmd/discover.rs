//! `zkr discover …`: service discovery with Curator's curator-x-discovery layout and JSON (the
//! core's [`ServiceDiscovery`]).
//!
//! `register` runs a command while an instance is registered (kept through reconnects and
//! session expiry, like `zkr member`; removed when the command exits); `list`, `get`, `pick`
//! read; `watch` follows a service's instances with a [`ServiceCache`] (JSON lines).

use std::collections::HashMap;

use serde_json::json;
use tokio::sync::mpsc;

use zkrecipes::discovery::{
    ProviderStrategy, ServiceCache, ServiceDiscovery, ServiceInstance, ServiceProvider,
    ServiceType, UriSpec,
};
use zkrecipes::nodes::PersistentNodeEventKind;

use crate::args::{
    DiscoverCommand, DiscoverGetArgs, DiscoverListArgs, DiscoverPickArgs, DiscoverRegisterArgs,
    DiscoverWatchArgs, Global,
};
use crate::child::{self, Signals, Spec};
use crate::connect;
use crate::exit::{signalled, Failure, Outcome, CONNECT, OK};
use crate::output::{write_failure, Printer};

pub async fn run(global: &Global, command: DiscoverCommand) -> Outcome {
    match command {
        DiscoverCommand::Register(a) => register(global, a).await,
        DiscoverCommand::List(a) => list(global, a).await,
        DiscoverCommand::Get(a) => get(global, a).await,
        DiscoverCommand::Pick(a) => pick(global, a).await,
        DiscoverCommand::Watch(a) => watch(global, a).await,
    }
}

fn usage(e: zkrecipes::Error) -> Failure {
    Failure::usage(e.message().to_string())
}

/// The instance `register` describes, checked before connecting.
fn instance(a: &DiscoverRegisterArgs) -> Result<ServiceInstance, Failure> {
    let mut i = ServiceInstance::new(a.name.clone());
    if let Some(id) = &a.id {
        i.id = id.clone();
    }
    i.address = a.address.clone();
    i.port = a.port;
    i.ssl_port = a.ssl_port;
    i.service_type = ServiceType::from_name(&a.service_type).map_err(usage)?;
    if let Some(p) = &a.payload {
        i.payload = Some(
            serde_json::from_str(p)
                .map_err(|e| Failure::usage(format!("--payload is not JSON: {e}")))?,
        );
    }
    i.payload_class = a.payload_class.clone();
    if let Some(t) = &a.uri_spec {
        i.uri_spec = Some(UriSpec::new(t).map_err(usage)?);
    }
    i.validate().map_err(usage)?;
    Ok(i)
}

async fn register(global: &Global, a: DiscoverRegisterArgs) -> Outcome {
    super::check_path(&a.base)?;
    let wanted = instance(&a)?;
    connect::check(global)?;
    let mut signals = Signals::install()?;
    let client = match super::connect_or_signal(global, &mut signals).await? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let what = format!("discover register {}/{}", a.base, a.name);
    let fail = |e| Failure::from_core(&what, e);
    let discovery = ServiceDiscovery::new(&client, &a.base).map_err(fail)?;
    let registered = tokio::select! {
        r = discovery.register(wanted) => r.map_err(fail),
        sig = signals.recv() => {
            let _ = discovery.close().await;
            connect::close(&client).await;
            return Ok(signalled(sig as i32));
        }
    };
    let registration = match registered {
        Ok(r) => r,
        Err(f) => {
            let _ = discovery.close().await;
            connect::close(&client).await;
            return Err(f);
        }
    };
    eprintln!("zkr: registered {}", registration.path());
    let (conflicts, mut conflict) = mpsc::unbounded_channel();
    registration.add_listener(move |e| match e.kind {
        PersistentNodeEventKind::Registered => eprintln!("zkr: registered {}", e.path),
        PersistentNodeEventKind::Unregistered => {
            eprintln!("zkr: {} is gone; registering again", e.path)
        }
        PersistentNodeEventKind::Conflict => {
            let _ = conflicts.send(format!("another session holds {}", e.path));
        }
    });
    let instance = registration.instance();
    let own = vec![
        ("ZKR_DISCOVERY_PATH", registration.path()),
        ("ZKR_DISCOVERY_ID", registration.node_name()),
        ("ZKR_DISCOVERY_URI", instance.build_uri(&HashMap::new())),
    ];
    let spec = Spec {
        argv: &a.run.command,
        env: super::command_env(global, &client, own),
        foreground: a.run.foreground,
    };
    let outcome = match child::spawn(spec) {
        Err(f) => Err(f),
        Ok(mut running) => {
            // Only a conflict ends the registration for good: everything else is repaired.
            let lost = async move {
                match conflict.recv().await {
                    Some(reason) => reason,
                    None => std::future::pending::<String>().await,
                }
            };
            let ended = child::supervise(&mut running, &mut signals, lost, a.run.grace).await;
            match ended.lost {
                Some(reason) if ended.stop_signal.is_none() => Err(Failure::lost(format!(
                    "{what}: {reason}; the command was stopped (exit code {})",
                    ended.code
                ))),
                _ => Ok(ended.code),
            }
        }
    };
    let _ = registration.unregister().await;
    let _ = discovery.close().await;
    connect::close(&client).await;
    outcome
}

/// One instance as a text line: `ID ADDRESS:PORT (SSL PORT) [disabled] URI`.
fn text(i: &ServiceInstance) -> String {
    let mut line = i.id.clone();
    if let Some(a) = &i.address {
        line.push(' ');
        line.push_str(a);
        if let Some(p) = i.port {
            line.push_str(&format!(":{p}"));
        }
    } else if let Some(p) = i.port {
        line.push_str(&format!(" :{p}"));
    }
    if let Some(p) = i.ssl_port {
        line.push_str(&format!(" (ssl {p})"));
    }
    if !i.enabled {
        line.push_str(" [disabled]");
    }
    let uri = i.build_uri(&HashMap::new());
    if !uri.is_empty() {
        line.push(' ');
        line.push_str(&uri);
    }
    line
}

fn print_instance(out: &mut Printer, json: bool, i: &ServiceInstance) -> Result<(), Failure> {
    if json {
        out.line(&String::from_utf8_lossy(&i.to_json(false)))
    } else {
        out.line(&text(i))
    }
    .map_err(write_failure)
}

async fn list(global: &Global, a: DiscoverListArgs) -> Outcome {
    super::check_path(&a.base)?;
    connect::check(global)?;
    let client = connect::connect(global).await?;
    let what = format!("discover list {}", a.base);
    let fail = |e| Failure::from_core(&what, e);
    let discovery = ServiceDiscovery::new(&client, &a.base).map_err(fail)?;
    let mut out = Printer::new();
    let result = match &a.name {
        None => match discovery.query_for_names().await {
            Ok(names) => names.iter().try_for_each(|n| {
                if global.json {
                    out.json(&json!({ "name": n })).map_err(write_failure)
                } else {
                    out.line(n).map_err(write_failure)
                }
            }),
            Err(e) => Err(fail(e)),
        },
        Some(name) => match discovery.query_for_instances(name).await {
            Ok(all) => all
                .iter()
                .try_for_each(|i| print_instance(&mut out, global.json, i)),
            Err(e) => Err(fail(e)),
        },
    };
    connect::close(&client).await;
    result.map(|()| OK)
}

async fn get(global: &Global, a: DiscoverGetArgs) -> Outcome {
    super::check_path(&a.base)?;
    connect::check(global)?;
    let client = connect::connect(global).await?;
    let what = format!("discover get {}/{}/{}", a.base, a.name, a.id);
    let fail = |e| Failure::from_core(&what, e);
    let discovery = ServiceDiscovery::new(&client, &a.base).map_err(fail)?;
    let found = discovery.query_for_instance(&a.name, &a.id).await;
    connect::close(&client).await;
    match found.map_err(fail)? {
        Some(i) => print_instance(&mut Printer::new(), global.json, &i).map(|()| OK),
        None => Err(Failure::usage(format!("{what}: no such instance"))),
    }
}

async fn pick(global: &Global, a: DiscoverPickArgs) -> Outcome {
    super::check_path(&a.base)?;
    let strategy = ProviderStrategy::from_name(&a.strategy).map_err(usage)?;
    connect::check(global)?;
    let client = connect::connect(global).await?;
    let what = format!("discover pick {}/{}", a.base, a.name);
    let fail = |e| Failure::from_core(&what, e);
    let discovery = ServiceDiscovery::new(&client, &a.base).map_err(fail)?;
    let provider = ServiceProvider::new(&discovery, &a.name, strategy).map_err(fail)?;
    let started = provider.start().await.map_err(fail);
    let picked = started.map(|()| provider.get_instance());
    provider.close();
    connect::close(&client).await;
    match picked? {
        Some(i) => print_instance(&mut Printer::new(), global.json, &i).map(|()| OK),
        None => Err(Failure::usage(format!(
            "{what}: no usable instance (none registered, or all disabled)"
        ))),
    }
}

async fn watch(global: &Global, a: DiscoverWatchArgs) -> Outcome {
    super::check_path(&a.base)?;
    connect::check(global)?;
    let client = connect::connect(global).await?;
    let what = format!("discover watch {}/{}", a.base, a.name);
    let fail = |e| Failure::from_core(&what, e);
    let discovery = ServiceDiscovery::new(&client, &a.base).map_err(fail)?;
    let cache = ServiceCache::new(&discovery, &a.name).map_err(fail)?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    cache.listen(false, move |e| {
        let instance = e
            .instance
            .as_ref()
            .and_then(|i| serde_json::from_slice::<serde_json::Value>(&i.to_json(false)).ok());
        let _ = tx.send(json!({
            "time": humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            "type": e.kind.name(),
            "path": e.path,
            "instance": instance,
            "error": e.error.as_ref().map(|e| e.message().to_string()),
            "resync": e.resync,
        }));
    });
    cache.start().await.map_err(fail)?;
    let mut out = Printer::new();
    while let Some(event) = rx.recv().await {
        out.json(&event).map_err(write_failure)?;
    }
    Err(Failure::new(
        CONNECT,
        format!("{what}: the client was closed"),
    ))
}
