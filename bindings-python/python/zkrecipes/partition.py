"""kazoo's recipes that Curator does not have: :class:`SetPartitioner`, :class:`NonBlockingLease`
and :class:`MultiNonBlockingLease`, on kazoo's node layout — a kazoo process and this package
(or any other face of zkrecipes) share one partitioner or lease path (docs/PARTITIONER.md).

The names and defaults are kazoo's (``kazoo.recipe.partitioner``, ``kazoo.recipe.lease``), so
code written for kazoo reads the same::

    qp = zkrecipes.SetPartitioner(client, "/work_queues", {"queue-1", "queue-2", "queue-3"})
    while True:
        if qp.failed:
            raise Exception("lost or unable to acquire the partitions")
        elif qp.release:
            qp.release_set()
        elif qp.acquired:
            for partition in qp:
                ...  # work on it
        elif qp.allocating:
            qp.wait_for_acquire()

    if zkrecipes.NonBlockingLease(client, "/db_leases/cleanup", timedelta(minutes=70)):
        do_the_hourly_cleanup()

Listeners run on a library thread (never the event loop's), one at a time, in order; they may
block and may call this API.
"""

from __future__ import annotations

import datetime
import os
import socket
import threading
import weakref
from types import TracebackType
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Type, Union

from . import _alive, _native
from ._base import Name
from ._call import run
from .client import Client, _native_client, _seconds
from .errors import InvalidArgumentError

__all__ = [
    "PartitionState",
    "SetPartitioner",
    "NonBlockingLease",
    "MultiNonBlockingLease",
]

Seconds = Union[int, float]
Duration = Union[datetime.timedelta, int, float]
StateListener = Callable[["PartitionState"], object]


class PartitionState(Name):
    """kazoo's ``PartitionState`` (the core's names)."""

    #: The set is being divided: waiting for the party to be stable for ``time_boundary``,
    #: then taking the locks of this member's partitions.
    ALLOCATING = "ALLOCATING"
    #: This member holds the lock of each of its partitions; iterate over the partitioner.
    ACQUIRED = "ACQUIRED"
    #: The party or the connection changed: stop working on the partitions and call
    #: :meth:`SetPartitioner.release_set` soon (the other members wait for it).
    RELEASE = "RELEASE"
    #: For good (session lost, client closed, an error, or :meth:`SetPartitioner.finish`):
    #: make a new partitioner to take part again.
    FAILURE = "FAILURE"


def _state(seen: Union["PartitionState", str]) -> "PartitionState":
    try:
        return PartitionState(seen)
    except ValueError:
        raise InvalidArgumentError(
            f"{seen!r} is not a partition state (ALLOCATING, ACQUIRED, RELEASE, FAILURE) (INVALID_ARGUMENT)"
        ) from None


def _partition_names(set: Iterable[str]) -> List[str]:
    if isinstance(set, (str, bytes)):
        raise TypeError("set must be a collection of str partition names, not a single str")
    names = list(set)
    for p in names:
        if not isinstance(p, str):
            raise TypeError(
                f"partitions must be str (node names; every face sorts them as Python sorts str), "
                f"not {type(p).__name__}: {p!r}"
            )
    return names


def _share_of(
    partition_func: Callable[[str, List[str], List[str]], Iterable[str]],
) -> Callable[[str, List[str], List[str]], List[str]]:
    """The user's ``partition_func`` with its answer made a list (a str is refused: its
    characters are no partition names)."""

    def share(identifier: str, members: List[str], set: List[str]) -> List[str]:
        answer = partition_func(identifier, members, set)
        if isinstance(answer, (str, bytes)):
            raise TypeError(f"partition_func must return an iterable of partition names, not {type(answer).__name__}")
        return list(answer)

    return share


