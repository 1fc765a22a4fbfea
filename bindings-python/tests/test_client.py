"""The client: life cycle, options, connection states and the plain operations."""

from __future__ import annotations

import asyncio
import builtins
import sys
import threading
from typing import Callable, List

import pytest

import zkrecipes
from zkrecipes import ConnectionState, CreateMode

from conftest import ZooKeeper, wait_until


def test_with_block_connects_and_closes(zk: ZooKeeper) -> None:
    with zkrecipes.Client(zk.connect, session_timeout=10) as c:
        assert c.started and c.state is ConnectionState.CONNECTED
        assert c.session_id != 0
        assert 0 < c.session_timeout <= 10
        assert c.exists("/") is not None
    assert c.closed and c.state is None
    with pytest.raises(zkrecipes.ClosedError, match="closed"):
        c.exists("/")
    c.close()  # idempotent


def test_calls_before_start_raise_closed_error(zk: ZooKeeper) -> None:
    c = zkrecipes.Client(zk.connect)
    assert c.state is None and not c.started
    with pytest.raises(zkrecipes.ClosedError, match="not started"):
        c.get_children("/")


def test_async_with_connects_and_closes(zk: ZooKeeper, path: str) -> None:
    async def main() -> None:
        async with zkrecipes.Client(zk.connect) as c:
            created = await c.create_async(path, b"x", create_parents=True)
            assert created == path
            data, stat = await c.get_data_async(path)
            assert data == b"x" and stat.version == 0
            await c.delete_async(path)
            assert await c.exists_async(path) is None
        assert c.closed

    asyncio.run(main())


