//! The testing kit's native half (feature `kit`): real ZooKeeper servers from the harness crate
//! (`zkrecipes_testing`), wrapped by `lib/testing.js` (`require('zkrecipes/testing')`).
//!
//! Every operation that waits (start, stop, restart, ...) is an [`AsyncTask`] on libuv's thread
//! pool: a Promise, never a blocked event loop. A harness failure (no ZooKeeper, a server that
//! does not start) rejects with the harness's message; a panic never crosses into JS.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Error, Status, Task};

use crate::error::{self, invalid};
use crate::{args, boundary};
use napi_derive::napi;
use zkrecipes_testing::{
    ClientAuth, FaultProxy, Security, ServerCert, TestingCluster, TestingServer,
    TestingServerHandle, TlsMaterial,
};

/// How a server or ensemble is secured (`TestingServer.start({ ... })`; the JS layer checks the
/// option names and types, this the values).
#[napi(object)]
pub struct SecurityOptions {
    /// `'none'`, `'want'` or `'need'`: TLS on a secure port too.
    pub tls: Option<String>,
    /// `'valid'`, `'expired'` or `'wrong-name'`.
    pub server_cert: Option<String>,
    /// SASL DIGEST-MD5 users: name -> password.
    pub sasl_users: Option<HashMap<String, String>>,
    /// Close sessions that did not authenticate with SASL.
    pub sasl_required: Option<bool>,
    /// x509 identities from client certificates.
    pub x509: Option<bool>,
    /// The superuser's name and password.
    pub superuser_name: Option<String>,
    /// The superuser's password.
    pub superuser_password: Option<String>,
    /// An ensemble's members cut off from their quorum serve reads (`readonlymode.enabled`).
    pub read_only_mode: Option<bool>,
}

/// The harness's [`Security`] from the JS options, or what is wrong with them.
fn security(options: Option<SecurityOptions>) -> Result<Security, String> {
    let Some(o) = options else {
        return Ok(Security::new());
    };
    let mut security = Security::new();
    if let Some(tls) = o.tls {
        let auth = ClientAuth::from_name(&tls)
            .ok_or_else(|| format!("tls must be 'none', 'want' or 'need', not {tls:?}"))?;
        security = security.tls(auth);
    }
    if let Some(cert) = o.server_cert {
        let cert = ServerCert::from_name(&cert).ok_or_else(|| {
            format!("serverCert must be 'valid', 'expired' or 'wrong-name', not {cert:?}")
        })?;
        security = security.server_cert(cert);
    }
    let mut users: Vec<(String, String)> = o.sasl_users.unwrap_or_default().into_iter().collect();
    users.sort();
    for (name, password) in users {
        security = security.sasl_user(name, password);
    }
    security = security
        .sasl_required(o.sasl_required.unwrap_or(false))
        .x509_identities(o.x509.unwrap_or(false))
        .read_only_mode(o.read_only_mode.unwrap_or(false));
    if let (Some(name), Some(password)) = (o.superuser_name, o.superuser_password) {
        security = security.superuser(name, password);
    }
    security.check()?;
    Ok(security)
}

/// What is wrong with these options for ZooKeeper (`''`: nothing), said before any server
/// starts.
#[napi]
pub fn check_security(env: Env, options: Option<SecurityOptions>) -> napi::Result<String> {
    boundary::sync(&env, || Ok(security(options).err().unwrap_or_default()))
}

/// What a started server or ensemble tells JS, as JSON: `{ connectString,
/// secureConnectString, tls }` (`tls`: the material's entries, or null).
fn started(
    connect_string: String,
    secure_connect_string: Option<String>,
    tls: Option<&TlsMaterial>,
) -> String {
    let quote = |s: &str| {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    };
    let tls = tls.map_or_else(
        || "null".to_owned(),
        |tls| {
            let fields: Vec<String> = tls
                .entries()
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
                .collect();
            format!("{{{}}}", fields.join(","))
        },
    );
    let secure = secure_connect_string.map_or_else(|| "null".to_owned(), |s| quote(&s));
    format!(
        "{{\"connectString\":{},\"secureConnectString\":{secure},\"tls\":{tls}}}",
        quote(&connect_string)
    )
}

/// Issues a client certificate (`CN=cn`) and key signed by the CA of the material in
/// `tlsDir`, each file written atomically; resolves to `''`.
#[napi]
pub fn issue_client(
    env: Env,
    tls_dir: String,
    cn: String,
    cert_path: String,
    key_path: String,
) -> napi::Result<AsyncTask<HarnessCall>> {
    boundary::sync(&env, || {
        Ok(call(move || {
            TlsMaterial::at(std::path::Path::new(&tls_dir)).issue_client(&cn, cert_path, key_path);
            Ok(String::new())
        }))
    })
}

