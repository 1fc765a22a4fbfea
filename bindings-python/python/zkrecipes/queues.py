"""Queues with Curator 5.x's node names and item framing: :class:`SimpleDistributedQueue`
(``qn-<seq>``, raw bytes) and the :class:`DistributedQueue` family (``queue-…`` nodes in
Curator's ItemSerializer framing): :class:`DistributedIdQueue`, :class:`DistributedPriorityQueue`,
:class:`DistributedDelayQueue`.

What they are for: handing work from producers to consumers at modest rates (tens to hundreds of
items a second) with **exactly-once** consumption. ZooKeeper is a poor high-volume queue (every
item lives in every server's memory, every take is several writes through the leader); use a
broker for a firehose.

Exactly once: give a ``lock_path``. A consumer locks an item (an ephemeral node at
``lock_path/<item>``) before it reads it; :meth:`QueueItem.done` removes the item in one
transaction that checks the lock, on the session that holds it, so two consumers can never both
complete one item, and a consumer whose session ended is told so (``SessionExpiredError``). A
consumer that dies mid-item leaves the item for another, which gets a larger
:attr:`QueueItem.fencing_token`. Without a lock path consumption is Curator's (at most once).

::

    queue = zkrecipes.DistributedQueue(client, "/jobs", lock_path="/jobs-locks")
    queue.put(b"resize 42")
    for item in queue.consume():
        with item:            # done() on success, fail() on an exception
            handle(item.data, item.fencing_token)

A consumer that raises fails the item: ``error_mode`` (Curator's ErrorMode, with a lock path)
requeues it at the tail (``ErrorMode.REQUEUE``, the default) or deletes it (``ErrorMode.DELETE``).
``put_multi`` puts several messages in one item (Curator's putMulti); ``add_put_listener`` hears
every completed put (Curator's QueuePutListener). :class:`QueueSharder` spreads one queue over
several (Curator's QueueSharder).
"""

from __future__ import annotations

import math
from types import TracebackType
from typing import AsyncIterator, Callable, Iterator, List, NamedTuple, Optional, Sequence, Type, TypeVar, Union

from . import _alive, _native
from ._base import Lifecycle, Name
from ._call import run
from .client import Client, ConnectionState, _native_client
from .errors import ClosedError, InvalidArgumentError

__all__ = [
    "SimpleDistributedQueue",
    "QueueItem",
    "DistributedQueue",
    "DistributedIdQueue",
    "DistributedPriorityQueue",
    "DistributedDelayQueue",
    "ErrorMode",
    "QueuePut",
    "QueueSharder",
]


class ErrorMode(Name):
    """What :meth:`QueueItem.fail` does with an item on a queue with a lock path (Curator's
    ErrorMode)."""

    REQUEUE = "REQUEUE"
    """Put it back at the tail, keeping its key (Curator's default)."""
    DELETE = "DELETE"
    """Delete it."""


class QueuePut(NamedTuple):
    """A completed put, for put listeners (Curator's QueuePutListener: ``putCompleted`` when
    ``multi`` is False, ``putMultiCompleted`` when it is True)."""

    node: str
    """The item's node path (with its sequence number)."""
    messages: List[bytes]
    """The messages put: one for ``put``, every one of ``put_multi``."""
    multi: bool
    """Whether it was a ``put_multi``."""

    @property
    def data(self) -> bytes:
        """The first message."""
        return self.messages[0] if self.messages else b""


