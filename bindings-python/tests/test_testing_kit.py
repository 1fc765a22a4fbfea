"""The testing kit users get (zkrecipes.testing and its pytest plugin): real servers started
from a test, restart, expiry, an ensemble losing its leader, and where ZooKeeper comes from."""

from __future__ import annotations

import asyncio
import os
import queue
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

import zkrecipes
from zkrecipes.testing import (
    TestingCluster,
    TestingServer,
    ZooKeeperNotFoundError,
    expire_session,
    expire_session_async,
    find_zookeeper,
)

DEBIAN_JAR = Path("/usr/share/java/zookeeper.jar")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.delenv("ZKRECIPES_ZOOKEEPER_JAR", raising=False)
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    yield monkeypatch


def test_a_server_restarts_with_its_data_and_the_client_reconnects() -> None:
    with TestingServer() as server:
        assert server.connect_string == f"127.0.0.1:{server.port}"
        assert server.is_running
        with zkrecipes.Client(server.connect_string, session_timeout=10.0) as client:
            client.create("/kit", b"kept")
            server.restart()
            assert client.get_data("/kit")[0] == b"kept"
        server.stop()
        assert not server.is_running
        server.start()
        assert "Mode: standalone" in server.four_letter("srvr")
    with pytest.raises(RuntimeError, match="closed"):
        server.restart()


def test_expire_session_loses_the_session_and_its_ephemeral_nodes() -> None:
    with TestingServer() as server, zkrecipes.Client(server.connect_string, session_timeout=10.0) as client:
        states: "queue.Queue[str]" = queue.Queue()
        client.add_state_listener(lambda s: states.put(s.name))
        client.create("/eph", b"", mode=zkrecipes.CreateMode.EPHEMERAL)
        expire_session(client)
        seen = []
        # LOST, then a new session (RECONNECTED); a SUSPENDED may come first.
        while "LOST" not in seen or seen[-1] != "RECONNECTED":
            seen.append(states.get(timeout=30))
        assert client.exists("/eph") is None


def test_a_cluster_elects_a_new_leader_when_its_leader_dies() -> None:
    with TestingCluster(3) as cluster:
        assert len(cluster.servers) == 3
        assert cluster.connect_string.count(",") == 2
        with zkrecipes.Client(cluster.connect_string, session_timeout=20.0) as client:
            client.create("/ensemble", b"1")
            leader = cluster.leader
            assert leader is not None
            leader.kill()
            new_leader = cluster.wait_for_quorum(30)
            assert new_leader is not None and new_leader.index != leader.index
            assert client.get_data("/ensemble")[0] == b"1"
            leader.start()


def test_the_pytest_plugin_gives_a_server_and_a_client(
    zookeeper: TestingServer, zookeeper_client: zkrecipes.Client
) -> None:
    zookeeper_client.create("/plugin", b"ok")
    assert zookeeper_client.get_data("/plugin")[0] == b"ok"
    assert zookeeper_client.hosts == zookeeper.connect_string


def test_zookeeper_from_a_given_jar(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ZKRECIPES_ZOOKEEPER_JAR", f"/etc/zookeeper/conf:{DEBIAN_JAR}")
    assert find_zookeeper() == "ZKRECIPES_ZOOKEEPER_JAR"
    with TestingServer() as server:
        assert "Mode: standalone" in server.four_letter("srvr")


def test_zookeeper_from_zookeeper_home(clean_env: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory() as home:
        # A binary release's layout: lib/zookeeper-3.x.y.jar (Debian's jar names its
        # dependencies by absolute path, so a link stands in for the release's lib/).
        os.mkdir(f"{home}/lib")
        os.symlink(DEBIAN_JAR, f"{home}/lib/zookeeper-3.8.0.jar")
        clean_env.setenv("ZOOKEEPER_HOME", home)
        assert find_zookeeper() == f"ZOOKEEPER_HOME={home}"
        with TestingServer() as server:
            assert "Mode: standalone" in server.four_letter("srvr")


def test_no_zookeeper_fails_naming_what_to_install(clean_env: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory() as empty:
        clean_env.setenv("ZOOKEEPER_HOME", empty)
        with pytest.raises(ZooKeeperNotFoundError, match="apt-get install -y zookeeper") as e:
            TestingServer()
        assert "ZOOKEEPER_HOME" in str(e.value) and "zookeeper.apache.org" in str(e.value)
    clean_env.setenv("ZKRECIPES_ZOOKEEPER_JAR", "/nonexistent/zookeeper.jar")
    with pytest.raises(ZooKeeperNotFoundError, match="/nonexistent/zookeeper.jar"):
        TestingCluster(3)


def test_expire_session_async_and_a_whole_cluster_restart() -> None:
    with TestingCluster(3) as cluster, zkrecipes.Client(cluster.connect_string, session_timeout=20.0) as client:
        client.create("/eph", b"", mode=zkrecipes.CreateMode.EPHEMERAL)
        asyncio.run(expire_session_async(client))
        assert client.exists("/eph") is None
        client.create("/kept", b"1")
        cluster.restart()
        assert cluster.wait_for_quorum(30) is not None
        assert client.get_data("/kept")[0] == b"1"
