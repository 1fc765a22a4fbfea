#!/usr/bin/env python3
"""Benchmark driver for the Python face of zkrecipes and for kazoo (issue 10; protocol in the
bench docs): one scenario per run, EXACTLY one JSON line on stdout, diagnostics on stderr,
exit 1 on any failure (with a message), never a hang (every wait has a timeout and a watchdog
ends the process).

    .venv/bin/python tests/bench/drivers/py_driver.py --impl zkrecipes|kazoo \
        --scenario uncontended|contended|counter_threads|counter_clients|failover|memory \
        --connect HOST:PORT --path /bench/<unique> [--iterations N] [--warmup W] \
        [--clients C] [--threads T] [--seconds S] [--locks L] [--await]

zkrecipes: the blocking API (threads for the thread/client scenarios; the binding releases the
GIL while it waits); with --await (uncontended only), the asyncio API: one task awaiting
acquire_async() and release_async() on the loop asyncio.run makes. kazoo 2.11.0: one KazooClient per client, client.Lock / client.Counter /
client.Election.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

WAIT = 60.0  # seconds: the longest any single wait may take before the run fails


_progress = [time.monotonic()]


def progress() -> None:
    """Marks that an operation completed (the stall watchdog fails a run that makes none)."""
    _progress[0] = time.monotonic()


def watchdog(total: float, stall: float) -> None:
    """Ends the process if the run takes longer than ``total`` seconds, or if no operation
    completes for ``stall`` seconds (kazoo retries a connection loss forever inside
    Lock.acquire, whatever its timeout)."""
    start = time.monotonic()
    while True:
        time.sleep(0.5)
        t = time.monotonic()
        if t - start > total:
            fail(f"watchdog: no result after {total:.0f}s")
        if t - _progress[0] > stall:
            fail(f"watchdog: no operation completed for {stall:.0f}s")


def log(msg: str) -> None:
    print(f"py_driver: {msg}", file=sys.stderr, flush=True)


def fail(msg: str) -> "None":
    log(f"FAILED: {msg}")
    sys.stderr.flush()
    os._exit(1)  # threads may be blocked in a client: leave at once


def now_us() -> float:
    return time.perf_counter_ns() / 1000.0


def cpu_us() -> float:
    return time.process_time_ns() / 1000.0  # user + sys of the whole process (every thread)


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    fail("no VmRSS in /proc/self/status")
    return 0


def pct(sorted_xs: List[float], p: float) -> float:
    """Percentile of an ascending list: sorted[round((n - 1) * p / 100)], half away from zero
    (the rule of every driver, the Rust and Curator ones included)."""
    if not sorted_xs:
        return float("nan")
    return sorted_xs[int(math.floor((len(sorted_xs) - 1) * p / 100.0 + 0.5))]


def lat_stats(xs: List[float], prefix: str = "") -> Dict[str, float]:
    s = sorted(xs)
    return {
        f"{prefix}p50_us": round(pct(s, 50), 2),
        f"{prefix}p99_us": round(pct(s, 99), 2),
        f"{prefix}mean_us": round(sum(s) / len(s), 2) if s else float("nan"),
    }


def run_threads(n: int, target: Callable[[int], None], name: str) -> None:
    """Runs target(i) on n threads and joins them; a thread's exception fails the run."""
    errors: List[BaseException] = []

    def wrap(i: int) -> None:
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported, then the run fails
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(i,), name=f"{name}-{i}", daemon=True) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        fail(f"{name}: {type(errors[0]).__name__}: {errors[0]}")


# ---------------------------------------------------------------------------------------------
# The two implementations behind one small interface


class ZkrecipesImpl:
    name = "python"

    def __init__(self) -> None:
        import zkrecipes

        self.zk = zkrecipes
        self.version = f"zkrecipes {zkrecipes.__version__} (python)"

    def client(self, connect: str) -> Any:
        return self.zk.Client(connect, session_timeout=30.0, connection_timeout=15.0).start()

    def close(self, client: Any) -> None:
        client.close()

    def lock(self, client: Any, path: str) -> Any:
        return self.zk.InterProcessMutex(client, path)

    def acquire(self, lock: Any) -> None:
        if not lock.acquire(timeout=WAIT):
            fail(f"acquire of {lock.path} timed out after {WAIT}s")
        progress()

    def release(self, lock: Any) -> None:
        lock.release()
        progress()

    def cycle_calls(self, lock: Any) -> Tuple[Callable[[float], bool], Callable[[], Any]]:
        """``(acquire(timeout) -> acquired, release())``: the bare calls `uncontended` times."""
        return lock.acquire, lock.release

    def counter(self, client: Any, path: str) -> Any:
        return self.zk.DistributedAtomicLong(client, path)

    def increment(self, counter: Any) -> bool:
        counter.add_and_get(1, timeout=WAIT)  # raises on failure; never fails silently
        progress()
        return True

    def counter_value(self, counter: Any) -> int:
        v = counter.get()
        if not v.succeeded:
            fail("reading the counter failed")
        return int(v.post_value) if v.post_value else int(v.pre_value)

    def writes(self, client: Any) -> Optional[int]:
        r = client.request_counts()
        return int(r["set_data"]) + int(r["create"])

    def requests(self, client: Any) -> Optional[int]:
        return sum(int(v) for v in client.request_counts().values())


