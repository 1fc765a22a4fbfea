"""Persistent watches (ZooKeeper 3.6+'s ``addWatch``, Curator's ``PersistentWatcher``).

A persistent watch stays set after it fires, across reconnects and sessions, until closed;
a recursive one also covers every node below its path. It reports what happened and where,
not the data: read what you need (or use a cache, which does and also resyncs)::

    with zkrecipes.PersistentWatcher(client, "/config", recursive=True) as w:
        w.listen(lambda event: print(event.type, event.path))
        ...

``RECONNECTED`` after ``DISCONNECTED`` or ``SESSION_LOST`` means changes made meanwhile were
not reported (ZooKeeper does not replay them): read again what matters. Watchers and caches on
one path of one client share one watch on the server, whatever their modes (the recursive one
serves the plain ones, filtered), so independent parts of an application may watch the same
path through one client. :meth:`Client.remove_watches` of its kind ends a watcher:
``WATCH_REMOVED`` is its last event.

Listeners run on a library thread (never the event loop's), one at a time per watcher, in the
order the server sent the events. ``async for event in watcher`` delivers them to a coroutine.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Optional

from . import _alive, _native
from ._base import EventIterator, Lifecycle, Name
from ._call import run
from .client import Client, _native_client

__all__ = ["PersistentWatcher", "WatcherEvent", "WatcherEventType"]


class WatcherEventType(Name):
    """What a :class:`PersistentWatcher` heard (the core's names, ``_native.WATCHER_EVENT_TYPES``)."""

    CREATED = "CREATED"
    DELETED = "DELETED"
    #: A node's data changed.
    DATA_CHANGED = "DATA_CHANGED"
    #: The watched node's children changed (plain, non-recursive watchers only).
    CHILDREN_CHANGED = "CHILDREN_CHANGED"
    #: The connection was lost; changes from now on may not be reported.
    DISCONNECTED = "DISCONNECTED"
    #: Connected again, the watch set again; changes made meanwhile were not reported.
    RECONNECTED = "RECONNECTED"
    #: The session ended; the watch is set again on the next session, then RECONNECTED.
    SESSION_LOST = "SESSION_LOST"
    #: Removed by :meth:`Client.remove_watches`: the watcher's last event.
    WATCH_REMOVED = "WATCH_REMOVED"


@dataclass(frozen=True)
class WatcherEvent:
    """One event: its type and the node's path (relative to the namespace), or ``None`` for
    ``DISCONNECTED``, ``RECONNECTED``, ``SESSION_LOST`` and ``WATCH_REMOVED``."""

    type: WatcherEventType
    path: Optional[str]


def _event(kind: str, path: Optional[str]) -> WatcherEvent:
    return WatcherEvent(WatcherEventType(kind), path)


class PersistentWatcher(Lifecycle):
    """Curator's PersistentWatcher: a persistent watch on ``path`` (``recursive``: and on every
    node below it). Add listeners, then :meth:`start`; ``with`` starts and closes it."""

    _n: Any

    def __init__(self, client: Client, path: str, *, recursive: bool = False) -> None:
        if not isinstance(recursive, bool):
            raise TypeError(f"recursive must be a bool, not {type(recursive).__name__}")
        self._n = _native.PersistentWatcher(_native_client(client), path, recursive)
        self._client = client
        self._iterators: "weakref.WeakSet[EventIterator[WatcherEvent]]" = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"<zkrecipes.PersistentWatcher path={self.path!r} recursive={self.recursive} started={self.started}>"

    @property
    def path(self) -> str:
        """The watched path."""
        return str(self._n.path)

    @property
    def recursive(self) -> bool:
        """Whether the nodes below the path are watched too."""
        return bool(self._n.recursive)

    @property
    def started(self) -> bool:
        """Whether it was started and is not closed."""
        return bool(self._n.is_started())

    def start(self) -> None:
        """Sets the watch; returns once the server has it. Once only (``InvalidArgumentError``
        the second time, ``ClosedError`` after :meth:`close`). Once started the watcher
        stays alive until :meth:`close` (or the client's close), even if no reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start().wait()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._n.start())

    def listen(self, listener: Callable[[WatcherEvent], object]) -> int:
        """Calls ``listener(event)`` for every event from now on, on a library thread, one call
        at a time, in order. Returns an id for :meth:`remove_listener`."""
        if not callable(listener):
            raise TypeError("listener must be callable")
        return int(self._n.listen(lambda kind, path: listener(_event(kind, path))))

    def remove_listener(self, listener_id: int) -> bool:
        """Removes a listener by id; whether it was there."""
        return bool(self._n.remove_listener(listener_id))

    def events(self) -> AsyncIterator[WatcherEvent]:
        """The events from now on for ``async for`` (on the running loop); ends when the
        watcher is closed."""
        return EventIterator(
            lambda deliver: int(self._n.listen(lambda kind, path: deliver(_event(kind, path)))),
            self._n.remove_listener,
            self._iterators,
        )

    def __aiter__(self) -> AsyncIterator[WatcherEvent]:
        return self.events()

    def close(self) -> None:
        """Removes the watch; no listener is called after this returns; ``async for`` loops
        end. Idempotent."""
        with _alive.closing(self._client, self):
            self._n.close()
            for it in list(self._iterators):
                it.end()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio (it returns at once either way)."""
        self.close()
