"""SharedValue, DistributedAtomicValue, CachedAtomicLong / CachedAtomicInteger and the
InterProcessSemaphoreV2 whose max leases come from a SharedCount (issue 32)."""

from __future__ import annotations

import asyncio
import struct
import threading
from typing import Callable, List, Optional, Set

import pytest

import zkrecipes
from zkrecipes import (
    AtomicValue,
    CachedAtomicInteger,
    CachedAtomicLong,
    ConnectionState,
    DistributedAtomicInteger,
    DistributedAtomicLong,
    DistributedAtomicValue,
    InterProcessSemaphoreV2,
    PromotedToLock,
    RetryNTimes,
    SharedCount,
    SharedValue,
    VersionedValue,
)

from conftest import wait_until


# --------------------------------------------------------------------------------------------
# SharedValue
# --------------------------------------------------------------------------------------------


def test_shared_value_versioned_sets_listeners_and_bytes(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    a, b = make_client(), make_client()
    va = SharedValue(a, path, b"seed")
    assert va.get_value() == b"seed" and va.get_versioned_value().version == -1
    with pytest.raises(zkrecipes.InvalidArgumentError):
        va.set_value(b"before start")
    va.start()
    assert a.get_data(path)[0] == b"seed"
    heard: List[bytes] = []
    with SharedValue(b, path, b"other") as vb:
        vb.add_listener(heard.append)
        assert vb.get_value() == b"seed"
        seen = va.get_versioned_value()
        assert isinstance(seen, VersionedValue) and seen == VersionedValue(0, b"seed")
        assert va.try_set_value(seen, b"one") is True
        wait_until(lambda: b"one" in heard, what="b hears one")
        assert not va.try_set_value(seen, b"stale")
        assert a.get_data(path)[0] == b"one"
        vb.set_value(b"\x00\xff")
        wait_until(lambda: va.get_value() == b"\x00\xff", what="a sees the bytes")
        # A SharedCount's VersionedValue is no SharedValue's.
        with pytest.raises(zkrecipes.InvalidArgumentError):
            va.try_set_value(VersionedValue(2, 5), b"x")  # type: ignore[arg-type]
    with pytest.raises(zkrecipes.ClosedError):
        vb.set_value(b"after close")
    va.close()
    assert repr(VersionedValue(1, b"x")) == "VersionedValue(version=1, value=b'x')"


def test_shared_value_increments_lose_nothing(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    per, workers = 15, 4
    conflicts: List[int] = []
    guard = threading.Lock()

    def work() -> None:
        with SharedValue(make_client(), path, b"0") as value:
            done = failed = 0
            while done < per:
                seen = value.get_versioned_value()
                if value.try_set_value(seen, str(int(seen.value) + 1).encode()):
                    done += 1
                else:
                    failed += 1
            with guard:
                conflicts.append(failed)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(conflicts) == workers
    assert int(make_client().get_data(path)[0]) == per * workers


def test_shared_value_hears_states_and_rereads_after_expiry(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    a, b = make_client(), make_client()
    states: List[ConnectionState] = []
    values: List[bytes] = []
    with SharedValue(a, path, b"a") as va, SharedValue(b, path) as vb:
        va.add_listener(values.append, states.append)
        a._expire_session_for_testing()
        wait_until(
            lambda: ConnectionState.LOST in states and states[-1] == ConnectionState.RECONNECTED,
            timeout=30,
            what="LOST then RECONNECTED",
        )
        vb.set_value(b"after expiry")
        wait_until(lambda: b"after expiry" in values, timeout=20, what="a hears the new value")


def test_shared_value_async(client: zkrecipes.Client, path: str) -> None:
    async def main() -> None:
        value = SharedValue(client, path, b"x")
        await value.start_async()
        seen = value.get_versioned_value()
        assert await value.try_set_value_async(seen, b"y")
        await value.set_value_async(b"z")
        assert value.get_value() == b"z"
        await value.close_async()

    asyncio.run(main())


# --------------------------------------------------------------------------------------------
# DistributedAtomicValue
# --------------------------------------------------------------------------------------------


def test_atomic_value_curator_semantics(client: zkrecipes.Client, path: str) -> None:
    v = DistributedAtomicValue(client, path)
    got = v.get()
    assert isinstance(got, AtomicValue) and got.succeeded and got.pre_value is None and got.post_value is None
    missing = v.compare_and_set(b"", b"x")
    assert not missing and missing.pre_value is None
    assert v.initialize(b"start") is True
    assert v.initialize(b"again") is False
    r = v.compare_and_set(b"star", b"no")
    assert not r and r.pre_value == b"start" and r.post_value is None
    r = v.compare_and_set(b"start", b"next")
    assert r and (r.pre_value, r.post_value) == (b"start", b"next")
    r = v.try_set(b"tried")
    assert r.succeeded and r.stats.optimistic_tries == 1
    assert client.get_data(path)[0] == b"tried"
    v.force_set(b"forced")
    assert v.get().post_value == b"forced"
    # Curator's 8-byte long is bytes to a DistributedAtomicValue.
    counter = DistributedAtomicLong(client, path + "-long")
    counter.force_set(41)
    as_bytes = DistributedAtomicValue(client, path + "-long")
    assert as_bytes.compare_and_set(struct.pack(">q", 41), struct.pack(">q", 42)).succeeded
    assert counter.get().post_value == 42
    assert "b'forced'" in repr(v.get())


def test_atomic_value_bad_input(client: zkrecipes.Client, path: str) -> None:
    with pytest.raises(zkrecipes.InvalidArgumentError):
        DistributedAtomicValue(client, "no-slash")
    with pytest.raises(zkrecipes.InvalidArgumentError):
        DistributedAtomicValue(client, path, promoted_to_lock=PromotedToLock(path))
    with pytest.raises(TypeError):
        DistributedAtomicValue(client, path, retry=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        DistributedAtomicValue(client, path).try_set("text")  # type: ignore[arg-type]
    with pytest.raises(zkrecipes.InvalidArgumentError):
        DistributedAtomicValue(client, path).force_set(b"x" * (2 << 20))


def test_atomic_value_compare_and_set_increments_are_exact(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    per, workers = 15, 4
    DistributedAtomicValue(make_client(), path).initialize(b"0")

    def work() -> None:
        v = DistributedAtomicValue(make_client(), path, retry=RetryNTimes(0, 0))
        done = 0
        while done < per:
            now = v.get().post_value
            assert now is not None
            if v.compare_and_set(now, str(int(now) + 1).encode()):
                done += 1

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert int(make_client().get_data(path)[0]) == per * workers


def test_atomic_value_promoted_and_async(client: zkrecipes.Client, path: str) -> None:
    promoted = PromotedToLock(path + "-lock", max_lock_time=10, retry=RetryNTimes(3, 0.01))
    v = DistributedAtomicValue(client, path, retry=RetryNTimes(0, 0), promoted_to_lock=promoted)

    async def main() -> Optional[bytes]:
        r = await v.try_set_async(b"a")
        assert r.succeeded
        assert await v.initialize_async(b"b") is False
        assert (await v.compare_and_set_async(b"a", b"c")).succeeded
        await v.force_set_async(b"d")
        return (await v.get_async()).post_value

    assert asyncio.run(main()) == b"d"


# --------------------------------------------------------------------------------------------
# CachedAtomicLong / CachedAtomicInteger
# --------------------------------------------------------------------------------------------


def test_cached_ids_are_never_handed_out_twice(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    ids: List[int] = []
    guard = threading.Lock()
    cached = [CachedAtomicLong(DistributedAtomicLong(make_client(), path), 5 + i) for i in range(3)]

    def work(c: CachedAtomicLong) -> None:
        mine: List[int] = []
        while len(mine) < 40:
            v = c.next()
            if v.succeeded:
                assert v.post_value == v.pre_value + 1
                mine.append(v.post_value)
        with guard:
            ids.extend(mine)

    threads = [threading.Thread(target=work, args=(c,)) for c in cached for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == 240 and len(set(ids)) == 240
    assert cached[0].cache_factor == 5 and cached[0].counter.path == path


def test_cached_integer_ranges_and_bad_input(client: zkrecipes.Client, path: str) -> None:
    counter = DistributedAtomicInteger(client, path)
    cached = CachedAtomicInteger(counter, 3)
    assert [cached.next().post_value for _ in range(4)] == [1, 2, 3, 4]
    assert counter.get().post_value == 6
    assert asyncio.run(cached.next_async()).post_value == 5
    with pytest.raises(zkrecipes.InvalidArgumentError):
        CachedAtomicLong(DistributedAtomicLong(client, path + "-l"), 0)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        CachedAtomicInteger(counter, 1 << 40)
    with pytest.raises(TypeError):
        CachedAtomicLong(counter, 3)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# InterProcessSemaphoreV2(count=SharedCount)
# --------------------------------------------------------------------------------------------


def test_semaphore_limit_follows_a_shared_count(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    a, b, c = make_client(), make_client(), make_client()
    counts = [SharedCount(x, path + "-max", 1) for x in (a, b, c)]
    for n in counts:
        n.start()
    sems = [InterProcessSemaphoreV2(x, path, count=n) for x, n in zip((a, b, c), counts)]
    assert sems[0].max_leases == 1 and sems[0].count is counts[0]
    first = sems[0].acquire(timeout=20)
    assert first is not None
    assert sems[1].acquire(timeout=0.3) is None
    got: List[List[zkrecipes.Lease]] = []
    waiter = threading.Thread(target=lambda: got.append(sems[1].acquire(timeout=30) or []))
    waiter.start()
    wait_until(lambda: len(sems[0].participant_nodes()) == 2, what="the second waits")
    counts[2].set_count(2)
    waiter.join(30)
    assert not waiter.is_alive() and len(got) == 1 and len(got[0]) == 1, "admitted when the count was raised"
    counts[2].set_count(1)
    wait_until(lambda: all(s.max_leases == 1 for s in sems), what="every semaphore sees 1")
    sems[0].return_all(first)
    # Still one lease held with a limit of 1: nobody else gets in until it is returned.
    assert sems[2].acquire(timeout=0.5) is None
    sems[1].return_all(got[0])
    third = sems[2].acquire(timeout=20)
    assert third is not None
    sems[2].return_all(third)
    for n in counts:
        n.close()


def test_semaphore_takes_a_count_or_a_number(client: zkrecipes.Client, path: str) -> None:
    count = SharedCount(client, path + "-max", 2)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        InterProcessSemaphoreV2(client, path, 2, count=count)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        InterProcessSemaphoreV2(client, path)
    with pytest.raises(TypeError):
        InterProcessSemaphoreV2(client, path, count=3)  # type: ignore[arg-type]
    # Before the count is started, its seed counts; more than it waits rather than failing.
    sem = InterProcessSemaphoreV2(client, path, count=count)
    assert sem.max_leases == 2
    assert sem.acquire(3, timeout=0.3) is None
    fixed = InterProcessSemaphoreV2(client, path + "-fixed", 2)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        fixed.acquire(3, timeout=0.3)
    held: Set[str] = set()
    leases = sem.acquire(2, timeout=20)
    assert leases is not None
    held.update(l.path for l in leases)
    assert len(held) == 2
    sem.return_all(leases)
