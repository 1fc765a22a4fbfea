"""zkrecipes vs kazoo, side by side on the same ZooKeeper, one run.

    pip install kazoo==2.11.0           # only the benchmark needs it
    python bench_vs_kazoo.py HOST:PORT [--quick]

Measures, for each library: uncontended acquire+release of one lock (mean time), handoffs per
second with 8 clients contending for one lock, counter increments per second with 10 threads x
100 increments on one counter, and leader failover (the leader leaves cleanly; time until the
next participant leads). Prints a table and the ratios the issue's targets name (acquire+release
<= 0.6x kazoo's time, counter >= 5x kazoo's throughput).

The build matters: run it against a release build of the package (`pip install ./bindings-python`),
not the debug build the tests use.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
import uuid
from typing import Callable, Dict, List

import zkrecipes

try:
    from kazoo.client import KazooClient
    from kazoo.recipe.counter import Counter as KazooCounter
except ImportError:  # pragma: no cover - a clear message instead of a traceback
    sys.exit("kazoo is not installed: pip install kazoo==2.11.0")


def timed(n: int, op: Callable[[], None]) -> float:
    """Mean seconds per call of ``op`` over ``n`` calls (after 10 warm-up calls)."""
    for _ in range(10):
        op()
    start = time.perf_counter()
    for _ in range(n):
        op()
    return (time.perf_counter() - start) / n


def handoffs(n_clients: int, seconds: float, make_worker: Callable[[int], Callable[[], None]]) -> float:
    """Acquire/release cycles per second across ``n_clients`` threads, each with its own client."""
    workers = [make_worker(i) for i in range(n_clients)]
    stop = time.monotonic() + seconds
    counts = [0] * n_clients

    def run(i: int) -> None:
        while time.monotonic() < stop:
            workers[i]()
            counts[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.monotonic() - start)


def increments(threads: int, each: int, inc: Callable[[], None]) -> float:
    start = time.monotonic()
    ts = [threading.Thread(target=lambda: [inc() for _ in range(each)]) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return threads * each / (time.monotonic() - start)


def bench_zkrecipes(hosts: str, base: str, quick: bool) -> Dict[str, float]:
    out: Dict[str, float] = {}
    clients = [zkrecipes.Client(hosts, session_timeout=20.0).start() for _ in range(10)]
    try:
        lock = zkrecipes.InterProcessMutex(clients[0], base + "/uncontended")

        def cycle() -> None:
            lock.acquire()
            lock.release()

        out["acquire+release ms"] = timed(50 if quick else 300, cycle) * 1000

        def contender(i: int) -> Callable[[], None]:
            m = zkrecipes.InterProcessMutex(clients[i], base + "/contended")

            def go() -> None:
                with m:
                    pass

            return go

        out["8-client handoffs/s"] = handoffs(8, 1.0 if quick else 3.0, contender)
        counter = zkrecipes.DistributedAtomicLong(clients[0], base + "/counter")
        out["10x100 increments/s"] = increments(10, 20 if quick else 100, lambda: None if counter.add_and_get(1) else None)
        out["leader failover ms"] = statistics.median(
            failover_zkrecipes(clients[1], clients[2], base + f"/latch-{i}") for i in range(3 if quick else 7)
        )
    finally:
        for c in clients:
            c.close()
    return out


def failover_zkrecipes(a: zkrecipes.Client, b: zkrecipes.Client, path: str) -> float:
    first = zkrecipes.LeaderLatch(a, path, "a")
    second = zkrecipes.LeaderLatch(b, path, "b")
    led = threading.Event()
    second.add_listener(is_leader=led.set)
    first.start()
    assert first.await_leadership(10)
    second.start()
    start = time.perf_counter()
    first.close()
    assert led.wait(10)
    elapsed = (time.perf_counter() - start) * 1000
    second.close()
    return elapsed


def bench_kazoo(hosts: str, base: str, quick: bool) -> Dict[str, float]:
    out: Dict[str, float] = {}
    clients = [KazooClient(hosts=hosts, timeout=20.0) for _ in range(10)]
    for c in clients:
        c.start()
    try:
        lock = clients[0].Lock(base + "/uncontended")

        def cycle() -> None:
            lock.acquire()
            lock.release()

        out["acquire+release ms"] = timed(50 if quick else 300, cycle) * 1000

        def contender(i: int) -> Callable[[], None]:
            m = clients[i].Lock(base + "/contended")

            def go() -> None:
                with m:
                    pass

            return go

        out["8-client handoffs/s"] = handoffs(8, 1.0 if quick else 3.0, contender)
        # One kazoo Counter per thread (an object is not thread-safe; each += is a versioned
        # compare-and-set retried on conflict, so several objects on one path are correct).
        local = threading.local()

        def inc() -> None:
            if not hasattr(local, "counter"):
                local.counter = KazooCounter(clients[0], base + "/counter")
            local.counter += 1

        out["10x100 increments/s"] = increments(10, 20 if quick else 100, inc)
        final = KazooCounter(clients[0], base + "/counter").value
        assert final == 10 * (20 if quick else 100), f"kazoo counted {final}"
        out["leader failover ms"] = statistics.median(
            failover_kazoo(clients[1], clients[2], base + f"/election-{i}") for i in range(3 if quick else 7)
        )
    finally:
        for c in clients:
            c.stop()
            c.close()
    return out


def failover_kazoo(a: KazooClient, b: KazooClient, path: str) -> float:
    a_leads = threading.Event()
    a_quit = threading.Event()
    b_leads = threading.Event()
    ea = a.Election(path, "a")
    eb = b.Election(path, "b")

    def lead_a() -> None:
        a_leads.set()
        a_quit.wait(30)

    ta = threading.Thread(target=lambda: ea.run(lead_a))
    ta.start()
    assert a_leads.wait(10)
    tb = threading.Thread(target=lambda: eb.run(b_leads.set))
    tb.start()
    while len(ea.contenders()) < 2:
        time.sleep(0.005)
    start = time.perf_counter()
    a_quit.set()  # a's leader function returns: the election lock is released
    assert b_leads.wait(10)
    elapsed = (time.perf_counter() - start) * 1000
    ta.join()
    tb.join()
    return elapsed


def main(argv: List[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    hosts, quick = argv[1], "--quick" in argv
    run = uuid.uuid4().hex[:8]
    ours = bench_zkrecipes(hosts, f"/bench/{run}/zkrecipes", quick)
    theirs = bench_kazoo(hosts, f"/bench/{run}/kazoo", quick)
    print(f"{'measure':<24}{'zkrecipes':>14}{'kazoo':>14}{'ratio':>10}")
    for key in ours:
        ratio = ours[key] / theirs[key] if theirs[key] else float("nan")
        print(f"{key:<24}{ours[key]:>14.2f}{theirs[key]:>14.2f}{ratio:>9.2f}x")
    acquire = ours["acquire+release ms"] / theirs["acquire+release ms"]
    counter = ours["10x100 increments/s"] / theirs["10x100 increments/s"]
    print(f"targets: acquire+release {acquire:.2f}x kazoo's time (<= 0.6: {'met' if acquire <= 0.6 else 'NOT met'}), "
          f"counter {counter:.1f}x kazoo's throughput (>= 5: {'met' if counter >= 5 else 'NOT met'})")
    with zkrecipes.Client(hosts) as c:
        c.delete(f"/bench/{run}", recursive=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
