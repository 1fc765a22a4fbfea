//! `zkr` against secured servers: the `--tls*` and `--sasl-*` options and their `ZKR_*`
//! defaults, and the exit codes and one-line messages of the hostile cases (2: could not
//! connect, with the TLS or SASL reason; 1: bad input, before any connection).

mod common;

use common::*;
use zkrecipes_testing::{ClientAuth, Security, ServerCert, TestingServer};

fn assert_fails(o: &std::process::Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "exit code; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("zkr: error: "), "{err:?}");
    assert!(err.contains(needle), "{needle:?} in {err:?}");
}

#[test]
fn tls_and_sasl_options_and_their_environment_defaults() {
    let server = TestingServer::start_secure(
        Security::new()
            .tls(ClientAuth::Need)
            .sasl_user("alice", "secret")
            .sasl_required(true),
    );
    let m = server.tls().unwrap();
    let secure = server.secure_connect_string().unwrap();
    let (ca, cert, key) = (
        m.ca.to_str().unwrap(),
        m.client_cert.to_str().unwrap(),
        m.client_key.to_str().unwrap(),
    );
    let o = run(zkr(&secure)
        .args(["--tls-ca", ca, "--tls-cert", cert, "--tls-key", key])
        .args(["--sasl-user", "alice"])
        .env("ZKR_SASL_PASSWORD", "secret")
        .args(["counter", "/c", "add", "2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    // The same from the environment, the password from a file.
    let pw = m.dir.join("sasl-password");
    std::fs::write(&pw, "secret\n").unwrap();
    let o = run(zkr(&secure)
        .env("ZKR_TLS_CA", ca)
        .env("ZKR_TLS_CERT", cert)
        .env("ZKR_TLS_KEY", key)
        .env("ZKR_SASL_USER", "alice")
        .args(["--sasl-password-file", pw.to_str().unwrap()])
        .args(["counter", "/c", "get"]));
    assert_eq!(stdout(&o), "2\n", "{}", stderr(&o));
    // The PEM texts themselves in the environment: the key's text is taken from ZKR_TLS_KEY
    // (only from there), the CA's and certificate's from theirs.
    let text = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
    let o = run(zkr(&secure)
        .env("ZKR_TLS_CA", text(&m.ca))
        .env("ZKR_TLS_CERT", text(&m.client_cert))
        .env("ZKR_TLS_KEY", text(&m.client_key))
        .env("ZKR_SASL_USER", "alice")
        .env("ZKR_SASL_PASSWORD", "secret")
        .args(["counter", "/c", "add", "1"]));
    assert_eq!(stdout(&o), "3\n", "{}", stderr(&o));
    // The key's text beside a certificate of another key is refused as such.
    let o = run(zkr(&secure)
        .env("ZKR_TLS_CA", ca)
        .env("ZKR_TLS_CERT", cert)
        .env("ZKR_TLS_KEY", text(&m.other_client_key))
        .args(["counter", "/c", "get"]));
    assert_fails(&o, 1, "does the key belong to the certificate");

    // Refusals: exit 2, the reason on one line.
    let o = run(zkr(&secure)
        .args(["--tls-ca", ca, "--tls-cert", cert, "--tls-key", key])
        .args(["--sasl-user", "alice"])
        .env("ZKR_SASL_PASSWORD", "wrong")
        .args(["counter", "/c", "get"]));
    assert_fails(&o, 2, "refused SASL DIGEST-MD5 authentication as \"alice\"");
    let o = run(zkr(&secure)
        .args(["--tls-ca", ca])
        .args(["--sasl-user", "alice"])
        .env("ZKR_SASL_PASSWORD", "secret")
        .args(["counter", "/c", "get"]));
    assert_fails(&o, 2, "client certificate");
    let o = run(zkr(&secure)
        .args([
            "--tls-ca",
            m.wrong_ca.to_str().unwrap(),
            "--tls-cert",
            cert,
            "--tls-key",
            key,
        ])
        .args(["counter", "/c", "get"]));
    assert_fails(&o, 2, "unknown issuer");
    let o = run(zkr(&secure).args(["--connect-timeout", "2s", "counter", "/c", "get"]));
    assert_fails(&o, 2, "speaks TLS");

    // Bad input: exit 1 before any connection.
    let o = run(zkr(&secure).args(["--tls-ca", "/nonexistent/ca.pem", "counter", "/c", "get"]));
    assert_fails(&o, 1, "cannot read the TLS CA file /nonexistent/ca.pem");
    let o = run(zkr(&secure)
        .args([
            "--tls-ca",
            ca,
            "--tls-cert",
            cert,
            "--tls-key",
            m.other_client_key.to_str().unwrap(),
        ])
        .args(["counter", "/c", "get"]));
    assert_fails(&o, 1, "does the key belong to the certificate");
    let o = run(zkr(&secure).args(["--sasl-user", "alice", "counter", "/c", "get"]));
    assert_fails(&o, 1, "ZKR_SASL_PASSWORD");
    let o = run(zkr(&secure).args(["--tls-cert", cert, "counter", "/c", "get"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn hostname_verification_can_be_turned_off() {
    let server = TestingServer::start_secure(
        Security::new()
            .tls(ClientAuth::None)
            .server_cert(ServerCert::WrongName),
    );
    let ca = server.tls().unwrap().ca.to_str().unwrap().to_string();
    let secure = server.secure_connect_string().unwrap();
    let o = run(zkr(&secure).args(["--tls-ca", &ca, "counter", "/c", "get"]));
    assert_fails(&o, 2, "does not name the host");
    let o = run(zkr(&secure).args([
        "--tls-ca",
        &ca,
        "--tls-no-verify-hostname",
        "counter",
        "/c",
        "get",
    ]));
    assert_eq!(stdout(&o), "0\n", "{}", stderr(&o));
}
