"""The asyncio loop's thread drives the core's runtime itself (bindings-python/src/turns.rs): an
awaited call runs its first steps in a turn on the loop's thread, and the loop's reader on the
runtime's input runs the rest; a call that ends in such a turn resolves its future there, with
no hand-off to the background driver. These tests show that the futures do resolve after the
loop's own turns, that ``ZKR_PYTHON_LOOP_TURNS=0`` gives the same results through the
background driver, and that loops on several threads, a new loop on the same thread and
blocking callers on other threads share the runtime safely."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Callable, Dict, List, Tuple

import pytest

import zkrecipes
from zkrecipes import _native

from conftest import ZooKeeper, run_python

# 200 acquire + release pairs and 200 increments on one client, each awaited: 601 futures with
# the final get. Prints the results and how this thread's futures were resolved.
FIXTURE = r"""
import asyncio, json, sys
import zkrecipes
from zkrecipes import _native

async def main(hosts, path):
    with zkrecipes.Client(hosts, session_timeout=20.0) as c:
        await asyncio.sleep(0)
        before = _native._loop_turn_counts()
        m = zkrecipes.InterProcessMutex(c, path + "/lock")
        counter = zkrecipes.DistributedAtomicLong(c, path + "/counter")
        held = 0
        for _ in range(200):
            assert await m.acquire_async(10)
            held += m.is_acquired_in_this_process()
            await m.release_async()
        for _ in range(200):
            await counter.add_and_get_async(1)
        got = await counter.get_async()
        assert got.succeeded
        value = got.post_value
        on_turn, queued = _native._loop_turn_counts()
        return {"held": held, "value": value, "on_turn": on_turn - before[0], "queued": queued - before[1]}

