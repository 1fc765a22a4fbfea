"""ACLs for the nodes a client creates (kazoo's ``kazoo.security``, ZooKeeper's ``ZooDefs.Ids``).

Give a :class:`~zkrecipes.Client` ``acl=[...]`` and every node it creates — lock nodes, latch
nodes, counters and their parents, plain ``create`` — carries that ACL instead of the default
``OPEN_ACL_UNSAFE`` (world:anyone, all)::

    from zkrecipes import Client, CREATOR_ALL_ACL

    client = Client(hosts, auth=("digest", "alice:secret"), acl=CREATOR_ALL_ACL)

``CREATOR_ALL_ACL`` (scheme ``auth``) needs authentication on the session; ZooKeeper stores it as
the session's digest identities. A client without that authentication then gets
:class:`~zkrecipes.NoAuthError` reading or deleting the nodes.
"""

from __future__ import annotations

import base64
import enum
import hashlib
from dataclasses import dataclass
import os
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from .errors import InvalidArgumentError

__all__ = [
    "TlsOptions",
    "SaslOptions",
    "AclProvider",
    "Perms",
    "Acl",
    "OPEN_ACL_UNSAFE",
    "CREATOR_ALL_ACL",
    "READ_ACL_UNSAFE",
    "make_acl",
    "make_digest_acl",
    "make_digest_acl_credential",
]


class Perms(enum.IntFlag):
    """ZooKeeper's permission bits (``ZooDefs.Perms``)."""

    READ = 1
    WRITE = 2
    CREATE = 4
    DELETE = 8
    ADMIN = 16
    ALL = 31


@dataclass(frozen=True)
class Acl:
    """One ACL entry: ``perms`` (a :class:`Perms` combination or its bits, 1..31) granted to ``id``
    in ``scheme`` (``world``/``anyone``, ``auth``/``""``, ``digest``/``user:base64(sha1)``,
    ``ip``/``10.0.0.0/8``, ...). The same shape as the Node face's ``{ perms, scheme, id }``."""

    perms: int
    scheme: str
    id: str

    def __post_init__(self) -> None:
        if isinstance(self.perms, bool) or not isinstance(self.perms, int):
            raise TypeError(f"Acl.perms must be an int (Perms), not {type(self.perms).__name__}")
        if not 1 <= int(self.perms) <= 31:
            raise InvalidArgumentError(
                f"Acl.perms must be a combination of Perms (1..31), not {int(self.perms)} (INVALID_ARGUMENT)"
            )
        if not isinstance(self.scheme, str) or not self.scheme:
            raise TypeError("Acl.scheme must be a non-empty str")
        if not isinstance(self.id, str):
            raise TypeError(f"Acl.id must be a str, not {type(self.id).__name__}")

    def _spec(self) -> Tuple[int, str, str]:
        return (int(self.perms), self.scheme, self.id)


#: world:anyone with every permission — ZooKeeper's default (``Ids.OPEN_ACL_UNSAFE``).
OPEN_ACL_UNSAFE: List[Acl] = [Acl(Perms.ALL, "world", "anyone")]
#: Every permission to the identities the creating session authenticated as (``Ids.CREATOR_ALL_ACL``).
CREATOR_ALL_ACL: List[Acl] = [Acl(Perms.ALL, "auth", "")]
#: world:anyone may read (``Ids.READ_ACL_UNSAFE``).
READ_ACL_UNSAFE: List[Acl] = [Acl(Perms.READ, "world", "anyone")]


def make_acl(
    scheme: str,
    credential: str,
    read: bool = False,
    write: bool = False,
    create: bool = False,
    delete: bool = False,
    admin: bool = False,
    all: bool = False,
) -> Acl:
    """An :class:`Acl` from permission flags (kazoo's ``make_acl``)."""
    perms = Perms.ALL if all else Perms(0)
    flags = ((read, Perms.READ), (write, Perms.WRITE), (create, Perms.CREATE), (delete, Perms.DELETE), (admin, Perms.ADMIN))
    for flag, bit in flags:
        if flag:
            perms |= bit
    return Acl(perms, scheme, credential)


