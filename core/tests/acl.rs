//! ACL administration against a real ZooKeeper (started by the harness): `get_acl`/`set_acl`,
//! an ACL given to one create or one transaction create, and Curator's ACLProvider choosing
//! the ACL of every node the client creates (recipes' nodes, parents and the namespace's
//! included) by its server-side path.

use std::time::Duration;

use zkrecipes::client::{CreateMode, CreateOptions};
use zkrecipes::lock::InterProcessMutex;
use zkrecipes::{Acl, AclProvider, Client, ClientBuilder, Error, Owner, Permission};
use zkrecipes_testing::TestingServer;

fn builder(connect: &str) -> ClientBuilder {
    ClientBuilder::new(connect).session_timeout(Duration::from_secs(10))
}

async fn connect(connect: &str) -> Client {
    builder(connect).connect().await.expect("connect")
}

fn alice() -> Vec<Acl> {
    vec![Acl::digest(Permission::ALL, "alice", "secret")]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_set_acl_follow_the_acl_version() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    c.create("/a", b"x", CreateOptions::new(CreateMode::Persistent))
        .await
        .unwrap();
    let (acl, stat) = c.get_acl("/a").await.unwrap();
    assert_eq!(acl, Acl::open());
    assert_eq!(stat.aversion, 0);

    let read_only = Acl::read_only();
    let stat = c.set_acl("/a", &read_only, Some(0)).await.unwrap();
    assert_eq!(stat.aversion, 1);
    assert_eq!(c.get_acl("/a").await.unwrap().0, read_only);
    // Now nobody may write it (READ for world), and a stale ACL version is refused.
    assert!(matches!(
        c.set_data("/a", b"y", None).await,
        Err(Error::NoAuth(_))
    ));
    assert!(matches!(
        c.set_acl("/a", &Acl::open(), Some(0)).await,
        Err(Error::NoAuth(_) | Error::BadVersion(_))
    ));
    assert!(matches!(c.get_acl("/missing").await, Err(Error::NoNode(_))));
    assert!(matches!(
        c.set_acl("/a", &[], None).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.set_acl("/a", &Acl::open(), Some(-2)).await,
        Err(Error::InvalidArgument(_))
    ));
    let counts = c.request_counts();
    assert_eq!((counts.get_acl, counts.set_acl), (3, 2));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_acl_admits_its_user_only() {
    let server = TestingServer::start();
    let owner = builder(&server.connect_string())
        .auth("digest", b"alice:secret".to_vec())
        .connect()
        .await
        .unwrap();
    owner
        .create_with_acl(
            "/private",
            b"p",
            CreateOptions::new(CreateMode::Persistent),
            &alice(),
        )
        .await
        .unwrap();
    // The server computed the same id for alice's session as Acl::digest did.
    assert_eq!(owner.get_data("/private").await.unwrap().0, b"p");
    assert_eq!(owner.get_acl("/private").await.unwrap().0, alice());

    let stranger = connect(&server.connect_string()).await;
    assert!(matches!(
        stranger.get_data("/private").await,
        Err(Error::NoAuth(_))
    ));
    let wrong = builder(&server.connect_string())
        .auth("digest", b"alice:wrong".to_vec())
        .connect()
        .await
        .unwrap();
    assert!(matches!(
        wrong.get_data("/private").await,
        Err(Error::NoAuth(_))
    ));
    // An empty ACL is refused before anything is sent.
    assert!(matches!(
        owner
            .create_with_acl("/e", b"", CreateOptions::new(CreateMode::Persistent), &[])
            .await,
        Err(Error::InvalidArgument(_))
    ));
    for c in [owner, stranger, wrong] {
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_chooses_each_nodes_acl_by_server_path_recipes_included() {
    let server = TestingServer::start();
    let provider = AclProvider::new(Acl::open())
        .with_path("/ns/secure", Acl::creator_all())
        .with_path("/ns/secure/public", Acl::read_only());
    let c = builder(&server.connect_string())
        .namespace("ns")
        .auth("digest", b"alice:secret".to_vec())
        .acl_provider(provider)
        .connect()
        .await
        .unwrap();
    let parents = CreateOptions::new(CreateMode::Persistent).persistent_parents();
    c.create("/secure/x/y", b"", parents).await.unwrap();
    c.create("/open/z", b"", parents).await.unwrap();
    c.create(
        "/secure/public",
        b"",
        CreateOptions::new(CreateMode::Persistent),
    )
    .await
    .unwrap();

    // The namespace's own node and /open: the default; /secure and below (parents made on the
    // way included): creator only, which ZooKeeper stores as the session's digest identity.
    let raw = connect(&server.connect_string()).await;
    assert_eq!(raw.get_acl("/ns").await.unwrap().0, Acl::open());
    assert_eq!(raw.get_acl("/ns/open/z").await.unwrap().0, Acl::open());
    for p in ["/ns/secure", "/ns/secure/x"] {
        assert!(matches!(raw.get_acl(p).await, Err(Error::NoAuth(_))), "{p}");
    }
    assert_eq!(c.get_acl("/secure/x/y").await.unwrap().0, alice());
    assert_eq!(
        raw.get_acl("/ns/secure/public").await.unwrap().0,
        Acl::read_only()
    );

    // A recipe's nodes go through the provider too: the lock's container parent and its
    // protected ephemeral-sequential node.
    let lock = InterProcessMutex::new(&c, "/secure/locks/orders").unwrap();
    let owner = Owner::new();
    assert!(lock
        .acquire(owner, Some(Duration::from_secs(5)))
        .await
        .unwrap());
    let children = c.get_children("/secure/locks/orders").await.unwrap();
    assert_eq!(children.len(), 1);
    let node = format!("/secure/locks/orders/{}", children[0]);
    assert_eq!(c.get_acl(&node).await.unwrap().0, alice());
    assert_eq!(c.get_acl("/secure/locks").await.unwrap().0, alice());
    assert!(matches!(
        raw.get_data(&format!("/ns{node}")).await,
        Err(Error::NoAuth(_))
    ));
    lock.release(owner).await.unwrap();

    // One create's own ACL, and a transaction create's, win over the provider.
    c.create_with_acl(
        "/secure/mine",
        b"",
        CreateOptions::new(CreateMode::Persistent),
        &Acl::open(),
    )
    .await
    .unwrap();
    assert_eq!(raw.get_acl("/ns/secure/mine").await.unwrap().0, Acl::open());
    c.transaction()
        .create_with_acl("/open/t1", b"", CreateMode::Persistent, alice())
        .create("/secure/t2", b"", CreateMode::Persistent)
        .commit()
        .await
        .unwrap();
    assert_eq!(c.get_acl("/open/t1").await.unwrap().0, alice());
    assert_eq!(c.get_acl("/secure/t2").await.unwrap().0, alice());
    assert!(matches!(
        raw.get_acl("/ns/open/t1").await,
        Err(Error::NoAuth(_))
    ));
    c.close().await;
    raw.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_function_answers_first_and_bad_providers_are_refused() {
    let server = TestingServer::start();
    let provider = AclProvider::new(Acl::open())
        .with_path("/p", Acl::read_only())
        .with_fn(|path| Ok(path.ends_with("-private").then(alice)));
    let c = builder(&server.connect_string())
        .auth("digest", b"alice:secret".to_vec())
        .acl_provider(provider)
        .connect()
        .await
        .unwrap();
    let plain = CreateOptions::new(CreateMode::Persistent);
    c.create("/p", b"", plain).await.unwrap();
    c.create("/x-private", b"", plain).await.unwrap();
    assert_eq!(c.get_acl("/p").await.unwrap().0, Acl::read_only());
    assert_eq!(c.get_acl("/x-private").await.unwrap().0, alice());
    c.close().await;

    for (bad, why) in [
        (AclProvider::new(vec![]), "must not be empty"),
        (
            AclProvider::new(Acl::open()).with_path("relative", Acl::open()),
            "absolute",
        ),
        (
            AclProvider::new(Acl::open()).with_path("/x", vec![]),
            "must not be empty",
        ),
        // An empty prefix (an unset config value) is not "/": it was taken as a rule for
        // every node.
        (
            AclProvider::new(Acl::open()).with_path("", Acl::read_only()),
            "empty",
        ),
    ] {
        match builder(&server.connect_string())
            .acl_provider(bad)
            .connect()
            .await
        {
            Err(Error::InvalidArgument(m)) => assert!(m.contains(why), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}

/// An `auth` the server refuses (an unknown scheme: ZooKeeper answers AUTHFAILED and closes
/// the connection) is named as such, not blamed on a missing SASL configuration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_auth_scheme_is_named_not_blamed_on_sasl() {
    let server = TestingServer::start();
    let e = builder(&server.connect_string())
        .auth("Digest", b"alice:secret".to_vec())
        .connection_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect_err("an unknown scheme is refused");
    let Error::AuthFailed(d) = &e else {
        panic!("AuthFailed, not {e:?}")
    };
    assert!(
        d.message()
            .contains("refused this client's authentication (scheme Digest"),
        "{e}"
    );
    assert!(!d.message().contains("SASL"), "not about SASL: {e}");
}
