package zkrecipes.interop;

import java.io.FileWriter;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.TimeUnit;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.QueueSharder;
import org.apache.curator.framework.recipes.queue.QueueSharderPolicies;
import org.apache.curator.utils.ZKPaths;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;

/**
 * The Apache Curator worker of the interop runner (tests/interop/run).
 *
 * java -jar curator-worker.jar --role mutex|counter|counter-get --connect HOST:PORT --path P
 *      --iterations N --id ID --log FILE
 *
 * latch: joins, logs "participants java ID ids,...", then per round "lead java ID NS" / "unlead java ID NS".
 * mutex: "start java ID TOKEN NS" / "end java ID TOKEN NS" around each critical section; NS is
 * System.nanoTime() (CLOCK_MONOTONIC on Linux), TOKEN the czxid of Curator's own lock node (the
 * first of getParticipantNodes() while we hold the lock), the same fencing token zkrecipes uses.
 * counter: "inc java ID VALUE" per increment() that succeeded, "fail java ID" otherwise.
 * selector: LeaderSelector (setId, autoRequeue): "participants ..." then per term
 * "lead java ID NS" / "unlead java ID NS" inside takeLeadership.
 * sharedcount: SharedCount, trySetCount(VersionedValue) CAS loop: "inc java ID VALUE" per success,
 * "retries java ID K".
 * rwlock / semaphore: "start java ID TAG NS" / "end java ID TAG NS", TAG read|write or lease; the
 * first section waits until another worker marked its own in --peers DIR.
 * mutex-hold (the zkr CLI tests): logs "session java ID 0xSESSION", acquires once (a waiter
 * until then), logs "acquired java ID TOKEN", holds until the --go file exists, releases.
 * cache: Curator's CuratorCache; creates N nodes PATH/ID-i, waits until every runtime's are cached,
 * logs "node java ID PATH DATA" per cached child and "events java ID CREATED-DELETED SIZE".
 * watch: Curator's PersistentWatcher (recursive); creates N nodes PATH/ID-i and sets each once,
 * waits until it heard every runtime's creates and sets, logs "heard java ID TYPE PATH" per event.
 * discovery: Curator's curator-x-discovery (ServiceDiscovery in both serializer modes, ServiceCache,
 * ServiceProvider), see Discovery.java; --iterations K extra instances, --expect the instances of all
 * runtimes, --golden DIR for the bytes Curator writes.
 * putmulti: Curator's DistributedQueue (lock path P-locks); puts "java:i" three to a node with
 * putMulti, consumes until idle: "got java ID ITEM -1" per message.
 * sharder: Curator's QueueSharder (P/queues, leader P/leader, each shard S locking under
 * P-locks/S, threshold 3, checks every 200 ms, at most 4 shards); puts "java:i" through getQueue(),
 * consumes (every shard's QueueConsumer) until idle: "got ...", then "shards java ID K".
 * values: Curator's SharedValue, DistributedAtomicValue (compareAndSet; trySet promoted to a lock)
 * and CachedAtomicLong on P/value, P/atomic, P/atomic-set (lock P/atomic-lock) and P/ids, see
 * Values.java.
 * All end with "done java ID COUNT". counter-get / sharedcount-get print the value; values-get
 * prints "VALUE ATOMIC SET IDS".
 *
 * Secured servers (the tls scenario): --tls-ca F --tls-cert F --tls-key F --sasl-user U
 * --sasl-password P connect Curator through ZooKeeper's Netty client over mutual TLS
 * (ZKClientConfig: zookeeper.client.secure=true, ClientCnxnSocketNetty, PEM trust store = the CA,
 * PEM key store = one file with the PKCS#8 key and the certificate, written next to the log) and
 * SASL DIGEST-MD5 (a JAAS "Client" section, java.security.auth.login.config). --whoami DIR then
 * creates DIR/ID with CREATOR_ALL_ACL, so that its ACL names the session's identities.
 */
public final class Worker {
    /** The start barrier's poll (ms): every worker waits for the runner's go file (about 120
     * workers at once; 1 ms polls starved the servers on 2 cores). */
    static final long BARRIER_POLL_MS = 20;

    private static void waitForPeer(String dir, String id) throws Exception {
        if (dir == null) return;
        java.io.File d = new java.io.File(dir);
        new java.io.File(d, id).createNewFile();
        long t = System.nanoTime();
        while (System.nanoTime() - t < 30_000_000_000L) {
            String[] names = d.list();
            if (names != null) for (String name : names) if (!name.equals(id)) return;
            Thread.sleep(1);
        }
    }

