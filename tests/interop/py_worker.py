"""The Python worker of the interop runner (tests/interop/run); run with the repo's .venv.

    py_worker.py --role ROLE --connect HOST:PORT --path P --iterations N --id ID --log FILE
                 [--go FILE] [--expect K] [--peers DIR] [--max-leases M]
                 [--tls-ca F --tls-cert F --tls-key F] [--sasl-user U --sasl-password P] [--whoami DIR]

ROLE: mutex, counter, latch, selector, sharedcount, rwlock, semaphore, semcount, queue, simplequeue,
doublebarrier, group, gzip, cache, watch, cohort, discovery, partition, lease (partition/lease: see
tests/interop/README.md; the same loops as kazoo_worker.py, on zkrecipes' SetPartitioner and
MultiNonBlockingLease).
doublebarrier, group, gzip, cache, watch, cohort, putmulti, sharder, values.
values: a SharedValue at P/value, DistributedAtomicValues at P/atomic and P/atomic-set (promoted to a
lock at P/atomic-lock) and a CachedAtomicLong at P/ids, the workload of Values.java (class Values
below): "set python ID PRE POST PROMOTED", "value python ID V", "atomic python ID V", "id python
ID V", then "retries python ID VALUE ATOMIC SET ID".
putmulti: puts "python:i" three to a node (put_multi) into a DistributedQueue (lock path P-locks),
then consumes until idle: "got python ID ITEM TOKEN" per message. sharder: a QueueSharder
(P/queues, leader P/leader, lock paths P-locks/SHARD, threshold 3, checks every 0.2 s, at most 4
shards): puts through get_queue(), consumes from every shard, then "shards python ID K".
mutex and counter: the first half of the N operations through the blocking API, the rest through
asyncio (acquire_async / add_and_get_async under asyncio.run).
Log lines: "start python ID TOKEN NS" / "end python ID TOKEN NS" (time.monotonic_ns(), i.e.
CLOCK_MONOTONIC; rwlock/semaphore: TOKEN is the tag read|write|lease), "inc python ID VALUE" /
"fail python ID ERR", "lead"/"unlead python ID NS", then "done python ID COUNT".

ensemble: connected with track_ensemble=True to a reconfigurable ensemble; "session python ID SID"
before the barrier, then mutex sections stamped like mutex's until the file GO.changed exists
("changed python ID K" after K sections), then N more; then "session python ID SID" again and
"hosts python ID CONNECT" (current_connect_string).

Secured servers (the tls scenario): TlsOptions (mutual TLS) and SaslOptions (DIGEST-MD5);
--whoami DIR creates DIR/ID with CREATOR_ALL_ACL, so that its ACL names the identities the
session authenticated as.

cohort: 4 threads share ONE InterProcessMutex object with cohort handoffs
(CohortOptions(max_handoffs=8, max_hold=0.005)) and take it N times in all (thread k: N//4,
plus one for k < N%4); each section is stamped like mutex's, with TOKEN the wide fencing token
(fencing_token_wide: czxid << 32 | handoff, in decimal) and a ~0.2 ms sleep inside. The lines of
the 4 threads go to the log under one lock (never interleaved); then "done python ID N".
"""
import argparse
import asyncio
import json
import calendar
import os
import threading
import time

import zkrecipes

# the start barrier's poll: every worker waits for the runner's go file (about 120 workers at once; 1 ms polls starved the servers on 2 cores)
BARRIER_POLL = 0.02


def wait_for_peer(peers, me):
    """Marks our first section in PEERS/ME and waits (30 s at most) for another worker's mark."""
    if not peers:
        return
    open(os.path.join(peers, me), "w").close()
    t = time.monotonic()
    while time.monotonic() - t < 30:
        if any(name != me for name in os.listdir(peers)):
            return
        time.sleep(0.001)