class SetPartitioner:
    """kazoo's SetPartitioner: the members of a party at ``path`` divide ``set`` (partition names)
    among themselves, each partition to exactly one member, and divide it again when members
    come or go. kazoo processes on the same path take part on equal terms.

    Like kazoo's, the constructor joins the party and starts allocating (state
    :attr:`PartitionState.ALLOCATING`); pass ``start=False`` to join later with :meth:`start`
    or :meth:`start_async` (``with`` and ``async with`` start it if needed and :meth:`finish` at
    the end). ``identifier`` defaults to kazoo's ``"<fqdn>-<pid>"``; ``time_boundary`` (seconds
    the party must be unchanged before dividing) and ``max_reaction_time`` (seconds one attempt
    at a partition's lock waits before checking the party) default to kazoo's 30 and 1.
    ``state_change_event`` (a :class:`threading.Event`) is set on every state change, as
    kazoo's: at the latest when this object first reads the new state.

    ``partition_func`` is kazoo's: ``partition_func(identifier, members, set)`` returns the
    partitions this member takes (any iterable of names from ``set``), given the party's
    identifiers (in the server's listing order) and the set as given. Every member of a party
    must compute the same division (a kazoo member without one computes kazoo's default:
    members and partitions sorted, member ``i`` of ``n`` takes ``sorted(set)[i::n]``); a member
    that disagrees waits for locks another keeps, and no partition is ever held twice. It is
    called on a library thread (with the GIL) once per division; if it raises, or returns a
    name not in ``set`` or one twice, the partitioner becomes :attr:`~PartitionState.FAILURE`
    and leaves the party (the reason is logged on the ``zkrecipes`` logger).

    Beyond kazoo: a held lock deleted by someone else makes it :attr:`~PartitionState.RELEASE`;
    a member whose party node was deleted joins again; a closed client is
    :attr:`~PartitionState.FAILURE`; iterating yields nothing unless
    :attr:`~PartitionState.ACQUIRED`.
    """

    def __init__(
        self,
        client: Client,
        path: str,
        set: Iterable[str],
        identifier: Optional[str] = None,
        time_boundary: Seconds = 30,
        max_reaction_time: Seconds = 1,
        state_change_event: Optional[threading.Event] = None,
        start: bool = True,
        partition_func: Optional[Callable[[str, List[str], List[str]], Iterable[str]]] = None,
    ) -> None:
        if identifier is None:
            identifier = f"{socket.getfqdn()}-{os.getpid()}"
        if partition_func is not None and not callable(partition_func):
            raise TypeError(f"partition_func must be callable, not {type(partition_func).__name__}")
        self._p = _native.SetPartitioner(
            _native_client(client),
            path,
            _partition_names(set),
            identifier,
            _seconds("time_boundary", time_boundary),
            _seconds("max_reaction_time", max_reaction_time),
            None if partition_func is None else _share_of(partition_func),
        )
        self._client = client
        self._listener_ids: Dict[int, int] = {}
        self._started = False
        self.state_change_event = state_change_event
        # The state last read here: a reading that differs sets the event too, so a caller who
        # sees the new state finds the event set, as kazoo's (which sets both in one step); the
        # listener alone sets it a moment later, from the callback thread.
        self._seen = self._p.state
        if state_change_event is not None:
            self._p.add_listener(lambda _state: state_change_event.set())
        # FAILURE is for good (kazoo's callers make a new partitioner): no longer kept alive.
        me = weakref.ref(self)

        def _on_state(state: str) -> None:
            p = me()
            if p is not None and state == PartitionState.FAILURE.value:
                _alive.release(client, p)

        self._p.add_listener(_on_state)
        if start:
            self.start()

    def __repr__(self) -> str:
        return f"<zkrecipes.SetPartitioner path={self.path!r} identifier={self.identifier!r} state={self.state}>"

    def start(self) -> None:
        """Joins the party and starts allocating (done by the constructor unless ``start=False``).
        Once started the partitioner stays alive until :meth:`finish` (or the client's close),
        even if no reference to it is kept."""
        with _alive.starting(self._client, self):
            self._p.start().wait()
        self._started = True

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._p.start())
        self._started = True

    @property
    def path(self) -> str:
        """The partitioner's path."""
        return self._p.path

    @property
    def identifier(self) -> str:
        """This member's identifier in the party."""
        return self._p.identifier

    def _observed(self, state: str) -> PartitionState:
        if state != self._seen:
            self._seen = state
            if self.state_change_event is not None:
                self.state_change_event.set()
        return PartitionState(state)

    @property
    def state(self) -> PartitionState:
        """The state now."""
        return self._observed(self._p.state)

    @property
    def failed(self) -> bool:
        """The state is :attr:`PartitionState.FAILURE`."""
        return self.state is PartitionState.FAILURE

    @property
    def release(self) -> bool:
        """The state is :attr:`PartitionState.RELEASE`."""
        return self.state is PartitionState.RELEASE

    @property
    def allocating(self) -> bool:
        """The state is :attr:`PartitionState.ALLOCATING`."""
        return self.state is PartitionState.ALLOCATING

    @property
    def acquired(self) -> bool:
        """The state is :attr:`PartitionState.ACQUIRED`."""
        return self.state is PartitionState.ACQUIRED

    @property
    def partitions(self) -> List[str]:
        """This member's partitions, sorted, while :attr:`~PartitionState.ACQUIRED`; else ``[]``."""
        return self.snapshot()[1]

    def snapshot(self) -> Tuple[PartitionState, List[str]]:
        """``(state, partitions)`` in one reading."""
        state, parts = self._p.snapshot()
        return self._observed(state), parts

    def __iter__(self) -> Iterator[str]:
        """The partitions of this member (see :attr:`partitions`)."""
        return iter(self.partitions)

    def wait_for_acquire(self, timeout: Optional[Seconds] = 30) -> bool:
        """kazoo's ``wait_for_acquire``: waits while :attr:`~PartitionState.ALLOCATING`, at most
        ``timeout`` seconds (None: no limit); whether it is :attr:`~PartitionState.ACQUIRED`
        then."""
        return self._p.wait_for_acquire(timeout).wait()

    async def wait_for_acquire_async(self, timeout: Optional[Seconds] = 30) -> bool:
        """:meth:`wait_for_acquire` for asyncio."""
        return await run(self._p.wait_for_acquire(timeout))

    def wait_for_change(
        self, seen: Optional[PartitionState] = None, timeout: Optional[Seconds] = None
    ) -> PartitionState:
        """Waits until the state is no longer ``seen`` (default: the state now), at most
        ``timeout`` seconds; the state then."""
        seen = self.state if seen is None else _state(seen)
        return self._observed(self._p.wait_for_change(seen.value, timeout).wait())

    async def wait_for_change_async(
        self, seen: Optional[PartitionState] = None, timeout: Optional[Seconds] = None
    ) -> PartitionState:
        """:meth:`wait_for_change` for asyncio."""
        seen = self.state if seen is None else _state(seen)
        return self._observed(await run(self._p.wait_for_change(seen.value, timeout)))

    def release_set(self) -> None:
        """kazoo's ``release_set``: releases the partitions' locks and allocates again. Raises
        if a lock could not be released (the partitioner is then
        :attr:`~PartitionState.FAILURE`; the delete goes on in the background)."""
        self._p.release_set().wait()

    async def release_set_async(self) -> None:
        """:meth:`release_set` for asyncio."""
        await run(self._p.release_set())

    def finish(self) -> None:
        """kazoo's ``finish``: :attr:`~PartitionState.FAILURE` at once, then the locks are
        released and the party left. Finishing twice is fine."""
        with _alive.closing(self._client, self):
            self._p.finish().wait()

    async def finish_async(self) -> None:
        """:meth:`finish` for asyncio."""
        with _alive.closing(self._client, self):
            await run(self._p.finish())

    close = finish
    close_async = finish_async

    def add_listener(self, listener: StateListener) -> int:
        """Calls ``listener(state)`` with each new :class:`PartitionState`; returns an id."""
        if not callable(listener):
            raise TypeError("listener must be callable")
        lid = self._p.add_listener(lambda name: listener(PartitionState(name)))
        self._listener_ids[id(listener)] = lid
        return lid

    def remove_listener(self, listener: Union[int, StateListener]) -> bool:
        """Removes a listener (by id or the callable)."""
        if isinstance(listener, int):
            return self._p.remove_listener(listener)
        lid = self._listener_ids.pop(id(listener), None)
        return lid is not None and self._p.remove_listener(lid)

    def __enter__(self) -> "SetPartitioner":
        if not self._started:
            self.start()
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.finish()

    async def __aenter__(self) -> "SetPartitioner":
        if not self._started:
            await self.start_async()
        return self

    async def __aexit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        await self.finish_async()