print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
"""


def run_fixture(zk: ZooKeeper, path: str, env: Dict[str, str]) -> Dict[str, Any]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        out = run_python(FIXTURE, zk.connect, path)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert out.returncode == 0, out.stderr
    import json

    result: Dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_futures_resolve_after_the_loops_own_turns_and_without_turns_the_same(zk: ZooKeeper, path: str) -> None:
    for var in ("ZKR_PYTHON_LOOP_TURNS", "ZKR_RUNTIME_THREADS"):
        assert var not in os.environ, f"{var} is set for the whole test run"
    turns = run_fixture(zk, path + "/turns", {})
    background = run_fixture(zk, path + "/background", {"ZKR_PYTHON_LOOP_TURNS": "0"})
    for r in (turns, background):
        assert r["held"] == 200 and r["value"] == 200, r
        assert r["on_turn"] + r["queued"] == 601, r
    # Without turns every future is resolved from the queue (call_soon_threadsafe).
    assert background["on_turn"] == 0, background
    # With them, from the loop's own turns, unless the background driver took the runtime back
    # meanwhile (after 5 ms without a turn): on a loaded machine some are.
    assert turns["on_turn"] > 300, f"only {turns['on_turn']} of 601 resolved after the loop's own turns"


def test_loops_on_two_threads_and_a_blocking_caller_share_one_lock(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    """Two threads each run an asyncio loop (their turns race for the runtime: the one that
    loses stops watching, and its results reach it through its queue) while a third thread makes
    blocking calls, all on one lock path with a read-modify-write only the lock makes safe."""
    rounds = 40
    clients = [make_client() for _ in range(3)]
    clients[0].create(path + "/plain", b"0", create_parents=True)
    inside = threading.Lock()
    overlaps: List[str] = []
    errors: List[BaseException] = []

    def section(who: str) -> None:
        if not inside.acquire(blocking=False):
            overlaps.append(who)
            return
        inside.release()

    async def async_worker(c: zkrecipes.Client, who: str) -> Tuple[int, int]:
        m = zkrecipes.InterProcessMutex(c, path + "/lock")
        before = _native._loop_turn_counts()
        for _ in range(rounds):
            async with m:
                section(who)
                data, stat = await c.get_data_async(path + "/plain")
                await c.set_data_async(path + "/plain", str(int(data) + 1).encode(), version=stat.version)
        after = _native._loop_turn_counts()
        return after[0] - before[0], after[1] - before[1]

    results: Dict[str, Tuple[int, int]] = {}

    def run_loop(c: zkrecipes.Client, who: str) -> None:
        try:
            results[who] = asyncio.run(async_worker(c, who))
        except BaseException as e:  # reported below
            errors.append(e)

    def run_blocking(c: zkrecipes.Client) -> None:
        try:
            m = zkrecipes.InterProcessMutex(c, path + "/lock")
            for _ in range(rounds):
                with m:
                    section("blocking")
                    data, stat = c.get_data(path + "/plain")
                    c.set_data(path + "/plain", str(int(data) + 1).encode(), version=stat.version)
        except BaseException as e:
            errors.append(e)

    threads = [
        threading.Thread(target=run_loop, args=(clients[0], "a")),
        threading.Thread(target=run_loop, args=(clients[1], "b")),
        threading.Thread(target=run_blocking, args=(clients[2],)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    assert not errors, errors
    assert not overlaps, overlaps
    assert clients[0].get_data(path + "/plain")[0] == str(3 * rounds).encode()
    # Every awaited call of each loop resolved exactly once, one way or the other.
    for who in ("a", "b"):
        on_turn, queued = results[who]
        assert on_turn + queued == 4 * rounds, (who, results[who])


def test_a_new_loop_on_the_same_thread_takes_the_turns_over(client: zkrecipes.Client, path: str) -> None:
    """asyncio.run twice on one thread: the second loop registers its own reader (the first
    loop is closed) and its futures resolve after its turns; a loop that is left open and then
    replaced stops watching, and still gets its results."""
    counter = zkrecipes.DistributedAtomicLong(client, path + "/counter")

    async def add(n: int) -> Tuple[int, int]:
        before = _native._loop_turn_counts()
        for _ in range(n):
            await counter.add_and_get_async(1)
        after = _native._loop_turn_counts()
        return after[0] - before[0], after[1] - before[1]

    first = asyncio.run(add(50))
    second = asyncio.run(add(50))
    for r in (first, second):
        assert sum(r) == 50, r
        assert r[0] > 0, f"no future resolved after the loop's own turns: {r}"
    # Two loops alive on one thread, used in turn: each takes the port back from the other.
    one, two = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        for _ in range(5):
            assert sum(one.run_until_complete(add(3))) == 3
            assert sum(two.run_until_complete(add(3))) == 3
    finally:
        one.close()
        two.close()
    assert counter.get().post_value == 130


def test_a_cancelled_acquire_in_a_turn_leaves_no_node(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    """A waiting acquire_async cancelled while the loop drives the runtime: its node is deleted
    and the lock stays usable."""
    holder_client, waiter_client = make_client(), make_client()
    holder = zkrecipes.InterProcessMutex(holder_client, path)

    async def main() -> None:
        assert await holder.acquire_async(10)
        m = zkrecipes.InterProcessMutex(waiter_client, path)
        task = asyncio.ensure_future(m.acquire_async())
        # The waiter's node is there once its acquire is queued behind the holder's.
        for _ in range(1000):
            if len(await waiter_client.get_children_async(path)) == 2:
                break
            await asyncio.sleep(0.01)
        assert len(await waiter_client.get_children_async(path)) == 2
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        for _ in range(1000):
            if len(await waiter_client.get_children_async(path)) == 1:
                break
            await asyncio.sleep(0.01)
        assert len(await waiter_client.get_children_async(path)) == 1
        await holder.release_async()
        assert await m.acquire_async(10)
        assert len(await waiter_client.get_children_async(path)) == 1
        await m.release_async()

    asyncio.run(main())



def test_a_panic_in_an_awaited_core_future_is_an_internal_error() -> None:
    """A panic while the core's future runs ends the awaiting coroutine with InternalError, as
    the blocking path's does; before, the asyncio future stayed pending for good."""
    from zkrecipes._call import run

    async def main() -> None:
        with pytest.raises(zkrecipes.InternalError, match="panic"):
            await asyncio.wait_for(run(_native._panicking_call_for_testing()), 10)  # type: ignore[attr-defined]

    asyncio.run(main())
    with pytest.raises(zkrecipes.InternalError, match="panic"):
        _native._panicking_call_for_testing().wait()  # type: ignore[attr-defined]
