"""Distributed counters: :class:`DistributedAtomicLong` / :class:`DistributedAtomicInteger` and
:class:`SharedCount`, with Curator 5.x's node layout (8 / 4 bytes, big-endian).

The Curator-style operations return an :class:`AtomicValue` whose ``succeeded`` must be checked,
as in Curator. Beyond Curator, :meth:`DistributedAtomicLong.add_and_get` returns the new value or
raises — it never fails silently, and concurrent adds from one process are combined into one
compare-and-set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import _native
from ._base import Lifecycle
from ._call import run
from ._native import AtomicStats, AtomicValue, VersionedValue
from .client import Client, ConnectionState, RetryPolicy, _seconds, _native_client
from .errors import CorruptedDataError

__all__ = [
    "AtomicStats",
    "AtomicValue",
    "VersionedValue",
    "PromotedToLock",
    "DistributedAtomicLong",
    "DistributedAtomicInteger",
    "SharedCount",
]


@dataclass(frozen=True)
class PromotedToLock:
    """Curator's PromotedToLock: when the optimistic tries fail, take an InterProcessMutex at
    ``lock_path`` (waiting at most ``max_lock_time`` seconds, None: without limit) and try again
    under it with ``retry`` (default: one try)."""

    lock_path: str
    max_lock_time: Optional[float] = None
    retry: Optional[RetryPolicy] = None

    def __post_init__(self) -> None:
        if not isinstance(self.lock_path, str):
            raise TypeError(f"lock_path must be a str, not {type(self.lock_path).__name__}")
        if self.max_lock_time is not None:
            _seconds("max_lock_time", self.max_lock_time)
        if self.retry is not None and not isinstance(self.retry, RetryPolicy):
            raise TypeError("retry must be a zkrecipes retry policy")


class _DistributedAtomicNumber:
    _BITS = 64

    def __init__(
        self,
        client: Client,
        path: str,
        retry: Optional[RetryPolicy] = None,
        promoted_to_lock: Optional[PromotedToLock] = None,
    ) -> None:
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a zkrecipes retry policy, not {type(retry).__name__}")
        if promoted_to_lock is not None and not isinstance(promoted_to_lock, PromotedToLock):
            raise TypeError("promoted_to_lock must be a zkrecipes.PromotedToLock")
        p = promoted_to_lock
        self._n = _native.DistributedAtomicNumber(
            _native_client(client),
            path,
            self._BITS,
            None if retry is None else retry._spec(),
            None if p is None else p.lock_path,
            None if p is None else p.max_lock_time,
            None if p is None or p.retry is None else p.retry._spec(),
        )

    def __repr__(self) -> str:
        return f"<zkrecipes.{type(self).__name__} path={self.path!r}>"

    @property
    def path(self) -> str:
        """The counter's path."""
        return str(self._n.path)

    def _op(self, op: str, a: Optional[int] = None, b: Optional[int] = None) -> "_native.Call[Any]":
        return self._n.call(op, a, b)

    def get(self) -> AtomicValue:
        """The current value (0 if the node does not exist); always succeeds."""
        v: AtomicValue = self._op("get").wait()
        return v

    async def get_async(self) -> AtomicValue:
        """:meth:`get` for asyncio."""
        v: AtomicValue = await run(self._op("get"))
        return v

    def add(self, delta: int) -> AtomicValue:
        """Curator's add: check ``succeeded`` (False: nothing was written)."""
        v: AtomicValue = self._op("add", delta).wait()
        return v

    async def add_async(self, delta: int) -> AtomicValue:
        """:meth:`add` for asyncio."""
        v: AtomicValue = await run(self._op("add", delta))
        return v

    def subtract(self, delta: int) -> AtomicValue:
        """Curator's subtract: check ``succeeded``."""
        v: AtomicValue = self._op("subtract", delta).wait()
        return v

    async def subtract_async(self, delta: int) -> AtomicValue:
        """:meth:`subtract` for asyncio."""
        v: AtomicValue = await run(self._op("subtract", delta))
        return v

    def increment(self) -> AtomicValue:
        """Curator's increment: check ``succeeded``."""
        v: AtomicValue = self._op("increment").wait()
        return v

    async def increment_async(self) -> AtomicValue:
        """:meth:`increment` for asyncio."""
        v: AtomicValue = await run(self._op("increment"))
        return v

    def decrement(self) -> AtomicValue:
        """Curator's decrement: check ``succeeded``."""
        v: AtomicValue = self._op("decrement").wait()
        return v

    async def decrement_async(self) -> AtomicValue:
        """:meth:`decrement` for asyncio."""
        v: AtomicValue = await run(self._op("decrement"))
        return v

    def compare_and_set(self, expected: int, new: int) -> AtomicValue:
        """Sets ``new`` only if the value is ``expected``."""
        v: AtomicValue = self._op("compare_and_set", expected, new).wait()
        return v

    async def compare_and_set_async(self, expected: int, new: int) -> AtomicValue:
        """:meth:`compare_and_set` for asyncio."""
        v: AtomicValue = await run(self._op("compare_and_set", expected, new))
        return v

    def try_set(self, value: int) -> AtomicValue:
        """Sets ``value`` with the retry policy's optimistic tries: check ``succeeded``."""
        v: AtomicValue = self._op("try_set", value).wait()
        return v

    async def try_set_async(self, value: int) -> AtomicValue:
        """:meth:`try_set` for asyncio."""
        v: AtomicValue = await run(self._op("try_set", value))
        return v

    def force_set(self, value: int) -> None:
        """Sets ``value`` unconditionally."""
        self._op("force_set", value).wait()

    async def force_set_async(self, value: int) -> None:
        """:meth:`force_set` for asyncio."""
        await run(self._op("force_set", value))

    def initialize(self, value: int) -> bool:
        """Creates the counter with ``value`` if it does not exist; returns whether it did."""
        return bool(self._op("initialize", value).wait())

    async def initialize_async(self, value: int) -> bool:
        """:meth:`initialize` for asyncio."""
        return bool(await run(self._op("initialize", value)))

    def add_and_get(self, delta: int, timeout: Optional[float] = None) -> int:
        """Adds ``delta`` and returns the new value, or raises (never fails silently):
        :class:`~zkrecipes.TimeoutError` after ``timeout`` seconds (None or ``math.inf``: no
        limit), :class:`~zkrecipes.OverflowError` if the sum does not fit, and
        :class:`~zkrecipes.OutcomeUnknownError` if a write's reply was lost (it is never retried
        into a double count)."""
        return int(self._n.call("add_and_get", delta, None, timeout).wait())

    async def add_and_get_async(self, delta: int, timeout: Optional[float] = None) -> int:
        """:meth:`add_and_get` for asyncio."""
        return int(await run(self._n.call("add_and_get", delta, None, timeout)))