    /** Byte arrays as they are: the item bytes zkrecipes puts. */
    static final QueueSerializer<byte[]> BYTES = new QueueSerializer<byte[]>() {
        @Override
        public byte[] serialize(byte[] item) { return item; }

        @Override
        public byte[] deserialize(byte[] b) { return b; }
    };

    /** A consumer that logs "got java ID ITEM -1" per message and notes when it last got one. */
    static QueueConsumer<byte[]> loggingConsumer(PrintWriter qlog, String id, String go, String role,
            AtomicInteger got, AtomicLong last) {
        return new QueueConsumer<byte[]>() {
            @Override
            public void consumeMessage(byte[] m) throws Exception {
                Thread.sleep(2);
                synchronized (qlog) {
                    qlog.println("got java " + id + " " + new String(m, StandardCharsets.UTF_8) + " -1");
                    qlog.flush();
                }
                got.incrementAndGet();
                last.set(System.nanoTime());
                tookOneOfOurs(go, role, m);
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
    }

    private static void waitForFile(String go) throws InterruptedException {
        while (go != null && !new java.io.File(go).exists()) Thread.sleep(BARRIER_POLL_MS);
    }

    /**
     * The queue scenarios: zkrecipes' consumers wait (at most 30 s) for GO.ROLE.java-took, written once
     * Curator took an item zkrecipes put, so the crossing check never depends on who is faster.
     */
    static void tookOneOfOurs(String go, String role, byte[] item) {
        if (go == null || new String(item, StandardCharsets.UTF_8).startsWith("java:")) return;
        try {
            new java.io.File(go + "." + role + ".java-took").createNewFile();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * ZooKeeper's client settings for a secured server (what tests/harness/README.md lists as the
     * Java client properties that work): TLS over the Netty socket with PEM stores, and SASL
     * DIGEST-MD5 through a JAAS file. Java's PEM key store must be one file holding the PKCS#8 key
     * and the certificate; it is written from --tls-key and --tls-cert.
     */
    private static org.apache.zookeeper.client.ZKClientConfig secureConfig(Map<String, String> a)
            throws Exception {
        String id = a.getOrDefault("--id", "java");
        java.nio.file.Path dir = a.containsKey("--log")
                ? java.nio.file.Path.of(a.get("--log")).toAbsolutePath().getParent()
                : java.nio.file.Files.createTempDirectory("curator-worker-tls");
        if (a.containsKey("--sasl-user")) {
            java.nio.file.Path jaas = dir.resolve(id + "-jaas.conf");
            java.nio.file.Files.writeString(jaas, "Client {\n"
                    + "    org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                    + "    username=\"" + a.get("--sasl-user") + "\"\n"
                    + "    password=\"" + a.get("--sasl-password") + "\";\n};\n");
            jaas.toFile().deleteOnExit();
            System.setProperty("java.security.auth.login.config", jaas.toString());
        }
        org.apache.zookeeper.client.ZKClientConfig zk = new org.apache.zookeeper.client.ZKClientConfig();
        if (a.containsKey("--tls-ca")) {
            zk.setProperty(org.apache.zookeeper.client.ZKClientConfig.SECURE_CLIENT, "true");
            zk.setProperty(org.apache.zookeeper.client.ZKClientConfig.ZOOKEEPER_CLIENT_CNXN_SOCKET,
                    "org.apache.zookeeper.ClientCnxnSocketNetty");
            zk.setProperty("zookeeper.ssl.trustStore.location", a.get("--tls-ca"));
            zk.setProperty("zookeeper.ssl.trustStore.type", "PEM");
            // Curator 5.9 brings ZooKeeper 3.9's client, which offers only TLS 1.3 unless told
            // otherwise; the harness's ZooKeeper 3.8 server speaks TLS 1.2 only.
            zk.setProperty("zookeeper.ssl.enabledProtocols", "TLSv1.3,TLSv1.2");
            if (a.containsKey("--tls-cert")) {
                java.nio.file.Path keystore = dir.resolve(id + "-keystore.pem");
                java.nio.file.Files.writeString(keystore,
                        java.nio.file.Files.readString(java.nio.file.Path.of(a.get("--tls-key")))
                                + java.nio.file.Files.readString(java.nio.file.Path.of(a.get("--tls-cert"))));
                keystore.toFile().deleteOnExit();
                zk.setProperty("zookeeper.ssl.keyStore.location", keystore.toString());
                zk.setProperty("zookeeper.ssl.keyStore.type", "PEM");
            }
        }
        return zk;
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) a.put(argv[i], argv[i + 1]);
        String role = a.getOrDefault("--role", "");
        String path = a.get("--path");
        String id = a.getOrDefault("--id", "java");
        int n = Integer.parseInt(a.getOrDefault("--iterations", "20"));
        String logPath = a.get("--log");

        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(a.get("--connect"))
                .sessionTimeoutMs(30_000)
                // Every scenario's workers connect at once on a 2-core machine (a 15 s connect
                // timed out in CI): a minute, within the runner's 90 s ready barrier.
                .connectionTimeoutMs(60_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5));
        boolean secure = a.containsKey("--tls-ca") || a.containsKey("--sasl-user");
        if (secure) {
            builder.zkClientConfig(secureConfig(a));
        }
        CuratorFramework client = builder.build();
        client.start();
        if (!client.blockUntilConnected(60, java.util.concurrent.TimeUnit.SECONDS)) {
            throw new IllegalStateException("could not connect");
        }
        if (a.containsKey("--whoami")) { // a node whose ACL is the session's own identities
            client.create().creatingParentContainersIfNeeded()
                    .withACL(org.apache.zookeeper.ZooDefs.Ids.CREATOR_ALL_ACL)
                    .forPath(a.get("--whoami") + "/" + id);
        }
        PrintWriter log = logPath == null ? new PrintWriter(java.io.Writer.nullWriter())
                : new PrintWriter(new FileWriter(logPath, true));
        try {
            String go = a.get("--go");
            int expect = Integer.parseInt(a.getOrDefault("--expect", "5"));
            LeaderLatch latch = null;
            if (role.equals("latch")) { // join, then wait until every runtime's participant is listed
                latch = new LeaderLatch(client, path, id);
                latch.start();
                long t = System.nanoTime();
                java.util.List<String> ids;
                for (;;) {
                    ids = new ArrayList<>();
                    for (Participant p : latch.getParticipants()) ids.add(p.getId());
                    java.util.Collections.sort(ids);
                    if (ids.size() >= expect || System.nanoTime() - t > 60_000_000_000L) break;
                    Thread.sleep(20);
                }
                log.println("participants java " + id + " " + String.join(",", ids));
            }
            final String goFile = go;
            final Object termLock = new Object();
            final AtomicInteger terms = new AtomicInteger();
            LeaderSelector selector = null;
            if (role.equals("selector")) { // queue, then wait until every runtime's participant is listed
                final PrintWriter slog = log;
                selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework c) throws Exception {
                        waitForFile(goFile);
                        if (terms.get() >= n) return; // our share is done; main closes
                        synchronized (slog) {
                            slog.println("lead java " + id + " " + System.nanoTime());
                            slog.flush();
                        }
                        Thread.sleep(10);
                        synchronized (slog) {
                            slog.println("unlead java " + id + " " + System.nanoTime());
                            slog.flush();
                        }
                        synchronized (termLock) {
                            terms.incrementAndGet();
                            termLock.notifyAll();
                        }
                    }
                });
                selector.setId(id);
                selector.autoRequeue();
                selector.start();
                long t = System.nanoTime();
                java.util.List<String> ids;
                for (;;) {
                    ids = new ArrayList<>();
                    for (Participant p : selector.getParticipants()) ids.add(p.getId());
                    java.util.Collections.sort(ids);
                    if (ids.size() >= expect || System.nanoTime() - t > 60_000_000_000L) break;
                    Thread.sleep(20);
                }
                synchronized (log) {
                    log.println("participants java " + id + " " + String.join(",", ids));
                }
            }
            if (role.equals("mutex-hold")) { // one hold that ends when told (the --go file appears)
                long session = client.getZookeeperClient().getZooKeeper().getSessionId();
                log.println("session java " + id + " 0x" + Long.toHexString(session));
                log.flush();
                InterProcessMutex m = new InterProcessMutex(client, path);
                m.acquire();
                String mine = new ArrayList<>(m.getParticipantNodes()).get(0);
                Stat st = client.checkExists().forPath(mine);
                log.println("acquired java " + id + " " + (st == null ? -1 : st.getCzxid()));
                log.flush();
                waitForFile(go);
                m.release();
                log.println("done java " + id + " 1");
                return;
            }
            org.apache.curator.framework.recipes.cache.CuratorCache cache = null;
            final java.util.concurrent.atomic.AtomicLong net = new java.util.concurrent.atomic.AtomicLong();
            if (role.equals("cache")) { // Curator's CuratorCache counting its events, loaded before the barrier
                final java.util.concurrent.CountDownLatch loaded = new java.util.concurrent.CountDownLatch(1);
                cache = org.apache.curator.framework.recipes.cache.CuratorCache.build(client, path);
                cache.listenable().addListener(org.apache.curator.framework.recipes.cache.CuratorCacheListener.builder()
                        .forCreates(node -> net.incrementAndGet())
                        .forDeletes(node -> net.decrementAndGet())
                        .forInitialized(loaded::countDown)
                        .build());
                cache.start();
                if (!loaded.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("cache not loaded");
            }
            org.apache.curator.framework.recipes.watch.PersistentWatcher watcher = null;
            final java.util.List<String> heard = java.util.Collections.synchronizedList(new ArrayList<>());
            if (role.equals("watch")) { // Curator's PersistentWatcher (recursive), set before the barrier
                watcher = new org.apache.curator.framework.recipes.watch.PersistentWatcher(client, path, true);
                watcher.getListenable().addListener(event -> {
                    String p = event.getPath();
                    if (p == null || p.equals(path)) return;
                    switch (event.getType()) {
                        case NodeCreated: heard.add("CREATED " + p); break;
                        case NodeDeleted: heard.add("DELETED " + p); break;
                        case NodeDataChanged: heard.add("DATA_CHANGED " + p); break;
                        case NodeChildrenChanged: heard.add("CHILDREN_CHANGED " + p); break;
                        default: break;
                    }
                });
                // start() sends addWatch in the background; the reset listeners run once it is set.
                final java.util.concurrent.CountDownLatch set = new java.util.concurrent.CountDownLatch(1);
                watcher.getResetListenable().addListener(set::countDown);
                watcher.start();
                if (!set.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("persistent watch not set");
            }
            // discovery: the caches and providers of every runtime's service, started before the barrier.
            Discovery discovery = role.equals("discovery") ? new Discovery(client, path, id) : null;
            // values: Curator's SharedValue, DistributedAtomicValues and CachedAtomicLong, started.
            Values values = role.equals("values") ? new Values(client, path) : null;
            if (role.equals("ensemble")) { // the session this worker must keep across the change
                log.println("session java " + id + " " + client.getZookeeperClient().getZooKeeper().getSessionId());
            }
            if (go != null) { // start barrier: every runtime contends from the first operation
                log.println("ready java " + id);
                log.flush();
                waitForFile(go);
            }
            switch (role) {
                case "mutex":
                case "cohort": {
                    // cohort: the same plain mutex next to our cohorts; its token widened the way
                    // ours are (czxid << 32, handoff 0) so that both compare.
                    boolean wide = role.equals("cohort");
                    InterProcessMutex m = new InterProcessMutex(client, path);
                    for (int i = 0; i < n; i++) {
                        m.acquire();
                        // While we hold it, our node is the first participant (sorted by sequence).
                        Collection<String> nodes = m.getParticipantNodes();
                        String mine = new ArrayList<>(nodes).get(0);
                        Stat st = client.checkExists().forPath(mine);
                        if (st == null || st.getEphemeralOwner() != client.getZookeeperClient().getZooKeeper().getSessionId()) {
                            throw new IllegalStateException("first participant " + mine + " is not our node");
                        }
                        String token = wide ? java.math.BigInteger.valueOf(st.getCzxid()).shiftLeft(32).toString()
                                : Long.toString(st.getCzxid());
                        log.println("start java " + id + " " + token + " " + System.nanoTime());
                        log.flush();
                        Thread.sleep(0, 200_000);
                        log.println("end java " + id + " " + token + " " + System.nanoTime());
                        log.flush();
                        m.release();
                    }
                    log.println("done java " + id + " " + n);
                    break;
                }
                case "ensemble": {
                    // Sections (stamped like mutex) until the runner changed the ensemble (GO.changed),
                    // then N more. The builder's EnsembleTracker (on by default) follows the members.
                    InterProcessMutex m = new InterProcessMutex(client, path);
                    java.io.File changed = new java.io.File(go + ".changed");
                    int count = 0;
                    int after = -1;
                    while (after < 0 || count < after + n) {
                        if (after < 0 && changed.exists()) {
                            log.println("changed java " + id + " " + count);
                            after = count;
                        }
                        m.acquire();
                        Collection<String> nodes = m.getParticipantNodes();
                        String mine = new ArrayList<>(nodes).get(0);
                        Stat st = client.checkExists().forPath(mine);
                        if (st == null || st.getEphemeralOwner() != client.getZookeeperClient().getZooKeeper().getSessionId()) {
                            throw new IllegalStateException("first participant " + mine + " is not our node");
                        }
                        log.println("start java " + id + " " + st.getCzxid() + " " + System.nanoTime());
                        log.flush();
                        Thread.sleep(0, 200_000);
                        log.println("end java " + id + " " + st.getCzxid() + " " + System.nanoTime());
                        log.flush();
                        m.release();
                        count++;
                    }
                    log.println("session java " + id + " " + client.getZookeeperClient().getZooKeeper().getSessionId());
                    log.println("hosts java " + id + " " + client.getZookeeperClient().getCurrentConnectionString());
                    log.println("done java " + id + " " + count);
                    break;
                }
                case "latch": {
                    for (int round = 0; round < n; round++) {
                        if (round > 0) {
                            latch = new LeaderLatch(client, path, id);
                            latch.start();
                        }
                        if (!latch.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("never led");
                        log.println("lead java " + id + " " + System.nanoTime());
                        log.flush();
                        Thread.sleep(20);
                        if (!latch.hasLeadership()) throw new IllegalStateException("lost leadership while leading");
                        log.println("unlead java " + id + " " + System.nanoTime());
                        log.flush();
                        latch.close();
                    }
                    log.println("done java " + id + " " + n);
                    break;
                }
                case "counter": {
                    DistributedAtomicLong c = new DistributedAtomicLong(client, path, new RetryNTimes(50, 10));
                    int ok = 0;
                    for (int i = 0; i < n; i++) {
                        AtomicValue<Long> v = c.increment();
                        if (v.succeeded()) {
                            ok++;
                            log.println("inc java " + id + " " + v.postValue());
                        } else {
                            log.println("fail java " + id);
                        }
                    }
                    log.println("done java " + id + " " + ok);
                    break;
                }
                case "selector": {
                    long until = System.nanoTime() + 120_000_000_000L;
                    synchronized (termLock) {
                        while (terms.get() < n) {
                            long left = (until - System.nanoTime()) / 1_000_000L;
                            if (left <= 0) throw new IllegalStateException("led only " + terms.get() + " times");
                            termLock.wait(left);
                        }
                    }
                    selector.close();
                    synchronized (log) {
                        log.println("done java " + id + " " + terms.get());
                    }
                    break;
                }
                case "sharedcount": {
                    SharedCount c = new SharedCount(client, path, 0);
                    c.start();
                    int ok = 0;
                    long retries = 0;
                    for (int i = 0; i < n; i++) {
                        for (;;) {
                            VersionedValue<Integer> v = c.getVersionedValue();
                            if (c.trySetCount(v, v.getValue() + 1)) {
                                ok++;
                                log.println("inc java " + id + " " + (v.getValue() + 1));
                                break;
                            }
                            retries++;
                        }
                    }
                    log.println("retries java " + id + " " + retries);
                    log.println("done java " + id + " " + ok);
                    c.close();
                    break;
                }
                case "values": {
                    values.run(log, id, n);
                    break;
                }
                case "values-get": {
                    System.out.println(Values.read(client, path));
                    break;
                }
                case "sharedcount-get": {
                    SharedCount c = new SharedCount(client, path, 0);
                    c.start();
                    System.out.println(c.getCount());
                    c.close();
                    break;
                }
                case "rwlock": {
                    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
                    for (int i = 0; i < n; i++) {
                        boolean write = i % 3 == 1;
                        InterProcessMutex lock = write ? rw.writeLock() : rw.readLock();
                        String tag = write ? "write" : "read";
                        lock.acquire();
                        log.println("start java " + id + " " + tag + " " + System.nanoTime());
                        log.flush();
                        if (i == 0) waitForPeer(a.get("--peers"), id);
                        Thread.sleep(write ? 1 : 2);
                        log.println("end java " + id + " " + tag + " " + System.nanoTime());
                        log.flush();
                        lock.release();
                    }
                    log.println("done java " + id + " " + n);
                    break;
                }
                case "semaphore": {
                    int max = Integer.parseInt(a.getOrDefault("--max-leases", "2"));
                    InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, path, max);
                    for (int i = 0; i < n; i++) {
                        Lease lease = sem.acquire();
                        log.println("start java " + id + " lease " + System.nanoTime());
                        log.flush();
                        if (i == 0) waitForPeer(a.get("--peers"), id);
                        Thread.sleep(1);
                        log.println("end java " + id + " lease " + System.nanoTime());
                        log.flush();
                        sem.returnLease(lease);
                    }
                    log.println("done java " + id + " " + n);
                    break;
                }
                case "semcount": {
                    // Curator's InterProcessSemaphoreV2(client, path, SharedCountReader): N sections
                    // at the count's limit 1 (lease1); then PEERS/p1/ID, wait for the Rust worker's
                    // PEERS/raised (it set the count to 3 and holds a lease until every other worker
                    // marked PEERS/p2/ID inside its first lease2 section), and N sections (lease2).
                    String peers = a.get("--peers");
                    SharedCount count = new SharedCount(client, path + "-count", 1);
                    count.start();
                    InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, path, count);
                    for (int phase = 1; phase <= 2; phase++) {
                        if (phase == 2) {
                            java.io.File dir = new java.io.File(peers);
                            new java.io.File(dir, "p1").mkdirs();
                            new java.io.File(dir, "p2").mkdirs();
                            new java.io.File(new java.io.File(dir, "p1"), id).createNewFile();
                            long t = System.nanoTime();
                            while (!new java.io.File(dir, "raised").exists()) {
                                if (System.nanoTime() - t > 120_000_000_000L)
                                    throw new IllegalStateException("the count was never raised");
                                Thread.sleep(2);
                            }
                        }
                        String tag = "lease" + phase;
                        for (int i = 0; i < n; i++) {
                            Lease lease = sem.acquire();
                            log.println("start java " + id + " " + tag + " " + System.nanoTime());
                            log.flush();
                            if (phase == 2 && i == 0)
                                new java.io.File(new java.io.File(peers, "p2"), id).createNewFile();
                            Thread.sleep(1);
                            log.println("end java " + id + " " + tag + " " + System.nanoTime());
                            log.flush();
                            sem.returnLease(lease);
                        }
                    }
                    log.println("done java " + id + " " + (2 * n));
                    count.close();
                    break;
                }
                case "counter-get": {
                    DistributedAtomicLong c = new DistributedAtomicLong(client, path, new RetryNTimes(3, 10));
                    AtomicValue<Long> v = c.get();
                    if (!v.succeeded()) throw new IllegalStateException("get failed");
                    System.out.println(v.postValue());
                    break;
                }
                case "group": {
                    group(client, path, id, expect, a.get("--peers"), log);
                    break;
                }
                case "discovery": {
                    discovery.run(n, expect, a.get("--peers"), a.get("--golden"), log);
                    break;
                }
                case "gzip": {
                    gzip(client, path, id, expect, log);
                    break;
                }
                case "queue": { // put N, consume (lock path P-locks) until idle for 3 s
                    final PrintWriter qlog = log;
                    final AtomicLong last = new AtomicLong(System.nanoTime());
                    final AtomicInteger got = new AtomicInteger();
                    QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
                        @Override
                        public void consumeMessage(byte[] m) throws Exception {
                            Thread.sleep(2);
                            synchronized (qlog) {
                                qlog.println("got java " + id + " " + new String(m, StandardCharsets.UTF_8) + " -1");
                                qlog.flush();
                            }
                            got.incrementAndGet();
                            last.set(System.nanoTime());
                            tookOneOfOurs(go, role, m);
                        }

                        @Override
                        public void stateChanged(CuratorFramework c, ConnectionState s) {}
                    };
                    QueueSerializer<byte[]> bytes = new QueueSerializer<byte[]>() {
                        @Override
                        public byte[] serialize(byte[] item) { return item; }

                        @Override
                        public byte[] deserialize(byte[] b) { return b; }
                    };
                    DistributedQueue<byte[]> q = QueueBuilder.builder(client, consumer, bytes, path)
                            .lockPath(path + "-locks").putInBackground(false).buildQueue();
                    q.start();
                    for (int i = 0; i < n; i++) q.put(("java:" + i).getBytes(StandardCharsets.UTF_8));
                    last.set(System.nanoTime());
                    while (System.nanoTime() - last.get() < 3_000_000_000L) Thread.sleep(50);
                    q.close();
                    synchronized (qlog) {
                        qlog.println("done java " + id + " " + got.get());
                    }
                    break;
                }
                case "putmulti": { // put N three to a node (putMulti), consume until idle for 3 s
                    final AtomicLong last = new AtomicLong(System.nanoTime());
                    final AtomicInteger got = new AtomicInteger();
                    QueueConsumer<byte[]> consumer = loggingConsumer(log, id, go, role, got, last);
                    DistributedQueue<byte[]> q = QueueBuilder.builder(client, consumer, BYTES, path)
                            .lockPath(path + "-locks").putInBackground(false).buildQueue();
                    q.start();
                    for (int i = 0; i < n; i += 3) {
                        final java.util.Iterator<byte[]> batch = java.util.stream.IntStream.range(i, Math.min(i + 3, n))
                                .mapToObj(k -> ("java:" + k).getBytes(StandardCharsets.UTF_8)).iterator();
                        q.putMulti(() -> batch.hasNext() ? batch.next() : null);
                    }
                    last.set(System.nanoTime());
                    while (System.nanoTime() - last.get() < 3_000_000_000L) Thread.sleep(50);
                    q.close();
                    synchronized (log) {
                        log.println("done java " + id + " " + got.get());
                    }
                    break;
                }
                case "sharder": { // Curator's QueueSharder: put N through getQueue(), consume until idle
                    final AtomicLong last = new AtomicLong(System.nanoTime());
                    final AtomicInteger got = new AtomicInteger();
                    QueueConsumer<byte[]> consumer = loggingConsumer(log, id, go, role, got, last);
                    final String locks = path + "-locks/";
                    QueueSharderPolicies policies = QueueSharderPolicies.builder()
                            .newQueueThreshold(3).thresholdCheckMs(200).maxQueues(4).build();
                    QueueSharder<byte[], DistributedQueue<byte[]>> sharder = new QueueSharder<>(client,
                            (c, shard) -> QueueBuilder.builder(c, consumer, BYTES, shard)
                                    .lockPath(locks + ZKPaths.getNodeFromPath(shard)).putInBackground(false)
                                    .buildQueue(),
                            path + "/queues", path + "/leader", policies);
                    sharder.start();
                    for (int i = 0; i < n; i++) {
                        sharder.getQueue().put(("java:" + i).getBytes(StandardCharsets.UTF_8));
                        Thread.sleep(10);
                    }
                    last.set(System.nanoTime());
                    while (System.nanoTime() - last.get() < 3_000_000_000L) Thread.sleep(50);
                    int shards = sharder.getShardQty();
                    sharder.close();
                    synchronized (log) {
                        log.println("shards java " + id + " " + shards);
                        log.println("done java " + id + " " + got.get());
                    }
                    break;
                }
                case "simplequeue": {
                    SimpleDistributedQueue q = new SimpleDistributedQueue(client, path);
                    for (int i = 0; i < n; i++) q.offer(("java:" + i).getBytes(StandardCharsets.UTF_8));
                    int got = 0;
                    for (byte[] d; (d = q.poll(3, TimeUnit.SECONDS)) != null; got++) {
                        log.println("got java " + id + " " + new String(d, StandardCharsets.UTF_8) + " 0");
                        log.flush();
                        tookOneOfOurs(go, role, d);
                    }
                    log.println("done java " + id + " " + got);
                    break;
                }
                case "doublebarrier": {
                    DistributedDoubleBarrier b = new DistributedDoubleBarrier(client, path, expect);
                    Thread.sleep(System.nanoTime() % 300);
                    log.println("arrive java " + id + " " + System.nanoTime());
                    log.flush();
                    if (!b.enter(60, TimeUnit.SECONDS)) throw new IllegalStateException("enter timed out");
                    log.println("entered java " + id + " " + System.nanoTime());
                    Thread.sleep(50);
                    log.println("leaving java " + id + " " + System.nanoTime());
                    log.flush();
                    if (!b.leave(60, TimeUnit.SECONDS)) throw new IllegalStateException("leave timed out");
                    log.println("left java " + id + " " + System.nanoTime());
                    log.println("done java " + id + " 1");
                    break;
                }
                case "cache": { // our share, then wait until every runtime's share is cached
                    for (int i = 0; i < n; i++) {
                        client.create().creatingParentContainersIfNeeded()
                                .forPath(path + "/" + id + "-" + i, id.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    }
                    long want = (long) expect * n + 1;
                    final org.apache.curator.framework.recipes.cache.CuratorCache cached = cache;
                    waitCount(want, cached::size);
                    java.util.List<org.apache.curator.framework.recipes.cache.ChildData> kids = new ArrayList<>();
                    cache.stream().filter(d -> !d.getPath().equals(path)).forEach(kids::add);
                    kids.sort(java.util.Comparator.comparing(org.apache.curator.framework.recipes.cache.ChildData::getPath));
                    for (org.apache.curator.framework.recipes.cache.ChildData d : kids) {
                        String data = d.getData() == null ? "" : new String(d.getData(), java.nio.charset.StandardCharsets.UTF_8);
                        log.println("node java " + id + " " + d.getPath() + " " + data);
                    }
                    long t = System.nanoTime();
                    while (net.get() != cache.size() && System.nanoTime() - t < 10_000_000_000L) Thread.sleep(5);
                    log.println("events java " + id + " " + net.get() + " " + cache.size());
                    log.println("done java " + id + " " + kids.size());
                    cache.close();
                    break;
                }
                case "watch": { // create + set our share, then wait to hear everyone's
                    for (int i = 0; i < n; i++) {
                        String p = path + "/" + id + "-" + i;
                        client.create().creatingParentContainersIfNeeded().forPath(p, new byte[0]);
                        client.setData().forPath(p, id.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    }
                    long want = 2L * expect * n;
                    waitCount(want, heard::size); // a synchronized list
                    watcher.close();
                    java.util.List<String> got;
                    synchronized (heard) { got = new ArrayList<>(heard); }
                    for (String h : got) log.println("heard java " + id + " " + h);
                    log.println("done java " + id + " " + got.size());
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown role " + role);
            }
        } finally {
            log.flush();
            log.close();
            client.close();
        }
    }

    /** Polls f every 20 ms for up to 60 s; whether it held. */
    static boolean poll(java.util.function.BooleanSupplier f) throws InterruptedException {
        return poll(60, f);
    }

    /** {@link #poll(java.util.function.BooleanSupplier)} for up to {@code seconds}. */
    static boolean poll(long seconds, java.util.function.BooleanSupplier f) throws InterruptedException {
        long t = System.nanoTime();
        while (System.nanoTime() - t < seconds * 1_000_000_000L) {
            if (f.getAsBoolean()) return true;
            Thread.sleep(20);
        }
        return false;
    }

    /**
     * Polls count every 5 ms until it reaches want, giving up only after 60 s in which it did not
     * grow: a slow peer on a loaded machine (the long run's 120 workers on 2 CPUs) is still waited
     * for, a stuck one is not; the count last seen.
     */
    static long waitCount(long want, java.util.function.LongSupplier count) throws InterruptedException {
        long seen = count.getAsLong(), since = System.nanoTime();
        while (seen < want && System.nanoTime() - since < 60_000_000_000L) {
            Thread.sleep(5);
            long now = count.getAsLong();
            if (now != seen) {
                seen = now;
                since = System.nanoTime();
            }
        }
        return seen;
    }

    private static boolean membersAt(Map<String, byte[]> members, int expect, String... phases) {
        if (members.size() < expect) return false;
        for (Map.Entry<String, byte[]> e : members.entrySet()) {
            boolean any = false;
            for (String p : phases) {
                any |= java.util.Arrays.equals(e.getValue(), (p + "-" + e.getKey()).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
            if (!any) return false;
        }
        return true;
    }

    private static String keys(Map<String, byte[]> members) {
        return String.join(",", new java.util.TreeSet<>(members.keySet()));
    }

    /**
     * The group scenario with Curator's GroupMember: join with "p0-ID", see every member, set
     * "p1-ID", see every member's p1, mark PEERS/ID, then see rust-group leave.
     */
    private static void group(CuratorFramework client, String path, String id, int expect, String peers,
                              PrintWriter log) throws Exception {
        java.nio.charset.Charset utf8 = java.nio.charset.StandardCharsets.UTF_8;
        org.apache.curator.framework.recipes.nodes.GroupMember m =
                new org.apache.curator.framework.recipes.nodes.GroupMember(client, path, id, ("p0-" + id).getBytes(utf8));
        m.start();
        log.println("joined java " + id);
        if (poll(() -> membersAt(m.getCurrentMembers(), expect, "p0", "p1"))) {
            log.println("saw-all java " + id + " " + keys(m.getCurrentMembers()));
        }
        m.setThisData(("p1-" + id).getBytes(utf8));
        if (poll(() -> membersAt(m.getCurrentMembers(), expect, "p1"))) {
            log.println("saw-data java " + id + " " + keys(m.getCurrentMembers()));
        }
        log.flush();
        new java.io.File(peers, id).createNewFile();
        if (poll(() -> !m.getCurrentMembers().containsKey("rust-group"))) log.println("saw-leave java " + id);
        m.close();
        log.println("done java " + id + " 1");
    }

    private static byte[] gzipPayload(String id) {
        return ("gzip payload of " + id + " ").repeat(20).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The gzip scenario with Curator's compression: create().compressed(), getData().decompressed(). */
    private static void gzip(CuratorFramework client, String path, String id, int expect, PrintWriter log)
            throws Exception {
        client.create().compressed().creatingParentsIfNeeded().forPath(path + "/" + id, gzipPayload(id));
        log.println("wrote java " + id);
        poll(() -> {
            try {
                return client.getChildren().forPath(path).size() >= expect;
            } catch (Exception e) {
                return false;
            }
        });
        java.util.List<String> children = new ArrayList<>(client.getChildren().forPath(path));
        java.util.Collections.sort(children);
        for (String other : children) {
            boolean ok;
            try {
                ok = java.util.Arrays.equals(client.getData().decompressed().forPath(path + "/" + other), gzipPayload(other));
            } catch (Exception e) {
                ok = false;
            }
            log.println("read java " + id + " " + other + (ok ? " ok" : " bad"));
        }
        log.println("done java " + id + " " + children.size());
    }
}
