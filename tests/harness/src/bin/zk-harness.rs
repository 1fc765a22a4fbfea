//! `zk-harness`: real ZooKeeper servers for tests written in other languages (Python, Node, C).
//! Run `zk-harness help` for the usage; see tests/harness/README.md.

use std::fs;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use zkrecipes_testing::detached::{
    add_detached_member, attach, attach_member, launch_detached, member_record,
};
use zkrecipes_testing::{
    expire_session_id, ClientAuth, FaultProxy, Security, ServerCert, ServerRole,
    TestingServerHandle, TlsMaterial,
};

const USAGE: &str = "\
usage: zk-harness COMMAND --dir DIR [OPTIONS]

  start --dir DIR [--ensemble N] [--reconfigurable] [SECURITY...]
                                   start N servers (default 1: standalone) detached, record them
                                   in DIR/zk-harness.state, print the connect string (one line);
                                   secured servers: then KEY=VALUE lines (secure_connect_string,
                                   the PEM files), also in the state file
    --reconfigurable               a reconfigurable ensemble (even of 1): reconfigEnabled=true,
                                   members in a dynamic config file with their client addresses;
                                   a reconfig needs a superuser (--superuser) to authenticate as
    --tls none|want|need           TLS on a secure port too, asking clients for certificates so
    --server-cert valid|expired|wrong-name|ip-only
                                   what the TLS servers present (default valid)
    --sasl-user USER:PASSWORD      a SASL DIGEST-MD5 user (repeatable)
    --sasl-required                close sessions that did not authenticate with SASL
    --x509                         x509 identities from client certificates (implies --tls need)
    --superuser USER:PASSWORD      digest (and, with SASL, SASL) superuser
  add-server --dir DIR [--role participant|observer]
                                   start server N (the next index, 127.0.0.(N+1)) for a
                                   reconfigurable ensemble: the committed configuration plus
                                   itself as an observer, waited for until synced with the leader;
                                   print its member line for a reconfig to add (one line):
                                   server.ID=HOST:QUORUM:ELECTION:ROLE;HOST:PORT (default role
                                   participant); it is not a member until that reconfig
  issue-client --dir DIR --cn CN --cert FILE --key FILE
                                   issue a new client certificate (CN=CN) and key signed by the
                                   servers' CA, each file written atomically
  stop --dir DIR                   stop every server of DIR and wait until they are gone
  four-letter --dir DIR [--server I] CMD
                                   print server I's answer to CMD (srvr, cons, wchc, mntr...);
                                   nothing if it does not answer
  stop-server --dir DIR --server I   stop server I (SIGTERM, SIGKILL after 5 s)
  kill-server --dir DIR --server I   kill server I (SIGKILL)
  start-server --dir DIR --server I  start server I again (same port, same data)
  pause --dir DIR --server I         freeze server I (SIGSTOP)
  resume --dir DIR --server I        unfreeze server I (SIGCONT)
  expire --dir DIR --session-id HEX --password HEX
                                   expire a session server-side and wait until it is gone
  proxy --upstream HOST:PORT [--delay-us N]
                                   run a FaultProxy in front of HOST:PORT adding N microseconds
                                   each way (per chunk, order kept, nothing coalesced); prints
                                   its connect string and runs until its stdin is closed. Each
                                   stdin line is a control command answered by one stdout line
                                   (ok, a number, or error: ...): cut, blackhole, drop-replies,
                                   delay US, delay-replies US, restore (as FaultProxy's),
                                   connections, bytes (forwarded so far)

Servers are numbered from 0 (member id I+1); server I listens on 127.0.0.(I+1). Exit status: 0 on success,
1 on failure, 2 on bad usage.";

const STATE_FILE: &str = "zk-harness.state";

#[derive(Default)]
struct Args {
    command: String,
    dir: Option<PathBuf>,
    ensemble: Option<usize>,
    reconfigurable: bool,
    role: Option<ServerRole>,
    server: Option<usize>,
    session_id: Option<String>,
    password: Option<String>,
    upstream: Option<String>,
    delay_us: Option<usize>,
    security: Security,
    cn: Option<String>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    words: Vec<String>,
}

enum Failure {
    Usage(String),
    Error(String),
}

fn main() -> ExitCode {
    // Library panics carry the explanation; print just that.
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or(payload.downcast_ref::<String>().map(String::as_str));
        eprintln!("zk-harness: {}", message.unwrap_or("unexpected failure"));
    }));
    let args: Vec<String> = std::env::args().skip(1).collect();
    match std::panic::catch_unwind(|| parse(&args).and_then(|args| run(&args))) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(Failure::Usage(e))) => {
            eprintln!("zk-harness: {e}\n{USAGE}");
            ExitCode::from(2)
        }
        Ok(Err(Failure::Error(e))) => {
            eprintln!("zk-harness: {e}");
            ExitCode::FAILURE
        }
        Err(_) => ExitCode::FAILURE,
    }
}