def test_ephemeral_nodes_vanish_on_close(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    a = make_client()
    b = make_client()
    a.create(path, b"", mode=CreateMode.EPHEMERAL, create_parents=True)
    assert b.exists(path) is not None
    a.close()
    assert b.exists(path) is None


def test_plain_operations_round_trip(client: zkrecipes.Client, path: str) -> None:
    assert client.create(path, b"v0", create_parents=True) == path
    data, stat = client.get_data(path)
    assert (data, stat.version, stat.data_length) == (b"v0", 0, 2)
    stat = client.set_data(path, b"v1", version=0)
    assert stat.version == 1
    with pytest.raises(zkrecipes.BadVersionError, match=r"BAD_VERSION.*-103"):
        client.set_data(path, b"v2", version=0)
    seq = client.create(path + "/s-", mode=CreateMode.PERSISTENT_SEQUENTIAL)
    assert seq.startswith(path + "/s-") and len(seq) == len(path + "/s-") + 10
    prot = client.create(path + "/p", mode=CreateMode.EPHEMERAL, protected=True)
    assert prot.startswith(path + "/_c_") and prot.endswith("-p")
    assert sorted(client.get_children(path)) == sorted([seq.rsplit("/", 1)[1], prot.rsplit("/", 1)[1]])
    with pytest.raises(zkrecipes.NotEmptyError):
        client.delete(path)
    with pytest.raises(zkrecipes.NodeExistsError, match=path):
        client.create(path)
    client.delete(path, recursive=True)
    assert client.exists(path) is None
    with pytest.raises(zkrecipes.NoNodeError, match=r"NO_NODE.*-101") as e:
        client.get_data(path)
    assert path in str(e.value) and e.value.code == "NO_NODE" and e.value.zk_code == -101


def test_namespace_prefixes_every_path(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    ns = path.strip("/").replace("/", "_")
    scoped = make_client(namespace=ns)
    plain = make_client()
    scoped.create("/a", b"in-ns", create_parents=True)
    assert plain.get_data(f"/{ns}/a")[0] == b"in-ns"
    plain.delete(f"/{ns}", recursive=True)


def test_digest_auth_is_sent(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    c = make_client(auth=("digest", "user:secret"))
    c.create(path, b"", create_parents=True)
    assert c.exists(path) is not None


def test_state_listener_hears_connected_lost_and_reconnected(zk: ZooKeeper, path: str) -> None:
    seen: List[ConnectionState] = []
    lock = threading.Lock()

    def listener(s: ConnectionState) -> None:
        with lock:
            seen.append(s)

    c = zkrecipes.Client(zk.connect, session_timeout=4)
    c.add_state_listener(listener)
    c.start()
    try:
        wait_until(lambda: ConnectionState.CONNECTED in seen, what="CONNECTED")
        old = c.session_id
        c.create(path, b"", mode=CreateMode.EPHEMERAL, create_parents=True)
        c._expire_session_for_testing()
        wait_until(lambda: ConnectionState.LOST in seen, what="LOST")
        wait_until(lambda: seen[-1] is ConnectionState.RECONNECTED, what="RECONNECTED after LOST")
        assert c.session_id not in (0, old)
        assert c.exists(path) is None  # the old session's ephemeral is gone
        assert c.remove_state_listener(listener)
        assert not c.remove_state_listener(listener)
    finally:
        c.close()


def test_a_listener_id_of_another_client_or_recipe_is_refused(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    # Listener ids are unique in the process: each client and recipe used to count from 1, so a
    # lock's id (or another client's) given to this client's remove removed an unrelated
    # listener of its own.
    a, b = make_client(), make_client()
    ida = a.add_state_listener(lambda state: None)
    idb = b.add_state_listener(lambda state: None)
    lock_id = zkrecipes.InterProcessMutex(a, path).on_lost(lambda owner: None)
    assert len({ida, idb, lock_id}) == 3
    for foreign in (idb, lock_id, 1):
        with pytest.raises(zkrecipes.InvalidArgumentError, match="listener id"):
            a.remove_state_listener(foreign)
    assert a.remove_state_listener(ida) and b.remove_state_listener(idb)
    assert not a.remove_state_listener(ida)


def test_expiring_a_session_without_the_testing_kit_is_a_coded_error(
    make_client: Callable[..., zkrecipes.Client],
) -> None:
    # A build without the kit has no native expiry: the same coded error as Node's
    # ZKR_INVALID_ARGUMENT, not a bare AttributeError.
    c = make_client()
    native = c._native

    class WithoutKit:
        def __getattr__(self, name: str) -> object:
            if name == "_expire_session_for_testing":
                raise AttributeError(name)
            return getattr(native, name)

    c._native = WithoutKit()  # type: ignore[assignment]
    try:
        with pytest.raises(zkrecipes.InvalidArgumentError, match="testing kit"):
            c._expire_session_for_testing()
    finally:
        c._native = native


def test_listener_exception_is_reported_and_does_not_break_the_client(
    zk: ZooKeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    reported: List[BaseException] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))

    def bad(_s: ConnectionState) -> None:
        raise RuntimeError("listener bug")

    c = zkrecipes.Client(zk.connect)
    c.add_state_listener(bad)
    c.start()
    try:
        wait_until(lambda: len(reported) > 0, what="the listener's exception to be reported")
        assert isinstance(reported[0], RuntimeError)
        assert c.exists("/") is not None
    finally:
        c.close()


def test_connect_timeout_raises_timeout_error() -> None:
    # Port 9 (discard) on loopback: nothing listens; the connect keeps failing until the timeout.
    c = zkrecipes.Client("127.0.0.1:9", connection_timeout=0.5)
    with pytest.raises(zkrecipes.ZkRecipesError) as e:
        c.start()
    assert isinstance(e.value, (zkrecipes.TimeoutError, zkrecipes.ConnectionLossError))
    if isinstance(e.value, zkrecipes.TimeoutError):
        assert isinstance(e.value, builtins.TimeoutError)


def test_retry_policies_are_accepted(zk: ZooKeeper) -> None:
    for policy in (
        zkrecipes.ExponentialBackoffRetry(0.1, 3),
        zkrecipes.ExponentialBackoffRetry(0.1, 3, max_sleep=1.0),
        zkrecipes.BoundedExponentialBackoffRetry(0.1, 1.0, 5),
        zkrecipes.RetryNTimes(3, 0.1),
        zkrecipes.RetryOneTime(0.1),
        zkrecipes.RetryUntilElapsed(2.0, 0.1),
        zkrecipes.RetryForever(0.1),
    ):
        with zkrecipes.Client(zk.connect, retry=policy) as c:
            assert c.exists("/") is not None


def test_request_counts_count_requests(client: zkrecipes.Client, path: str) -> None:
    before = client.request_counts()
    client.exists(path)
    after = client.request_counts()
    assert after["exists"] == before["exists"] + 1


def test_sync_makes_another_servers_reads_see_every_earlier_write() -> None:
    from zkrecipes.testing import TestingCluster

    with TestingCluster(3) as cluster:
        with zkrecipes.Client(cluster.servers[0].connect_string) as writer, zkrecipes.Client(
            cluster.servers[1].connect_string
        ) as reader:
            writer.create("/sync/x", b"0", create_parents=True)
            before = reader.request_counts()["sync"]
            for i in range(1, 51):
                stat = writer.set_data("/sync/x", str(i).encode())
                reader.sync("/sync/x")
                data, seen = reader.get_data("/sync/x")
                assert (data, seen.version) == (str(i).encode(), stat.version)
            assert reader.request_counts()["sync"] - before == 50
            reader.sync("/sync/missing")  # a missing node is fine
            asyncio.run(reader.sync_async("/sync/x"))
            with pytest.raises(zkrecipes.InvalidArgumentError):
                reader.sync("relative")
        with pytest.raises(zkrecipes.ClosedError):
            reader.sync("/sync/x")
