"""What keeps started recipes alive.

The rule (the same in every face): a recipe whose ``start()`` (or ``start_async()``) succeeded
is kept referenced here until its ``close()`` (or ``close_async()``), or until its client's
``close()``; then it is released, and can be collected again. Dropping one's last reference
to a started recipe therefore does not close it (the native object's drop would: delete its
node, leave its election), as Curator's and kazoo's started objects, and a started
:class:`threading.Thread`, keep running until they are stopped.

Keyed by the client: an entry holds the :class:`~zkrecipes.Client` and its started objects,
and goes with the last of them, so a client is kept alive by nothing here but its started
recipes (which need it). Thread-safe: start and close may run on any thread, and on an event
loop. Objects released are dropped outside the lock (a native close on drop may take time).

A recipe that can also be ended another way (a :class:`~zkrecipes.ServiceDiscovery`'s close
ends the caches and providers made on it) releases its dependents there too.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Dict, Iterator, Optional, Tuple

__all__ = ["keep", "release", "release_client", "kept", "starting", "closing"]

_lock = threading.Lock()
# id(client) -> (client, {id(obj): obj}); an entry exists only while it holds an object.
_kept: Dict[int, Tuple[object, Dict[int, object]]] = {}


def keep(client: object, obj: object) -> bool:
    """Keeps ``obj`` (started on ``client``) alive; True if this call added it (False: it was
    kept already, e.g. a second ``start()``)."""
    with _lock:
        entry = _kept.get(id(client))
        if entry is None:
            entry = _kept[id(client)] = (client, {})
        objs = entry[1]
        if id(obj) in objs:
            return False
        objs[id(obj)] = obj
        return True


def release(client: object, obj: object) -> None:
    """Stops keeping ``obj`` (closed); nothing if it was not kept."""
    dropped: Optional[object] = None
    with _lock:
        entry = _kept.get(id(client))
        if entry is None or entry[1].get(id(obj)) is not obj:
            return
        dropped = entry[1].pop(id(obj))
        if not entry[1]:
            del _kept[id(client)]
    del dropped  # outside the lock


def release_client(client: object) -> None:
    """Stops keeping everything started on ``client`` (closed)."""
    with _lock:
        entry = _kept.pop(id(client), None)
    del entry  # outside the lock


def kept(client: object) -> int:
    """How many objects started on ``client`` are kept (for tests and debugging)."""
    with _lock:
        entry = _kept.get(id(client))
        return 0 if entry is None else len(entry[1])


@contextmanager
def starting(client: object, obj: object) -> Iterator[None]:
    """``with starting(client, self): <the native start>``: keeps ``obj`` from before the start
    (a client closing meanwhile releases it with the rest); if the start raises, releases it
    only if this call added it (a second start refused must not release the running first)."""
    added = keep(client, obj)
    try:
        yield
    except BaseException:
        if added:
            release(client, obj)
        raise


@contextmanager
def closing(client: object, obj: object) -> Iterator[None]:
    """``with closing(client, self): <the native close>``: releases ``obj`` after the close,
    also if it raises."""
    try:
        yield
    finally:
        release(client, obj)


def _after_fork_in_child() -> None:
    # A fork while another thread held the lock would leave it held forever in the child. The
    # objects stay (they are the parent's, dead in the child, as every object made before it).
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
