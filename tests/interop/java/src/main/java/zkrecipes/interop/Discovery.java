package zkrecipes.interop;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;
import org.apache.curator.x.discovery.strategies.RoundRobinStrategy;

/**
 * The discovery scenario with Curator's curator-x-discovery 5.9 (see tests/interop/README.md).
 *
 * Two ServiceDiscovery objects on the base path P: one with JsonInstanceSerializer in its default
 * compatible mode, one with compatibleSerializationMode=false (writes "enabled"). Before the go
 * signal a ServiceCache and a ServiceProvider (round robin) per service (java, rust, c, python,
 * node) are started. Then: registers this worker's instances under service "java" (map, pojo, list,
 * none and K extras through the compatible discovery; full and the disabled "off" through the
 * other), logs "registered java SERVICE/ID CANON" each, waits until the caches hold --expect
 * instances in all, then logs "found java SERVICE/ID CANON" per cached instance, "picked java
 * SERVICE/ID" per getInstance() (2 x the service's instances), "usable java SERVICE ids" (the
 * provider's getAllInstances()), "reencode java SERVICE/ID same|differs ..." per node of another
 * runtime (the node's bytes read back through JsonInstanceSerializer and written again by it: Jackson's
 * bytes must be ours), and writes the exact bytes Curator wrote for its own instances and for more
 * instances serialized directly (escapes, doubles, every service type) into --golden DIR as
 * NAME.compat.json / NAME.full.json. CANON is one JSON object of the instance's fields (payload as
 * JSON, payloadClass its Java class, uriSpec the template). Marks --peers DIR/ID, waits for all five
 * marks, closes.
 */
final class Discovery {
    /** The small POJO payload (Jackson writes "@class" = zkrecipes.interop.Discovery$Details). */
    @JsonPropertyOrder({"region", "weight", "primary"})
    public static final class Details {
        public String region;
        public int weight;
        public boolean primary;

        public Details() {}

        Details(String region, int weight, boolean primary) {
            this.region = region;
            this.weight = weight;
            this.primary = primary;
        }
    }

    static final String[] SERVICES = {"java", "rust", "c", "python", "node"};
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final CuratorFramework client;
    private final String base;
    private final String id;
    private final JsonInstanceSerializer<Object> compatSer = new JsonInstanceSerializer<>(Object.class);
    private final JsonInstanceSerializer<Object> fullSer = new JsonInstanceSerializer<>(Object.class, false);
    private final ServiceDiscovery<Object> compat;
    private final ServiceDiscovery<Object> full;
    private final Map<String, ServiceCache<Object>> caches = new LinkedHashMap<>();
    private final Map<String, ServiceProvider<Object>> providers = new LinkedHashMap<>();

    Discovery(CuratorFramework client, String base, String id) throws Exception {
        this.client = client;
        this.base = base;
        this.id = id;
        compat = ServiceDiscoveryBuilder.builder(Object.class).client(client).basePath(base).serializer(compatSer).build();
        full = ServiceDiscoveryBuilder.builder(Object.class).client(client).basePath(base).serializer(fullSer).build();
        compat.start();
        full.start();
        for (String s : SERVICES) {
            ServiceCache<Object> c = compat.serviceCacheBuilder().name(s).build();
            c.start();
            caches.put(s, c);
            ServiceProvider<Object> p = compat.serviceProviderBuilder().serviceName(s)
                    .providerStrategy(new RoundRobinStrategy<>()).build();
            p.start();
            providers.put(s, p);
        }
    }

