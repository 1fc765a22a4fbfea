"""Distributed counters: :class:`DistributedAtomicLong` / :class:`DistributedAtomicInteger` and
:class:`SharedCount`, with Curator 5.x's node layout (8 / 4 bytes, big-endian).

The Curator-style operations return an :class:`AtomicValue` whose ``succeeded`` must be checked,
as in Curator. Beyond Curator, :meth:`DistributedAtomicLong.add_and_get` returns the new value or
raises — it never fails silently, and concurrent adds from one process are combined into one
compare-and-set.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import TracebackType
from typing import Callable, Optional, Type

from . import _native
from ._native import AtomicStats, AtomicValue, VersionedValue
from .client import Client, ConnectionState, RetryPolicy, _seconds
from .locks import _check_timeout, _native_client

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


def _int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return value


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

    def _call(self, op: str, a: int = 0, b: int = 0) -> AtomicValue:
        v: AtomicValue = self._n.call(op, a, b)
        return v

    async def _call_async(self, op: str, a: int = 0, b: int = 0) -> AtomicValue:
        v: AtomicValue = await self._n.call_async(asyncio.get_running_loop(), op, a, b)
        return v

    def get(self) -> AtomicValue:
        """The current value (0 if the node does not exist); always succeeds."""
        return self._call("get")

    async def get_async(self) -> AtomicValue:
        """:meth:`get` for asyncio."""
        return await self._call_async("get")

    def add(self, delta: int) -> AtomicValue:
        """Curator's add: check ``succeeded`` (False: nothing was written)."""
        return self._call("add", _int("delta", delta))

    async def add_async(self, delta: int) -> AtomicValue:
        """:meth:`add` for asyncio."""
        return await self._call_async("add", _int("delta", delta))

    def subtract(self, delta: int) -> AtomicValue:
        """Curator's subtract: check ``succeeded``."""
        return self._call("subtract", _int("delta", delta))

    async def subtract_async(self, delta: int) -> AtomicValue:
        """:meth:`subtract` for asyncio."""
        return await self._call_async("subtract", _int("delta", delta))

    def increment(self) -> AtomicValue:
        """Curator's increment: check ``succeeded``."""
        return self._call("increment")

    async def increment_async(self) -> AtomicValue:
        """:meth:`increment` for asyncio."""
        return await self._call_async("increment")

    def decrement(self) -> AtomicValue:
        """Curator's decrement: check ``succeeded``."""
        return self._call("decrement")

    async def decrement_async(self) -> AtomicValue:
        """:meth:`decrement` for asyncio."""
        return await self._call_async("decrement")

    def compare_and_set(self, expected: int, new: int) -> AtomicValue:
        """Sets ``new`` only if the value is ``expected``."""
        return self._call("compare_and_set", _int("expected", expected), _int("new", new))

    async def compare_and_set_async(self, expected: int, new: int) -> AtomicValue:
        """:meth:`compare_and_set` for asyncio."""
        return await self._call_async("compare_and_set", _int("expected", expected), _int("new", new))

    def try_set(self, value: int) -> AtomicValue:
        """Sets ``value`` with the retry policy's optimistic tries: check ``succeeded``."""
        return self._call("try_set", _int("value", value))

    async def try_set_async(self, value: int) -> AtomicValue:
        """:meth:`try_set` for asyncio."""
        return await self._call_async("try_set", _int("value", value))

    def force_set(self, value: int) -> None:
        """Sets ``value`` unconditionally."""
        self._n.call("force_set", _int("value", value))

    async def force_set_async(self, value: int) -> None:
        """:meth:`force_set` for asyncio."""
        await self._n.call_async(asyncio.get_running_loop(), "force_set", _int("value", value))

    def initialize(self, value: int) -> bool:
        """Creates the counter with ``value`` if it does not exist; returns whether it did."""
        return bool(self._n.call("initialize", _int("value", value)))

    async def initialize_async(self, value: int) -> bool:
        """:meth:`initialize` for asyncio."""
        return bool(await self._n.call_async(asyncio.get_running_loop(), "initialize", _int("value", value)))

    def add_and_get(self, delta: int, timeout: Optional[float] = None) -> int:
        """Adds ``delta`` and returns the new value, or raises (never fails silently):
        :class:`~zkrecipes.TimeoutError` after ``timeout`` seconds, and
        :class:`~zkrecipes.OutcomeUnknownError` if a write's reply was lost (it is never retried
        into a double count)."""
        return int(self._n.call("add_and_get", _int("delta", delta), 0, _check_timeout(timeout)))

    async def add_and_get_async(self, delta: int, timeout: Optional[float] = None) -> int:
        """:meth:`add_and_get` for asyncio."""
        loop = asyncio.get_running_loop()
        return int(await self._n.call_async(loop, "add_and_get", _int("delta", delta), 0, _check_timeout(timeout)))