def semcount(client, a, log):
    """A semaphore whose limit is the SharedCount at P-count (1): N sections at limit 1 (lease1);
    then PEERS/p1/ID, wait for the Rust worker's PEERS/raised (it set the count to 3 and holds a
    lease until every other worker marked PEERS/p2/ID inside its first lease2 section), and N
    sections (lease2)."""
    count = zkrecipes.SharedCount(client, a.path + "-count", 1)
    count.start()
    sem = zkrecipes.InterProcessSemaphoreV2(client, a.path, count=count)

    def section(tag, mark=None):
        leases = sem.acquire(1)
        assert leases, "no lease without a timeout"
        log.write(f"start python {a.id} {tag} {time.monotonic_ns()}\n")
        if mark:
            open(mark, "w").close()
        time.sleep(0.001)
        log.write(f"end python {a.id} {tag} {time.monotonic_ns()}\n")
        sem.return_lease(leases[0])

    for _ in range(a.iterations):
        section("lease1")
    for d in ("p1", "p2"):
        os.makedirs(os.path.join(a.peers, d), exist_ok=True)
    open(os.path.join(a.peers, "p1", a.id), "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(a.peers, "raised")):
        if time.monotonic() > deadline:
            raise SystemExit("the count was never raised")
        time.sleep(0.002)
    for i in range(a.iterations):
        section("lease2", os.path.join(a.peers, "p2", a.id) if i == 0 else None)
    log.write(f"done python {a.id} {2 * a.iterations}\n")
    count.close()


def wait_for_curator_consumer(go, role):
    """Queue scenarios: consume once Curator took one of our items (GO.ROLE.java-took), or after 30 s."""
    deadline = time.monotonic() + 30
    while go and not os.path.exists(f"{go}.{role}.java-took") and time.monotonic() < deadline:
        time.sleep(0.005)


def wait_for_file(go):
    while go and not os.path.exists(go):
        time.sleep(BARRIER_POLL)


def poll(f):
    """Polls f every 20 ms for up to 60 s; whether it held."""
    t = time.monotonic()
    while time.monotonic() - t < 60:
        if f():
            return True
        time.sleep(0.02)
    return False


def wait_count(want, count):
    """Polls count() every 5 ms until it reaches want, giving up only after 60 s in which it did
    not grow: a slow peer on a loaded machine (the long run's 120 workers on 2 CPUs) is still
    waited for, a stuck one is not; the count last seen."""
    seen, since = count(), time.monotonic()
    while seen < want and time.monotonic() - since < 60:
        time.sleep(0.005)
        now = count()
        if now != seen:
            seen, since = now, time.monotonic()
    return seen


def members_at(members, expect, phases):
    return len(members) >= expect and all(any(v == f"{p}-{k}".encode() for p in phases) for k, v in members.items())


def group(client, a, log):
    """The group scenario (tests/interop/README.md): join, see all, set p1, see all p1, mark,
    then see rust-group leave."""
    with zkrecipes.GroupMember(client, a.path, a.id, f"p0-{a.id}".encode()) as m:
        log.write(f"joined python {a.id}\n")
        if poll(lambda: members_at(m.current_members(), a.expect, ("p0", "p1"))):
            log.write(f"saw-all python {a.id} {','.join(sorted(m.current_members()))}\n")
        m.set_this_data(f"p1-{a.id}".encode())
        if poll(lambda: members_at(m.current_members(), a.expect, ("p1",))):
            log.write(f"saw-data python {a.id} {','.join(sorted(m.current_members()))}\n")
        open(os.path.join(a.peers, a.id), "w").close()
        if poll(lambda: "rust-group" not in m.current_members()):
            log.write(f"saw-leave python {a.id}\n")
    log.write(f"done python {a.id} 1\n")


def gzip_payload(id_):
    return (f"gzip payload of {id_} " * 20).encode()


def gzip(client, a, log):
    """The gzip scenario: write ours compressed, read every runtime's back decompressed."""
    client.create(f"{a.path}/{a.id}", gzip_payload(a.id), compressed=True, create_parents="persistent")
    log.write(f"wrote python {a.id}\n")
    poll(lambda: len(client.get_children(a.path)) >= a.expect)
    children = sorted(client.get_children(a.path))
    for other in children:
        try:
            ok = client.get_data(f"{a.path}/{other}", compressed=True)[0] == gzip_payload(other)
        except zkrecipes.ZkRecipesError:
            ok = False
        log.write(f"read python {a.id} {other} {'ok' if ok else 'bad'}\n")
    log.write(f"done python {a.id} {len(children)}\n")


def cohort(client, a, log):
    """The cohort scenario: 4 threads, one mutex object with cohort handoffs, N sections in all."""
    m = zkrecipes.InterProcessMutex(
        client, a.path, cohort=zkrecipes.CohortOptions(max_handoffs=8, max_hold=0.005)
    )
    log_lock = threading.Lock()
    failures = []

    def stamp(kind, token):
        with log_lock:
            log.write(f"{kind} python {a.id} {token} {time.monotonic_ns()}\n")

    def work(k):
        try:
            for _ in range(a.iterations // 4 + (1 if k < a.iterations % 4 else 0)):
                with m:
                    token = m.fencing_token_wide
                    stamp("start", token)
                    time.sleep(0.0002)
                    stamp("end", token)
        except BaseException as e:  # reported by the main thread
            failures.append(e)

    threads = [threading.Thread(target=work, args=(k,), name=f"cohort-{k}") for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise SystemExit(f"cohort: a thread failed: {failures[0]!r}")
    log.write(f"done python {a.id} {a.iterations}\n")


DISCOVERY_SERVICES = ["java", "rust", "c", "python", "node"]


def canon(i: "zkrecipes.ServiceInstance") -> str:
    """An instance's fields as one JSON object, the same in every worker."""
    return json.dumps({
        "name": i.name, "id": i.id, "address": i.address, "port": i.port, "sslPort": i.ssl_port,
        "payload": i.payload, "payloadClass": i.payload_class,
        "registrationTimeUTC": i.registration_time_utc, "serviceType": str(i.service_type),
        "uriSpec": None if i.uri_spec is None else str(i.uri_spec), "enabled": i.enabled,
    }, separators=(",", ":"))


class DiscoverySide:
    """The discovery scenario (tests/interop/README.md): a ServiceCache and a round-robin
    ServiceProvider per runtime's service, started before the barrier; then this worker's
    instances under service "python" (map, pojo, list, none, the disabled "off", K extras),
    "registered"/"found"/"picked"/"usable" lines, peers, close. The Python face has no
    write-enabled mode: no "full" instance here."""

    def __init__(self, client: "zkrecipes.Client", base: str) -> None:
        self.d = zkrecipes.ServiceDiscovery(client, base)
        self.caches = {}
        self.providers = {}
        for s in DISCOVERY_SERVICES:
            c = zkrecipes.ServiceCache(self.d, s)
            c.start()
            assert c.await_initialized(60), "service cache not loaded"
            self.caches[s] = c
            pr = zkrecipes.ServiceProvider(self.d, s, strategy="round_robin")
            pr.start()
            self.providers[s] = pr

    def run(self, a: argparse.Namespace, log) -> None:
        SI = zkrecipes.ServiceInstance
        lhm = "java.util.LinkedHashMap"
        mp = {"region": "eu-west", "weight": 1.5, "ratio": 2.5e-4, "big": 10000000000,
              "tags": ["a", "b"], "nested": {"k": "v"}, "note": "say \"hi\"\t\u00e9\u00fc/\u0001"}
        mine = [
            SI("python", id="python-map", address="10.0.0.1", port=8080, payload=mp, payload_class=lhm,
               uri_spec="{scheme}://{address}:{port}/map"),
            SI("python", id="python-pojo", address="10.0.0.2", port=8081, ssl_port=8443,
               payload={"region": "us", "weight": 3, "primary": True},
               payload_class="zkrecipes.interop.Discovery$Details", service_type="STATIC",
               uri_spec="{scheme}://{address}:{ssl-port}/pojo"),
            SI("python", id="python-list", address="10.0.0.3", port=8082, payload=["x", 1, 2.5, True, None],
               payload_class="java.util.ArrayList", uri_spec="{scheme}://{address}:{port}/{[}list{]}"),
            SI("python", id="python-none", address="10.0.0.4", port=8083),
            SI("python", id="python-off", address="10.0.0.5", port=8084, enabled=False),
        ]
        mine += [SI("python", id=f"python-e{k}", address=f"10.1.0.{k % 250}", port=9000 + k,
                    payload={"i": k}, payload_class=lhm) for k in range(a.iterations)]
        regs = []
        for i in mine:
            r = self.d.register(i)
            regs.append(r)
            log.write(f"registered python python/{r.instance.id} {canon(r.instance)}\n")
        t = time.monotonic()
        wait_count(a.expect, lambda: sum(len(c.instances()) for c in self.caches.values()))
        # Each provider has a cache of its own, which may lag the worker's (seen under the load of
        # the long run): wait until it offers every enabled instance (all but the service's "-off").
        def caught_up():
            return all(len(pr.get_all_instances()) == sum(not i.id.endswith("-off") for i in self.caches[s].instances())
                       for s, pr in self.providers.items())
        t1 = time.monotonic()
        while not caught_up() and time.monotonic() - t1 < 60:
            time.sleep(0.02)
        log.write(f"waited python {round((t1 - t) * 1000)} {round((time.monotonic() - t1) * 1000)} {caught_up()}\n")
        for s, c in self.caches.items():
            for i in c.instances():
                log.write(f"found python {s}/{i.id} {canon(i)}\n")
        for s, pr in self.providers.items():
            for _ in range(2 * len(self.caches[s].instances())):
                i = pr.get_instance()
                log.write(f"picked python {s}/{'-' if i is None else i.id}\n")
            log.write(f"usable python {s} {','.join(sorted(i.id for i in pr.get_all_instances()))}\n")
        log.flush()
        open(os.path.join(a.peers, a.id), "w").close()
        # Our instances stay registered until every peer has picked and marked (the runner marks
        # a peer that exited; it kills every worker at its deadline).
        t = time.monotonic()
        while len(os.listdir(a.peers)) < len(DISCOVERY_SERVICES) and time.monotonic() - t < 600:
            time.sleep(0.02)
        for pr in self.providers.values():
            pr.close()
        for c in self.caches.values():
            c.close()
        self.d.close()
        log.write(f"done python {a.id} {len(regs)}\n")


PARTS = [f"p{i}" for i in range(8)]  # the partition scenario's set (every worker's)
HOLD = 0.4  # seconds a round's member stays ACQUIRED before it leaves


def kazoo_share(me, ids, parts):
    """kazoo's default partition_func."""
    workers = sorted(ids)
    return sorted(parts)[workers.index(me) :: len(workers)] if me in workers else None


def party_ids(client, path):
    return [c[c.find("-") + 1 :] for c in client.get_children(path + "/party")]


def drive(p, log, rt, me, until):
    """kazoo's loop on one partitioner, stamping `start/end RT ID PARTITION NS` around each hold
    (start once ACQUIRED, end before release_set); returns the held partitions (None if not
    ACQUIRED) once until(state, parts) is true."""
    held = None
    since = 0.0
    while True:
        state, parts = p.snapshot()
        if state is zkrecipes.PartitionState.ACQUIRED and held is None:
            held, since = parts, time.monotonic()
            for q in held:
                log.write(f"start {rt} {me} {q} {time.monotonic_ns()}\n")
        if until(state, parts, since):
            return held
        if state is zkrecipes.PartitionState.RELEASE:
            for q in held or []:
                log.write(f"end {rt} {me} {q} {time.monotonic_ns()}\n")
            held = None
            p.release_set()
        elif state is zkrecipes.PartitionState.FAILURE:
            raise SystemExit("partitioner FAILURE")
        else:
            p.wait_for_change(state, 0.05)


def leave(p, held, log, rt, me):
    for q in held or []:
        log.write(f"end {rt} {me} {q} {time.monotonic_ns()}\n")
    p.finish()


def wait_for_first(peers):
    """The Rust worker holds the whole set alone in its first round and then writes PEERS.first;
    the others join after it, so each takes partitions the Rust worker held (a cross-runtime
    handoff even when every member would otherwise join and leave at the same moments)."""
    deadline = time.monotonic() + 120
    while not os.path.exists(peers + ".first"):
        if time.monotonic() > deadline:
            raise SystemExit("the Rust worker's first round never ended (no PEERS.first)")
        time.sleep(0.005)


def partition(client, a, log):
    """The partition scenario: `iterations` rounds of join, hold for HOLD, leave; then a final
    member that logs its share once the party is all `expect` workers, until every worker did."""
    opts = dict(identifier=a.id, time_boundary=0.2, max_reaction_time=0.1)
    acquired = zkrecipes.PartitionState.ACQUIRED
    wait_for_first(a.peers)
    for r in range(a.iterations):
        p = zkrecipes.SetPartitioner(client, a.path, PARTS, **opts)
        deadline = time.monotonic() + 120
        hold = HOLD + (time.monotonic_ns() % 200) / 1000  # jittered, so that members leave apart
        held = drive(p, log, "python", a.id, lambda s, _, since: (s is acquired and time.monotonic() - since >= hold)
                     or time.monotonic() > deadline)
        if held is None:
            raise SystemExit(f"round {r}: never ACQUIRED")
        leave(p, held, log, "python", a.id)
        log.write(f"round python {a.id} {r}\n")
        time.sleep(0.3 + (time.monotonic_ns() % 200) / 1000)  # > time_boundary: the rest divide without us
    p = zkrecipes.SetPartitioner(client, a.path, PARTS, **opts)
    logged = [None]
    deadline = time.monotonic() + 120

    def final(state, parts, _since):
        if state is acquired and logged[0] != parts:
            ids = party_ids(client, a.path)
            if len(set(ids)) == len(ids) == a.expect and parts == kazoo_share(a.id, ids, PARTS):
                log.write(f"final python {a.id} {','.join(parts) or '-'}\n")
                open(os.path.join(a.peers, a.id), "w").close()
                logged[0] = parts
        return len(os.listdir(a.peers)) >= a.expect or time.monotonic() > deadline

    leave(p, drive(p, log, "python", a.id, final), log, "python", a.id)
    log.write(f"done python {a.id} {a.iterations}\n")


def lease(client, a, log):
    """The lease scenario: tries for one of 2 leases of 1 s (every 0.1 s) until it held one
    `iterations` times (60 s at most); a holder renews once within its lease, then waits for its
    end. Logs `lease RT ID SLOT START_NS END_NS` (wall clock) per hold and `renew RT ID ok|lost
    RETURNED_NS END_NS` (when the renewal returned, and the end of the lease it renewed)."""
    got = 0
    deadline = time.monotonic() + 60
    while got < a.iterations and time.monotonic() < deadline:
        m = zkrecipes.MultiNonBlockingLease(client, 2, a.path, 1.0, identifier=a.id)
        if not m:
            time.sleep(0.1)
            continue
        got += 1
        end = calendar.timegm(m.end.timetuple()) * 10**9
        log.write(f"lease python {a.id} {m.index} {time.time_ns()} {end}\n")
        time.sleep(0.2)
        if time.time_ns() < end - 500_000_000:
            r = zkrecipes.MultiNonBlockingLease(client, 2, a.path, 1.0, identifier=a.id)
            log.write(f"renew python {a.id} {'ok' if r else 'lost'} {time.time_ns()} {end}\n")
            if r:
                end = calendar.timegm(r.end.timetuple()) * 10**9
                log.write(f"lease python {a.id} {r.index} {time.time_ns()} {end}\n")
        time.sleep(max(0, end - time.time_ns()) / 1e9 + 0.05 + (time.monotonic_ns() % 100) / 1000)
    log.write(f"done python {a.id} {got}\n")


class Values:
    """The values scenario (tests/interop/README.md), as Curator's worker runs it (Values.java):
    P/value a SharedValue (seed b"0") counting in decimal text with get_versioned_value /
    try_set_value; P/atomic a DistributedAtomicValue (initialized b"0") with get /
    compare_and_set; P/atomic-set a DistributedAtomicValue with RetryNTimes(0, 0) (one optimistic
    try) promoted to a lock at P/atomic-lock (one try under it, Curator's default), initialized
    b"seed", written with try_set(b"ID:i"); P/ids a CachedAtomicLong (cache factor 5)."""

    def __init__(self, client, path):
        one_try = zkrecipes.RetryNTimes(0, 0)
        self.value = zkrecipes.SharedValue(client, f"{path}/value", b"0")
        self.value.start()
        self.atomic = zkrecipes.DistributedAtomicValue(client, f"{path}/atomic", retry=one_try)
        self.atomic.initialize(b"0")
        self.set = zkrecipes.DistributedAtomicValue(
            client, f"{path}/atomic-set", retry=one_try,
            promoted_to_lock=zkrecipes.PromotedToLock(f"{path}/atomic-lock"))
        self.set.initialize(b"seed")
        counter = zkrecipes.DistributedAtomicLong(client, f"{path}/ids", retry=zkrecipes.RetryNTimes(50, 0.01))
        self.ids = zkrecipes.CachedAtomicLong(counter, 5)

    def run(self, id_, n, log):
        value_retries = atomic_retries = set_fails = id_fails = 0
        text = lambda b: "null" if b is None else b.decode()
        for i in range(n):
            while True:
                r = self.set.try_set(f"{id_}:{i}".encode())
                if r.succeeded:
                    log.write(f"set python {id_} {text(r.pre_value)} {text(r.post_value)} "
                              f"{r.stats.promoted_lock_tries}\n")
                    break
                set_fails += 1
        for _ in range(n):
            while True:
                v = self.value.get_versioned_value()
                nxt = int(v.value) + 1
                if self.value.try_set_value(v, str(nxt).encode()):
                    log.write(f"value python {id_} {nxt}\n")
                    break
                value_retries += 1
            while True:
                current = self.atomic.get().post_value
                nxt = int(current) + 1
                if self.atomic.compare_and_set(current, str(nxt).encode()).succeeded:
                    log.write(f"atomic python {id_} {nxt}\n")
                    break
                atomic_retries += 1
            while True:
                r = self.ids.next()
                if r.succeeded:
                    log.write(f"id python {id_} {r.post_value}\n")
                    break
                id_fails += 1
        log.write(f"retries python {id_} {value_retries} {atomic_retries} {set_fails} {id_fails}\n")
        log.write(f"done python {id_} {n}\n")
        self.value.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--role", required=True)
    p.add_argument("--connect", required=True)
    p.add_argument("--path", required=True)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--id", default="python")
    p.add_argument("--log", default="/dev/null")
    p.add_argument("--go", help="start barrier: wait for this file after connecting")
    p.add_argument("--expect", type=int, default=5, help="latch: participants to wait for")
    p.add_argument("--peers", help="rwlock/semaphore: directory of first-section marks")
    p.add_argument("--max-leases", type=int, default=2)
    p.add_argument("--tls-ca")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--sasl-user")
    p.add_argument("--sasl-password")
    p.add_argument("--whoami", help="create WHOAMI/ID with CREATOR_ALL_ACL after connecting")
    a = p.parse_args()
    secure = {}
    if a.tls_ca:
        secure["tls"] = zkrecipes.TlsOptions(ca=a.tls_ca, cert=a.tls_cert, key=a.tls_key)
    if a.sasl_user:
        secure["sasl"] = zkrecipes.SaslOptions(a.sasl_user, a.sasl_password)
    # Every scenario's workers connect at once on a 2-core machine (a 15 s connect timed out in CI):
    # a minute for every connection, within the runner's 90 s ready barrier.
    timeout = 60.0
    # ensemble: follow the members as they change (Curator's EnsembleTracker).
    secure["track_ensemble"] = a.role == "ensemble"
    with zkrecipes.Client(a.connect, session_timeout=30.0, connection_timeout=timeout, **secure) as client, \
            open(a.log, "a", buffering=1) as log:
        if a.role == "ensemble":
            log.write(f"session python {a.id} {client.session_id}\n")
        if a.whoami:  # a node whose ACL is the session's own identities
            client.create(f"{a.whoami}/{a.id}", create_parents=True, acl=zkrecipes.CREATOR_ALL_ACL)
        latch = None
        if a.role == "latch":  # join, then wait until every runtime's participant is listed
            latch = zkrecipes.LeaderLatch(client, a.path, id=a.id)
            latch.start()
            t = time.monotonic()
            while True:
                ids = sorted(p.id for p in latch.get_participants())
                if len(ids) >= a.expect or time.monotonic() - t > 60:
                    break
                time.sleep(0.02)
            log.write(f"participants python {a.id} {','.join(ids)}\n")
        terms = [0]
        cond = threading.Condition()
        selector = None
        if a.role == "selector":  # queue, then wait until every runtime's participant is listed

            def take(ctx):
                wait_for_file(a.go)
                if terms[0] >= a.iterations:
                    return  # our share is done; main closes the selector
                log.write(f"lead python {a.id} {time.monotonic_ns()}\n")
                time.sleep(0.01)
                assert ctx.cancel_reason is None, "leadership cancelled while leading"
                log.write(f"unlead python {a.id} {time.monotonic_ns()}\n")
                with cond:
                    terms[0] += 1
                    cond.notify_all()

            selector = zkrecipes.LeaderSelector(client, a.path, take, id=a.id)
            selector.auto_requeue()
            selector.start()
            t = time.monotonic()
            while True:
                ids = sorted(p.id for p in selector.get_participants())
                if len(ids) >= a.expect or time.monotonic() - t > 60:
                    break
                time.sleep(0.02)
            log.write(f"participants python {a.id} {','.join(ids)}\n")
        cache = None
        net = [0]
        if a.role == "cache":  # a CuratorCache counting its events, loaded before the barrier

            def count(event: "zkrecipes.CacheEvent") -> None:
                net[0] += {"CREATED": 1, "DELETED": -1}.get(str(event.type), 0)

            cache = zkrecipes.CuratorCache(client, a.path)
            cache.listen(count)
            cache.start()
            assert cache.await_initialized(60), "cache not loaded"
        watcher = None
        heard: list = []
        if a.role == "watch":  # a recursive PersistentWatcher, set before the barrier

            def hear(event: "zkrecipes.WatcherEvent") -> None:
                if event.path is not None and event.path != a.path:
                    heard.append(f"{event.type.value} {event.path}")

            watcher = zkrecipes.PersistentWatcher(client, a.path, recursive=True)
            watcher.listen(hear)
            watcher.start()
        disco = None
        if a.role == "discovery":  # a cache and a provider per runtime's service, before the barrier
            disco = DiscoverySide(client, a.path)
        # values: every object started and every node initialized before the barrier.
        values = Values(client, a.path) if a.role == "values" else None
        if a.go:
            log.write(f"ready python {a.id}\n")
            wait_for_file(a.go)
        if a.role == "mutex":
            # The first half through the blocking API, the rest through asyncio (the loop's own
            # thread drives the runtime then: bindings-python/src/turns.rs).
            m = zkrecipes.InterProcessMutex(client, a.path)
            blocking = a.iterations // 2
            for _ in range(blocking):
                assert m.acquire()
                token = m.fencing_token
                log.write(f"start python {a.id} {token} {time.monotonic_ns()}\n")
                time.sleep(0.0002)
                log.write(f"end python {a.id} {token} {time.monotonic_ns()}\n")
                m.release()

            async def sections() -> None:
                for _ in range(a.iterations - blocking):
                    assert await m.acquire_async()
                    token = m.fencing_token
                    log.write(f"start python {a.id} {token} {time.monotonic_ns()}\n")
                    await asyncio.sleep(0.0002)
                    log.write(f"end python {a.id} {token} {time.monotonic_ns()}\n")
                    await m.release_async()

            asyncio.run(sections())
            log.write(f"done python {a.id} {a.iterations}\n")
        elif a.role == "ensemble":  # sections until the runner changed the ensemble, then N more
            m = zkrecipes.InterProcessMutex(client, a.path)
            count, after = 0, None
            while after is None or count < after + a.iterations:
                if after is None and os.path.exists(a.go + ".changed"):
                    log.write(f"changed python {a.id} {count}\n")
                    after = count
                assert m.acquire()
                token = m.fencing_token
                log.write(f"start python {a.id} {token} {time.monotonic_ns()}\n")
                time.sleep(0.0002)
                log.write(f"end python {a.id} {token} {time.monotonic_ns()}\n")
                m.release()
                count += 1
            log.write(f"session python {a.id} {client.session_id}\n")
            log.write(f"hosts python {a.id} {client.current_connect_string}\n")
            log.write(f"done python {a.id} {count}\n")
        elif a.role == "cohort":
            cohort(client, a, log)
        elif a.role == "latch":
            for rnd in range(a.iterations):
                if rnd > 0:
                    latch = zkrecipes.LeaderLatch(client, a.path, id=a.id)
                    latch.start()
                assert latch.await_leadership(timeout=60.0), "never led"
                log.write(f"lead python {a.id} {time.monotonic_ns()}\n")
                time.sleep(0.02)
                assert latch.has_leadership(), "lost leadership while leading"
                log.write(f"unlead python {a.id} {time.monotonic_ns()}\n")
                latch.close()
            log.write(f"done python {a.id} {a.iterations}\n")
        elif a.role == "counter":
            # Half through the blocking API, half through asyncio, as mutex does.
            c = zkrecipes.DistributedAtomicLong(client, a.path)
            ok = 0
            blocking = a.iterations // 2
            for _ in range(blocking):
                try:
                    v = c.add_and_get(1, timeout=30.0)
                    ok += 1
                    log.write(f"inc python {a.id} {v}\n")
                except zkrecipes.ZkRecipesError as e:
                    log.write(f"fail python {a.id} {type(e).__name__}\n")

            async def increments() -> int:
                done = 0
                for _ in range(a.iterations - blocking):
                    try:
                        v = await c.add_and_get_async(1, timeout=30.0)
                        done += 1
                        log.write(f"inc python {a.id} {v}\n")
                    except zkrecipes.ZkRecipesError as e:
                        log.write(f"fail python {a.id} {type(e).__name__}\n")
                return done

            ok += asyncio.run(increments())
            log.write(f"done python {a.id} {ok}\n")
        elif a.role == "selector":
            with cond:
                if not cond.wait_for(lambda: terms[0] >= a.iterations, timeout=120):
                    raise SystemExit(f"led only {terms[0]} times")
            selector.close()
            log.write(f"done python {a.id} {terms[0]}\n")
        elif a.role == "values":
            values.run(a.id, a.iterations, log)
        elif a.role == "sharedcount":
            c = zkrecipes.SharedCount(client, a.path, 0)
            c.start()
            ok = retries = 0
            for _ in range(a.iterations):
                while True:
                    v = c.get_versioned_value()
                    if c.try_set_count(v, v.value + 1):
                        ok += 1
                        log.write(f"inc python {a.id} {v.value + 1}\n")
                        break
                    retries += 1
            log.write(f"retries python {a.id} {retries}\n")
            log.write(f"done python {a.id} {ok}\n")
            c.close()
        elif a.role == "rwlock":
            rw = zkrecipes.InterProcessReadWriteLock(client, a.path)
            for i in range(a.iterations):
                write = i % 3 == 1
                lock, tag = (rw.write_lock(), "write") if write else (rw.read_lock(), "read")
                with lock:
                    log.write(f"start python {a.id} {tag} {time.monotonic_ns()}\n")
                    if i == 0:
                        wait_for_peer(a.peers, a.id)
                    time.sleep(0.001 if write else 0.002)
                    log.write(f"end python {a.id} {tag} {time.monotonic_ns()}\n")
            log.write(f"done python {a.id} {a.iterations}\n")
        elif a.role == "semaphore":
            sem = zkrecipes.InterProcessSemaphoreV2(client, a.path, a.max_leases)
            for i in range(a.iterations):
                leases = sem.acquire(1)
                assert leases, "no lease without a timeout"
                log.write(f"start python {a.id} lease {time.monotonic_ns()}\n")
                if i == 0:
                    wait_for_peer(a.peers, a.id)
                time.sleep(0.001)
                log.write(f"end python {a.id} lease {time.monotonic_ns()}\n")
                sem.return_lease(leases[0])
            log.write(f"done python {a.id} {a.iterations}\n")
        elif a.role == "semcount":
            semcount(client, a, log)
        elif a.role == "group":
            group(client, a, log)
        elif a.role == "gzip":
            gzip(client, a, log)
        elif a.role == "partition":
            partition(client, a, log)
        elif a.role == "lease":
            lease(client, a, log)
        elif a.role in ("queue", "simplequeue"):
            # Put N items, then consume until idle for 3 s (queue: exactly once, lock path P-locks).
            if a.role == "queue":
                q = zkrecipes.DistributedQueue(client, a.path, lock_path=a.path + "-locks")
                for i in range(a.iterations):
                    assert q.put(f"python:{i}".encode())
                wait_for_curator_consumer(a.go, a.role)
                got = 0
                for item in q.consume(timeout=3.0):
                    time.sleep(0.002)
                    data, token = item.data.decode(), item.fencing_token
                    item.done()
                    log.write(f"got python {a.id} {data} {token}\n")
                    got += 1
            else:
                sq = zkrecipes.SimpleDistributedQueue(client, a.path)
                for i in range(a.iterations):
                    sq.offer(f"python:{i}".encode())
                wait_for_curator_consumer(a.go, a.role)
                got = 0
                while (d := sq.take(3.0)) is not None:
                    log.write(f"got python {a.id} {d.decode()} 0\n")
                    got += 1
            log.write(f"done python {a.id} {got}\n")
        elif a.role == "putmulti":
            q = zkrecipes.DistributedQueue(client, a.path, lock_path=a.path + "-locks")
            items = [f"python:{i}".encode() for i in range(a.iterations)]
            for k in range(0, len(items), 3):
                assert q.put_multi(items[k : k + 3])
            wait_for_curator_consumer(a.go, a.role)
            got = 0
            for item in q.consume(timeout=3.0):
                time.sleep(0.002)
                messages, token = [m.decode() for m in item.messages], item.fencing_token
                item.done()
                for m in messages:
                    log.write(f"got python {a.id} {m} {token}\n")
                    got += 1
            log.write(f"done python {a.id} {got}\n")
        elif a.role == "sharder":
            sharder = zkrecipes.QueueSharder(client, a.path + "/queues", a.path + "/leader",
                                             lock_path=a.path + "-locks", new_queue_threshold=3,
                                             threshold_check=0.2, max_queues=4)
            with sharder:
                for i in range(a.iterations):
                    assert sharder.get_queue().put(f"python:{i}".encode())
                    time.sleep(0.01)
                wait_for_curator_consumer(a.go, a.role)
                got = 0
                for item in sharder.consume(timeout=3.0):
                    data, token = item.data.decode(), item.fencing_token
                    item.done()
                    log.write(f"got python {a.id} {data} {token}\n")
                    got += 1
                log.write(f"shards python {a.id} {sharder.shard_qty}\n")
            log.write(f"done python {a.id} {got}\n")
        elif a.role == "doublebarrier":
            b = zkrecipes.DistributedDoubleBarrier(client, a.path, a.expect)
            time.sleep((time.monotonic_ns() % 300) / 1000)
            log.write(f"arrive python {a.id} {time.monotonic_ns()}\n")
            log.flush()
            assert b.enter(60), "enter timed out"
            log.write(f"entered python {a.id} {time.monotonic_ns()}\n")
            time.sleep(0.05)
            log.write(f"leaving python {a.id} {time.monotonic_ns()}\n")
            log.flush()
            assert b.leave(60), "leave timed out"
            log.write(f"left python {a.id} {time.monotonic_ns()}\n")
            log.write(f"done python {a.id} 1\n")
        elif a.role == "cache":  # our share, then wait until every runtime's share is cached
            assert cache is not None
            for i in range(a.iterations):
                client.create(f"{a.path}/{a.id}-{i}", a.id.encode(), create_parents=True)
            want = a.expect * a.iterations + 1
            wait_count(want, lambda: len(cache))
            children = [n for n in cache if n.path != a.path]
            for n in children:
                log.write(f"node python {a.id} {n.path} {(n.data or b'').decode()}\n")
            t = time.monotonic()
            while net[0] != len(cache) and time.monotonic() - t < 10:
                time.sleep(0.005)
            log.write(f"events python {a.id} {net[0]} {len(cache)}\n")
            log.write(f"done python {a.id} {len(children)}\n")
            cache.close()
        elif a.role == "watch":  # create + set our share, then wait to hear everyone's
            assert watcher is not None
            for i in range(a.iterations):
                p = f"{a.path}/{a.id}-{i}"
                client.create(p, b"", create_parents=True)
                client.set_data(p, a.id.encode())
            want = 2 * a.expect * a.iterations
            wait_count(want, lambda: len(heard))
            watcher.close()
            for h in list(heard):
                log.write(f"heard python {a.id} {h}\n")
            log.write(f"done python {a.id} {len(heard)}\n")
        elif a.role == "discovery":
            assert disco is not None
            disco.run(a, log)
        else:
            raise SystemExit(f"unknown role {a.role}")


if __name__ == "__main__":
    main()
