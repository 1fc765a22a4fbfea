//! Where the harness (and so the testing kit of every face) finds ZooKeeper: a given class path,
//! an unpacked release under ZOOKEEPER_HOME, Debian's package; and the message when there is none.
//! One test: the environment is the process's, so the cases run in order.

use std::path::Path;

use zkrecipes_testing::{find_zookeeper, TestingServer, ZOOKEEPER_HOME_ENV, ZOOKEEPER_JAR_ENV};

const DEBIAN_JAR: &str = "/usr/share/java/zookeeper.jar";

fn set(name: &str, value: Option<&str>) {
    match value {
        Some(v) => std::env::set_var(name, v),
        None => std::env::remove_var(name),
    }
}

#[test]
fn zookeeper_is_found_where_the_user_says_or_the_error_says_what_to_install() {
    assert!(
        Path::new(DEBIAN_JAR).is_file(),
        "Debian's zookeeper package is needed for this test: sudo apt-get install -y zookeeper"
    );
    set(ZOOKEEPER_JAR_ENV, None);
    set(ZOOKEEPER_HOME_ENV, None);
    let debian = find_zookeeper().expect("Debian's package");
    assert_eq!(debian.source, "Debian's zookeeper package");
    assert_eq!(debian.jar, Path::new(DEBIAN_JAR));

    // A given class path.
    set(
        ZOOKEEPER_JAR_ENV,
        Some(&format!("/etc/zookeeper/conf:{DEBIAN_JAR}")),
    );
    let given = find_zookeeper().expect("the given jar");
    assert_eq!(given.source, ZOOKEEPER_JAR_ENV);
    assert_eq!(given.classpath, format!("/etc/zookeeper/conf:{DEBIAN_JAR}"));
    let server = TestingServer::start();
    assert!(server.four_letter("srvr").contains("Mode: standalone"));
    drop(server);
    set(ZOOKEEPER_JAR_ENV, Some("/nonexistent/zookeeper.jar"));
    let missing = find_zookeeper().expect_err("a jar that is not there");
    assert!(missing.contains("/nonexistent/zookeeper.jar"), "{missing}");
    set(ZOOKEEPER_JAR_ENV, None);

    // An unpacked binary release: lib/zookeeper-3.x.y.jar (Debian's jar names its dependencies
    // by absolute path, so a link stands in for a release's lib/).
    let home = std::env::temp_dir().join(format!("zkr-home-{}", std::process::id()));
    std::fs::create_dir_all(home.join("lib")).unwrap();
    std::os::unix::fs::symlink(DEBIAN_JAR, home.join("lib/zookeeper-3.8.0.jar")).unwrap();
    set(ZOOKEEPER_HOME_ENV, Some(home.to_str().unwrap()));
    let release = find_zookeeper().expect("ZOOKEEPER_HOME");
    assert_eq!(release.jar, home.join("lib/zookeeper-3.8.0.jar"));
    assert!(release
        .classpath
        .starts_with(home.join("conf").to_str().unwrap()));
    let server = TestingServer::start();
    assert!(server.four_letter("srvr").contains("Mode: standalone"));
    drop(server);

    // A ZOOKEEPER_HOME without a server jar: the message names every way to get one.
    std::fs::remove_file(home.join("lib/zookeeper-3.8.0.jar")).unwrap();
    let none = find_zookeeper().expect_err("no jar under ZOOKEEPER_HOME");
    for hint in [
        "apt-get install -y zookeeper",
        "zookeeper.apache.org",
        "ZOOKEEPER_HOME",
        ZOOKEEPER_JAR_ENV,
    ] {
        assert!(none.contains(hint), "{hint:?} missing from: {none}");
    }
    set(ZOOKEEPER_HOME_ENV, None);
    std::fs::remove_dir_all(&home).unwrap();
}
