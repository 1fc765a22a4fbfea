"""The Python drivers of tests/bench/queues (issue 18): kazoo 2.11.0 (LockingQueue, DoubleBarrier)
and the zkrecipes Python face (DistributedQueue with a lock path, DistributedDoubleBarrier), on
the scenarios of queue_bench.rs. One JSON line on stdout; exit 1 on any failure.

    queue_driver.py --impl kazoo|python --scenario queue|barrier --connect HOST:PORT --path P
                    [--items N] [--consumers C] [--members M] [--rounds R]
"""
import argparse
import json
import sys
import threading
import time


def fail(msg):
    print(f"queue_driver: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


class Kazoo:
    name = "kazoo"

    def __init__(self, hosts):
        from kazoo.client import KazooClient
        import kazoo

        self.version = f"kazoo {kazoo.version.__version__}" if hasattr(kazoo, "version") else "kazoo"
        self.c = KazooClient(hosts=hosts, timeout=30.0)
        self.c.start(timeout=15)

    def queue(self, path):
        q = self.c.LockingQueue(path)

        def take():
            data = q.get(0.2)
            if data is None:
                return False
            if not q.consume():
                fail("LockingQueue.consume failed")
            return True

        return q.put, take

    def double_barrier(self, path, members):
        b = self.c.DoubleBarrier(path, members)
        return b.enter, b.leave

    def close(self):
        self.c.stop()
        self.c.close()


class Ours:
    name = "python"

    def __init__(self, hosts):
        import zkrecipes

        self.z = zkrecipes
        self.version = f"zkrecipes {zkrecipes.__version__} (python)"
        self.c = zkrecipes.Client(hosts, session_timeout=30.0).start()

    def queue(self, path):
        q = self.z.DistributedQueue(self.c, path, lock_path=path + "-locks")

        def take():
            item = q.take(0.2)
            if item is None:
                return False
            item.done()
            return True

        return q.put, take

    def double_barrier(self, path, members):
        b = self.z.DistributedDoubleBarrier(self.c, path, members)
        return (lambda: b.enter(60)), (lambda: b.leave(60))

    def close(self):
        self.c.close()


def queue(make, a):
    done, guard = [0], threading.Lock()
    ready = threading.Barrier(a.consumers + 1)

    def consume():
        c = make()
        _, take = c.queue(a.path)
        ready.wait()
        deadline = time.monotonic() + 120
        while done[0] < a.items:
            if time.monotonic() > deadline:
                fail("no progress for 120 s")
            if take():
                with guard:
                    done[0] += 1
        c.close()

    workers = [threading.Thread(target=consume) for _ in range(a.consumers)]
    for w in workers:
        w.start()
    p = make()
    put, _ = p.queue(a.path)
    ready.wait()
    t0 = time.monotonic()
    for i in range(a.items):
        put(str(i).encode())
    put_s = time.monotonic() - t0
    for w in workers:
        w.join()
    secs = time.monotonic() - t0
    print(json.dumps({"impl": p.name, "scenario": "queue", "items": a.items, "consumers": a.consumers,
                      "seconds": round(secs, 3), "items_per_s": round(a.items / secs, 1),
                      "put_per_s": round(a.items / put_s, 1), "version": p.version}))
    p.close()


def barrier(make, a):
    clients = [make() for _ in range(a.members)]
    latencies = []
    for r in range(a.rounds):
        start = threading.Barrier(a.members)
        called, entered = [0.0] * a.members, [0.0] * a.members

        def member(i):
            enter, leave = clients[i].double_barrier(f"{a.path}/r{r}", a.members)
            start.wait()
            called[i] = time.monotonic()
            if enter() is False:
                fail("enter timed out")
            entered[i] = time.monotonic()
            start.wait()
            leave()

        threads = [threading.Thread(target=member, args=(i,)) for i in range(a.members)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
            if t.is_alive():
                fail("a member hung")
        latencies.append((max(entered) - max(called)) * 1000)
    latencies.sort()
    pick = lambda p: latencies[round((len(latencies) - 1) * p / 100)]
    print(json.dumps({"impl": clients[0].name, "scenario": "barrier", "members": a.members,
                      "rounds": a.rounds, "p50_ms": round(pick(50), 2), "p99_ms": round(pick(99), 2),
                      "version": clients[0].version}))
    for c in clients:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", required=True, choices=["kazoo", "python"])
    ap.add_argument("--scenario", required=True, choices=["queue", "barrier"])
    ap.add_argument("--connect", required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--items", type=int, default=500)
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument("--members", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=50)
    a = ap.parse_args()
    make = (lambda: Kazoo(a.connect)) if a.impl == "kazoo" else (lambda: Ours(a.connect))
    threading.Timer(600, lambda: fail("watchdog: 600 s")).start()
    (queue if a.scenario == "queue" else barrier)(make, a)
    import os

    os._exit(0)


if __name__ == "__main__":
    main()
