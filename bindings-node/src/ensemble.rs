//! Dynamic ensembles on a client (`getConfig`, `reconfig`, `currentConnectString`), for
//! `lib/client.js`.

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;
use zkrecipes::{EnsembleConfig, Reconfig};

use crate::boundary::{promise, sync};
use crate::client::NativeClient;
use crate::error::invalid;

/// One member (`EnsembleMember` in index.d.ts).
#[napi(object)]
pub struct EnsembleMemberJs {
    pub id: f64,
    pub host: String,
    pub quorum_port: u32,
    pub election_port: u32,
    /// `PARTICIPANT` or `OBSERVER`.
    pub role: String,
    pub client_host: Option<String>,
    pub client_port: Option<u32>,
    pub client_address: Option<String>,
    pub server_line: String,
}

/// A configuration; `version` in decimal (lib/client.js makes it a bigint).
#[napi(object)]
pub struct EnsembleConfigJs {
    pub members: Vec<EnsembleMemberJs>,
    pub version: String,
    pub connect_string: String,
    pub data: String,
}

fn to_js(config: EnsembleConfig) -> EnsembleConfigJs {
    let members = config
        .members
        .iter()
        .map(|m| EnsembleMemberJs {
            // A myid: exact as a JS number below 2^53.
            id: m.id as f64,
            host: m.host.clone(),
            quorum_port: m.quorum_port.into(),
            election_port: m.election_port.into(),
            role: m.role.name().to_string(),
            client_host: m.client_host.clone(),
            client_port: m.client_port.map(u32::from),
            client_address: m.client_address(),
            server_line: m.server_line(),
        })
        .collect();
    EnsembleConfigJs {
        members,
        version: config.version.to_string(),
        connect_string: config.connect_string(),
        data: config.data,
    }
}

#[napi]
impl NativeClient {
    /// The ensemble's configuration.
    #[napi]
    pub fn get_config<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise(env, || {
            let c = self.inner.clone();
            Ok(async move { c.get_config().await.map(to_js) })
        })
    }

    /// Changes the members: `newMembers` null for an incremental change; `fromConfig` a
    /// decimal version, or null for any.
    #[napi]
    pub fn reconfig<'env>(
        &self,
        env: &'env Env,
        joining: Vec<String>,
        leaving: Vec<u32>,
        new_members: Option<Vec<String>>,
        from_config: Option<String>,
    ) -> napi::Result<Object<'env>> {
        promise(env, || {
            let mut change = match new_members {
                None => Reconfig::incremental(),
                Some(m) if m.is_empty() => {
                    return Err(invalid(
                        "newMembers is empty: an ensemble needs members (omit it for an incremental change)",
                    )
                    .into())
                }
                Some(m) => Reconfig::new_members(m),
            };
            change = change
                .joining(joining)
                .leaving(leaving.into_iter().map(u64::from));
            if let Some(v) = from_config {
                let v: i64 = v.parse().map_err(|_| {
                    invalid(format!("fromConfig {v:?} is not a configuration version"))
                })?;
                if v < 0 {
                    return Err(invalid(format!(
                        "fromConfig is {v}: a configuration version (>= 0), or omit it for any"
                    ))
                    .into());
                }
                change = change.from_config(v);
            }
            let c = self.inner.clone();
            Ok(async move { c.reconfig(change).await.map(to_js) })
        })
    }

    /// The servers the client connects to now.
    #[napi(getter)]
    pub fn current_connect_string(&self, env: Env) -> napi::Result<String> {
        sync(&env, || Ok(self.inner.current_connect_string()))
    }
}
