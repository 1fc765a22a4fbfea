"""Curator's lock family: :class:`InterProcessMutex` (reentrant, per owner) and friends.

Owners: by default the current thread, or inside a coroutine the current asyncio Task; pass
``owner=zkrecipes.Owner()`` to acquire in one place and release in another. Blocking acquires
release the GIL while they wait and Ctrl-C interrupts them within ~50 ms, deleting the lock node
they created. Each hold has a fencing token (the lock node's czxid) that strictly increases from
one holder to the next.

Cohort handoffs (``InterProcessMutex(client, path, cohort=CohortOptions(...))``, see
:class:`CohortOptions`): the owners of one mutex object queue in memory behind its one lock node
and a release hands the hold to the next of them without a ZooKeeper round trip, within a
fairness bound. Holders of one node share its czxid: fence with
:attr:`InterProcessMutex.fencing_token_wide`.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Callable, Coroutine, List, Optional, Sequence, Tuple, Type, TypeVar, Union

from . import _native
from ._base import Name
from ._call import run
from ._native import Lease, LeaseLost
from ._owners import Owner, _get_running_loop, current_owner_id, owner_id
from .atomic import SharedCount
from .client import Client, _seconds, _native_client
from .errors import InvalidArgumentError, NotOwnerError, ZkRecipesError

__all__ = [
    "CohortOptions",
    "InterProcessMutex",
    "InterProcessSemaphoreMutex",
    "InterProcessReadWriteLock",
    "InterProcessSemaphoreV2",
    "InterProcessMultiLock",
    "Lease",
    "LeaseLost",
    "LeaseLostReason",
    "LockLostPolicy",
    "attempt_revoke",
]


class LockLostPolicy(Name):
    """When a hold counts as lost (Curator's ConnectionStateErrorPolicy)."""

    #: Lost as soon as the connection is SUSPENDED or LOST (the safe default).
    STANDARD = "STANDARD"
    #: Lost only when the session is LOST; a SUSPENDED connection that comes back keeps it.
    SESSION = "SESSION"


class LeaseLostReason(Name):
    """Why a semaphore's :class:`Lease` was lost (:attr:`LeaseLost.reason`; the core's
    ``LeaseLost``, ``_native.LEASE_LOST_REASONS``)."""

    #: The connection entered a state the lost policy counts as a loss (:attr:`LeaseLost.state`:
    #: SUSPENDED under STANDARD, LOST under both).
    STATE = "STATE"
    #: The client was closed.
    CLOSED = "CLOSED"
    #: The client's session is another than the one that made the lease: the lease node went
    #: with the old one.
    SESSION_CHANGED = "SESSION_CHANGED"
    #: The lease node is gone, or belongs to another session.
    NODE_GONE = "NODE_GONE"


@dataclass(frozen=True)
class CohortOptions:
    """The fairness bound of cohort handoffs (``InterProcessMutex(..., cohort=...)``).

    With cohort handoffs the owners (threads, asyncio Tasks, :class:`Owner` objects) of ONE
    :class:`InterProcessMutex` object queue in memory behind the object's one lock node, and a
    release hands the hold to the next of them without a ZooKeeper round trip. A node is handed
    on at most ``max_handoffs`` times, and for at most ``max_hold`` seconds after it was granted;
    then a release looks for other contenders (one getChildren): if another process (or another
    mutex object) waits on the path, the node is released and the local owners queue again
    behind it; if nobody else waits, the budget starts over. ``max_handoffs`` is in
    1..2**32-1 (for no handoffs use a plain mutex), ``max_hold`` a finite number of seconds >= 0.
    """

    #: Local handoffs on one node before looking for other contenders.
    max_handoffs: int = 64
    #: Seconds one node may be passed around locally before looking for other contenders.
    max_hold: float = 0.02

    def __post_init__(self) -> None:
        n = self.max_handoffs
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"max_handoffs must be an int, not {type(n).__name__}")
        if not 1 <= n < 2**32:
            raise InvalidArgumentError(
                f"max_handoffs must be in 1..2**32-1 (a plain mutex has none), not {n} (INVALID_ARGUMENT)"
            )
        _seconds("max_hold", self.max_hold)


def _cohort_spec(cohort: Union[CohortOptions, bool, None]) -> Optional[Tuple[int, float]]:
    if cohort is None or cohort is False:
        return None
    if cohort is True:
        cohort = CohortOptions()
    if not isinstance(cohort, CohortOptions):
        raise TypeError(f"cohort must be a zkrecipes.CohortOptions, a bool or None, not {type(cohort).__name__}")
    return (cohort.max_handoffs, float(cohort.max_hold))


