package zkrecipes.interop;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.CachedAtomicLong;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicValue;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.shared.SharedValue;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.RetryNTimes;

/**
 * The values scenario with Curator's own recipes on one path P (tests/interop/README.md):
 * <ul>
 * <li>P/value: a SharedValue (seed "0") counting in decimal text, getVersionedValue() then
 * trySetValue(previous, v + 1) until it is true: "value java ID V" per success;</li>
 * <li>P/atomic: a DistributedAtomicValue (decimal text, initialized "0"), get() then
 * compareAndSet(v, v + 1) until it succeeds: "atomic java ID V";</li>
 * <li>P/atomic-set: a DistributedAtomicValue with RetryNTimes(0, 0) (one optimistic try) and
 * PromotedToLock at P/atomic-lock (Curator's default: one try under the lock), initialized "seed";
 * trySet("ID:i") until it succeeds: "set java ID PRE POST PROMOTED" (PROMOTED: the tries made
 * under the lock);</li>
 * <li>P/ids: CachedAtomicLong(DistributedAtomicLong(P/ids, RetryNTimes(50, 10)), 5), next() until
 * it succeeds: "id java ID V";</li>
 * </ul>
 * First the N trySets (all workers at once, so that optimistic tries collide and get promoted),
 * then N rounds of one increment of each counter and one id; then "retries java ID VALUE ATOMIC
 * SET ID" (stale tries, failed trySets, failed reservations) and "done java ID N".
 */
final class Values {
    static final String SEED = "seed";
    final SharedValue value;
    final DistributedAtomicValue atomic;
    final DistributedAtomicValue set;
    final CachedAtomicLong ids;

    /** Every object, started and initialized (before the start barrier). */
    Values(CuratorFramework client, String path) throws Exception {
        value = new SharedValue(client, path + "/value", bytes("0"));
        value.start();
        atomic = new DistributedAtomicValue(client, path + "/atomic", new RetryNTimes(0, 0));
        atomic.initialize(bytes("0"));
        set = new DistributedAtomicValue(client, path + "/atomic-set", new RetryNTimes(0, 0),
                PromotedToLock.builder().lockPath(path + "/atomic-lock").build());
        set.initialize(bytes(SEED));
        ids = new CachedAtomicLong(new DistributedAtomicLong(client, path + "/ids", new RetryNTimes(50, 10)), 5);
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String text(byte[] b) {
        return b == null ? "null" : new String(b, StandardCharsets.UTF_8);
    }

    void run(PrintWriter log, String id, int n) throws Exception {
        long valueRetries = 0, atomicRetries = 0, setFails = 0, idFails = 0;
        for (int i = 0; i < n; i++) {
            for (;;) {
                AtomicValue<byte[]> r = set.trySet(bytes(id + ":" + i));
                if (r.succeeded()) {
                    log.println("set java " + id + " " + text(r.preValue()) + " " + text(r.postValue()) + " "
                            + r.getStats().getPromotedLockTries());
                    break;
                }
                setFails++;
            }
        }
        for (int i = 0; i < n; i++) {
            for (;;) {
                VersionedValue<byte[]> v = value.getVersionedValue();
                long next = Long.parseLong(text(v.getValue())) + 1;
                if (value.trySetValue(v, bytes(Long.toString(next)))) {
                    log.println("value java " + id + " " + next);
                    break;
                }
                valueRetries++;
            }
            for (;;) {
                byte[] current = atomic.get().postValue();
                long next = Long.parseLong(text(current)) + 1;
                if (atomic.compareAndSet(current, bytes(Long.toString(next))).succeeded()) {
                    log.println("atomic java " + id + " " + next);
                    break;
                }
                atomicRetries++;
            }
            for (;;) {
                AtomicValue<Long> r = ids.next();
                if (r.succeeded()) {
                    log.println("id java " + id + " " + r.postValue());
                    break;
                }
                idFails++;
            }
            log.flush();
        }
        log.println("retries java " + id + " " + valueRetries + " " + atomicRetries + " " + setFails + " " + idFails);
        log.println("done java " + id + " " + n);
        value.close();
    }

    /** values-get: "VALUE ATOMIC SET IDS", the four nodes as Curator reads them. */
    static String read(CuratorFramework client, String path) throws Exception {
        SharedValue v = new SharedValue(client, path + "/value", bytes("0"));
        v.start();
        String value = text(v.getValue());
        v.close();
        String atomic = text(new DistributedAtomicValue(client, path + "/atomic", new RetryNTimes(0, 0)).get().postValue());
        String set = text(new DistributedAtomicValue(client, path + "/atomic-set", new RetryNTimes(0, 0)).get().postValue());
        long ids = new DistributedAtomicLong(client, path + "/ids", new RetryNTimes(0, 0)).get().postValue();
        return value + " " + atomic + " " + set + " " + ids;
    }
}
