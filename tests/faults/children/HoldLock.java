// Fault suite child (tests/faults): take Apache Curator's InterProcessMutex, print
// `ZKR_CHILD_HELD <czxid of its lock node> <session id> <lock node>`, then hold it until killed
// (kill -9) or until stdin closes (the parent died). Run as a single-file source program with
// the Curator jars that scripts/setup-interop puts in tests/interop/java/target/lib/.
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

public class HoldLock {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(2000)
                .connectionTimeoutMs(15000)
                .retryPolicy(new RetryNTimes(10, 100))
                .build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("HoldLock: not connected within 30 s");
            System.exit(1);
        }
        InterProcessMutex mutex = new InterProcessMutex(client, args[1]);
        if (!mutex.acquire(30, TimeUnit.SECONDS)) {
            System.err.println("HoldLock: the lock was not acquired within 30 s");
            System.exit(1);
        }
        // We hold it, so the first participant is our node.
        String node = mutex.getParticipantNodes().iterator().next();
        Stat stat = client.checkExists().forPath(node);
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        System.out.println("ZKR_CHILD_HELD " + stat.getCzxid() + " " + session + " " + node);
        System.out.flush();
        while (System.in.read() >= 0) {
            // hold until stdin closes
        }
        System.exit(0);
    }
}