fn parse(raw: &[String]) -> Result<Args, Failure> {
    let mut it = raw.iter();
    let mut args = Args {
        command: it.next().cloned().unwrap_or_default(),
        ..Args::default()
    };
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| Failure::Usage(format!("{arg} needs a value")))
        };
        let number = |v: String| {
            v.parse()
                .map_err(|_| Failure::Usage(format!("{arg}: not a number: {v}")))
        };
        let user = |v: String| match v.split_once(':') {
            Some((user, password)) if !user.is_empty() => {
                Ok((user.to_owned(), password.to_owned()))
            }
            _ => Err(Failure::Usage(format!(
                "{arg} takes USER:PASSWORD, not {v}"
            ))),
        };
        let security = std::mem::take(&mut args.security);
        match arg.as_str() {
            "--dir" => args.dir = Some(value()?.into()),
            "--ensemble" => args.ensemble = Some(number(value()?)?),
            "--server" => args.server = Some(number(value()?)?),
            "--session-id" => args.session_id = Some(value()?),
            "--password" => args.password = Some(value()?),
            "--upstream" => args.upstream = Some(value()?),
            "--delay-us" => args.delay_us = Some(number(value()?)?),
            "--cn" => args.cn = Some(value()?),
            "--role" => {
                let v = value()?;
                args.role = Some(ServerRole::from_name(&v).ok_or_else(|| {
                    Failure::Usage(format!("--role participant|observer, not {v}"))
                })?);
            }
            "--reconfigurable" => args.reconfigurable = true,
            "--cert" => args.cert = Some(value()?.into()),
            "--key" => args.key = Some(value()?.into()),
            "--tls" => {
                let v = value()?;
                let auth = ClientAuth::from_name(&v)
                    .ok_or_else(|| Failure::Usage(format!("--tls none|want|need, not {v}")))?;
                args.security = security.tls(auth);
                continue;
            }
            "--server-cert" => {
                let v = value()?;
                let cert = ServerCert::from_name(&v).ok_or_else(|| {
                    Failure::Usage(format!(
                        "--server-cert valid|expired|wrong-name|ip-only, not {v}"
                    ))
                })?;
                args.security = security.server_cert(cert);
                continue;
            }
            "--sasl-user" => {
                let (name, password) = user(value()?)?;
                args.security = security.sasl_user(name, password);
                continue;
            }
            "--superuser" => {
                let (name, password) = user(value()?)?;
                args.security = security.superuser(name, password);
                continue;
            }
            "--sasl-required" => {
                args.security = security.sasl_required(true);
                continue;
            }
            "--x509" => {
                args.security = security.x509_identities(true);
                continue;
            }
            option if option.starts_with("--") => {
                return Err(Failure::Usage(format!("unknown option {option}")))
            }
            word => args.words.push(word.to_owned()),
        }
        args.security = security;
    }
    Ok(args)
}

