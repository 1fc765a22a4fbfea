"""The client: Curator's CuratorFramework — options, start/close, connection states, retry
policies and the plain ZooKeeper operations the recipes are built from."""

from __future__ import annotations

import builtins
import enum
import logging
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _alive, _native
from ._base import Lifecycle, Name
from ._call import run
from ._native import Stat
from .ensemble import EnsembleConfig, _ConfigTuple, _ids, _lines
from .errors import InvalidArgumentError
from .security import Acl, AclArg, AclProvider, SaslOptions, TlsOptions, _acl_list, _acl_provider


__all__ = [
    "Client",
    "ConnectionState",
    "CreateMode",
    "Stat",
    "EventType",
    "WatchedEvent",
    "WatcherType",
    "RetryPolicy",
    "ExponentialBackoffRetry",
    "BoundedExponentialBackoffRetry",
    "RetryNTimes",
    "RetryOneTime",
    "RetryUntilElapsed",
    "RetryForever",
    "Transaction",
    "OpResult",
]


class ConnectionState(Name):
    """Curator's connection states (the core's names, ``_native.CONNECTION_STATES``)."""

    #: The first successful connection.
    CONNECTED = "CONNECTED"
    #: The connection was lost; the session may still be alive. Treat locks and leadership as uncertain.
    SUSPENDED = "SUSPENDED"
    #: Connected again after SUSPENDED or LOST (after LOST, with a new session).
    RECONNECTED = "RECONNECTED"
    #: The session is gone (expired, or SUSPENDED for the whole session timeout); its ephemeral nodes are gone.
    LOST = "LOST"
    #: Connected to a read-only server (only with ``can_be_read_only=True``).
    READ_ONLY = "READ_ONLY"

    @property
    def is_connected(self) -> bool:
        """CONNECTED, RECONNECTED and READ_ONLY."""
        return self in (ConnectionState.CONNECTED, ConnectionState.RECONNECTED, ConnectionState.READ_ONLY)


class CreateMode(Name):
    """ZooKeeper's node types (the core's names, ``_native.CREATE_MODES``)."""

    PERSISTENT = "PERSISTENT"
    PERSISTENT_SEQUENTIAL = "PERSISTENT_SEQUENTIAL"
    EPHEMERAL = "EPHEMERAL"
    EPHEMERAL_SEQUENTIAL = "EPHEMERAL_SEQUENTIAL"
    #: Deleted by the server once its last child is gone.
    CONTAINER = "CONTAINER"
    #: Persistent, deleted once it has had no change and no child for its ``ttl``.
    PERSISTENT_WITH_TTL = "PERSISTENT_WITH_TTL"
    #: ``PERSISTENT_WITH_TTL`` with a sequence number.
    PERSISTENT_SEQUENTIAL_WITH_TTL = "PERSISTENT_SEQUENTIAL_WITH_TTL"


