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

Callbacks (state listeners, watches, lost-lock and leadership listeners, count listeners) run
on a library thread, never the caller's or the event loop's: those of one client or recipe one
at a time, in the order of their events; they may block and may call the blocking API (not wait
for the next event of the same client or recipe, which comes after them). Logs go to Python's
``logging`` under the ``zkrecipes`` logger (see :func:`set_log_level`).
"""

from __future__ import annotations

from . import _native
from ._owners import Owner
from .atomic import (
    AtomicStats,
    AtomicValue,
    DistributedAtomicInteger,
    DistributedAtomicLong,
    PromotedToLock,
    SharedCount,
    VersionedValue,
)
from .client import _sync_log_level
from .client import (
    BoundedExponentialBackoffRetry,
    Client,
    ConnectionState,
    CreateMode,
    EventType,
    ExponentialBackoffRetry,
    OpResult,
    RetryForever,
    RetryNTimes,
    RetryOneTime,
    RetryPolicy,
    RetryUntilElapsed,
    Stat,
    Transaction,
    WatchedEvent,
    set_log_level,
)
from .leader import (
    CancelReason,
    CloseMode,
    LatchState,
    LeaderLatch,
    LeaderLatchListener,
    LeaderObserver,
    LeaderSelector,
    LeadershipContext,
    LeadershipLostPolicy,
    Participant,
)
from .locks import (
    CohortOptions,
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    Lease,
    LockLostPolicy,
    attempt_revoke,
)
from .security import (
    CREATOR_ALL_ACL,
    OPEN_ACL_UNSAFE,
    READ_ACL_UNSAFE,
    Acl,
    Perms,
    make_acl,
    make_digest_acl,
    make_digest_acl_credential,
)
from . import errors as _errors
# Every exception class, by the one table in errors.py (which has no __all__, so that type
# checkers see each class here).
from .errors import *  # noqa: F401,F403

del BY_CODE  # noqa: F821 (the table stays zkrecipes.errors.BY_CODE)

from .cache import (
    CacheEvent,
    CacheEventType,
    ChildData,
    CuratorCache,
    NodeCache,
    PathChildrenCache,
    StartMode,
    TreeCache,
)
from .watchers import PersistentWatcher, WatcherEvent, WatcherEventType
from .nodes import GroupMember, NodeEvent, PersistentNode, PersistentTtlNode
from .barriers import DistributedBarrier, DistributedDoubleBarrier
from .queues import (
    DistributedDelayQueue,
    DistributedIdQueue,
    DistributedPriorityQueue,
    DistributedQueue,
    QueueItem,
    SimpleDistributedQueue,
)

__version__: str = _native.__version__

# The core's log records go to Python's `logging` (logger "zkrecipes"), at that logger's
# effective level, read again at every Client start (see set_log_level).
_sync_log_level()

__all__ = [
    "__version__",
    # client
    "Client",
    "ConnectionState",
    "CreateMode",
    "Stat",
    "EventType",
    "WatchedEvent",
    "RetryPolicy",
    "ExponentialBackoffRetry",
    "BoundedExponentialBackoffRetry",
    "RetryNTimes",
    "RetryOneTime",
    "RetryUntilElapsed",
    "RetryForever",
    "set_log_level",
    # ACLs of created nodes
    "Acl",
    "Perms",
    "OPEN_ACL_UNSAFE",
    "CREATOR_ALL_ACL",
    "READ_ACL_UNSAFE",
    "make_acl",
    "make_digest_acl",
    "make_digest_acl_credential",
    # owners
    "Owner",
    # locks
    "InterProcessMutex",
    "CohortOptions",
    "InterProcessSemaphoreMutex",
    "InterProcessReadWriteLock",
    "InterProcessSemaphoreV2",
    "InterProcessMultiLock",
    "Lease",
    "LockLostPolicy",
    "attempt_revoke",
    # leader election
    "LeaderLatch",
    "LeaderLatchListener",
    "LeaderSelector",
    "LeaderObserver",
    "LeadershipContext",
    "CancelReason",
    "CloseMode",
    "LatchState",
    "LeadershipLostPolicy",
    "Participant",
    # counters
    "DistributedAtomicLong",
    "DistributedAtomicInteger",
    "AtomicValue",
    "AtomicStats",
    "PromotedToLock",
    "SharedCount",
    "VersionedValue",
    # caches
    "CuratorCache",
    "NodeCache",
    "PathChildrenCache",
    "TreeCache",
    "CacheEvent",
    "CacheEventType",
    "ChildData",
    "StartMode",
    "PersistentWatcher",
    "WatcherEvent",
    "WatcherEventType",
    # nodes and membership, transactions
    "PersistentNode",
    "PersistentTtlNode",
    "GroupMember",
    "NodeEvent",
    "Transaction",
    "OpResult",
    # barriers and queues
    "DistributedBarrier",
    "DistributedDoubleBarrier",
    "SimpleDistributedQueue",
    "DistributedQueue",
    "DistributedIdQueue",
    "DistributedPriorityQueue",
    "DistributedDelayQueue",
    "QueueItem",
]
# Every exception class but TimeoutError and OverflowError (zkrecipes.TimeoutError /
# zkrecipes.OverflowError: left out of * imports so as not to shadow the builtins they subclass).
__all__ += _errors._public_names()
