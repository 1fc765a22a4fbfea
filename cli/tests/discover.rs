//! `zkr discover` against a real ZooKeeper: an instance registered (Curator's layout and JSON)
//! while its command runs and gone after, list / get / pick / watch, and bad input.

mod common;

use std::time::Duration;

use common::*;
use zkrecipes::discovery::{ServiceDiscovery, ServiceInstance};

fn client(server: &str) -> zkrecipes::Client {
    zkrecipes::Client::builder(server)
        .connect_blocking()
        .expect("connect")
}

#[test]
fn an_instance_is_registered_while_its_command_runs_and_read_back_every_way() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let dir = TempDir::new("discover");
    let env_file = dir.path("env");
    let command = format!(
        "echo \"$ZKR_DISCOVERY_PATH|$ZKR_DISCOVERY_ID|$ZKR_DISCOVERY_URI\" > {}; exec sleep 600",
        env_file.display()
    );
    let mut registered = Reap(
        zkr(&cs)
            .args(["discover", "register", "/services", "orders", "--id", "o1"])
            .args(["--address", "10.0.0.7", "--port", "8080"])
            .args([
                "--payload",
                r#"{"region":"eu"}"#,
                "--payload-class",
                "com.example.Details",
            ])
            .args(["--uri-spec", "{scheme}://{address}:{port}", "--"])
            .args(["sh", "-c", &command])
            .spawn()
            .unwrap(),
    );
    wait_for("the command started", Duration::from_secs(30), || {
        !lines(&env_file).is_empty()
    });
    assert_eq!(
        lines(&env_file),
        vec!["/services/orders/o1|o1|http://10.0.0.7:8080".to_string()]
    );
    // Curator's JSON on the node, read back by the core.
    let c = client(&cs);
    let (bytes, stat) = c.get_data_blocking("/services/orders/o1").unwrap();
    assert_ne!(stat.ephemeral_owner, 0, "DYNAMIC: ephemeral");
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.starts_with(r#"{"name":"orders","id":"o1","address":"10.0.0.7","port":8080,"sslPort":null,"payload":{"@class":"com.example.Details","region":"eu"}"#),
        "{text}"
    );
    let d = ServiceDiscovery::new(&c, "/services").unwrap();
    d.register_blocking({
        let mut i = ServiceInstance::new("orders");
        i.id = "o2".into();
        i.enabled = false;
        i
    })
    .unwrap();

    let o = run(zkr(&cs).args(["discover", "list", "/services"]));
    assert_eq!(stdout(&o), "orders\n", "{}", stderr(&o));
    let o = run(zkr(&cs).args(["discover", "list", "/services", "orders"]));
    assert_eq!(
        stdout(&o),
        "o1 10.0.0.7:8080 http://10.0.0.7:8080\no2 [disabled]\n",
        "{}",
        stderr(&o)
    );
    let o = run(zkr(&cs).args(["discover", "get", "/services", "orders", "o1", "--json"]));
    let got = ServiceInstance::from_json(stdout(&o).trim().as_bytes()).unwrap();
    assert_eq!(got.port, Some(8080));
    assert_eq!(got.payload_class.as_deref(), Some("com.example.Details"));
    // pick: the only enabled one, every time.
    for _ in 0..3 {
        let o = run(zkr(&cs).args(["discover", "pick", "/services", "orders"]));
        assert!(
            stdout(&o).starts_with("o1 "),
            "{} {}",
            stdout(&o),
            stderr(&o)
        );
    }

    // watch: INITIALIZED once loaded, then a new instance is an ADDED line.
    let watch = Lines::spawn({
        let mut cmd = zkr(&cs);
        cmd.args(["discover", "watch", "/services", "billing"]);
        cmd
    });
    wait_for("INITIALIZED", Duration::from_secs(30), || {
        watch.json().iter().any(|v| v["type"] == "INITIALIZED")
    });
    let discovery_b = ServiceDiscovery::new(&c, "/services").unwrap();
    let mut b = ServiceInstance::new("billing");
    b.id = "b1".into();
    discovery_b.register_blocking(b).unwrap();
    wait_for("ADDED", Duration::from_secs(30), || {
        watch.json().iter().any(|v| v["type"] == "ADDED")
    });
    let added = watch
        .json()
        .into_iter()
        .find(|v| v["type"] == "ADDED")
        .unwrap();
    assert_eq!(added["instance"]["id"], "b1");
    assert_eq!(added["path"], "/services/billing/b1");
    drop(watch);

    // SIGTERM: passed on; the registration goes with the command.
    signal(registered.0.id(), nix::sys::signal::Signal::SIGTERM);
    let status = wait_exit(
        &mut registered.0,
        "zkr discover register",
        Duration::from_secs(20),
    );
    assert_eq!(status.code(), Some(128 + 15));
    assert!(c.exists_blocking("/services/orders/o1").unwrap().is_none());
    d.close_blocking().unwrap();
    discovery_b.close_blocking().unwrap();
    c.close_blocking();
}

#[test]
fn bad_input_conflicts_and_nothing_to_pick_are_exit_1() {
    let server = TestingServer::start();
    let cs = server.connect_string();
    let nowhere = "127.0.0.1:1";
    for (args, needle) in [
        (vec!["--type", "WEIRD"], "not a service type"),
        (vec!["--payload", "{not json"], "--payload is not JSON"),
        (vec!["--uri-spec", "{oops"], "Final variable not closed"),
        (vec!["--id", "a/b"], "must not contain '/'"),
    ] {
        let o = run(zkr(nowhere)
            .args(["discover", "register", "/s", "n"])
            .args(args)
            .args(["--", "true"]));
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{needle}: {}", stderr(&o));
    }
    let o = run(zkr(nowhere).args(["discover", "register", "/s", "n", "true"]));
    assert!(
        stderr(&o).contains("zkr discover register BASE NAME"),
        "{}",
        stderr(&o)
    );
    let o = run(zkr(&cs).args(["discover", "pick", "/s", "none"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no usable instance"), "{}", stderr(&o));
    let o = run(zkr(&cs).args(["discover", "get", "/s", "none", "x"]));
    assert_eq!(o.status.code(), Some(1));
    // The same id from another live session: exit 1, the first node untouched, nothing run.
    let c = client(&cs);
    let d = ServiceDiscovery::new(&c, "/s").unwrap();
    let mut i = ServiceInstance::new("n");
    i.id = "taken".into();
    d.register_blocking(i).unwrap();
    let dir = TempDir::new("discover-conflict");
    let ran = dir.path("ran");
    let o = run(zkr(&cs)
        .args(["discover", "register", "/s", "n", "--id", "taken", "--"])
        .args(["sh", "-c", &format!("touch {}", ran.display())]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!ran.exists());
    assert_eq!(
        c.exists_blocking("/s/n/taken")
            .unwrap()
            .unwrap()
            .ephemeral_owner,
        c.session_id()
    );
    d.close_blocking().unwrap();
    c.close_blocking();
}
