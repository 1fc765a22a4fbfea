"""The face follows the core's one vocabulary and contracts: every error kind has its class,
the enums are the core's lists, timeouts and integers and text are checked the same way
everywhere, and what the core now refuses (oversized requests, impossible semaphore acquires)
reaches Python as InvalidArgumentError."""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import threading
import time
from typing import Any, Callable, List

import pytest

import zkrecipes
from zkrecipes import (
    CancelReason,
    Client,
    ConnectionState,
    CreateMode,
    DistributedAtomicInteger,
    DistributedAtomicLong,
    EventType,
    InterProcessMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    SharedCount,
    VersionedValue,
    _native,
)
from zkrecipes.errors import BY_CODE

from conftest import ZooKeeper, wait_until


def test_every_error_kind_of_the_core_has_its_class_and_no_other() -> None:
    kinds = dict(_native.ERROR_KINDS)
    assert set(BY_CODE) == set(kinds)
    for name, status in kinds.items():
        assert BY_CODE[name].code == name and BY_CODE[name].status == status
    assert kinds["CONFLICT"] == 305 and BY_CODE["CONFLICT"] is zkrecipes.ConflictError
    assert kinds["NO_NODE"] == 300 and zkrecipes.NoNodeError.status == 300


def test_the_enums_are_the_cores_lists() -> None:
    def canonical(enum: Any) -> List[str]:
        return [m.value for m in enum]  # iteration skips aliases

    assert canonical(CreateMode) == _native.CREATE_MODES
    assert canonical(EventType) == _native.EVENT_TYPES
    assert canonical(ConnectionState) == _native.CONNECTION_STATES
    assert canonical(CancelReason) == _native.CANCEL_REASONS
    assert canonical(zkrecipes.LeaseLostReason) == _native.LEASE_LOST_REASONS
    assert _native.LOG_LEVELS == ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"]
    # kazoo's names stay as aliases
    assert EventType.CHANGED is EventType.DATA_CHANGED and EventType.CHILD is EventType.CHILDREN_CHANGED


def test_zk_code_comes_from_the_server_error(client: Client, path: str) -> None:
    with pytest.raises(zkrecipes.NoNodeError) as e:
        client.get_data(path)
    assert e.value.zk_code == -101 and "ZooKeeper code -101" in str(e.value) and "NO_NODE 300" in str(e.value)
    with pytest.raises(zkrecipes.InvalidArgumentError) as bad:
        client.get_data("relative")
    assert bad.value.zk_code is None


def test_none_and_infinity_both_mean_no_limit(client: Client, path: str) -> None:
    for no_limit in (None, math.inf, 10**400):
        m = InterProcessMutex(client, f"{path}/m")
        assert m.acquire(timeout=no_limit)
        m.release()
    latch = LeaderLatch(client, f"{path}/latch")
    latch.start()
    assert latch.await_leadership(math.inf)
    assert asyncio.run(latch.await_leadership_async(math.inf))
    latch.close()
    assert DistributedAtomicLong(client, f"{path}/n").add_and_get(1, timeout=math.inf) == 1


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda c, p: DistributedAtomicLong(c, p).add(2**63), "delta"),
        (lambda c, p: DistributedAtomicLong(c, p).add_and_get(-(2**63) - 1), "delta"),
        (lambda c, p: DistributedAtomicLong(c, p).compare_and_set(0, 2**64), "new"),
        (lambda c, p: DistributedAtomicInteger(c, p).add(2**31), "delta"),
        (lambda c, p: DistributedAtomicInteger(c, p).try_set(-(2**31) - 1), "value"),
        (lambda c, p: SharedCount(c, p, 0).set_count(2**31), "count"),
        (lambda c, p: SharedCount(c, p, seed=2**40), "seed"),
        (lambda c, p: SharedCount(c, p, 0).try_set_count(VersionedValue(0, 0), -(2**31) - 1), "count"),
        (lambda c, p: VersionedValue(2**31, 0), "version"),
        (lambda c, p: c.set_data(p, b"", version=2**63), "version"),
        (lambda c, p: c.delete(p, version=-(2**70)), "version"),
        (lambda c, p: InterProcessSemaphoreV2(c, p, 2**64), "max_leases"),
        (lambda c, p: InterProcessSemaphoreV2(c, p, -1), "max_leases"),
        (lambda c, p: InterProcessSemaphoreV2(c, p, 2).acquire(2**64), "qty"),
        (lambda c, p: InterProcessSemaphoreV2(c, p, 2).acquire(-1), "qty"),
    ],
)
def test_out_of_range_ints_raise_invalid_argument_naming_the_parameter(
    client: Client, path: str, call: Callable[[Client, str], Any], name: str
) -> None:
    with pytest.raises(zkrecipes.InvalidArgumentError) as e:
        call(client, path)
    message = str(e.value)
    assert not isinstance(e.value, OverflowError)
    assert name in message and "..2**" in message, message


