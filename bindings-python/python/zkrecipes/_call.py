"""The one way every operation runs: the native module returns a :class:`~zkrecipes._native.Call`
for each operation that waits; the sync method calls ``call.wait()`` (blocking with the GIL
released, Ctrl-C honoured) and its ``*_async`` twin ``await run(call)``."""

from __future__ import annotations

from typing import TypeVar

from ._native import Call

__all__ = ["Call", "run"]

T = TypeVar("T")


async def run(call: "Call[T]") -> T:
    """Awaits ``call`` on the running loop. Cancelling the awaiting task abandons the operation:
    its core future is dropped (deleting any node it made), and a result that was delivered in
    the same instant (an acquired lock) is undone, since nobody will see it."""
    try:
        return await call
    except BaseException:
        # Cancelled, or the coroutine closed (GeneratorExit: a loop closed with the Task in it):
        # a result delivered and never seen is undone. abandon() undoes nothing else.
        call.abandon()
        raise
