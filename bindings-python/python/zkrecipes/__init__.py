"""zkrecipes — Apache Curator's coordination recipes on ZooKeeper, for Python.

One Rust core (shared with the C, Node and Rust faces) speaking Curator 5.x's node layout, so a
Python worker, a Java service using Curator and a Node server can take the same lock, elect one
leader and count on one counter.

    import zkrecipes

    with zkrecipes.Client("127.0.0.1:2181") as client:
        lock = zkrecipes.InterProcessMutex(client, "/locks/orders")
        with lock:
            ...  # critical section; lock.fencing_token fences your writes

Owners: a lock is held by the current thread, or inside a coroutine by the current asyncio Task,
or by an explicit ``zkrecipes.Owner()`` passed as ``owner=``. Every blocking call releases the
GIL while it waits, can be interrupted with Ctrl-C (leaving no node behind), and has an
``*_async`` twin. All exceptions derive from :class:`ZkRecipesError`.

Started recipes: a recipe whose ``start()`` succeeded stays alive until its ``close()`` (or
``close_async()``), or until its client's ``close()``, even if no reference to it is kept (the
package holds it meanwhile, then lets it go); dropping it does not close it. A registration
(:meth:`ServiceDiscovery.register`) likewise lasts until it is unregistered or its discovery or
client is closed. Locks have no start: release what you acquire.

Callbacks (state listeners, watches, lost-lock and leadership listeners, count listeners) run
on a library thread, never the caller's or the event loop's: those of one client or recipe one
at a time, in the order of their events; they may block and may call the blocking API (not wait
for the next event of the same client or recipe, which comes after them). Logs go to Python's
``logging`` under the ``zkrecipes`` logger (see :func:`set_log_level`).
"""

from __future__ import annotations

# Each module's __all__ is its list of public names; the package takes them as they are (one
# list per module, none repeated here).
from . import _native, atomic, barriers, cache, client, discovery, ensemble, leader, locks, nodes, partition, queues, security, watchers
from . import errors as _errors
from ._owners import Owner
from .atomic import *  # noqa: F401,F403
from .barriers import *  # noqa: F401,F403
from .cache import *  # noqa: F401,F403
from .client import *  # noqa: F401,F403
from .client import _sync_log_level, set_log_level
from .discovery import *  # noqa: F401,F403
from .ensemble import *  # noqa: F401,F403
from .leader import *  # noqa: F401,F403
from .locks import *  # noqa: F401,F403
from .nodes import *  # noqa: F401,F403
from .partition import *  # noqa: F401,F403
from .queues import *  # noqa: F401,F403
from .security import *  # noqa: F401,F403
from .watchers import *  # noqa: F401,F403

# Every exception class, by the one table in errors.py (which has no __all__, so that type
# checkers see each class here).
from .errors import *  # noqa: F401,F403

del BY_CODE  # noqa: F821 (the table stays zkrecipes.errors.BY_CODE)

__version__: str = _native.__version__

# The core's log records go to Python's `logging` (logger "zkrecipes"), at that logger's
# effective level, read again at every Client start (see set_log_level).
_sync_log_level()

__all__ = ["__version__", "Owner", "set_log_level"]
__all__ += client.__all__
__all__ += security.__all__
__all__ += locks.__all__
__all__ += leader.__all__
__all__ += atomic.__all__
__all__ += cache.__all__
__all__ += watchers.__all__
__all__ += nodes.__all__
__all__ += barriers.__all__
__all__ += queues.__all__
__all__ += discovery.__all__
__all__ += ensemble.__all__
__all__ += partition.__all__
# Every exception class but TimeoutError and OverflowError (zkrecipes.TimeoutError /
# zkrecipes.OverflowError: left out of * imports so as not to shadow the builtins they subclass).
__all__ += _errors._public_names()