def make_digest_acl_credential(username: str, password: str) -> str:
    """ZooKeeper's digest id for ``username:password``: ``username:base64(sha1(username:password))``."""
    digest = hashlib.sha1(f"{username}:{password}".encode("utf-8")).digest()
    return f"{username}:{base64.b64encode(digest).decode('ascii')}"


def make_digest_acl(
    username: str,
    password: str,
    read: bool = False,
    write: bool = False,
    create: bool = False,
    delete: bool = False,
    admin: bool = False,
    all: bool = False,
) -> Acl:
    """A ``digest`` :class:`Acl` for ``username``/``password`` (kazoo's ``make_digest_acl``): the
    session that authenticates with ``auth=("digest", "username:password")`` gets the permissions."""
    return make_acl("digest", make_digest_acl_credential(username, password), read, write, create, delete, admin, all)


AclArg = Union[Acl, Sequence[Acl]]

#: Curator's ACLProvider: a callable ``path -> list of Acl | None`` (None: the client's default
#: ``acl``), or a mapping ``path prefix -> list of Acl`` (the longest prefix that is the path or
#: one of its ancestors wins). The path is the server-side path, namespace included.
AclProvider = Union[Callable[[str], Optional[Sequence[Acl]]], Mapping[str, Sequence[Acl]]]

#: A PEM input: a file path (``str`` or ``os.PathLike``, read again at each new connection) or the
#: PEM text itself: ``bytes`` always, a ``str`` holding ``-----BEGIN`` anywhere or a line break (text
#: such as OpenSSL's ``Bag Attributes`` may come before the first ``-----BEGIN``).
Pem = Union[str, bytes, "os.PathLike[str]"]

