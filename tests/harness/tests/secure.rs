//! Secured servers and ensembles, proven with ZooKeeper's own Java client (`ZooKeeperMain`, the
//! `zkCli` of the harness's ZooKeeper) and `openssl s_client`: TLS with client auth need, want
//! and none, hostile certificates, SASL DIGEST-MD5, SASL required, x509 identities, a 3-node TLS
//! ensemble, certificate issuing at test time and the `zk-harness` CLI. No sleeps: every wait
//! is on a process or a condition with a deadline.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes_testing::{
    zookeeper_install, ClientAuth, ClientIdentity, Security, ServerCert, TestingCluster,
    TestingServer, TlsMaterial, WRONG_SERVER_NAME,
};

/// How long one Java client run may take (a JVM start and a few requests on a busy machine).
const JAVA_DEADLINE: Duration = Duration::from_secs(90);

/// What a run of the Java client printed (stdout and stderr) and whether it exited with 0.
#[derive(Debug)]
struct Run {
    ok: bool,
    out: String,
}

impl Run {
    fn assert_ok(&self, what: &str) -> &Run {
        assert!(self.ok, "{what}: the Java client failed:\n{}", self.out);
        self
    }

    fn assert_refused(&self, what: &str, reason: &str) -> &Run {
        assert!(
            !self.ok && self.out.contains(reason),
            "{what}: expected a failure with {reason:?}:\n{}",
            self.out
        );
        self
    }

    fn assert_prints(&self, text: &str) -> &Run {
        assert!(
            self.out.contains(text),
            "expected {text:?} in the Java client's output:\n{}",
            self.out
        );
        self
    }

    /// The ACL lines of `getAcl` (`'scheme,'id` then `: perms`), with jute's CSV escapes
    /// (`%2C`, `%25`) decoded: `["x509:CN=zkr-client:cdrwa", ...]`.
    fn acl(&self) -> Vec<String> {
        let lines: Vec<&str> = self.out.lines().collect();
        lines
            .windows(2)
            .filter_map(|w| {
                let id = w[0].strip_prefix('\'')?;
                let (scheme, id) = id.split_once(",'")?;
                let perms = w[1].strip_prefix(": ")?;
                let id = id.replace("%2C", ",").replace("%25", "%");
                Some(format!("{scheme}:{id}:{perms}"))
            })
            .collect()
    }
}

/// ZooKeeper's Java command-line client with the system properties of a test.
#[derive(Clone, Debug, Default)]
struct JavaClient {
    props: Vec<String>,
}

impl JavaClient {
    fn plain() -> JavaClient {
        JavaClient::default()
    }

    /// Over TLS, trusting `ca`, presenting the PEM key store `keystore` (key + certificate) if
    /// given. These are the properties the README documents.
    fn tls(ca: &Path, keystore: Option<&Path>) -> JavaClient {
        let mut client = JavaClient::default()
            .prop("zookeeper.client.secure", "true")
            .prop(
                "zookeeper.clientCnxnSocket",
                "org.apache.zookeeper.ClientCnxnSocketNetty",
            )
            .prop("zookeeper.ssl.trustStore.location", ca.to_str().unwrap())
            .prop("zookeeper.ssl.trustStore.type", "PEM");
        if let Some(keystore) = keystore {
            client = client
                .prop(
                    "zookeeper.ssl.keyStore.location",
                    keystore.to_str().unwrap(),
                )
                .prop("zookeeper.ssl.keyStore.type", "PEM");
        }
        client
    }

    fn prop(mut self, key: &str, value: &str) -> JavaClient {
        self.props.push(format!("-D{key}={value}"));
        self
    }

    /// Authenticates with SASL DIGEST-MD5 as `user` (a client JAAS file written into `dir`).
    fn sasl(self, dir: &Path, user: &str, password: &str) -> JavaClient {
        let jaas = dir.join(format!("client-jaas-{user}-{:08x}.conf", fastrand::u32(..)));
        std::fs::write(
            &jaas,
            format!(
                "Client {{\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n    \
                 username=\"{user}\"\n    password=\"{password}\";\n}};\n"
            ),
        )
        .expect("write the client JAAS file");
        self.prop("java.security.auth.login.config", jaas.to_str().unwrap())
    }

