"""kazoo's recipes: SetPartitioner (kazoo's loop, states, layout, listeners, session loss),
NonBlockingLease and MultiNonBlockingLease (truthiness, renewal, the holder's JSON, utcnow)."""

from __future__ import annotations

import asyncio
import datetime
import os
import socket
import threading
import time
from typing import Callable, List, Sequence

import pytest

import zkrecipes
from zkrecipes import (
    CorruptedDataError,
    InvalidArgumentError,
    MultiNonBlockingLease,
    NonBlockingLease,
    PartitionState,
    SetPartitioner,
)

from conftest import children_left, wait_until

FAST = dict(time_boundary=0.3, max_reaction_time=0.2)


def expected(identifier: str, members: Sequence[str], partitions: Sequence[str]) -> List[str]:
    """kazoo's default partition_func, written out."""
    workers = sorted(members)
    return sorted(partitions)[workers.index(identifier) :: len(workers)]


def ranges(identifier: str, members: Sequence[str], partitions: Sequence[str]) -> List[str]:
    """A partition_func of contiguous runs: member i of n takes the i-th run of the sorted set."""
    workers, parts = sorted(members), sorted(partitions)
    i, n = workers.index(identifier), len(workers)
    each, extra = divmod(len(parts), n)
    start = i * each + min(i, extra)
    return parts[start : start + each + (1 if i < extra else 0)]


def settle(
    members: Sequence[SetPartitioner],
    partitions: Sequence[str],
    timeout: float = 60.0,
    share: Callable[[str, Sequence[str], Sequence[str]], List[str]] = expected,
) -> None:
    """kazoo's loop for every member until all hold exactly the shares ``share`` gives (kazoo's
    default function's unless told)."""
    ids = [m.identifier for m in members]
    deadline = time.monotonic() + timeout
    while True:
        assert time.monotonic() < deadline, f"never settled: {[(m.identifier, m.state) for m in members]}"
        done = True
        for m in members:
            if m.failed:
                raise AssertionError(f"{m.identifier} failed")
            elif m.release:
                m.release_set()
                done = False
            elif m.allocating:
                m.wait_for_acquire(0.1)
                done = False
        if done and all(list(m) == share(m.identifier, ids, partitions) for m in members):
            union = sorted(p for m in members for p in m)
            assert union == sorted(partitions), "every partition to exactly one member"
            return