def _pem(name: str, value: Optional[Pem]) -> Optional[Union[str, bytes]]:
    """What the native client takes: ``str`` (a path, or PEM text by the core's rule) or ``bytes``
    (always PEM text)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgumentError(f"TlsOptions.{name}: PEM bytes must be UTF-8 text (INVALID_ARGUMENT)") from None
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"TlsOptions.{name} must be a path, PEM text or bytes, not {type(value).__name__}")


def _pem_repr(value: Optional[Pem]) -> str:
    """A PEM input as :class:`TlsOptions`' repr shows it: a path as given, never PEM text (nor a
    "path" that cannot be one and may be key material)."""
    if value is None:
        return "None"
    if isinstance(value, bytes):
        return f"<PEM text, {len(value)} bytes>"
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        return f"<{type(value).__name__}>"
    # The core's rule (`Pem::redacted`): a path as given, else what stands for it.
    redacted = _native.pem_redacted(value)
    return repr(value) if redacted is None else f"<{redacted}>"


@dataclass(frozen=True, repr=False)
class TlsOptions:
    """TLS for a :class:`~zkrecipes.Client` (ZooKeeper's ``secureClientPort``).

    ``ca``: the CA certificate(s) that sign the servers' certificates (default: the system's trust
    store). ``cert`` and ``key``: this client's certificate and unencrypted private key (PKCS#8,
    RSA or EC), for servers with ``ssl.clientAuth``; with ZooKeeper's X509AuthenticationProvider
    the certificate's subject is this client's ``x509`` identity. Each is a file path (read again
    at each new connection, so a certificate rotated on disk is used from the next reconnection
    on) or PEM text: ``bytes`` always are, and so is a ``str`` holding ``-----BEGIN`` anywhere or a
    line break. ``verify_hostname``: the server's certificate must name the host it is
    reached at (IP SANs for IPs); turning it off is a man-in-the-middle risk. ``every_host``:
    every host of the connect string speaks TLS (False: only hosts written ``tcp+tls://host:port``).
    No silent plaintext: a host written ``tcp://`` with ``every_host`` True, and a connect string
    with no ``tcp+tls://`` host with ``every_host`` False, are InvalidArgumentError.
    Unreadable files, garbage PEM, an encrypted key or a key that does not match the certificate
    are :class:`~zkrecipes.InvalidArgumentError` when the client starts, before any connection.
    The repr shows paths, never PEM text (``<PEM text, N bytes>``)."""

    ca: Optional[Pem] = None
    cert: Optional[Pem] = None
    key: Optional[Pem] = None
    verify_hostname: bool = True
    every_host: bool = True

    def __repr__(self) -> str:  # keys stay out of logs
        return (
            f"TlsOptions(ca={_pem_repr(self.ca)}, cert={_pem_repr(self.cert)}, key={_pem_repr(self.key)}, "
            f"verify_hostname={self.verify_hostname!r}, every_host={self.every_host!r})"
        )

    def _spec(
        self,
    ) -> Tuple[Optional[Union[str, bytes]], Optional[Union[str, bytes]], Optional[Union[str, bytes]], bool, bool]:
        return (
            _pem("ca", self.ca),
            _pem("cert", self.cert),
            _pem("key", self.key),
            bool(self.verify_hostname),
            bool(self.every_host),
        )


@dataclass(frozen=True, repr=False)
class SaslOptions:
    """SASL authentication at each connection (ZooKeeper's SASLAuthenticationProvider):
    ``DIGEST-MD5`` as ``username`` with ``password`` (a ``user_<name>`` of the server's JAAS
    ``Server`` section). A refusal (wrong password, unknown user) is
    :class:`~zkrecipes.AuthFailedError` at once, never retried."""

    username: str
    password: str
    mechanism: str = "DIGEST-MD5"

    def __post_init__(self) -> None:
        for name in ("username", "password", "mechanism"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"SaslOptions.{name} must be a str, not {type(getattr(self, name)).__name__}")

    def __repr__(self) -> str:  # the password stays out of logs
        return f"SaslOptions(mechanism={self.mechanism!r}, username={self.username!r}, password=<hidden>)"

    def _spec(self) -> Tuple[str, str, str]:
        return (self.mechanism, self.username, self.password)


def _acl_provider(
    provider: Optional[AclProvider],
) -> Tuple[
    Optional[List[Tuple[str, List[Tuple[int, str, str]]]]], Optional[Callable[[str], Optional[List[Tuple[int, str, str]]]]]
]:
    """(path rules, wrapped callable) for the native client."""
    if provider is None:
        return None, None
    if isinstance(provider, Mapping):
        rules: List[Tuple[str, List[Tuple[int, str, str]]]] = []
        for prefix, acl in provider.items():
            if not isinstance(prefix, str):
                raise TypeError(f"acl_provider keys must be paths (str), not {type(prefix).__name__}")
            entries = _acl_list(acl)
            assert entries is not None
            rules.append((prefix, entries))
        return rules, None
    if not callable(provider):
        raise TypeError(f"acl_provider must be a callable or a mapping, not {type(provider).__name__}")
    user = provider

    def call(path: str) -> Optional[List[Tuple[int, str, str]]]:
        answer = user(path)
        return None if answer is None else _acl_list(answer)

    return None, call


def _acl_list(acl: Optional[AclArg]) -> Optional[List[Tuple[int, str, str]]]:
    if acl is None:
        return None
    entries: Sequence[Acl] = [acl] if isinstance(acl, Acl) else acl
    if isinstance(entries, (str, bytes)):
        raise TypeError("acl must be a zkrecipes.Acl or a list of them")
    out: List[Tuple[int, str, str]] = []
    for e in entries:
        if not isinstance(e, Acl):
            raise TypeError(f"acl entries must be zkrecipes.Acl, not {type(e).__name__}")
        out.append(e._spec())
    if not out:
        raise InvalidArgumentError("acl must not be empty (None keeps the default OPEN_ACL_UNSAFE) (INVALID_ARGUMENT)")
    return out