fn run(args: &Args) -> Result<(), Failure> {
    match args.command.as_str() {
        "" => return Err(Failure::Usage("missing command".into())),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            return Ok(());
        }
        "proxy" => return proxy(args),
        _ => {}
    }
    let dir = args
        .dir
        .as_deref()
        .ok_or_else(|| Failure::Usage("--dir DIR is required".into()))?;
    match args.command.as_str() {
        "start" => start(
            dir,
            args.ensemble.unwrap_or(1),
            args.reconfigurable,
            &args.security,
        ),
        "add-server" => {
            let mut servers = load(dir)?;
            let role = args.role.unwrap_or(ServerRole::Participant);
            let dir = &dir
                .canonicalize()
                .map_err(|e| Failure::Error(e.to_string()))?;
            let added = add_detached_member(dir, &servers, role).map_err(Failure::Error)?;
            let spec = added.reconfig_spec().expect("a member has a spec");
            servers.push(added);
            let state = read_state(dir)?;
            save(dir, &servers, &secured_state(&state))?;
            println!("{spec}");
            Ok(())
        }
        "issue-client" => {
            let required = |v: &Option<PathBuf>, name: &str| {
                v.clone()
                    .ok_or_else(|| Failure::Usage(format!("{name} FILE is required")))
            };
            let cn = args
                .cn
                .clone()
                .ok_or_else(|| Failure::Usage("--cn CN is required".into()))?;
            let (cert, key) = (
                required(&args.cert, "--cert")?,
                required(&args.key, "--key")?,
            );
            let state = read_state(dir)?;
            let tls_dir = state.get("tls_dir").ok_or_else(|| {
                Failure::Error(format!("the servers of {} have no TLS", dir.display()))
            })?;
            TlsMaterial::at(Path::new(tls_dir)).issue_client(&cn, cert, key);
            Ok(())
        }
        "stop" => {
            if !dir.join(STATE_FILE).exists() {
                eprintln!("zk-harness: nothing to stop in {}", dir.display());
                return Ok(());
            }
            let servers = load(dir)?;
            servers.iter().for_each(TestingServerHandle::stop);
            fs::remove_file(dir.join(STATE_FILE)).map_err(|e| Failure::Error(e.to_string()))
        }
        "four-letter" => {
            let [cmd] = args.words.as_slice() else {
                return Err(Failure::Usage("four-letter takes one command word".into()));
            };
            let servers = load(dir)?;
            print!(
                "{}",
                server(&servers, args.server.unwrap_or(0))?.four_letter(cmd)
            );
            Ok(())
        }
        "stop-server" | "kill-server" | "start-server" | "pause" | "resume" => {
            let index = args
                .server
                .ok_or_else(|| Failure::Usage("--server I is required".into()))?;
            let servers = load(dir)?;
            let server = server(&servers, index)?;
            match args.command.as_str() {
                "stop-server" => server.stop(),
                "kill-server" => server.kill(),
                "start-server" => server.start(),
                "pause" => server.pause(),
                _ => server.resume(),
            }
            let state = read_state(dir)?;
            save(dir, &servers, &secured_state(&state))
        }
        "expire" => {
            let required = |v: &Option<String>, name: &str| {
                v.clone()
                    .ok_or_else(|| Failure::Usage(format!("{name} HEX is required")))
            };
            let not_hex =
                |name: &str, v: &str| Failure::Usage(format!("{name}: not hexadecimal: {v}"));
            let id = required(&args.session_id, "--session-id")?;
            let id = u64::from_str_radix(id.trim_start_matches("0x"), 16)
                .map_err(|_| not_hex("--session-id", &id))?;
            let password = required(&args.password, "--password")?;
            let password = decode_hex(&password).ok_or_else(|| not_hex("--password", &password))?;
            expire_session_id(&connect_string(&load(dir)?), id as i64, &password);
            Ok(())
        }
        other => Err(Failure::Usage(format!("unknown command {other}"))),
    }
}