class KazooImpl:
    name = "kazoo"

    def __init__(self) -> None:
        try:
            import kazoo  # type: ignore[import-untyped]
            from kazoo.client import KazooClient  # type: ignore[import-untyped]
            from kazoo.recipe.counter import Counter  # type: ignore[import-untyped]
        except ImportError:
            fail("kazoo is not installed in this Python: run scripts/setup-bench "
                 "(pip install -r tests/bench/requirements.txt into .venv)")
        self.KazooClient = KazooClient
        self.Counter = Counter
        try:
            from importlib.metadata import version

            v = version("kazoo")
        except Exception:  # noqa: BLE001
            v = getattr(kazoo, "__version__", "?")
        self.version = f"kazoo {v}"

    def client(self, connect: str) -> Any:
        c = self.KazooClient(hosts=connect, timeout=30.0)
        c.start(timeout=15)
        return c

    def close(self, client: Any) -> None:
        client.stop()
        client.close()

    def lock(self, client: Any, path: str) -> Any:
        return client.Lock(path)

    def acquire(self, lock: Any) -> None:
        if not lock.acquire(timeout=WAIT):
            fail(f"acquire of {lock.path} timed out after {WAIT}s")
        progress()

    def release(self, lock: Any) -> None:
        lock.release()
        progress()

    def cycle_calls(self, lock: Any) -> Tuple[Callable[[float], bool], Callable[[], Any]]:
        """``(acquire(timeout) -> acquired, release())``: the bare calls `uncontended` times."""
        return (lambda timeout: lock.acquire(timeout=timeout)), lock.release

    def counter(self, client: Any, path: str) -> Any:
        return self.Counter(client, path)

    def increment(self, counter: Any) -> bool:
        counter += 1  # kazoo's Counter.__add__: a versioned compare-and-set retried on conflict
        progress()
        return True

    def counter_value(self, counter: Any) -> int:
        return int(counter.value)

    def writes(self, client: Any) -> Optional[int]:
        return None

    def requests(self, client: Any) -> Optional[int]:
        return None


# ---------------------------------------------------------------------------------------------
# Scenarios


def uncontended(impl: Any, a: argparse.Namespace) -> Dict[str, Any]:
    n, w = a.iterations or 2000, a.warmup if a.warmup is not None else 200
    if a.await_:
        return uncontended_awaited(impl, a, n, w)
    c = impl.client(a.connect)
    try:
        lock = impl.lock(c, a.path + "/lock")
        for _ in range(w):
            impl.acquire(lock)
            impl.release(lock)
        # The timed loop calls the implementation's own acquire and release, with integer clock
        # readings converted after it: what it adds per cycle is kept as small as the Rust and C
        # drivers' loops (the driver's Python had been about a tenth of a cycle's instructions).
        acquire, release = impl.cycle_calls(lock)
        clock = time.perf_counter_ns
        acq_ns: List[int] = []
        rel_ns: List[int] = []
        cpu0 = cpu_us()
        phase0 = time.monotonic()
        while True:  # rounds of n cycles until the phase has lasted --min-seconds
            for i in range(n):
                t0 = clock()
                if not acquire(WAIT):
                    fail(f"acquire of {lock.path} timed out after {WAIT}s")
                t1 = clock()
                release()
                t2 = clock()
                acq_ns.append(t1 - t0)
                rel_ns.append(t2 - t1)
                if not i & 63:
                    progress()
            progress()
            if n == 0 or time.monotonic() - phase0 >= a.min_seconds:
                break
        cpu = cpu_us() - cpu0
    finally:
        impl.close(c)
    acq = [t / 1000.0 for t in acq_ns]
    rel = [t / 1000.0 for t in rel_ns]
    cyc = [x + y for x, y in zip(acq, rel)]
    return cycles_result(acq, rel, cyc, cpu)


