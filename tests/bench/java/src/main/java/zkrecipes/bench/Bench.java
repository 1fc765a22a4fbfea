package zkrecipes.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

/**
 * The Apache Curator 5.9.0 driver of tests/bench/run (issue 10). Same CLI and JSON line as every
 * driver (tests/bench/drivers/README.md); the default warm-up is larger (2000 cycles) for the JIT.
 */
public final class Bench {
    private final Map<String, String> args = new LinkedHashMap<>();
    private final Map<String, Object> out = new LinkedHashMap<>();
    private final List<CuratorFramework> clients = new ArrayList<>();

    public static void main(String[] argv) {
        Bench b = new Bench();
        try {
            for (int i = 0; i + 1 < argv.length; i += 2) {
                if (!argv[i].startsWith("--")) throw new IllegalArgumentException("bad option " + argv[i]);
                b.args.put(argv[i].substring(2), argv[i + 1]);
            }
            if (argv.length % 2 != 0) throw new IllegalArgumentException("option without a value");
            b.run();
            b.closeAll();
            System.out.println(b.json());
            System.out.flush();
            System.exit(0);
        } catch (Throwable t) {
            System.err.println("curator-bench: " + t);
            t.printStackTrace();
            b.closeAll();
            System.exit(1);
        }
    }

    private String arg(String k) {
        String v = args.get(k);
        if (v == null) throw new IllegalArgumentException("--" + k + " is required");
        return v;
    }

    private int num(String k, int dflt) {
        return args.containsKey(k) ? Integer.parseInt(args.get(k)) : dflt;
    }

    private CuratorFramework connect() throws Exception {
        CuratorFramework c = newClient();
        clients.add(c);
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("cannot connect");
        return c;
    }

