"""Service discovery: Apache Curator's curator-x-discovery, on the same nodes and JSON, so that
Python services register and find each other with Java services that use Curator.

An instance of service ``name`` lives at ``base_path/name/id`` and holds Curator's JSON (byte
for byte as Curator's ``JsonInstanceSerializer`` writes it)::

    with zkrecipes.ServiceDiscovery(client, "/services") as discovery:
        me = zkrecipes.ServiceInstance("orders", address="10.0.0.7", port=8080,
                                       payload={"region": "eu"})
        with discovery.register(me) as registration:     # unregistered at the end
            with zkrecipes.ServiceProvider(discovery, "billing") as billing:
                target = billing.get_instance()          # round robin; None if none
                ...

A registration survives what its session goes through: a connection blip deletes and re-creates
nothing, a new session after an expiry gets the instance back exactly once, and another live
session's instance with the same id is never taken over (:class:`~zkrecipes.ConflictError`).
A registration lasts until it is unregistered or its discovery or client is closed, whether or
not its objects are kept: a discovery that registered is kept alive by the package until its
:meth:`~ServiceDiscovery.close` (or its client's), and so is a started cache or provider until
its own close (or its discovery's, or its client's).

Listeners (:meth:`ServiceCache.listen`) run on a library thread (never the event loop's), one at
a time per cache, in event order; they may block and may call this API (not wait for the next
event of the same cache, which comes after them). ``async for event in cache`` delivers the same
events to a coroutine.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, AsyncIterator, Callable, List, Mapping, Optional, Type, TypeVar, Union

from . import _alive, _native
from ._base import EventIterator, Lifecycle, Name
from ._call import run
from .client import Client, _native_client

__all__ = [
    "ProviderStrategy",
    "Registration",
    "ServiceCache",
    "ServiceCacheEvent",
    "ServiceCacheEventKind",
    "ServiceDiscovery",
    "ServiceInstance",
    "ServiceProvider",
    "ServiceType",
    "UriSpec",
]


class ServiceType(Name):
    """How an instance is registered (Curator's ``ServiceType``; ``_native.SERVICE_TYPES``)."""

    #: An ephemeral node: gone with the session (and back on the next one).
    DYNAMIC = "DYNAMIC"
    #: A persistent node, removed by ``unregister`` and ``close``.
    STATIC = "STATIC"
    #: A persistent node that :meth:`ServiceDiscovery.close` leaves registered.
    PERMANENT = "PERMANENT"
    #: An ephemeral sequential node: the id gets ZooKeeper's 10-digit sequence number.
    DYNAMIC_SEQUENTIAL = "DYNAMIC_SEQUENTIAL"


class ServiceCacheEventKind(Name):
    """What a :class:`ServiceCacheEvent` says (``_native.SERVICE_CACHE_EVENT_KINDS``)."""

    #: An instance appeared (``instance``).
    ADDED = "ADDED"
    #: An instance's node changed (``old`` before, ``instance`` after).
    UPDATED = "UPDATED"
    #: An instance went away (``instance``, as last known).
    REMOVED = "REMOVED"
    #: A node under the service does not decode (``error`` says why); it is left out of
    #: :meth:`ServiceCache.instances` until it decodes (then ADDED).
    INVALID = "INVALID"
    #: The initial load is complete (once).
    INITIALIZED = "INITIALIZED"


class ProviderStrategy(Name):
    """How a :class:`ServiceProvider` picks (Curator's strategies; ``_native.PROVIDER_STRATEGIES``)."""

    #: Each call the next, in id order.
    ROUND_ROBIN = "round_robin"
    #: A random one each call.
    RANDOM = "random"
    #: The same one while it stays usable, then the next by round robin.
    STICKY = "sticky"


class UriSpec:
    """Curator's ``UriSpec``: a template such as ``"{scheme}://{address}:{port}/v1"``. The
    variables an instance gives: ``scheme`` (``https`` when it has an SSL port, else ``http``),
    ``name``, ``id``, ``address``, ``port``, ``ssl-port``, ``registration-time-utc``,
    ``service-type``, and ``[`` / ``]`` for literal braces; ``variables`` override them. An
    unbalanced brace is :class:`~zkrecipes.InvalidArgumentError`; ``str(spec)`` is the template."""

    __slots__ = ("_n",)

    def __init__(self, template: str) -> None:
        self._n = _native.UriSpec(template)

    def build(self, instance: Optional["ServiceInstance"] = None, variables: Optional[Mapping[str, str]] = None) -> str:
        """The URI for ``instance`` (or none: only ``scheme``, ``http``) with ``variables`` on
        top; a variable without a value renders as nothing (as Curator)."""
        core = None if instance is None else _core_of(instance)
        return self._n.build(core, None if variables is None else dict(variables))

    def __str__(self) -> str:
        return str(self._n)

    def __repr__(self) -> str:
        return f"UriSpec({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UriSpec) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


@dataclass(init=False)
class ServiceInstance:
    """One instance of a service (Curator's ``ServiceInstance``).

    ``id`` defaults to a random UUID and ``registration_time_utc`` (ms since the epoch) to now;
    ``payload`` is any JSON value (dicts, lists, str, int, float, bool, None) and
    ``payload_class`` the Java class Curator's Jackson records with it (``"java.util.ArrayList"``
    for a list, ``"com.example.Details"`` for an object), None for plain JSON; ``uri_spec`` a
    :class:`UriSpec` template (kept as its text). Checked when made
    (:class:`~zkrecipes.InvalidArgumentError` naming the field) and again when registered.

    A mutable dataclass: change a field and :meth:`Registration.update` it, or use
    ``dataclasses.replace``. An instance read from a node keeps what this class does not show
    (fields a newer writer added, a payload's exact text) when it is written back.
    """

    name: str
    id: str
    address: Optional[str]
    port: Optional[int]
    ssl_port: Optional[int]
    payload: Any
    payload_class: Optional[str]
    service_type: ServiceType
    uri_spec: Optional[str]
    enabled: bool
    registration_time_utc: int
    # The core's instance these fields came from: unknown JSON fields and payload text.
    _core: Optional[_native.ServiceInstanceData] = field(default=None, repr=False, compare=False)

    def __init__(
        self,
        name: str,
        *,
        id: Optional[str] = None,
        address: Optional[str] = None,
        port: Optional[int] = None,
        ssl_port: Optional[int] = None,
        payload: Any = None,
        payload_class: Optional[str] = None,
        service_type: Union[ServiceType, str] = ServiceType.DYNAMIC,
        uri_spec: Union[str, UriSpec, None] = None,
        enabled: bool = True,
        registration_time_utc: Optional[int] = None,
        _core: Optional[_native.ServiceInstanceData] = None,
    ) -> None:
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be a bool, not {type(enabled).__name__}")
        core = _native.ServiceInstanceData(
            name,
            id,
            address,
            port,
            ssl_port,
            payload,
            payload_class,
            service_type,
            _template(uri_spec),
            enabled,
            registration_time_utc,
            _core,
        )
        core.validate()
        self._fill(core)

    def _fill(self, core: _native.ServiceInstanceData) -> None:
        self.name = core.name
        self.id = core.id
        self.address = core.address
        self.port = core.port
        self.ssl_port = core.ssl_port
        self.payload = core.payload
        self.payload_class = core.payload_class
        self.service_type = ServiceType(core.service_type)
        self.uri_spec = core.uri_spec
        self.enabled = core.enabled
        self.registration_time_utc = core.registration_time_utc
        self._core = core

    @classmethod
    def _from_core(cls, core: _native.ServiceInstanceData) -> "ServiceInstance":
        instance = cls.__new__(cls)
        instance._fill(core)
        return instance

    def _to_core(self) -> _native.ServiceInstanceData:
        if not isinstance(self.enabled, bool):
            raise TypeError(f"enabled must be a bool, not {type(self.enabled).__name__}")
        return _native.ServiceInstanceData(
            self.name,
            self.id,
            self.address,
            self.port,
            self.ssl_port,
            self.payload,
            self.payload_class,
            self.service_type,
            _template(self.uri_spec),
            self.enabled,
            self.registration_time_utc,
            self._core,
        )

    def to_json(self, compatible: bool = True) -> bytes:
        """The node's bytes, Curator's JSON (``{"name":...,"id":...,...}`` in Jackson's order);
        ``enabled`` is written only when not ``compatible`` (Curator's default, which readers
        older than CURATOR-275 need)."""
        return self._to_core().to_json(compatible)

    @classmethod
    def from_json(cls, data: bytes) -> "ServiceInstance":
        """Reads a node's bytes as Curator does (unknown fields kept, a missing ``enabled``
        true); :class:`~zkrecipes.CorruptedDataError` saying what is wrong otherwise."""
        return cls._from_core(_native.ServiceInstanceData.from_json(data))

    def build_uri(self, variables: Optional[Mapping[str, str]] = None) -> str:
        """Renders :attr:`uri_spec` for this instance (``""`` without one); see :class:`UriSpec`."""
        return self._to_core().build_uri(None if variables is None else dict(variables))


def _template(spec: Union[str, UriSpec, None]) -> Optional[str]:
    return str(spec) if isinstance(spec, UriSpec) else spec


def _core_of(instance: ServiceInstance) -> _native.ServiceInstanceData:
    if not isinstance(instance, ServiceInstance):
        raise TypeError(f"instance must be a zkrecipes.ServiceInstance, not {type(instance).__name__}")
    return instance._to_core()


def _instances(cores: List[_native.ServiceInstanceData]) -> List[ServiceInstance]:
    return [ServiceInstance._from_core(c) for c in cores]


def _optional(core: Optional[_native.ServiceInstanceData]) -> Optional[ServiceInstance]:
    return None if core is None else ServiceInstance._from_core(core)


_S = TypeVar("_S", bound="_Scoped")


class _Scoped:
    """``with x:`` and ``async with x:`` give ``x`` (nothing to start) and end it at the end."""

    def _end(self) -> None:
        raise NotImplementedError

    async def _end_async(self) -> None:
        raise NotImplementedError

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self._end()

    async def __aenter__(self: _S) -> _S:
        return self

    async def __aexit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        await self._end_async()


class Registration(_Scoped):
    """One registered instance (from :meth:`ServiceDiscovery.register`): ``with registration:``
    unregisters at the end (``async with`` too)."""

    def __init__(self, native: _native.Registration) -> None:
        self._n = native

    def __repr__(self) -> str:
        return f"<zkrecipes.Registration path={self.path!r} registered={self.registered}>"

    @property
    def instance(self) -> ServiceInstance:
        """The instance as registered (its last update)."""
        return ServiceInstance._from_core(self._n.instance)

    @property
    def path(self) -> str:
        """The node's path: ``base/name/id`` (with the sequence number of a DYNAMIC_SEQUENTIAL
        instance, which changes if the node is made again after a session expiry)."""
        return self._n.path

    @property
    def registered(self) -> bool:
        """Whether the node is on the server as far as this client knows."""
        return self._n.registered

    def update(self, instance: ServiceInstance) -> None:
        """Replaces the registered instance (Curator's ``updateService``): written now when
        connected, else at the next reconnection; returns at once. The name, id and service type
        must stay (:class:`~zkrecipes.InvalidArgumentError`); :class:`~zkrecipes.ClosedError`
        once unregistered; :class:`~zkrecipes.ConflictError` once the registration ended in a
        conflict (another session took the id after ours expired: nothing is written any more;
        register the instance again)."""
        self._n.update(_core_of(instance))

    def set_enabled(self, enabled: bool) -> None:
        """Enables or disables the instance: a disabled one is never picked by a provider.
        Raises as :meth:`update`."""
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be a bool, not {type(enabled).__name__}")
        self._n.set_enabled(enabled)

    def wait_registered(self, timeout: Optional[float] = None) -> bool:
        """Waits until the node is on the server (again), True, or ``timeout`` seconds pass."""
        return bool(self._n.wait_registered(timeout).wait())

    async def wait_registered_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`wait_registered` for asyncio."""
        return bool(await run(self._n.wait_registered(timeout)))

    def unregister(self) -> None:
        """Deletes the node (ours only; a PERMANENT one too, even after
        :meth:`ServiceDiscovery.close` left it) and stops keeping it. Calling it again is fine.

        The delete is guaranteed: when it cannot be done now (no connection within the retry
        policy) this raises :class:`~zkrecipes.ConnectionLossError` (so does the end of a
        ``with registration:`` block), and the delete goes on in the background, after the
        reconnect, until it succeeds, the node is gone or no longer ours, or the client
        closes."""
        self._n.unregister().wait()

    async def unregister_async(self) -> None:
        """:meth:`unregister` for asyncio."""
        await run(self._n.unregister())

    def _end(self) -> None:
        self.unregister()

    async def _end_async(self) -> None:
        await self.unregister_async()


class ServiceDiscovery(_Scoped):
    """Curator's ``ServiceDiscovery`` over ``base_path``: register instances and query them.
    Nothing is written before a registration. ``with`` (or ``async with``) closes it at the end:
    every instance it registered is unregistered, but PERMANENT ones. Once it registered an
    instance it stays alive until :meth:`close` (or the client's close), even if no reference
    to it (or to the registration) is kept."""

    def __init__(self, client: Client, base_path: str) -> None:
        self._n = _native.ServiceDiscovery(_native_client(client), base_path)
        self._client = client
        # The caches and providers made on it: its close closes them (the core's), and lets
        # them go here too.
        self._dependents: "weakref.WeakSet[Lifecycle]" = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"<zkrecipes.ServiceDiscovery base_path={self.base_path!r}>"

    @property
    def base_path(self) -> str:
        """The base path."""
        return self._n.base_path

    def register(self, instance: ServiceInstance) -> Registration:
        """Registers ``instance`` and returns once its node is on the server: ephemeral for the
        DYNAMIC types, persistent for STATIC and PERMANENT, parents as containers. Registering
        an id this discovery registered already updates it, unless that registration ended in a
        conflict: the instance is then registered afresh. :class:`~zkrecipes.ConflictError`
        when another live session holds the id (its node is left untouched). A register that
        fails leaves no node behind."""
        registration = Registration(self._n.register(_core_of(instance)).wait())
        _alive.keep(self._client, self)
        return registration

    async def register_async(self, instance: ServiceInstance) -> Registration:
        """:meth:`register` for asyncio."""
        registration = Registration(await run(self._n.register(_core_of(instance))))
        _alive.keep(self._client, self)
        return registration

    def query_for_names(self) -> List[str]:
        """The service names (the children of the base path), sorted; none if it is missing."""
        return self._n.query_for_names().wait()

    async def query_for_names_async(self) -> List[str]:
        """:meth:`query_for_names` for asyncio."""
        return await run(self._n.query_for_names())

    def query_for_instances(self, name: str) -> List[ServiceInstance]:
        """The instances of service ``name``, sorted by id; a node that does not decode is left
        out (a WARNING log; a :class:`ServiceCache` reports it as an INVALID event)."""
        return _instances(self._n.query_for_instances(name).wait())

    async def query_for_instances_async(self, name: str) -> List[ServiceInstance]:
        """:meth:`query_for_instances` for asyncio."""
        return _instances(await run(self._n.query_for_instances(name)))

    def query_for_instance(self, name: str, id: str) -> Optional[ServiceInstance]:
        """The instance ``name``/``id``, or None; :class:`~zkrecipes.CorruptedDataError` when
        its node does not decode."""
        return _optional(self._n.query_for_instance(name, id).wait())

    async def query_for_instance_async(self, name: str, id: str) -> Optional[ServiceInstance]:
        """:meth:`query_for_instance` for asyncio."""
        return _optional(await run(self._n.query_for_instance(name, id)))

    def close(self) -> None:
        """Unregisters every instance this discovery registered but the PERMANENT ones, all at
        once, and refuses further use (:class:`~zkrecipes.ClosedError`). Closing twice is fine.
        Raises the first error an unregister met (:class:`~zkrecipes.ConnectionLossError`: the
        deletes go on in the background, see :meth:`Registration.unregister`). The caches and
        providers made on it are closed too."""
        try:
            self._n.close().wait()
        finally:
            self._release()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio."""
        try:
            await run(self._n.close())
        finally:
            self._release()

    def _release(self) -> None:
        for dependent in list(self._dependents):
            _alive.release(self._client, dependent)
        _alive.release(self._client, self)

    def _end(self) -> None:
        self.close()

    async def _end_async(self) -> None:
        await self.close_async()


@dataclass(frozen=True)
class ServiceCacheEvent:
    """One change seen by a :class:`ServiceCache`: ``instance`` after (ADDED, UPDATED) or as
    last known (REMOVED), ``old`` before (UPDATED), ``error`` why a node does not decode
    (INVALID, a :class:`~zkrecipes.CorruptedDataError`); ``resync`` marks a change found by a
    resync after a reconnect or a new session."""

    kind: ServiceCacheEventKind
    path: str
    instance: Optional[ServiceInstance]
    old: Optional[ServiceInstance]
    error: Optional[BaseException]
    resync: bool


def _event(
    kind: str,
    path: str,
    instance: Optional[_native.ServiceInstanceData],
    old: Optional[_native.ServiceInstanceData],
    error: Optional[BaseException],
    resync: bool,
) -> ServiceCacheEvent:
    return ServiceCacheEvent(ServiceCacheEventKind(kind), path, _optional(instance), _optional(old), error, resync)


class ServiceCache(Lifecycle):
    """Curator's ``ServiceCache``: the instances of service ``name``, kept by one persistent
    recursive watch (exact resync after reconnects and new sessions); it never writes.
    :meth:`start` returns once the watch is set: :meth:`await_initialized` waits for the first
    load. ``with`` starts and closes it."""

    def __init__(self, discovery: ServiceDiscovery, name: str) -> None:
        if not isinstance(discovery, ServiceDiscovery):
            raise TypeError(f"discovery must be a zkrecipes.ServiceDiscovery, not {type(discovery).__name__}")
        self._n = _native.ServiceCache(discovery._n, name)
        self._client = discovery._client
        discovery._dependents.add(self)
        self._iterators: "weakref.WeakSet[EventIterator[ServiceCacheEvent]]" = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"<zkrecipes.ServiceCache name={self.name!r}>"

    @property
    def name(self) -> str:
        """The service's name."""
        return self._n.name

    def start(self) -> None:
        """Sets the watch and starts loading (listeners added before hear the initial load).
        Once started the cache stays alive until :meth:`close` (or its discovery's or client's
        close), even if no reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start().wait()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._n.start())

    def await_initialized(self, timeout: Optional[float] = None) -> bool:
        """Waits until the initial load is complete (True) or ``timeout`` seconds pass (False)."""
        return bool(self._n.await_initialized(timeout).wait())

    async def await_initialized_async(self, timeout: Optional[float] = None) -> bool:
        """:meth:`await_initialized` for asyncio."""
        return bool(await run(self._n.await_initialized(timeout)))

    def await_zxid(self, zxid: int, timeout: Optional[float] = None) -> bool:
        """Read-your-writes: waits until the cache has applied every change up to ``zxid`` (a
        write's ``mzxid`` or ``czxid``, from any client); False after ``timeout``."""
        return bool(self._n.await_zxid(zxid, timeout).wait())

    async def await_zxid_async(self, zxid: int, timeout: Optional[float] = None) -> bool:
        """:meth:`await_zxid` for asyncio."""
        return bool(await run(self._n.await_zxid(zxid, timeout)))

    def instances(self) -> List[ServiceInstance]:
        """The instances now (Curator's ``getInstances``), sorted by id; nodes that do not
        decode are left out (an INVALID event told). No server call; readable after close."""
        return _instances(self._n.instances())

    def listen(self, listener: Callable[[ServiceCacheEvent], object], replay: bool = False) -> int:
        """Calls ``listener(event)`` for every event from now on (with ``replay``, the cached
        instances first as ADDED, and INITIALIZED if initialized, nothing missed or repeated in
        between). On a library thread, one call at a time, in order. Returns an id for
        :meth:`remove_listener`."""
        if not callable(listener):
            raise TypeError("listener must be callable")
        return self._n.listen(lambda *a: listener(_event(*a)), replay)

    def remove_listener(self, listener_id: int) -> bool:
        """Removes a listener by id; whether it was there."""
        return self._n.remove_listener(listener_id)

    def events(self, *, replay: bool = False) -> AsyncIterator[ServiceCacheEvent]:
        """The events from now on for ``async for`` (on the running loop); ends when the cache
        is closed."""
        return EventIterator(
            lambda deliver: self._n.listen(lambda *a: deliver(_event(*a)), replay),
            self._n.remove_listener,
            self._iterators,
        )

    def __aiter__(self) -> AsyncIterator[ServiceCacheEvent]:
        return self.events()

    def close(self) -> None:
        """Stops the cache; no listener is called after this returns; ``async for`` loops end.
        Idempotent."""
        with _alive.closing(self._client, self):
            self._n.close()
            for it in list(self._iterators):
                it.end()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio (it returns at once either way)."""
        self.close()


class ServiceProvider(Lifecycle):
    """Curator's ``ServiceProvider``: picks an instance of service ``name`` from a cache by
    ``strategy`` (``"round_robin"``, ``"random"``, ``"sticky"``), never a disabled one, nor one
    ``filter(instance)`` refuses, nor one noted down: ``down_error_threshold`` calls of
    :meth:`note_error` leave it out for ``down_timeout`` seconds from the first (Curator's
    ``DownInstancePolicy``). :meth:`start` returns once the cache is loaded; ``with`` starts
    and closes it. ``filter`` runs on the thread that calls :meth:`get_instance` (what it raises
    comes out of that call)."""

    def __init__(
        self,
        discovery: ServiceDiscovery,
        name: str,
        strategy: Union[ProviderStrategy, str] = ProviderStrategy.ROUND_ROBIN,
        *,
        filter: Optional[Callable[[ServiceInstance], object]] = None,
        down_error_threshold: int = 2,
        down_timeout: float = 30.0,
    ) -> None:
        if not isinstance(discovery, ServiceDiscovery):
            raise TypeError(f"discovery must be a zkrecipes.ServiceDiscovery, not {type(discovery).__name__}")
        if filter is not None and not callable(filter):
            raise TypeError("filter must be callable")
        if isinstance(down_timeout, bool) or not isinstance(down_timeout, (int, float)):
            raise TypeError(f"down_timeout must be a number of seconds, not {type(down_timeout).__name__}")
        native_filter: Optional[Callable[[_native.ServiceInstanceData], object]] = None
        if filter is not None:
            user_filter = filter

            def native_filter(core: _native.ServiceInstanceData) -> object:
                return user_filter(ServiceInstance._from_core(core))

        self._n = _native.ServiceProvider(
            discovery._n, name, strategy, native_filter, down_error_threshold, float(down_timeout)
        )
        self._client = discovery._client
        discovery._dependents.add(self)

    def __repr__(self) -> str:
        return f"<zkrecipes.ServiceProvider name={self.name!r}>"

    @property
    def name(self) -> str:
        """The service's name."""
        return self._n.name

    def start(self) -> None:
        """Starts the provider's cache and waits for its initial load. Once started the provider
        stays alive until :meth:`close` (or its discovery's or client's close), even if no
        reference to it is kept."""
        with _alive.starting(self._client, self):
            self._n.start().wait()

    async def start_async(self) -> None:
        """:meth:`start` for asyncio."""
        with _alive.starting(self._client, self):
            await run(self._n.start())

    def get_instance(self) -> Optional[ServiceInstance]:
        """An instance by the strategy, or None when none is usable (no server call)."""
        return _optional(self._n.get_instance())

    def get_all_instances(self) -> List[ServiceInstance]:
        """Every usable instance (enabled, not down, accepted by the filter), sorted by id."""
        return _instances(self._n.get_all_instances())

    def note_error(self, instance: ServiceInstance) -> None:
        """Notes an error with ``instance`` (Curator's ``noteError``): after
        ``down_error_threshold`` of them it is left out for ``down_timeout``. That instance only
        (known by its name, id, address, ports, registration time and type): DYNAMIC_SEQUENTIAL
        instances that share its id stay usable."""
        self._n.note_error(_core_of(instance))

    def close(self) -> None:
        """Stops the provider; then every call but ``close`` is :class:`~zkrecipes.ClosedError`.
        Idempotent."""
        with _alive.closing(self._client, self):
            self._n.close()

    async def close_async(self) -> None:
        """:meth:`close` for asyncio (it returns at once either way)."""
        self.close()
