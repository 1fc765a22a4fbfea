"""What the public classes share: enum values named as the core names them, ``with`` /
``async with`` over ``start`` and ``close``, and ``async for`` over a listener."""

from __future__ import annotations

import asyncio
import enum
import weakref
from types import TracebackType
from typing import Callable, Generic, Optional, Type, TypeVar

__all__ = ["Name", "Lifecycle", "EventIterator"]

_S = TypeVar("_S", bound="Lifecycle")
_E = TypeVar("_E")


class Name(str, enum.Enum):
    """An enum whose values are the core's names (``str(x)`` is the name)."""

    def __str__(self) -> str:
        return str(self.value)


class Lifecycle:
    """``with x:`` starts and closes, ``async with x:`` the same through the ``*_async`` twins.

    A recipe whose :meth:`start` (or :meth:`start_async`) succeeded stays alive until its
    :meth:`close` (or :meth:`close_async`), or until its client's ``close()``, even if no
    reference to it is kept: the package holds it meanwhile (dropping it does not close it, as
    with Curator, kazoo or a started :class:`threading.Thread`), then lets it go.
    """

    def start(self) -> object:
        raise NotImplementedError

    async def start_async(self) -> object:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    async def close_async(self) -> None:
        raise NotImplementedError

    def __enter__(self: _S) -> _S:
        self.start()
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()

    async def __aenter__(self: _S) -> _S:
        await self.start_async()
        return self

    async def __aexit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        await self.close_async()


class EventIterator(Generic[_E]):
    """``async for event in x``: a listener (added by ``listen(deliver) -> id``, removed by
    ``remove(id)``) feeding an asyncio queue on the running loop. ``end()`` (from the owner's
    ``close``) ends the loop once the events before it are taken; it registers itself in
    ``iterators`` for that."""

    def __init__(
        self,
        listen: Callable[[Callable[[_E], None]], int],
        remove: Callable[[int], object],
        iterators: "weakref.WeakSet[EventIterator[_E]]",
    ) -> None:
        self._loop = loop = asyncio.get_running_loop()
        self._queue: "asyncio.Queue[Optional[_E]]" = asyncio.Queue()
        queue = self._queue
        self._done = False
        self._remove = remove

        # The listener keeps the loop and the queue, not this iterator: an `async for` left
        # early (break, an exception, a cancelled task) drops the iterator, whose __del__ then
        # removes the listener (the native side would otherwise keep it, and a queue nobody
        # reads, until the owner is closed).
        def deliver(event: Optional[_E]) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, event)
            except RuntimeError:  # the loop is closed
                pass

        self._deliver = deliver
        self._id = listen(deliver)
        iterators.add(self)

    def __del__(self) -> None:
        if not getattr(self, "_done", True):
            self._done = True
            try:
                self._remove(self._id)
            except Exception:  # noqa: BLE001 - the owner is closed or the interpreter exits
                pass

    def end(self) -> None:
        """Ends the loop after the events already delivered."""
        self._deliver(None)

    def __aiter__(self) -> "EventIterator[_E]":
        return self

    async def __anext__(self) -> _E:
        if self._done:
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is None:
            self._done = True
            self._remove(self._id)
            raise StopAsyncIteration
        return event

    async def aclose(self) -> None:
        """Stops listening."""
        self._done = True
        self._remove(self._id)