    /// `ZooKeeperMain -server SERVER COMMAND...`: one command, then the JVM exits (0 on
    /// success, 1 if the command failed, e.g. with ConnectionLoss when the server refused the
    /// connection).
    fn run(&self, server: &str, command: &[&str]) -> Run {
        self.java(server, command, None)
    }

    /// `ZooKeeperMain -server SERVER` reading `script` (one command a line) from stdin: for
    /// commands that need the same session (`addauth` then `get`). The exit status is 0
    /// whatever the commands did: read the output.
    fn script(&self, server: &str, script: &str) -> Run {
        self.java(server, &[], Some(script))
    }

    fn java(&self, server: &str, command: &[&str], stdin: Option<&str>) -> Run {
        let zookeeper = zookeeper_install();
        let mut child = Command::new(&zookeeper.java)
            .args([
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Djava.net.preferIPv4Stack=true",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            ])
            .args(&self.props)
            .arg("-cp")
            .arg(&zookeeper.classpath)
            .arg("org.apache.zookeeper.ZooKeeperMain")
            .args(["-server", server, "-timeout", "20000"])
            .args(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run java");
        let mut input = child.stdin.take().expect("stdin");
        let script = stdin.unwrap_or_default().to_owned();
        let feeder = thread::spawn(move || {
            let _ = input.write_all(script.as_bytes());
        });
        let readers = [
            read_all(child.stdout.take().expect("stdout")),
            read_all(child.stderr.take().expect("stderr")),
        ];
        let deadline = Instant::now() + JAVA_DEADLINE;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for java") {
                break Some(status);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            thread::sleep(Duration::from_millis(20));
        };
        let _ = feeder.join();
        let out: String = readers
            .into_iter()
            .map(|r| r.join().expect("reader"))
            .collect::<Vec<_>>()
            .join("\n");
        let Some(status) = status else {
            panic!("the Java client did not finish within {JAVA_DEADLINE:?}:\n{out}");
        };
        Run {
            ok: status.success(),
            out,
        }
    }
}

fn read_all(mut from: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut text = String::new();
        let _ = from.read_to_string(&mut text);
        text
    })
}

/// `openssl s_client` against `address` trusting `ca` and checking the certificate for the IP
/// `ip`; with `-verify_return_error`, so a certificate it refuses fails the handshake. Sends
/// `srvr` once connected; returns (exit success, stdout and stderr).
fn s_client(
    address: &str,
    ca: &Path,
    ip: &str,
    identity: Option<(&Path, &Path)>,
) -> (bool, String) {
    let mut cmd = Command::new("openssl");
    cmd.args([
        "s_client",
        "-connect",
        address,
        "-verify_return_error",
        "-verify_ip",
        ip,
    ])
    .arg("-CAfile")
    .arg(ca);
    if let Some((cert, key)) = identity {
        cmd.arg("-cert").arg(cert).arg("-key").arg(key);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run openssl s_client (apt-get install openssl)");
    // The server answers `srvr` and closes the connection, which ends s_client; closing stdin
    // before the answer would end it early, so stdin stays open until it exits.
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"srvr").expect("write srvr");
    let readers = [
        read_all(child.stdout.take().expect("stdout")),
        read_all(child.stderr.take().expect("stderr")),
    ];
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for openssl") {
            break status;
        }
        assert!(Instant::now() < deadline, "openssl s_client hangs");
        thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let out = readers
        .into_iter()
        .map(|r| r.join().expect("reader"))
        .collect::<Vec<_>>()
        .join("\n");
    (status.success(), out)
}

fn tls_of(server: &TestingServer) -> &TlsMaterial {
    server.tls().expect("TLS material")
}

