//! Nodes and membership against a real ZooKeeper (started by the harness): the framework
//! operations they stand on (TTL nodes, persistent parents, compressed data, transactions) and
//! the recipes (PersistentNode, PersistentTtlNode, GroupMember).

use std::time::{Duration, Instant};

use zkrecipes::client::{CreateMode, CreateOptions, OpResult};
use zkrecipes::{Client, ClientBuilder, Error, ErrorKind};
use zkrecipes_testing::TestingServer;

async fn connect(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect")
}

/// Waits (bounded) until `f` returns true.
async fn eventually<F, Fut>(what: &str, timeout: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn exists(c: &Client, path: &str) -> bool {
    c.exists(path).await.unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_nodes_vanish_after_their_ttl_and_bad_ttls_are_refused() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let ttl = Duration::from_millis(400);
    let plain = CreateOptions::new(CreateMode::PersistentWithTtl).ttl(ttl);
    let made = Instant::now();
    c.create("/ttl", b"x", plain).await.unwrap();
    let seq = c
        .create(
            "/ttl-seq-",
            b"",
            CreateOptions::new(CreateMode::PersistentSequentialWithTtl).ttl(ttl),
        )
        .await
        .unwrap();
    assert!(
        seq.path.starts_with("/ttl-seq-") && seq.path.len() == "/ttl-seq-".len() + 10,
        "{}",
        seq.path
    );
    assert!(
        exists(&c, "/ttl").await,
        "a TTL node exists until its TTL passes"
    );
    eventually(
        "the TTL nodes are reaped",
        Duration::from_secs(10),
        || async { !exists(&c, "/ttl").await && !exists(&c, &seq.path).await },
    )
    .await;
    assert!(made.elapsed() >= ttl, "reaped before its TTL");

    for (options, why) in [
        (
            CreateOptions::new(CreateMode::PersistentWithTtl),
            "needs a ttl",
        ),
        (
            CreateOptions::new(CreateMode::Persistent).ttl(ttl),
            "a ttl needs mode",
        ),
        (
            CreateOptions::new(CreateMode::PersistentWithTtl).ttl(Duration::ZERO),
            "out of range",
        ),
        (
            CreateOptions::new(CreateMode::PersistentWithTtl).ttl(Duration::from_millis(1 << 40)),
            "out of range",
        ),
    ] {
        match c.create("/bad-ttl", b"", options).await {
            Err(Error::InvalidArgument(m)) => assert!(m.contains(why), "{m}"),
            other => panic!("{options:?}: {other:?}"),
        }
    }
    assert!(!exists(&c, "/bad-ttl").await);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_parents_stay_where_container_parents_are_reaped() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    c.create(
        "/pp/a/leaf",
        b"",
        CreateOptions::new(CreateMode::Persistent).persistent_parents(),
    )
    .await
    .unwrap();
    c.create(
        "/pc/a/leaf",
        b"",
        CreateOptions::new(CreateMode::Persistent).parents(),
    )
    .await
    .unwrap();
    for p in ["/pp/a/leaf", "/pc/a/leaf"] {
        c.delete(p, Default::default()).await.unwrap();
    }
    // The reaper has run once the container parent is gone; the persistent one must remain.
    eventually(
        "the container parent is reaped",
        Duration::from_secs(10),
        || async { !exists(&c, "/pc/a").await },
    )
    .await;
    assert!(exists(&c, "/pp/a").await, "a persistent parent was reaped");
    assert!(exists(&c, "/pp").await);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_data_is_curators_gzip_on_the_wire() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    let plain = b"compress me, compress me, compress me, compress me".repeat(20);
    c.create(
        "/z",
        &plain,
        CreateOptions::new(CreateMode::Persistent).compressed(),
    )
    .await
    .unwrap();
    let (raw, _) = c.get_data("/z").await.unwrap();
    assert_eq!(raw[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    assert!(raw.len() < plain.len() / 4, "{} bytes stored", raw.len());
    assert_eq!(c.get_data_decompressed("/z").await.unwrap().0, plain);

    let stat = c.set_data_compressed("/z", b"", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(c.get_data("/z").await.unwrap().0.len(), 20);
    assert_eq!(c.get_data_decompressed("/z").await.unwrap().0, b"");

    c.create("/plain", b"not gzip", CreateOptions::default())
        .await
        .unwrap();
    let e = c.get_data_decompressed("/plain").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptedData, "{e}");
    assert!(e.message().contains("/plain"), "{e}");
    c.close().await;
}

/// Acceptance 7: a failing check aborts every operation; results and the failing index are
/// reported. TTL creates go in a transaction too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_aborts_the_whole_transaction() {
    let server = TestingServer::start();
    let c = connect(&server.connect_string()).await;
    c.create("/t", b"v0", CreateOptions::default())
        .await
        .unwrap();
    let e = c
        .transaction()
        .create("/t/a", b"a", CreateMode::Persistent)
        .set_data("/t", b"v1", None)
        .check("/t", 7)
        .create("/t/b", b"b", CreateMode::Persistent)
        .commit()
        .await
        .unwrap_err();
    assert_eq!((e.kind(), e.failed_op()), (ErrorKind::BadVersion, Some(2)));
    assert!(!exists(&c, "/t/a").await, "an aborted create was applied");
    assert_eq!(c.get_data("/t").await.unwrap().0, b"v0");

    let results = c
        .transaction()
        .check("/t", 0)
        .create_with_ttl(
            "/t/ttl",
            b"",
            CreateMode::PersistentWithTtl,
            Duration::from_secs(60),
        )
        .set_data("/t", b"v1", Some(0))
        .commit()
        .await
        .unwrap();
    assert!(matches!(results[0], OpResult::Checked));
    assert!(matches!(&results[1], OpResult::Created { path, .. } if path == "/t/ttl"));
    assert!(matches!(&results[2], OpResult::DataSet { stat } if stat.version == 1));

    let e = c
        .transaction()
        .create("/t/c", b"", CreateMode::PersistentWithTtl)
        .commit()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    c.close().await;
}