def _seconds(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not value >= 0 or value == float("inf"):
        raise InvalidArgumentError(f"{name} must be a finite number of seconds >= 0, not {value!r} (INVALID_ARGUMENT)")
    return float(value)


def _ttl(ttl: Optional[float]) -> Optional[float]:
    return None if ttl is None else _seconds("ttl", ttl)


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < 2**31:
        raise InvalidArgumentError(f"{name} must be in 0..2^31-1, not {value} (INVALID_ARGUMENT)")
    return value


class RetryPolicy:
    """Base of Curator's retry policies (how an operation is retried after a connection loss).
    Times are in seconds. Session expiry is never retried silently."""

    def _spec(self) -> Tuple[str, float, float, int]:
        raise NotImplementedError


@dataclass(frozen=True)
class ExponentialBackoffRetry(RetryPolicy):
    """``base_sleep * max(1, random(2 ** (n + 1)))`` before retry ``n``, at most ``max_retries``
    (Curator caps it at 29), each sleep at most ``max_sleep`` if given. The default policy is
    ``ExponentialBackoffRetry(1.0, 3)``."""

    base_sleep: float = 1.0
    max_retries: int = 3
    max_sleep: Optional[float] = None

    def __post_init__(self) -> None:
        _seconds("base_sleep", self.base_sleep)
        _count("max_retries", self.max_retries)
        if self.max_sleep is not None:
            _seconds("max_sleep", self.max_sleep)

    def _spec(self) -> Tuple[str, float, float, int]:
        cap = float(2**31 - 1) / 1000.0 if self.max_sleep is None else self.max_sleep
        return ("exponential_backoff", self.base_sleep, cap, self.max_retries)


@dataclass(frozen=True)
class BoundedExponentialBackoffRetry(RetryPolicy):
    """Exponential backoff whose every sleep is at most ``max_sleep`` (Curator's argument order)."""

    base_sleep: float
    max_sleep: float
    max_retries: int

    def __post_init__(self) -> None:
        _seconds("base_sleep", self.base_sleep)
        _seconds("max_sleep", self.max_sleep)
        _count("max_retries", self.max_retries)

    def _spec(self) -> Tuple[str, float, float, int]:
        return ("bounded_exponential_backoff", self.base_sleep, self.max_sleep, self.max_retries)


@dataclass(frozen=True)
class RetryNTimes(RetryPolicy):
    """``n`` retries, ``sleep`` seconds apart."""

    n: int
    sleep: float

    def __post_init__(self) -> None:
        _count("n", self.n)
        _seconds("sleep", self.sleep)

    def _spec(self) -> Tuple[str, float, float, int]:
        return ("n_times", self.sleep, 0.0, self.n)


@dataclass(frozen=True)
class RetryOneTime(RetryPolicy):
    """One retry after ``sleep`` seconds."""

    sleep: float

    def __post_init__(self) -> None:
        _seconds("sleep", self.sleep)

    def _spec(self) -> Tuple[str, float, float, int]:
        return ("one_time", self.sleep, 0.0, 1)


@dataclass(frozen=True)
class RetryUntilElapsed(RetryPolicy):
    """Retries, ``sleep`` seconds apart, while less than ``max_elapsed`` seconds have passed."""

    max_elapsed: float
    sleep: float

    def __post_init__(self) -> None:
        _seconds("max_elapsed", self.max_elapsed)
        _seconds("sleep", self.sleep)

    def _spec(self) -> Tuple[str, float, float, int]:
        return ("until_elapsed", self.max_elapsed, self.sleep, 0)


@dataclass(frozen=True)
class RetryForever(RetryPolicy):
    """Retries forever, ``sleep`` seconds apart."""

    sleep: float

    def __post_init__(self) -> None:
        _seconds("sleep", self.sleep)

    def _spec(self) -> Tuple[str, float, float, int]:
        return ("forever", self.sleep, 0.0, 0)


Credentials = Union[str, bytes]
Auth = Union[Tuple[str, Credentials], Sequence[Tuple[str, Credentials]]]
StateListener = Callable[[ConnectionState], object]


def _auth_list(auth: Optional[Auth]) -> List[Tuple[str, bytes]]:
    if auth is None:
        return []
    if isinstance(auth, tuple) and len(auth) == 2 and isinstance(auth[0], str):
        pairs: Sequence[Tuple[str, Credentials]] = [auth]
    else:
        pairs = auth
    out: List[Tuple[str, bytes]] = []
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError("auth must be (scheme, credentials) or a list of them")
        scheme, cred = pair
        if not isinstance(scheme, str):
            raise TypeError(f"auth scheme must be a str, not {type(scheme).__name__}")
        if isinstance(cred, str):
            try:
                cred = cred.encode("utf-8")
            except UnicodeEncodeError:
                # Not shown: the credentials are a secret (user:password).
                raise InvalidArgumentError(
                    f"auth credentials for scheme {scheme!r} are not valid Unicode text (they hold a lone surrogate, "
                    "e.g. from undecodable bytes in os.environ or sys.argv; pass bytes instead) (INVALID_ARGUMENT)"
                ) from None
        if not isinstance(cred, bytes):
            raise TypeError(f"auth credentials must be str or bytes, not {type(cred).__name__}")
        out.append((scheme, cred))
    return out


class WatcherType(Name):
    """The kinds of watches :meth:`Client.remove_watches` removes (ZooKeeper's ``WatcherType``,
    the core's names, ``_native.WATCHER_TYPES``)."""

    #: One-shot child watches (``get_children(path, watch=...)``).
    CHILDREN = "CHILDREN"
    #: One-shot data watches (``get(path, watch=...)``, ``exists(path, watch=...)``).
    DATA = "DATA"
    #: Every kind.
    ANY = "ANY"
    #: Plain persistent watchers, and node caches on the path.
    PERSISTENT = "PERSISTENT"
    #: Recursive persistent watchers, and the caches rooted at the path.
    PERSISTENT_RECURSIVE = "PERSISTENT_RECURSIVE"


class EventType(Name):
    """What a one-shot watch saw (the core's names, ``_native.EVENT_TYPES``; kazoo's
    ``CHANGED`` and ``CHILD`` are aliases)."""

    CREATED = "CREATED"
    DELETED = "DELETED"
    #: The node's data changed.
    DATA_CHANGED = "DATA_CHANGED"
    #: A child was added or removed.
    CHILDREN_CHANGED = "CHILDREN_CHANGED"
    #: The session ended (expired, or the client closed) before the node changed.
    SESSION_ENDED = "SESSION_ENDED"
    #: The watch was removed (:meth:`Client.remove_watches`) before the node changed.
    WATCH_REMOVED = "WATCH_REMOVED"
    #: kazoo's name of :attr:`DATA_CHANGED`.
    CHANGED = "DATA_CHANGED"
    #: kazoo's name of :attr:`CHILDREN_CHANGED`.
    CHILD = "CHILDREN_CHANGED"


@dataclass(frozen=True)
class WatchedEvent:
    """A watch notification: what happened, and to which path (relative to the namespace)."""

    type: EventType
    path: str


WatchFunc = Callable[[WatchedEvent], object]


def _watch_arg(watch: Optional[WatchFunc]) -> Optional[Callable[[str, str], None]]:
    if watch is None:
        return None
    if not callable(watch):
        raise TypeError(f"watch must be callable, not {type(watch).__name__}")

    def fire(kind: str, path: str) -> None:
        watch(WatchedEvent(EventType(kind), path))

    return fire


def _acl_result(answer: Tuple[List[Tuple[int, str, str]], Stat]) -> Tuple[List[Acl], Stat]:
    entries, stat = answer
    return [Acl(perms, scheme, id) for perms, scheme, id in entries], stat


class Client(Lifecycle):
    """A ZooKeeper client (Curator's CuratorFramework).

    ``hosts`` is ``"host:port[,host:port...][/chroot]"``. Times are in seconds. ``retry`` is one
    of the retry policies (default ``ExponentialBackoffRetry(1.0, 3)``); ``namespace`` makes
    every path relative to ``/namespace``; ``auth`` is ``(scheme, credentials)`` or a list of
    them, e.g. ``("digest", "user:password")``; ``acl`` is the ACL of every node this client
    creates (recipes' nodes included): a :class:`~zkrecipes.Acl` or a list of them, e.g.
    :data:`~zkrecipes.CREATOR_ALL_ACL` (default ``None``: ZooKeeper's ``OPEN_ACL_UNSAFE``).
    ``acl_provider`` (Curator's ACLProvider) chooses the ACL per node instead: a callable
    ``path -> list of Acl | None`` (None: ``acl``), called with the server-side path for each
    create (keep it quick; if it raises, the create fails and nothing is sent), or a mapping
    ``path prefix -> list of Acl`` (the longest matching prefix wins).

    ``tls`` (:class:`~zkrecipes.TlsOptions`) connects over TLS; ``sasl``
    (:class:`~zkrecipes.SaslOptions`) authenticates each connection with SASL. A refused
    authentication (SASL credentials, or a TLS certificate either side refused) is
    :class:`~zkrecipes.AuthFailedError` from :meth:`start`, at once and never retried; a session
    refused later ends LOST and every call raises it. See docs/SECURITY.md.

    ``max_request_bytes`` is the largest request the client sends, in bytes on the wire (path,
    data, ACL; default 1048575, the server's default ``jute.maxbuffer``; at least 1024): a bigger
    one raises :class:`~zkrecipes.InvalidArgumentError` before it is sent, instead of the server
    dropping the connection. Raise it only together with the servers' ``jute.maxbuffer``.

    ``track_ensemble=True`` follows the ensemble's configuration (Curator's EnsembleTracker): the
    client reads ``/zookeeper/config`` at each connection and each change, and its server list
    becomes the members' client addresses (:attr:`current_connect_string`), so members added or
    removed by :meth:`reconfig` are used without ending the session. Not with ``tls``
    (the configuration names only plaintext client ports: :class:`~zkrecipes.InvalidArgumentError`).

    Nothing connects until :meth:`start` (or ``with Client(...) as client:``). After
    :meth:`close` every call raises :class:`~zkrecipes.ClosedError`. After the session is LOST
    the client opens a new session by itself and reports RECONNECTED.

    Every blocking call releases the GIL while it waits and can be interrupted with Ctrl-C;
    every one has an ``*_async`` twin for asyncio.

    Callbacks (state listeners, watches) run on a library thread, never the caller's or the
    event loop's: those of one client one at a time, in the order of their events (a watch in
    order with the state changes); they may block and may call this API. A callback that
    waits for an event the same client would deliver next waits forever.
    """

    def __init__(
        self,
        hosts: str,
        *,
        session_timeout: float = 60.0,
        connection_timeout: float = 15.0,
        retry: Optional[RetryPolicy] = None,
        namespace: Optional[str] = None,
        auth: Optional[Auth] = None,
        can_be_read_only: bool = False,
        acl: Optional[AclArg] = None,
        acl_provider: Optional[AclProvider] = None,
        tls: Optional[TlsOptions] = None,
        sasl: Optional[SaslOptions] = None,
        max_request_bytes: Optional[int] = None,
        track_ensemble: bool = False,
    ) -> None:
        if not isinstance(hosts, str):
            raise TypeError(f"hosts must be a str, not {type(hosts).__name__}")
        if tls is not None and not isinstance(tls, TlsOptions):
            raise TypeError(f"tls must be a zkrecipes.TlsOptions, not {type(tls).__name__}")
        if sasl is not None and not isinstance(sasl, SaslOptions):
            raise TypeError(f"sasl must be a zkrecipes.SaslOptions, not {type(sasl).__name__}")
        acl_rules, acl_func = _acl_provider(acl_provider)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a zkrecipes retry policy, not {type(retry).__name__}")
        if namespace is not None and not isinstance(namespace, str):
            raise TypeError(f"namespace must be a str, not {type(namespace).__name__}")
        self._native = _native.Client(
            hosts,
            _seconds("session_timeout", session_timeout),
            _seconds("connection_timeout", connection_timeout),
            None if retry is None else retry._spec(),
            namespace,
            _auth_list(auth),
            bool(can_be_read_only),
            _acl_list(acl),
            None if tls is None else tls._spec(),
            None if sasl is None else sasl._spec(),
            acl_rules,
            acl_func,
            max_request_bytes,
            bool(track_ensemble),
        )
        self._listener_ids: Dict[int, int] = {}

    def __repr__(self) -> str:
        return f"<zkrecipes.Client hosts={self.hosts!r} state={self.state} session_id={self.session_id:#x}>"

    # ---- life cycle ----

    def start(self) -> "Client":
        """Connects, waiting up to the connection timeout (raises :class:`~zkrecipes.TimeoutError`).
        Starting a started client does nothing. Returns the client. The core's log level follows
        the ``zkrecipes`` logger's effective level again (see :func:`zkrecipes.set_log_level`)."""
        _sync_log_level()
        self._native.start().wait()
        return self

    async def start_async(self) -> "Client":
        """:meth:`start` for asyncio."""
        _sync_log_level()
        await run(self._native.start())
        return self

    def close(self) -> None:
        """Ends the session: its ephemeral nodes (locks, latches) vanish at once. Idempotent.
        The recipes started on this client and not closed end with it, and the package lets go
        of them (it keeps every started recipe alive until its close or its client's)."""
        try:
            self._native.close().wait()
        finally:
            _alive.release_client(self)

    async def close_async(self) -> None:
        """:meth:`close` for asyncio."""
        try:
            await run(self._native.close())
        finally:
            _alive.release_client(self)


    # ---- state ----

    @property
    def state(self) -> Optional[ConnectionState]:
        """The connection state; None before :meth:`start` and after :meth:`close`."""
        s = self._native.state
        return None if s is None else ConnectionState(s)

    @property
    def started(self) -> bool:
        """Whether :meth:`start` succeeded and :meth:`close` was not called."""
        return self._native.started

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._native.closed

    @property
    def session_id(self) -> int:
        """The current session id (it changes after LOST then RECONNECTED); 0 when not connected."""
        return self._native.session_id

    @property
    def session_timeout(self) -> float:
        """The negotiated session timeout in seconds (the requested one before start)."""
        return self._native.session_timeout

    @property
    def hosts(self) -> str:
        """The connect string."""
        return self._native.hosts

    def add_state_listener(self, listener: StateListener) -> int:
        """Calls ``listener(state)`` on every connection-state change, on the client's library
        thread, one call at a time, in order. A listener added before :meth:`start` also hears
        the first CONNECTED.
        Exceptions it raises are reported through ``sys.unraisablehook``. Returns an id for
        :meth:`remove_state_listener`."""
        if not callable(listener):
            raise TypeError("listener must be callable")

        def call(state: str) -> None:
            listener(ConnectionState(state))

        lid = self._native.add_state_listener(call)
        self._listener_ids[id(listener)] = lid
        return lid

    def remove_state_listener(self, listener: Union[int, StateListener]) -> bool:
        """Removes a listener (by the id :meth:`add_state_listener` returned, or the callable);
        whether it was there. Listener ids are unique in the process: an id that another client
        or recipe gave out raises :class:`InvalidArgumentError`."""
        if isinstance(listener, int):
            return self._native.remove_state_listener(listener)
        lid = self._listener_ids.pop(id(listener), None)
        return lid is not None and self._native.remove_state_listener(lid)

    # ---- plain operations ----

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        mode: CreateMode = CreateMode.PERSISTENT,
        create_parents: Union[bool, str] = False,
        protected: bool = False,
        compressed: bool = False,
        ttl: Optional[float] = None,
        acl: Optional[AclArg] = None,
    ) -> str:
        """Creates a node and returns its actual path (with the sequence number and the
        protected prefix, if any). ``create_parents`` makes missing parents as CONTAINER nodes
        (``True``) or PERSISTENT nodes (``"persistent"``, Curator's creatingParentsIfNeeded);
        ``protected`` is Curator's protected mode (``_c_<uuid>-`` prefix, found again after a
        connection loss instead of created twice); ``compressed`` stores the data as Curator's
        GZIP provider does (read it with ``get_data(..., compressed=True)``); ``ttl`` (seconds)
        is required for the ``*_WITH_TTL`` modes. A request larger than the server accepts
        (path, data and ACL over ~1 MiB) is :class:`~zkrecipes.InvalidArgumentError` at once.
        ``acl`` is this node's ACL instead of the client's (``acl`` / ``acl_provider``); parents
        made on the way keep the client's (Curator's ``withACL``)."""
        return self._create(path, data, mode, create_parents, protected, compressed, ttl, acl).wait()

    async def create_async(
        self,
        path: str,
        data: bytes = b"",
        *,
        mode: CreateMode = CreateMode.PERSISTENT,
        create_parents: Union[bool, str] = False,
        protected: bool = False,
        compressed: bool = False,
        ttl: Optional[float] = None,
        acl: Optional[AclArg] = None,
    ) -> str:
        """:meth:`create` for asyncio."""
        return await run(self._create(path, data, mode, create_parents, protected, compressed, ttl, acl))

    def _create(
        self,
        path: str,
        data: bytes,
        mode: CreateMode,
        create_parents: Union[bool, str],
        protected: bool,
        compressed: bool = False,
        ttl: Optional[float] = None,
        acl: Optional[AclArg] = None,
    ) -> "_native.Call[str]":
        if create_parents not in (True, False, "persistent"):
            raise InvalidArgumentError(
                f"create_parents must be False, True (container parents) or \"persistent\", not {create_parents!r} (INVALID_ARGUMENT)"
            )
        persistent = create_parents == "persistent"
        if ttl is not None:
            ttl = _seconds("ttl", ttl)
        return self._native.create(
            path, data, CreateMode(mode).value, create_parents is True, protected, persistent, compressed, ttl,
            _acl_list(acl),
        )

    def get_acl(self, path: str) -> Tuple[List[Acl], Stat]:
        """The node's ACL and stat (Curator's ``getACL()``, kazoo's ``get_acls``); reading it
        needs READ or ADMIN permission (:class:`~zkrecipes.NoAuthError` otherwise)."""
        return _acl_result(self._native.get_acl(path).wait())

    async def get_acl_async(self, path: str) -> Tuple[List[Acl], Stat]:
        """:meth:`get_acl` for asyncio."""
        return _acl_result(await run(self._native.get_acl(path)))

    def set_acl(self, path: str, acl: AclArg, *, version: int = -1) -> Stat:
        """Replaces the node's ACL, only at ACL ``version`` (the stat's ``aversion``) unless it is
        -1; returns the new stat (needs ADMIN permission)."""
        return self._native.set_acl(path, _acl_list(acl) or [], version).wait()

    async def set_acl_async(self, path: str, acl: AclArg, *, version: int = -1) -> Stat:
        """:meth:`set_acl` for asyncio."""
        return await run(self._native.set_acl(path, _acl_list(acl) or [], version))

    def transaction(self) -> "Transaction":
        """A new :class:`~zkrecipes.Transaction` (Curator's ``transaction()``)."""
        return Transaction(self)

    def get_data(
        self, path: str, watch: Optional[WatchFunc] = None, *, compressed: bool = False
    ) -> Tuple[bytes, Stat]:
        """The node's data and stat (:class:`~zkrecipes.NoNodeError` if it does not exist).
        ``watch`` (kazoo-like) is called once with a :class:`WatchedEvent` when the data changes
        or the node is deleted (or the session ends first), on the client's library thread.
        ``compressed`` decompresses data stored as Curator's GZIP provider does
        (:class:`~zkrecipes.CorruptedDataError` if it is not)."""
        return self._native.get_data(path, _watch_arg(watch), compressed).wait()

    async def get_data_async(
        self, path: str, watch: Optional[WatchFunc] = None, *, compressed: bool = False
    ) -> Tuple[bytes, Stat]:
        """:meth:`get_data` for asyncio (``watch`` still runs on the library thread)."""
        return await run(self._native.get_data(path, _watch_arg(watch), compressed))

    def set_data(self, path: str, data: bytes, *, version: int = -1, compressed: bool = False) -> Stat:
        """Sets the node's data, only at ``version`` unless it is -1; returns the new stat.
        ``compressed`` stores it as Curator's GZIP provider does."""
        return self._native.set_data(path, data, version, compressed).wait()

    async def set_data_async(self, path: str, data: bytes, *, version: int = -1, compressed: bool = False) -> Stat:
        """:meth:`set_data` for asyncio."""
        return await run(self._native.set_data(path, data, version, compressed))

    def exists(self, path: str, watch: Optional[WatchFunc] = None) -> Optional[Stat]:
        """The node's stat, or None if it does not exist. ``watch`` is called once with a
        :class:`WatchedEvent` when the node is created, deleted or its data changes."""
        return self._native.exists(path, _watch_arg(watch)).wait()

    async def exists_async(self, path: str, watch: Optional[WatchFunc] = None) -> Optional[Stat]:
        """:meth:`exists` for asyncio."""
        return await run(self._native.exists(path, _watch_arg(watch)))

    def get_children(self, path: str, watch: Optional[WatchFunc] = None) -> List[str]:
        """The names of the node's children (in the server's order). ``watch`` is called once
        with a :class:`WatchedEvent` when a child is added or removed or the node is deleted."""
        return self._native.get_children(path, _watch_arg(watch)).wait()

    async def get_children_async(self, path: str, watch: Optional[WatchFunc] = None) -> List[str]:
        """:meth:`get_children` for asyncio."""
        return await run(self._native.get_children(path, _watch_arg(watch)))

    def sync(self, path: str) -> None:
        """ZooKeeper's sync (Curator's ``sync()``, kazoo's ``sync``): the server this client
        talks to catches up with the leader before answering, so a read issued after this
        returns sees every write committed before the call, by any client. A reconnection in
        between (to another server) loses that: sync again once the connection is back. A
        missing node is fine."""
        self._native.sync(path).wait()

    async def sync_async(self, path: str) -> None:
        """:meth:`sync` for asyncio."""
        await run(self._native.sync(path))

    def remove_watches(self, path: str, type: Union[WatcherType, str], local: bool = False) -> None:
        """Removes this client's watches of ``type`` on ``path`` (ZooKeeper's
        ``removeAllWatches``, Curator's ``watchers().removeAll()``): each removed one-shot watch
        is called with :attr:`EventType.WATCH_REMOVED`; a removed persistent watcher hears
        ``WATCH_REMOVED`` last. Raises :class:`~zkrecipes.NoWatcherError` when the client has no
        watch of that kind there.

        One-shot kinds are removed on the server first: with ``local=False`` a failure to reach
        it raises (:class:`~zkrecipes.ConnectionLossError`) and nothing is removed; with
        ``local=True`` one try is made and the watches are removed here whatever it says.
        Persistent kinds are removed here at once (the path's one shared watch leaves the server
        with its last user). A recipe waiting on a removed watch reads again and sets a new one;
        a cache whose watch is removed sets it again and resyncs. ZooKeeper before 3.9 cannot
        remove a persistent watch by its kind (ZOOKEEPER-4472) and strips half of one with a
        data or child removal (ZOOKEEPER-4471): such a watch is set again and its users hear
        ``RECONNECTED`` (read again)."""
        self._remove_watches(path, type, local).wait()

    async def remove_watches_async(
        self, path: str, type: Union[WatcherType, str], local: bool = False
    ) -> None:
        """:meth:`remove_watches` for asyncio."""
        await run(self._remove_watches(path, type, local))

    def _remove_watches(self, path: str, type: Union[WatcherType, str], local: bool) -> "_native.Call[None]":
        if not isinstance(type, str):
            raise TypeError(f"type must be a zkrecipes.WatcherType, not {builtins.type(type).__name__}")
        return _native.remove_watches(self._native, path, str(type), bool(local))

    def wait_for_state(self, timeout: Optional[float] = None) -> bool:
        """Curator's ``blockUntilConnected(timeout)``: waits until the client is connected
        (CONNECTED, RECONNECTED or READ_ONLY; at once if it is now), at most ``timeout``
        seconds (None or ``math.inf``: no limit; 0: look once). True once connected, False when
        the time ran out first. Raises :class:`~zkrecipes.ClosedError` on a closed client."""
        return _native.wait_for_state(self._native, timeout).wait()

    async def wait_for_state_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`wait_for_state` for asyncio."""
        return await run(_native.wait_for_state(self._native, timeout))

    @property
    def max_request_bytes(self) -> int:
        """The largest request the client sends, in bytes (the ``max_request_bytes`` option;
        default 1048575, the server's default ``jute.maxbuffer``). A bigger request raises
        :class:`~zkrecipes.InvalidArgumentError` before it is sent."""
        return _native.max_request_bytes(self._native)

    # ---- dynamic ensembles ----

    def get_config(self) -> EnsembleConfig:
        """The ensemble's configuration (``/zookeeper/config``, Curator's
        ``getConfig().forEnsemble()``): its members with their ids, addresses, roles and client
        ports, and its version. Any session may read it; a standalone server lists no members."""
        return EnsembleConfig._of(_native.get_config(self._native).wait())

    async def get_config_async(self) -> EnsembleConfig:
        """:meth:`get_config` for asyncio."""
        return EnsembleConfig._of(await run(_native.get_config(self._native)))

    def reconfig(
        self,
        *,
        joining: Union[None, str, Sequence[str]] = None,
        leaving: Union[None, int, Sequence[int]] = None,
        new_members: Optional[Sequence[str]] = None,
        from_config: int = -1,
    ) -> EnsembleConfig:
        """Changes the ensemble's members (ZooKeeper's ``reconfig``, Curator's ``reconfig()``)
        and returns the new configuration. Incremental: ``joining`` servers
        (``"server.ID=HOST:QUORUM:ELECTION[:ROLE];[HOST:]CLIENTPORT"`` lines, as
        :attr:`EnsembleMember.server_line` gives them) are added, ``leaving`` member ids removed.
        ``new_members``: the ensemble becomes exactly these servers (not with ``joining`` or
        ``leaving``). ``from_config``: only if the configuration is still this version
        (:attr:`EnsembleConfig.version`; :class:`~zkrecipes.BadVersionError` if not); -1: any.

        Needs servers with ``reconfigEnabled=true`` (else :class:`~zkrecipes.ServerError`,
        ZooKeeper's code -123, the message saying so) and a session allowed to write
        ``/zookeeper/config``: a digest superuser, or servers with ``skipACL``
        (else :class:`~zkrecipes.NoAuthError`). Joining servers must be running and synced with
        the leader first. Bad lines, an id twice, a server joining and leaving, an empty or
        mixed ``new_members`` raise :class:`~zkrecipes.InvalidArgumentError` before anything is
        sent. Safe after a lost reply: the change is sent again only if it is not in effect. A
        ``from_config`` that is no longer current raises :class:`~zkrecipes.BadVersionError`
        before anything is sent; a change of nothing but the version whose reply was lost while
        the version moved raises :class:`~zkrecipes.OutcomeUnknownError`."""
        return EnsembleConfig._of(self._reconfig(joining, leaving, new_members, from_config).wait())

    async def reconfig_async(
        self,
        *,
        joining: Union[None, str, Sequence[str]] = None,
        leaving: Union[None, int, Sequence[int]] = None,
        new_members: Optional[Sequence[str]] = None,
        from_config: int = -1,
    ) -> EnsembleConfig:
        """:meth:`reconfig` for asyncio."""
        return EnsembleConfig._of(await run(self._reconfig(joining, leaving, new_members, from_config)))

    def _reconfig(
        self,
        joining: Union[None, str, Sequence[str]],
        leaving: Union[None, int, Sequence[int]],
        new_members: Optional[Sequence[str]],
        from_config: int,
    ) -> "_native.Call[_ConfigTuple]":
        if not isinstance(from_config, int) or isinstance(from_config, bool):
            raise TypeError(f"from_config must be an int, not {type(from_config).__name__}")
        members = None if new_members is None else _lines("new_members", new_members)
        return _native.reconfig(
            self._native, _lines("joining", joining), _ids(leaving), members, from_config
        )

    @property
    def current_connect_string(self) -> str:
        """The servers the client connects to now: the hosts it was made with or, with
        ``track_ensemble=True``, the ensemble's members as the tracker last read them (with the
        chroot)."""
        return _native.current_connect_string(self._native)

    def delete(self, path: str, *, version: int = -1, guaranteed: bool = False, recursive: bool = False) -> None:
        """Deletes a node: only at ``version`` unless -1; ``recursive`` deletes its children first;
        ``guaranteed`` keeps retrying in the background after a connection loss."""
        self._native.delete(path, version, guaranteed, recursive).wait()

    async def delete_async(
        self, path: str, *, version: int = -1, guaranteed: bool = False, recursive: bool = False
    ) -> None:
        """:meth:`delete` for asyncio."""
        await run(self._native.delete(path, version, guaranteed, recursive))

    # ---- diagnostics and testing ----

    def request_counts(self) -> Dict[str, int]:
        """Requests sent so far, per operation (create, delete, get_data, set_data, exists, get_children)."""
        return self._native.request_counts()

    def _expire_session_for_testing(self) -> None:
        """FOR TESTS: expires this client's session on the server (as Curator's KillSession).
        The client reports LOST, then opens a new session and reports RECONNECTED. Needs a build
        with the testing kit (the ``testing`` or ``kit`` feature); otherwise
        :class:`InvalidArgumentError`, as Node's ``_expireSessionForTesting`` rejects with
        ``ZKR_INVALID_ARGUMENT``."""
        expire = getattr(self._native, "_expire_session_for_testing", None)
        if expire is None:
            raise InvalidArgumentError(
                "this build of zkrecipes has no testing kit (build it with the `testing` or `kit` "
                "feature: maturin develop --features kit) (INVALID_ARGUMENT)"
            )
        expire().wait()


def _core_level(level: int) -> Optional[str]:
    """The core's level for a Python level (TRACE is below DEBUG; above ERROR: off)."""
    if level > logging.ERROR:
        return None
    for name, at_most in (("TRACE", 5), ("DEBUG", logging.DEBUG), ("INFO", logging.INFO), ("WARN", logging.WARNING)):
        if level <= at_most:
            return name
    return "ERROR"