#[test]
fn tls_need_serves_valid_client_certificates_and_refuses_the_rest() {
    let server = TestingServer::start_secure(Security::new().tls(ClientAuth::Need));
    let tls = tls_of(&server);
    let secure = server.secure_connect_string().expect("a secure port");
    assert_eq!(
        secure,
        format!("127.0.0.1:{}", server.secure_port().unwrap())
    );
    assert_ne!(server.secure_port(), Some(server.port()));
    assert!(server.four_letter("srvr").contains("Mode: standalone"));

    // EC (PKCS#8), RSA and SEC1 identities: the Java client wants key + certificate in one
    // PEM file with a PKCS#8 key, which is what keystore() is.
    for which in [
        ClientIdentity::Client,
        ClientIdentity::Rsa,
        ClientIdentity::Sec1,
    ] {
        let path = format!("/{}", which.name());
        JavaClient::tls(&tls.ca, Some(&tls.keystore(which)))
            .run(&secure, &["create", &path, "data"])
            .assert_ok(which.name())
            .assert_prints(&format!("Created {path}"));
    }
    JavaClient::tls(&tls.ca, None)
        .run(&secure, &["create", "/no-cert", "data"])
        .assert_refused("no client certificate", "ConnectionLoss");
    JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::WrongCa)))
        .run(&secure, &["create", "/wrong-ca", "data"])
        .assert_refused("a certificate of another CA", "ConnectionLoss");
    JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::Expired)))
        .run(&secure, &["create", "/expired", "data"])
        .assert_refused("an expired certificate", "ConnectionLoss");
    // A client trusting only the wrong CA refuses the server.
    JavaClient::tls(&tls.wrong_ca, Some(&tls.keystore(ClientIdentity::Client)))
        .run(&secure, &["create", "/distrust", "data"])
        .assert_refused("a client trusting another CA", "ConnectionLoss");
    // The plaintext port still serves (the harness's own checks use it).
    JavaClient::plain()
        .run(&server.connect_string(), &["ls", "/"])
        .assert_ok("plaintext")
        .assert_prints("rsa-client");

    // The same, seen by OpenSSL: each key format (the PKCS#1 and SEC1 files themselves) is
    // accepted and the connection then answers a four-letter word; the hostile ones are not.
    for which in [
        ClientIdentity::Client,
        ClientIdentity::Rsa,
        ClientIdentity::Sec1,
    ] {
        let (ok, out) = s_client(
            &secure,
            &tls.ca,
            "127.0.0.1",
            Some((tls.cert(which), tls.key(which))),
        );
        assert!(ok && out.contains("Zookeeper version"), "{which:?}: {out}");
    }
    for which in [ClientIdentity::Expired, ClientIdentity::WrongCa] {
        let (_, out) = s_client(
            &secure,
            &tls.ca,
            "127.0.0.1",
            Some((tls.cert(which), tls.key(which))),
        );
        assert!(
            !out.contains("Zookeeper version"),
            "{which:?} was served: {out}"
        );
    }
}

#[test]
fn tls_want_serves_clients_with_or_without_a_certificate_but_not_a_bad_one() {
    let server = TestingServer::start_secure(Security::new().tls(ClientAuth::Want));
    let tls = tls_of(&server);
    let secure = server.secure_connect_string().unwrap();
    JavaClient::tls(&tls.ca, None)
        .run(&secure, &["create", "/anonymous", "a"])
        .assert_ok("want, no certificate")
        .assert_prints("Created /anonymous");
    JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::Client)))
        .run(&secure, &["create", "/mine", "m", "auth::cdrwa"])
        .assert_ok("want, a valid certificate");
    let acl = JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::Client)))
        .run(&secure, &["getAcl", "/mine"])
        .assert_ok("getAcl")
        .acl();
    assert_eq!(acl, vec!["x509:CN=zkr-client:cdrwa".to_owned()]);
    // A certificate the server does not trust fails the handshake, as with `need`...
    JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::Expired)))
        .run(&secure, &["create", "/expired", "e"])
        .assert_refused("want, an expired certificate", "ConnectionLoss");
    let wrong = (
        tls.cert(ClientIdentity::WrongCa),
        tls.key(ClientIdentity::WrongCa),
    );
    let (_, out) = s_client(&secure, &tls.ca, "127.0.0.1", Some(wrong));
    assert!(
        !out.contains("Zookeeper version"),
        "want served a wrong-CA certificate: {out}"
    );
    // ... but Java's client presents no certificate whose issuer the server did not list as
    // acceptable: with the wrong-CA one it is served as a client without a certificate, with
    // no x509 identity to own a node.
    let java_wrong = JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::WrongCa)));
    java_wrong
        .run(&secure, &["create", "/wrong-ca", "w"])
        .assert_ok("want, Java with a wrong-CA certificate");
    java_wrong
        .run(&secure, &["create", "/wrong-ca-owned", "w", "auth::cdrwa"])
        .assert_refused("want, a wrong-CA certificate owning a node", "InvalidACL");
}