def cycles_result(acq: List[float], rel: List[float], cyc: List[float], cpu: float) -> Dict[str, Any]:
    """uncontended's figures from its timed cycles (µs) and the CPU they took (µs)."""
    out: Dict[str, Any] = {"n": len(cyc), **lat_stats(cyc)}
    out["acquire_p50_us"] = round(pct(sorted(acq), 50), 2)
    out["release_p50_us"] = round(pct(sorted(rel), 50), 2)
    out["cpu_us_per_op"] = round(cpu / max(1, len(cyc)), 2)
    return out


def uncontended_awaited(impl: "ZkrecipesImpl", a: argparse.Namespace, n: int, w: int) -> Dict[str, Any]:
    """uncontended through the asyncio API: one task awaits acquire_async() and release_async()."""
    import asyncio

    async def run() -> Dict[str, Any]:
        lock = impl.lock(c, a.path + "/lock")
        for _ in range(w):
            if not await lock.acquire_async(WAIT):
                fail(f"acquire_async of {lock.path} timed out after {WAIT}s")
            await lock.release_async()
        acq: List[float] = []
        rel: List[float] = []
        cyc: List[float] = []
        cpu0 = cpu_us()
        phase0 = time.monotonic()
        while True:  # rounds of n cycles until the phase has lasted --min-seconds
            for _ in range(n):
                t0 = now_us()
                if not await lock.acquire_async(WAIT):
                    fail(f"acquire_async of {lock.path} timed out after {WAIT}s")
                t1 = now_us()
                await lock.release_async()
                t2 = now_us()
                progress()
                acq.append(t1 - t0)
                rel.append(t2 - t1)
                cyc.append(t2 - t0)
            if n == 0 or time.monotonic() - phase0 >= a.min_seconds:
                break
        return cycles_result(acq, rel, cyc, cpu_us() - cpu0)

    c = impl.client(a.connect)
    try:
        return asyncio.run(run())
    finally:
        impl.close(c)


def mntr_totals(connect: str) -> Optional[List[int]]:
    """The servers' traffic counters from `mntr` (four-letter word), summed over the connect
    string's hosts: [packets received, bytes received, bytes sent (responses + watches)]."""
    import socket

    total = [0, 0, 0]
    try:
        for host in connect.split("/")[0].split(","):
            h, port = host.rsplit(":", 1)
            with socket.create_connection((h, int(port)), timeout=10) as s:
                s.sendall(b"mntr")
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            v = dict(line.split("\t", 1) for line in data.decode().splitlines() if "\t" in line)
            total[0] += int(float(v["zk_packets_received"]))
            total[1] += int(float(v["zk_bytes_received_count"]))
            total[2] += int(float(v["zk_response_bytes"])) + int(float(v.get("zk_watch_bytes", 0)))
    except (OSError, KeyError, ValueError):
        return None
    return total


def contended(impl: Any, a: argparse.Namespace) -> Dict[str, Any]:
    k, secs = a.clients or 8, a.seconds if a.seconds is not None else 10.0
    warm = 1.0
    clients = [impl.client(a.connect) for _ in range(k)]
    try:
        locks = [impl.lock(c, a.path + "/lock") for c in clients]
        waits: List[List[float]] = [[] for _ in range(k)]
        start = time.monotonic() + 0.05
        m0, m1 = start + warm, start + warm + secs

        def worker(i: int) -> None:
            lock, mine = locks[i], waits[i]
            while time.monotonic() < start:
                time.sleep(0.001)
            while True:
                t0 = now_us()
                impl.acquire(lock)
                t1 = now_us()
                done = time.monotonic()
                impl.release(lock)
                if m0 <= done < m1:
                    mine.append(t1 - t0)
                if done >= m1:
                    return

        box: Dict[str, Any] = {}

        def sampler() -> None:  # process CPU and server counters at the edges of the measured window
            time.sleep(max(0.0, m0 - time.monotonic()))
            box["cpu0"] = cpu_us()
            box["mntr0"] = mntr_totals(a.connect)
            time.sleep(max(0.0, m1 - time.monotonic()))
            box["cpu1"] = cpu_us()
            box["mntr1"] = mntr_totals(a.connect)

        s = threading.Thread(target=sampler, daemon=True)
        s.start()
        run_threads(k, worker, "contender")
        s.join(WAIT)
    finally:
        for c in clients:
            impl.close(c)
    all_waits = sorted(x for ws in waits for x in ws)
    n = len(all_waits)
    if n == 0:
        fail("no acquisition completed in the measured window")
    out = {"n": n, **lat_stats(all_waits), "ops_per_s": round(n / secs, 2),
           "wait_p99_us": round(pct(all_waits, 99), 2), "clients": k, "seconds": secs}
    if "cpu1" in box:
        out["cpu_us_per_op"] = round((box["cpu1"] - box["cpu0"]) / n, 2)
    m0_, m1_ = box.get("mntr0"), box.get("mntr1")
    if m0_ and m1_:
        out["win_packets"], out["win_bytes_in"], out["win_bytes_out"] = (y - x for x, y in zip(m0_, m1_))
    return out


