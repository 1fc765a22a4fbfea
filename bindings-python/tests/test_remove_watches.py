"""Client.remove_watches, wait_for_state and max_request_bytes (issue 32), and one shared watch
per path: a node cache, a tree cache and watchers of both modes on one path of one client."""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Callable, List

import pytest

import zkrecipes
from zkrecipes import EventType, PersistentWatcher, WatchedEvent, WatcherEvent, WatcherEventType, WatcherType

from conftest import wait_until


def next_event(q: "queue.Queue[WatchedEvent]") -> WatchedEvent:
    try:
        return q.get(timeout=20)
    except queue.Empty:
        pytest.fail("no watch event within 20 s")


def test_remove_watches_removes_one_shot_watches_by_kind(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    c = make_client()
    other = make_client()
    c.create(path, b"", create_parents=True)
    data: "queue.Queue[WatchedEvent]" = queue.Queue()
    children: "queue.Queue[WatchedEvent]" = queue.Queue()
    c.get_data(path, watch=data.put)
    c.exists(path, watch=data.put)
    c.get_children(path, watch=children.put)
    with pytest.raises(zkrecipes.NoWatcherError):
        c.remove_watches(path, WatcherType.PERSISTENT)
    c.remove_watches(path, WatcherType.DATA)
    assert next_event(data) == WatchedEvent(EventType.WATCH_REMOVED, path)
    assert next_event(data) == WatchedEvent(EventType.WATCH_REMOVED, path)
    with pytest.raises(zkrecipes.NoWatcherError):
        c.remove_watches(path, "data")  # a name works too (any case)
    # The child watch was not touched.
    other.create(f"{path}/k", b"")
    assert next_event(children) == WatchedEvent(EventType.CHILDREN_CHANGED, path)
    assert data.empty()
    with pytest.raises(zkrecipes.InvalidArgumentError):
        c.remove_watches(path, "bogus")
    with pytest.raises(TypeError):
        c.remove_watches(path, 3)  # type: ignore[arg-type]
    with pytest.raises(zkrecipes.InvalidArgumentError):
        c.remove_watches("no-slash", WatcherType.ANY)


def test_remove_watches_ends_a_persistent_watcher_last_with_watch_removed(client: zkrecipes.Client, path: str) -> None:
    client.create(path, b"", create_parents=True)
    heard: List[WatcherEvent] = []
    lock = threading.Lock()

    def on(e: WatcherEvent) -> None:
        with lock:
            heard.append(e)

    async def main() -> None:
        with PersistentWatcher(client, path, recursive=True) as w:
            w.listen(on)
            await client.remove_watches_async(path, WatcherType.PERSISTENT_RECURSIVE, local=True)
            wait_until(lambda: len(heard) >= 1, what="WATCH_REMOVED")
            client.set_data(path, b"after")
            with pytest.raises(zkrecipes.NoWatcherError):
                await client.remove_watches_async(path, WatcherType.ANY)

    asyncio.run(main())
    assert [e.type for e in heard] == [WatcherEventType.WATCH_REMOVED]


def test_one_client_shares_a_path_watch_between_caches_and_watchers(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    c = make_client()
    writer = make_client()
    c.create(f"{path}/a", b"", create_parents=True)
    plain_heard: List[WatcherEvent] = []
    deep_heard: List[WatcherEvent] = []
    with zkrecipes.NodeCache(c, path) as node, zkrecipes.TreeCache(c, path) as tree, PersistentWatcher(
        c, path
    ) as plain, PersistentWatcher(c, path, recursive=True) as deep:
        plain.listen(plain_heard.append)
        deep.listen(deep_heard.append)
        assert node.await_initialized(20) and tree.await_initialized(20)
        writer.set_data(path, b"root")
        writer.create(f"{path}/a/deep", b"d")
        wait_until(lambda: len(deep_heard) >= 2, what="the recursive watcher's events")
        wait_until(lambda: len(plain_heard) >= 1, what="the plain watcher's event")
        wait_until(lambda: tree.get(f"{path}/a/deep") is not None, what="the tree cache")
        def node_data() -> object:
            n = node.get(path)
            return None if n is None else n.data

        wait_until(lambda: node_data() == b"root", what="the node cache")
        assert [(e.type, e.path) for e in deep_heard] == [
            (WatcherEventType.DATA_CHANGED, path),
            (WatcherEventType.CREATED, f"{path}/a/deep"),
        ]
        assert [(e.type, e.path) for e in plain_heard] == [(WatcherEventType.DATA_CHANGED, path)]


def test_wait_for_state_and_max_request_bytes(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    c = make_client(max_request_bytes=4096)
    assert c.wait_for_state(0) is True
    assert c.wait_for_state() is True
    assert asyncio.run(c.wait_for_state_async(5)) is True
    assert c.max_request_bytes == 4096
    with pytest.raises(zkrecipes.InvalidArgumentError):
        c.create(path, b"x" * 5000, create_parents=True)
    c.create(path, b"x" * 1000, create_parents=True)
    assert make_client().max_request_bytes == 1048575
    with pytest.raises(zkrecipes.InvalidArgumentError):
        make_client(max_request_bytes=10)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        c.wait_for_state(-1)
    c.close()
    with pytest.raises(zkrecipes.ClosedError):
        c.wait_for_state(1)