#[test]
fn tls_without_client_auth_serves_clients_without_certificates() {
    let server = TestingServer::start_secure(Security::new().tls(ClientAuth::None));
    let tls = tls_of(&server);
    assert_eq!(server.security().tls, Some(ClientAuth::None));
    JavaClient::tls(&tls.ca, None)
        .run(
            &server.secure_connect_string().unwrap(),
            &["create", "/open", "o"],
        )
        .assert_ok("client auth none")
        .assert_prints("Created /open");
    // Over the secure port only TLS is spoken.
    JavaClient::plain()
        .run(
            &server.secure_connect_string().unwrap(),
            &["create", "/plain", "p"],
        )
        .assert_refused("plaintext on the secure port", "ConnectionLoss");
}

#[test]
fn expired_and_wrongly_named_server_certificates_are_refused_by_verifying_clients() {
    let expired = TestingServer::start_secure(
        Security::new()
            .tls(ClientAuth::None)
            .server_cert(ServerCert::Expired),
    );
    let wrong_name = TestingServer::start_secure(
        Security::new()
            .tls(ClientAuth::None)
            .server_cert(ServerCert::WrongName),
    );
    let (expired_tls, wrong_tls) = (tls_of(&expired), tls_of(&wrong_name));
    let (expired_at, wrong_at) = (
        expired.secure_connect_string().unwrap(),
        wrong_name.secure_connect_string().unwrap(),
    );

    JavaClient::tls(&expired_tls.ca, None)
        .run(&expired_at, &["ls", "/"])
        .assert_refused("an expired server certificate", "ConnectionLoss");
    JavaClient::tls(&wrong_tls.ca, None)
        .run(&wrong_at, &["ls", "/"])
        .assert_refused("a server certificate for another name", "ConnectionLoss");
    // The name is its only fault: without host name verification the client accepts it.
    JavaClient::tls(&wrong_tls.ca, None)
        .prop("zookeeper.ssl.hostnameVerification", "false")
        .run(&wrong_at, &["ls", "/"])
        .assert_ok("no host name verification");

    let (ok, out) = s_client(&expired_at, &expired_tls.ca, "127.0.0.1", None);
    assert!(!ok && out.contains("certificate has expired"), "{out}");
    let (ok, out) = s_client(&wrong_at, &wrong_tls.ca, "127.0.0.1", None);
    assert!(!ok && out.contains("IP address mismatch"), "{out}");
    let pem = TlsMaterial::read(wrong_tls.server_cert(0));
    let text = openssl_text(&pem);
    assert!(text.contains(&format!("DNS:{WRONG_SERVER_NAME}")), "{text}");
    assert!(!text.contains("IP Address"), "{text}");
    let text = openssl_text(&TlsMaterial::read(tls_of(&expired).server_cert(0)));
    assert!(text.contains("IP Address:127.0.0.1"), "{text}");
}