def _duration(duration: Duration) -> float:
    if isinstance(duration, datetime.timedelta):
        duration = duration.total_seconds()
    return _seconds("duration", duration)


def _now(utcnow: Optional[Callable[[], datetime.datetime]]) -> Optional[float]:
    """kazoo's ``utcnow()`` (a naive UTC datetime, or an aware one) as Unix seconds."""
    if utcnow is None:
        return None
    now = utcnow()
    if not isinstance(now, datetime.datetime):
        raise TypeError(f"utcnow() must return a datetime, not {type(now).__name__}")
    if now.tzinfo is None:
        now = now.replace(tzinfo=datetime.timezone.utc)
    seconds = now.timestamp()
    if seconds < 0:
        raise InvalidArgumentError(f"utcnow() returned {now}, before 1970 (INVALID_ARGUMENT)")
    return seconds


def _end(seconds: Optional[float]) -> Optional[datetime.datetime]:
    if seconds is None:
        return None
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).replace(tzinfo=None)


class NonBlockingLease:
    """kazoo's NonBlockingLease: an exclusive lease on ``path`` until a wall-clock end, taken
    without waiting. The object is true when the lease was obtained: nobody else held an
    unexpired one, or we did (obtaining it again with the same ``identifier`` renews it).
    Nothing is released; the lease ends at ``now + duration`` (whole seconds, UTC).

    ``duration`` is a :class:`~datetime.timedelta` or seconds; ``identifier`` defaults to
    kazoo's ``socket.gethostname()`` (every process of one host shares the lease); ``utcnow``
    (kazoo's clock hook, for tests) returns a naive UTC datetime. ``timeout`` bounds the wait
    for the lease's lock (held by another contender for a few requests at most; None: no limit,
    as kazoo). Holders compare client clocks, which must be roughly synchronised, as in kazoo.
    A holder node that cannot be read raises :class:`~zkrecipes.CorruptedDataError` (kazoo
    raises a ``ValueError``) and is left as it is.

    The constructor blocks (as kazoo's); ``await NonBlockingLease.obtain_async(...)`` is the
    asyncio twin.
    """

    def __init__(
        self,
        client: Client,
        path: str,
        duration: Duration,
        identifier: Optional[str] = None,
        utcnow: Optional[Callable[[], datetime.datetime]] = None,
        timeout: Optional[Seconds] = None,
    ) -> None:
        self.path = path
        self.identifier = identifier if identifier is not None else socket.gethostname()
        self._set(_native.non_blocking_lease(*self._args(client, path, duration, utcnow, timeout)).wait())

    def _args(
        self,
        client: Client,
        path: str,
        duration: Duration,
        utcnow: Optional[Callable[[], datetime.datetime]],
        timeout: Optional[Seconds],
    ) -> Tuple[_native.Client, str, float, str, Optional[float], Optional[Seconds]]:
        return _native_client(client), path, _duration(duration), self.identifier, _now(utcnow), timeout

    def _set(self, result: Tuple[bool, Optional[float]]) -> None:
        self.obtained: bool = result[0]
        #: When our lease ends (naive UTC, whole seconds), if obtained.
        self.end: Optional[datetime.datetime] = _end(result[1])

    @classmethod
    async def obtain_async(
        cls,
        client: Client,
        path: str,
        duration: Duration,
        identifier: Optional[str] = None,
        utcnow: Optional[Callable[[], datetime.datetime]] = None,
        timeout: Optional[Seconds] = None,
    ) -> "NonBlockingLease":
        """The constructor, for asyncio."""
        lease = cls.__new__(cls)
        lease.path = path
        lease.identifier = identifier if identifier is not None else socket.gethostname()
        lease._set(await run(_native.non_blocking_lease(*lease._args(client, path, duration, utcnow, timeout))))
        return lease

    def __bool__(self) -> bool:
        return self.obtained

    def __repr__(self) -> str:
        return f"<zkrecipes.NonBlockingLease path={self.path!r} identifier={self.identifier!r} obtained={self.obtained}>"


