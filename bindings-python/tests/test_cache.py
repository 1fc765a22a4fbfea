"""Caches: CuratorCache and the views (NodeCache, PathChildrenCache, TreeCache) against the real
server: the initial load, iteration and get, listeners and ``async for``, read-your-writes, a
recreate as DELETED + CREATED, a session expiry resync, bad input."""

from __future__ import annotations

import asyncio
import threading
from typing import Callable, List

import pytest

import zkrecipes
from zkrecipes import (
    CacheEvent,
    CacheEventType,
    ChildData,
    CuratorCache,
    NodeCache,
    PathChildrenCache,
    StartMode,
    TreeCache,
)

from conftest import wait_until


class Recorder:
    def __init__(self) -> None:
        self.events: List[CacheEvent] = []
        self.lock = threading.Lock()

    def __call__(self, event: CacheEvent) -> None:
        with self.lock:
            self.events.append(event)

    def kinds(self) -> List[CacheEventType]:
        with self.lock:
            return [e.type for e in self.events]


def tree(client: zkrecipes.Client, root: str) -> None:
    client.create(root, b"root", create_parents=True)
    client.create(f"{root}/one", b"1")
    client.create(f"{root}/one/two", b"2")
    client.create(f"{root}/one/two/three", b"3")


def test_initialized_once_iteration_get_and_no_replay_for_late_listeners(
    client: zkrecipes.Client, path: str
) -> None:
    tree(client, path)
    early = Recorder()
    cache = CuratorCache(client, path)
    cache.listen(early)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        cache.await_initialized(0)  # not started
    cache.start()
    try:
        assert cache.await_initialized(10)
        assert cache.initialized
        assert len(cache) == cache.size() == 4
        nodes = list(cache)
        assert [n.path for n in nodes] == [path, f"{path}/one", f"{path}/one/two", f"{path}/one/two/three"]
        assert all(isinstance(n, ChildData) for n in nodes)
        three = cache.get(f"{path}/one/two/three")
        assert three is not None and three.data == b"3" and three.stat.czxid > 0
        assert cache.get(f"{path}/nothing") is None
        assert f"{path}/one" in cache
        wait_until(lambda: early.kinds().count(CacheEventType.INITIALIZED) == 1, what="INITIALIZED")
        assert early.kinds() == [CacheEventType.CREATED] * 4 + [CacheEventType.INITIALIZED]

        late = Recorder()
        cache.listen(late)
        replayed = Recorder()
        cache.listen(replayed, replay=True)
        stat = client.set_data(f"{path}/one", b"x")
        assert cache.await_zxid(stat.mzxid, 10)
        got = cache.get(f"{path}/one")
        assert got is not None and got.data == b"x"  # read your writes
        wait_until(lambda: len(late.events) == 1, what="the change")
        e = late.events[0]
        assert (e.type, e.path, e.resync) == (CacheEventType.CHANGED, f"{path}/one", False)
        assert e.old is not None and e.old.data == b"1" and e.new is not None and e.new.data == b"x"
        wait_until(lambda: len(replayed.events) == 6, what="the replay and the change")
        assert replayed.kinds() == [CacheEventType.CREATED] * 4 + [CacheEventType.INITIALIZED, CacheEventType.CHANGED]

        # A delete and a recreate: DELETED then CREATED, never a silent CHANGED.
        client.delete(f"{path}/one/two/three")
        client.create(f"{path}/one/two/three", b"again")
        wait_until(lambda: len(late.events) == 3, what="the recreate")
        assert late.kinds()[1:] == [CacheEventType.DELETED, CacheEventType.CREATED]
        assert early.kinds().count(CacheEventType.INITIALIZED) == 1
    finally:
        cache.close()
    with pytest.raises(zkrecipes.ClosedError):
        cache.await_initialized(1)
    assert cache.size() == 4  # the last snapshot stays readable


def test_a_cache_never_writes_and_fills_when_the_root_appears(client: zkrecipes.Client, path: str) -> None:
    with CuratorCache(client, path) as cache:
        assert cache.await_initialized(10)
        assert len(cache) == 0
        assert client.exists(path) is None  # CURATOR-319: never created
        client.create(f"{path}/a", b"a", create_parents=True)
        stat = client.set_data(f"{path}/a", b"b")
        assert cache.await_zxid(stat.mzxid, 10)
        assert [n.path for n in cache] == [path, f"{path}/a"]


def test_views_and_options(client: zkrecipes.Client, path: str) -> None:
    client.create(path, b"", create_parents=True)
    for p in ("/a", "/a/x", "/a/x/deep", "/b", "/skip", "/skip/y"):
        client.create(path + p, p.encode())
    caches = [
        NodeCache(client, f"{path}/a"),
        PathChildrenCache(client, path, cache_data=False, start_mode=StartMode.BUILD_INITIAL_CACHE),
        TreeCache(client, path, max_depth=1),
        CuratorCache(client, path, path_filter=lambda p: not p.startswith(f"{path}/skip")),
        CuratorCache(client, path, data=False, max_depth=2),
    ]
    for c in caches:
        c.start()
    try:
        node, kids, tree1, filtered, stats = caches
        assert kids.initialized  # BUILD_INITIAL_CACHE: start waits
        for c in caches:
            assert c.await_initialized(10)
        assert isinstance(node, NodeCache) and node.current_data is not None
        assert node.current_data.data == b"/a"
        assert isinstance(kids, PathChildrenCache)
        assert [n.path for n in kids.current_data] == [f"{path}/a", f"{path}/b", f"{path}/skip"]
        assert all(n.data is None for n in kids)
        assert [len(c) for c in caches] == [1, 3, 4, 5, 6]
        assert filtered.get(f"{path}/skip") is None
        assert stats.get(f"{path}/b") is not None and stats.get(f"{path}/b").data is None  # type: ignore[union-attr]
    finally:
        for c in caches:
            c.close()


