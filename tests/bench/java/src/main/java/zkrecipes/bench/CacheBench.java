package zkrecipes.bench;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * Apache Curator's CuratorCache side of the cache benchmark (tests/bench/cache_run, issue 16):
 * {@code java -cp curator-bench.jar zkrecipes.bench.CacheBench --mode load|latency|resync
 * --connect HOST:PORT --path P [--iterations M]}, one JSON line on stdout (resync: "LOADED"
 * first; CuratorCache has no "resync complete" signal, so only the runner's server-side request
 * count is reported for it).
 */
public final class CacheBench {
    static long rssKb() throws Exception {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith("VmRSS:")) return Long.parseLong(l.replaceAll("[^0-9]", ""));
        }
        return 0;
    }

    static long heapUsed() {
        Runtime r = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) System.gc();
        return r.totalMemory() - r.freeMemory();
    }

    static long pct(List<Long> sorted, double p) {
        return sorted.isEmpty() ? 0 : sorted.get((int) Math.round((sorted.size() - 1) * p / 100.0));
    }

    static CuratorFramework connect(String s) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder().connectString(s).sessionTimeoutMs(30_000)
                .connectionTimeoutMs(15_000).retryPolicy(new ExponentialBackoffRetry(100, 5)).build();
        c.start();
        if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) throw new IllegalStateException("not connected");
        return c;
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) a.put(argv[i].substring(2), argv[i + 1]);
        String mode = a.get("mode"), root = a.get("path");
        int iterations = Integer.parseInt(a.getOrDefault("iterations", "500"));
        CuratorFramework client = connect(a.get("connect"));
        String out;
        CountDownLatch loaded = new CountDownLatch(1);
        LinkedBlockingQueue<Long> lat = new LinkedBlockingQueue<>();
        final long t0 = System.nanoTime();
        long before = rssKb(), heapBefore = heapUsed();
        long t = System.nanoTime();
        CuratorCache cache = CuratorCache.build(client, root);
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forInitialized(loaded::countDown)
                .forChanges((oldNode, node) -> {
                    try {
                        long sent = Long.parseLong(new String(node.getData(), StandardCharsets.UTF_8));
                        lat.add((System.nanoTime() - t0 - sent) / 1000);
                    } catch (NumberFormatException e) {
                        // not a latency probe
                    }
                })
                .build());
        cache.start();
        if (!loaded.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("not loaded in 60 s");
        double ms = (System.nanoTime() - t) / 1e6;
        long size = cache.size();
        switch (mode) {
            case "load": {
                long after = rssKb(), heapAfter = heapUsed();
                out = String.format(Locale.ROOT,
                        "{\"mode\":\"load\",\"impl\":\"Curator CuratorCache\",\"nodes\":%d,\"load_ms\":%.1f,"
                                + "\"rss_delta_kb\":%d,\"bytes_per_node\":%d,\"heap_bytes_per_node\":%d}",
                        size, ms, after - before, (after - before) * 1024 / Math.max(1, size),
                        (heapAfter - heapBefore) / Math.max(1, size));
                break;
            }
            case "latency": {
                CuratorFramework writer = connect(a.get("connect"));
                List<Long> got = new ArrayList<>();
                for (int i = 0; i < iterations + 50; i++) {
                    String p = String.format(Locale.ROOT, "%s/c%02d", root, i % 100);
                    long now = System.nanoTime() - t0;
                    writer.setData().forPath(p, Long.toString(now).getBytes(StandardCharsets.UTF_8));
                    Long us = lat.poll(60, TimeUnit.SECONDS);
                    if (us == null) throw new IllegalStateException("no event");
                    if (i >= 50) got.add(us);
                }
                writer.close();
                Collections.sort(got);
                out = String.format(Locale.ROOT,
                        "{\"mode\":\"latency\",\"impl\":\"Curator CuratorCache\",\"n\":%d,\"p50_us\":%d,\"p99_us\":%d}",
                        got.size(), pct(got, 50), pct(got, 99));
                break;
            }
            case "resync": {
                System.out.println("LOADED");
                System.out.flush();
                // The runner restarts the server and counts the requests; wait for its word.
                new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
                out = String.format(Locale.ROOT,
                        "{\"mode\":\"resync\",\"impl\":\"Curator CuratorCache\",\"nodes\":%d}", cache.size());
                break;
            }
            default:
                throw new IllegalArgumentException("unknown mode " + mode);
        }
        cache.close();
        client.close();
        System.out.println(out);
        System.exit(0);
    }
}