@pytest.mark.parametrize(
    "call",
    [
        lambda c, p: c.create(p + "/a\ud800"),
        lambda c, p: c.get_data(p + "/a\ud800"),
        lambda c, p: asyncio.run(c.exists_async("/\udfff")),
        lambda c, p: InterProcessMutex(c, p + "\ud800"),
        lambda c, p: LeaderLatch(c, p, id="me\ud800"),
        lambda c, p: SharedCount(c, "/\ud800", 0),
        lambda c, p: zkrecipes.attempt_revoke(c, "/\ud800"),
        lambda c, p: Client("127.0.0.1:2181\ud800"),
        lambda c, p: Client("127.0.0.1:2181", namespace="ns\ud800"),
        lambda c, p: Client("127.0.0.1:2181", auth=("digest\ud800", "u:p")),
        lambda c, p: Client("127.0.0.1:2181", auth=("digest", "u:p\ud800")),
    ],
)
def test_lone_surrogates_raise_invalid_argument(client: Client, path: str, call: Callable[[Client, str], Any]) -> None:
    with pytest.raises(zkrecipes.InvalidArgumentError, match="surrogate"):
        call(client, path)


def test_a_held_lock_collected_without_release_warns(client: Client, path: str) -> None:
    m = InterProcessMutex(client, path)
    assert m.acquire(timeout=10)
    with pytest.warns(ResourceWarning, match="garbage-collected while held"):
        del m
        gc.collect()
    # Its node stays until the session ends, as documented.
    assert len(client.get_children(path)) == 1
    released = InterProcessMutex(client, path + "/free")
    released.acquire(timeout=10)
    released.release()
    with warnings_as_errors():
        del released
        gc.collect()


class warnings_as_errors:
    def __enter__(self) -> None:
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error", ResourceWarning)

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)


def test_session_expiry_is_logged_as_a_warning(
    make_client: Callable[..., Client], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="zkrecipes")
    c = make_client()
    lost = threading.Event()
    c.add_state_listener(lambda s: lost.set() if s is ConnectionState.LOST else None)
    c._expire_session_for_testing()
    assert lost.wait(20)

    def warned() -> bool:
        return any(
            r.name == "zkrecipes.client.connection" and r.levelno == logging.WARNING for r in list(caplog.records)
        )

    wait_until(warned, 10, "a WARNING record from logger zkrecipes.client.connection")


def test_debug_logging_is_turned_up_through_the_zkrecipes_logger(
    make_client: Callable[..., Client], path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="zkrecipes")
    try:
        zkrecipes.set_log_level()  # running clients follow at once
        with LeaderLatch(make_client(), path) as latch:
            assert latch.await_leadership(10)
        wait_until(
            lambda: any(r.name.startswith("zkrecipes.leader") and r.levelno == logging.INFO for r in list(caplog.records)),
            10,
            "an INFO record from zkrecipes.leader...",
        )
    finally:
        logging.getLogger("zkrecipes").setLevel(logging.NOTSET)
        zkrecipes.set_log_level()


def test_an_oversized_request_fails_at_once_and_the_session_keeps_its_holds(client: Client, path: str) -> None:
    m = InterProcessMutex(client, path + "/lock")
    assert m.acquire(timeout=10)
    lost: List[int] = []
    m.on_lost(lost.append)
    started = time.monotonic()
    with pytest.raises(zkrecipes.InvalidArgumentError) as e:
        client.create("/" + "q" * 1000, b"x" * 1047552)
    assert time.monotonic() - started < 5
    assert "1048575" in str(e.value) or "bytes" in str(e.value), str(e.value)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        client.set_data(path + "/lock", b"x" * (1 << 20))
    assert m.is_held_valid() and client.state is ConnectionState.CONNECTED
    assert client.exists(path + "/lock") is not None and lost == []
    m.release()


def test_a_semaphore_acquire_beyond_max_leases_fails_at_once(client: Client, path: str) -> None:
    sem = InterProcessSemaphoreV2(client, path, max_leases=2)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="only 2"):
        sem.acquire(3)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        asyncio.run(sem.acquire_async(3))
    assert sem.participant_nodes() == []


def test_callbacks_run_on_a_library_thread_in_order(client: Client, path: str) -> None:
    # A watch and the state listeners of one client share its dispatcher thread.
    threads: List[str] = []
    got = threading.Event()
    client.create(path, create_parents=True)
    client.get_data(path, watch=lambda e: (threads.append(threading.current_thread().name), got.set()))
    client.set_data(path, b"x")
    assert got.wait(10)
    assert threads and threads[0] != threading.main_thread().name


def test_a_call_runs_once(client: Client, path: str) -> None:
    call = client._native.exists(path)
    assert call.wait() is None
    with pytest.raises(zkrecipes.InvalidArgumentError, match="once"):
        call.wait()
