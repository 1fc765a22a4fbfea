"""pytest fixtures of the zkrecipes testing kit, registered through the ``pytest11`` entry point
(installed with the package; ``-p no:zkrecipes`` turns it off):

* ``zookeeper``: a :class:`zkrecipes.testing.TestingServer` for the whole test session;
* ``zookeeper_client``: a started :class:`zkrecipes.Client` of it, closed after each test.

A machine without ZooKeeper fails these tests (never skips them) with what to install.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from .client import Client
from .testing import TestingServer, ZooKeeperNotFoundError


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[TestingServer]:
    """One real ZooKeeper server for the test session."""
    try:
        server = TestingServer()
    except ZooKeeperNotFoundError as e:
        pytest.fail(str(e), pytrace=False)
    with server:
        yield server


@pytest.fixture
def zookeeper_client(zookeeper: TestingServer) -> Iterator[Client]:
    """A started client of the session's server, closed after the test."""
    with Client(zookeeper.connect_string, session_timeout=10.0, connection_timeout=10.0) as client:
        yield client