_L = TypeVar("_L", bound="_OwnedLock")


def _caller(owner: Optional[Owner]) -> Optional[int]:
    """The raw owner of an ``*_async`` call, resolved where it is called: the given owner, or the
    calling Task. None when no loop runs in this thread (a coroutine made before ``asyncio.run``):
    then its body resolves it, in the Task that runs it."""
    if owner is None and _get_running_loop() is None:
        return None
    return owner_id(owner)


class _OwnedLock:
    """Acquire/release with owners, ``with`` and ``async with``, over a native lock."""

    _n: _native.Lock

    def acquire(self, timeout: Optional[float] = None, *, owner: Optional[Owner] = None) -> bool:
        """Acquires, waiting at most ``timeout`` seconds (None or ``math.inf``: until acquired;
        0: try once). Returns whether it was acquired. The same owner may acquire again
        (reentrant locks)."""
        return self._n.acquire_wait(owner, timeout)

    def acquire_async(
        self, timeout: Optional[float] = None, *, owner: Optional[Owner] = None
    ) -> Coroutine[Any, Any, bool]:
        """:meth:`acquire` for asyncio; the default owner is the Task that calls it (resolved at
        the call, so ``asyncio.wait_for(lock.acquire_async(), 5)``, ``gather`` or
        ``create_task`` acquire for the caller, not for the Task they wrap the coroutine in).
        Cancelling the awaiting task abandons the attempt and deletes its lock node."""
        return self._acquire_as(_caller(owner), timeout)

    async def _acquire_as(self, raw: Optional[int], timeout: Optional[float]) -> bool:
        return await run(self._n.acquire(owner_id(None) if raw is None else raw, timeout))

    def release(self, *, owner: Optional[Owner] = None) -> None:
        """Releases one acquire of the owner; the last one deletes the lock node.
        :class:`~zkrecipes.NotOwnerError` if the owner does not hold the lock."""
        self._n.release_wait(owner)

    def release_async(self, *, owner: Optional[Owner] = None) -> Coroutine[Any, Any, None]:
        """:meth:`release` for asyncio (the default owner resolved at the call, as
        :meth:`acquire_async`'s)."""
        return self._release_as(_caller(owner))

    async def _release_as(self, raw: Optional[int]) -> None:
        await run(self._n.release(owner_id(None) if raw is None else raw))

    def is_acquired_in_this_process(self) -> bool:
        """Whether the lock is held through this object (by any owner)."""
        return self._n.is_acquired_in_this_process()

    # The owners inside a ``with`` / ``async with`` block of this object, one entry per block.
    _with_owners: List[int]
    _with_lock = threading.Lock()

    def _entered(self, raw: int) -> None:
        with self._with_lock:
            if "_with_owners" not in self.__dict__:
                self._with_owners = []
            self._with_owners.append(raw)

    def _exiting(self) -> int:
        """The owner whose block ends: the caller's if it entered one; else, when exactly one
        owner is inside a block, that one (an abandoned generator's ``with`` is closed by
        another Task or thread: released by it, the lock stayed held with nobody to release
        it); else the caller's, whose release then says NotOwnerError."""
        me = current_owner_id()
        with self._with_lock:
            inside = self.__dict__.get("_with_owners", [])
            if me not in inside and len(set(inside)) == 1:
                me = inside[0]
            if me in inside:
                inside.remove(me)
        return me

    def __enter__(self: _L) -> _L:
        self.acquire()
        self._entered(current_owner_id())
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self._n.release_raw_wait(self._exiting())

    async def __aenter__(self: _L) -> _L:
        await self.acquire_async()
        self._entered(current_owner_id())
        return self

    async def __aexit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        await run(self._n.release(self._exiting()))