/// `openssl x509 -text` of a PEM certificate.
fn openssl_text(pem: &str) -> String {
    let mut child = Command::new("openssl")
        .args(["x509", "-noout", "-text"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run openssl x509");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(pem.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("openssl x509");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn sasl_users_authenticate_and_a_wrong_password_fails() {
    let server = TestingServer::start_secure(
        Security::new()
            .tls(ClientAuth::None)
            .sasl_user("alice", "secret")
            .sasl_user("bob", "hunter2")
            .superuser("admin", "admin-secret"),
    );
    let tls = tls_of(&server);
    let dir = server.dir();
    let plain = server.connect_string();
    JavaClient::plain()
        .sasl(dir, "alice", "secret")
        .run(&plain, &["create", "/alice", "a", "sasl:alice:cdrwa"])
        .assert_ok("alice over plaintext");
    JavaClient::plain()
        .sasl(dir, "alice", "secret")
        .run(&plain, &["get", "/alice"])
        .assert_ok("alice reads her node");
    let acl = JavaClient::plain()
        .sasl(dir, "alice", "secret")
        .run(&plain, &["getAcl", "/alice"])
        .assert_ok("getAcl")
        .acl();
    assert_eq!(acl, vec!["sasl:alice:cdrwa".to_owned()]);
    JavaClient::plain()
        .sasl(dir, "bob", "hunter2")
        .run(&plain, &["get", "/alice"])
        .assert_refused("bob reads alice's node", "Insufficient permission");
    JavaClient::plain()
        .sasl(dir, "alice", "wrong")
        .run(&plain, &["get", "/alice"])
        .assert_refused("a wrong password", "AuthFailed");
    JavaClient::plain()
        .sasl(dir, "mallory", "mallory-secret")
        .run(&plain, &["get", "/alice"])
        .assert_refused("an unknown user", "AuthFailed");
    // Over TLS too.
    JavaClient::tls(&tls.ca, None)
        .sasl(dir, "alice", "secret")
        .run(&server.secure_connect_string().unwrap(), &["get", "/alice"])
        .assert_ok("alice over TLS");
    // The superuser, by SASL and by digest.
    JavaClient::plain()
        .sasl(dir, "admin", "admin-secret")
        .run(&plain, &["get", "/alice"])
        .assert_ok("the SASL superuser");
    JavaClient::plain()
        .script(
            &plain,
            "addauth digest admin:admin-secret\nget /alice\nquit\n",
        )
        .assert_prints("\na\n");
    JavaClient::plain()
        .script(&plain, "addauth digest admin:wrong\nget /alice\nquit\n")
        .assert_prints("Insufficient permission");
}

#[test]
fn sasl_required_closes_sessions_that_did_not_authenticate() {
    let server = TestingServer::start_secure(
        Security::new()
            .tls(ClientAuth::Need)
            .sasl_user("alice", "secret")
            .sasl_required(true),
    );
    let tls = tls_of(&server);
    let plain = server.connect_string();
    JavaClient::plain()
        .run(&plain, &["create", "/anonymous", "a"])
        .assert_refused(
            "no SASL",
            "Session closed because client failed to authenticate",
        );
    // A TLS client certificate (an x509 identity) does not count. Over TLS (Netty) the Java
    // client may see the server close the channel before it reads the close reason (an
    // EndOfStream, then ConnectionLoss): either way the session is refused, and the node is
    // checked below to be missing.
    let x509 = JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::Client))).run(
        &server.secure_connect_string().unwrap(),
        &["create", "/x509", "x"],
    );
    assert!(
        !x509.ok
            && (x509
                .out
                .contains("Session closed because client failed to authenticate")
                || x509
                    .out
                    .contains("KeeperErrorCode = ConnectionLoss for /x509")),
        "x509 only: expected the session to be refused:\n{}",
        x509.out
    );
    JavaClient::plain()
        .sasl(server.dir(), "alice", "secret")
        .run(&plain, &["create", "/alice", "a"])
        .assert_ok("alice")
        .assert_prints("Created /alice");
    JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::Client)))
        .sasl(server.dir(), "alice", "secret")
        .run(
            &server.secure_connect_string().unwrap(),
            &["create", "/both", "b"],
        )
        .assert_ok("alice over mutual TLS");
    // Nothing the refused sessions asked for was done.
    let ls = JavaClient::plain()
        .sasl(server.dir(), "alice", "secret")
        .run(&plain, &["ls", "/"]);
    ls.assert_ok("alice lists /");
    let root = ls
        .out
        .lines()
        .find(|l| l.starts_with('[') && l.contains("zookeeper"))
        .unwrap_or_else(|| panic!("no listing of / in:\n{}", ls.out));
    assert_eq!(root, "[alice, both, zookeeper]", "what the sessions made");
    // The harness's four-letter words still work.
    assert!(server.four_letter("srvr").contains("Mode: standalone"));
}