    /**
     * A client as newClient(connect, 30000, 15000, retry) makes it; with --tls-ca, over TLS
     * through ZooKeeper's Netty client (ZKClientConfig: zookeeper.client.secure=true,
     * ClientCnxnSocketNetty, the CA as PEM trust store and, with --tls-cert/--tls-key, a PEM key
     * store: one file with the PKCS#8 key and the certificate, written once per process).
     */
    private CuratorFramework newClient() throws Exception {
        CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder()
                .connectString(arg("connect"))
                .sessionTimeoutMs(30000)
                .connectionTimeoutMs(15000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5));
        if (args.containsKey("tls-ca")) {
            org.apache.zookeeper.client.ZKClientConfig zk = new org.apache.zookeeper.client.ZKClientConfig();
            zk.setProperty(org.apache.zookeeper.client.ZKClientConfig.SECURE_CLIENT, "true");
            zk.setProperty(org.apache.zookeeper.client.ZKClientConfig.ZOOKEEPER_CLIENT_CNXN_SOCKET,
                    "org.apache.zookeeper.ClientCnxnSocketNetty");
            zk.setProperty("zookeeper.ssl.trustStore.location", args.get("tls-ca"));
            zk.setProperty("zookeeper.ssl.trustStore.type", "PEM");
            // ZooKeeper 3.9's client offers only TLS 1.3 unless told otherwise; the harness's
            // ZooKeeper 3.8 server speaks TLS 1.2 only.
            zk.setProperty("zookeeper.ssl.enabledProtocols", "TLSv1.3,TLSv1.2");
            if (args.containsKey("tls-cert")) {
                zk.setProperty("zookeeper.ssl.keyStore.location", keystore());
                zk.setProperty("zookeeper.ssl.keyStore.type", "PEM");
            }
            b.zkClientConfig(zk);
        }
        return b.build();
    }

    private String keystore;

    private String keystore() throws Exception {
        if (keystore == null) {
            Path ks = Files.createTempFile("curator-bench-keystore", ".pem");
            ks.toFile().deleteOnExit();
            Files.writeString(ks, Files.readString(Path.of(arg("tls-key"))) + Files.readString(Path.of(arg("tls-cert"))));
            keystore = ks.toString();
        }
        return keystore;
    }

    /**
     * handshake: W + N clients made one after the other, each timed from build() to
     * blockUntilConnected() returning (TCP, the TLS handshake if any, the session's
     * ConnectRequest/Response), then closed.
     */
    private void handshake() throws Exception {
        int n = num("iterations", 100), w = num("warmup", 50);
        List<Long> times = new ArrayList<>(n);
        long cpu = 0;
        for (int i = 0; i < w + n; i++) {
            if (i == w) cpu = cpuNanos();
            long t0 = System.nanoTime();
            CuratorFramework c = newClient();
            c.start();
            if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("cannot connect");
            long t1 = System.nanoTime();
            c.close();
            if (i >= w) times.add(t1 - t0);
        }
        cpu = cpuNanos() - cpu;
        out.put("n", times.size());
        latency(times);
        double[] s = stats(times);
        out.put("handshake_p50_us", s[0]);
        out.put("handshake_p99_us", s[1]);
        out.put("cpu_us_per_op", cpu / 1e3 / Math.max(1, times.size()));
    }

    private void closeAll() {
        for (CuratorFramework c : clients) {
            try {
                c.close();
            } catch (Throwable ignored) {
                // closing on the way out
            }
        }
        clients.clear();
    }

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static long rssKb() throws Exception {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith("VmRSS:")) return Long.parseLong(l.substring(6).trim().split("\\s+")[0]);
        }
        return 0;
    }

    /** p50, p99, mean of nanosecond samples, in microseconds. */
    private static double[] stats(List<Long> ns) {
        if (ns.isEmpty()) return new double[] {Double.NaN, Double.NaN, Double.NaN};
        long[] v = ns.stream().mapToLong(Long::longValue).sorted().toArray();
        double sum = 0;
        for (long x : v) sum += x;
        return new double[] {
            v[(int) Math.round((v.length - 1) * 0.5)] / 1e3,
            v[(int) Math.round((v.length - 1) * 0.99)] / 1e3,
            sum / v.length / 1e3
        };
    }

    private void latency(List<Long> ns) {
        double[] s = stats(ns);
        out.put("p50_us", s[0]);
        out.put("p99_us", s[1]);
        out.put("mean_us", s[2]);
    }

    private void run() throws Exception {
        String scenario = arg("scenario");
        String impl = args.getOrDefault("impl", "curator");
        if (!impl.equals("curator")) throw new IllegalArgumentException("this driver is impl curator, not " + impl);
        out.put("impl", "curator");
        out.put("scenario", scenario);
        switch (scenario) {
            case "uncontended" -> uncontended();
            case "handshake" -> handshake();
            case "contended" -> contended();
            case "inproc" -> inproc();
            case "counter_threads" -> counter(false);
            case "counter_clients" -> counter(true);
            case "failover" -> failover();
            case "memory" -> memory();
            case "discovery" -> discovery();
            default -> throw new IllegalArgumentException("scenario " + scenario + " is not implemented for curator");
        }
        out.put("version", "curator 5.9.0 (Java " + Runtime.version() + ", "
                + ManagementFactory.getRuntimeMXBean().getVmName() + ")");
    }

    private void uncontended() throws Exception {
        int n = num("iterations", 2000), w = num("warmup", 2000);
        CuratorFramework c = connect();
        InterProcessMutex m = new InterProcessMutex(c, arg("path") + "/lock");
        for (int i = 0; i < w; i++) {
            m.acquire();
            m.release();
        }
        List<Long> acq = new ArrayList<>(n), rel = new ArrayList<>(n), cyc = new ArrayList<>(n);
        // Rounds of n cycles until the phase has lasted --min-seconds.
        long minNs = (long) (Double.parseDouble(args.getOrDefault("min-seconds", "2")) * 1e9);
        long cpu = cpuNanos();
        long phase0 = System.nanoTime();
        for (int i = 0; i < n || (n > 0 && (i % n != 0 || System.nanoTime() - phase0 < minNs)); i++) {
            long t0 = System.nanoTime();
            m.acquire();
            long t1 = System.nanoTime();
            m.release();
            long t2 = System.nanoTime();
            acq.add(t1 - t0);
            rel.add(t2 - t1);
            cyc.add(t2 - t0);
        }
        cpu = cpuNanos() - cpu;
        out.put("n", cyc.size());
        latency(cyc);
        out.put("acquire_p50_us", stats(acq)[0]);
        out.put("release_p50_us", stats(rel)[0]);
        out.put("cpu_us_per_op", cpu / 1e3 / Math.max(1, cyc.size()));
    }

    /**
     * The servers' traffic counters from mntr (four-letter word), summed over the connect
     * string's hosts: packets received, bytes received, bytes sent (responses + watches); null
     * if a server does not answer.
     */
    private long[] mntrTotals() {
        long[] total = new long[3];
        try {
            for (String host : arg("connect").split("/")[0].split(",")) {
                int colon = host.lastIndexOf(':');
                Map<String, String> v = new java.util.HashMap<>();
                try (java.net.Socket s = new java.net.Socket(host.substring(0, colon),
                        Integer.parseInt(host.substring(colon + 1)))) {
                    s.setSoTimeout(10000);
                    s.getOutputStream().write("mntr".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                    s.getOutputStream().flush();
                    String text = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
                    for (String line : text.split("\n")) {
                        String[] kv = line.split("\t", 2);
                        if (kv.length == 2) v.put(kv[0], kv[1].trim());
                    }
                }
                total[0] += (long) Double.parseDouble(v.get("zk_packets_received"));
                total[1] += (long) Double.parseDouble(v.get("zk_bytes_received_count"));
                total[2] += (long) Double.parseDouble(v.get("zk_response_bytes"))
                        + (long) Double.parseDouble(v.getOrDefault("zk_watch_bytes", "0"));
            }
        } catch (Exception e) {
            return null;
        }
        return total;
    }

    /**
     * The timed phase of contended and inproc: 1 s untimed, then `seconds` with `measuring` set,
     * then `stop`; the server's counters over the window go into the output, the threads are
     * joined and their first error thrown; n and ops_per_s are put. Returns the CPU ns spent.
     */
    private long timedWindow(double seconds, AtomicBoolean measuring, AtomicBoolean stop, AtomicLong count,
            List<Thread> threads, List<Throwable> errors) throws Exception {
        Thread.sleep(1000);
        long[] mntr0 = mntrTotals();
        long cpu = cpuNanos();
        measuring.set(true);
        long t0 = System.nanoTime();
        Thread.sleep((long) (seconds * 1000));
        stop.set(true);
        double secs = (System.nanoTime() - t0) / 1e9;
        cpu = cpuNanos() - cpu;
        long n = count.get();
        long[] mntr1 = mntrTotals();
        if (mntr0 != null && mntr1 != null) {
            out.put("win_packets", mntr1[0] - mntr0[0]);
            out.put("win_bytes_in", mntr1[1] - mntr0[1]);
            out.put("win_bytes_out", mntr1[2] - mntr0[2]);
        }
        for (Thread t : threads) t.join(60000);
        if (!errors.isEmpty()) throw new IllegalStateException("a contender failed", errors.get(0));
        out.put("n", n);
        out.put("ops_per_s", n / secs);
        return cpu;
    }

    private void contended() throws Exception {
        int clientsN = num("clients", 8);
        double seconds = Double.parseDouble(args.getOrDefault("seconds", "10"));
        int w = num("warmup", 2000);
        String path = arg("path") + "/lock";
        // JIT warm-up on a separate path, then 1 s of contention not counted.
        CuratorFramework warmClient = connect();
        InterProcessMutex warm = new InterProcessMutex(warmClient, arg("path") + "/warm");
        for (int i = 0; i < w; i++) {
            warm.acquire();
            warm.release();
        }
        AtomicBoolean measuring = new AtomicBoolean(false), stop = new AtomicBoolean(false);
        AtomicLong count = new AtomicLong();
        List<Long> waits = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < clientsN; i++) {
            InterProcessMutex m = new InterProcessMutex(connect(), path);
            Thread t = new Thread(() -> {
                List<Long> mine = new ArrayList<>();
                try {
                    while (!stop.get()) {
                        long t0 = System.nanoTime();
                        m.acquire();
                        long waited = System.nanoTime() - t0;
                        if (measuring.get() && !stop.get()) {
                            count.incrementAndGet();
                            mine.add(waited);
                        }
                        m.release();
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
                waits.addAll(mine);
            });
            t.start();
            threads.add(t);
        }
        long cpu = timedWindow(seconds, measuring, stop, count, threads, errors);
        long n = count.get();
        double[] s = stats(waits);
        out.put("wait_p99_us", s[1]);
        out.put("p50_us", s[0]);
        out.put("cpu_us_per_op", cpu / 1e3 / Math.max(1, n));
    }

    /**
     * inproc (issue 21, part 1: the seeds' scenario): T threads of ONE process share one
     * InterProcessMutex on one CuratorFramework; with --remote 1 a second client contends the
     * whole time (1 ms hold, 1 ms gap). Each hold checks that nobody else is inside (Curator has
     * no fencing token to check).
     */
    private void inproc() throws Exception {
        int threadsN = num("threads", 100);
        double seconds = Double.parseDouble(args.getOrDefault("seconds", "10"));
        int w = num("warmup", 2000);
        boolean withRemote = num("remote", 0) > 0;
        String path = arg("path") + "/lock";
        CuratorFramework local = connect();
        InterProcessMutex warm = new InterProcessMutex(local, arg("path") + "/warm");
        for (int i = 0; i < w; i++) {
            warm.acquire();
            warm.release();
        }
        InterProcessMutex m = new InterProcessMutex(local, path);
        AtomicBoolean measuring = new AtomicBoolean(false), stop = new AtomicBoolean(false);
        AtomicBoolean inside = new AtomicBoolean(false);
        AtomicLong count = new AtomicLong(), violations = new AtomicLong();
        List<Long> remoteWaits = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < threadsN; i++) {
            Thread t = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        m.acquire();
                        if (inside.getAndSet(true)) violations.incrementAndGet();
                        inside.set(false);
                        if (measuring.get() && !stop.get()) count.incrementAndGet();
                        m.release();
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            t.start();
            threads.add(t);
        }
        if (withRemote) {
            InterProcessMutex rm = new InterProcessMutex(connect(), path);
            Thread t = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        long t0 = System.nanoTime();
                        rm.acquire();
                        long waited = System.nanoTime() - t0;
                        if (inside.getAndSet(true)) violations.incrementAndGet();
                        Thread.sleep(1);
                        inside.set(false);
                        if (measuring.get() && !stop.get()) remoteWaits.add(waited);
                        rm.release();
                        Thread.sleep(1);
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            t.start();
            threads.add(t);
        }
        long cpu = timedWindow(seconds, measuring, stop, count, threads, errors);
        long n = count.get();
        out.put("fencing_violations", violations.get());
        out.put("cpu_us_per_op", cpu / 1e3 / Math.max(1, n));
        if (withRemote) {
            double[] s = stats(remoteWaits);
            out.put("remote_n", remoteWaits.size());
            out.put("remote_wait_p50_us", s[0]);
            out.put("remote_wait_p99_us", s[1]);
            out.put("remote_wait_max_us", remoteWaits.stream().mapToLong(Long::longValue).max().orElse(0) / 1e3);
        }
    }

    private void counter(boolean separate) throws Exception {
        int n = num("iterations", 100);
        int workers = separate ? num("clients", 10) : num("threads", 10);
        int w = num("warmup", 2000);
        String path = arg("path") + "/counter";
        CuratorFramework main = connect();
        // JIT warm-up on another counter path.
        DistributedAtomicLong warm = new DistributedAtomicLong(main, arg("path") + "/warm", new RetryNTimes(1000, 1));
        for (int i = 0; i < w; i++) warm.increment();
        DistributedAtomicLong counter = new DistributedAtomicLong(main, path, new RetryNTimes(1000, 1));
        counter.initialize(0L);
        long initial = counter.get().postValue();
        List<CuratorFramework> cs = new ArrayList<>();
        if (separate) {
            for (int i = 0; i < workers; i++) cs.add(connect());
        } else {
            cs.add(main);
        }
        AtomicLong ok = new AtomicLong(), failed = new AtomicLong();
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        // Rounds of n increments per worker until the phase has lasted --min-seconds.
        long minNs = (long) (Double.parseDouble(args.getOrDefault("min-seconds", "2")) * 1e9);
        long cpu = cpuNanos();
        long t0 = System.nanoTime();
        for (int i = 0; i < workers; i++) {
            CuratorFramework c = cs.get(i % cs.size());
            Thread t = new Thread(() -> {
                try {
                    DistributedAtomicLong d = new DistributedAtomicLong(c, path, new RetryNTimes(1000, 1));
                    for (int k = 0; k < n || (n > 0 && (k % n != 0 || System.nanoTime() - t0 < minNs)); k++) {
                        AtomicValue<Long> v = d.increment();
                        if (v.succeeded()) ok.incrementAndGet();
                        else failed.incrementAndGet();
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) t.join();
        double secs = (System.nanoTime() - t0) / 1e9;
        cpu = cpuNanos() - cpu;
        if (!errors.isEmpty()) throw new IllegalStateException("an incrementer failed", errors.get(0));
        // On an ensemble this session's server may lag the others' last writes (reads are not
        // linearizable): re-read for up to 5 s before a shortfall counts as lost.
        long fin = counter.get().postValue();
        int finalReads = 1;
        while (fin - initial < ok.get() && finalReads < 10) {
            Thread.sleep(500);
            fin = counter.get().postValue();
            finalReads++;
        }
        out.put("final_reads", finalReads);
        out.put("n", ok.get());
        out.put("ops_per_s", ok.get() / secs);
        out.put("failed", failed.get());
        out.put("final", fin);
        out.put("expected", initial + ok.get());
        out.put("lost", ok.get() - (fin - initial));
        out.put("cpu_us_per_op", cpu / 1e3 / Math.max(1, ok.get()));
    }

    private void failover() throws Exception {
        int n = num("iterations", 200), k = num("clients", 3), w = num("warmup", 200);
        String path = arg("path") + "/latch";
        // (member index, System.nanoTime() when isLeader ran)
        LinkedBlockingQueue<long[]> led = new LinkedBlockingQueue<>();
        List<CuratorFramework> cs = new ArrayList<>();
        LeaderLatch[] latches = new LeaderLatch[k];
        for (int i = 0; i < k; i++) {
            cs.add(connect());
            latches[i] = startLatch(cs.get(i), path, i, led);
        }
        long[] first = led.poll(30, TimeUnit.SECONDS);
        if (first == null) throw new IllegalStateException("no member leads after 30 s");
        int leader = (int) first[0];
        List<Long> samples = new ArrayList<>();
        long cpu = cpuNanos();
        for (int round = 0; round < w + n; round++) {
            long t0 = System.nanoTime();
            latches[leader].close();
            long[] next = led.poll(30, TimeUnit.SECONDS);
            if (next == null) throw new IllegalStateException("no member took over within 30 s");
            if (next[0] == leader) throw new IllegalStateException("the closed member led again");
            if (round >= w) samples.add(next[1] - t0);
            latches[leader] = startLatch(cs.get(leader), path, leader, led);
            leader = (int) next[0];
        }
        cpu = cpuNanos() - cpu;
        for (LeaderLatch l : latches) l.close();
        out.put("n", n);
        latency(samples);
        out.put("cpu_us_per_op", cpu / 1e3 / (w + n));
    }

    private static LeaderLatch startLatch(CuratorFramework c, String path, int i, LinkedBlockingQueue<long[]> led)
            throws Exception {
        LeaderLatch l = new LeaderLatch(c, path, "m" + i);
        l.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                led.add(new long[] {i, System.nanoTime()});
            }

            @Override
            public void notLeader() {}
        });
        l.start();
        return l;
    }

    private void memory() throws Exception {
        int locks = num("locks", 1000), w = num("warmup", 2000);
        CuratorFramework c = connect();
        InterProcessMutex warm = new InterProcessMutex(c, arg("path") + "/warm");
        for (int i = 0; i < w; i++) {
            warm.acquire();
            warm.release();
        }
        System.gc();
        long before = rssKb();
        long cpu = cpuNanos();
        List<InterProcessMutex> held = new ArrayList<>(locks);
        for (int i = 0; i < locks; i++) {
            InterProcessMutex m = new InterProcessMutex(c, arg("path") + "/m/" + i);
            m.acquire();
            held.add(m);
        }
        cpu = cpuNanos() - cpu;
        long after = rssKb();
        System.gc();
        Runtime rt = Runtime.getRuntime();
        long heapKb = (rt.totalMemory() - rt.freeMemory()) / 1024;
        for (InterProcessMutex m : held) m.release();
        out.put("n", locks);
        out.put("rss_kb", after);
        out.put("rss_delta_kb", after - before);
        out.put("heap_used_kb", heapKb);
        out.put("cpu_us_per_op", cpu / 1e3 / Math.max(1, locks));
    }

    /** An instance of the discovery scenario: a small map payload and a URI spec, as services register. */
    private static org.apache.curator.x.discovery.ServiceInstance<Object> benchInstance(String id, int i) {
        Map<String, Object> payload = new LinkedHashMap<>();
        payload.put("zone", "z" + (i % 3));
        payload.put("weight", 1.5);
        return new org.apache.curator.x.discovery.ServiceInstance<>("svc", id, "10.0." + (i / 250) + "." + (i % 250),
                8000 + i % 1000, null, payload, System.currentTimeMillis(), org.apache.curator.x.discovery.ServiceType.DYNAMIC,
                new org.apache.curator.x.discovery.UriSpec("{scheme}://{address}:{port}/api"), true);
    }

    /**
     * discovery (issue 31): --instances N instances of one service registered (untimed) through
     * ServiceDiscovery; then W + K times a new ServiceCache is built and started on another client
     * and timed until it is loaded (ServiceCache.start() returns once the initial load is in, all N
     * instances); then on one started cache W + K registrations of a new instance, each timed from
     * registerService() until the cache's listener sees it (then unregistered, untimed).
     */
    private void discovery() throws Exception {
        int n = num("iterations", 20), w = num("warmup", 20), count = num("instances", 1000);
        CuratorFramework reg = connect();
        CuratorFramework watcher = connect();
        String base = arg("path");
        org.apache.curator.x.discovery.ServiceDiscovery<Object> d = org.apache.curator.x.discovery.ServiceDiscoveryBuilder
                .builder(Object.class).client(reg).basePath(base).build();
        d.start();
        for (int i = 0; i < count; i++) d.registerService(benchInstance("i" + i, i));
        org.apache.curator.x.discovery.ServiceDiscovery<Object> reader = org.apache.curator.x.discovery.ServiceDiscoveryBuilder
                .builder(Object.class).client(watcher).basePath(base).build();
        reader.start();
        List<Long> loads = new ArrayList<>(n);
        long cpu = 0;
        for (int i = 0; i < w + n; i++) {
            if (i == w) cpu = cpuNanos();
            long t0 = System.nanoTime();
            org.apache.curator.x.discovery.ServiceCache<Object> c = reader.serviceCacheBuilder().name("svc").build();
            c.start();
            long t1 = System.nanoTime();
            if (c.getInstances().size() != count) {
                throw new IllegalStateException("a loaded cache holds " + c.getInstances().size() + " of " + count);
            }
            c.close();
            if (i >= w) loads.add(t1 - t0);
        }
        cpu = cpuNanos() - cpu;
        org.apache.curator.x.discovery.ServiceCache<Object> c = reader.serviceCacheBuilder().name("svc").build();
        final Object lock = new Object();
        final String[] awaited = {null};
        final long[] seenAt = {0};
        c.addListener(new org.apache.curator.x.discovery.details.ServiceCacheListener() {
            @Override
            public void cacheChanged() {
                synchronized (lock) {
                    if (awaited[0] == null || seenAt[0] != 0) return;
                    for (org.apache.curator.x.discovery.ServiceInstance<Object> x : c.getInstances()) {
                        if (x.getId().equals(awaited[0])) {
                            seenAt[0] = System.nanoTime();
                            lock.notifyAll();
                            return;
                        }
                    }
                }
            }

            @Override
            public void stateChanged(CuratorFramework client, org.apache.curator.framework.state.ConnectionState s) {}
        });
        c.start();
        List<Long> events = new ArrayList<>(n);
        for (int i = 0; i < w + n; i++) {
            String id = "new" + i;
            org.apache.curator.x.discovery.ServiceInstance<Object> x = benchInstance(id, count + i);
            synchronized (lock) {
                awaited[0] = id;
                seenAt[0] = 0;
            }
            long t0 = System.nanoTime();
            d.registerService(x);
            synchronized (lock) {
                long deadline = System.nanoTime() + 30_000_000_000L;
                while (seenAt[0] == 0) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) throw new IllegalStateException("the cache never saw " + id);
                    lock.wait(Math.max(1, left / 1_000_000));
                }
                if (i >= w) events.add(seenAt[0] - t0);
                awaited[0] = null;
            }
            d.unregisterService(x);
        }
        c.close();
        reader.close();
        d.close();
        out.put("n", loads.size());
        out.put("instances", count);
        double[] l = stats(loads), ev = stats(events);
        out.put("p50_us", l[0]);
        out.put("p99_us", l[1]);
        out.put("load_p50_us", l[0]);
        out.put("load_p99_us", l[1]);
        out.put("event_p50_us", ev[0]);
        out.put("event_p99_us", ev[1]);
        out.put("cpu_us_per_op", cpu / 1e3 / Math.max(1, loads.size()));
    }

    private String json() {
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<String, Object> e : out.entrySet()) {
            if (sb.length() > 1) sb.append(", ");
            sb.append('"').append(e.getKey()).append("\": ");
            Object v = e.getValue();
            if (v instanceof String s) {
                sb.append('"').append(s.replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
            } else if (v instanceof Double d) {
                sb.append(d.isNaN() || d.isInfinite() ? "null" : String.format(Locale.ROOT, "%.3f", d));
            } else {
                sb.append(v);
            }
        }
        return sb.append('}').toString();
    }
}