class InterProcessMutex(_OwnedLock):
    """Curator's InterProcessMutex: a reentrant mutex across processes, fair (first come, first
    served), with Curator 5.x's node layout so Curator and zkrecipes processes share it.

    ``with lock:`` / ``async with lock:`` acquire (waiting as long as it takes) and release.

    A lock still held when its last handle is garbage-collected keeps its node until the
    client's session ends (other processes wait until then): like an unclosed file, that emits
    a :class:`ResourceWarning`. Release what you acquire (``with lock:`` does).

    ``cohort=CohortOptions(...)`` (``True``: the defaults, 64 handoffs / 20 ms) opts this object
    into cohort handoffs: its owners queue in memory behind the object's ONE lock node, and a
    release hands the hold to the next local owner without a ZooKeeper round trip, up to the
    fairness bound of :class:`CohortOptions` (then, if another process or object waits, the node
    goes and the local owners queue again behind it). To ZooKeeper and Curator the object is one
    contender (:meth:`participant_nodes` lists one node for it however many owners wait), so
    mutual exclusion across processes is the plain mutex's, and inside the process one owner
    holds at a time; acquire, release, reentrancy, timeouts, :meth:`is_held_valid` and
    :meth:`on_lost` work per owner as without. Fence with :attr:`fencing_token_wide`: the plain
    :attr:`fencing_token` is the node's czxid, shared by the local holders of one node. A cohort
    mutex is not revocable (:meth:`make_revocable` raises :class:`InvalidArgumentError`).
    """

    _n: _native.InterProcessMutex

    def __init__(
        self,
        client: Client,
        path: str,
        *,
        data: Optional[bytes] = None,
        cohort: Union[CohortOptions, bool, None] = None,
    ) -> None:
        self._n = _native.InterProcessMutex(_native_client(client), path, data, _cohort_spec(cohort))
        self._client = client

    @classmethod
    def _wrap(cls, native: _native.InterProcessMutex, client: Client) -> "InterProcessMutex":
        self = cls.__new__(cls)
        self._n = native
        self._client = client
        return self

    def __repr__(self) -> str:
        cohort = self.cohort_options
        extra = "" if cohort is None else f" cohort={cohort!r}"
        return f"<zkrecipes.InterProcessMutex path={self.path!r}{extra}>"

    def __del__(self) -> None:
        n = getattr(self, "_n", None)
        try:
            held = n is not None and n.is_acquired_in_this_process()
        except ZkRecipesError:  # made before a fork: the parent's business
            held = False
        if held:
            assert n is not None
            warnings.warn(
                f"InterProcessMutex {n.path!r} was garbage-collected while held: its lock node stays "
                "until the session ends; release it (or use `with lock:`)",
                ResourceWarning,
                source=self,
            )


    @property
    def path(self) -> str:
        """The lock path."""
        return str(self._n.path)

    def is_owned_by_current_thread(self) -> bool:
        """Whether the caller holds it: the current thread, or inside a coroutine the current Task
        (Curator's isOwnedByCurrentThread)."""
        return bool(self._n.is_owned_by(current_owner_id()))

    def is_owned_by(self, owner: Optional[Owner] = None) -> bool:
        """Whether ``owner`` (default: the caller) holds it."""
        return bool(self._n.is_owned_by(owner_id(owner)))

    def is_held_valid(self, *, owner: Optional[Owner] = None) -> bool:
        """Whether the owner holds it and the hold is still trustworthy: not reported lost, same
        session, client open, and (STANDARD policy) connected right now."""
        return bool(self._n.is_held_valid(owner_id(owner)))

    @property
    def fencing_token(self) -> int:
        """The fencing token of the caller's hold (the lock node's czxid, strictly greater than
        any earlier holder's); :class:`~zkrecipes.NotOwnerError` if the caller does not hold it.
        With cohort handoffs the local holders of one node share it: use
        :attr:`fencing_token_wide` instead."""
        token = self._n.fencing_token(current_owner_id())
        if token is None:
            raise NotOwnerError(f"fencing_token of lock {self.path}: the caller does not hold it (NOT_OWNER)")
        return int(token)

    def get_fencing_token(self, *, owner: Optional[Owner] = None) -> Optional[int]:
        """The fencing token of ``owner``'s hold, or None if it holds nothing."""
        token = self._n.fencing_token(owner_id(owner))
        return None if token is None else int(token)

    @property
    def fencing_token_wide(self) -> int:
        """The wide fencing token of the caller's hold: ``czxid << 32 | handoff``, where
        ``handoff`` counts the cohort handoffs on this lock node before this hold (always 0
        without cohort handoffs). It strictly increases from one holder to the next, across
        processes and across in-memory handoffs: fence with it when the mutex has cohort
        handoffs (a guarded resource keeping the largest token seen rejects stale holders).
        :class:`~zkrecipes.NotOwnerError` if the caller does not hold it."""
        token = self._n.fencing_token_wide(current_owner_id())
        if token is None:
            raise NotOwnerError(f"fencing_token_wide of lock {self.path}: the caller does not hold it (NOT_OWNER)")
        return int(token)

    def get_fencing_token_wide(self, *, owner: Optional[Owner] = None) -> Optional[int]:
        """The wide fencing token (:attr:`fencing_token_wide`) of ``owner``'s hold, or None if
        it holds nothing."""
        token = self._n.fencing_token_wide(owner_id(owner))
        return None if token is None else int(token)

    @property
    def local_waiters(self) -> int:
        """How many owners of this object wait in its cohort's local queue (0 without cohort
        handoffs)."""
        return int(self._n.local_waiters)

    @property
    def cohort_options(self) -> Optional[CohortOptions]:
        """The cohort handoffs' fairness bound (``max_hold`` as kept, to the nanosecond), or None
        without cohort handoffs."""
        opts = self._n.cohort_options
        return None if opts is None else CohortOptions(int(opts[0]), float(opts[1]))

    def lock_node(self, *, owner: Optional[Owner] = None) -> Optional[str]:
        """The full path of the owner's lock node, or None."""
        node = self._n.lock_node(owner_id(owner))
        return None if node is None else str(node)

    def participant_nodes(self) -> List[str]:
        """The lock's nodes in line order (holder first), as full paths."""
        return self._n.participant_nodes().wait()

    async def participant_nodes_async(self) -> List[str]:
        """:meth:`participant_nodes` for asyncio."""
        return await run(self._n.participant_nodes())

    def on_lost(self, callback: Callable[[int], object]) -> int:
        """Calls ``callback(owner_id)`` when a hold is lost (connection SUSPENDED or LOST under
        the STANDARD policy, LOST under SESSION; the lock node deleted by someone else, noticed
        once the hold has lasted 100 ms; also on close). ``owner_id`` is the holder's :attr:`Owner.id`. Callbacks of one lock run one at
        a time, in order, on a library thread (never the event loop's) and may block or call
        this API. Returns an id for :meth:`remove_lost_listener`."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        return self._n.on_lost(callback)

    def remove_lost_listener(self, listener_id: int) -> bool:
        """Removes a listener added with :meth:`on_lost`; whether it was there (an id another
        client or recipe gave out raises :class:`InvalidArgumentError`)."""
        return self._n.remove_lost_listener(listener_id)

    def make_revocable(self, callback: Callable[[int], object]) -> None:
        """Curator's makeRevocable: ``callback(owner_id)`` when another process writes
        ``__REVOKE__`` into our lock node (see :func:`attempt_revoke`); the holder decides.
        :class:`InvalidArgumentError` on a mutex with cohort handoffs (its one node serves every
        local owner)."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        self._n.make_revocable(callback)

    @property
    def lost_policy(self) -> LockLostPolicy:
        """When a hold counts as lost (default STANDARD)."""
        return LockLostPolicy(self._n.lost_policy)

    @lost_policy.setter
    def lost_policy(self, policy: LockLostPolicy) -> None:
        self._n.lost_policy = LockLostPolicy(policy).value


