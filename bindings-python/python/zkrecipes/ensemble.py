"""Dynamic ensembles: the ensemble's configuration (``/zookeeper/config``, Curator's
``getConfig().forEnsemble()``) as :class:`EnsembleConfig`, returned by
:meth:`Client.get_config <zkrecipes.Client.get_config>` and
:meth:`Client.reconfig <zkrecipes.Client.reconfig>` (Curator's ``reconfig()``). The ensemble
tracker (Curator's ``EnsembleTracker``) is the client option ``track_ensemble=True``."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, List, Optional, Tuple, Union

# (id, host, quorum_port, election_port, role, client_host, client_port, client_address, line)
_MemberTuple = Tuple[int, str, int, int, str, Optional[str], Optional[int], Optional[str], str]
_ConfigTuple = Tuple[List[_MemberTuple], int, str, str]

__all__ = ["EnsembleConfig", "EnsembleMember", "ServerRole"]


class ServerRole(str, enum.Enum):
    """A member's role."""

    PARTICIPANT = "PARTICIPANT"
    """A voting member."""
    OBSERVER = "OBSERVER"
    """A non-voting member that serves clients."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class EnsembleMember:
    """One member, from its ``server.ID=`` line."""

    id: int
    """The member's id (its ``myid``)."""
    host: str
    """The host of its (first) quorum address."""
    quorum_port: int
    """Its quorum (follower-to-leader) port."""
    election_port: int
    """Its leader-election port."""
    role: ServerRole
    """Participant or observer."""
    client_host: Optional[str]
    """The address it serves clients on, as written (``"0.0.0.0"`` when only a port is given);
    None without a client port."""
    client_port: Optional[int]
    """Its plaintext client port; None if the line has none."""
    client_address: Optional[str]
    """Where a client reaches it (``"host:port"``; its quorum host when the client address is a
    wildcard); None without a client port."""
    server_line: str
    """``"server.ID=HOST:QUORUM:ELECTION:ROLE;HOST:PORT"``: what ``reconfig(joining=...)``
    takes to add it."""


@dataclass(frozen=True)
class EnsembleConfig:
    """The ensemble's configuration: its members by id, and its version."""

    members: List[EnsembleMember]
    """The members, by id (none on a standalone server)."""
    version: int
    """The zxid of the reconfiguration that made it (0 for one never changed):
    ``reconfig(from_config=...)`` takes it."""
    connect_string: str
    """The members' client addresses as a connect string (``""`` if none has one): what the
    ensemble tracker gives the session."""
    data: str
    """The node's text as read."""

    def member(self, id: int) -> Optional[EnsembleMember]:
        """The member with this id, if there is one."""
        return next((m for m in self.members if m.id == id), None)

    @classmethod
    def _of(cls, t: _ConfigTuple) -> "EnsembleConfig":
        members, version, connect_string, data = t
        return cls(
            [
                EnsembleMember(i, h, q, e, ServerRole(r), ch, cp, ca, line)
                for (i, h, q, e, r, ch, cp, ca, line) in members
            ],
            version,
            connect_string,
            data,
        )


def _lines(what: str, lines: Union[None, str, Iterable[str]]) -> List[str]:
    """A list of server lines (one str is one line)."""
    if lines is None:
        return []
    if isinstance(lines, str):
        return [lines]
    out = list(lines)
    for line in out:
        if not isinstance(line, str):
            raise TypeError(f"{what} must be server lines (str), not {type(line).__name__}")
    return out


def _ids(leaving: Union[None, int, Iterable[int]]) -> List[int]:
    """A list of member ids (one int is one id)."""
    if leaving is None:
        return []
    if isinstance(leaving, int):
        if isinstance(leaving, bool):
            raise TypeError("leaving must be member ids (int), not bool")
        return [leaving]
    out = list(leaving)
    for i in out:
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"leaving must be member ids (int), not {type(i).__name__}")
    return out