def counter(impl: Any, a: argparse.Namespace, per_client: bool) -> Dict[str, Any]:
    workers = (a.clients or 10) if per_client else (a.threads or 10)
    each = a.iterations or 100
    w = a.warmup if a.warmup is not None else 20
    clients = [impl.client(a.connect) for _ in range(workers if per_client else 1)]
    path = a.path + "/counter"
    try:
        # kazoo's Counter object keeps the last value in the object: one per thread (an object
        # is not meant to be shared by threads). Ours is thread-safe, but one per worker is
        # the same shape.
        ctrs = [impl.counter(clients[i if per_client else 0], path) for i in range(workers)]
        for _ in range(w):  # warm-up, before the initial value is read
            impl.increment(ctrs[0])
        for c in ctrs[1:]:
            impl.counter_value(c)  # every counter object has touched the node once
        initial = impl.counter_value(ctrs[0])
        writes0 = [impl.writes(c) for c in clients]
        requests0 = [impl.requests(c) for c in clients]
        ok = [0] * workers
        failed = [0] * workers
        lat: List[List[float]] = [[] for _ in range(workers)]

        def worker(i: int) -> None:
            # Rounds of `each` increments until the phase has lasted --min-seconds.
            while True:
                one_round(i)
                if time.monotonic() - phase0 >= min_s:
                    return

        def one_round(i: int) -> None:
            for _ in range(each):
                t0 = now_us()
                try:
                    good = impl.increment(ctrs[i])
                except Exception as e:  # noqa: BLE001 - counted, reported
                    log(f"increment failed: {type(e).__name__}: {e}")
                    good = False
                lat[i].append(now_us() - t0)
                if good:
                    ok[i] += 1
                else:
                    failed[i] += 1

        min_s = a.min_seconds
        cpu0 = cpu_us()
        phase0 = time.monotonic()
        run_threads(workers, worker, "incrementer")
        elapsed = time.monotonic() - phase0
        cpu = cpu_us() - cpu0
        writes1 = [impl.writes(c) for c in clients]
        requests1 = [impl.requests(c) for c in clients]
        # On an ensemble this session's server may lag the others' last writes (reads are
        # not linearizable): re-read for up to 5 s before a shortfall counts as lost.
        reader = impl.counter(clients[0], path)
        final = impl.counter_value(reader)
        final_reads = 1
        while final - initial < sum(ok) and final_reads < 10:
            time.sleep(0.5)
            final = impl.counter_value(reader)
            final_reads += 1
        extra = asyncio_counter(impl, clients[0], path, workers, each, final) \
            if a.asyncio and isinstance(impl, ZkrecipesImpl) and not per_client else {}
    finally:
        for c in clients:
            impl.close(c)
    succ = sum(ok)
    out = {"n": succ, **lat_stats([x for xs in lat for x in xs]),
           "ops_per_s": round(succ / elapsed, 2), "final": final, "expected": initial + succ,
           "lost": succ - (final - initial), "failed": sum(failed),
           "cpu_us_per_op": round(cpu / max(1, succ), 2), "final_reads": final_reads}
    if per_client:
        out["clients"] = workers
    else:
        out["threads"] = workers
    if None not in writes0 and succ:
        out["writes_per_op"] = round((sum(writes1) - sum(writes0)) / succ, 3)  # creates + setData
        out["client_requests_per_op"] = round((sum(requests1) - sum(requests0)) / succ, 3)
    out.update(extra)
    return out


