"""Leader election: :class:`LeaderLatch` (and, as the core lands it, LeaderSelector).

Curator 5.x's node layout: a latch participant is ``<path>/_c_<uuid>-latch-<seq>`` holding its
id, so Curator/Java processes take part in the same election. The leader gets a leadership
epoch (its node's czxid) that strictly increases from one leadership to the next.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import weakref
from typing import Any, Awaitable, Callable, List, Optional, Protocol, Union

from . import _alive, _native
from ._base import Lifecycle, Name
from ._call import run
from ._native import Participant
from .client import Client, _native_client

__all__ = [
    "LeaderLatch",
    "LeaderObserver",
    "LeaderLatchListener",
    "LeaderSelector",
    "LeadershipContext",
    "CancelReason",
    "CloseMode",
    "LatchState",
    "LeadershipLostPolicy",
    "Participant",
]


class CloseMode(Name):
    """How :meth:`LeaderLatch.close` treats the listeners (Curator's LeaderLatch.CloseMode)."""

    #: Closing does not call ``not_leader`` (the default).
    SILENT = "SILENT"
    #: Closing while leading calls ``not_leader``.
    NOTIFY_LEADER = "NOTIFY_LEADER"


class LeadershipLostPolicy(Name):
    """Which connection states end leadership (Curator's ConnectionStateErrorPolicy)."""

    #: SUSPENDED already ends leadership, as does LOST (the safe default).
    STANDARD = "STANDARD"
    #: Only LOST ends it; fence writes with the leadership epoch.
    SESSION = "SESSION"


class LatchState(Name):
    """A latch's life cycle (Curator's LeaderLatch.State)."""

    LATENT = "LATENT"
    STARTED = "STARTED"
    CLOSED = "CLOSED"


class LeaderLatchListener(Protocol):
    """Curator's LeaderLatchListener."""

    def is_leader(self) -> object:
        """This participant became leader."""

    def not_leader(self) -> object:
        """This participant stopped being leader."""


class _Election(Lifecycle):
    """What :class:`LeaderLatch` and :class:`LeaderSelector` both have."""

    _n: _native.Election

    @property
    def id(self) -> str:
        """This participant's id."""
        return self._n.id

    @property
    def path(self) -> str:
        """The election's path."""
        return self._n.path

    @property
    def state(self) -> LatchState:
        """LATENT, STARTED or CLOSED."""
        return LatchState(self._n.state)

    def has_leadership(self) -> bool:
        """Whether this participant leads now (no server round trip)."""
        return self._n.has_leadership()

    @property
    def leadership_epoch(self) -> Optional[int]:
        """While leading: the leadership's fencing token (our node's czxid), strictly increasing
        from one leadership to the next."""
        return self._n.leadership_epoch

    @property
    def last_error(self) -> Optional[BaseException]:
        """The last error the background state machine met (it keeps retrying), if any."""
        return self._n.last_error

    def get_leader(self) -> Participant:
        """The current leader, read from the server (``Participant("", False)`` if nobody takes part)."""
        return self._n.get_leader().wait()

    async def get_leader_async(self) -> Participant:
        """:meth:`get_leader` for asyncio."""
        return await run(self._n.get_leader())

    def get_participants(self) -> List[Participant]:
        """Every participant in line order, the leader flagged."""
        return self._n.get_participants().wait()

    async def get_participants_async(self) -> List[Participant]:
        """:meth:`get_participants` for asyncio."""
        return await run(self._n.get_participants())


class LeaderLatch(_Election):
    """Curator's LeaderLatch: among the participants on ``path``, the one whose node sorts first
    leads, until it closes or loses its session.

    ``with LeaderLatch(client, path, "me") as latch:`` starts it and closes it at the end.
    Listeners run on a library thread (never the event loop's), one at a time, in order; they
    may block and may call this API.
    """

    _n: _native.LeaderLatch

    def __init__(
        self,
        client: Client,
        path: str,
        id: str = "",
        *,
        close_mode: CloseMode = CloseMode.SILENT,
        lost_policy: LeadershipLostPolicy = LeadershipLostPolicy.STANDARD,
    ) -> None:
        self._n = _native.LeaderLatch(
            _native_client(client), path, id, CloseMode(close_mode).value, LeadershipLostPolicy(lost_policy).value
        )
        self._client = client

    def __repr__(self) -> str:
        return f"<zkrecipes.LeaderLatch path={self.path!r} id={self.id!r} state={self.state} leader={self.has_leadership()}>"

    def start(self) -> None:
        """Joins the election (returns once our node is created; it is retried in the
        background if the first try fails: see :attr:`last_error`). Once started the latch
        stays alive until :meth:`close` (or the client's close), even if no reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start().wait()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._n.start())

    def await_leadership(self, timeout: Optional[float] = None) -> bool:
        """Waits until this participant leads (True), or ``timeout`` seconds pass (None or
        ``math.inf``: no limit), or the latch is closed (False). With no timeout a closed or
        unstarted latch raises ClosedError."""
        return self._n.await_leadership(timeout).wait()

    async def await_leadership_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`await_leadership` for asyncio."""
        return await run(self._n.await_leadership(timeout))

    @property
    def our_path(self) -> Optional[str]:
        """Our node's full path while we have one."""
        return self._n.our_path

    def add_listener(
        self,
        listener: Optional[LeaderLatchListener] = None,
        *,
        is_leader: Optional[Callable[[], object]] = None,
        not_leader: Optional[Callable[[], object]] = None,
    ) -> int:
        """Adds a listener: an object with ``is_leader()`` and ``not_leader()`` methods (Curator's
        LeaderLatchListener), or the two callables as keywords. Returns an id for
        :meth:`remove_listener`."""
        if listener is not None:
            is_leader, not_leader = listener.is_leader, listener.not_leader
        if is_leader is None and not_leader is None:
            raise TypeError("add_listener needs a listener or is_leader=/not_leader= callables")
        on_leader, on_not_leader = is_leader, not_leader

        def call(leader: bool) -> None:
            fn = on_leader if leader else on_not_leader
            if fn is not None:
                fn()

        return int(self._n.add_listener(call))

    def remove_listener(self, listener_id: int) -> bool:
        """Removes a listener by id; returns whether it was there."""
        return bool(self._n.remove_listener(listener_id))

    def close(self, close_mode: Optional[CloseMode] = None) -> None:
        """Leaves the election: leadership ends, then our node is deleted so the next participant
        takes over at once. Idempotent."""
        mode = None if close_mode is None else CloseMode(close_mode).value
        with _alive.closing(self._client, self):
            self._n.close(mode).wait()

    async def close_async(self, close_mode: Optional[CloseMode] = None) -> None:
        """:meth:`close` for asyncio."""
        mode = None if close_mode is None else CloseMode(close_mode).value
        with _alive.closing(self._client, self):
            await run(self._n.close(mode))



class CancelReason(Name):
    """Why leadership was cancelled (the core's names, ``_native.CANCEL_REASONS``)."""

    #: The connection was SUSPENDED (STANDARD policy): another participant may lead soon.
    CONNECTION_SUSPENDED = "CONNECTION_SUSPENDED"
    #: The session was LOST: another participant may lead already.
    SESSION_LOST = "SESSION_LOST"
    #: :meth:`LeaderSelector.interrupt_leadership` was called.
    INTERRUPTED = "INTERRUPTED"
    #: The selector (or its client) was closed.
    CLOSED = "CLOSED"


class _CancelledEvent(threading.Event):
    """A :class:`threading.Event` that reads the native context's cancellation itself, with no
    callback: one set from a callback was never set at interpreter exit (callbacks no longer
    run then), so a ``take_leadership`` waiting on it kept the exit waiting, then aborted."""

    def __init__(self, native: _native.LeadershipContext) -> None:
        super().__init__()
        self._native = native

    def is_set(self) -> bool:
        return super().is_set() or self._native.is_cancelled()

    def wait(self, timeout: Optional[float] = None) -> bool:
        # In slices, so that a signal (Ctrl-C in the main thread) is handled between them.
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        while not self.is_set():
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                return False
            self._native.wait_cancelled(left)
        return True


class LeadershipContext:
    """What ``take_leadership(ctx)`` gets: leadership lasts while it runs, and :attr:`cancelled`
    (a :class:`threading.Event`) is set when it is cancelled (connection SUSPENDED or LOST,
    :meth:`LeaderSelector.interrupt_leadership`, close); the callee must then return promptly."""

    def __init__(self, native: _native.LeadershipContext, client: Client) -> None:
        self._n = native
        #: Set when leadership is cancelled.
        self.cancelled: threading.Event = _CancelledEvent(native)
        #: The client (Curator passes it to takeLeadership).
        self.client = client

    def __repr__(self) -> str:
        return f"<zkrecipes.LeadershipContext id={self.id!r} term={self.term} cancelled={self.cancel_reason}>"

    @property
    def cancel_reason(self) -> Optional[CancelReason]:
        """Why leadership was cancelled, or None while it lasts."""
        r = self._n.cancel_reason
        return None if r is None else CancelReason(r)

    def wait_cancelled(self, timeout: Optional[float] = None) -> Optional[CancelReason]:
        """Blocks (GIL released) until leadership is cancelled (the reason) or ``timeout``
        seconds pass (None). On the main thread Ctrl-C interrupts it (it waits in slices, as
        the other blocking calls do)."""
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        while True:
            left = _WAIT_SLICE if deadline is None else min(_WAIT_SLICE, max(deadline - time.monotonic(), 0.0))
            r = self._n.wait_cancelled(left)
            if r is not None:
                return CancelReason(r)
            if deadline is not None and time.monotonic() >= deadline:
                return None

    @property
    def fencing_token(self) -> Optional[int]:
        """This leadership term's fencing token: the lock node's czxid, strictly greater than any
        earlier leader's. Pass it to the resources the leader writes to."""
        return self._n.fencing_token

    @property
    def path(self) -> str:
        """The leader path."""
        return self._n.path

    @property
    def id(self) -> str:
        """This participant's id."""
        return self._n.id

    @property
    def term(self) -> int:
        """Which leadership of this selector this is (1 for the first)."""
        return self._n.term


TakeLeadership = Callable[[LeadershipContext], Union[None, Awaitable[None], Any]]


# The slice of a blocking wait between two looks for Ctrl-C.
_WAIT_SLICE = 0.1

# How long a cancelled async term waits for its stopped (not closed) loop to run it again.
_STOPPED_LOOP_GRACE = 2.0


class _Runner:
    """Runs a selector's ``take_leadership`` for the native selector, which keeps it (and not
    the :class:`LeaderSelector`, see there)."""

    def __init__(self, client: Client, take: TakeLeadership) -> None:
        self.client = client
        self.take = take
        self.is_async = inspect.iscoroutinefunction(take)
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        # The selector, weakly (it keeps this runner through its native object): closed when
        # the loop of an async take_leadership is gone, since no term can run any more.
        self.selector: Optional["weakref.ref[LeaderSelector]"] = None

    def run(self, native_ctx: _native.LeadershipContext) -> None:
        ctx = LeadershipContext(native_ctx, self.client)
        if not self.is_async:
            self.take(ctx)
            return
        loop = self.loop
        if loop is None or loop.is_closed():
            self._loop_gone()
            return
        ended = threading.Event()
        failure: List[BaseException] = []
        coro = self.take(ctx)

        async def term() -> None:
            try:
                await coro  # type: ignore[misc]
            except asyncio.CancelledError:
                pass
            except (KeyboardInterrupt, SystemExit):
                raise  # the loop's to handle, as for any Task
            except BaseException as e:  # noqa: BLE001 - raised again on this thread
                failure.append(e)
            finally:
                ended.set()

        fut = asyncio.run_coroutine_threadsafe(term(), loop)
        # Cancelling the concurrent future cancels the Task on its loop; the term ends when the
        # coroutine has finished (its cleanup included), not when the cancellation is asked:
        # leadership is given up only then, so no other participant leads while it still runs.
        native_ctx.on_cancel(lambda _reason: fut.cancel())
        stopped_since: Optional[float] = None
        while not ended.wait(0.05):
            if loop.is_closed():
                # The loop went away with the Task in it: nothing will run it any more.
                try:
                    coro.close()  # type: ignore[union-attr]
                except RuntimeError:
                    pass  # its cleanup awaited: it cannot finish without a loop
                break
            # Cancelled while its loop is stopped (not closed): wait a while for it to run again.
            stopped = fut.cancelled() and not loop.is_running()
            stopped_since = (stopped_since or time.monotonic()) if stopped else None
            if stopped_since is not None and time.monotonic() - stopped_since > _STOPPED_LOOP_GRACE:
                break
        if failure:
            raise failure[0]

    def _loop_gone(self) -> None:
        """The loop of an async take_leadership is closed: every term would end at once and the
        selector would lead and requeue in a busy loop, so it leaves the election."""
        logging.getLogger("zkrecipes").warning(
            "LeaderSelector: the event loop of its async take_leadership is closed; the selector leaves the election"
        )
        selector = None if self.selector is None else self.selector()
        if selector is not None:
            with _alive.closing(self.client, selector):
                selector._n.close_blocking()  # from inside its term: does not wait for itself


class LeaderSelector(_Election):
    """Curator's LeaderSelector: participants queue on an InterProcessMutex at ``path``; the
    holder leads while ``take_leadership(ctx)`` runs and gives leadership up when it returns.

    ``take_leadership`` runs on the selector's own thread (it may block). An ``async def`` runs instead on the
    event loop that was running when :meth:`start` was called (cancelled as a Task when
    leadership is cancelled). Call :meth:`auto_requeue` to queue again after each leadership.
    ``with LeaderSelector(...) as selector:`` starts it and closes it at the end.
    """

    def __init__(
        self,
        client: Client,
        path: str,
        take_leadership: TakeLeadership,
        id: str = "",
        *,
        lost_policy: LeadershipLostPolicy = LeadershipLostPolicy.STANDARD,
    ) -> None:
        if not callable(take_leadership):
            raise TypeError("take_leadership must be callable")
        # The native selector keeps what runs take_leadership for as long as it lives: that must
        # not be this object (native objects are opaque to Python's collector, so the cycle
        # would never be freed, and a selector never started, or closed, would never be).
        self._runner = _Runner(client, take_leadership)
        self._runner.selector = weakref.ref(self)
        self._n = _native.LeaderSelector(
            _native_client(client), path, id, self._runner.run, LeadershipLostPolicy(lost_policy).value
        )
        self._client = client

    def __repr__(self) -> str:
        return f"<zkrecipes.LeaderSelector path={self.path!r} id={self.id!r} state={self.state} leader={self.has_leadership()}>"

    _n: _native.LeaderSelector

    def start(self) -> None:
        """Joins the queue for leadership (in the background; returns at once). Once started
        the selector stays alive until :meth:`close` (or the client's close), even if no reference to it is kept."""
        previous = self._runner.loop
        if self._runner.is_async:
            try:
                self._runner.loop = asyncio.get_running_loop()
            except RuntimeError:
                raise TypeError(
                    "an async take_leadership runs on the caller's event loop: call start() from a coroutine"
                ) from None
        try:
            with _alive.starting(self._client, self):
                self._n.start()
        except BaseException:
            self._runner.loop = previous  # a refused start (started twice) leaves the loop in use
            raise

    def __enter__(self) -> "LeaderSelector":
        if self._runner.is_async:
            # Its close must be awaited (a blocking close would stop the loop the term runs on).
            raise TypeError("a LeaderSelector with an async take_leadership is used with `async with`")
        self.start()
        return self

    def auto_requeue(self) -> None:
        """Curator's autoRequeue(): queue again after each leadership."""
        self._n.auto_requeue()

    def requeue(self) -> bool:
        """Queues again now; False if already queued or leading."""
        return self._n.requeue()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio (it returns at once either way)."""
        self.start()

    def interrupt_leadership(self) -> None:
        """Cancels the current leadership, if any (``ctx.cancel_reason`` is INTERRUPTED)."""
        self._n.interrupt_leadership()

    @property
    def leadership_count(self) -> int:
        """How many leaderships this selector has started."""
        return self._n.leadership_count

    def close(self) -> None:
        """Leaves for good: cancels the current leadership and waits until take_leadership has
        returned, an ``async def`` one's coroutine included, its cleanup after the cancellation
        too (not when called from inside it). Idempotent."""
        r = self._runner
        if r.is_async and r.loop is not None and _running_loop() is r.loop:
            raise RuntimeError("close() would block the event loop take_leadership runs on: use await close_async()")
        with _alive.closing(self._client, self):
            self._n.close_blocking()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio."""
        with _alive.closing(self._client, self):
            await run(self._n.close())


class LeaderObserver(Lifecycle):
    """Who leads a :class:`LeaderLatch` or :class:`LeaderSelector` group on ``path`` — in any
    face or Curator — without taking part (etcd's Observe; the C face's ``zkr_leader_observer``).
    One children watch on the group: each join or leave costs one ``getChildren``.

    ``with LeaderObserver(client, path) as observer:`` starts and closes it. :attr:`leader` is
    the leader as last seen (``Participant("", False)`` when nobody leads);
    :meth:`wait_changed` returns each change once, in order; listeners run on a library thread.
    """

    def __init__(self, client: Client, path: str) -> None:
        self._n = _native.LeaderObserver(_native_client(client), path)
        self._client = client

    def __repr__(self) -> str:
        return f"<zkrecipes.LeaderObserver path={self.path!r}>"

    @property
    def path(self) -> str:
        """The group path."""
        return str(self._n.path)

    def start(self) -> "LeaderObserver":
        """Starts observing; returns once the current leader is known (the path need not exist
        yet). Returns the observer, which stays alive until :meth:`close` (or the client's close), even if no reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start().wait()
        return self

    async def start_async(self) -> "LeaderObserver":
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._n.start())
        return self

    @property
    def leader(self) -> Participant:
        """The leader as last seen; ``Participant("", False)`` when nobody leads."""
        return self._n.leader

    def wait_changed(self, timeout: Optional[float] = None) -> Optional[Participant]:
        """Waits for the next change of leader since the last call (or :meth:`start`) and returns
        the new leader; None if ``timeout`` seconds passed first (None: wait forever). Raises
        :class:`~zkrecipes.ClosedError` once the observer or its client is closed."""
        return self._n.wait_changed(timeout).wait()

    async def wait_changed_async(self, timeout: Optional[float] = None) -> Optional[Participant]:
        """:meth:`wait_changed` for asyncio."""
        return await run(self._n.wait_changed(timeout))

    def add_listener(self, listener: Callable[[Participant], object]) -> int:
        """Calls ``listener(participant)`` with each new leader (in order, one at a time, on a
        library thread that is never the event loop's; it may block and call this API;
        exceptions go to ``sys.unraisablehook``). Returns an id for
        :meth:`remove_listener`."""
        if not callable(listener):
            raise TypeError(f"listener must be callable, not {type(listener).__name__}")
        return int(self._n.add_listener(listener))

    def remove_listener(self, listener_id: int) -> bool:
        """Removes a listener; returns whether it was there."""
        return bool(self._n.remove_listener(listener_id))

    def close(self) -> None:
        """Stops observing (the watch is removed from the server); waiters and every later
        :meth:`wait_changed` or :meth:`start` get :class:`~zkrecipes.ClosedError`. Idempotent."""
        with _alive.closing(self._client, self):
            self._n.close()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio (it returns at once either way)."""
        self.close()



def _running_loop() -> Optional[asyncio.AbstractEventLoop]:
    return asyncio.events._get_running_loop()

