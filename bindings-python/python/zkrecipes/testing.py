"""A real ZooKeeper for your tests, as Curator's ``curator-test`` gives Java: start a standalone
server or an ensemble from a test, stop, restart or kill its servers, expire a client's session.

::

    from zkrecipes.testing import TestingServer, expire_session

    with TestingServer() as server, zkrecipes.Client(server.connect_string) as client:
        ...
        server.restart()          # same port, same data: the client reconnects
        expire_session(client)    # the session ends on the server: LOST, then a new session
        server.pause()            # frozen (SIGSTOP): the client SUSPENDs; resume() brings it back

Network faults between a client and a server come from a :class:`FaultProxy` in front of it::

    with TestingServer() as server, FaultProxy(server.connect_string) as proxy:
        client = zkrecipes.Client(proxy.connect_string)
        proxy.blackhole()         # bytes dropped both ways: the client SUSPENDs
        proxy.restore()           # forwarding again: RECONNECTED, same session
        proxy.delay(0.2)          # 0.2 s more each way
        proxy.cut()               # every connection closed (and new ones) until restore()

Secured servers and ensembles (TLS with client auth ``"none"``/``"want"``/``"need"``, SASL
DIGEST-MD5 users, SASL required, x509 identities) come with a CA, certificates and keys made at
test time (:class:`TlsMaterial`)::

    with TestingServer(tls="need", sasl_users={"alice": "secret"}, x509=True) as server:
        tls = server.tls                      # PEM paths: tls.ca, tls.client_cert, tls.client_key...
        hosts = server.secure_connect_string  # "127.0.0.1:SECUREPORT" (connect_string stays plaintext)

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

from dataclasses import dataclass
from types import TracebackType
from typing import Dict, List, Optional, Tuple, Type

import math

from . import _native
from .client import Client
from .errors import InvalidArgumentError

__all__ = [
    "TlsMaterial",
    "CLIENT_IDENTITIES",
    "TestingServer",
    "TestingCluster",
    "ClusterServer",
    "FaultProxy",
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


CLIENT_IDENTITIES = ("client", "other_client", "rsa_client", "sec1_client", "expired_client", "wrong_ca_client")
"""The client identities of :class:`TlsMaterial`: the ``which`` of :meth:`TlsMaterial.keystore`
and :meth:`TlsMaterial.x509_id`, and the prefix of its ``*_cert``/``*_key`` attributes."""


@dataclass(frozen=True)
class TlsMaterial:
    """The CA, certificates and keys of a TLS server or ensemble, made when it started: PEM files
    in :attr:`dir` (the server's temporary directory, removed with it). Every attribute is a path
    (``str``) but the ``*_x509_id`` ones and :attr:`encrypted_client_key_password`.

    Client subjects are ``CN=<name>`` (extended key usage clientAuth); server certificates carry an
    IP SAN for their ``127.0.0.x`` (and DNS ``localhost``). Keys are EC P-256 unless said otherwise.
    """

    dir: str
    ca: str
    """The CA of the servers' and clients' certificates (not the wrong-CA one); servers trust only it."""
    client_cert: str
    """Valid, ``CN=zkr-client``."""
    client_key: str
    """PKCS#8 (``BEGIN PRIVATE KEY``)."""
    client_keystore: str
    """``client_key`` (PKCS#8) then ``client_cert`` in one file, as ZooKeeper's Java client reads it."""
    client_x509_id: str
    """``"CN=zkr-client"``: the ``x509`` ACL id ZooKeeper records for this certificate."""
    other_client_cert: str
    """Valid, another subject: ``CN=zkr-other``."""
    other_client_key: str
    other_client_keystore: str
    other_client_x509_id: str
    rsa_client_cert: str
    """Valid, ``CN=zkr-rsa-client``, for an RSA 2048 key."""
    rsa_client_key: str
    """PKCS#1 (``BEGIN RSA PRIVATE KEY``)."""
    rsa_client_keystore: str
    rsa_client_x509_id: str
    sec1_client_cert: str
    """Valid, ``CN=zkr-sec1-client``."""
    sec1_client_key: str
    """SEC1 (``BEGIN EC PRIVATE KEY``)."""
    sec1_client_keystore: str
    sec1_client_x509_id: str
    expired_client_cert: str
    """Signed by the CA, expired yesterday, ``CN=zkr-expired-client``."""
    expired_client_key: str
    expired_client_keystore: str
    expired_client_x509_id: str
    wrong_ca_client_cert: str
    """Valid but signed by :attr:`wrong_ca`, ``CN=zkr-wrong-ca-client``."""
    wrong_ca_client_key: str
    wrong_ca_client_keystore: str
    wrong_ca_client_x509_id: str
    encrypted_client_key: str
    """``client_key`` as encrypted PKCS#8 (``BEGIN ENCRYPTED PRIVATE KEY``; PBES2, AES-256-CBC)."""
    encrypted_client_key_password: str
    """The password of :attr:`encrypted_client_key`."""
    wrong_ca: str
    """A CA that signed nothing the servers present or trust."""

    @classmethod
    def _of(cls, entries: List[Tuple[str, str]]) -> TlsMaterial:
        return cls(**dict(entries))

    def cert(self, which: str) -> str:
        """The certificate of ``which`` (one of :data:`CLIENT_IDENTITIES`)."""
        return str(getattr(self, f"{_which(which)}_cert"))

    def key(self, which: str) -> str:
        """The key of ``which``, in the format its attribute says."""
        return str(getattr(self, f"{_which(which)}_key"))

    def keystore(self, which: str) -> str:
        """The PKCS#8 key and certificate of ``which`` in one file."""
        return str(getattr(self, f"{_which(which)}_keystore"))

    def x509_id(self, which: str) -> str:
        """The ``x509`` identity ZooKeeper records for ``which``'s certificate (``"CN=zkr-client"``)."""
        return str(getattr(self, f"{_which(which)}_x509_id"))

    @staticmethod
    def x509_id_for_cn(cn: str) -> str:
        """The ``x509`` identity of a certificate from :meth:`issue_client` with this ``cn``."""
        _kit()
        return _native.x509_id_for_cn(cn)

    def issue_client(self, cn: str, cert_path: str, key_path: str) -> None:
        """Issues a fresh client identity now (certificate rotation tests): a new EC P-256 key
        (PKCS#8) at ``key_path`` and a certificate for ``CN=cn`` signed by :attr:`ca` at
        ``cert_path``. Each file is written atomically (a temporary file, then a rename), the key
        first."""
        _kit()
        _native.issue_client(self.dir, cn, str(cert_path), str(key_path))


def _which(which: str) -> str:
    if which not in CLIENT_IDENTITIES:
        raise ValueError(f"which must be one of {', '.join(CLIENT_IDENTITIES)}, not {which!r}")
    return which


def _users(sasl_users: Optional[Dict[str, str]]) -> List[Tuple[str, str]]:
    users = list((sasl_users or {}).items())
    for name, password in users:
        if not isinstance(name, str) or not isinstance(password, str):
            raise TypeError("sasl_users maps user names (str) to passwords (str)")
    return users


class TestingServer:
    """One standalone ZooKeeper server on ``127.0.0.1`` and a free port, in its own temporary
    directory; started by the constructor, which returns once it serves. Stopped and removed by
    :meth:`close` (or the ``with`` block's end, or at exit)."""

    __test__ = False  # not a test class, for pytest

    def __init__(
        self,
        *,
        tls: Optional[str] = None,
        server_cert: str = "valid",
        sasl_users: Optional[Dict[str, str]] = None,
        sasl_required: bool = False,
        x509: bool = False,
        superuser: Optional[Tuple[str, str]] = None,
    ) -> None:
        """Secured as the keywords say (all off by default; :class:`ValueError` for what ZooKeeper
        cannot do):

        * ``tls``: ``"none"``, ``"want"`` or ``"need"`` (whether the server asks TLS clients for a
          certificate): a TLS port too, :attr:`secure_connect_string`, with :attr:`tls` material.
        * ``server_cert``: what the TLS server presents: ``"valid"``, ``"expired"``,
          ``"wrong-name"`` (its only SAN is DNS ``wrong.example``) or ``"ip-only"`` (its only SAN
          is the server's IP address: accepted through ``localhost`` too, as Java does).
        * ``sasl_users``: SASL DIGEST-MD5 users, ``{"alice": "secret"}`` (ACL id ``sasl:alice``).
        * ``sasl_required``: sessions that did not authenticate with SASL are closed.
        * ``x509``: a client certificate gives the session the ``x509`` identity of its subject
          (``CN=zkr-client``); implies ``tls="need"`` when ``tls`` is not given.
        * ``superuser``: ``(name, password)``: ``addauth digest name:password`` (and, with SASL,
          the SASL user ``name``) may do anything.
        """
        find_zookeeper()
        self._native = _native._TestingServer(
            tls, server_cert, _users(sasl_users), sasl_required, x509, superuser
        )
        entries = self._native.tls_entries()
        self._tls = None if entries is None else TlsMaterial._of(entries)
        self._secure_connect_string = self._native.secure_connect_string()

    @property
    def connect_string(self) -> str:
        """``"127.0.0.1:PORT"``."""
        return self._native.connect_string()

    @property
    def port(self) -> int:
        return self._native.port()

    @property
    def secure_connect_string(self) -> Optional[str]:
        """``"127.0.0.1:SECUREPORT"``, the TLS port; ``None`` without ``tls``."""
        return self._secure_connect_string

    @property
    def tls(self) -> Optional[TlsMaterial]:
        """The CA, certificates and keys (PEM paths); ``None`` without ``tls``."""
        return self._tls

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

    def pause(self) -> None:
        """Freezes the server (SIGSTOP), as a hung machine: it keeps its sockets and its sessions
        but answers nothing, so its clients SUSPEND. Returns once the process is stopped;
        :class:`RuntimeError` if the server is not running."""
        self._native.pause()

    def resume(self) -> None:
        """Resumes a server frozen by :meth:`pause` (SIGCONT): clients back within their session timeout
        keep their session (RECONNECTED). :class:`RuntimeError` if the server is not running."""
        self._native.resume()

    @property
    def is_paused(self) -> bool:
        """Whether the server is frozen by :meth:`pause`."""
        return self._native.is_paused()

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
    def secure_connect_string(self) -> Optional[str]:
        """``"127.0.0.x:SECUREPORT"``; ``None`` without ``tls``."""
        return self._cluster.server_secure_connect_string(self.index)

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

    def pause(self) -> None:
        """Freezes this server (SIGSTOP), as :meth:`TestingServer.pause`."""
        self._cluster.pause_server(self.index)

    def resume(self) -> None:
        """Resumes this server (SIGCONT), as :meth:`TestingServer.resume`."""
        self._cluster.resume_server(self.index)

    @property
    def is_paused(self) -> bool:
        return self._cluster.server_is_paused(self.index)

    def __repr__(self) -> str:
        return f"ClusterServer({self.index}, {self.connect_string!r})"

    @property
    def reconfig_spec(self) -> Optional[str]:
        """In a reconfigurable ensemble, this server's ``server.ID=...`` line for
        ``client.reconfig(joining=...)``; ``None`` otherwise."""
        return self._cluster.server_reconfig_spec(self.index)


class TestingCluster:
    """An ensemble of ``n`` servers (server ``i`` on ``127.0.0.(i+1)``), started by the
    constructor, which returns once every server serves and one leads. Curator's
    ``TestingCluster``."""

    __test__ = False

    def __init__(
        self,
        n: int = 3,
        *,
        tls: Optional[str] = None,
        server_cert: str = "valid",
        sasl_users: Optional[Dict[str, str]] = None,
        sasl_required: bool = False,
        x509: bool = False,
        superuser: Optional[Tuple[str, str]] = None,
        read_only_mode: bool = False,
    ) -> None:
        """Every server secured as the keywords of :class:`TestingServer` say: one CA for the
        ensemble, each server's certificate for its own ``127.0.0.x``; quorum traffic stays
        plaintext.

        ``read_only_mode``: a member cut off from its quorum goes on serving reads to new
        sessions that allow it (``readonlymode.enabled``, with local sessions): a client made
        with ``can_be_read_only=True`` connects there in ``READ_ONLY`` state, and writes fail.
        """
        find_zookeeper()
        self._native = _native._TestingCluster(
            n,
            tls,
            server_cert,
            _users(sasl_users),
            sasl_required,
            x509,
            superuser,
            bool(read_only_mode),
        )
        self.servers: List[ClusterServer] = [ClusterServer(self._native, i) for i in range(n)]
        entries = self._native.tls_entries()
        self._tls = None if entries is None else TlsMaterial._of(entries)
        self._secure_connect_string = self._native.secure_connect_string()

    @property
    def connect_string(self) -> str:
        """``"127.0.0.1:p1,127.0.0.2:p2,..."``."""
        return self._native.connect_string()

    @property
    def secure_connect_string(self) -> Optional[str]:
        """``"127.0.0.1:s1,127.0.0.2:s2,..."``, every TLS port; ``None`` without ``tls``."""
        return self._secure_connect_string

    @property
    def tls(self) -> Optional[TlsMaterial]:
        """The CA, certificates and keys (PEM paths); ``None`` without ``tls``."""
        return self._tls

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

    # ---- dynamic ensembles ----

    @classmethod
    def start_reconfigurable(cls, n: int = 3, *, superuser: Tuple[str, str] = ("super", "secret")) -> TestingCluster:
        """``n`` members running with ``reconfigEnabled=true`` and a digest ``superuser``
        (``(user, password)``: connect with ``auth=("digest", "user:password")`` to call
        ``reconfig``). Grow it with :meth:`add_server`."""
        find_zookeeper()
        self = cls.__new__(cls)
        self._native = _native._TestingCluster.start_reconfigurable(n, superuser)
        self.servers = [ClusterServer(self._native, i) for i in range(n)]
        self._tls = None
        self._secure_connect_string = None
        return self

    def add_server(self, *, observer: bool = False) -> ClusterServer:
        """Starts a server synced with this reconfigurable ensemble but not a member yet:
        ``client.reconfig(joining=server.reconfig_spec)`` makes it one (a participant, or an
        observer)."""
        i = self._native.add_server(bool(observer))
        self.servers.append(ClusterServer(self._native, i))
        return self.servers[i]

    def wait_for_members(self, ids: List[int], timeout: float = 30.0) -> bool:
        """Waits until the running members list exactly these ids (``myid`` is index + 1) and
        one leads; False after ``timeout`` seconds."""
        return self._native.wait_for_members(list(ids), timeout)


def _seconds(what: str, seconds: float) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, not {type(seconds).__name__}")
    if not math.isfinite(seconds) or seconds < 0:
        raise InvalidArgumentError(f"{what} must be a finite, non-negative number of seconds, not {seconds!r}")
    return float(seconds)


class FaultProxy:
    """A TCP proxy on ``127.0.0.1`` and a free port in front of one server, to inject network
    faults between clients and that server (the harness's ``FaultProxy``). Point clients at
    :attr:`connect_string`; each control takes effect at once on open and new connections:

    * :meth:`cut`: closes every connection, and new ones as soon as they are accepted (the server
      looks down), until :meth:`restore`.
    * :meth:`blackhole`: connections stay open but bytes are dropped both ways, as in a network
      partition: clients notice only by timeouts (SUSPENDED).
    * :meth:`drop_replies`: requests reach the server, its replies are dropped (a write applied
      whose answer never comes).
    * :meth:`delay`: ``seconds`` more in each direction, order kept; :meth:`delay_replies`: the
      same for replies only.
    * :meth:`restore`: forwards normally again.

    A context manager; :meth:`close` (or the ``with`` block's end) stops it and closes every
    connection. Afterwards every method raises :class:`~zkrecipes.errors.ClosedError`.
    """

    __test__ = False

    def __init__(self, upstream: str) -> None:
        """Starts forwarding to ``upstream``, one server's ``"host:port"`` (a
        :attr:`TestingServer.connect_string` or :attr:`ClusterServer.connect_string`);
        :class:`~zkrecipes.errors.InvalidArgumentError` if it is not one."""
        _kit()
        if not isinstance(upstream, str):
            raise TypeError(f"upstream must be a str, not {type(upstream).__name__}")
        self._native = _native._FaultProxy(upstream)

    @property
    def connect_string(self) -> str:
        """``"127.0.0.1:PORT"``, for clients."""
        return self._native.connect_string()

    @property
    def port(self) -> int:
        return self._native.port()

    @property
    def upstream(self) -> str:
        """The ``"host:port"`` it forwards to."""
        return self._native.upstream()

    @property
    def connections(self) -> int:
        """Client connections open through the proxy now."""
        return self._native.connections()

    @property
    def bytes_forwarded(self) -> int:
        """Bytes delivered so far, both directions."""
        return self._native.bytes_forwarded()

    @property
    def closed(self) -> bool:
        return self._native.is_closed()

    def cut(self) -> None:
        """Closes every connection and closes new ones on accept until :meth:`restore`; returns
        once no connection is open."""
        self._native.cut()

    def blackhole(self) -> None:
        """Keeps connections open but silently drops every byte both ways (a partition)."""
        self._native.blackhole()

    def drop_replies(self) -> None:
        """Forwards requests but drops every reply (the ambiguous-write fault)."""
        self._native.drop_replies()

    def delay(self, seconds: float) -> None:
        """Delays every chunk by ``seconds`` in each direction (a round trip: twice that);
        :class:`~zkrecipes.errors.InvalidArgumentError` (a :class:`ValueError`) for a negative or
        non-finite value."""
        self._native.delay(_seconds("delay", seconds))

    def delay_replies(self, seconds: float) -> None:
        """Delays every server-to-client chunk by ``seconds``; requests pass at once."""
        self._native.delay_replies(_seconds("delay_replies", seconds))

    def restore(self) -> None:
        """Back to normal forwarding, for open and new connections."""
        self._native.restore()

    def close(self) -> None:
        """Stops the proxy and closes every connection through it; idempotent."""
        self._native.close()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(
        self, t: Optional[Type[BaseException]], e: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return "FaultProxy(closed)"
        return f"FaultProxy({self.connect_string!r} -> {self.upstream!r})"


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