class DistributedAtomicLong(_DistributedAtomicNumber):
    """Curator's DistributedAtomicLong: a 64-bit counter (8 bytes, big-endian; empty = 0)."""

    _BITS = 64


class DistributedAtomicInteger(_DistributedAtomicNumber):
    """Curator's DistributedAtomicInteger: a 32-bit counter (4 bytes, big-endian; empty = 0).
    Arguments outside 32 bits raise :class:`~zkrecipes.InvalidArgumentError`."""

    _BITS = 32


class SharedCount(Lifecycle):
    """Curator's SharedCount: a 4-byte count every participant sees, with change listeners.

    ``with SharedCount(client, path, seed) as count:`` starts and closes it.
    """

    def __init__(self, client: Client, path: str, seed: int = 0) -> None:
        self._n = _native.SharedCount(_native_client(client), path, seed)

    def __repr__(self) -> str:
        return f"<zkrecipes.SharedCount path={self.path!r} count={self.get_count()}>"

    @property
    def path(self) -> str:
        """The count's path."""
        return str(self._n.path)

    def start(self) -> None:
        """Creates the node with the seed if missing, reads it and starts watching."""
        self._n.start().wait()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        await run(self._n.start())

    def get_count(self) -> int:
        """The count as last seen (the seed before :meth:`start`);
        :class:`~zkrecipes.CorruptedDataError` while the node holds data that is not a count."""
        return int(self._n.get_count())

    def get_versioned_value(self) -> VersionedValue:
        """The count with the data version it was read at (for :meth:`try_set_count`)."""
        v: VersionedValue = self._n.get_versioned_value()
        return v

    def set_count(self, count: int) -> None:
        """Sets the count unconditionally."""
        self._n.set_count(count).wait()

    async def set_count_async(self, count: int) -> None:
        """:meth:`set_count` for asyncio."""
        await run(self._n.set_count(count))

    def try_set_count(self, previous: VersionedValue, count: int) -> bool:
        """Sets the count only if it is still at ``previous``'s version; returns whether it did."""
        return self._n.try_set_count(previous, count).wait()

    async def try_set_count_async(self, previous: VersionedValue, count: int) -> bool:
        """:meth:`try_set_count` for asyncio."""
        return await run(self._n.try_set_count(previous, count))

    def add_listener(
        self,
        count_has_changed: Callable[[int], object],
        state_changed: Optional[Callable[[ConnectionState], object]] = None,
        *,
        error: Optional[Callable[[CorruptedDataError], object]] = None,
    ) -> int:
        """Curator's SharedCountListener: ``count_has_changed(new_count)`` on every change (by any
        client), ``state_changed(state)`` on connection-state changes, and ``error(exc)`` (a
        :class:`~zkrecipes.CorruptedDataError`) when someone overwrites the node with data that is
        not a count (:meth:`get_count` raises it too, until a valid count is written). On a
        library thread (never the event loop's), one call at a time, in order; they may block and
        call this API. Returns an id for :meth:`remove_listener`."""
        if not callable(count_has_changed):
            raise TypeError("count_has_changed must be callable")

        def call(kind: str, value: object) -> None:
            if kind == "count" and isinstance(value, VersionedValue):
                count_has_changed(value.value)
            elif kind == "state" and state_changed is not None and isinstance(value, str):
                state_changed(ConnectionState(value))
            elif kind == "error" and error is not None and isinstance(value, CorruptedDataError):
                error(value)

        return self._n.add_listener(call)

    def remove_listener(self, listener_id: int) -> bool:
        """Removes a listener by id."""
        return bool(self._n.remove_listener(listener_id))

    def close(self) -> None:
        """Stops watching (no listener is called after this returns). The node stays."""
        self._n.close()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio (it returns at once either way)."""
        self.close()