#[test]
fn x509_identities_make_creator_all_acl_mean_this_certificate() {
    let server = TestingServer::start_secure(Security::new().x509_identities(true));
    assert_eq!(server.security().tls, Some(ClientAuth::Need));
    let tls = tls_of(&server);
    let secure = server.secure_connect_string().unwrap();
    let owner = JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::Client)));
    let other = JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::Other)));
    owner
        .run(&secure, &["create", "/owned", "secret-data", "auth::cdrwa"])
        .assert_ok("create with CREATOR_ALL_ACL");
    let acl = owner
        .run(&secure, &["getAcl", "/owned"])
        .assert_ok("getAcl")
        .acl();
    assert_eq!(
        acl,
        vec![format!(
            "x509:{}:cdrwa",
            tls.x509_id(ClientIdentity::Client)
        )]
    );
    assert_eq!(tls.x509_id(ClientIdentity::Client), "CN=zkr-client");
    owner
        .run(&secure, &["get", "/owned"])
        .assert_ok("the owner reads")
        .assert_prints("secret-data");
    other
        .run(&secure, &["get", "/owned"])
        .assert_refused("another certificate", "Insufficient permission");
    other
        .run(&secure, &["set", "/owned", "stolen"])
        .assert_refused("another certificate writes", "Insufficient permission");

    // A certificate issued now (rotation): a new identity the server accepts.
    let dir = server.dir();
    let (cert, key) = (dir.join("rotated.pem"), dir.join("rotated.key"));
    tls.issue_client("zkr-rotated", &cert, &key);
    let key_pem = TlsMaterial::read(&key);
    assert!(
        key_pem.starts_with("-----BEGIN PRIVATE KEY-----"),
        "{key_pem}"
    );
    let keystore = dir.join("rotated-keystore.pem");
    std::fs::write(&keystore, key_pem + &TlsMaterial::read(&cert)).unwrap();
    let rotated = JavaClient::tls(&tls.ca, Some(&keystore));
    rotated
        .run(&secure, &["create", "/rotated", "r", "auth::cdrwa"])
        .assert_ok("an issued certificate");
    let acl = rotated.run(&secure, &["getAcl", "/rotated"]).acl();
    assert_eq!(
        acl,
        vec![format!(
            "x509:{}:cdrwa",
            TlsMaterial::x509_id_for_cn("zkr-rotated")
        )]
    );
    // Issuing again over the same files replaces them (another key).
    let before = TlsMaterial::read(&key);
    tls.issue_client("zkr-rotated", &cert, &key);
    assert_ne!(TlsMaterial::read(&key), before);
}

#[test]
fn a_tls_ensemble_serves_over_the_secure_port_of_every_member() {
    let cluster = TestingCluster::start_secure(
        3,
        Security::new()
            .tls(ClientAuth::Need)
            .sasl_user("alice", "secret"),
    );
    let tls = cluster.tls().expect("TLS material");
    let all = cluster.secure_connect_string().expect("secure ports");
    assert_eq!(all.split(',').count(), 3);
    let client = JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::Client)));
    for (i, server) in cluster.servers().iter().enumerate() {
        let address = server.secure_connect_string().unwrap();
        assert!(
            address.starts_with(&format!("127.0.0.{}:", i + 1)),
            "{address}"
        );
        assert!(all.contains(&address));
        // Host name verification is on: each certificate names its own 127.0.0.x.
        client
            .run(&address, &["create", &format!("/member{i}"), "m"])
            .assert_ok(&format!("server {i}"));
    }
    // Every member sees every write (quorum traffic stays plaintext).
    client
        .run(
            &cluster.server(2).secure_connect_string().unwrap(),
            &["ls", "/"],
        )
        .assert_ok("ls")
        .assert_prints("member0");
    client
        .clone()
        .sasl(cluster.server(0).dir(), "alice", "secret")
        .run(&all, &["create", "/alice", "a", "sasl:alice:cdrwa"])
        .assert_ok("SASL over TLS on the ensemble");
    let (ok, out) = s_client(
        &cluster.server(1).secure_connect_string().unwrap(),
        &tls.ca,
        "127.0.0.2",
        Some((&tls.client_cert, &tls.client_key)),
    );
    assert!(ok && out.contains("Zookeeper version"), "{out}");
}

