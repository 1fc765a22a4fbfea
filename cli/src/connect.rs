//! The ZooKeeper client of one zkr run, from the global options.

use std::time::Duration;

use zkrecipes::{Client, ClientBuilder, ErrorKind, Pem, RetryPolicy, SaslOptions, TlsOptions};

use crate::args::Global;
use crate::exit::{describe, Failure, CONNECT};

/// Checks the global options that can be checked without a server (exit 1 before any wait).
pub fn check(global: &Global) -> Result<(), Failure> {
    zkrecipes::client::validate_connect_string(&global.server)
        .map_err(|e| Failure::usage(format!("--server: {}", e.message())))?;
    if let Some(auth) = &global.auth {
        if !auth.contains(':') {
            return Err(Failure::usage(
                "--auth (ZKR_AUTH): expected USER:PASSWORD for digest authentication",
            ));
        }
    }
    builder(global).map(drop)
}

fn builder(global: &Global) -> Result<ClientBuilder, Failure> {
    if global.session_timeout.is_zero() || global.connect_timeout.is_zero() {
        return Err(Failure::usage(
            "--session-timeout and --connect-timeout must be positive",
        ));
    }
    // A shell command should report a dead ensemble in about the connection timeout, not in
    // four of them (the core's default: 1 s base, 3 retries, each waiting for a connection).
    let retry = RetryPolicy::exponential_backoff(Duration::from_millis(200), 3);
    let mut b = ClientBuilder::new(global.server.clone())
        .session_timeout(global.session_timeout)
        .connection_timeout(global.connect_timeout)
        .retry_policy(retry);
    if let Some(ns) = global.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        b = b.namespace(ns);
    }
    if let Some(auth) = &global.auth {
        b = b.auth("digest", auth.as_bytes());
    }
    if let Some(tls) = tls_options(global)? {
        b = b.tls(tls);
    }
    if let Some(user) = &global.sasl_user {
        let password = sasl_password(global)?;
        let sasl = SaslOptions::new(&global.sasl_mechanism, user.clone(), password)
            .map_err(|e| Failure::usage(format!("--sasl-mechanism: {}", e.message())))?;
        b = b.sasl(sasl);
    } else if global.sasl_password_file.is_some() {
        return Err(Failure::usage(
            "--sasl-password-file (ZKR_SASL_PASSWORD_FILE) needs --sasl-user (ZKR_SASL_USER)",
        ));
    }
    Ok(b)
}

/// TLS from the `--tls*` options (each PEM option a file or PEM text; the key's text only from
/// `ZKR_TLS_KEY`), if any asks for it.
fn tls_options(global: &Global) -> Result<Option<TlsOptions>, Failure> {
    let wanted = global.tls
        || global.tls_ca.is_some()
        || global.tls_cert.is_some()
        || global.tls_no_verify_hostname;
    if !wanted {
        return Ok(None);
    }
    let mut tls = TlsOptions::new().verify_hostname(!global.tls_no_verify_hostname);
    if let Some(ca) = &global.tls_ca {
        tls = tls.ca(Pem::from_arg(ca.clone()));
    }
    if let (Some(cert), Some(key)) = (&global.tls_cert, &global.tls_key) {
        let key_pem = Pem::from_arg(key.clone());
        // Command lines are visible to every user of the machine (ps, /proc/*/cmdline): a key's
        // text is taken from the environment only. A value equal to ZKR_TLS_KEY came from there
        // (clap reads it when --tls-key is absent).
        let from_env = std::env::var("ZKR_TLS_KEY").is_ok_and(|env| env == *key);
        if matches!(key_pem, Pem::Text(_)) && !from_env {
            return Err(Failure::usage(
                "--tls-key takes a file path, not the key's PEM text: a command line is visible to every user of the machine; put the key in a file (readable by you alone), or its text in ZKR_TLS_KEY",
            ));
        }
        tls = tls.identity(Pem::from_arg(cert.clone()), key_pem);
    }
    Ok(Some(tls))
}

/// The SASL password: `ZKR_SASL_PASSWORD`, or the first line of `--sasl-password-file`.
fn sasl_password(global: &Global) -> Result<String, Failure> {
    if let Some(file) = &global.sasl_password_file {
        let text = std::fs::read_to_string(file).map_err(|e| {
            Failure::usage(format!(
                "--sasl-password-file: cannot read {}: {e}",
                file.display()
            ))
        })?;
        let password = text.lines().next().unwrap_or_default();
        if password.is_empty() {
            // Else the server's "wrong password" would be the first word of it.
            return Err(Failure::usage(format!(
                "--sasl-password-file: {} is empty (the password is its first line)",
                file.display()
            )));
        }
        return Ok(password.to_string());
    }
    std::env::var("ZKR_SASL_PASSWORD").map_err(|_| {
        Failure::usage(
            "--sasl-user needs a password: set ZKR_SASL_PASSWORD or --sasl-password-file (never on the command line)",
        )
    })
}

