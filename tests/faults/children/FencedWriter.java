// Fault suite child (tests/faults, scenario 6): the reference row, Apache Curator 5.9's
// InterProcessMutex writing to a fenced resource. Curator has no fencing token and no lost signal
// on a lock: the token is the lock node's czxid, and "lost" is a ConnectionStateListener seeing
// SUSPENDED or LOST (Curator's advice). Protocol in docs/FAULTS.md ("The fenced writer"). Run as
// a single-file source program with the jars scripts/setup-interop puts in
// tests/interop/java/target/lib/.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

public class FencedWriter {
    static final long WORK_MS = 300, IDLE_MS = 300; // between the check and the write; after it

    static void say(String line) {
        System.out.println("ZKR_CHILD_" + line);
        System.out.flush();
    }

    public static void main(String[] args) {
        try {
            run(args);
            System.exit(0);
        } catch (Throwable e) { // Curator's threads would keep a failed JVM alive
            e.printStackTrace();
            System.exit(1);
        }
    }

    static void run(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 2000, 15000, new RetryNTimes(10, 100));
        AtomicBoolean lost = new AtomicBoolean();
        client.getConnectionStateListenable().addListener((c, state) -> {
            if ((state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) && !lost.get()) {
                say("SIGNAL"); // before the flag: the main thread says DONE only after it
                lost.set(true);
            }
        });
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("FencedWriter: not connected within 30 s");
        }
        InterProcessMutex mutex = new InterProcessMutex(client, args[1]);
        if (!mutex.acquire(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("FencedWriter: the lock was not acquired within 30 s");
        }
        // We hold it, so the first participant is our node; its czxid is the fencing token.
        String node = mutex.getParticipantNodes().iterator().next();
        long token = client.checkExists().forPath(node).getCzxid();
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        say("HELD " + token + " " + session + " " + node);
        BufferedReader replies = new BufferedReader(new InputStreamReader(System.in));
        for (int n = 1; ; n++) {
            if (lost.get() || !mutex.isOwnedByCurrentThread()) {
                say("LOST " + (lost.get() ? "callback" : "invalid"));
                break;
            }
            say("CHECKED " + n);
            Thread.sleep(WORK_MS);
            say("WRITE " + token + " " + n);
            String reply = replies.readLine();
            if (reply == null) {
                System.exit(0); // the parent (the resource) is gone
            }
            if (!reply.startsWith("OK")) {
                say("REJECTED " + reply.split(" ")[1]);
                break;
            }
            say("IDLE " + n);
            Thread.sleep(IDLE_MS);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!lost.get()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("FencedWriter: no SUSPENDED/LOST within 30 s");
            }
            Thread.sleep(10);
        }
        say("DONE");
        mutex.release(); // Curator ignores the node already gone with the session
        client.close();
    }
}