#[test]
fn a_restarted_secure_server_keeps_its_secure_port_and_users() {
    let server = TestingServer::start_secure(
        Security::new()
            .tls(ClientAuth::Need)
            .sasl_user("alice", "secret"),
    );
    let tls = tls_of(&server);
    let secure = server.secure_connect_string().unwrap();
    server.restart();
    assert_eq!(
        server.secure_connect_string().as_deref(),
        Some(secure.as_str())
    );
    JavaClient::tls(&tls.ca, Some(&tls.keystore(ClientIdentity::Client)))
        .sasl(server.dir(), "alice", "secret")
        .run(&secure, &["create", "/after", "a", "sasl:alice:cdrwa"])
        .assert_ok("after a restart");
}

#[test]
fn the_material_has_every_promised_file_and_format() {
    let server = TestingServer::start_secure(Security::new().tls(ClientAuth::Need));
    let tls = tls_of(&server);
    let begins = |path: &Path, what: &str| {
        let text = TlsMaterial::read(path);
        assert!(
            text.starts_with(&format!("-----BEGIN {what}-----")),
            "{}: {text}",
            path.display()
        );
    };
    assert!(tls.dir.starts_with(server.dir().parent().unwrap()));
    for cert in [&tls.ca, &tls.wrong_ca] {
        begins(cert, "CERTIFICATE");
    }
    for which in ClientIdentity::ALL {
        begins(tls.cert(which), "CERTIFICATE");
        let key = match which {
            ClientIdentity::Rsa => "RSA PRIVATE KEY",
            ClientIdentity::Sec1 => "EC PRIVATE KEY",
            _ => "PRIVATE KEY",
        };
        begins(tls.key(which), key);
        begins(&tls.keystore(which), "PRIVATE KEY");
        let text = openssl_text(&TlsMaterial::read(tls.cert(which)));
        assert!(
            text.contains(&format!("Subject: CN = {}", which.common_name())),
            "{text}"
        );
        assert!(text.contains("TLS Web Client Authentication"), "{text}");
    }
    begins(&tls.encrypted_client_key, "ENCRYPTED PRIVATE KEY");
    // The encrypted key is the client key.
    let decrypted = openssl_stdin(
        &[
            "pkey",
            "-passin",
            &format!("pass:{}", tls.encrypted_client_key_password),
        ],
        &TlsMaterial::read(&tls.encrypted_client_key),
    );
    let plain = openssl_stdin(&["pkey"], &TlsMaterial::read(&tls.client_key));
    assert_eq!(decrypted, plain);
    let expired = openssl_text(&TlsMaterial::read(&tls.expired_client_cert));
    let not_after = expired.lines().find(|l| l.contains("Not After")).unwrap();
    assert!(!not_after.is_empty());
    let (ok, out) = openssl_verify(&tls.ca, &tls.expired_client_cert);
    assert!(!ok && out.contains("certificate has expired"), "{out}");
    let (ok, out) = openssl_verify(&tls.ca, &tls.wrong_ca_client_cert);
    assert!(!ok, "{out}");
    let (ok, out) = openssl_verify(&tls.wrong_ca, &tls.wrong_ca_client_cert);
    assert!(ok, "{out}");
    let (ok, out) = openssl_verify(&tls.ca, &tls.rsa_client_cert);
    assert!(ok, "{out}");
}