class SimpleDistributedQueue:
    """Curator's SimpleDistributedQueue (ZooKeeper's own recipe): ``qn-<seq>`` nodes holding
    raw bytes, lowest first; at-most-once delivery. :meth:`take` survives the queue's container
    node being reaped (CURATOR-308)."""

    def __init__(self, client: Client, path: str) -> None:
        self._n = _native.SimpleDistributedQueue(_native_client(client), path)

    def __repr__(self) -> str:
        return f"<zkrecipes.SimpleDistributedQueue path={self.path!r}>"

    @property
    def path(self) -> str:
        """The queue's path."""
        return str(self._n.path)

    def offer(self, data: bytes) -> str:
        """Adds ``data`` at the tail; returns the item's node path. A lost reply raises
        ``OutcomeUnknownError`` (the item may be in the queue; it was not put twice)."""
        return str(self._n.offer(data).wait())

    async def offer_async(self, data: bytes) -> str:
        """:meth:`offer` for asyncio."""
        return str(await run(self._n.offer(data)))

    def take(self, timeout: Optional[float] = None) -> Optional[bytes]:
        """Removes and returns the head, waiting at most ``timeout`` seconds (None: no limit);
        None if the timeout passed first."""
        return self._n.take(timeout).wait()

    async def take_async(self, timeout: Optional[float] = None) -> Optional[bytes]:
        """:meth:`take` for asyncio. A task cancelled after the item was removed, before it got
        it, does not lose it: the item is offered again (at the tail), handed to nobody."""
        return await run(self._n.take(timeout))

    def peek(self) -> Optional[bytes]:
        """The head's data without removing it, or None when empty."""
        return self._n.peek().wait()

    async def peek_async(self) -> Optional[bytes]:
        """:meth:`peek` for asyncio."""
        return await run(self._n.peek())

    def poll(self) -> Optional[bytes]:
        """Removes and returns the head, or None at once when empty."""
        return self._n.poll().wait()

    async def poll_async(self) -> Optional[bytes]:
        """:meth:`poll` for asyncio."""
        return await run(self._n.poll())


class QueueItem:
    """One taken item. :attr:`data` and :attr:`fencing_token` are valid until :meth:`done` (or
    :meth:`fail`, :meth:`release`, :meth:`give_back`). ``with item:`` completes it when the
    block succeeds and fails it (the queue's :class:`ErrorMode`) when it raises. An item dropped
    without any of them has its lock released (with a lock path: another consumer takes it);
    without a lock path the take removed it and a dropped one is gone (:meth:`give_back` puts it
    back)."""

    def __init__(self, native: _native.QueueItem) -> None:
        self._n = native

    def __repr__(self) -> str:
        return f"<zkrecipes.QueueItem node={self.node!r} fencing_token={self.fencing_token}>"

    @property
    def data(self) -> bytes:
        """The item's (first) message."""
        return bytes(self._n.data)

    @property
    def messages(self) -> List[bytes]:
        """Every message of the item (several for Curator's putMulti)."""
        return [bytes(m) for m in self._n.messages]

    @property
    def fencing_token(self) -> int:
        """The czxid of this consumer's lock node: a later taker of the same item gets a larger
        one. Pass it to your sink, which refuses a token lower than one it has seen."""
        return int(self._n.fencing_token)

    @property
    def node(self) -> str:
        """The item's node name (``queue-…``)."""
        return str(self._n.node)

    @property
    def id(self) -> Optional[str]:
        """The item's id (a DistributedIdQueue's), else None."""
        return self._n.id

    def done(self) -> None:
        """Completes the item: one transaction checks our lock, deletes the item and the lock.
        Raises ``SessionExpiredError`` if our lock went with the session (another consumer may
        take the item) and ``NoNodeError`` if someone else removed the item: it was not
        completed by us. ``OutcomeUnknownError``: a reply was lost and the item is gone, so it
        may have been completed by us."""
        self._n.done().wait()

    async def done_async(self) -> None:
        """:meth:`done` for asyncio."""
        await run(self._n.done())

    def fail(self) -> None:
        """The consumer failed the item (Curator's consumer threw): with a lock path the queue's
        :class:`ErrorMode` requeues it at the tail (the default) or deletes it, in one
        transaction that checks our lock; the errors are :meth:`done`'s. Without a lock path the
        item was removed when taken: nothing to do."""
        self._n.fail().wait()

    async def fail_async(self) -> None:
        """:meth:`fail` for asyncio."""
        await run(self._n.fail())

    def release(self) -> None:
        """With a lock path, gives the item back where it was, without completing it (taken again
        next). Without one the take removed the item and this does nothing: see :meth:`give_back`."""
        self._n.release().wait()

    async def release_async(self) -> None:
        """:meth:`release` for asyncio."""
        await run(self._n.release())

    def give_back(self) -> None:
        """Gives the item back for another take without completing it, whatever the queue: with a
        lock path it is :meth:`release` (our lock goes; the item stayed in the queue); without
        one the item was removed when it was taken, so it is put back at the tail with its
        messages and its key (priority, delay, id), as a failed item is requeued. For a consumer
        that will not process an item nobody else has seen: consumption stays at most once. A
        put-back whose reply was lost is not resent: ``OutcomeUnknownError``. An item already
        completed, released or given back: ``InvalidArgumentError``."""
        self._n.give_back().wait()

    async def give_back_async(self) -> None:
        """:meth:`give_back` for asyncio."""
        await run(self._n.give_back())

    def __enter__(self) -> "QueueItem":
        """``with item:`` completes it if the body returns (:meth:`done`), fails it if the body
        raises an ``Exception`` (:meth:`fail`: the queue's :class:`ErrorMode`), and gives it back
        untouched (:meth:`give_back`) if the consumer was stopped rather than failed
        (``KeyboardInterrupt``, ``SystemExit``, a cancelled Task): a shutdown neither requeues
        an item at the tail nor deletes it under ``ErrorMode.DELETE``."""
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        if self._n.settled:
            return
        if exc_type is None:
            self.done()
        elif issubclass(exc_type, Exception):
            self.fail()
        else:
            self.give_back()

    async def __aenter__(self) -> "QueueItem":
        """``async with item:``: as ``with item:`` (see :meth:`__enter__`)."""
        return self

    async def __aexit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        if self._n.settled:
            return
        if exc_type is None:
            await self.done_async()
        elif issubclass(exc_type, Exception):
            await self.fail_async()
        else:
            await self.give_back_async()