class DistributedAtomicLong(_DistributedAtomicNumber):
    """Curator's DistributedAtomicLong: a 64-bit counter (8 bytes, big-endian; empty = 0)."""

    _BITS = 64


class DistributedAtomicInteger(_DistributedAtomicNumber):
    """Curator's DistributedAtomicInteger: a 32-bit counter (4 bytes, big-endian; empty = 0).
    Values outside 32 bits raise :class:`~zkrecipes.InvalidArgumentError`."""

    _BITS = 32


class SharedCount:
    """Curator's SharedCount: a 4-byte count every participant sees, with change listeners.

    ``with SharedCount(client, path, seed) as count:`` starts and closes it.
    """

    def __init__(self, client: Client, path: str, seed: int = 0) -> None:
        self._n = _native.SharedCount(_native_client(client), path, _int("seed", seed))

    def __repr__(self) -> str:
        return f"<zkrecipes.SharedCount path={self.path!r} count={self.get_count()}>"

    @property
    def path(self) -> str:
        """The count's path."""
        return str(self._n.path)

    def start(self) -> None:
        """Creates the node with the seed if missing, reads it and starts watching."""
        self._n.start()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        await self._n.start_async(asyncio.get_running_loop())

    def get_count(self) -> int:
        """The count as last seen (the seed before :meth:`start`)."""
        return int(self._n.get_count())

    def get_versioned_value(self) -> VersionedValue:
        """The count with the data version it was read at (for :meth:`try_set_count`)."""
        v: VersionedValue = self._n.get_versioned_value()
        return v

    def set_count(self, count: int) -> None:
        """Sets the count unconditionally."""
        self._n.set_count(_int("count", count))

    async def set_count_async(self, count: int) -> None:
        """:meth:`set_count` for asyncio."""
        await self._n.set_count_async(asyncio.get_running_loop(), _int("count", count))

    def try_set_count(self, previous: VersionedValue, count: int) -> bool:
        """Sets the count only if it is still at ``previous``'s version; returns whether it did."""
        return bool(self._n.try_set_count(previous, _int("count", count)))

    async def try_set_count_async(self, previous: VersionedValue, count: int) -> bool:
        """:meth:`try_set_count` for asyncio."""
        return bool(await self._n.try_set_count_async(asyncio.get_running_loop(), previous, _int("count", count)))

    def add_listener(
        self,
        count_has_changed: Callable[[int], object],
        state_changed: Optional[Callable[[ConnectionState], object]] = None,
    ) -> int:
        """Curator's SharedCountListener: ``count_has_changed(new_count)`` on every change (by any
        client), ``state_changed(state)`` on connection-state changes; on a library thread, one
        call at a time. Returns an id for :meth:`remove_listener`."""
        if not callable(count_has_changed):
            raise TypeError("count_has_changed must be callable")

        def call(kind: str, value: object) -> None:
            if kind == "count" and isinstance(value, VersionedValue):
                count_has_changed(value.value)
            elif kind == "state" and state_changed is not None and isinstance(value, str):
                state_changed(ConnectionState(value))

        return int(self._n.add_listener(call))

    def remove_listener(self, listener_id: int) -> bool:
        """Removes a listener by id."""
        return bool(self._n.remove_listener(listener_id))

    def close(self) -> None:
        """Stops watching (no listener is called after this returns). The node stays."""
        self._n.close()

    def __enter__(self) -> "SharedCount":
        self.start()
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()

    async def __aenter__(self) -> "SharedCount":
        await self.start_async()
        return self

    async def __aexit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()