/// The `x509` identity ZooKeeper records for a certificate whose subject is `CN=cn`.
#[napi]
pub fn x509_id_for_cn(env: Env, cn: String) -> napi::Result<String> {
    boundary::sync(&env, || Ok(TlsMaterial::x509_id_for_cn(&cn)))
}

type Work = Box<dyn FnOnce() -> Result<String, String> + Send>;

/// One blocking harness call, run off the JS thread; resolves to a string (`''` for none).
pub struct HarnessCall(Option<Work>);

impl Task for HarnessCall {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        let work = self
            .0
            .take()
            .ok_or_else(|| Error::new(Status::GenericFailure, "harness call ran twice"))?;
        match catch_unwind(AssertUnwindSafe(work)) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(message)) => Err(Error::new(Status::GenericFailure, message)),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "the ZooKeeper test harness failed".to_owned());
                Err(Error::new(Status::GenericFailure, message))
            }
        }
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }

    /// A call on a closed (or never started) server or cluster rejects with `ZKR_CLOSED`, as
    /// FaultProxy's controls and every closed zkrecipes object do.
    fn reject(&mut self, env: Env, err: Error) -> napi::Result<String> {
        if err.reason == CLOSED {
            return Err(error::from_core(
                &env,
                &zkrecipes::Error::Closed(zkrecipes::Detail::new(CLOSED)),
            ));
        }
        Err(err)
    }
}

fn call(work: impl FnOnce() -> Result<String, String> + Send + 'static) -> AsyncTask<HarnessCall> {
    AsyncTask::new(HarnessCall(Some(Box::new(work))))
}

const CLOSED: &str = "the testing server or cluster is closed (or not started)";

/// What a JS object holds: nothing until `start()`, nothing again after `close()`.
type Slot<T> = Arc<Mutex<Option<T>>>;

/// Runs `f` on what `slot` holds, off the JS thread; rejects if it is empty.
fn on_slot<S: Send + 'static>(
    slot: &Slot<S>,
    f: impl FnOnce(&S) -> Result<String, String> + Send + 'static,
) -> AsyncTask<HarnessCall> {
    let slot = slot.clone();
    call(move || {
        let guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        guard
            .as_ref()
            .map(f)
            .unwrap_or_else(|| Err(CLOSED.to_owned()))
    })
}

/// Empties `slot` and drops what it held (stopping servers), off the JS thread.
fn close_slot<S: Send + 'static>(slot: &Slot<S>) -> AsyncTask<HarnessCall> {
    let slot = slot.clone();
    call(move || {
        drop(slot.lock().unwrap_or_else(|e| e.into_inner()).take());
        Ok(String::new())
    })
}

/// Where ZooKeeper comes from (`ZKRECIPES_ZOOKEEPER_JAR`, `ZOOKEEPER_HOME`, Debian's package), or
/// an error naming what to install.
#[napi]
pub fn find_zookeeper(env: Env) -> napi::Result<String> {
    boundary::sync(&env, || {
        zkrecipes_testing::find_zookeeper()
            .map(|z| z.source)
            .map_err(|e| Error::new(Status::GenericFailure, e).into())
    })
}

/// One standalone server (wrapped by `TestingServer` in `lib/testing.js`).
#[napi]
pub struct NativeTestingServer {
    inner: Slot<TestingServer>,
}

impl NativeTestingServer {
    fn on(
        &self,
        f: impl FnOnce(&TestingServerHandle) -> String + Send + 'static,
    ) -> AsyncTask<HarnessCall> {
        on_slot(&self.inner, move |s: &TestingServer| Ok(f(s)))
    }
}

#[napi]
impl NativeTestingServer {
    /// A server not started yet: `start()` starts it.
    #[napi(constructor)]
    pub fn new(env: Env) -> napi::Result<Self> {
        boundary::sync(&env, || {
            Ok(Self {
                inner: Slot::default(),
            })
        })
    }

