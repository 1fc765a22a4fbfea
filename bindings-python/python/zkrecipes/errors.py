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
"""

from __future__ import annotations

import builtins
import re
import sys
from typing import Dict, Optional, Type

from . import _native

__all__ = [
    "ZkRecipesError",
    "InvalidArgumentError",
    "NotOwnerError",
    "ConnectionLossError",
    "SessionExpiredError",
    "AuthFailedError",
    "OutcomeUnknownError",
    "ClosedError",
    "NoNodeError",
    "NodeExistsError",
    "BadVersionError",
    "NoAuthError",
    "NotEmptyError",
    "ConflictError",
    "CorruptedDataError",
    "ServerError",
    "InternalError",
    # TimeoutError and OverflowError are left out of ``*`` imports on purpose: they would shadow
    # the builtins. Use ``zkrecipes.TimeoutError`` / ``zkrecipes.OverflowError``.
]


class ZkRecipesError(Exception):
    """Base class of every zkrecipes failure."""

    #: The kind, as in API.md's table (``"NO_NODE"``); the C face's status is ``"ZKR_" + code``.
    code: str = "ERROR"
    #: The kind's number (C's ``zkr_status``: 300 for NO_NODE), from the core's vocabulary.
    status: int = 0
    #: ZooKeeper's own error code for this failure, when the server gave one (``-101`` for
    #: NONODE); None for failures ZooKeeper did not report.
    zk_code: Optional[int] = None
    #: For a failed :meth:`Transaction.commit <zkrecipes.Transaction.commit>`: the index of the
    #: operation that failed (nothing was applied); None otherwise.
    index: Optional[int] = None


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
        if sys.version_info >= (3, 11):
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


class TimeoutError(ZkRecipesError, builtins.TimeoutError):
    """Timed out where a boolean is not the answer (connecting, ``add_and_get(timeout=...)``)."""

    code = "TIMEOUT"


class CorruptedDataError(ZkRecipesError):
    """A node's data cannot be decoded (a counter node with too few bytes, say)."""

    code = "CORRUPTED_DATA"


class OverflowError(ZkRecipesError, builtins.OverflowError):
    """An arithmetic result does not fit (checked counter operations)."""

    code = "OVERFLOW"


class ServerError(ZkRecipesError):
    """Any other error code from the server or the protocol layer."""

    code = "SERVER"


class InternalError(ZkRecipesError):
    """A bug of zkrecipes (a caught panic or a broken invariant): please report it."""

    code = "INTERNAL"


_ARGUMENT_NOTE = re.compile(r"while processing '(\w+)'")

#: Exception class by code, used by the native module to raise the right class.
BY_CODE: Dict[str, Type[ZkRecipesError]] = {
    cls.code: cls
    for cls in (
        InvalidArgumentError,
        NotOwnerError,
        ConnectionLossError,
        SessionExpiredError,
        AuthFailedError,
        OutcomeUnknownError,
        ClosedError,
        NoNodeError,
        NodeExistsError,
        BadVersionError,
        NoAuthError,
        NotEmptyError,
        ConflictError,
        TimeoutError,
        CorruptedDataError,
        OverflowError,
        ServerError,
        InternalError,
    )
}

for _name, _status in _native.ERROR_KINDS:
    BY_CODE[_name].status = _status