_Q = TypeVar("_Q", bound="_QueueBase")


class _QueueBase:
    _KIND = "queue"

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        lock_path: Optional[str] = None,
        max_items: Optional[int] = None,
        error_mode: Optional[Union[ErrorMode, str]] = None,
    ) -> None:
        mode = None if error_mode is None else ErrorMode(error_mode).value
        self._n = _native.DistributedQueue(_native_client(client), path, self._KIND, lock_path, max_items, mode)

    @classmethod
    def _of(cls: Type[_Q], native: _native.DistributedQueue) -> _Q:
        q = cls.__new__(cls)
        q._n = native
        return q

    @property
    def error_mode(self) -> ErrorMode:
        """What :meth:`QueueItem.fail` does (Curator's setErrorMode); settable, and only with a
        lock path (``InvalidArgumentError`` otherwise)."""
        return ErrorMode(self._n.error_mode)

    @error_mode.setter
    def error_mode(self, mode: Union[ErrorMode, str]) -> None:
        self._n.error_mode = ErrorMode(mode).value

    def add_put_listener(self, listener: Callable[[QueuePut], None]) -> int:
        """Calls ``listener(put)`` with a :class:`QueuePut` after every put and put_multi made
        through this queue that succeeded (Curator's QueuePutListener), on the queue's library
        thread, one at a time, in order; returns an id."""
        if not callable(listener):
            raise TypeError("listener must be callable")

        def call(node: str, messages: List[bytes], multi: bool) -> None:
            listener(QueuePut(node, list(messages), multi))

        return int(self._n.add_put_listener(call))

    def remove_put_listener(self, listener_id: int) -> bool:
        """Removes a put listener; whether it was there."""
        return bool(self._n.remove_put_listener(listener_id))

    def __repr__(self) -> str:
        return f"<zkrecipes.{type(self).__name__} path={self.path!r} lock_path={self.lock_path!r}>"

    @property
    def path(self) -> str:
        """The queue's path."""
        return str(self._n.path)

    @property
    def lock_path(self) -> Optional[str]:
        """The lock path (exactly-once consumption), or None."""
        return self._n.lock_path

    def take(self, timeout: Optional[float] = None) -> Optional[QueueItem]:
        """The next item, waiting at most ``timeout`` seconds (None: no limit); None if the
        timeout passed first."""
        n = self._n.take(timeout).wait()
        return None if n is None else QueueItem(n)

    async def take_async(self, timeout: Optional[float] = None) -> Optional[QueueItem]:
        """:meth:`take` for asyncio. A task cancelled after the item was taken, before it got it,
        gives the item back: its lock goes, or, without a lock path, it is put back at the tail
        (with its key), handed to nobody."""
        n = await run(self._n.take(timeout))
        return None if n is None else QueueItem(n)

    def consume(self, timeout: Optional[float] = None) -> Iterator[QueueItem]:
        """Yields items as they come (``for item in queue.consume():``). Ends when no item came
        within ``timeout`` seconds (None: never) or the client is closed."""
        while True:
            try:
                item = self.take(timeout)
            except ClosedError:
                return
            if item is None:
                return
            yield item

    async def consume_async(self, timeout: Optional[float] = None) -> AsyncIterator[QueueItem]:
        """:meth:`consume` for asyncio (``async for item in queue.consume_async():``)."""
        while True:
            try:
                item = await self.take_async(timeout)
            except ClosedError:
                return
            if item is None:
                return
            yield item

    def __len__(self) -> int:
        return int(self._n.len().wait())

    async def len_async(self) -> int:
        """The number of items now, for asyncio."""
        return int(await run(self._n.len()))

    def add_listener(self, listener: Callable[[ConnectionState], None]) -> int:
        """Calls ``listener(state)`` on every connection-state change (Curator's consumers are
        never told: CURATOR-336), on the client's library thread; returns an id."""
        if not callable(listener):
            raise TypeError("listener must be callable")

        def call(state: str) -> None:
            listener(ConnectionState(state))

        return int(self._n.add_listener(call))

    def remove_listener(self, listener_id: int) -> bool:
        """Removes a listener; whether it was there."""
        return bool(self._n.remove_listener(listener_id))


