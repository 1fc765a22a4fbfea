"""DistributedBarrier and DistributedDoubleBarrier against a real ZooKeeper."""

from __future__ import annotations

import asyncio
import threading
from typing import Callable, List

import pytest

import zkrecipes
from zkrecipes import DistributedBarrier, DistributedDoubleBarrier

from conftest import children_left


def test_barrier_holds_waiters_until_removed(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    setter = DistributedBarrier(make_client(), path)
    waiter = DistributedBarrier(make_client(), path)
    assert waiter.wait_on_barrier(0) is True
    setter.set_barrier()
    assert waiter.wait_on_barrier(0.2) is False
    results: List[bool] = []
    t = threading.Thread(target=lambda: results.append(waiter.wait_on_barrier(30)))
    t.start()
    t.join(0.3)
    assert t.is_alive()
    setter.remove_barrier()
    t.join(10)
    assert results == [True]


def test_five_members_enter_together(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    arrived = 0
    guard = threading.Lock()
    entered_early: List[int] = []
    results: List[bool] = []

    def member() -> None:
        nonlocal arrived
        b = DistributedDoubleBarrier(make_client(), path, 5)
        with guard:
            arrived += 1
        ok = b.enter(30)
        with guard:
            if arrived < 5:
                entered_early.append(arrived)
        results.append(ok and b.leave(30))

    threads = [threading.Thread(target=member) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [True] * 5
    assert entered_early == []


def test_lone_member_times_out_and_leaves_no_node(client: zkrecipes.Client, path: str) -> None:
    b = DistributedDoubleBarrier(client, path, 2)
    assert b.enter(0.3) is False
    assert children_left(client, path) == []
    with pytest.raises(zkrecipes.InvalidArgumentError):
        DistributedDoubleBarrier(client, path, 0)


def test_async_members(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    clients = [make_client(), make_client()]

    async def main() -> List[bool]:
        async def one(c: zkrecipes.Client) -> bool:
            async with DistributedDoubleBarrier(c, path, 2) as b:
                return b.member_qty == 2

        return list(await asyncio.gather(*(one(c) for c in clients)))

    assert asyncio.run(main()) == [True, True]
