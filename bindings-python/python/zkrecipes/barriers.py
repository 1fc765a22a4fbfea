"""Barriers: :class:`DistributedBarrier` and :class:`DistributedDoubleBarrier`, with Curator 5.x's
node layout (the barrier node itself; member nodes ``<path>/<uuid>`` and ``<path>/ready``).

A wait answers True only after a read shows its condition holds; wake-ups and connection drops
only make it read again. A timed-out :meth:`DistributedDoubleBarrier.enter` removes its member
node; entering twice is the same membership; a ``ready`` node left from an earlier round is
detected (by its czxid) and not trusted. A waiter whose server stays away gets a
:class:`ConnectionLossError` (or :class:`SessionExpiredError`), never a hang.
"""

from __future__ import annotations

from typing import Optional

from . import _native
from ._call import run
from .client import Client, _native_client

__all__ = ["DistributedBarrier", "DistributedDoubleBarrier"]


class DistributedBarrier:
    """Curator's DistributedBarrier: waiters block while the node at ``path`` exists."""

    def __init__(self, client: Client, path: str) -> None:
        self._n = _native.DistributedBarrier(_native_client(client), path)

    def __repr__(self) -> str:
        return f"<zkrecipes.DistributedBarrier path={self.path!r}>"

    @property
    def path(self) -> str:
        """The barrier's path."""
        return str(self._n.path)

    def set_barrier(self) -> None:
        """Sets the barrier (creates its node and persistent parents); already set is fine."""
        self._n.set_barrier().wait()

    async def set_barrier_async(self) -> None:
        """:meth:`set_barrier` for asyncio."""
        await run(self._n.set_barrier())

    def remove_barrier(self) -> None:
        """Removes the barrier, releasing every waiter; not set is fine."""
        self._n.remove_barrier().wait()

    async def remove_barrier_async(self) -> None:
        """:meth:`remove_barrier` for asyncio."""
        await run(self._n.remove_barrier())

    def wait_on_barrier(self, timeout: Optional[float] = None) -> bool:
        """Waits at most ``timeout`` seconds (None: no limit) until the barrier is removed;
        False if the timeout passed first."""
        return bool(self._n.wait_on_barrier(timeout).wait())

    async def wait_on_barrier_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`wait_on_barrier` for asyncio."""
        return bool(await run(self._n.wait_on_barrier(timeout)))


class DistributedDoubleBarrier:
    """Curator's DistributedDoubleBarrier, one member: :meth:`enter` waits until ``member_qty``
    members are in (a threshold, not a limit), :meth:`leave` until all have left.

    ``with barrier:`` enters (no time limit) and leaves; ``async with`` does the same."""

    def __init__(self, client: Client, path: str, member_qty: int) -> None:
        self._n = _native.DistributedDoubleBarrier(_native_client(client), path, member_qty)

    def __repr__(self) -> str:
        return f"<zkrecipes.DistributedDoubleBarrier path={self.path!r} member_qty={self.member_qty}>"

    @property
    def path(self) -> str:
        """The barrier's path."""
        return str(self._n.path)

    @property
    def member_qty(self) -> int:
        """The member count that opens the barrier."""
        return int(self._n.member_qty)

    @property
    def member_name(self) -> str:
        """This member's node name (a UUID)."""
        return str(self._n.member_name)

    def enter(self, timeout: Optional[float] = None) -> bool:
        """Enters and waits at most ``timeout`` seconds (None: no limit) for the others. False on
        timeout, with this member's node removed again. A member already in stays in, whatever
        entering again answers (leaving is :meth:`leave`'s)."""
        return bool(self._n.enter(timeout).wait())

    async def enter_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`enter` for asyncio."""
        return bool(await run(self._n.enter(timeout)))

    def leave(self, timeout: Optional[float] = None) -> bool:
        """Leaves and waits at most ``timeout`` seconds (None: no limit) until every member has
        left. False on timeout (this member's node is gone either way)."""
        return bool(self._n.leave(timeout).wait())

    async def leave_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`leave` for asyncio."""
        return bool(await run(self._n.leave(timeout)))

    def __enter__(self) -> "DistributedDoubleBarrier":
        self.enter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.leave()

    async def __aenter__(self) -> "DistributedDoubleBarrier":
        await self.enter_async()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.leave_async()
