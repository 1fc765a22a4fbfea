"""A typed tour of the zkrecipes API, checked with ``mypy --strict`` by scripts/test-python
and run against a real server by the test suite.

    python typed_usage.py 127.0.0.1:2181
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import uuid
from typing import List, Optional

import zkrecipes
from zkrecipes import (
    AtomicValue,
    Client,
    CohortOptions,
    ConnectionState,
    CreateMode,
    DistributedAtomicLong,
    ExponentialBackoffRetry,
    InterProcessMutex,
    LeaderLatch,
    Owner,
    Participant,
    ServiceCacheEvent,
    ServiceDiscovery,
    ServiceInstance,
    ServiceProvider,
    SharedCount,
    Stat,
)


class Printer:
    """A LeaderLatchListener."""

    def __init__(self) -> None:
        self.events: List[str] = []

    def is_leader(self) -> None:
        self.events.append("is_leader")

    def not_leader(self) -> None:
        self.events.append("not_leader")


def blocking_tour(client: Client, base: str) -> int:
    created: str = client.create(base + "/node", b"hello", mode=CreateMode.PERSISTENT, create_parents=True)
    data, stat = client.get_data(created)
    assert data == b"hello" and isinstance(stat, Stat)
    missing: Optional[Stat] = client.exists(base + "/missing")
    assert missing is None

    lock = InterProcessMutex(client, base + "/lock")
    with lock:
        token: int = lock.fencing_token
        assert token > 0 and lock.is_owned_by_current_thread()
    owner = Owner()
    if lock.acquire(timeout=2.0, owner=owner):
        lock.release(owner=owner)

    # Cohort handoffs: this object's owners pass the hold in memory; fence with the wide token.
    shared = InterProcessMutex(client, base + "/cohort", cohort=CohortOptions(max_handoffs=8, max_hold=0.005))
    with shared:
        wide: int = shared.fencing_token_wide
        assert wide >> 32 == shared.fencing_token and shared.get_fencing_token_wide() == wide
    options: Optional[CohortOptions] = shared.cohort_options
    waiting: int = shared.local_waiters
    assert options is not None and waiting == 0

    counter = DistributedAtomicLong(client, base + "/counter", retry=ExponentialBackoffRetry(0.05, 5))
    new_value: int = counter.add_and_get(3)
    value: AtomicValue = counter.increment()
    if not value.succeeded:
        return 1

    listener = Printer()
    with LeaderLatch(client, base + "/latch", "typed-example") as latch:
        latch.add_listener(listener)
        if latch.await_leadership(timeout=5.0):
            leader: Participant = latch.get_leader()
            assert leader.id == "typed-example" and latch.leadership_epoch is not None

    with SharedCount(client, base + "/count", 10) as count:
        seen: List[int] = []
        count.add_listener(seen.append)
        versioned = count.get_versioned_value()
        assert count.try_set_count(versioned, versioned.value + 1)

    # Service discovery: Curator's nodes and JSON; a provider picks from a cache.
    with ServiceDiscovery(client, base + "/services") as discovery:
        me = ServiceInstance(
            "api", address="127.0.0.1", port=8080, payload={"zone": "a"}, uri_spec="{scheme}://{address}:{port}"
        )
        with discovery.register(me) as registration:
            with ServiceProvider(discovery, "api", "round_robin") as provider:
                picked: Optional[ServiceInstance] = provider.get_instance()
                assert picked is not None and picked.build_uri() == "http://127.0.0.1:8080"
            registration.update(dataclasses.replace(me, port=8081))
            names: List[str] = discovery.query_for_names()
            assert names == ["api"] and me.to_json().startswith(b'{"name":"api"')

    try:
        lock.release()
    except zkrecipes.NotOwnerError as e:
        assert e.code == "NOT_OWNER"
    try:
        client.get_data("not/absolute")
    except ValueError as e:  # InvalidArgumentError is a ValueError
        assert isinstance(e, zkrecipes.InvalidArgumentError)
    return new_value


async def async_tour(client: Client, base: str) -> int:
    lock = InterProcessMutex(client, base + "/lock")
    async with lock:
        nodes: List[str] = await lock.participant_nodes_async()
        assert len(nodes) == 1
    counter = DistributedAtomicLong(client, base + "/counter")
    results = await asyncio.gather(*(counter.add_and_get_async(1) for _ in range(10)))
    async with LeaderLatch(client, base + "/latch2", "async") as latch:
        await latch.await_leadership_async(timeout=5.0)
    async with ServiceDiscovery(client, base + "/services") as discovery:
        cache = zkrecipes.ServiceCache(discovery, "worker")
        events = cache.events(replay=True)
        async with cache, await discovery.register_async(ServiceInstance("worker")):
            first: ServiceCacheEvent = await events.__anext__()
            assert first.kind in (zkrecipes.ServiceCacheEventKind.ADDED, zkrecipes.ServiceCacheEventKind.INITIALIZED)
    return max(results)


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        print("usage: typed_usage.py HOST:PORT", file=sys.stderr)
        return 2
    base = f"/examples/typed-{uuid.uuid4().hex[:8]}"
    states: List[ConnectionState] = []
    with Client(argv[1], session_timeout=10.0, retry=ExponentialBackoffRetry(0.1, 3)) as client:
        client.add_state_listener(states.append)
        first = blocking_tour(client, base)
        last = asyncio.run(async_tour(client, base))
        client.delete(base, recursive=True)
    print(f"typed tour ok: counter {first} -> {last}")
    return 0 if last == first + 1 + 10 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