def test_kazoos_loop_divides_the_set_and_divides_it_again_when_a_member_comes_and_goes(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    parts = {f"queue-{i}" for i in range(5)}
    a = SetPartitioner(make_client(), path, parts, identifier="a", **FAST)
    assert a.state in (PartitionState.ALLOCATING, PartitionState.ACQUIRED)
    heard: List[PartitionState] = []
    a.add_listener(heard.append)
    assert a.wait_for_acquire(60)
    assert list(a) == sorted(parts) and a.acquired and a.partitions == sorted(parts)

    event = threading.Event()
    b = SetPartitioner(make_client(), path, parts, identifier="b", state_change_event=event, **FAST)
    assert a.wait_for_change(PartitionState.ACQUIRED, 60) is PartitionState.RELEASE
    assert list(a) == [], "nothing to work on in RELEASE"
    settle([a, b], sorted(parts))
    assert list(b) == ["queue-1", "queue-3"]
    assert event.is_set()

    # kazoo's layout: the party node is <32 hex>-<identifier>; lock nodes end in __lock__<seq>.
    c = make_client()
    party = sorted(c.get_children(path + "/party"))
    assert sorted(n.split("-", 1)[1] for n in party) == ["a", "b"]
    assert all(len(n.split("-", 1)[0]) == 32 for n in party)
    locks = c.get_children(path + "/locks/queue-1")
    assert len(locks) == 1 and locks[0][-18:-10] == "__lock__" and locks[0][-10:].isdigit()

    b.finish()
    assert b.failed and list(b) == []
    settle([a], sorted(parts))
    wait_until(lambda: PartitionState.RELEASE in heard and PartitionState.ALLOCATING in heard, what="a's states")
    assert heard[0] is PartitionState.ACQUIRED
    a.finish()
    assert children_left(c, path + "/party") == []


def test_a_partition_function_divides_the_set_and_a_wrong_answer_is_failure(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    parts = [f"p{i}" for i in (3, 0, 5, 1, 4, 2, 6)]
    calls: List[tuple] = []

    def contiguous(identifier: str, members: List[str], partitions: List[str]) -> List[str]:
        calls.append((identifier, sorted(members), partitions))
        return ranges(identifier, members, partitions)

    a = SetPartitioner(make_client(), path, parts, identifier="a", partition_func=contiguous, **FAST)
    b = SetPartitioner(make_client(), path, parts, identifier="b", partition_func=contiguous, **FAST)
    settle([a, b], parts, share=ranges)
    assert list(a) == ["p0", "p1", "p2", "p3"] and list(b) == ["p4", "p5", "p6"]
    assert calls[-1][1] == ["a", "b"] and calls[-1][2] == parts, "the party's identifiers, the set as given"

    # Raising, a name outside the set, a name twice, a str: FAILURE, and it leaves the party.
    def raises(*_: object) -> List[str]:
        raise RuntimeError("no answer")

    c = make_client()
    for wrong in (raises, lambda *_: ["p9"], lambda *_: ("p1", "p1"), lambda *_: "p1"):
        p = SetPartitioner(c, path, parts, identifier="c", partition_func=wrong, **FAST)
        wait_until(lambda: p.failed, 60, "FAILURE after a wrong answer")
        assert list(p) == []
        wait_until(
            lambda: not any(n.endswith("-c") for n in c.get_children(path + "/party")), 30, "c left the party"
        )
        settle([a, b], parts, share=ranges)
        p.finish()
    a.finish()
    b.finish()


def test_with_and_async(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    client = make_client()
    with SetPartitioner(client, path, ["x", "y"], identifier="w", start=False, **FAST) as p:
        assert p.wait_for_acquire(60)
        assert p.snapshot() == (PartitionState.ACQUIRED, ["x", "y"])
    assert p.failed

    async def main() -> None:
        async with SetPartitioner(client, path, ["x"], identifier="z", start=False, **FAST) as q:
            assert await q.wait_for_acquire_async(60)
            assert list(q) == ["x"]
            await q.release_set_async()
            assert await q.wait_for_change_async(PartitionState.ALLOCATING, 60) is PartitionState.ACQUIRED
        assert q.failed

    asyncio.run(main())


def test_session_loss_is_failure(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    client = make_client()
    p = SetPartitioner(client, path, ["x"], identifier="s", **FAST)
    assert p.wait_for_acquire(60)
    assert zkrecipes._alive.kept(client) == 1, "kept alive while it works"
    client._expire_session_for_testing()
    wait_until(lambda: p.failed, 60, "FAILURE after the session expired")
    # FAILURE is for good (kazoo's callers make a new one): no longer kept alive, finish() or not.
    wait_until(lambda: zkrecipes._alive.kept(client) == 0, 10, "the failed partitioner let go")
    assert not p.wait_for_acquire(0) and list(p) == []
    p.finish()


def test_bad_input(client: zkrecipes.Client, path: str) -> None:
    for bad, err in [
        (dict(set="abc"), TypeError),
        (dict(set=[1, 2]), TypeError),
        (dict(set=["a/b"]), InvalidArgumentError),
        (dict(set=["a", "a"]), InvalidArgumentError),
        (dict(set=["a"], identifier=""), InvalidArgumentError),
        (dict(set=["a"], time_boundary=0), InvalidArgumentError),
        (dict(set=["a"], max_reaction_time=-1), InvalidArgumentError),
        (dict(set=["a"], partition_func="not callable"), TypeError),
    ]:
        with pytest.raises(err):
            SetPartitioner(client, path, **bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        SetPartitioner(client, "no-slash", ["a"])
    p = SetPartitioner(client, path, ["a"], start=False)
    assert p.identifier == f"{socket.getfqdn()}-{os.getpid()}", "kazoo's default identifier"
    with pytest.raises(InvalidArgumentError):
        p.release_set()
    with pytest.raises(InvalidArgumentError):
        p.wait_for_change("NOPE", 0)  # type: ignore[arg-type]
    p.finish()


def test_a_lease_is_truthy_while_held_and_renewed_by_its_holder(client: zkrecipes.Client, path: str) -> None:
    t0 = datetime.datetime(2024, 2, 29, 23, 59, 59, 500000)
    hour = datetime.timedelta(hours=1)
    a = NonBlockingLease(client, path, hour, identifier="a", utcnow=lambda: t0)
    assert a and a.end == datetime.datetime(2024, 3, 1, 0, 59, 59)
    data, _ = client.get_data(path + "/lease_holder")
    assert data == b'{"version": 1, "holder": "a", "end": "2024-03-01T00:59:59"}'
    assert not NonBlockingLease(client, path, hour, identifier="b", utcnow=lambda: t0 + datetime.timedelta(minutes=5))
    assert NonBlockingLease(client, path, hour, identifier="a", utcnow=lambda: t0 + datetime.timedelta(minutes=5))
    later = t0 + datetime.timedelta(hours=2)
    assert NonBlockingLease(client, path, 60, identifier="b", utcnow=lambda: later)
    assert client.get_children(path) == ["lease_holder"]
    default = NonBlockingLease(client, path + "-host", 1.5)
    assert default and default.identifier == socket.gethostname()

    async def main() -> None:
        lease = await NonBlockingLease.obtain_async(client, path + "-async", 10, identifier="x")
        assert lease and lease.obtained
        again = await NonBlockingLease.obtain_async(client, path + "-async", 10, identifier="y")
        assert not again

    asyncio.run(main())

    client.set_data(path + "/lease_holder", b"not json")
    with pytest.raises(CorruptedDataError):
        NonBlockingLease(client, path, 1, identifier="a")
    with pytest.raises(InvalidArgumentError):
        NonBlockingLease(client, path, -1)
    with pytest.raises(TypeError):
        NonBlockingLease(client, path, 1, utcnow=lambda: "now")  # type: ignore[arg-type,return-value]


def test_multi_lease_gives_out_at_most_count(client: zkrecipes.Client, path: str) -> None:
    got = [MultiNonBlockingLease(client, 2, path, 60, identifier=i) for i in "abc"]
    assert [bool(g) for g in got] == [True, True, False]
    assert [g.index for g in got] == [0, 1, None]
    assert MultiNonBlockingLease(client, 2, path, 60, identifier="b").index == 1
    with pytest.raises(InvalidArgumentError):
        MultiNonBlockingLease(client, 0, path, 60)

    async def main() -> None:
        m = await MultiNonBlockingLease.obtain_async(client, 3, path, 60, identifier="c")
        assert m and m.index == 2

    asyncio.run(main())