fn start(dir: &Path, n: usize, reconfigurable: bool, security: &Security) -> Result<(), Failure> {
    if n == 0 {
        return Err(Failure::Usage("--ensemble must be at least 1".into()));
    }
    let error = |e: std::io::Error| Failure::Error(format!("{}: {e}", dir.display()));
    fs::create_dir_all(dir).map_err(error)?;
    let dir = &dir.canonicalize().map_err(error)?;
    if load(dir).is_ok_and(|servers| servers.iter().any(TestingServerHandle::is_running)) {
        return Err(Failure::Error(format!(
            "servers of {0} are running; run `zk-harness stop --dir {0}` first",
            dir.display()
        )));
    }
    let (servers, tls) = launch_detached(dir, n, security, reconfigurable);
    let secured = secured_lines(&servers, tls.as_ref());
    save(dir, &servers, &secured)?;
    println!("{}", connect_string(&servers));
    print!("{secured}");
    Ok(())
}

/// The `KEY=VALUE` lines of a secured start: the secure connect string and every PEM file.
fn secured_lines(servers: &[TestingServerHandle], tls: Option<&TlsMaterial>) -> String {
    let Some(tls) = tls else {
        return String::new();
    };
    let secure: Vec<String> = servers
        .iter()
        .filter_map(TestingServerHandle::secure_connect_string)
        .collect();
    let mut lines = format!("secure_connect_string={}\n", secure.join(","));
    for (key, value) in tls.entries() {
        let key = if key == "dir" {
            "tls_dir".to_owned()
        } else {
            key
        };
        lines += &format!("{key}={value}\n");
    }
    lines
}

/// `zk-harness proxy`: serves until stdin reaches end of file (the caller closed it or died).
fn proxy(args: &Args) -> Result<(), Failure> {
    let upstream = args
        .upstream
        .as_deref()
        .ok_or_else(|| Failure::Usage("--upstream HOST:PORT is required".into()))?;
    let proxy = FaultProxy::start(upstream);
    if let Some(us) = args.delay_us {
        proxy.delay(std::time::Duration::from_micros(us as u64));
    }
    println!("{}", proxy.connect_string());
    std::io::Write::flush(&mut std::io::stdout()).map_err(|e| Failure::Error(e.to_string()))?;
    // One control command per line on stdin, one answer line on stdout, until stdin closes.
    for line in std::io::BufRead::lines(std::io::stdin().lock()).map_while(Result::ok) {
        println!("{}", proxy_command(&proxy, line.trim()));
        std::io::Write::flush(&mut std::io::stdout()).map_err(|e| Failure::Error(e.to_string()))?;
    }
    drop(proxy);
    Ok(())
}

