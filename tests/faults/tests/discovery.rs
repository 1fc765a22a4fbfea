//! Issue 31, Proof 2: service discovery under leader kills, a blackhole shorter than the session
//! and a session expiry.
//!
//! A 3-server ensemble; four registering clients (two direct with 8 s sessions, one through a
//! `FaultProxy` with a 20 s session, one direct whose session is expired) register 20 instances
//! of one service, DYNAMIC, DYNAMIC_SEQUENTIAL and STATIC among them; five `ServiceCache`s (one
//! of them on another client behind the same proxy) watch them, each counting its events. While
//! an updater rewrites instances' payloads, the ensemble's leader is killed and restarted, then the
//! proxy blackholes its clients for longer than their read timeout but shorter than their
//! session, then the fourth client's session is expired. At the end every cache equals the
//! server's instances (read after a `sync`), every instance id has exactly one node, and the
//! blackhole caused no REMOVED event in any cache (the proxied sessions survived it: nothing of
//! theirs was deleted or re-created).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use zkrecipes::discovery::{
    Registration, ServiceCache, ServiceCacheEventKind, ServiceDiscovery, ServiceInstance,
    ServiceType,
};
use zkrecipes::{Client, ClientBuilder};
use zkrecipes_testing::{FaultProxy, TestingCluster};

mod common;
use common::{client_to, kill_leaders, long, WAIT};

const BASE: &str = "/fd";
const SERVICE: &str = "api";
const PER_CLIENT: usize = 5;

/// A client through the proxy: a 20 s session, a 4 s connection (read) timeout, so that a
/// blackhole of 8 s is noticed (the connection is dropped and retried) while the server still
/// keeps the session (≈ 1.5 s since the last ping + 8 s + one 4 s attempt < 20 s).
fn proxied(connect: &str) -> Client {
    ClientBuilder::new(connect)
        .session_timeout(Duration::from_secs(20))
        .connection_timeout(Duration::from_secs(4))
        .connect_blocking()
        .expect("connect through the proxy")
}

fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// The service's instances on the server, by node name, read after a `sync`.
fn server_instances(c: &Client) -> BTreeMap<String, ServiceInstance> {
    let parent = format!("{BASE}/{SERVICE}");
    c.sync_blocking(&parent).expect("sync");
    let mut out = BTreeMap::new();
    for node in c.get_children_blocking(&parent).expect("children") {
        let Ok((data, _)) = c.get_data_blocking(&format!("{parent}/{node}")) else {
            continue;
        };
        out.insert(
            node,
            ServiceInstance::from_json(&data).expect("a valid node"),
        );
    }
    out
}

/// Events per kind, counted by a cache's listener.
#[derive(Default)]
struct Counts {
    added: u64,
    updated: u64,
    removed: u64,
    resync: u64,
}

