"""Who holds a lock: the current thread, or inside a coroutine the current asyncio Task, or an
explicit :class:`~zkrecipes.Owner` passed as ``owner=``.

The core ties reentrancy to an opaque 64-bit owner; here each Python thread maps to its OS
thread's owner and each asyncio Task gets one of its own (kept while the Task lives). Inside a
callback the library runs (a listener, a partition function) each call is an owner of its own,
not its thread's: a hold meant to outlast the callback takes an explicit ``Owner``.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Optional

from . import _native
from ._native import Owner

__all__ = ["Owner", "current_owner_id", "owner_id"]

_task_owners: "weakref.WeakKeyDictionary[asyncio.Task[object], int]" = weakref.WeakKeyDictionary()
_task_owners_lock = threading.Lock()

# asyncio._get_running_loop is the documented low-level form that returns None instead of raising.
_get_running_loop = asyncio.events._get_running_loop


def current_owner_id() -> int:
    """The owner of the caller: its asyncio Task when one is running in this thread, else the thread."""
    loop = _get_running_loop()
    if loop is not None:
        task = asyncio.current_task(loop)
        if task is not None:
            raw = _task_owners.get(task)
            if raw is None:
                with _task_owners_lock:
                    raw = _task_owners.get(task)
                    if raw is None:
                        raw = _native.new_owner_id()
                        _task_owners[task] = raw
            return raw
    return _native.thread_owner_id()


def owner_id(owner: Optional[Owner]) -> int:
    """The raw owner for an ``owner=`` argument (None: the caller's thread or task; anything but
    an :class:`Owner` or None: TypeError). Resolved in the native module, as the blocking acquire
    and release resolve theirs; it calls back :func:`current_owner_id` inside a running loop."""
    return _native.resolve_owner(owner)