class DistributedQueue(_QueueBase):
    """Curator's DistributedQueue: ``queue-<seq>`` nodes in Curator's framing, lowest first.
    With ``lock_path`` consumption is exactly once; ``max_items`` bounds puts."""

    def put(self, data: bytes, timeout: Optional[float] = None) -> bool:
        """Puts one item. With ``max_items``, waits at most ``timeout`` seconds for room: False
        if there was none in time."""
        return bool(self._n.put(data, None, timeout).wait())

    async def put_async(self, data: bytes, timeout: Optional[float] = None) -> bool:
        """:meth:`put` for asyncio."""
        return bool(await run(self._n.put(data, None, timeout)))

    def put_multi(self, messages: Sequence[bytes], timeout: Optional[float] = None) -> bool:
        """Puts ``messages`` (at least one) as one item (Curator's putMulti: one node, handed to
        one consumer together as :attr:`QueueItem.messages`). Waits for room as :meth:`put`."""
        return bool(self._n.put_multi(list(messages), None, timeout).wait())

    async def put_multi_async(self, messages: Sequence[bytes], timeout: Optional[float] = None) -> bool:
        """:meth:`put_multi` for asyncio."""
        return bool(await run(self._n.put_multi(list(messages), None, timeout)))


class DistributedIdQueue(_QueueBase):
    """Curator's DistributedIdQueue: items carry an id and can be removed by it."""

    _KIND = "id"

    def put(self, data: bytes, item_id: str, timeout: Optional[float] = None) -> bool:
        """Puts ``data`` with ``item_id`` (not empty)."""
        return bool(self._n.put(data, item_id, timeout).wait())

    async def put_async(self, data: bytes, item_id: str, timeout: Optional[float] = None) -> bool:
        """:meth:`put` for asyncio."""
        return bool(await run(self._n.put(data, item_id, timeout)))

    def remove(self, item_id: str) -> int:
        """Removes the items with ``item_id`` that no consumer holds; how many."""
        return int(self._n.remove(item_id).wait())

    async def remove_async(self, item_id: str) -> int:
        """:meth:`remove` for asyncio."""
        return int(await run(self._n.remove(item_id)))


