//! SASL GSSAPI (Kerberos) against a real ZooKeeper whose realm is a real MIT KDC the harness
//! starts on a loopback port (`Security::kerberos(true)`): built and run with the `gssapi`
//! feature (`cargo test -p zkrecipes --features gssapi --test kerberos`; `scripts/test` does).

use std::time::Duration;

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
    assert!(e.message().contains("GSSAPI"), "{e}");
    assert_eq!(
        SaslOptions::new("gssapi", "", "").unwrap().mechanism(),
        "GSSAPI"
    );
}
