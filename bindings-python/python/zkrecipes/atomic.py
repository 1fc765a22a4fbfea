"""Distributed counters and values: :class:`DistributedAtomicLong` /
:class:`DistributedAtomicInteger`, :class:`SharedCount`, :class:`DistributedAtomicValue`,
:class:`SharedValue` and :class:`CachedAtomicLong` / :class:`CachedAtomicInteger`, with Curator
5.x's node layout (counters: 8 / 4 bytes, big-endian; values: the bytes as they are).

The Curator-style operations return an :class:`AtomicValue` whose ``succeeded`` must be checked,
as in Curator. Beyond Curator, :meth:`DistributedAtomicLong.add_and_get` returns the new value or
raises — it never fails silently, and concurrent adds from one process are combined into one
compare-and-set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

from . import _alive, _native
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
    "SharedValue",
    "DistributedAtomicValue",
    "CachedAtomicLong",
    "CachedAtomicInteger",
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


def _options(
    retry: Optional[RetryPolicy], promoted_to_lock: Optional[PromotedToLock]
) -> Tuple[Optional[_native.RetrySpec], Optional[PromotedToLock]]:
    """Checks a distributed atomic's options; the retry policy as the native layer takes it."""
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise TypeError(f"retry must be a zkrecipes retry policy, not {type(retry).__name__}")
    if promoted_to_lock is not None and not isinstance(promoted_to_lock, PromotedToLock):
        raise TypeError("promoted_to_lock must be a zkrecipes.PromotedToLock")
    return (None if retry is None else retry._spec()), promoted_to_lock