#[test]
fn service_caches_equal_the_server_through_kills_a_blackhole_and_an_expiry() {
    let start = Instant::now();
    let cluster = TestingCluster::start(3);
    let connect = cluster.connect_string();
    let admin = client_to(&connect);
    // The proxy forwards to the first member (its clients have no other server).
    let upstream = connect.split(',').next().unwrap().to_string();
    let proxy = FaultProxy::start(&upstream);

    // Four registering clients: A, B direct; C through the proxy; D direct (expired later).
    let clients = [
        client_to(&connect),
        client_to(&connect),
        proxied(&proxy.connect_string()),
        client_to(&connect),
    ];
    let discoveries: Vec<ServiceDiscovery> = clients
        .iter()
        .map(|c| ServiceDiscovery::new(c, BASE).unwrap())
        .collect();

    // Five caches, the last one on a client behind the proxy.
    let mut cache_clients: Vec<Client> = (0..4).map(|_| client_to(&connect)).collect();
    cache_clients.push(proxied(&proxy.connect_string()));
    let mut caches = Vec::new();
    for c in &cache_clients {
        let d = ServiceDiscovery::new(c, BASE).unwrap();
        let cache = ServiceCache::new(&d, SERVICE).unwrap();
        let counts = Arc::new(Mutex::new(Counts::default()));
        let k = counts.clone();
        cache.listen(false, move |e| {
            let mut k = k.lock().unwrap();
            k.resync += u64::from(e.resync);
            match e.kind {
                ServiceCacheEventKind::Added => k.added += 1,
                ServiceCacheEventKind::Updated => k.updated += 1,
                ServiceCacheEventKind::Removed => k.removed += 1,
                _ => {}
            }
        });
        cache.start_blocking().unwrap();
        assert!(cache.await_initialized_blocking(Some(WAIT)).unwrap());
        caches.push((d, cache, counts));
    }

    // 20 instances, 5 per registering client.
    let types = [
        ServiceType::Dynamic,
        ServiceType::DynamicSequential,
        ServiceType::Dynamic,
        ServiceType::DynamicSequential,
        ServiceType::Static,
    ];
    let mut registrations: Vec<Registration> = Vec::new();
    for (ci, d) in discoveries.iter().enumerate() {
        for (k, ty) in types.iter().enumerate() {
            let mut i = ServiceInstance::new(SERVICE);
            i.id = format!("c{ci}-i{k}");
            i.address = Some(format!("10.0.{ci}.{k}"));
            i.port = Some(8000 + k as i32);
            i.service_type = *ty;
            i.payload = Some(serde_json::json!({"n": 0, "w": 0.5}));
            i.payload_class = Some("java.util.LinkedHashMap".into());
            registrations.push(d.register_blocking(i).unwrap());
        }
    }
    let total = clients.len() * PER_CLIENT;
    for (i, (_, cache, _)) in caches.iter().enumerate() {
        eventually(&format!("cache {i} holds all {total} instances"), || {
            cache.instances().len() == total
        });
    }

    // An updater rewrites payloads all along (errors tolerated: the faults are the point).
    let stop = Arc::new(AtomicBool::new(false));
    let updates = Arc::new(AtomicU64::new(0));
    let updater = {
        let (stop, updates, regs) = (stop.clone(), updates.clone(), registrations.clone());
        thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let r = &regs[(n as usize * 7) % regs.len()];
                let mut i = r.instance();
                i.payload = Some(serde_json::json!({"n": n, "w": n as f64 / 4.0}));
                if r.update(i).is_ok() {
                    updates.fetch_add(1, Ordering::Relaxed);
                }
                thread::sleep(Duration::from_millis(25));
            }
        })
    };

    // 1. Leader kills.
    let kills = kill_leaders(&cluster);

    // 2. Blackholes shorter than the proxied sessions: noticed, survived, nothing removed.
    let rounds = if long() { 3 } else { 1 };
    let proxied_sessions = [clients[2].session_id(), cache_clients[4].session_id()];
    let mut blips = Vec::new();
    for round in 0..rounds {
        eventually("the proxied clients are connected", || {
            clients[2].state().is_connected() && cache_clients[4].state().is_connected()
        });
        let removed_before: Vec<u64> = caches
            .iter()
            .map(|(_, _, k)| k.lock().unwrap().removed)
            .collect();
        let t = Instant::now();
        proxy.blackhole();
        eventually("the proxied clients notice the blackhole", || {
            !clients[2].state().is_connected() && !cache_clients[4].state().is_connected()
        });
        // The fault's length (not a wait for a condition): 8 s in all.
        thread::sleep(Duration::from_secs(8).saturating_sub(t.elapsed()));
        proxy.restore();
        eventually("the proxied clients reconnect", || {
            clients[2].state().is_connected() && cache_clients[4].state().is_connected()
        });
        assert_eq!(
            [clients[2].session_id(), cache_clients[4].session_id()],
            proxied_sessions,
            "a proxied session did not survive blackhole {round}"
        );
        // Settle: a write after the blip, seen by every cache, then the REMOVED counts.
        let last = admin
            .set_data_blocking(&format!("{BASE}/{SERVICE}"), b"", None)
            .unwrap();
        for (i, (_, cache, _)) in caches.iter().enumerate() {
            assert!(
                cache.await_zxid_blocking(last.mzxid, Some(WAIT)).unwrap(),
                "cache {i} never caught up after blackhole {round}"
            );
        }
        let removed: Vec<u64> = caches
            .iter()
            .zip(&removed_before)
            .map(|((_, _, k), before)| k.lock().unwrap().removed - before)
            .collect();
        assert!(
            removed.iter().all(|r| *r == 0),
            "blackhole {round} (shorter than the session) caused REMOVED events: {removed:?}"
        );
        blips.push(format!("{:.1} s", t.elapsed().as_secs_f64()));
    }

    // 3. Session expiry of D: its DYNAMIC instances come back once each on the new session.
    let old = clients[3].session_id();
    for _ in 0..rounds {
        let before = clients[3].session_id();
        zkrecipes::runtime::block_on(zkrecipes_testing::expire_client_session(&clients[3]))
            .expect("expire");
        eventually("a new session for D", || {
            clients[3].session_id() != before && clients[3].state().is_connected()
        });
    }
    assert_ne!(clients[3].session_id(), old);
    for r in &registrations[3 * PER_CLIENT..] {
        assert!(
            zkrecipes::runtime::block_on(r.wait_registered(Some(WAIT))).unwrap(),
            "{} not registered again after the expiry",
            r.path()
        );
    }

    stop.store(true, Ordering::SeqCst);
    updater.join().unwrap();

    // Every registration's last update written, then the server's view after a sync.
    let last = admin
        .set_data_blocking(&format!("{BASE}/{SERVICE}"), b"end", None)
        .unwrap();
    eventually("every registration's data is on the server", || {
        let server = server_instances(&admin);
        registrations.iter().all(|r| {
            let mine = r.instance();
            server.values().any(|s| *s == mine)
        })
    });
    let server = server_instances(&admin);
    // Each instance id has exactly one node.
    let mut per_id: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (node, i) in &server {
        per_id.entry(i.id.clone()).or_default().push(node.clone());
    }
    for r in &registrations {
        let id = r.instance().id;
        let nodes = per_id.get(&id).cloned().unwrap_or_default();
        assert_eq!(nodes.len(), 1, "instance {id} has nodes {nodes:?}");
        assert_eq!(nodes[0], r.node_name(), "instance {id}'s node");
    }
    assert_eq!(server.len(), total, "the server holds {:?}", server.keys());

    let last = last.mzxid;
    let want: Vec<ServiceInstance> = server.values().cloned().collect();
    let mut summary = Vec::new();
    for (i, (_, cache, counts)) in caches.iter().enumerate() {
        assert!(
            cache.await_zxid_blocking(last, Some(WAIT)).unwrap(),
            "cache {i} never caught up"
        );
        let got: Vec<ServiceInstance> = cache.instances().iter().map(|i| (**i).clone()).collect();
        assert_eq!(got, want, "cache {i} differs from the server");
        let k = counts.lock().unwrap();
        summary.push(format!(
            "{}+/{}~/{}- ({} resync)",
            k.added, k.updated, k.removed, k.resync
        ));
    }
    eprintln!(
        "FAULTS | 16 discovery under {kills} leader kills, {rounds} blackhole(s) of 8 s, {rounds} expiry | Rust (4 registering clients: 2 direct, 1 behind the proxy, 1 expired; 5 ServiceCaches, 1 behind the proxy) | {total} instances (8 DYNAMIC, 8 DYNAMIC_SEQUENTIAL, 4 STATIC), {} updates; every cache == the server (after sync), one node per id; blackholes {} with 0 REMOVED, proxied sessions survived; cache events added/updated/removed: {} | violations 0 | {:.1} s",
        updates.load(Ordering::Relaxed),
        blips.join(", "),
        summary.join("; "),
        start.elapsed().as_secs_f64()
    );
    for (d, cache, _) in &caches {
        cache.close();
        d.close_blocking().unwrap();
    }
    for d in &discoveries {
        d.close_blocking().unwrap();
    }
    for c in clients.iter().chain(&cache_clients) {
        c.close_blocking();
    }
    admin.close_blocking();
}