class InterProcessSemaphoreMutex(_OwnedLock):
    """Curator's InterProcessSemaphoreMutex: a mutex that is NOT reentrant (a second acquire
    waits, even from the same thread) and not owned (any thread may release). Built on a
    one-lease InterProcessSemaphoreV2, with its node layout. ``owner=`` is accepted and ignored."""

    _n: _native.InterProcessSemaphoreMutex

    def __init__(self, client: Client, path: str) -> None:
        self._n = _native.InterProcessSemaphoreMutex(_native_client(client), path)

    def __repr__(self) -> str:
        return f"<zkrecipes.InterProcessSemaphoreMutex path={self.path!r}>"


    @property
    def path(self) -> str:
        """The semaphore's path."""
        return str(self._n.path)

    @property
    def lease_node(self) -> Optional[str]:
        """The path of the lease node held, if any."""
        node = self._n.lease_node
        return None if node is None else str(node)

    def participant_nodes(self) -> List[str]:
        """The lease nodes, as full paths."""
        return self._n.participant_nodes().wait()


class InterProcessReadWriteLock:
    """Curator's InterProcessReadWriteLock: many readers or one writer. Both sides are
    reentrant :class:`InterProcessMutex` objects; a writer may also take the read lock (and then
    release the write lock: a downgrade), never the other way round."""

    def __init__(self, client: Client, path: str, *, data: Optional[bytes] = None) -> None:
        self._n = _native.InterProcessReadWriteLock(_native_client(client), path, data)
        self._read = InterProcessMutex._wrap(self._n.read_lock(), client)
        self._write = InterProcessMutex._wrap(self._n.write_lock(), client)

    def read_lock(self) -> InterProcessMutex:
        """The shared side (``__READ__`` nodes)."""
        return self._read

    def write_lock(self) -> InterProcessMutex:
        """The exclusive side (``__WRIT__`` nodes)."""
        return self._write