def set_log_level(level: Optional[int] = None) -> None:
    """Sets how much of the core's logging reaches Python's :mod:`logging` (logger ``zkrecipes``
    and a child per part: ``zkrecipes.client.connection``, ``zkrecipes.lock``...). ``level``
    (``logging.DEBUG``...) also becomes the ``zkrecipes`` logger's level; None re-reads that
    logger's effective level. zkrecipes does this at import and at every :meth:`Client.start`,
    so ``logging.getLogger("zkrecipes").setLevel(logging.DEBUG)`` before starting a client is
    enough; call this to apply a change to running clients at once. Records are handed to
    ``logging`` on a library thread, one at a time, in order."""
    logger = logging.getLogger("zkrecipes")
    if level is not None:
        logger.setLevel(level)
    _native.set_log_level(_core_level(logger.getEffectiveLevel()))


def _sync_log_level() -> None:
    try:
        set_log_level()
    except InvalidArgumentError:
        # A Rust program embedding Python installed its own `tracing` subscriber: it logs.
        pass


def _native_client(client: Client) -> _native.Client:
    """The native client of ``client``, checked (every recipe's constructor takes it)."""
    if not isinstance(client, Client):
        raise TypeError(f"client must be a zkrecipes.Client, not {type(client).__name__}")
    return client._native


