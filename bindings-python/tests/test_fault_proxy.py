"""The testing kit's network faults (zkrecipes.testing.FaultProxy) and frozen servers
(TestingServer.pause/resume), seen by a real client of a real ZooKeeper."""

from __future__ import annotations

import math
import queue
import socket
import time

import pytest

import zkrecipes
from zkrecipes.errors import ClosedError, InvalidArgumentError
from zkrecipes.testing import FaultProxy, TestingServer

from conftest import ZooKeeper, wait_until

# A short read timeout (the connection timeout): a silent connection is noticed within about a
# second, while the session (10 s) outlives the fault, so the client comes back to the same one.
OPTIONS = {"session_timeout": 10.0, "connection_timeout": 1.0}


def states_of(client: zkrecipes.Client) -> "queue.Queue[str]":
    states: "queue.Queue[str]" = queue.Queue()
    client.add_state_listener(lambda s: states.put(s.name))
    return states


def wait_state(states: "queue.Queue[str]", want: str, timeout: float = 30.0) -> None:
    """Takes states until ``want`` arrives; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {want} within {timeout} s (saw {seen})")
        try:
            state = states.get(timeout=left)
        except queue.Empty:
            continue
        seen.append(state)
        if state == want:
            return


def round_trip(client: zkrecipes.Client) -> float:
    start = time.perf_counter()
    client.exists("/")
    return time.perf_counter() - start


def test_blackhole_suspends_the_client_and_restore_brings_back_its_session(zk: ZooKeeper) -> None:
    with FaultProxy(zk.connect) as proxy, zkrecipes.Client(proxy.connect_string, **OPTIONS) as client:  # type: ignore[arg-type]
        assert proxy.upstream == zk.connect
        assert proxy.connect_string == f"127.0.0.1:{proxy.port}"
        client.exists("/")
        assert proxy.connections == 1
        forwarded = proxy.bytes_forwarded
        assert forwarded > 0
        session = client.session_id
        states = states_of(client)

        # (No byte count is compared across the switch: a ping may be mid-way through it.)
        proxy.blackhole()
        wait_state(states, "SUSPENDED")

        proxy.restore()
        wait_state(states, "RECONNECTED")
        assert client.session_id == session
        client.exists("/")
        assert proxy.bytes_forwarded > forwarded


def test_cut_closes_every_connection_until_restore(zk: ZooKeeper) -> None:
    with FaultProxy(zk.connect) as proxy, zkrecipes.Client(proxy.connect_string, **OPTIONS) as client:  # type: ignore[arg-type]
        client.exists("/")
        states = states_of(client)
        proxy.cut()
        assert proxy.connections == 0
        wait_state(states, "SUSPENDED")
        # A new connection is accepted and closed at once: end of stream, no answer.
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as probe:
            probe.sendall(b"srvr")
            try:
                assert probe.recv(64) == b""
            except ConnectionResetError:
                pass
        proxy.restore()
        wait_state(states, "RECONNECTED")
        assert proxy.connections == 1
        client.exists("/")


def test_delay_slows_every_round_trip_by_twice_the_latency(zk: ZooKeeper) -> None:
    with FaultProxy(zk.connect) as proxy, zkrecipes.Client(proxy.connect_string, **OPTIONS) as client:  # type: ignore[arg-type]
        client.exists("/")
        proxy.delay(0.2)
        # Each way 0.2 s: a request and its reply, at least 0.4 s, however fast the machine.
        assert round_trip(client) >= 0.4
        proxy.delay_replies(0.2)
        assert round_trip(client) >= 0.2
        proxy.restore()
        wait_until(lambda: round_trip(client) < 0.2, timeout=20, what="round trips without the delay")


def test_a_paused_server_suspends_its_client_and_resume_keeps_the_session() -> None:
    with TestingServer() as server, zkrecipes.Client(server.connect_string, **OPTIONS) as client:  # type: ignore[arg-type]
        client.create("/paused", b"kept")
        session = client.session_id
        states = states_of(client)
        server.pause()
        assert server.is_paused and server.is_running
        wait_state(states, "SUSPENDED")
        server.resume()
        assert not server.is_paused
        wait_state(states, "RECONNECTED")
        assert client.session_id == session
        assert client.get_data("/paused")[0] == b"kept"
        server.stop()
        with pytest.raises(RuntimeError, match="not running"):
            server.pause()
    with pytest.raises(zkrecipes.ClosedError, match="closed"):
        server.resume()


def test_bad_latencies_upstreams_and_a_closed_proxy_are_typed_errors(zk: ZooKeeper) -> None:
    for bad in ("localhost", "127.0.0.1:", ":2181", "127.0.0.1:99999", "127.0.0.1:0", ""):
        with pytest.raises(InvalidArgumentError, match="upstream"):
            FaultProxy(bad)
    with pytest.raises(TypeError):
        FaultProxy(2181)  # type: ignore[arg-type]
    proxy = FaultProxy(zk.connect)
    for bad_latency in (-0.001, math.nan, math.inf, -math.inf):
        with pytest.raises(InvalidArgumentError, match="delay"):
            proxy.delay(bad_latency)
        with pytest.raises(ValueError, match="delay_replies"):
            proxy.delay_replies(bad_latency)
    with pytest.raises(TypeError):
        proxy.delay("0.2")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        proxy.delay(1e300)  # past what a Duration holds
    proxy.delay(0)
    proxy.restore()
    assert not proxy.closed
    proxy.close()
    proxy.close()  # idempotent
    assert proxy.closed and repr(proxy) == "FaultProxy(closed)"
    for use in (
        proxy.cut,
        proxy.blackhole,
        proxy.drop_replies,
        proxy.restore,
        lambda: proxy.delay(0.1),
        lambda: proxy.delay_replies(0.1),
        lambda: proxy.connect_string,
        lambda: proxy.port,
        lambda: proxy.connections,
        lambda: proxy.bytes_forwarded,
    ):
        with pytest.raises(ClosedError, match="closed"):
            use()
