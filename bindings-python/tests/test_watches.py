"""kazoo-like ``watch=`` callables on get_data / exists / get_children (one-shot watches)."""

from __future__ import annotations

import asyncio
import queue
from typing import Callable

import pytest

import zkrecipes
from zkrecipes import EventType, WatchedEvent


def next_event(q: "queue.Queue[WatchedEvent]") -> WatchedEvent:
    try:
        return q.get(timeout=10)
    except queue.Empty:
        pytest.fail("no watch event within 10 s")


def test_watches_fire_once_with_kazoo_like_events(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    c = make_client()
    other = make_client()
    events: "queue.Queue[WatchedEvent]" = queue.Queue()

    # exists on a missing node: CREATED.
    assert c.exists(path, watch=events.put) is None
    other.create(path, b"v1", create_parents=True)
    assert next_event(events) == WatchedEvent(EventType.CREATED, path)

    # get_data: CHANGED, and only once (one-shot).
    data, _ = c.get_data(path, watch=events.put)
    assert data == b"v1"
    other.set_data(path, b"v2")
    assert next_event(events) == WatchedEvent(EventType.CHANGED, path)
    other.set_data(path, b"v3")

    # get_children: CHILD; the second set_data above fired nothing (checked by the order here).
    assert c.get_children(path, watch=events.put) == []
    other.create(f"{path}/kid", b"")
    assert next_event(events) == WatchedEvent(EventType.CHILD, path)

    # exists on an existing node: DELETED.
    assert c.exists(f"{path}/kid", watch=events.put) is not None
    other.delete(f"{path}/kid")
    assert next_event(events) == WatchedEvent(EventType.DELETED, f"{path}/kid")
    assert events.empty()


def test_watch_paths_are_relative_to_the_namespace(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    ns = path.strip("/").replace("/", "-")
    c = make_client(namespace=ns)
    events: "queue.Queue[WatchedEvent]" = queue.Queue()
    assert c.exists("/n", watch=events.put) is None
    c.create("/n", b"", create_parents=True)
    assert next_event(events) == WatchedEvent(EventType.CREATED, "/n")
    c.delete("/n")


def test_async_watches_and_session_end(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    c = make_client()
    other = make_client()
    other.create(path, b"", create_parents=True)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        fired: "asyncio.Future[WatchedEvent]" = loop.create_future()
        await c.get_data_async(path, watch=lambda e: loop.call_soon_threadsafe(fired.set_result, e))
        await other.set_data_async(path, b"x")
        assert await asyncio.wait_for(fired, 10) == WatchedEvent(EventType.CHANGED, path)
        assert await c.get_children_async(path, watch=lambda e: None) == []
        assert await c.exists_async(f"{path}/none", watch=lambda e: None) is None

    asyncio.run(main())

    # A watch pending when the client closes ends with SESSION_ENDED (never hangs silently).
    events: "queue.Queue[WatchedEvent]" = queue.Queue()
    c.get_data(path, watch=events.put)
    c.close()
    assert next_event(events).type is EventType.SESSION_ENDED


def test_bad_watch_arguments(client: zkrecipes.Client, path: str) -> None:
    with pytest.raises(TypeError):
        client.exists(path, watch=42)  # type: ignore[arg-type]
    with pytest.raises(zkrecipes.NoNodeError):
        client.get_data(path, watch=lambda e: None)