class _OpKind(str, enum.Enum):
    CREATE = "create"
    DELETE = "delete"
    SET_DATA = "set_data"
    CHECK = "check"


@dataclass(frozen=True)
class OpResult:
    """What one operation of a committed :class:`Transaction` did: ``type`` is ``"create"``,
    ``"delete"``, ``"set_data"`` or ``"check"``; ``path`` the created node's actual path
    (creates only); ``stat`` the node's new stat (creates and set_data)."""

    type: str
    path: Optional[str] = None
    stat: Optional[Stat] = None


_Spec = Tuple[str, str, bytes, str, int, Optional[float], Optional[List[Tuple[int, str, str]]]]


class Transaction:
    """Curator's ``transaction()``: operations committed all together or not at all. Build it
    with :meth:`Client.transaction`, chain :meth:`create`, :meth:`delete`, :meth:`set_data`,
    :meth:`check`, then :meth:`commit`. A failed commit applied nothing and raises the failing
    operation's error (:class:`~zkrecipes.BadVersionError`, :class:`~zkrecipes.NoNodeError`...)
    whose ``index`` is that operation's position; a reply lost with the connection raises
    :class:`~zkrecipes.OutcomeUnknownError` (never resent)."""

    def __init__(self, client: Client) -> None:
        self._client = _native_client(client)
        self._ops: List[_Spec] = []

    def __repr__(self) -> str:
        return f"<zkrecipes.Transaction of {len(self._ops)} operations>"

    def create(
        self,
        path: str,
        data: bytes = b"",
        mode: CreateMode = CreateMode.PERSISTENT,
        *,
        ttl: Optional[float] = None,
        acl: Optional[AclArg] = None,
    ) -> "Transaction":
        """Adds a create (no parents); ``ttl`` in seconds for the ``*_WITH_TTL`` modes; ``acl`` is
        this node's ACL instead of the client's (Curator's ``withACL``)."""
        self._ops.append((_OpKind.CREATE.value, path, data, CreateMode(mode).value, -1, _ttl(ttl), _acl_list(acl)))
        return self

    def delete(self, path: str, version: int = -1) -> "Transaction":
        """Adds a delete, at ``version`` unless -1."""
        self._ops.append((_OpKind.DELETE.value, path, b"", "PERSISTENT", version, None, None))
        return self

    def set_data(self, path: str, data: bytes, version: int = -1) -> "Transaction":
        """Adds a set data, at ``version`` unless -1."""
        self._ops.append((_OpKind.SET_DATA.value, path, data, "PERSISTENT", version, None, None))
        return self

    def check(self, path: str, version: int) -> "Transaction":
        """Adds a check that ``path`` is at data ``version``."""
        self._ops.append((_OpKind.CHECK.value, path, b"", "PERSISTENT", version, None, None))
        return self

    def commit(self) -> List[OpResult]:
        """Commits: every operation applied, in order, or none; one result per operation."""
        return [OpResult(*r) for r in _native.commit_transaction(self._client, self._ops).wait()]

    async def commit_async(self) -> List[OpResult]:
        """:meth:`commit` for asyncio."""
        return [OpResult(*r) for r in await run(_native.commit_transaction(self._client, self._ops))]