/// Connects: exit 1 for bad options, 2 when no session could be had.
pub async fn connect(global: &Global) -> Result<Client, Failure> {
    builder(global)?
        .connect()
        .await
        .map_err(|e| match e.kind() {
            ErrorKind::InvalidArgument => Failure::usage(describe(&e)),
            // The core's message names the server (and the timeout) already.
            ErrorKind::Timeout | ErrorKind::AuthFailed => {
                Failure::new(CONNECT, e.message().to_string())
            }
            _ => Failure::new(
                CONNECT,
                format!(
                    "could not connect to ZooKeeper at {}: {}",
                    global.server,
                    describe(&e)
                ),
            ),
        })
}

/// How long closing may take once the command is done (a blackholed connection would otherwise
/// hold zkr for the whole connection timeout; the session's nodes go when it expires).
pub const CLOSE_LIMIT: Duration = Duration::from_secs(2);

/// Closes the session (ephemeral nodes go at once), waiting at most [`CLOSE_LIMIT`]: a client
/// whose connection is gone would otherwise wait for the whole connection timeout.
pub async fn close(client: &Client) {
    let _ = tokio::time::timeout(CLOSE_LIMIT, client.close()).await;
}

/// The session id as ZooKeeper's tools print it.
pub fn session_hex(id: i64) -> String {
    format!("0x{:x}", id)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::Cli;
    use crate::exit::USAGE;

    /// An empty password file is a usage error naming it, not an empty password the server
    /// then refuses as wrong.
    #[test]
    fn an_empty_password_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("zkr-pw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("empty");
        std::fs::write(&file, "\n").unwrap();
        let cli = Cli::try_parse_from([
            "zkr",
            "--sasl-user",
            "alice",
            "--sasl-password-file",
            file.to_str().unwrap(),
            "counter",
            "/c",
            "get",
        ])
        .unwrap();
        let e = check(&cli.global).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(e.code, USAGE, "{}", e.message);
        assert!(e.message.contains("is empty"), "{}", e.message);
    }

    /// A private key's text on the command line is refused before anything connects, without
    /// repeating it (`-----BEGIN...` as its own argument, which clap used to refuse showing it,
    /// or after `=`); a path is taken.
    #[test]
    fn a_key_on_the_command_line_must_be_a_path() {
        let key = "-----BEGIN PRIVATE KEY-----\nSECRET-MARKER\n-----END PRIVATE KEY-----\n";
        // (ZKR_TLS_KEY is never set to this text in a test run: the value comes from argv.)
        let with_equals = format!("--tls-key={key}");
        for argv in [
            vec![
                "zkr",
                "--server",
                "127.0.0.1:1",
                "--tls-cert",
                "/c.pem",
                "--tls-key",
                key,
            ],
            vec![
                "zkr",
                "--server",
                "127.0.0.1:1",
                "--tls-cert",
                "/c.pem",
                &with_equals,
            ],
        ] {
            let cli = Cli::try_parse_from(argv.into_iter().chain(["counter", "/c", "get"]))
                .unwrap_or_else(|e| panic!("{}", e.kind()));
            let e = check(&cli.global).unwrap_err();
            assert_eq!(e.code, USAGE, "{}", e.message);
            assert!(
                e.message.contains("--tls-key takes a file path"),
                "{}",
                e.message
            );
            assert!(!e.message.contains("SECRET-MARKER"), "{}", e.message);
        }
        let mut cli = Cli::try_parse_from([
            "zkr",
            "--tls-cert",
            "/c.pem",
            "--tls-key",
            "/k.pem",
            "counter",
            "/c",
            "get",
        ])
        .unwrap();
        // Text without a -----BEGIN line is text too (a line break: no path has one).
        cli.global.tls_key = Some("Bag Attributes\nSECRET-MARKER".into());
        assert_eq!(check(&cli.global).unwrap_err().code, USAGE);
        cli.global.tls_key = Some("/etc/zk/client.key".into());
        check(&cli.global).unwrap();
    }
}