    /// Starts the server (the first time, secured as `security` says) or starts it again after
    /// `stop()`; resolves once it serves to JSON: `{ connectString, secureConnectString, tls }`.
    #[napi]
    pub fn start(
        &self,
        env: Env,
        security: Option<SecurityOptions>,
    ) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok({
                let inner = self.inner.clone();
                let security = self::security(security);
                call(move || {
                    let mut guard = inner.lock().unwrap_or_else(|e| e.into_inner());
                    match guard.as_ref() {
                        Some(server) => server.start(),
                        None => *guard = Some(TestingServer::start_secure(security?)),
                    }
                    Ok(guard
                        .as_ref()
                        .map(|s| started(s.connect_string(), s.secure_connect_string(), s.tls()))
                        .unwrap_or_default())
                })
            })
        })
    }

    /// Stops the server, keeping its data.
    #[napi]
    pub fn stop(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on(|s| {
                s.stop();
                String::new()
            }))
        })
    }

    /// Stops and starts the server (same port, same data).
    #[napi]
    pub fn restart(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on(|s| {
                s.restart();
                String::new()
            }))
        })
    }

    /// Kills the server (SIGKILL).
    #[napi]
    pub fn kill(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on(|s| {
                s.kill();
                String::new()
            }))
        })
    }

    /// Freezes the server (SIGSTOP); rejects if it is not running.
    #[napi]
    pub fn pause(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on(|s| {
                s.pause();
                String::new()
            }))
        })
    }

    /// Resumes a paused server (SIGCONT); rejects if it is not running.
    #[napi]
    pub fn resume(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on(|s| {
                s.resume();
                String::new()
            }))
        })
    }

    /// Whether the server is frozen by `pause()`: `'true'` or `'false'`.
    #[napi]
    pub fn is_paused(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || Ok(self.on(|s| s.is_paused().to_string())))
    }

    /// Whether the server process runs: `'true'` or `'false'`.
    #[napi]
    pub fn is_running(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || Ok(self.on(|s| s.is_running().to_string())))
    }

    /// A four-letter word's answer (`''` if the server does not answer).
    #[napi]
    pub fn four_letter(&self, env: Env, cmd: String) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || Ok(self.on(move |s| s.four_letter(&cmd))))
    }

    /// Stops the server and removes its directory; idempotent.
    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || Ok(close_slot(&self.inner)))
    }
}

/// An ensemble (wrapped by `TestingCluster` in `lib/testing.js`).
#[napi]
pub struct NativeTestingCluster {
    inner: Slot<TestingCluster>,
}

impl NativeTestingCluster {
    fn on(
        &self,
        f: impl FnOnce(&TestingCluster) -> Result<String, String> + Send + 'static,
    ) -> AsyncTask<HarnessCall> {
        on_slot(&self.inner, f)
    }

    fn on_server(
        &self,
        i: u32,
        f: impl FnOnce(&TestingServerHandle) -> String + Send + 'static,
    ) -> AsyncTask<HarnessCall> {
        self.on(move |c| {
            let i = i as usize;
            if i >= c.len() {
                return Err(format!("no server {i} in this cluster of {}", c.len()));
            }
            Ok(f(c.server(i)))
        })
    }
}

#[napi]
impl NativeTestingCluster {
    /// A cluster not started yet: `start(n)` starts it.
    #[napi(constructor)]
    pub fn new(env: Env) -> napi::Result<Self> {
        boundary::sync(&env, || {
            Ok(Self {
                inner: Slot::default(),
            })
        })
    }