class InterProcessSemaphoreV2:
    """Curator's InterProcessSemaphoreV2: at most ``max_leases`` leases held at once across
    processes. Leases are returned with :meth:`Lease.release` (or ``with lease:``).

    ``count=`` (a :class:`~zkrecipes.SharedCount`, instead of ``max_leases``) is Curator's
    constructor taking a SharedCountReader: the limit is the count's value, read live. Raising it
    lets waiters in at once; lowering it takes no lease back but admits nobody until fewer than
    the new count are held (below 1: nobody). Start the count to follow its changes; closing it
    freezes the limit at its last value."""

    def __init__(
        self,
        client: Client,
        path: str,
        max_leases: Optional[int] = None,
        *,
        data: Optional[bytes] = None,
        count: Optional[SharedCount] = None,
    ) -> None:
        if count is not None and not isinstance(count, SharedCount):
            raise TypeError(f"count must be a zkrecipes.SharedCount, not {type(count).__name__}")
        self._count = count
        self._n = _native.InterProcessSemaphoreV2(
            _native_client(client), path, max_leases, data, None if count is None else count._n
        )

    def __repr__(self) -> str:
        return f"<zkrecipes.InterProcessSemaphoreV2 path={self.path!r} max_leases={self.max_leases}>"

    @property
    def path(self) -> str:
        """The semaphore's path."""
        return str(self._n.path)

    @property
    def max_leases(self) -> int:
        """The most leases held at once (with ``count=``, the count's value now; 0 below 1)."""
        return int(self._n.max_leases)

    @property
    def count(self) -> Optional[SharedCount]:
        """The SharedCount giving the limit, if any."""
        return self._count

    def acquire(self, qty: int = 1, timeout: Optional[float] = None) -> Optional[List[Lease]]:
        """``qty`` leases, waiting at most ``timeout`` seconds (None or ``math.inf``: until
        acquired); None on timeout (all or nothing: nothing is kept). ``qty`` above a fixed
        ``max_leases`` can never be granted: :class:`~zkrecipes.InvalidArgumentError` at once
        (with ``count=`` it waits, as the count may be raised)."""
        return self._n.acquire(qty, timeout).wait()

    async def acquire_async(self, qty: int = 1, timeout: Optional[float] = None) -> Optional[List[Lease]]:
        """:meth:`acquire` for asyncio (a cancelled acquire returns what it took)."""
        return await run(self._n.acquire(qty, timeout))

    def return_lease(self, lease: Lease) -> None:
        """Returns a lease (Curator's returnLease)."""
        self._n.return_lease(lease)

    def return_all(self, leases: Sequence[Lease]) -> None:
        """Returns every lease (Curator's returnAll)."""
        for lease in leases:
            self._n.return_lease(lease)

    def participant_nodes(self) -> List[str]:
        """The lease nodes, as full paths in sequence order."""
        return self._n.participant_nodes().wait()


class InterProcessMultiLock(_OwnedLock):
    """Curator's InterProcessMultiLock: all of several locks or none. Give lock paths (a
    reentrant mutex each) or lock objects (InterProcessMutex, InterProcessSemaphoreMutex).
    The timeout bounds the whole acquire; on failure nothing is held. A lock taken early whose
    hold was lost while the others were awaited (its session ended: another process may hold it
    now; or, with the standard lost policy, the connection was suspended) is not answered as held: everything is released and the acquire raises that lock's
    error (SessionExpiredError, ConnectionLossError or ClosedError)."""

    def __init__(
        self, client: Client, locks: Sequence[Union[str, InterProcessMutex, InterProcessSemaphoreMutex]]
    ) -> None:
        members: List[Union[str, _native.Lock]] = []
        for lock in locks:
            if isinstance(lock, str):
                members.append(lock)
            elif isinstance(lock, (InterProcessMutex, InterProcessSemaphoreMutex)):
                members.append(lock._n)
            else:
                raise TypeError(f"a multi lock takes paths or zkrecipes locks, not {type(lock).__name__}")
        self._n = _native.InterProcessMultiLock(_native_client(client), members)




def attempt_revoke(client: Client, node_path: str) -> None:
    """Curator's Revoker.attemptRevoke: asks the holder of lock node ``node_path`` (one of
    :meth:`InterProcessMutex.participant_nodes`) to release. A node already gone is fine."""
    _native.attempt_revoke(_native_client(client), node_path).wait()