class DistributedPriorityQueue(_QueueBase):
    """Curator's DistributedPriorityQueue: lower priorities come out first."""

    _KIND = "priority"

    def put(self, data: bytes, priority: int, timeout: Optional[float] = None) -> bool:
        """Puts ``data`` with ``priority`` (a 32-bit int, lower first)."""
        return bool(self._n.put(data, priority, timeout).wait())

    async def put_async(self, data: bytes, priority: int, timeout: Optional[float] = None) -> bool:
        """:meth:`put` for asyncio."""
        return bool(await run(self._n.put(data, priority, timeout)))

    def put_multi(self, messages: Sequence[bytes], priority: int, timeout: Optional[float] = None) -> bool:
        """Puts ``messages`` as one item with ``priority`` (Curator's putMulti(items, priority))."""
        return bool(self._n.put_multi(list(messages), priority, timeout).wait())

    async def put_multi_async(self, messages: Sequence[bytes], priority: int, timeout: Optional[float] = None) -> bool:
        """:meth:`put_multi` for asyncio."""
        return bool(await run(self._n.put_multi(list(messages), priority, timeout)))


class DistributedDelayQueue(_QueueBase):
    """Curator's DistributedDelayQueue: an item is handed out once its time has passed."""

    _KIND = "delay"

    def put(self, data: bytes, delay_until: float, timeout: Optional[float] = None) -> bool:
        """Puts ``data`` to be handed out from ``delay_until`` (seconds since the epoch, as
        ``time.time()``) on."""
        return bool(self._n.put(data, _epoch_ms(delay_until), timeout).wait())

    async def put_async(self, data: bytes, delay_until: float, timeout: Optional[float] = None) -> bool:
        """:meth:`put` for asyncio."""
        return bool(await run(self._n.put(data, _epoch_ms(delay_until), timeout)))

    def put_multi(self, messages: Sequence[bytes], delay_until: float, timeout: Optional[float] = None) -> bool:
        """Puts ``messages`` as one item handed out from ``delay_until`` (seconds since the epoch)
        on (Curator's putMulti(items, delayUntilEpoch))."""
        return bool(self._n.put_multi(list(messages), _epoch_ms(delay_until), timeout).wait())

    async def put_multi_async(
        self, messages: Sequence[bytes], delay_until: float, timeout: Optional[float] = None
    ) -> bool:
        """:meth:`put_multi` for asyncio."""
        return bool(await run(self._n.put_multi(list(messages), _epoch_ms(delay_until), timeout)))


def _epoch_ms(seconds: float) -> int:
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        raise TypeError(f"delay_until must be a number of seconds, not {type(seconds).__name__}")
    if not math.isfinite(seconds) or not -(2**63) <= seconds * 1000 < 2**63:
        raise InvalidArgumentError(
            f"delay_until must be a finite time in seconds since the epoch (within 64-bit milliseconds), not {seconds!r}"
        )
    return int(seconds * 1000)


