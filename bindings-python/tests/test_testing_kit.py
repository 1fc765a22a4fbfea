"""The testing kit users get (zkrecipes.testing and its pytest plugin): real servers started
from a test, restart, expiry, an ensemble losing its leader, and where ZooKeeper comes from."""

from __future__ import annotations

import asyncio
import os
import queue
import socket
import ssl
import tempfile
from pathlib import Path
from typing import Iterator, Optional

import pytest

import zkrecipes
from zkrecipes.testing import (
    CLIENT_IDENTITIES,
    TestingCluster,
    TestingServer,
    TlsMaterial,
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
    with pytest.raises(zkrecipes.ClosedError, match="closed"):  # as FaultProxy's
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
            # A member frozen (SIGSTOP) and thawed (SIGCONT).
            member = cluster.servers[(new_leader.index + 1) % 3]
            member.pause()
            assert member.is_paused and member.is_running
            member.resume()
            assert not member.is_paused
            assert client.get_data("/ensemble")[0] == b"1"


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


# --- Secured servers: TLS, SASL, x509 -------------------------------------------------------


def _handshake(address: str, ca: str, cert: Optional[str], key: Optional[str], verify_name: bool = True) -> str:
    """A TLS handshake with Python's own ``ssl`` module (independent of zkrecipes' client), then
    the four-letter word ``srvr`` over it; returns the server's answer."""
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = verify_name
    if cert is not None:
        context.load_cert_chain(cert, key)
    with socket.create_connection((host, int(port)), timeout=30) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            tls.sendall(b"srvr")
            answer = b""
            while True:
                chunk = tls.recv(4096)
                if not chunk:
                    return answer.decode()
                answer += chunk


def _refused(address: str, ca: str, cert: Optional[str], key: Optional[str]) -> bool:
    """Whether the server refuses this client: the handshake fails, or (as TLS 1.3 would report
    a refused client certificate at the first read) the connection closes without an answer."""
    try:
        return "Zookeeper version" not in _handshake(address, ca, cert, key)
    except (ssl.SSLError, ConnectionError):
        return True


def test_a_tls_server_hands_its_port_and_pem_files_and_speaks_tls() -> None:
    with TestingServer(tls="need", sasl_users={"alice": "secret"}, x509=True) as server:
        tls = server.tls
        assert tls is not None
        secure = server.secure_connect_string
        assert secure is not None and secure.startswith("127.0.0.1:") and secure != server.connect_string
        assert "Mode: standalone" in server.four_letter("srvr")  # the plaintext port stays
        for name in CLIENT_IDENTITIES:
            for path in (tls.cert(name), tls.key(name), tls.keystore(name)):
                assert isinstance(path, str) and os.path.isfile(path), (name, path)
        for path in (tls.ca, tls.wrong_ca, tls.encrypted_client_key):
            assert os.path.isfile(path)
        assert Path(tls.client_key).read_text().startswith("-----BEGIN PRIVATE KEY-----")
        assert Path(tls.rsa_client_key).read_text().startswith("-----BEGIN RSA PRIVATE KEY-----")
        assert Path(tls.sec1_client_key).read_text().startswith("-----BEGIN EC PRIVATE KEY-----")
        assert Path(tls.encrypted_client_key).read_text().startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        assert tls.x509_id("client") == tls.client_x509_id == "CN=zkr-client"
        assert tls.x509_id("other_client") == "CN=zkr-other"

        # Python's ssl: every valid identity (EC PKCS#8, RSA PKCS#1, EC SEC1, the encrypted key)
        # is served, with host name verification on the IP.
        assert "Zookeeper version" in _handshake(secure, tls.ca, tls.client_cert, tls.client_key)
        assert "Zookeeper version" in _handshake(secure, tls.ca, tls.rsa_client_cert, tls.rsa_client_key)
        assert "Zookeeper version" in _handshake(secure, tls.ca, tls.sec1_client_cert, tls.sec1_client_key)
        context = ssl.create_default_context(cafile=tls.ca)
        context.load_cert_chain(tls.client_cert, tls.encrypted_client_key, password=tls.encrypted_client_key_password)
        # need: no certificate, an expired one, another CA's: refused.
        for cert, key in (
            (None, None),
            (tls.expired_client_cert, tls.expired_client_key),
            (tls.wrong_ca_client_cert, tls.wrong_ca_client_key),
        ):
            assert _refused(secure, tls.ca, cert, key), cert
        # A client trusting another CA refuses the server.
        with pytest.raises(ssl.SSLCertVerificationError):
            _handshake(secure, tls.wrong_ca, tls.client_cert, tls.client_key)

        # A certificate issued now is served too.
        with tempfile.TemporaryDirectory() as scratch:
            cert, key = f"{scratch}/new.pem", f"{scratch}/new.key"
            tls.issue_client("zkr-rotated", cert, key)
            assert "Zookeeper version" in _handshake(secure, tls.ca, cert, key)
            assert TlsMaterial.x509_id_for_cn("zkr-rotated") == "CN=zkr-rotated"


def test_server_certificates_expired_or_for_another_name_fail_verification() -> None:
    with TestingServer(tls="none", server_cert="expired") as expired, TestingServer(
        tls="none", server_cert="wrong-name"
    ) as wrong:
        assert expired.tls is not None and wrong.tls is not None
        assert expired.secure_connect_string is not None and wrong.secure_connect_string is not None
        with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
            _handshake(expired.secure_connect_string, expired.tls.ca, None, None)
        with pytest.raises(ssl.SSLCertVerificationError, match="mismatch|match"):
            _handshake(wrong.secure_connect_string, wrong.tls.ca, None, None)
        # Its name is its only fault.
        assert "Zookeeper version" in _handshake(wrong.secure_connect_string, wrong.tls.ca, None, None, verify_name=False)


def test_a_tls_cluster_serves_tls_on_every_member() -> None:
    with TestingCluster(3, tls="want") as cluster:
        tls = cluster.tls
        assert tls is not None and cluster.secure_connect_string is not None
        members = cluster.secure_connect_string.split(",")
        assert len(members) == 3
        for i, server in enumerate(cluster.servers):
            assert server.secure_connect_string == members[i]
            assert members[i].startswith(f"127.0.0.{i + 1}:")
            # want: with or without a client certificate; each member's certificate names its IP.
            assert "Zookeeper version" in _handshake(members[i], tls.ca, tls.client_cert, tls.client_key)
            assert "Zookeeper version" in _handshake(members[i], tls.ca, None, None)


def test_unsecured_servers_have_no_tls_and_bad_settings_are_refused() -> None:
    with TestingServer() as server:
        assert server.tls is None and server.secure_connect_string is None
    with pytest.raises(ValueError, match="want"):
        TestingServer(tls="maybe")
    with pytest.raises(ValueError, match="x509 identities need client certificates"):
        TestingServer(tls="none", x509=True)
    with pytest.raises(ValueError, match="server_cert"):
        TestingCluster(3, server_cert="stale")
    with pytest.raises(ValueError, match="needs TLS"):
        TestingServer(server_cert="expired")
    with pytest.raises(ValueError, match="which must be one of"):
        TlsMaterial._of([(f, "x") for f in TlsMaterial.__dataclass_fields__]).cert("mallory")