    /** The map payload every runtime registers (a LinkedHashMap: Jackson's "@class" inside). */
    static Map<String, Object> mapPayload() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("region", "eu-west");
        m.put("weight", 1.5);
        m.put("ratio", 2.5E-4);
        m.put("big", 10000000000L);
        m.put("tags", new ArrayList<>(List.of("a", "b")));
        Map<String, Object> nested = new LinkedHashMap<>();
        nested.put("k", "v");
        m.put("nested", nested);
        m.put("note", "say \"hi\"\t\u00e9\u00fc/\u0001");
        return m;
    }

    static List<Object> listPayload() {
        return new ArrayList<>(Arrays.asList("x", 1, 2.5, true, null));
    }

    static ServiceInstance<Object> instance(String name, String id, String address, Integer port, Integer sslPort,
                                            Object payload, ServiceType type, String uriSpec, boolean enabled) {
        return new ServiceInstance<>(name, id, address, port, sslPort, payload, System.currentTimeMillis(), type,
                uriSpec == null ? null : new UriSpec(uriSpec), enabled);
    }

    /** The template again from the parts (variables in braces), as every face prints it. */
    static String template(UriSpec spec) {
        if (spec == null) return null;
        StringBuilder b = new StringBuilder();
        for (UriSpec.Part p : spec.getParts()) {
            b.append(p.isVariable() ? "{" + p.getValue() + "}" : p.getValue());
        }
        return b.toString();
    }

    static String canon(ServiceInstance<Object> i) throws Exception {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", i.getName());
        m.put("id", i.getId());
        m.put("address", i.getAddress());
        m.put("port", i.getPort());
        m.put("sslPort", i.getSslPort());
        Object p = i.getPayload();
        m.put("payload", p == null ? null : MAPPER.valueToTree(p));
        m.put("payloadClass", p == null ? null : p.getClass().getName());
        m.put("registrationTimeUTC", i.getRegistrationTimeUTC());
        m.put("serviceType", i.getServiceType().name());
        m.put("uriSpec", template(i.getUriSpec()));
        m.put("enabled", i.isEnabled());
        return MAPPER.writeValueAsString(m);
    }

    void run(int extras, int expect, String peers, String golden, PrintWriter log) throws Exception {
        String s = "java";
        List<ServiceInstance<Object>> mine = new ArrayList<>();
        List<Boolean> viaFull = new ArrayList<>();
        mine.add(instance(s, "java-map", "10.0.0.1", 8080, null, mapPayload(), ServiceType.DYNAMIC,
                "{scheme}://{address}:{port}/map", true));
        mine.add(instance(s, "java-pojo", "10.0.0.2", 8081, 8443, new Details("us", 3, true), ServiceType.STATIC,
                "{scheme}://{address}:{ssl-port}/pojo", true));
        mine.add(instance(s, "java-list", "10.0.0.3", 8082, null, listPayload(), ServiceType.DYNAMIC,
                "{scheme}://{address}:{port}/{[}list{]}", true));
        mine.add(instance(s, "java-none", "10.0.0.4", 8083, null, null, ServiceType.DYNAMIC, null, true));
        for (int k = 0; k < 4; k++) viaFull.add(false);
        mine.add(instance(s, "java-full", "10.0.0.6", 8085, null, mapPayload(), ServiceType.DYNAMIC,
                "{scheme}://{address}:{port}/full", true));
        mine.add(instance(s, "java-off", "10.0.0.5", 8084, null, null, ServiceType.DYNAMIC, null, false));
        viaFull.add(true);
        viaFull.add(true);
        for (int k = 0; k < extras; k++) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("i", k);
            mine.add(instance(s, "java-e" + k, "10.1.0." + (k % 250), 9000 + k, null, p, ServiceType.DYNAMIC, null, true));
            viaFull.add(false);
        }
        for (int k = 0; k < mine.size(); k++) {
            ServiceInstance<Object> i = mine.get(k);
            (viaFull.get(k) ? full : compat).registerService(i);
            log.println("registered java " + s + "/" + i.getId() + " " + canon(i));
        }
        log.flush();

        // Every runtime's instances in the caches.
        long t0 = System.nanoTime();
        Worker.waitCount(expect, () -> caches.values().stream().mapToInt(c -> c.getInstances().size()).sum());
        // Each provider has a cache of its own, which may lag the worker's (seen under the load of
        // the long run): wait until it offers every enabled instance (all but the service's "-off").
        long t1 = System.nanoTime();
        boolean caughtUp = Worker.poll(() -> providers.entrySet().stream().allMatch(e -> {
            try {
                long enabled = caches.get(e.getKey()).getInstances().stream().filter(i -> !i.getId().endsWith("-off")).count();
                return e.getValue().getAllInstances().size() == enabled;
            } catch (Exception x) {
                throw new RuntimeException(x);
            }
        }));
        log.println("waited java " + (t1 - t0) / 1000000 + " " + (System.nanoTime() - t1) / 1000000 + " " + caughtUp);
        for (Map.Entry<String, ServiceCache<Object>> e : caches.entrySet()) {
            for (ServiceInstance<Object> i : e.getValue().getInstances()) {
                log.println("found java " + e.getKey() + "/" + i.getId() + " " + canon(i));
            }
        }
        // The providers: never a disabled instance.
        for (Map.Entry<String, ServiceProvider<Object>> e : providers.entrySet()) {
            int n = caches.get(e.getKey()).getInstances().size();
            for (int k = 0; k < 2 * n; k++) {
                ServiceInstance<Object> i = e.getValue().getInstance();
                log.println("picked java " + e.getKey() + "/" + (i == null ? "-" : i.getId()));
            }
            List<String> ids = new ArrayList<>();
            for (ServiceInstance<Object> i : e.getValue().getAllInstances()) ids.add(i.getId());
            java.util.Collections.sort(ids);
            log.println("usable java " + e.getKey() + " " + String.join(",", ids));
        }
        // Jackson writes our nodes back byte for byte.
        for (String svc : SERVICES) {
            if (svc.equals("java")) continue;
            List<String> ids = client.getChildren().forPath(base + "/" + svc);
            java.util.Collections.sort(ids);
            for (String node : ids) {
                byte[] ours = client.getData().forPath(base + "/" + svc + "/" + node);
                boolean hasEnabled = new String(ours, StandardCharsets.UTF_8).contains("\"enabled\":");
                String verdict;
                try {
                    byte[] theirs = (hasEnabled ? fullSer : compatSer).serialize(compatSer.deserialize(ours));
                    verdict = Arrays.equals(ours, theirs) ? "same"
                            : "differs ours=" + new String(ours, StandardCharsets.UTF_8) + " jackson="
                            + new String(theirs, StandardCharsets.UTF_8);
                } catch (Exception ex) {
                    verdict = "differs cannot-read " + ex.toString().replace('\n', ' ');
                }
                log.println("reencode java " + svc + "/" + node + " " + verdict);
            }
        }
        if (golden != null) writeGolden(Path.of(golden), mine, viaFull);
        log.flush();

        new java.io.File(peers, id).createNewFile();
        // Our instances stay registered until every peer has picked and marked (the runner marks
        // a peer that exited; it kills every worker at its deadline).
        Worker.poll(600, () -> {
            String[] names = new java.io.File(peers).list();
            return names != null && names.length >= SERVICES.length;
        });
        for (ServiceProvider<Object> p : providers.values()) p.close();
        for (ServiceCache<Object> c : caches.values()) c.close();
        full.close();
        compat.close();
        log.println("done java " + id + " " + mine.size());
    }

    /**
     * The bytes Curator wrote for its own registered instances (read back from their nodes), and
     * the serializers' bytes for more instances that exercise escaping, number text and every
     * service type, each in both modes.
     */
    private void writeGolden(Path dir, List<ServiceInstance<Object>> mine, List<Boolean> viaFull) throws Exception {
        Files.createDirectories(dir);
        for (int k = 0; k < mine.size() && k < 6; k++) {
            ServiceInstance<Object> i = mine.get(k);
            byte[] bytes = client.getData().forPath(base + "/java/" + i.getId());
            Files.write(dir.resolve("node-" + i.getId() + (viaFull.get(k) ? ".full.json" : ".compat.json")), bytes);
        }
        Map<String, ServiceInstance<Object>> more = new TreeMap<>();
        Map<String, Object> doubles = new LinkedHashMap<>();
        for (double d : new double[] {0.1, 100.0, 1.0E7, 9999999.0, 1.0E10, 1.0E-3, 9.99E-4, 1.0E-5, -2.5E-7, 123456.789,
                                      1.7976931348623157E308, 4.9E-324, -0.0, 3.0E21}) {
            doubles.put("d" + doubles.size(), d);
        }
        doubles.put("int", 42);
        doubles.put("long", -9007199254740993L);
        doubles.put("bool", false);
        doubles.put("nil", null);
        more.put("doubles", instance("numbers", "n1", null, null, null, doubles, ServiceType.DYNAMIC, null, true));
        more.put("escapes", new ServiceInstance<>("esc \"q\" \\ \b\f\n\r\t\u0000\u001f\u007f é 中 \ud83d\ude00 / <>&'",
                "id-\u2028\u2029", "addr\u0010", 0, 65535, "str \"payload\"\n", 1700000000123L, ServiceType.DYNAMIC,
                new UriSpec("{scheme}://{address}:{port}/p?q={[}x{]}&y={name}"), true));
        more.put("static-pojo", new ServiceInstance<>("svc", "s1", "10.0.0.9", 80, 443, new Details("ap \"x\"", -7, false),
                1L, ServiceType.STATIC, new UriSpec("https://{address}:{ssl-port}"), true));
        more.put("permanent-list", new ServiceInstance<>("svc", "p1", "h", 1, null,
                new ArrayList<>(List.of(mapPayload(), List.of(), "z")), 0L, ServiceType.PERMANENT, null, true));
        more.put("sequential-disabled", new ServiceInstance<>("svc", "q1", null, null, null, null, Long.MAX_VALUE,
                ServiceType.DYNAMIC_SEQUENTIAL, null, false));
        more.put("empty-uri", new ServiceInstance<>("svc", "u1", "", null, null, new LinkedHashMap<>(), -1L,
                ServiceType.DYNAMIC, new UriSpec(""), true));
        for (Map.Entry<String, ServiceInstance<Object>> e : more.entrySet()) {
            Files.write(dir.resolve(e.getKey() + ".compat.json"), compatSer.serialize(e.getValue()));
            Files.write(dir.resolve(e.getKey() + ".full.json"), fullSer.serialize(e.getValue()));
        }
    }
}