class QueueSharder(Lifecycle):
    """Curator's QueueSharder: :class:`DistributedQueue` shards ``queue_path/queue-<UUID>``; when a
    shard holds ``new_queue_threshold`` items (checked every ``threshold_check`` seconds), the
    sharders' leader (a LeaderLatch at ``leader_path``, outside ``queue_path``) adds one, up to
    ``max_queues`` (Curator's defaults: 10000, 30 s, 10). With ``lock_path`` shard ``S`` locks its
    items under ``lock_path/S`` (exactly once). :meth:`get_queue` picks a shard for puts;
    :meth:`take` and :meth:`consume` take from every shard and follow new ones at once.

    ::

        with zkrecipes.QueueSharder(client, "/jobs", "/jobs-leader", lock_path="/jobs-locks") as s:
            s.get_queue().put(b"job")
            for item in s.consume(timeout=5):
                with item:
                    handle(item.data)
    """

    def __init__(
        self,
        client: Client,
        queue_path: str,
        leader_path: str,
        *,
        lock_path: Optional[str] = None,
        error_mode: Optional[Union[ErrorMode, str]] = None,
        new_queue_threshold: int = 10000,
        threshold_check: float = 30.0,
        max_queues: int = 10,
    ) -> None:
        mode = None if error_mode is None else ErrorMode(error_mode).value
        self._n = _native.QueueSharder(
            _native_client(client), queue_path, leader_path, lock_path, mode, new_queue_threshold,
            threshold_check, max_queues,
        )
        self._client = client

    def __repr__(self) -> str:
        return f"<zkrecipes.QueueSharder path={self.path!r} shards={self.shard_qty}>"

    @property
    def path(self) -> str:
        """The path of the shards."""
        return str(self._n.path)

    def start(self) -> None:
        """Makes the path, takes up its shards (or adds the first), joins the election. Once
        started the sharder stays alive until :meth:`close` (or the client's close), even if no reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start().wait()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._n.start())

    def close(self) -> None:
        """Stops counting and leaves the election; shards and items stay."""
        with _alive.closing(self._client, self):
            self._n.close().wait()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio."""
        with _alive.closing(self._client, self):
            await run(self._n.close())

    def get_queue(self) -> DistributedQueue:
        """A shard for puts (Curator's getQueue: one under the threshold, at random)."""
        return DistributedQueue._of(self._n.get_queue())

    @property
    def shard_qty(self) -> int:
        """The number of shards this sharder knows (Curator's getShardQty)."""
        return int(self._n.shard_qty)

    @property
    def queue_paths(self) -> List[str]:
        """The shards' paths, sorted (Curator's getQueuePaths)."""
        return list(self._n.queue_paths)

    @property
    def is_leader(self) -> bool:
        """Whether this sharder leads (adds shards)."""
        return bool(self._n.is_leader)

    def take(self, timeout: Optional[float] = None) -> Optional[QueueItem]:
        """The next item of any shard, waiting at most ``timeout`` seconds (None: no limit);
        None if the timeout passed first."""
        n = self._n.take(timeout).wait()
        return None if n is None else QueueItem(n)

    async def take_async(self, timeout: Optional[float] = None) -> Optional[QueueItem]:
        """:meth:`take` for asyncio. A task cancelled after the item was taken, before it got it,
        gives the item back: its lock goes, or, without a lock path, it is put back at the tail
        (with its key), handed to nobody."""
        n = await run(self._n.take(timeout))
        return None if n is None else QueueItem(n)

    def consume(self, timeout: Optional[float] = None) -> Iterator[QueueItem]:
        """Yields items of every shard as they come; ends when none came within ``timeout``
        seconds (None: never) or the sharder or client is closed."""
        while True:
            try:
                item = self.take(timeout)
            except ClosedError:
                return
            if item is None:
                return
            yield item

    async def consume_async(self, timeout: Optional[float] = None) -> AsyncIterator[QueueItem]:
        """:meth:`consume` for asyncio."""
        while True:
            try:
                item = await self.take_async(timeout)
            except ClosedError:
                return
            if item is None:
                return
            yield item
