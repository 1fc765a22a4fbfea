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
from typing import List, Optional, Sequence, Tuple, Union

from .errors import InvalidArgumentError

__all__ = [
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