class MultiNonBlockingLease:
    """kazoo's MultiNonBlockingLease: one of ``count`` leases, ``path/0`` … ``path/<count-1>``,
    tried in order (each as :class:`NonBlockingLease`); true when one was obtained, and
    :attr:`index` says which. At most ``count`` identifiers hold one at any time."""

    def __init__(
        self,
        client: Client,
        count: int,
        path: str,
        duration: Duration,
        identifier: Optional[str] = None,
        utcnow: Optional[Callable[[], datetime.datetime]] = None,
        timeout: Optional[Seconds] = None,
    ) -> None:
        self.path = path
        self.identifier = identifier if identifier is not None else socket.gethostname()
        self._set(_native.multi_non_blocking_lease(*self._args(client, count, path, duration, utcnow, timeout)).wait())

    def _args(
        self,
        client: Client,
        count: int,
        path: str,
        duration: Duration,
        utcnow: Optional[Callable[[], datetime.datetime]],
        timeout: Optional[Seconds],
    ) -> Tuple[_native.Client, int, str, float, str, Optional[float], Optional[Seconds]]:
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count must be an int, not {type(count).__name__}")
        return _native_client(client), count, path, _duration(duration), self.identifier, _now(utcnow), timeout

    def _set(self, result: Tuple[bool, Optional[int], Optional[float]]) -> None:
        self.obtained: bool = result[0]
        #: Which lease (``path/<index>``) was obtained, if one was.
        self.index: Optional[int] = result[1]
        #: When our lease ends (naive UTC, whole seconds), if obtained.
        self.end: Optional[datetime.datetime] = _end(result[2])

    @classmethod
    async def obtain_async(
        cls,
        client: Client,
        count: int,
        path: str,
        duration: Duration,
        identifier: Optional[str] = None,
        utcnow: Optional[Callable[[], datetime.datetime]] = None,
        timeout: Optional[Seconds] = None,
    ) -> "MultiNonBlockingLease":
        """The constructor, for asyncio."""
        lease = cls.__new__(cls)
        lease.path = path
        lease.identifier = identifier if identifier is not None else socket.gethostname()
        args = lease._args(client, count, path, duration, utcnow, timeout)
        lease._set(await run(_native.multi_non_blocking_lease(*args)))
        return lease

    def __bool__(self) -> bool:
        return self.obtained

    def __repr__(self) -> str:
        return (
            f"<zkrecipes.MultiNonBlockingLease path={self.path!r} identifier={self.identifier!r} "
            f"obtained={self.obtained} index={self.index}>"
        )
