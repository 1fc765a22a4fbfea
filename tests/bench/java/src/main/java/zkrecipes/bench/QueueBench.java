package zkrecipes.bench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * The Curator driver of tests/bench/queues (issue 18): Curator 5.9.0's DistributedQueue with a
 * lock path (1 producer, C consumers, each its own client) and DistributedDoubleBarrier (M
 * members, R rounds). One JSON line, as queue_bench.rs prints it.
 */
public final class QueueBench {
    private static CuratorFramework connect(String hosts) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder().connectString(hosts)
                .sessionTimeoutMs(30_000).connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5)).build();
        c.start();
        if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) throw new IllegalStateException("could not connect");
        return c;
    }

    private static final QueueSerializer<byte[]> BYTES = new QueueSerializer<byte[]>() {
        @Override
        public byte[] serialize(byte[] item) { return item; }

        @Override
        public byte[] deserialize(byte[] bytes) { return bytes; }
    };

    private static void queue(String hosts, String path, int items, int consumers) throws Exception {
        AtomicInteger done = new AtomicInteger();
        List<CuratorFramework> clients = new ArrayList<>();
        List<DistributedQueue<byte[]>> queues = new ArrayList<>();
        QueueConsumer<byte[]> count = new QueueConsumer<byte[]>() {
            @Override
            public void consumeMessage(byte[] message) {
                done.incrementAndGet();
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState newState) {}
        };
        for (int i = 0; i < consumers; i++) {
            CuratorFramework c = connect(hosts);
            DistributedQueue<byte[]> q = QueueBuilder.builder(c, count, BYTES, path).lockPath(path + "-locks").buildQueue();
            q.start();
            clients.add(c);
            queues.add(q);
        }
        CuratorFramework producer = connect(hosts);
        DistributedQueue<byte[]> p = QueueBuilder.builder(producer, null, BYTES, path)
                .lockPath(path + "-locks").putInBackground(false).buildQueue();
        p.start();
        long t0 = System.nanoTime();
        for (int i = 0; i < items; i++) p.put(Integer.toString(i).getBytes(StandardCharsets.UTF_8));
        double putS = (System.nanoTime() - t0) / 1e9;
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (done.get() < items) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("no progress for 120 s: " + done.get());
            Thread.sleep(1);
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        System.out.printf("{\"impl\":\"curator\",\"scenario\":\"queue\",\"items\":%d,\"consumers\":%d,\"seconds\":%.3f,"
                + "\"items_per_s\":%.1f,\"put_per_s\":%.1f,\"consumed\":%d,\"version\":\"curator 5.9.0\"}%n",
                items, consumers, secs, items / secs, items / putS, done.get());
        p.close();
        for (DistributedQueue<byte[]> q : queues) q.close();
        producer.close();
        for (CuratorFramework c : clients) c.close();
    }

    private static void barrier(String hosts, String path, int members, int rounds) throws Exception {
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < members; i++) clients.add(connect(hosts));
        List<Double> latencies = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            String round = path + "/r" + r;
            CyclicBarrier start = new CyclicBarrier(members);
            long[] called = new long[members], entered = new long[members];
            Thread[] threads = new Thread[members];
            Exception[] failed = new Exception[1];
            for (int m = 0; m < members; m++) {
                final int me = m;
                threads[m] = new Thread(() -> {
                    try {
                        DistributedDoubleBarrier b = new DistributedDoubleBarrier(clients.get(me), round, members);
                        start.await();
                        called[me] = System.nanoTime();
                        if (!b.enter(60, TimeUnit.SECONDS)) throw new IllegalStateException("enter timed out");
                        entered[me] = System.nanoTime();
                        start.await();
                        if (!b.leave(60, TimeUnit.SECONDS)) throw new IllegalStateException("leave timed out");
                    } catch (Exception e) {
                        failed[0] = e;
                    }
                });
                threads[m].start();
            }
            for (Thread t : threads) t.join();
            if (failed[0] != null) throw failed[0];
            long lastCall = 0, lastIn = 0;
            for (int m = 0; m < members; m++) {
                lastCall = Math.max(lastCall, called[m]);
                lastIn = Math.max(lastIn, entered[m]);
            }
            latencies.add((lastIn - lastCall) / 1e6);
        }
        Collections.sort(latencies);
        double p50 = latencies.get((int) Math.round((latencies.size() - 1) * 0.5));
        double p99 = latencies.get((int) Math.round((latencies.size() - 1) * 0.99));
        System.out.printf("{\"impl\":\"curator\",\"scenario\":\"barrier\",\"members\":%d,\"rounds\":%d,\"p50_ms\":%.2f,"
                + "\"p99_ms\":%.2f,\"version\":\"curator 5.9.0\"}%n", members, rounds, p50, p99);
        for (CuratorFramework c : clients) c.close();
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) a.put(argv[i], argv[i + 1]);
        String hosts = a.get("--connect"), path = a.get("--path");
        switch (a.getOrDefault("--scenario", "")) {
            case "queue":
                queue(hosts, path, Integer.parseInt(a.getOrDefault("--items", "500")),
                        Integer.parseInt(a.getOrDefault("--consumers", "4")));
                break;
            case "barrier":
                barrier(hosts, path, Integer.parseInt(a.getOrDefault("--members", "5")),
                        Integer.parseInt(a.getOrDefault("--rounds", "50")));
                break;
            default:
                throw new IllegalArgumentException("unknown scenario " + a.get("--scenario"));
        }
        System.exit(0);
    }
}