class _DistributedAtomicNumber:
    _BITS = 64

    def __init__(
        self,
        client: Client,
        path: str,
        retry: Optional[RetryPolicy] = None,
        promoted_to_lock: Optional[PromotedToLock] = None,
    ) -> None:
        retry_spec, p = _options(retry, promoted_to_lock)
        self._n = _native.DistributedAtomicNumber(
            _native_client(client),
            path,
            self._BITS,
            retry_spec,
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
        """Sets ``value`` unconditionally.

        After a lost reply it is resent only if certainly not applied (the node unchanged, or one
        other write further): :class:`~zkrecipes.OutcomeUnknownError` when the node moved on
        further, is gone or cannot be read again (ours may have been applied and overwritten since;
        Curator resends it blindly, over any write that landed after it).
        """
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
        self._client = client

    def __repr__(self) -> str:
        return f"<zkrecipes.SharedCount path={self.path!r} count={self.get_count()}>"

    @property
    def path(self) -> str:
        """The count's path."""
        return str(self._n.path)

    def start(self) -> None:
        """Creates the node with the seed if missing, reads it and starts watching. Once
        started it stays alive until :meth:`close` (or the client's close), even if no
        reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start().wait()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._n.start())

    def get_count(self) -> int:
        """The count as last seen (the seed before :meth:`start`);
        :class:`~zkrecipes.CorruptedDataError` while the node holds data that is not a count."""
        return int(self._n.get_count())

    def get_versioned_value(self) -> VersionedValue[int]:
        """The count with the data version it was read at (for :meth:`try_set_count`)."""
        v: VersionedValue[int] = self._n.get_versioned_value()
        return v

    def set_count(self, count: int) -> None:
        """Sets the count unconditionally.

        After a lost reply it is resent only if certainly not applied (the node unchanged, or one
        other write further): :class:`~zkrecipes.OutcomeUnknownError` when the node moved on
        further, is gone or cannot be read again (ours may have been applied and overwritten since;
        Curator resends it blindly, over any write that landed after it).
        """
        self._n.set_count(count).wait()

    async def set_count_async(self, count: int) -> None:
        """:meth:`set_count` for asyncio."""
        await run(self._n.set_count(count))

    def try_set_count(self, previous: VersionedValue[int], count: int) -> bool:
        """Sets the count only if it is still at ``previous``'s version; returns whether it did."""
        return self._n.try_set_count(previous, count).wait()

    async def try_set_count_async(self, previous: VersionedValue[int], count: int) -> bool:
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
        with _alive.closing(self._client, self):
            self._n.close()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio (it returns at once either way)."""
        self.close()


class SharedValue(Lifecycle):
    """Curator's SharedValue: bytes every participant sees, with versioned (compare-and-set)
    writes and change listeners. SharedCount is this over a 4-byte int.

    ``with SharedValue(client, path, seed) as value:`` starts and closes it. A write whose reply
    is lost is never blindly retried: :class:`~zkrecipes.OutcomeUnknownError` when its fate
    cannot be known.
    """

    def __init__(self, client: Client, path: str, seed: bytes = b"") -> None:
        self._n = _native.SharedValue(_native_client(client), path, seed)
        self._client = client

    def __repr__(self) -> str:
        return f"<zkrecipes.SharedValue path={self.path!r} value={self.get_value()!r}>"

    @property
    def path(self) -> str:
        """The value's path."""
        return str(self._n.path)

    def start(self) -> None:
        """Creates the node with the seed if missing, reads it and starts watching. Once
        started it stays alive until :meth:`close` (or the client's close), even if no
        reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start().wait()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._n.start())

    def get_value(self) -> bytes:
        """The value as last seen (the seed before :meth:`start`); no server call."""
        return self.get_versioned_value().value

    def get_versioned_value(self) -> VersionedValue[bytes]:
        """The value with the data version it was read at (for :meth:`try_set_value`)."""
        v: VersionedValue[bytes] = self._n.get_versioned_value()
        return v

    def set_value(self, value: bytes) -> None:
        """Sets the value unconditionally.

        After a lost reply it is resent only if certainly not applied (the node unchanged, or one
        other write further): :class:`~zkrecipes.OutcomeUnknownError` when the node moved on
        further, is gone or cannot be read again (ours may have been applied and overwritten since;
        Curator resends it blindly, over any write that landed after it).
        """
        self._n.set_value(value).wait()

    async def set_value_async(self, value: bytes) -> None:
        """:meth:`set_value` for asyncio."""
        await run(self._n.set_value(value))

    def try_set_value(self, previous: VersionedValue[bytes], value: bytes) -> bool:
        """Sets the value only if it is still at ``previous`` (from
        :meth:`get_versioned_value`); returns whether it did. When it did not, the fresh value has
        been read for the next try."""
        return self._n.try_set_value(previous, value).wait()

    async def try_set_value_async(self, previous: VersionedValue[bytes], value: bytes) -> bool:
        """:meth:`try_set_value` for asyncio."""
        return await run(self._n.try_set_value(previous, value))

    def add_listener(
        self,
        value_has_changed: Callable[[bytes], object],
        state_changed: Optional[Callable[[ConnectionState], object]] = None,
    ) -> int:
        """Curator's SharedValueListener: ``value_has_changed(new_value)`` on every change (by any
        client) and ``state_changed(state)`` on connection-state changes (Curator's listener is a
        connection-state listener too). On a library thread (never the event loop's), one call at a
        time, in order; they may block and call this API. Returns an id for
        :meth:`remove_listener`."""
        if not callable(value_has_changed):
            raise TypeError("value_has_changed must be callable")

        def call(kind: str, value: object) -> None:
            if kind == "value" and isinstance(value, VersionedValue) and isinstance(value.value, bytes):
                value_has_changed(value.value)
            elif kind == "state" and state_changed is not None and isinstance(value, str):
                state_changed(ConnectionState(value))

        return self._n.add_listener(call)

    def remove_listener(self, listener_id: int) -> bool:
        """Removes a listener by id."""
        return bool(self._n.remove_listener(listener_id))

    def close(self) -> None:
        """Stops watching (no listener is called after this returns). The node stays."""
        with _alive.closing(self._client, self):
            self._n.close()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio (it returns at once either way)."""
        self.close()


class DistributedAtomicValue:
    """Curator's DistributedAtomicValue: bytes set atomically in one node. Every method but
    :meth:`get` may fail to set: check ``succeeded``. Values are ``bytes``, or None where the node
    does not exist (Curator's null). :meth:`try_set` first tries optimistically with ``retry``
    (default: the client's policy), then, with ``promoted_to_lock``, the same under an
    InterProcessMutex. A write whose reply is lost is never blindly retried:
    :class:`~zkrecipes.OutcomeUnknownError` when its fate cannot be known."""

    def __init__(
        self,
        client: Client,
        path: str,
        retry: Optional[RetryPolicy] = None,
        promoted_to_lock: Optional[PromotedToLock] = None,
    ) -> None:
        retry_spec, p = _options(retry, promoted_to_lock)
        self._n = _native.DistributedAtomicValue(
            _native_client(client),
            path,
            retry_spec,
            None if p is None else p.lock_path,
            None if p is None else p.max_lock_time,
            None if p is None or p.retry is None else p.retry._spec(),
        )

    def __repr__(self) -> str:
        return f"<zkrecipes.DistributedAtomicValue path={self.path!r}>"

    @property
    def path(self) -> str:
        """The value's path."""
        return str(self._n.path)

    def get(self) -> AtomicValue[Optional[bytes]]:
        """The current bytes (None if the node does not exist); always succeeds."""
        return self._n.get().wait()

    async def get_async(self) -> AtomicValue[Optional[bytes]]:
        """:meth:`get` for asyncio."""
        return await run(self._n.get())

    def compare_and_set(self, expected: bytes, new: bytes) -> AtomicValue[Optional[bytes]]:
        """Sets ``new`` only if the node holds exactly ``expected`` (one try; a missing node never
        matches)."""
        return self._n.compare_and_set(expected, new).wait()

    async def compare_and_set_async(self, expected: bytes, new: bytes) -> AtomicValue[Optional[bytes]]:
        """:meth:`compare_and_set` for asyncio."""
        return await run(self._n.compare_and_set(expected, new))

    def try_set(self, value: bytes) -> AtomicValue[Optional[bytes]]:
        """Sets ``value`` with the optimistic tries (and the promoted lock): check ``succeeded``."""
        return self._n.try_set(value).wait()

    async def try_set_async(self, value: bytes) -> AtomicValue[Optional[bytes]]:
        """:meth:`try_set` for asyncio."""
        return await run(self._n.try_set(value))

    def force_set(self, value: bytes) -> None:
        """Sets ``value`` unconditionally, creating the node if needed.

        After a lost reply it is resent only if certainly not applied (the node unchanged, or one
        other write further): :class:`~zkrecipes.OutcomeUnknownError` when the node moved on
        further, is gone or cannot be read again (ours may have been applied and overwritten since;
        Curator resends it blindly, over any write that landed after it).
        """
        self._n.force_set(value).wait()

    async def force_set_async(self, value: bytes) -> None:
        """:meth:`force_set` for asyncio."""
        await run(self._n.force_set(value))

    def initialize(self, value: bytes) -> bool:
        """Creates the node with ``value`` if it does not exist; returns whether it did."""
        return bool(self._n.initialize(value).wait())

    async def initialize_async(self, value: bytes) -> bool:
        """:meth:`initialize` for asyncio."""
        return bool(await run(self._n.initialize(value)))


class _CachedAtomicNumber:
    _COUNTER: type = _DistributedAtomicNumber

    def __init__(self, counter: _DistributedAtomicNumber, cache_factor: int) -> None:
        if not isinstance(counter, self._COUNTER):
            raise TypeError(f"counter must be a zkrecipes.{self._COUNTER.__name__}, not {type(counter).__name__}")
        self._n = _native.CachedAtomicNumber(counter._n, cache_factor)
        self._counter = counter

    def __repr__(self) -> str:
        return f"<zkrecipes.{type(self).__name__} path={self._counter.path!r} cache_factor={self.cache_factor}>"

    @property
    def counter(self) -> _DistributedAtomicNumber:
        """The counter ranges are reserved from."""
        return self._counter

    @property
    def cache_factor(self) -> int:
        """How many ids one reservation takes."""
        return int(self._n.cache_factor)

    def next(self) -> AtomicValue:
        """Curator's next: the next id is ``post_value`` (``pre_value + 1``), from the range
        reserved last; when it is used up, one Curator-style ``add(cache_factor)`` reserves the
        next. Check ``succeeded`` (False: the reservation gave up against other writers, nothing
        handed out). After an error the next call reserves a fresh range: ids may be skipped,
        never handed out twice across processes. Thread-safe."""
        v: AtomicValue = self._n.next().wait()
        return v

    async def next_async(self) -> AtomicValue:
        """:meth:`next` for asyncio."""
        v: AtomicValue = await run(self._n.next())
        return v


class CachedAtomicLong(_CachedAtomicNumber):
    """Curator's CachedAtomicLong(atomic_long, cache_factor): ids handed out from ranges of a
    :class:`DistributedAtomicLong`, ``cache_factor`` (at least 1) reserved at a time."""

    _COUNTER = DistributedAtomicLong

    def __init__(self, counter: DistributedAtomicLong, cache_factor: int) -> None:
        super().__init__(counter, cache_factor)


class CachedAtomicInteger(_CachedAtomicNumber):
    """Curator's CachedAtomicInteger: :class:`CachedAtomicLong` over a
    :class:`DistributedAtomicInteger`."""

    _COUNTER = DistributedAtomicInteger

    def __init__(self, counter: DistributedAtomicInteger, cache_factor: int) -> None:
        super().__init__(counter, cache_factor)
