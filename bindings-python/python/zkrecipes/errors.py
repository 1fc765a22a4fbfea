"""The exceptions of zkrecipes: one class per kind of the core's error (``../shared/API.md``).

Every exception derives from :class:`ZkRecipesError` and carries the kind as :attr:`~ZkRecipesError.code`
(``"NO_NODE"``, ``"NOT_OWNER"``...), the same word as the C face's ``ZKR_*`` status and Node's
``err.code``, and its number as :attr:`~ZkRecipesError.status` (C's ``zkr_status``: 300 for NO_NODE).
Both come from the core's one vocabulary (``zkrecipes._native.ERROR_KINDS``): there is a class
for every kind and no other. Where ZooKeeper itself gave a code for the failure, the exception's
:attr:`~ZkRecipesError.zk_code` holds it (``-101`` for NONODE...) and the message names it, next
to the path.

``InvalidArgumentError`` is also a :class:`ValueError`, ``TimeoutError`` also the builtin
:class:`TimeoutError` and ``OverflowError`` also the builtin :class:`OverflowError`, so generic
handlers keep working.

The class statements below are the one table of this face, as the core's ``kinds!`` is of the
core: a new kind of the core needs one class here (its ``code``, its docstring, and its bases if
it is also a builtin), and nothing else. :data:`BY_CODE`, ``from zkrecipes.errors import *``, the
package's names and its ``__all__`` are all derived from the subclasses of
:class:`ZkRecipesError`, and importing this module checks them against the core's list.
(No ``__all__`` here, so that type checkers see every class through the package's ``import *``;
the helpers' names start with ``_``.)
"""

from __future__ import annotations

import builtins as _builtins
import re as _re
import sys as _sys
from typing import Dict as _Dict
from typing import Optional as _Optional
from typing import Type as _Type

from . import _native


class ZkRecipesError(Exception):
    """Base class of every zkrecipes failure."""

    #: The kind, as in API.md's table (``"NO_NODE"``); the C face's status is ``"ZKR_" + code``.
    code: str = "ERROR"
    #: The kind's number (C's ``zkr_status``: 300 for NO_NODE), from the core's vocabulary.
    status: int = 0
    #: ZooKeeper's own error code for this failure, when the server gave one (``-101`` for
    #: NONODE); None for failures ZooKeeper did not report.
    zk_code: _Optional[int] = None
    #: For a failed :meth:`Transaction.commit <zkrecipes.Transaction.commit>`: the index of the
    #: operation that failed (nothing was applied); None otherwise.
    index: _Optional[int] = None


class InvalidArgumentError(ZkRecipesError, ValueError):
    """A bad argument: path, timeout, option, connect string, data size."""

    code = "INVALID_ARGUMENT"

    def add_note(self, note: str) -> None:
        """Keeps the note; a note by which the native module names the argument a bad value came
        from (``while processing 'delta'``) also puts that name at the front of the message."""
        match = _ARGUMENT_NOTE.fullmatch(note)
        if match is not None and getattr(self, "_unnamed", False) and self.args:
            self._unnamed = False
            self.args = (f"{match.group(1)} {self.args[0]}",) + tuple(self.args[1:])
        if _sys.version_info >= (3, 11):
            super().add_note(note)


class NotOwnerError(ZkRecipesError):
    """A release (or an operation) by an owner that does not hold the lock."""

    code = "NOT_OWNER"


class ConnectionLossError(ZkRecipesError):
    """The connection to ZooKeeper was lost (the operation may be retried)."""

    code = "CONNECTION_LOSS"


class SessionExpiredError(ZkRecipesError):
    """The ZooKeeper session expired."""

    code = "SESSION_EXPIRED"


class AuthFailedError(ZkRecipesError):
    """Authentication failed: SASL credentials refused (wrong password, unknown user), SASL
    required and none configured, or a TLS certificate refused (the server's by this client, or
    this client's by the server). Raised by connecting, at once and never retried; a session
    refused later ends LOST and every call raises it."""

    code = "AUTH_FAILED"


class OutcomeUnknownError(ZkRecipesError):
    """A write may or may not have been applied: its reply was lost, and it was not retried."""

    code = "OUTCOME_UNKNOWN"


class ClosedError(ZkRecipesError):
    """The client or the recipe is closed (or the client belongs to the parent of a fork)."""

    code = "CLOSED"


class NoNodeError(ZkRecipesError):
    """The server said the node does not exist."""

    code = "NO_NODE"


class NodeExistsError(ZkRecipesError):
    """The server said the node exists already."""

    code = "NODE_EXISTS"


class BadVersionError(ZkRecipesError):
    """The server said the expected version did not match."""

    code = "BAD_VERSION"


class NoAuthError(ZkRecipesError):
    """The server refused for lack of authorization (or authentication failed)."""

    code = "NO_AUTH"


class NotEmptyError(ZkRecipesError):
    """The server refused to delete a node that has children."""

    code = "NOT_EMPTY"


class ConflictError(ZkRecipesError):
    """A node to be taken over belongs to another live session (a member id, or a persistent node
    registered by someone else); it was left untouched."""

    code = "CONFLICT"


class NoWatcherError(ZkRecipesError):
    """There is no watch of the kind asked for on that path in this client
    (:meth:`Client.remove_watches`; ZooKeeper's ``NoWatcherException``)."""

    code = "NO_WATCHER"


class TimeoutError(ZkRecipesError, _builtins.TimeoutError):
    """Timed out where a boolean is not the answer (connecting, ``add_and_get(timeout=...)``)."""

    code = "TIMEOUT"


class CorruptedDataError(ZkRecipesError):
    """A node's data cannot be decoded (a counter node with too few bytes, say)."""

    code = "CORRUPTED_DATA"


class OverflowError(ZkRecipesError, _builtins.OverflowError):
    """An arithmetic result does not fit (checked counter operations)."""

    code = "OVERFLOW"


class ServerError(ZkRecipesError):
    """Any other error code from the server or the protocol layer."""

    code = "SERVER"


class InternalError(ZkRecipesError):
    """A bug of zkrecipes (a caught panic or a broken invariant): please report it."""

    code = "INTERNAL"


_ARGUMENT_NOTE = _re.compile(r"while processing '(\w+)'")

#: Exception class by code, used by the native module to raise the right class: every subclass
#: of :class:`ZkRecipesError` above.
BY_CODE: _Dict[str, _Type[ZkRecipesError]] = {cls.code: cls for cls in ZkRecipesError.__subclasses__()}


def _check_against_the_core() -> None:
    """Each kind of the core has its class, and each class its kind; the numbers are the core's."""
    kinds = dict(_native.ERROR_KINDS)
    missing = sorted(set(kinds) - set(BY_CODE))
    extra = sorted(set(BY_CODE) - set(kinds))
    if missing or extra:
        raise ImportError(
            f"zkrecipes.errors does not match the core's error kinds: no class for {missing}, "
            f"no kind for {extra} (add one class per kind to zkrecipes/errors.py)"
        )
    for code, status in kinds.items():
        BY_CODE[code].status = status


_check_against_the_core()


def _public_names() -> "list[str]":
    """The names ``from zkrecipes import *`` gives: every class but those named like a builtin
    (``TimeoutError``, ``OverflowError``: use ``zkrecipes.TimeoutError``), which would shadow it."""
    return ["ZkRecipesError"] + [
        cls.__name__ for cls in BY_CODE.values() if not hasattr(_builtins, cls.__name__)
    ]