def asyncio_counter(impl: "ZkrecipesImpl", client: Any, path: str, tasks: int, each: int,
                    initial: int) -> Dict[str, Any]:
    """counter_threads again with T asyncio tasks on the *_async API (extra keys asyncio_*)."""
    import asyncio

    async def run() -> Dict[str, Any]:
        ctr = impl.counter(client, path)
        ok = 0

        async def task() -> None:
            nonlocal ok
            for _ in range(each):
                await ctr.add_and_get_async(1, timeout=WAIT)
                progress()
                ok += 1

        cpu0 = cpu_us()
        t0 = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(task() for _ in range(tasks))), WAIT * 2)
        elapsed = time.monotonic() - t0
        cpu = cpu_us() - cpu0
        final = (await ctr.get_async()).pre_value
        return {"asyncio_ops_per_s": round(ok / elapsed, 2), "asyncio_n": ok,
                "asyncio_lost": ok - (final - initial), "asyncio_cpu_us_per_op": round(cpu / max(1, ok), 2)}

    return asyncio.run(run())


def failover_zkrecipes(impl: ZkrecipesImpl, a: argparse.Namespace) -> Dict[str, Any]:
    zk = impl.zk
    k, n = a.clients or 3, a.iterations or 200
    w = a.warmup if a.warmup is not None else 10
    if k < 2:
        fail("failover needs --clients >= 2")
    path = a.path + "/latch"
    cond = threading.Condition()
    state: Dict[str, Any] = {"leader": None, "at": 0.0, "gen": 0}
    clients = [impl.client(a.connect) for _ in range(k)]
    latches: List[Any] = [None] * k
    try:
        def join(i: int) -> None:
            gen = state["gen"] = state["gen"] + 1

            def is_leader() -> None:
                t = now_us()
                with cond:
                    state["leader"], state["at"], state["lgen"] = i, t, gen
                    cond.notify_all()

            latch = zk.LeaderLatch(clients[i], path, f"m{i}")
            latch.add_listener(is_leader=is_leader)
            latch.start()
            latches[i] = latch

        for i in range(k):
            join(i)
        times: List[float] = []
        for r in range(w + n):
            with cond:
                if not cond.wait_for(lambda: state["leader"] is not None, WAIT):
                    fail("nobody leads")
                old = state["leader"]
                state["leader"] = None
            if not latches[old].has_leadership():
                fail(f"member {old} was reported leader but has_leadership() is false")
            t0 = now_us()
            latches[old].close()
            with cond:
                if not cond.wait_for(lambda: state["leader"] is not None, WAIT):
                    fail(f"no new leader {WAIT}s after member {old} closed its latch")
                if state["leader"] == old:
                    fail("the closed member leads again")
                dt = state["at"] - t0
            if r >= w:
                times.append(dt)
            progress()
            join(old)  # a fresh latch for the closed member (at the back of the queue)
    finally:
        for latch in latches:
            if latch is not None:
                latch.close()
        for c in clients:
            impl.close(c)
    return {"n": n, **lat_stats(times), "clients": k}


def failover_kazoo(impl: KazooImpl, a: argparse.Namespace) -> Dict[str, Any]:
    k, n = a.clients or 3, a.iterations or 200
    w = a.warmup if a.warmup is not None else 10
    if k < 2:
        fail("failover needs --clients >= 2")
    path = a.path + "/election"
    cond = threading.Condition()
    st: Dict[str, Any] = {"leader": None, "entered": 0.0, "returned": 0.0, "stop": False, "quit": None}
    clients = [impl.client(a.connect) for _ in range(k)]
    elections = [c.Election(path, f"m{i}") for i, c in enumerate(clients)]
    errors: List[BaseException] = []

    def member(i: int) -> None:
        def lead() -> None:
            t = now_us()
            with cond:
                st["leader"], st["entered"] = i, t
                cond.notify_all()
                # lead until told to quit (or the run ends)
                if not cond.wait_for(lambda: st["quit"] == i or st["stop"], WAIT * 2):
                    errors.append(RuntimeError(f"member {i} was never told to quit"))
                st["returned"] = now_us()
                st["quit"] = None

        try:
            while not st["stop"]:
                elections[i].run(lead)  # returns after our func returned and the lock is released
        except BaseException as e:  # noqa: BLE001
            if not st["stop"]:
                errors.append(e)

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(k)]
    times: List[float] = []
    try:
        for t in threads:
            t.start()
        for r in range(w + n):
            with cond:
                if not cond.wait_for(lambda: st["leader"] is not None or errors, WAIT):
                    fail("nobody leads")
                old = st["leader"]
                st["leader"] = None
            # the member that quit last round is queued again before this leader steps down
            deadline = time.monotonic() + WAIT
            while len(elections[old].contenders()) < k:
                if time.monotonic() > deadline or errors:
                    fail(f"not every member queued: {elections[old].contenders()} {errors}")
                time.sleep(0.0005)
            with cond:
                st["quit"] = old
                cond.notify_all()
                if not cond.wait_for(lambda: st["leader"] is not None or errors, WAIT):
                    fail(f"no new leader {WAIT}s after member {old} returned")
                if errors:
                    fail(f"{type(errors[0]).__name__}: {errors[0]}")
                if st["leader"] == old:
                    fail("the quitting member leads again")
                dt = st["entered"] - st["returned"]
            if r >= w:
                times.append(dt)
            progress()
    finally:
        with cond:
            st["stop"] = True
            cond.notify_all()
        for e in elections:
            e.cancel()
        for t in threads:
            t.join(10)
        for c in clients:
            impl.close(c)
    if errors:
        fail(f"{type(errors[0]).__name__}: {errors[0]}")
    return {"n": n, **lat_stats(times), "clients": k}


