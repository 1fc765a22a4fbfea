"""A real ZooKeeper for your tests, as Curator's ``curator-test`` gives Java: start a standalone
server or an ensemble from a test, stop, restart or kill its servers, expire a client's session.

::

    from zkrecipes.testing import TestingServer, expire_session

    with TestingServer() as server, zkrecipes.Client(server.connect_string) as client:
        ...
        server.restart()          # same port, same data: the client reconnects
        expire_session(client)    # the session ends on the server: LOST, then a new session

With pytest, the plugin ``zkrecipes.pytest_plugin`` (registered through the ``pytest11`` entry
point, so nothing to configure) gives the fixtures ``zookeeper`` (one server for the test
session) and ``zookeeper_client`` (a started :class:`zkrecipes.Client` of it, closed after the test).

ZooKeeper itself comes from, in this order: ``ZKRECIPES_ZOOKEEPER_JAR`` (its jar, or a
``:``-separated class path), ``ZOOKEEPER_HOME`` (an unpacked Apache ZooKeeper binary release), or
Debian's ``zookeeper`` package; Java from ``JAVA_HOME`` or ``PATH``. When none is there,
:class:`ZooKeeperNotFoundError` says what to install. Servers listen on loopback addresses, live in
temporary directories, and die with the process that started them.
"""

from __future__ import annotations

from types import TracebackType
from typing import List, Optional, Type

from . import _native
from .client import Client

__all__ = [
    "TestingServer",
    "TestingCluster",
    "ClusterServer",
    "ZooKeeperNotFoundError",
    "find_zookeeper",
    "expire_session",
    "expire_session_async",
]


class ZooKeeperNotFoundError(RuntimeError):
    """No ZooKeeper server (or no Java) on this machine; the message says what to install."""


def _kit() -> None:
    if not hasattr(_native, "_TestingServer"):
        raise RuntimeError(
            "this build of zkrecipes has no testing kit: install the wheel from dist/ (scripts/package), "
            "or build from source with `maturin develop --features kit`"
        )


def find_zookeeper() -> str:
    """Where ZooKeeper will be taken from (for messages); raises :class:`ZooKeeperNotFoundError`
    naming what to install when there is none."""
    _kit()
    try:
        _java, _classpath, source = _native.find_zookeeper()
    except RuntimeError as e:
        raise ZooKeeperNotFoundError(str(e)) from None
    return source


class TestingServer:
    """One standalone ZooKeeper server on ``127.0.0.1`` and a free port, in its own temporary
    directory; started by the constructor, which returns once it serves. Stopped and removed by
    :meth:`close` (or the ``with`` block's end, or at exit)."""

    __test__ = False  # not a test class, for pytest

    def __init__(self) -> None:
        find_zookeeper()
        self._native = _native._TestingServer()

    @property
    def connect_string(self) -> str:
        """``"127.0.0.1:PORT"``."""
        return self._native.connect_string()

    @property
    def port(self) -> int:
        return self._native.port()

    @property
    def is_running(self) -> bool:
        return self._native.is_running()

    def stop(self) -> None:
        """Stops the server (its data stays); :meth:`start` brings it back on the same port."""
        self._native.stop()

    def start(self) -> None:
        """Starts the stopped server again and waits until it serves."""
        self._native.start()

    def restart(self) -> None:
        """Stops and starts the server: same port, same data; clients reconnect."""
        self._native.restart()

    def kill(self) -> None:
        """Kills the server (SIGKILL), as a crash would."""
        self._native.kill()

    def four_letter(self, cmd: str) -> str:
        """A four-letter-word command's answer (``srvr``, ``cons``, ``mntr``...), ``""`` if none."""
        return self._native.four_letter(cmd)

    def close(self) -> None:
        """Stops the server and removes its directory; idempotent."""
        self._native.close()

    def __enter__(self) -> TestingServer:
        return self

    def __exit__(
        self, t: Optional[Type[BaseException]], e: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TestingServer({self.connect_string!r})"


class ClusterServer:
    """Server ``index`` of a :class:`TestingCluster`."""

    def __init__(self, cluster: _native._TestingCluster, index: int) -> None:
        self._cluster = cluster
        self.index = index

    @property
    def connect_string(self) -> str:
        return self._cluster.server_connect_string(self.index)

    @property
    def is_running(self) -> bool:
        return self._cluster.server_is_running(self.index)

    def stop(self) -> None:
        self._cluster.stop_server(self.index)

    def start(self) -> None:
        self._cluster.start_server(self.index)

    def restart(self) -> None:
        self._cluster.restart_server(self.index)

    def kill(self) -> None:
        self._cluster.kill_server(self.index)

    def __repr__(self) -> str:
        return f"ClusterServer({self.index}, {self.connect_string!r})"


class TestingCluster:
    """An ensemble of ``n`` servers (server ``i`` on ``127.0.0.(i+1)``), started by the
    constructor, which returns once every server serves and one leads. Curator's
    ``TestingCluster``."""

    __test__ = False

    def __init__(self, n: int = 3) -> None:
        find_zookeeper()
        self._native = _native._TestingCluster(n)
        self.servers: List[ClusterServer] = [ClusterServer(self._native, i) for i in range(n)]

    @property
    def connect_string(self) -> str:
        """``"127.0.0.1:p1,127.0.0.2:p2,..."``."""
        return self._native.connect_string()

    @property
    def leader(self) -> Optional[ClusterServer]:
        """The server that leads now, if one does."""
        i = self._native.leader_index()
        return None if i is None else self.servers[i]

    def wait_for_quorum(self, timeout: float = 30.0) -> Optional[ClusterServer]:
        """Waits until the running servers elect a leader; returns it (``None`` after ``timeout``)."""
        i = self._native.wait_for_quorum(timeout)
        return None if i is None else self.servers[i]

    def restart(self) -> None:
        """Restarts every server, one after another."""
        for server in self.servers:
            server.restart()

    def close(self) -> None:
        """Stops every server and removes the directory; idempotent."""
        self._native.close()

    def __enter__(self) -> TestingCluster:
        return self

    def __exit__(
        self, t: Optional[Type[BaseException]], e: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()


def expire_session(client: Client) -> None:
    """Expires ``client``'s session on the server, as Curator's ``KillSession`` does: the client
    reports LOST (its ephemeral nodes are gone), then opens a new session (RECONNECTED).
    Returns once no server knows the old session."""
    _kit()
    client._expire_session_for_testing()


async def expire_session_async(client: Client) -> None:
    """:func:`expire_session` for asyncio."""
    import asyncio

    await asyncio.get_running_loop().run_in_executor(None, expire_session, client)