    /// Starts `n` servers secured as `security` says; resolves once they serve and one leads
    /// to JSON: `{ connectString, secureConnectString, tls }`.
    #[napi]
    pub fn start(
        &self,
        env: Env,
        n: u32,
        security: Option<SecurityOptions>,
    ) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok({
                let inner = self.inner.clone();
                let security = self::security(security);
                call(move || {
                    if n == 0 {
                        return Err("a cluster needs at least one server".to_owned());
                    }
                    let cluster = TestingCluster::start_secure(n as usize, security?);
                    let json = started(
                        cluster.connect_string(),
                        cluster.secure_connect_string(),
                        cluster.tls(),
                    );
                    *inner.lock().unwrap_or_else(|e| e.into_inner()) = Some(cluster);
                    Ok(json)
                })
            })
        })
    }

    /// The index of the server that leads now (`'-1'`: none).
    #[napi]
    pub fn leader_index(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on(|c| Ok(c.leader_index().map_or(-1, |i| i as i64).to_string())))
        })
    }

    /// Waits up to `timeout_ms` for the running servers to elect a leader (`'-1'`: none).
    #[napi]
    pub fn wait_for_quorum(
        &self,
        env: Env,
        timeout_ms: u32,
    ) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok({
                let timeout = std::time::Duration::from_millis(timeout_ms.into());
                self.on(move |c| {
                    Ok(c.wait_for_quorum(timeout)
                        .map_or(-1, |i| i as i64)
                        .to_string())
                })
            })
        })
    }

    /// Server `i`'s connect string.
    #[napi]
    pub fn server_connect_string(&self, env: Env, i: u32) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || Ok(self.on_server(i, |s| s.connect_string())))
    }

    /// Server `i`'s secure connect string (`''` without TLS).
    #[napi]
    pub fn server_secure_connect_string(
        &self,
        env: Env,
        i: u32,
    ) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on_server(i, |s| s.secure_connect_string().unwrap_or_default()))
        })
    }

    /// Stops server `i`.
    #[napi]
    pub fn stop_server(&self, env: Env, i: u32) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on_server(i, |s| {
                s.stop();
                String::new()
            }))
        })
    }

    /// Starts server `i` again.
    #[napi]
    pub fn start_server(&self, env: Env, i: u32) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on_server(i, |s| {
                s.start();
                String::new()
            }))
        })
    }

    /// Restarts server `i`.
    #[napi]
    pub fn restart_server(&self, env: Env, i: u32) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on_server(i, |s| {
                s.restart();
                String::new()
            }))
        })
    }

    /// Kills server `i` (SIGKILL).
    #[napi]
    pub fn kill_server(&self, env: Env, i: u32) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on_server(i, |s| {
                s.kill();
                String::new()
            }))
        })
    }

    /// Freezes server `i` (SIGSTOP).
    #[napi]
    pub fn pause_server(&self, env: Env, i: u32) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on_server(i, |s| {
                s.pause();
                String::new()
            }))
        })
    }

    /// Resumes server `i` (SIGCONT).
    #[napi]
    pub fn resume_server(&self, env: Env, i: u32) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on_server(i, |s| {
                s.resume();
                String::new()
            }))
        })
    }

    /// Whether server `i` is frozen by `pauseServer`: `'true'` or `'false'`.
    #[napi]
    pub fn server_is_paused(&self, env: Env, i: u32) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(
            &env,
            || Ok(self.on_server(i, |s| s.is_paused().to_string())),
        )
    }

    /// Stops every server and removes the directory; idempotent.
    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || Ok(close_slot(&self.inner)))
    }
}

/// Whether `upstream` is `"host:port"`: a host and a port number.
fn check_upstream(upstream: &str) -> zkrecipes::Result<()> {
    let ok = upstream
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "FaultProxy.start: upstream must be \"host:port\" (one server), got {upstream:?}"
        )))
    }
}

/// A TCP proxy injecting network faults in front of one server (wrapped by `FaultProxy` in
/// `lib/testing.js`). Every control but `start`, `cut` and `close` is immediate; after
/// `close()` each throws `ZKR_CLOSED`.
#[napi]
pub struct NativeFaultProxy {
    inner: Slot<FaultProxy>,
}

impl NativeFaultProxy {
    /// Runs `f` on the proxy now, or fails with `ZKR_CLOSED`.
    fn now<T>(&self, f: impl FnOnce(&FaultProxy) -> T) -> zkrecipes::Result<T> {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().map(f).ok_or_else(|| {
            zkrecipes::Error::Closed(zkrecipes::Detail::new("the fault proxy is closed"))
        })
    }
}

#[napi]
impl NativeFaultProxy {
    /// A proxy not started yet: `start(upstream)` starts it.
    #[napi(constructor)]
    pub fn new(env: Env) -> napi::Result<Self> {
        boundary::sync(&env, || {
            Ok(Self {
                inner: Slot::default(),
            })
        })
    }