def memory(impl: Any, a: argparse.Namespace) -> Dict[str, Any]:
    count = a.locks or 1000
    w = a.warmup if a.warmup is not None else 50
    c = impl.client(a.connect)
    try:
        warm = impl.lock(c, a.path + "/warmup")
        for _ in range(w):
            impl.acquire(warm)
            impl.release(warm)
        import gc

        gc.collect()
        before = rss_kb()
        locks = []
        lat = []
        cpu0 = cpu_us()
        for i in range(count):
            lock = impl.lock(c, f"{a.path}/m{i}")
            t0 = now_us()
            impl.acquire(lock)
            lat.append(now_us() - t0)
            locks.append(lock)
        cpu = cpu_us() - cpu0
        after = rss_kb()
        for lock in locks:
            impl.release(lock)
    finally:
        impl.close(c)
    return {"n": count, **lat_stats(lat), "rss_kb": after, "rss_delta_kb": after - before,
            "cpu_us_per_op": round(cpu / count, 2), "locks": count}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impl", required=True, choices=["zkrecipes", "python", "kazoo"])
    ap.add_argument("--scenario", required=True,
                    choices=["uncontended", "contended", "counter_threads", "counter_clients", "failover", "memory"])
    ap.add_argument("--connect", required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--iterations", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--clients", type=int)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--locks", type=int)
    ap.add_argument("--min-seconds", type=float, default=2.0,
                    help="counter scenarios: repeat each worker's N increments until the timed "
                         "phase has lasted this long (default 2); rates are over the whole phase")
    ap.add_argument("--await", dest="await_", action="store_true",
                    help="uncontended (zkrecipes): through the asyncio API (acquire_async/release_async)")
    ap.add_argument("--asyncio", action="store_true",
                    help="counter_threads (zkrecipes): also run T asyncio tasks on add_and_get_async "
                         "after the threads (asyncio_* keys; off by default, since its requests "
                         "would count in the orchestrator's server-side requests per operation)")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="watchdog: fail the run after this many seconds (default 600), or when no "
                         "operation completes for 75 s")
    a = ap.parse_args()
    if not a.path.startswith("/") or a.path.endswith("/"):
        fail(f"--path must be absolute without a trailing slash: {a.path!r}")

    progress()
    threading.Thread(target=watchdog, args=(a.timeout, WAIT + 15), daemon=True).start()

    impl: Any = KazooImpl() if a.impl == "kazoo" else ZkrecipesImpl()
    if a.scenario == "uncontended":
        out = uncontended(impl, a)
    elif a.scenario == "contended":
        out = contended(impl, a)
    elif a.scenario == "counter_threads":
        out = counter(impl, a, per_client=False)
    elif a.scenario == "counter_clients":
        out = counter(impl, a, per_client=True)
    elif a.scenario == "failover":
        out = failover_kazoo(impl, a) if a.impl == "kazoo" else failover_zkrecipes(impl, a)
    else:
        out = memory(impl, a)
    if out.get("lost", 0) != 0:
        log(f"LOST increments: {out['lost']}")
    record = {"impl": "kazoo" if a.impl == "kazoo" else "python-async" if a.await_ else "python", "scenario": a.scenario, **out,
              "version": impl.version}
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()
    if out.get("lost", 0) != 0:
        return 1
    return 0


if __name__ == "__main__":
    try:
        rc = main()
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - one message, exit 1
        import traceback

        traceback.print_exc()
        fail(f"{type(e).__name__}: {e}")
    sys.exit(rc)
