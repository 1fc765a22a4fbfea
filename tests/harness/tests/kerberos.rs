//! Kerberos (SASL GSSAPI): an MIT KDC started by the harness, unprivileged, on a loopback port,
//! proven with ZooKeeper's own Java client (keytab and ticket-cache logins), over plaintext and
//! TLS, standalone and in an ensemble; and the KDC gone with its server.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use zkrecipes_testing::{
    zookeeper_install, ClientAuth, KerberosMaterial, Security, TestingCluster, TestingServer,
    KERBEROS_REALM,
};

/// Runs `ZooKeeperMain -server SERVER COMMAND...` with `props`; (exit success, output).
fn java(props: &[String], server: &str, command: &[&str]) -> (bool, String) {
    let zookeeper = zookeeper_install();
    let mut child = Command::new(&zookeeper.java)
        .args([
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.net.preferIPv4Stack=true",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        ])
        .args(props)
        .arg("-cp")
        .arg(&zookeeper.classpath)
        .arg("org.apache.zookeeper.ZooKeeperMain")
        .args(["-server", server, "-timeout", "20000"])
        .args(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run java");
    let (mut stdout, mut stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the Java client did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = out.join().unwrap() + &err.join().unwrap();
    (status.success(), text)
}

/// The system properties of a Kerberos Java client of server `index`, logging in with `jaas`.
fn kerberos_props(krb: &KerberosMaterial, jaas: &Path, index: usize) -> Vec<String> {
    vec![
        format!("-Djava.security.krb5.conf={}", krb.krb5_conf.display()),
        format!("-Djava.security.auth.login.config={}", jaas.display()),
        format!(
            "-Dzookeeper.server.principal={}",
            krb.server_principal(index)
        ),
    ]
}

/// A JAAS `Client` section logging in from the ticket cache only (what `kinit` filled).
fn ticket_cache_jaas(krb: &KerberosMaterial) -> std::path::PathBuf {
    let path = krb.dir.join("client-ccache-jaas.conf");
    std::fs::write(
        &path,
        format!(
            "Client {{\n    com.sun.security.auth.module.Krb5LoginModule required\n    \
             useKeyTab=false\n    useTicketCache=true\n    ticketCache=\"{}\"\n    \
             principal=\"{}\";\n}};\n",
            krb.ccache.display(),
            krb.client_principal
        ),
    )
    .unwrap();
    path
}

fn kdc_processes_of(dir: &Path) -> usize {
    let needle = dir.to_str().unwrap().as_bytes().to_vec();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| {
            cmdline.windows(7).any(|w| w == b"krb5kdc")
                && cmdline
                    .windows(needle.len())
                    .any(|w| w == needle.as_slice())
        })
        .count()
}

#[test]
fn kerberos_clients_authenticate_with_a_keytab_or_the_ticket_cache() {
    let server = TestingServer::start_secure(
        Security::new()
            .kerberos(true)
            .sasl_required(true)
            .tls(ClientAuth::None),
    );
    let krb = server.kerberos().expect("Kerberos material").clone();
    assert_eq!(krb.realm, KERBEROS_REALM);
    assert_eq!(krb.client_principal, "zkr-client@ZKRECIPES.TEST");
    assert_eq!(
        krb.server_principal(0),
        "zookeeper/127.0.0.1@ZKRECIPES.TEST"
    );
    assert!(krb.kdc.starts_with("127.0.0.1:"));
    for file in [
        &krb.krb5_conf,
        &krb.client_keytab,
        &krb.ccache,
        &krb.client_jaas,
    ] {
        assert!(file.is_file(), "{}", file.display());
    }
    // The ticket cache holds the client's TGT (klist, MIT's own tool, with the realm's env).
    let klist = Command::new("klist")
        .envs(krb.env())
        .output()
        .expect("run klist");
    let listed = String::from_utf8_lossy(&klist.stdout);
    assert!(
        klist.status.success() && listed.contains("krbtgt/ZKRECIPES.TEST@ZKRECIPES.TEST"),
        "{listed}{}",
        String::from_utf8_lossy(&klist.stderr)
    );

    let plain = server.connect_string();
    let keytab = kerberos_props(&krb, &krb.client_jaas, 0);
    let (ok, out) = java(&keytab, &plain, &["create", "/krb", "k", "auth::cdrwa"]);
    assert!(ok && out.contains("SaslAuthenticated"), "{out}");
    let (ok, out) = java(&keytab, &plain, &["getAcl", "/krb"]);
    assert!(
        ok && out.contains("'sasl,'zkr-client@ZKRECIPES.TEST"),
        "{out}"
    );
    let (ok, out) = java(
        &kerberos_props(&krb, &ticket_cache_jaas(&krb), 0),
        &plain,
        &["get", "/krb"],
    );
    assert!(ok && out.contains("\nk\n"), "the ticket cache login: {out}");
    // Over TLS too.
    let tls = server.tls().unwrap();
    let mut over_tls = keytab.clone();
    over_tls.extend([
        "-Dzookeeper.client.secure=true".to_owned(),
        "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty".to_owned(),
        format!("-Dzookeeper.ssl.trustStore.location={}", tls.ca.display()),
        "-Dzookeeper.ssl.trustStore.type=PEM".to_owned(),
    ]);
    let (ok, out) = java(
        &over_tls,
        &server.secure_connect_string().unwrap(),
        &["get", "/krb"],
    );
    assert!(ok, "Kerberos over TLS: {out}");

    // Refused: no Kerberos login (SASL required), and a wrong server principal.
    let (ok, out) = java(&[], &plain, &["get", "/krb"]);
    assert!(
        !ok && out.contains("Session closed because client failed to authenticate"),
        "{out}"
    );
    let mut wrong = keytab.clone();
    wrong[2] = format!("-Dzookeeper.server.principal=zookeeper/127.0.0.9@{KERBEROS_REALM}");
    let (ok, out) = java(&wrong, &plain, &["get", "/krb"]);
    assert!(
        !ok && out.contains("AuthFailed") && out.contains("Server not found in Kerberos database"),
        "a wrong server principal: {out}"
    );

    let dir = krb.dir.clone();
    assert_eq!(kdc_processes_of(&dir), 1);
    drop(server);
    assert_eq!(kdc_processes_of(&dir), 0, "the KDC outlived its server");
}

#[test]
fn every_member_of_a_kerberos_ensemble_has_its_own_principal() {
    let cluster = TestingCluster::start_secure(3, Security::new().kerberos(true));
    let krb = cluster.kerberos().expect("Kerberos material");
    for (i, server) in cluster.servers().iter().enumerate() {
        assert_eq!(
            krb.server_principal(i),
            format!("zookeeper/127.0.0.{}@ZKRECIPES.TEST", i + 1)
        );
        let props = kerberos_props(krb, &krb.client_jaas, i);
        let (ok, out) = java(
            &props,
            &server.connect_string(),
            &["create", &format!("/m{i}"), "m"],
        );
        assert!(ok && out.contains("SaslAuthenticated"), "server {i}: {out}");
    }
}

#[test]
#[should_panic(expected = "one SASL mechanism")]
fn kerberos_and_digest_users_are_refused_together() {
    TestingServer::start_secure(Security::new().kerberos(true).sasl_user("alice", "secret"));
}