    /// Starts forwarding a free 127.0.0.1 port to `upstream` (`"host:port"`); resolves to the
    /// proxy's connect string. Throws `ZKR_INVALID_ARGUMENT` for an upstream that is not one.
    #[napi]
    pub fn start(&self, env: Env, upstream: String) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            check_upstream(&upstream)?;
            let inner = self.inner.clone();
            Ok(call(move || {
                let proxy = FaultProxy::start(&upstream);
                let connect_string = proxy.connect_string();
                *inner.lock().unwrap_or_else(|e| e.into_inner()) = Some(proxy);
                Ok(connect_string)
            }))
        })
    }

    /// Closes every connection (and new ones on accept); resolves once none is open.
    #[napi]
    pub fn cut(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            self.now(|_| ())?;
            Ok(on_slot(&self.inner, |p: &FaultProxy| {
                p.cut();
                Ok(String::new())
            }))
        })
    }

    /// Drops every byte both ways, connections kept open.
    #[napi]
    pub fn blackhole(&self, env: Env) -> napi::Result<()> {
        boundary::sync(&env, || Ok(self.now(FaultProxy::blackhole)?))
    }

    /// Forwards requests, drops replies.
    #[napi]
    pub fn drop_replies(&self, env: Env) -> napi::Result<()> {
        boundary::sync(&env, || Ok(self.now(FaultProxy::drop_replies)?))
    }

    /// Delays every chunk by `ms` milliseconds each way (finite, not negative).
    #[napi]
    pub fn delay(&self, env: Env, ms: f64) -> napi::Result<()> {
        boundary::sync(&env, || {
            let latency = args::duration("delay: ms", ms)?;
            Ok(self.now(|p| p.delay(latency))?)
        })
    }

    /// Delays every server-to-client chunk by `ms` milliseconds.
    #[napi]
    pub fn delay_replies(&self, env: Env, ms: f64) -> napi::Result<()> {
        boundary::sync(&env, || {
            let latency = args::duration("delayReplies: ms", ms)?;
            Ok(self.now(|p| p.delay_replies(latency))?)
        })
    }

    /// Forwards normally again.
    #[napi]
    pub fn restore(&self, env: Env) -> napi::Result<()> {
        boundary::sync(&env, || Ok(self.now(FaultProxy::restore)?))
    }

    /// Client connections open through the proxy now.
    #[napi]
    pub fn connections(&self, env: Env) -> napi::Result<u32> {
        boundary::sync(&env, || {
            Ok(self.now(|p| u32::try_from(p.connections()).unwrap_or(u32::MAX))?)
        })
    }

    /// Bytes delivered so far, both directions.
    #[napi]
    pub fn bytes_forwarded(&self, env: Env) -> napi::Result<f64> {
        boundary::sync(&env, || Ok(self.now(|p| p.bytes_forwarded() as f64)?))
    }

    /// Whether `close()` ran.
    #[napi]
    pub fn is_closed(&self, env: Env) -> napi::Result<bool> {
        boundary::sync(&env, || {
            Ok(self
                .inner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_none())
        })
    }

    /// Stops the proxy, closing every connection through it; idempotent.
    #[napi]
    pub fn close(&self, env: Env) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || Ok(close_slot(&self.inner)))
    }
}

// Dynamic ensembles (issue 32): a reconfigurable ensemble and the servers that join it.
#[napi]
impl NativeTestingCluster {
    /// Starts `n` members with `reconfigEnabled=true` and the digest superuser
    /// `user:password`; resolves as `start` does.
    #[napi]
    pub fn start_reconfigurable(
        &self,
        env: Env,
        n: u32,
        user: String,
        password: String,
    ) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok({
                let inner = self.inner.clone();
                call(move || {
                    if n == 0 {
                        return Err("a cluster needs at least one server".to_owned());
                    }
                    let security = Security::new().superuser(user, password);
                    let cluster = TestingCluster::start_reconfigurable(n as usize, security);
                    let json = started(cluster.connect_string(), None, None);
                    *inner.lock().unwrap_or_else(|e| e.into_inner()) = Some(cluster);
                    Ok(json)
                })
            })
        })
    }

    /// Starts a server synced with the ensemble, not yet a member; resolves to its index.
    #[napi]
    pub fn add_server(&self, env: Env, observer: bool) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok({
                let slot = self.inner.clone();
                call(move || {
                    let role = if observer {
                        zkrecipes_testing::ServerRole::Observer
                    } else {
                        zkrecipes_testing::ServerRole::Participant
                    };
                    let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
                    let cluster = guard.as_mut().ok_or_else(|| CLOSED.to_owned())?;
                    Ok(cluster.add_server(role).to_string())
                })
            })
        })
    }

    /// Server `i`'s `server.ID=...` line for `reconfig` (`''` outside a reconfigurable
    /// ensemble).
    #[napi]
    pub fn server_reconfig_spec(&self, env: Env, i: u32) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok(self.on_server(i, |s| s.reconfig_spec().unwrap_or_default()))
        })
    }

    /// Waits up to `timeout_ms` until the running members list exactly `ids` and one leads:
    /// `'true'` or `'false'`.
    #[napi]
    pub fn wait_for_members(
        &self,
        env: Env,
        ids: Vec<u32>,
        timeout_ms: u32,
    ) -> napi::Result<AsyncTask<HarnessCall>> {
        boundary::sync(&env, || {
            Ok({
                let timeout = std::time::Duration::from_millis(timeout_ms.into());
                let ids: Vec<u64> = ids.into_iter().map(u64::from).collect();
                self.on(move |c| Ok(c.wait_for_members(&ids, timeout).to_string()))
            })
        })
    }
}
