"""Nodes and membership: :class:`PersistentNode`, :class:`PersistentTtlNode` and
:class:`GroupMember` (Curator's ``nodes`` package), with Curator 5.x's node layout.
(:class:`~zkrecipes.Transaction` lives with the client, as in the core; it is importable from
here too.)

Beyond Curator: an existing ephemeral node of another live session at our path is never taken
over — :meth:`PersistentNode.wait_for_initial_create` and :meth:`GroupMember.start` raise
:class:`~zkrecipes.ConflictError` and that node is left untouched; close deletes only our own
node, at the version just read; a protected sequential node is created again at the path it got
(never piled up); the node is reinstated after any outage.

Listeners run on a library thread (never the event loop's), one at a time, in event order; they
may block and may call this API.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Union

from . import _alive, _native
from ._base import Lifecycle, Name
from ._call import run
from .client import Client, CreateMode, _native_client, _seconds, _ttl
from .client import OpResult as OpResult, Transaction as Transaction

__all__ = [
    "NodeEvent",
    "PersistentNode",
    "PersistentTtlNode",
    "GroupMember",
]


class NodeEvent(Name):
    """What a :class:`PersistentNode` listener hears (the core's names)."""

    #: The node is on the server, ours, with our data (after each create or check).
    REGISTERED = "REGISTERED"
    #: The node is known to be gone (deleted, session ended or LOST); it is being created again.
    UNREGISTERED = "UNREGISTERED"
    #: The path holds another live session's node: left untouched; the node stops trying.
    CONFLICT = "CONFLICT"


NodeListener = Callable[[NodeEvent, str], object]
MembersListener = Callable[[Dict[str, bytes]], object]


class PersistentNode(Lifecycle):
    """Curator's PersistentNode: a node (any :class:`~zkrecipes.CreateMode`, optionally
    ``protected``) kept on the server while started — created again after a delete, checked
    after every reconnect, created again after a session expiry. ``ttl`` (seconds) is required
    for the ``*_WITH_TTL`` modes.

    ``with PersistentNode(client, "/services/api/host-1", CreateMode.EPHEMERAL, b"10.0.0.1:80") as n:``
    starts it (returning at once; see :meth:`wait_for_initial_create`) and closes it (deleting
    our node) at the end.
    """

    def __init__(
        self,
        client: Client,
        path: str,
        mode: CreateMode,
        data: bytes = b"",
        *,
        protected: bool = False,
        ttl: Optional[float] = None,
    ) -> None:
        self._n = _native.PersistentNode(
            _native_client(client), path, CreateMode(mode).value, data, protected, _ttl(ttl)
        )
        self._client = client
        self._listener_ids: Dict[int, int] = {}

    def __repr__(self) -> str:
        return f"<zkrecipes.PersistentNode path={self.path!r} actual_path={self.actual_path!r}>"

    def start(self) -> None:
        """Starts keeping the node, in the background. Once started the node stays alive until :meth:`close` (or the client's close), even if no reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio (it does not wait either)."""
        self.start()

    def wait_for_initial_create(self, timeout: Optional[float] = None) -> bool:
        """Waits until the node was first created (True) or ``timeout`` seconds pass (False;
        None: no limit). Raises :class:`~zkrecipes.ConflictError` when the path holds another
        session's node (left untouched)."""
        return self._n.wait_for_initial_create(timeout).wait()

    async def wait_for_initial_create_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`wait_for_initial_create` for asyncio."""
        return await run(self._n.wait_for_initial_create(timeout))

    @property
    def path(self) -> str:
        """The path given at construction."""
        return self._n.path

    @property
    def actual_path(self) -> Optional[str]:
        """The node's actual path (sequence number, protected prefix) once created; None before."""
        return self._n.actual_path

    @property
    def data(self) -> bytes:
        """The data this node keeps."""
        return self._n.data

    @property
    def registered(self) -> bool:
        """Whether the node is on the server as far as this client knows."""
        return self._n.registered

    def set_data(self, data: bytes) -> None:
        """Sets the node's data: written now when connected, else on the next create or
        reconnect. Returns at once."""
        self._n.set_data(data)

    def add_listener(self, listener: NodeListener) -> int:
        """Calls ``listener(event, actual_path)`` with each :class:`NodeEvent`; returns an id."""
        if not callable(listener):
            raise TypeError("listener must be callable")

        def call(kind: str, path: str) -> None:
            listener(NodeEvent(kind), path)

        lid = self._n.add_listener(call)
        self._listener_ids[id(listener)] = lid
        return lid

    def remove_listener(self, listener: Union[int, NodeListener]) -> bool:
        """Removes a listener (by id or the callable)."""
        if isinstance(listener, int):
            return self._n.remove_listener(listener)
        lid = self._listener_ids.pop(id(listener), None)
        return lid is not None and self._n.remove_listener(lid)

    def close(self) -> None:
        """Stops keeping the node and deletes it (our own node only)."""
        with _alive.closing(self._client, self):
            self._n.close().wait()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio."""
        with _alive.closing(self._client, self):
            await run(self._n.close())


class PersistentTtlNode(Lifecycle):
    """Curator's PersistentTtlNode: a CONTAINER node kept at ``path`` with ``data``, and a child
    ``path/touch`` of ``ttl`` seconds touched every ``ttl / 2``. Once its owner stops (closed,
    crashed, killed), the node is gone within the TTL plus the server's container check
    interval. Closing does not delete it. Needs ``zookeeper.extendedTypesEnabled=true``."""

    def __init__(self, client: Client, path: str, ttl: float, data: bytes = b"") -> None:
        self._n = _native.PersistentTtlNode(_native_client(client), path, _seconds("ttl", ttl), data)
        self._client = client

    def __repr__(self) -> str:
        return f"<zkrecipes.PersistentTtlNode path={self.path!r}>"

    def start(self) -> None:
        """Starts keeping the node and touching its child. Once started it stays alive until :meth:`close` (or the client's close), even if no reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        self.start()

    def wait_for_initial_create(self, timeout: Optional[float] = None) -> bool:
        """As :meth:`PersistentNode.wait_for_initial_create`."""
        return self._n.wait_for_initial_create(timeout).wait()

    async def wait_for_initial_create_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`wait_for_initial_create` for asyncio."""
        return await run(self._n.wait_for_initial_create(timeout))

    @property
    def path(self) -> str:
        """The node's path."""
        return self._n.path

    @property
    def data(self) -> bytes:
        """The node's data as last set."""
        return self._n.data

    def set_data(self, data: bytes) -> None:
        """Sets the node's data (as :meth:`PersistentNode.set_data`)."""
        self._n.set_data(data)

    def close(self) -> None:
        """Stops touching and keeping the node; it goes once its TTL passes."""
        with _alive.closing(self._client, self):
            self._n.close().wait()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio."""
        with _alive.closing(self._client, self):
            await run(self._n.close())


class GroupMember(Lifecycle):
    """Curator's GroupMember: this member's ephemeral node ``path/member_id`` holding
    ``payload`` (kept like a :class:`PersistentNode`), and the group's membership.

    ``with GroupMember(client, "/services/api", "host-1", b"10.0.0.1:80") as m:`` joins (returns
    once registered; :class:`~zkrecipes.ConflictError` if another live session holds this id,
    whose node is left untouched) and leaves at the end.
    """

    def __init__(self, client: Client, path: str, member_id: str, payload: bytes = b"") -> None:
        self._n = _native.GroupMember(_native_client(client), path, member_id, payload)
        self._client = client
        self._listener_ids: Dict[int, int] = {}

    def __repr__(self) -> str:
        return f"<zkrecipes.GroupMember path={self.path!r} id={self.id!r}>"

    @property
    def path(self) -> str:
        """The group's path."""
        return self._n.path

    @property
    def id(self) -> str:
        """This member's id."""
        return self._n.id

    def start(self) -> None:
        """Joins the group; returns once registered. Once started the member stays alive until :meth:`close` (or the client's close), even if no reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start().wait()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._n.start())

    def current_members(self) -> Dict[str, bytes]:
        """Every member id → payload, as last read (this member's own included)."""
        return self._n.current_members()

    def set_this_data(self, payload: bytes) -> None:
        """Changes this member's payload (written now when connected, else on reconnect)."""
        self._n.set_this_data(payload)

    def add_listener(self, listener: MembersListener) -> int:
        """Calls ``listener(members)`` with each new membership (dict id → payload); returns an id."""
        if not callable(listener):
            raise TypeError("listener must be callable")
        lid = self._n.add_listener(listener)
        self._listener_ids[id(listener)] = lid
        return lid

    def remove_listener(self, listener: Union[int, MembersListener]) -> bool:
        """Removes a listener (by id or the callable)."""
        if isinstance(listener, int):
            return self._n.remove_listener(listener)
        lid = self._listener_ids.pop(id(listener), None)
        return lid is not None and self._n.remove_listener(lid)

    def close(self) -> None:
        """Leaves the group (deletes this member's node, ours only)."""
        with _alive.closing(self._client, self):
            self._n.close().wait()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio."""
        with _alive.closing(self._client, self):
            await run(self._n.close())
