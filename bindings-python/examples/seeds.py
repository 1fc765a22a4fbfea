"""The seeds' scenarios through the Python face, for ``scripts/demo``:

1. 100 threads contend for one InterProcessMutex (with an overlap check),
2. the same with 100 asyncio tasks,
3. 10 clients take turns in a LeaderLatch,
4. 10 threads x 100 ``add_and_get(1)`` on a DistributedAtomicLong = 1000.

    python seeds.py HOST:PORT

Prints what happened; exits 0 only if every scenario came out right.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
import time
import uuid
from typing import Callable, List

import zkrecipes
from zkrecipes import Client, DistributedAtomicLong, InterProcessMutex, LeaderLatch


class Overlap:
    """Counts the workers inside a critical section and remembers the most at once."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self.inside = 0
        self.most = 0
        self.entries = 0

    def enter(self) -> None:
        with self._guard:
            self.inside += 1
            self.entries += 1
            self.most = max(self.most, self.inside)

    def leave(self) -> None:
        with self._guard:
            self.inside -= 1


def threads_on_one_mutex(client: Client, base: str, n: int = 100) -> bool:
    lock = InterProcessMutex(client, base + "/mutex-threads")
    seen = Overlap()
    tokens: List[int] = []
    errors: List[BaseException] = []

    def worker() -> None:
        try:
            with lock:
                seen.enter()
                tokens.append(lock.fencing_token)
                time.sleep(0.001)  # hold it a moment, so an overlap would show
                seen.leave()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    started = time.monotonic()
    workers = [threading.Thread(target=worker) for _ in range(n)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    elapsed = time.monotonic() - started
    ok = not errors and seen.entries == n and seen.most == 1 and tokens == sorted(tokens) and len(set(tokens)) == n
    print(
        f"  {n} threads, one InterProcessMutex: {seen.entries} entered, at most {seen.most} inside at once, "
        f"fencing tokens strictly increasing: {tokens == sorted(tokens) and len(set(tokens)) == n}, "
        f"{elapsed:.2f} s{'' if not errors else f', errors: {errors[:3]}'} -> {'OK' if ok else 'FAILED'}"
    )
    return ok


def tasks_on_one_mutex(client: Client, base: str, n: int = 100) -> bool:
    lock = InterProcessMutex(client, base + "/mutex-tasks")
    seen = Overlap()

    async def worker() -> None:
        async with lock:  # each asyncio Task is its own owner
            seen.enter()
            await asyncio.sleep(0.001)
            seen.leave()

    async def run() -> float:
        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(n)))
        return time.monotonic() - started

    elapsed = asyncio.run(run())
    ok = seen.entries == n and seen.most == 1 and lock.participant_nodes() == []
    print(
        f"  {n} asyncio tasks, one InterProcessMutex: {seen.entries} entered, at most {seen.most} inside at once, "
        f"{elapsed:.2f} s -> {'OK' if ok else 'FAILED'}"
    )
    return ok


def latch_clients_take_turns(hosts: str, base: str, n: int = 10) -> bool:
    path = base + "/latch"
    clients = [Client(hosts, session_timeout=10.0).start() for _ in range(n)]
    became_leader: "queue.Queue[str]" = queue.Queue()
    latches: List[LeaderLatch] = []
    try:
        for i, c in enumerate(clients):
            latch = LeaderLatch(c, path, f"client-{i}")

            def on_leader(name: str = f"client-{i}") -> None:
                became_leader.put(name)

            latch.add_listener(is_leader=on_leader)
            latch.start()
            latches.append(latch)
        order: List[str] = []
        double = False
        by_id = {latch.id: latch for latch in latches}
        for _ in range(n):
            leader = became_leader.get(timeout=30)
            order.append(leader)
            if sum(1 for latch in latches if latch.has_leadership()) > 1:
                double = True
            by_id[leader].close()  # hand over to the next in line
        ok = sorted(order) == sorted(by_id) and not double
        print(f"  {n} clients in one LeaderLatch took turns: {' -> '.join(order)}; two leaders at once: {double}"
              f" -> {'OK' if ok else 'FAILED'}")
        return ok
    except queue.Empty:
        print("  LeaderLatch: no new leader within 30 s -> FAILED")
        return False
    finally:
        for latch in latches:
            latch.close()
        for c in clients:
            c.close()


def counter_increments(client: Client, base: str, threads: int = 10, each: int = 100) -> bool:
    counter = DistributedAtomicLong(client, base + "/counter")
    results: List[int] = []
    errors: List[BaseException] = []
    guard = threading.Lock()

    def worker() -> None:
        try:
            mine = [counter.add_and_get(1) for _ in range(each)]
            with guard:
                results.extend(mine)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    started = time.monotonic()
    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    elapsed = time.monotonic() - started
    final = counter.get().post_value
    expected = threads * each
    ok = not errors and final == expected and sorted(results) == list(range(1, expected + 1))
    print(
        f"  {threads} threads x {each} add_and_get(1) on one DistributedAtomicLong: final value {final} "
        f"(expected {expected}), every value seen exactly once: {sorted(results) == list(range(1, expected + 1))}, "
        f"{elapsed:.2f} s ({expected / elapsed:.0f}/s){'' if not errors else f', errors: {errors[:3]}'}"
        f" -> {'OK' if ok else 'FAILED'}"
    )
    return ok


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        print("usage: seeds.py HOST:PORT", file=sys.stderr)
        return 2
    hosts = argv[1]
    base = f"/zkrecipes-demo/python-{uuid.uuid4().hex[:8]}"
    print(f"Python face (zkrecipes {zkrecipes.__version__}), paths under {base}")
    results: List[bool] = []
    with Client(hosts, session_timeout=10.0) as client:
        scenarios: List[Callable[[], bool]] = [
            lambda: threads_on_one_mutex(client, base),
            lambda: tasks_on_one_mutex(client, base),
            lambda: latch_clients_take_turns(hosts, base),
            lambda: counter_increments(client, base),
        ]
        for scenario in scenarios:
            try:
                results.append(scenario())
            except zkrecipes.ZkRecipesError as e:
                print(f"  FAILED: {type(e).__name__}: {e}")
                results.append(False)
        client.delete(base, recursive=True)
    passed = sum(results)
    print(f"  python: {passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
