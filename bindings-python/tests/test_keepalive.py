"""Started recipes stay alive until closed: a recipe whose start() succeeded is kept by the
package until its close() (or close_async()), or its client's close(), so dropping the last
reference to it no longer closes it (before, the native object's drop did: a node started in a
helper function was deleted as it returned, a latch left its election). Closing it, or its
client, lets it be collected again."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any, Callable, Dict, List

import pytest

import zkrecipes
from zkrecipes import (
    CreateMode,
    CuratorCache,
    GroupMember,
    InvalidArgumentError,
    LeaderLatch,
    LeaderObserver,
    LeaderSelector,
    LeadershipContext,
    NodeCache,
    Participant,
    PathChildrenCache,
    PersistentNode,
    PersistentTtlNode,
    PersistentWatcher,
    QueueSharder,
    ServiceCache,
    ServiceDiscovery,
    ServiceInstance,
    ServiceProvider,
    SetPartitioner,
    SharedCount,
    SharedValue,
    TreeCache,
)

from conftest import wait_until

Refs = Dict[str, "weakref.ReferenceType[Any]"]


def dead(refs: Refs) -> List[str]:
    """The names whose objects were collected (after a full collection)."""
    gc.collect()
    return sorted(name for name, ref in refs.items() if ref() is None)


def wait_collected(refs: Refs, what: str) -> None:
    wait_until(lambda: dead(refs) == sorted(refs), 10, what)


def lead(ctx: LeadershipContext) -> None:
    ctx.cancelled.wait()


def start_everything(client: zkrecipes.Client, path: str) -> Refs:
    """Starts one of every recipe with a start/close life on ``client`` and keeps none of them:
    only weak references come back."""
    objs: Dict[str, Any] = {
        "PersistentNode": PersistentNode(client, f"{path}/node", CreateMode.EPHEMERAL, b"me"),
        "PersistentTtlNode": PersistentTtlNode(client, f"{path}/ttl", 5.0, b"t"),
        "GroupMember": GroupMember(client, f"{path}/group", "member-1", b"payload"),
        "LeaderLatch": LeaderLatch(client, f"{path}/latch", "keeper"),
        "LeaderSelector": LeaderSelector(client, f"{path}/selector", lead, "selector-1"),
        "LeaderObserver": LeaderObserver(client, f"{path}/latch"),
        "SharedCount": SharedCount(client, f"{path}/count", 7),
        "SharedValue": SharedValue(client, f"{path}/value", b"v"),
        "CuratorCache": CuratorCache(client, f"{path}/cached"),
        "NodeCache": NodeCache(client, f"{path}/cached"),
        "PathChildrenCache": PathChildrenCache(client, f"{path}/cached"),
        "TreeCache": TreeCache(client, f"{path}/cached"),
        "PersistentWatcher": PersistentWatcher(client, f"{path}/cached", recursive=True),
        "QueueSharder": QueueSharder(client, f"{path}/queues", f"{path}/queues-leader"),
    }
    for obj in objs.values():
        obj.start()
    # Started by its constructor, as kazoo's.
    objs["SetPartitioner"] = SetPartitioner(
        client, f"{path}/party", ["a", "b"], identifier="p", time_boundary=0.3, max_reaction_time=0.2
    )
    discovery = ServiceDiscovery(client, f"{path}/services")
    discovery.register(ServiceInstance("api", id="i-1", address="10.0.0.1", port=80))
    objs["ServiceDiscovery"] = discovery
    objs["ServiceCache"] = ServiceCache(discovery, "api")
    objs["ServiceProvider"] = ServiceProvider(discovery, "api")
    objs["ServiceCache"].start()
    objs["ServiceProvider"].start()
    assert objs["PersistentNode"].wait_for_initial_create(10)
    assert objs["LeaderLatch"].await_leadership(10)
    return {name: weakref.ref(obj) for name, obj in objs.items()}


def register(client: zkrecipes.Client, path: str) -> Refs:
    """What a service does from a helper function: its node, its latch, its count, its
    membership; nothing of them is kept."""
    node = PersistentNode(client, f"{path}/node", CreateMode.EPHEMERAL, b"me")
    node.start()
    assert node.wait_for_initial_create(10)
    latch = LeaderLatch(client, f"{path}/leader", "keeper")
    latch.start()
    assert latch.await_leadership(10)
    count = SharedCount(client, f"{path}/count", 7)
    count.start()
    member = GroupMember(client, f"{path}/group", "member-1", b"payload")
    member.start()
    return {"node": weakref.ref(node), "latch": weakref.ref(latch), "count": weakref.ref(count), "member": weakref.ref(member)}


def test_recipes_started_in_a_function_keep_working_after_it_returns(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    client, other = make_client(), make_client()
    client.create(path, b"", create_parents=True)
    refs = register(client, path)
    assert dead(refs) == [], "started recipes were collected (and so closed) when their function returned"

    assert other.exists(f"{path}/node") is not None, "the ephemeral node was deleted"
    assert other.exists(f"{path}/group/member-1") is not None, "the group member left"
    assert other.get_children(f"{path}/leader"), "the latch left its election"
    with LeaderObserver(other, f"{path}/leader") as observer:
        assert observer.leader == Participant("keeper", True)
    latch = refs["latch"]()
    assert latch is not None and latch.has_leadership()
    del latch

    # Still running, not merely still there: the node comes back when deleted, the count
    # follows another client's write.
    other.delete(f"{path}/node")
    wait_until(lambda: other.exists(f"{path}/node") is not None, 10, "the node kept again after a delete")
    other.set_data(f"{path}/count", (8).to_bytes(4, "big"))
    wait_until(lambda: refs["count"]().get_count() == 8, 10, "the count to follow the other client")

    # Closing the client lets every one of them go.
    client.close()
    wait_collected(refs, "the recipes to be collected after their client's close")
    wait_until(lambda: other.exists(f"{path}/node") is None, 10, "the ephemeral node gone with its session")


def test_closing_the_client_releases_every_recipe_started_on_it(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    client, other = make_client(), make_client()
    client.create(path, b"", create_parents=True)
    refs = start_everything(client, path)
    assert dead(refs) == [], "started recipes were collected"
    assert other.exists(f"{path}/services/api/i-1") is not None, "the registration vanished"
    assert other.exists(f"{path}/node") is not None
    assert zkrecipes._alive.kept(client) == len(refs)

    client.close()
    assert zkrecipes._alive.kept(client) == 0
    wait_collected(refs, "every recipe to be collected after its client's close")


def test_a_recipe_closed_and_dropped_is_collected_while_its_client_stays_open(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    client, other = make_client(), make_client()
    client.create(path, b"", create_parents=True)
    refs = start_everything(client, path)
    trio = ("ServiceDiscovery", "ServiceCache", "ServiceProvider")
    for name, ref in refs.items():
        if name in trio:
            continue
        obj = ref()
        assert obj is not None, f"{name} was collected while started"
        obj.close()
        del obj
        wait_collected({name: ref}, f"the closed {name} to be collected")
    # The discovery's close closes its caches and providers too, and lets them go.
    discovery = refs["ServiceDiscovery"]()
    assert discovery is not None
    discovery.close()
    del discovery
    wait_collected({name: refs[name] for name in trio}, "the closed discovery, its cache and provider to be collected")
    assert other.exists(f"{path}/services/api/i-1") is None, "the discovery's close unregisters"
    assert client.started and zkrecipes._alive.kept(client) == 0


def test_with_blocks_and_the_async_twins_keep_and_release(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    client, other = make_client(), make_client()
    client.create(path, b"", create_parents=True)

    with SharedCount(client, f"{path}/count", 1) as count:
        assert zkrecipes._alive.kept(client) == 1
    ref = weakref.ref(count)
    del count
    wait_collected({"count": ref}, "a count left by its with block to be collected")

    async def start(node_path: str) -> Refs:
        node = PersistentNode(client, node_path, CreateMode.EPHEMERAL, b"a")
        await node.start_async()
        latch = LeaderLatch(client, f"{path}/leader", "async")
        await latch.start_async()
        assert await latch.await_leadership_async(10)
        return {"node": weakref.ref(node), "latch": weakref.ref(latch)}

    async def main() -> None:
        refs = await start(f"{path}/node")
        assert dead(refs) == [], "recipes started with start_async were collected"
        wait_until(lambda: other.exists(f"{path}/node") is not None, 10, "the node made")
        for ref in refs.values():
            await ref().close_async()
        wait_collected(refs, "recipes closed with close_async to be collected")
        async with GroupMember(client, f"{path}/group", "m") as member:
            assert zkrecipes._alive.kept(client) == 1
        member_ref = weakref.ref(member)
        del member
        wait_collected({"member": member_ref}, "a member left by its async with block to be collected")

    asyncio.run(main())
    assert other.exists(f"{path}/node") is None
    assert zkrecipes._alive.kept(client) == 0


def test_a_second_start_that_fails_keeps_the_first_running(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    client, other = make_client(), make_client()
    client.create(path, b"", create_parents=True)

    def start_twice() -> Refs:
        node = PersistentNode(client, f"{path}/node", CreateMode.EPHEMERAL, b"me")
        node.start()
        with pytest.raises(InvalidArgumentError):
            node.start()
        assert node.wait_for_initial_create(10)
        latch = LeaderLatch(client, f"{path}/leader", "keeper")
        latch.start()

        async def again() -> None:
            await latch.start_async()

        with pytest.raises(InvalidArgumentError):
            asyncio.run(again())
        assert latch.await_leadership(10)
        return {"node": weakref.ref(node), "latch": weakref.ref(latch)}

    refs = start_twice()
    assert dead(refs) == [], "a refused second start released the running first one"
    assert other.exists(f"{path}/node") is not None
    assert other.get_children(f"{path}/leader")

    # A start after close is refused too, and keeps nothing.
    node, latch = refs["node"](), refs["latch"]()
    node.close()
    latch.close()
    with pytest.raises(zkrecipes.ClosedError):
        node.start()
    del node, latch
    wait_collected(refs, "the closed recipes to be collected")
    assert zkrecipes._alive.kept(client) == 0