/// Runs one `zk-harness proxy` control command; its answer line (`ok`, a number, or
/// `error: ...`).
fn proxy_command(proxy: &FaultProxy, command: &str) -> String {
    let mut words = command.split_whitespace();
    let (verb, arg) = (words.next().unwrap_or(""), words.next());
    let micros = || -> Result<std::time::Duration, String> {
        let us = arg.ok_or_else(|| format!("error: {verb} needs MICROSECONDS"))?;
        us.parse::<u64>()
            .map(std::time::Duration::from_micros)
            .map_err(|_| format!("error: {verb}: {us:?} is not a number of microseconds"))
    };
    let ok = || Ok("ok".to_owned());
    let r: Result<String, String> = match verb {
        "cut" => {
            proxy.cut();
            ok()
        }
        "blackhole" => {
            proxy.blackhole();
            ok()
        }
        "drop-replies" => {
            proxy.drop_replies();
            ok()
        }
        "delay" => micros().and_then(|d| {
            proxy.delay(d);
            ok()
        }),
        "delay-replies" => micros().and_then(|d| {
            proxy.delay_replies(d);
            ok()
        }),
        "restore" => {
            proxy.restore();
            ok()
        }
        "connections" => Ok(proxy.connections().to_string()),
        "bytes" => Ok(proxy.bytes_forwarded().to_string()),
        _ => Err(format!(
            "error: unknown command {command:?} (cut, blackhole, drop-replies, delay US, \
             delay-replies US, restore, connections, bytes)"
        )),
    };
    r.unwrap_or_else(|e| e)
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    let hex = hex.trim_start_matches("0x");
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

fn server(servers: &[TestingServerHandle], index: usize) -> Result<&TestingServerHandle, Failure> {
    servers
        .get(index)
        .ok_or_else(|| Failure::Usage(format!("no server {index} (there are {})", servers.len())))
}

fn connect_string(servers: &[TestingServerHandle]) -> String {
    servers
        .iter()
        .map(TestingServerHandle::connect_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Writes `DIR/zk-harness.state`: `key=value` lines, easy to read from any language; `secured`
/// are the lines of [`secured_lines`].
fn save(dir: &Path, servers: &[TestingServerHandle], secured: &str) -> Result<(), Failure> {
    let mut state = format!(
        "connect_string={}\nservers={}\n",
        connect_string(servers),
        servers.len()
    );
    for (i, s) in servers.iter().enumerate() {
        let (host, port, pid, dir) = (s.host(), s.port(), s.pid().unwrap_or(0), s.dir().display());
        let secure_port = s.secure_port().unwrap_or(0);
        state += &format!("server{i}_host={host}\nserver{i}_port={port}\nserver{i}_secure_port={secure_port}\nserver{i}_pid={pid}\nserver{i}_dir={dir}\n");
        if let Some(member) = member_record(s) {
            state += &format!("server{i}_member={member}\n");
        }
    }
    state += secured;
    let path = dir.join(STATE_FILE);
    fs::write(&path, state)
        .map_err(|e| Failure::Error(format!("cannot write {}: {e}", path.display())))
}

/// The lines of the state file that [`secured_lines`] wrote, in their order.
fn secured_state(state: &[(String, String)]) -> String {
    let start = state.iter().position(|(k, _)| k == "secure_connect_string");
    start.map_or_else(String::new, |start| {
        state[start..]
            .iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect()
    })
}

/// The `key=value` lines of `DIR/zk-harness.state`, in order.
fn read_state(dir: &Path) -> Result<Vec<(String, String)>, Failure> {
    let path = dir.join(STATE_FILE);
    let text = fs::read_to_string(&path).map_err(|e| {
        Failure::Error(format!(
            "{}: {e} (did `zk-harness start` run?)",
            path.display()
        ))
    })?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect())
}

trait Lookup {
    fn get(&self, key: &str) -> Option<&str>;
}

impl Lookup for Vec<(String, String)> {
    fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

fn load(dir: &Path) -> Result<Vec<TestingServerHandle>, Failure> {
    let path = dir.join(STATE_FILE);
    let bad = |what: &str| Failure::Error(format!("{}: {what}", path.display()));
    let state = read_state(dir)?;
    let get = |key: &str| state.get(key).ok_or_else(|| bad(&format!("no {key}")));
    let n: usize = get("servers")?.parse().map_err(|_| bad("bad servers"))?;
    (0..n)
        .map(|i| {
            let host: Ipv4Addr = get(&format!("server{i}_host"))?
                .parse()
                .map_err(|_| bad("bad host"))?;
            let port = get(&format!("server{i}_port"))?
                .parse()
                .map_err(|_| bad("bad port"))?;
            // Absent in state files of older versions: no TLS.
            let secure_port: u16 = state
                .get(&format!("server{i}_secure_port"))
                .unwrap_or("0")
                .parse()
                .map_err(|_| bad("bad secure port"))?;
            let pid = get(&format!("server{i}_pid"))?
                .parse()
                .map_err(|_| bad("bad pid"))?;
            let server_dir = get(&format!("server{i}_dir"))?.into();
            let secure_port = (secure_port != 0).then_some(secure_port);
            let server = attach(server_dir, n, i, host, port, secure_port, pid);
            match state.get(&format!("server{i}_member")) {
                // A member of a reconfigurable ensemble: QUORUM:ELECTION:ROLE.
                Some(record) => attach_member(server, record).ok_or_else(|| bad("bad member")),
                None => Ok(server),
            }
        })
        .collect()
}