fn openssl_stdin(args: &[&str], input: &str) -> String {
    let mut child = Command::new("openssl")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run openssl");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "openssl {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn openssl_verify(ca: &Path, cert: &Path) -> (bool, String) {
    let out = Command::new("openssl")
        .arg("verify")
        .arg("-CAfile")
        .arg(ca)
        .arg(cert)
        .output()
        .expect("run openssl verify");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
#[should_panic(expected = "x509 identities need client certificates")]
fn x509_identities_without_client_certificates_are_refused() {
    TestingServer::start_secure(Security::new().tls(ClientAuth::None).x509_identities(true));
}

/// Runs `zk-harness ARGS...`; returns stdout, panicking on failure.
fn cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_zk-harness"))
        .args(args)
        .output()
        .expect("run zk-harness");
    assert!(
        out.status.success(),
        "zk-harness {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// A scratch directory whose servers are stopped (and which is removed) even if a test fails.
struct CliDir(PathBuf);

impl Drop for CliDir {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_zk-harness"))
            .arg("stop")
            .arg("--dir")
            .arg(&self.0)
            .output();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_cli_starts_secured_servers_and_prints_their_material() {
    let dir = CliDir(std::env::temp_dir().join(format!(
        "zkr-cli-secure-{}-{:08x}",
        std::process::id(),
        fastrand::u32(..)
    )));
    let d = dir.0.to_str().unwrap();
    let out = cli(&[
        "start",
        "--dir",
        d,
        "--tls",
        "need",
        "--sasl-user",
        "alice:secret",
        "--sasl-user",
        "bob:b:c",
        "--x509",
    ]);
    let mut lines = out.lines();
    let connect = lines.next().unwrap();
    assert!(connect.starts_with("127.0.0.1:"), "{out}");
    let values: std::collections::HashMap<&str, &str> = lines
        .map(|l| l.split_once('=').expect("KEY=VALUE"))
        .collect();
    let secure = values["secure_connect_string"];
    assert!(
        secure.starts_with("127.0.0.1:") && secure != connect,
        "{out}"
    );
    for key in [
        "ca",
        "client_cert",
        "client_key",
        "client_keystore",
        "other_client_cert",
        "rsa_client_key",
        "sec1_client_key",
        "encrypted_client_key",
        "expired_client_cert",
        "wrong_ca_client_cert",
        "wrong_ca",
    ] {
        assert!(Path::new(values[key]).is_file(), "{key}: {out}");
    }
    assert_eq!(values["client_x509_id"], "CN=zkr-client");
    let state = std::fs::read_to_string(dir.0.join("zk-harness.state")).unwrap();
    for line in out.lines().skip(1) {
        assert!(
            state.contains(&format!("{line}\n")),
            "{line} not in\n{state}"
        );
    }
    assert!(state.contains(&format!(
        "server0_secure_port={}",
        secure.rsplit(':').next().unwrap()
    )));

    let ca = Path::new(values["ca"]);
    let client = JavaClient::tls(ca, Some(Path::new(values["client_keystore"])));
    client
        .clone()
        .sasl(&dir.0, "bob", "b:c")
        .run(secure, &["create", "/cli", "c"])
        .assert_ok("bob, whose password has a colon");

    // A stopped and started server keeps TLS and SASL (its flags live in its directory).
    cli(&["stop-server", "--dir", d, "--server", "0"]);
    cli(&["start-server", "--dir", d, "--server", "0"]);
    let state_after = std::fs::read_to_string(dir.0.join("zk-harness.state")).unwrap();
    assert!(state_after.contains(&format!("secure_connect_string={secure}\n")));
    client
        .sasl(&dir.0, "alice", "secret")
        .run(secure, &["create", "/after", "a"])
        .assert_ok("after start-server");

    let (cert, key) = (dir.0.join("issued.pem"), dir.0.join("issued.key"));
    cli(&[
        "issue-client",
        "--dir",
        d,
        "--cn",
        "zkr-cli-issued",
        "--cert",
        cert.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    let (ok, out) = s_client(secure, ca, "127.0.0.1", Some((&cert, &key)));
    assert!(ok && out.contains("Zookeeper version"), "{out}");

    // Unsecured starts print the one line they always did.
    cli(&["stop", "--dir", d]);
    let out = cli(&["start", "--dir", d]);
    assert_eq!(out.lines().count(), 1, "{out}");
    let bad = Command::new(env!("CARGO_BIN_EXE_zk-harness"))
        .args(["start", "--dir", d, "--tls", "maybe"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