def test_async_for_and_async_twins(client: zkrecipes.Client, path: str) -> None:
    client.create(path, b"", create_parents=True)

    async def main() -> List[CacheEvent]:
        cache = CuratorCache(client, path)
        await cache.start_async()
        assert await cache.await_initialized_async(10)
        got: List[CacheEvent] = []
        seen = asyncio.Condition()

        async def consume() -> None:
            async for event in cache:
                async with seen:
                    got.append(event)
                    seen.notify_all()
                if len(got) == 3:
                    break

        async def until_seen(n: int) -> None:
            async with seen:
                await seen.wait_for(lambda: len(got) >= n)

        task = asyncio.ensure_future(consume())
        await asyncio.sleep(0)  # let the iterator register before the writes
        # One write per event seen: three quick writes may reach the cache as fewer events
        # (its read after the create can already see the second value), as in Curator.
        await client.create_async(f"{path}/a", b"1")
        await asyncio.wait_for(until_seen(1), 10)
        stat = await client.set_data_async(f"{path}/a", b"2")
        await asyncio.wait_for(until_seen(2), 10)
        await client.delete_async(f"{path}/a")
        assert await cache.await_zxid_async(stat.mzxid, 10)
        await asyncio.wait_for(task, 10)
        ended: List[CacheEvent] = []

        async def until_closed() -> None:
            async for event in cache.events():
                ended.append(event)

        closing = asyncio.ensure_future(until_closed())
        await asyncio.sleep(0)
        await cache.close_async()
        await asyncio.wait_for(closing, 10)  # close ends the loop
        return got

    got = asyncio.run(main())
    assert [(e.type, e.path) for e in got] == [
        (CacheEventType.CREATED, f"{path}/a"),
        (CacheEventType.CHANGED, f"{path}/a"),
        (CacheEventType.DELETED, f"{path}/a"),
    ]


def test_a_session_expiry_is_resynced(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    writer = make_client()
    c = make_client()
    writer.create(path, b"", create_parents=True)
    writer.create(f"{path}/keep", b"k")
    writer.create(f"{path}/gone", b"g")
    with CuratorCache(c, path) as cache:
        assert cache.await_initialized(10)
        rec = Recorder()
        cache.listen(rec)
        c._expire_session_for_testing()
        writer.delete(f"{path}/gone")
        writer.create(f"{path}/new", b"n")
        wait_until(lambda: cache.resyncs >= 1, timeout=30, what="the resync")
        stat = writer.set_data(f"{path}/keep", b"k2")
        assert cache.await_zxid(stat.mzxid, 10)
        assert [n.path for n in cache] == [path, f"{path}/keep", f"{path}/new"]
        # Listeners are called on the dispatcher thread, after the snapshot changed: a marker
        # written now is heard after every event emitted so far, duplicates included.
        marker = writer.set_data(f"{path}/keep", b"marker")
        assert cache.await_zxid(marker.mzxid, 10)

        def marker_heard() -> bool:
            with rec.lock:
                return any(e.new is not None and e.new.data == b"marker" for e in rec.events)

        wait_until(marker_heard, what="the marker's CHANGED")
        assert CacheEventType.RESYNCED in rec.kinds()
        assert rec.kinds().count(CacheEventType.DELETED) == 1
        assert rec.kinds().count(CacheEventType.CREATED) == 1


def test_bad_input(client: zkrecipes.Client) -> None:
    with pytest.raises(zkrecipes.InvalidArgumentError):
        CuratorCache(client, "no-slash")
    with pytest.raises(zkrecipes.InvalidArgumentError):
        TreeCache(client, "/x", max_depth=-1)
    with pytest.raises(ValueError):
        PathChildrenCache(client, "/x", start_mode="SOMETIMES")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        CuratorCache(client, "/x", path_filter=42)  # type: ignore[arg-type]
    cache = CuratorCache(client, "/x")
    with pytest.raises(TypeError):
        cache.listen(None)  # type: ignore[arg-type]
    cache.start()
    with pytest.raises(zkrecipes.InvalidArgumentError):
        cache.start()
    with pytest.raises(zkrecipes.InvalidArgumentError):
        cache.await_initialized(-1)
    cache.close()


def test_the_enums_are_the_cores_lists() -> None:
    from zkrecipes import _native

    assert [t.value for t in CacheEventType] == _native.CACHE_EVENT_TYPES
    assert [m.value for m in StartMode] == _native.START_MODES


def test_an_async_for_left_early_removes_its_listener(client: zkrecipes.Client, path: str) -> None:
    """Leaving ``async for`` with break (or an exception, or a cancelled task) drops the
    iterator, and its listener goes with it: before, the native side kept the iterator alive
    and its listener fed a queue nobody read until the cache was closed."""
    import gc
    import weakref

    client.create(path, b"", create_parents=True)

    async def main() -> None:
        cache = CuratorCache(client, path)
        await cache.start_async()
        assert await cache.await_initialized_async(10)
        it = cache.events(replay=True)
        listener = it._id  # type: ignore[attr-defined]
        ref = weakref.ref(it)
        async for _event in it:
            break
        del it
        gc.collect()
        assert ref() is None, "the iterator left by break was kept alive"
        assert not cache.remove_listener(listener), "its listener was still registered"
        await cache.close_async()

    asyncio.run(main())
