"""Caches: Curator's CuratorCache and, as views of the same engine, NodeCache, PathChildrenCache
and TreeCache.

One persistent recursive watch per cache, an immutable snapshot (``for node in cache`` is
sorted by path and consistent), a delete-and-recreate seen as ``DELETED`` then ``CREATED``, and
after a reconnect or a new session an exact resync: the missed changes as events flagged
``resync``, then ``RESYNCED``. ``INITIALIZED`` comes once. A cache never writes to ZooKeeper.

    with zkrecipes.CuratorCache(client, "/config") as cache:
        cache.await_initialized(10)
        for node in cache:
            print(node.path, node.data)
        cache.listen(lambda event: print(event.type, event.path))

Listeners run on a library thread (never the event loop's), one at a time per cache, in event
order; they may block and may call this API. ``async for event in cache`` delivers the same
events to a coroutine.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Iterator, List, Optional

from . import _alive, _native
from ._base import EventIterator, Lifecycle, Name
from ._call import run
from ._native import ChildData
from .client import Client, _native_client

__all__ = [
    "CacheEvent",
    "CacheEventType",
    "ChildData",
    "CuratorCache",
    "NodeCache",
    "PathChildrenCache",
    "StartMode",
    "TreeCache",
]


class CacheEventType(Name):
    """What a :class:`CacheEvent` says (Curator's CuratorCacheListener types, plus the two
    lifecycle events)."""

    CREATED = "CREATED"
    CHANGED = "CHANGED"
    DELETED = "DELETED"
    INITIALIZED = "INITIALIZED"
    RESYNCED = "RESYNCED"


class StartMode(Name):
    """PathChildrenCache's start modes (Curator's ``PathChildrenCache.StartMode``)."""

    NORMAL = "NORMAL"
    BUILD_INITIAL_CACHE = "BUILD_INITIAL_CACHE"
    POST_INITIALIZED_EVENT = "POST_INITIALIZED_EVENT"


@dataclass(frozen=True)
class CacheEvent:
    """One change seen by a cache: ``old`` is the node before (CHANGED, DELETED), ``new`` after
    (CREATED, CHANGED); ``resync`` marks a difference found by a resync after a reconnect or a
    new session (a change the watch could not report)."""

    type: CacheEventType
    path: str
    old: Optional[ChildData]
    new: Optional[ChildData]
    resync: bool


def _event(kind: str, path: str, old: Optional[ChildData], new: Optional[ChildData], resync: bool) -> CacheEvent:
    return CacheEvent(CacheEventType(kind), path, old, new, resync)


class _Cache(Lifecycle):
    """What every cache view has (see the module documentation)."""

    _n: Any

    def __init__(self, client: Client, native: Any) -> None:
        self._n = native
        self._client = client
        self._iterators: "weakref.WeakSet[EventIterator[CacheEvent]]" = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"<zkrecipes.{type(self).__name__} path={self.path!r} size={self.size()}>"

    @property
    def path(self) -> str:
        """The cached root's path."""
        return str(self._n.path)

    def start(self) -> None:
        """Sets the watch and starts loading (listeners added before hear the initial load).
        Once started the cache stays alive until :meth:`close` (or the client's close), even if no reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start().wait()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._n.start())

    def await_initialized(self, timeout: Optional[float] = None) -> bool:
        """Waits until the initial load is complete (True) or ``timeout`` seconds pass (False).
        Until then a missing node may just not be loaded yet."""
        return bool(self._n.await_initialized(timeout).wait())

    async def await_initialized_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`await_initialized` for asyncio."""
        return bool(await run(self._n.await_initialized(timeout)))

    def await_zxid(self, zxid: int, timeout: Optional[float] = None) -> bool:
        """Read-your-writes: waits until the cache has applied every change up to ``zxid`` (the
        ``mzxid`` or ``czxid`` of the stat your write returned); False after ``timeout``."""
        return bool(self._n.await_zxid(zxid, timeout).wait())

    async def await_zxid_async(self, zxid: int, timeout: Optional[float] = None) -> bool:
        """:meth:`await_zxid` for asyncio."""
        return bool(await run(self._n.await_zxid(zxid, timeout)))

    def get(self, path: str) -> Optional[ChildData]:
        """The cached node at ``path``, or None (no server call)."""
        node: Optional[ChildData] = self._n.get(path)
        return node

    def size(self) -> int:
        """How many nodes are cached."""
        return int(self._n.size())

    def __len__(self) -> int:
        return self.size()

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._n.get(path) is not None

    def snapshot(self) -> List[ChildData]:
        """A consistent copy of the cache at one moment, sorted by path."""
        nodes: List[ChildData] = self._n.snapshot()
        return nodes

    def __iter__(self) -> Iterator[ChildData]:
        return iter(self.snapshot())

    @property
    def initialized(self) -> bool:
        """Whether the initial load is complete."""
        return bool(self._n.is_initialized())

    @property
    def resyncs(self) -> int:
        """How many resyncs (after reconnects or new sessions) have completed."""
        return int(self._n.resyncs())

    def listen(self, listener: Callable[[CacheEvent], object], *, replay: bool = False) -> int:
        """Calls ``listener(event)`` for every event from now on (with ``replay``, the cached
        nodes first as CREATED, and INITIALIZED if initialized). On a library thread, one call
        at a time, in order. Returns an id for :meth:`remove_listener`."""
        if not callable(listener):
            raise TypeError("listener must be callable")
        return int(self._n.listen(lambda *a: listener(_event(*a)), replay))

    def remove_listener(self, listener_id: int) -> bool:
        """Removes a listener by id."""
        return bool(self._n.remove_listener(listener_id))

    def events(self, *, replay: bool = False) -> AsyncIterator[CacheEvent]:
        """The events from now on for ``async for`` (on the running loop); ends when the cache
        is closed."""
        return EventIterator(
            lambda deliver: int(self._n.listen(lambda *a: deliver(_event(*a)), replay)),
            self._n.remove_listener,
            self._iterators,
        )

    def __aiter__(self) -> AsyncIterator[CacheEvent]:
        return self.events()

    def close(self) -> None:
        """Stops the cache; no listener is called after this returns; ``async for`` loops end.
        The last snapshot stays readable."""
        with _alive.closing(self._client, self):
            self._n.close()
            for it in list(self._iterators):
                it.end()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio (it returns at once either way)."""
        self.close()


class CuratorCache(_Cache):
    """Curator 5.x's CuratorCache: the whole subtree at ``path``. ``data=False`` keeps stats
    only; ``max_depth`` limits the depth (0: the root alone); ``path_filter(path) -> bool``
    leaves out a node and everything below it (it runs on a library thread: keep it quick)."""

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        data: bool = True,
        max_depth: Optional[int] = None,
        path_filter: Optional[Callable[[str], bool]] = None,
    ) -> None:
        if path_filter is not None and not callable(path_filter):
            raise TypeError("path_filter must be callable")
        super().__init__(client, _native.Cache(_native_client(client), path, "curator", data, max_depth, path_filter))


class NodeCache(_Cache):
    """Curator's NodeCache: the one node at ``path``."""

    def __init__(self, client: Client, path: str) -> None:
        super().__init__(client, _native.Cache(_native_client(client), path, "node"))

    @property
    def current_data(self) -> Optional[ChildData]:
        """The node, or None."""
        return self.get(self.path)


class PathChildrenCache(_Cache):
    """Curator's PathChildrenCache: the children of ``path`` (not the path itself), with
    Curator's start modes (``BUILD_INITIAL_CACHE``: :meth:`start` returns once loaded)."""

    def __init__(
        self, client: Client, path: str, cache_data: bool = True, start_mode: StartMode = StartMode.NORMAL
    ) -> None:
        mode = StartMode(start_mode).value
        super().__init__(
            client, _native.Cache(_native_client(client), path, "path_children", cache_data, None, None, mode)
        )

    @property
    def current_data(self) -> List[ChildData]:
        """The children, sorted by path."""
        return self.snapshot()


class TreeCache(_Cache):
    """Curator's TreeCache: the subtree at ``path`` down to ``max_depth`` (0: the root alone)."""

    def __init__(self, client: Client, path: str, max_depth: Optional[int] = None) -> None:
        super().__init__(client, _native.Cache(_native_client(client), path, "tree", True, max_depth))
