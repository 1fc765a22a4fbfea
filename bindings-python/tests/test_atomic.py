"""DistributedAtomicLong / DistributedAtomicInteger and SharedCount."""

from __future__ import annotations

import asyncio
import struct
import threading
from typing import Callable, List

import pytest

import zkrecipes
from zkrecipes import (
    AtomicValue,
    DistributedAtomicInteger,
    DistributedAtomicLong,
    PromotedToLock,
    RetryNTimes,
    SharedCount,
)

from conftest import wait_until


def test_ten_threads_times_hundred_add_and_get_is_a_thousand(client: zkrecipes.Client, path: str) -> None:
    counter = DistributedAtomicLong(client, path)
    seen: List[int] = []
    guard = threading.Lock()

    def work() -> None:
        mine = [counter.add_and_get(1) for _ in range(100)]
        with guard:
            seen.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.get().post_value == 1000
    assert sorted(seen) == list(range(1, 1001))  # every increment applied exactly once


def test_curator_style_operations_and_wire_layout(client: zkrecipes.Client, path: str) -> None:
    counter = DistributedAtomicLong(client, path, retry=RetryNTimes(3, 0.01))
    assert counter.initialize(40) is True
    assert counter.initialize(0) is False
    v = counter.add(2)
    assert isinstance(v, AtomicValue) and (v.succeeded, v.pre_value, v.post_value) == (True, 40, 42)
    assert v.stats.optimistic_tries >= 1 and v.stats.optimistic_time >= 0
    assert counter.subtract(2).post_value == 40
    assert counter.increment().post_value == 41
    assert counter.decrement().post_value == 40
    assert counter.compare_and_set(40, 7).succeeded
    failed = counter.compare_and_set(40, 8)
    assert not failed and failed.pre_value == 7 and failed.post_value == 0
    assert counter.try_set(9).post_value == 9
    counter.force_set(-5)
    assert counter.get().post_value == -5
    data, _ = client.get_data(path)
    assert data == struct.pack(">q", -5)  # Curator's 8-byte big-endian long
    assert repr(counter.get()).startswith("AtomicValue(succeeded=True")
    with pytest.raises(AttributeError):
        counter.get().succeeded = False  # type: ignore[misc]


def test_integer_counter_is_four_bytes_and_refuses_wide_values(client: zkrecipes.Client, path: str) -> None:
    counter = DistributedAtomicInteger(client, path)
    assert counter.add_and_get(3) == 3
    assert client.get_data(path)[0] == struct.pack(">i", 3)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        counter.add(2**40)


def test_corrupted_counter_data_is_reported(client: zkrecipes.Client, path: str) -> None:
    client.create(path, b"\x01\x02\x03", create_parents=True)
    with pytest.raises(zkrecipes.CorruptedDataError, match=path):
        DistributedAtomicLong(client, path).get()


def test_promoted_to_lock_counter_counts(client: zkrecipes.Client, path: str) -> None:
    counter = DistributedAtomicLong(
        client, path + "/value", retry=RetryNTimes(0, 0), promoted_to_lock=PromotedToLock(path + "/lock", 5.0)
    )
    assert counter.increment().succeeded
    assert counter.get().post_value == 1


def test_add_and_get_async_combines_concurrent_adds(client: zkrecipes.Client, path: str) -> None:
    counter = DistributedAtomicLong(client, path)

    async def main() -> List[int]:
        return list(await asyncio.gather(*(counter.add_and_get_async(1, timeout=30) for _ in range(200))))

    values = asyncio.run(main())
    assert sorted(values) == list(range(1, 201))
    assert asyncio.run(counter.get_async()).post_value == 200


def test_shared_count_listeners_and_versioned_sets(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    reader = make_client()
    a = SharedCount(make_client(), path, 5)
    b = SharedCount(make_client(), path, 99)
    heard: List[int] = []
    b.add_listener(heard.append)
    with a, b:
        assert a.get_count() == 5 and b.get_count() == 5  # the seed of whoever created it
        v = a.get_versioned_value()
        assert a.try_set_count(v, 6) is True
        assert a.try_set_count(v, 7) is False  # stale version
        a.set_count(8)
        wait_until(lambda: heard[-1:] == [8], what="b to hear 8")
        assert b.get_count() == 8
        assert asyncio.run(b.try_set_count_async(b.get_versioned_value(), 9))
        wait_until(lambda: a.get_count() == 9, what="a to see 9")
    assert reader.get_data(path)[0] == struct.pack(">i", 9)  # Curator's 4-byte big-endian int
