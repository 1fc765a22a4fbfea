//! SASL GSSAPI (Kerberos) against a real ZooKeeper whose realm is a real MIT KDC the harness
//! starts on a loopback port (`Security::kerberos(true)`): built and run with the `gssapi`
//! feature (`cargo test -p zkrecipes --features gssapi --test kerberos`; `scripts/test` does).

use std::time::{Duration, Instant};

use zkrecipes::client::{CreateMode, CreateOptions};
use zkrecipes::lock::InterProcessMutex;
use zkrecipes::{Acl, ClientBuilder, ErrorKind, Owner, Permission, SaslOptions};
use zkrecipes_testing::{Security, TestingServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gssapi_authenticates_from_the_ticket_cache_and_a_wrong_service_is_refused() {
    let server = TestingServer::start_secure(Security::new().kerberos(true).sasl_required(true));
    let k = server.kerberos().expect("a Kerberos realm");
    // The process's Kerberos configuration and ticket cache, as `kinit` users have them. This
    // test binary holds only this test: nothing else reads the environment meanwhile.
    for (name, value) in k.env() {
        std::env::set_var(name, value);
    }
    let c = ClientBuilder::new(server.connect_string())
        .connection_timeout(Duration::from_secs(10))
        .sasl(SaslOptions::gssapi())
        .acl(Acl::creator_all())
        .connect()
        .await
        .unwrap();
    c.create("/k", b"", CreateOptions::new(CreateMode::Persistent))
        .await
        .unwrap();
    assert_eq!(
        c.get_acl("/k").await.unwrap().0,
        vec![Acl::new(
            Permission::ALL,
            "sasl",
            k.client_principal.clone()
        )]
    );
    let lock = InterProcessMutex::new(&c, "/locks/krb").unwrap();
    let me = Owner::new();
    assert!(lock
        .acquire(me, Some(Duration::from_secs(5)))
        .await
        .unwrap());
    lock.release(me).await.unwrap();
    c.close().await;

    // A service principal the realm does not have: refused at once, saying it is GSSAPI.
    let e = ClientBuilder::new(server.connect_string())
        .connection_timeout(Duration::from_secs(60))
        .sasl(SaslOptions::gssapi().with_service("nosuchservice"))
        .connect()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AuthFailed, "{e}");
    assert!(
        e.message().contains("SASL GSSAPI mechanism failed")
            && e.message().contains("not found in Kerberos database"),
        "{e}"
    );
    assert_eq!(
        SaslOptions::new("gssapi", "", "").unwrap().mechanism(),
        "GSSAPI"
    );

    // A KDC that does not answer (down, or its packets dropped) while a new session asks it
    // for a service ticket: the Kerberos library waits on a thread of its own, and every other
    // session of the process goes on meanwhile (the wait once held the thread driving the
    // runtime: every client of the process stalled, their sessions in doubt).
    let a = ClientBuilder::new(server.connect_string())
        .connection_timeout(Duration::from_secs(10))
        .sasl(SaslOptions::gssapi())
        .connect()
        .await
        .unwrap();
    let silent = SilentPort::bind();
    let conf = std::fs::read_to_string(&k.krb5_conf)
        .unwrap()
        .replace(&k.kdc, &format!("127.0.0.1:{}", silent.port));
    let silent_conf = k.dir.join("krb5-silent-kdc.conf");
    std::fs::write(&silent_conf, conf).unwrap();
    std::env::set_var("KRB5_CONFIG", &silent_conf);
    let connecting = tokio::spawn(
        ClientBuilder::new(server.connect_string())
            .connection_timeout(Duration::from_secs(120))
            .sasl(SaslOptions::gssapi().with_service("notcached"))
            .connect(),
    );
    let started = Instant::now();
    let (mut slowest, mut calls) = (Duration::ZERO, 0u32);
    while !connecting.is_finished() {
        let t = Instant::now();
        a.exists("/k").await.unwrap();
        slowest = slowest.max(t.elapsed());
        calls += 1;
        // Paced: the point is the longest wait, not the number of calls.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let waited = started.elapsed();
    let e = connecting.await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AuthFailed, "{e}");
    assert!(
        e.message()
            .contains("no Kerberos ticket for the server's service principal")
            && e.message().contains("Cannot contact any KDC"),
        "{e}"
    );
    assert!(
        waited >= Duration::from_secs(3),
        "the silent KDC was waited for: {waited:?} ({e})"
    );
    assert!(
        slowest < Duration::from_secs(1),
        "a call of another session waited {slowest:?} while a new session waited {waited:?} \
         for its KDC ({calls} calls)"
    );
    a.close().await;
}

/// A loopback port where nothing answers: datagrams are never read (and TCP is refused).
struct SilentPort {
    port: u16,
    _udp: std::net::UdpSocket,
}

impl SilentPort {
    fn bind() -> SilentPort {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        SilentPort {
            port: udp.local_addr().unwrap().port(),
            _udp: udp,
        }
    }
}
