"""Bad inputs raise the right classes; the exception hierarchy follows API.md."""

from __future__ import annotations

import asyncio
import builtins
import math
from typing import Any, Callable, List, Type

import pytest

import zkrecipes
from zkrecipes import (
    Client,
    DistributedAtomicLong,
    InterProcessMutex,
    InterProcessSemaphoreV2,
    LeaderLatch,
    Owner,
    SharedCount,
)
from zkrecipes.errors import BY_CODE

from conftest import ZooKeeper


def test_every_exception_derives_from_zkrecipes_error_with_a_unique_code() -> None:
    # One class per kind of the core's vocabulary (19 kinds since NoWatcher), none twice.
    assert sorted(BY_CODE) == sorted(code for code, _ in zkrecipes._native.ERROR_KINDS)
    assert len(BY_CODE) == 19
    for code, cls in BY_CODE.items():
        assert issubclass(cls, zkrecipes.ZkRecipesError) and cls.code == code
    assert issubclass(zkrecipes.InvalidArgumentError, ValueError)
    assert issubclass(zkrecipes.TimeoutError, builtins.TimeoutError)
    assert issubclass(zkrecipes.OverflowError, builtins.OverflowError)
    assert zkrecipes.TimeoutError is not builtins.TimeoutError


def test_the_class_table_is_the_only_list_of_errors() -> None:
    # Each class of zkrecipes.errors is the package's, under its own name, and in __all__ unless
    # it is named like a builtin it subclasses (zkrecipes.TimeoutError, zkrecipes.OverflowError).
    assert not hasattr(zkrecipes.errors, "__all__")
    assert "ZkRecipesError" in zkrecipes.__all__ and not hasattr(zkrecipes, "BY_CODE")
    for cls in BY_CODE.values():
        assert getattr(zkrecipes, cls.__name__) is cls
        assert (cls.__name__ in zkrecipes.__all__) is not hasattr(builtins, cls.__name__)
    star: dict = {}
    exec("from zkrecipes import *", star)
    assert "NoNodeError" in star and "TimeoutError" not in star


@pytest.mark.parametrize(
    "bad", ["", "relative", "/trailing/", "/double//slash", "/dot/./x", "/nul\0", "/\ufff5"]
)
def test_bad_paths_raise_invalid_argument(client: Client, bad: str) -> None:
    for make in (
        lambda: client.get_data(bad),
        lambda: client.create(bad),
        lambda: InterProcessMutex(client, bad),
        lambda: DistributedAtomicLong(client, bad).get(),
        lambda: LeaderLatch(client, bad),
        lambda: SharedCount(client, bad, 0),
    ):
        with pytest.raises(zkrecipes.InvalidArgumentError) as e:
            make()
        assert isinstance(e.value, ValueError) and "INVALID_ARGUMENT" in str(e.value)


@pytest.mark.parametrize("timeout", [-1, -0.001, math.nan, -math.inf, -(10**400)])
def test_bad_timeouts_raise_invalid_argument(client: Client, path: str, timeout: float) -> None:
    m = InterProcessMutex(client, path)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="timeout"):
        m.acquire(timeout=timeout)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="timeout"):
        LeaderLatch(client, path + "/latch").await_leadership(timeout)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="timeout"):
        DistributedAtomicLong(client, path + "/n").add_and_get(1, timeout=timeout)
    assert m.participant_nodes() == []


@pytest.mark.parametrize(
    "call",
    [
        lambda c, p: InterProcessMutex(c, 42),
        lambda c, p: InterProcessMutex("not a client", p),
        lambda c, p: InterProcessMutex(c, p).acquire(timeout="1"),
        lambda c, p: InterProcessMutex(c, p).acquire(owner="me"),
        lambda c, p: c.create(p, "text is not bytes"),
        lambda c, p: c.set_data(p, b"", version="1"),
        lambda c, p: DistributedAtomicLong(c, p).add("1"),
        lambda c, p: DistributedAtomicLong(c, p).add(True),
        lambda c, p: LeaderLatch(c, p, id=7),
        lambda c, p: InterProcessSemaphoreV2(c, p, "2"),
        lambda c, p: Client(1234),
        lambda c, p: Client("h:1", session_timeout="60"),
        lambda c, p: Client("h:1", retry=3),
    ],
)
def test_wrong_types_raise_type_error(client: Client, path: str, call: Callable[[Client, str], Any]) -> None:
    with pytest.raises(TypeError):
        call(client, path)


@pytest.mark.parametrize(
    "options",
    [
        dict(hosts=""),
        dict(hosts="host:99999"),
        dict(hosts="host:1/bad/"),
        dict(hosts="h:1", session_timeout=-1.0),
        dict(hosts="h:1", session_timeout=0.0),
        dict(hosts="h:1", connection_timeout=math.nan),
        dict(hosts="h:1", namespace="bad//ns"),
        dict(hosts="h:1", auth=("", "x")),
    ],
)
def test_bad_client_options_raise_invalid_argument(options: Any) -> None:
    hosts = options.pop("hosts")
    with pytest.raises(zkrecipes.InvalidArgumentError):
        Client(hosts, **options).start()


def test_bad_retry_policies_raise_invalid_argument() -> None:
    for make in (
        lambda: zkrecipes.ExponentialBackoffRetry(-1.0, 3),
        lambda: zkrecipes.RetryNTimes(-1, 0.1),
        lambda: zkrecipes.RetryForever(math.inf),
    ):
        with pytest.raises(zkrecipes.InvalidArgumentError):
            make()
    with pytest.raises(zkrecipes.InvalidArgumentError, match="29"):
        Client("h:1", retry=zkrecipes.ExponentialBackoffRetry(0.1, 30))
    with pytest.raises(zkrecipes.InvalidArgumentError):
        Client("h:1", retry=zkrecipes.BoundedExponentialBackoffRetry(1.0, 0.5, 3))


def test_release_without_a_hold_raises_not_owner(client: Client, path: str) -> None:
    m = InterProcessMutex(client, path)
    with pytest.raises(zkrecipes.NotOwnerError, match=path):
        m.release()
    with pytest.raises(zkrecipes.NotOwnerError):
        m.release(owner=Owner())
    with pytest.raises(zkrecipes.NotOwnerError):
        asyncio.run(m.release_async())
    with pytest.raises(zkrecipes.NotOwnerError):
        _ = m.fencing_token


def test_closed_client_raises_closed_error_everywhere(zk: ZooKeeper, path: str) -> None:
    c = Client(zk.connect).start()
    m = InterProcessMutex(c, path)
    counter = DistributedAtomicLong(c, path + "/n")
    latch = LeaderLatch(c, path + "/latch")
    c.close()
    calls: List[Callable[[], object]] = [
        lambda: c.create(path),
        lambda: c.get_children("/"),
        lambda: m.acquire(),
        lambda: m.acquire(timeout=1),
        lambda: asyncio.run(m.acquire_async()),
        lambda: m.participant_nodes(),
        lambda: counter.add_and_get(1),
        lambda: latch.start(),
        lambda: InterProcessMutex(c, path),
        lambda: c.start(),
    ]
    for call in calls:
        with pytest.raises(zkrecipes.ClosedError):
            call()


def test_messages_name_the_path_and_the_server_code(client: Client, path: str) -> None:
    with pytest.raises(zkrecipes.NoNodeError) as e:
        client.set_data(path, b"x")
    text = str(e.value)
    assert path in text and "NO_NODE" in text and "-101" in text
    classes: List[Type[zkrecipes.ZkRecipesError]] = [type(e.value)]
    assert classes == [zkrecipes.NoNodeError]
