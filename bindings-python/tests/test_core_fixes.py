"""What the core fixed for issue 15, seen through Python: counter overflow is refused with
zkrecipes.OverflowError, and a waiter queued on a client whose session is expired gets the
lock on the new session (Curator's testKilledSession). ``ZKR_LONG=1`` runs the long variants
(20 rounds for the mutex, 30 for the semaphore mutex)."""

from __future__ import annotations

import builtins
import os
import threading
from typing import Callable, List, Union

import pytest

import zkrecipes
from zkrecipes import (
    Client,
    DistributedAtomicInteger,
    DistributedAtomicLong,
    InterProcessMutex,
    InterProcessSemaphoreMutex,
    Owner,
)

from conftest import wait_until

LONG = os.environ.get("ZKR_LONG") == "1"


@pytest.mark.parametrize("kind, top", [(DistributedAtomicLong, 2**63 - 1), (DistributedAtomicInteger, 2**31 - 1)])
def test_a_counter_overflow_is_refused_and_leaves_the_counter_unchanged(
    client: Client, path: str, kind: Callable[[Client, str], DistributedAtomicLong], top: int
) -> None:
    counter = kind(client, path)
    counter.force_set(top)
    for overflow in (lambda: counter.add(1), lambda: counter.increment(), lambda: counter.add_and_get(1)):
        with pytest.raises(zkrecipes.OverflowError) as e:
            overflow()
        assert isinstance(e.value, builtins.OverflowError) and isinstance(e.value, zkrecipes.ZkRecipesError)
        assert e.value.code == "OVERFLOW" and e.value.status == 401
    assert counter.get().pre_value == top
    counter.force_set(-top - 1)
    with pytest.raises(zkrecipes.OverflowError):
        counter.decrement()
    assert counter.get().pre_value == -top - 1


@pytest.mark.parametrize("kind, long_rounds", [("mutex", 20), ("semaphore mutex", 30)])
def test_a_queued_waiter_gets_the_lock_after_its_session_is_killed(
    make_client: Callable[..., Client], path: str, kind: str, long_rounds: int
) -> None:
    for round in range(long_rounds if LONG else 3):
        c = make_client()
        lock: Union[InterProcessMutex, InterProcessSemaphoreMutex]
        if kind == "mutex":
            lock = InterProcessMutex(c, f"{path}/{round}")
        else:
            lock = InterProcessSemaphoreMutex(c, f"{path}/{round}")
        a, b = Owner(), Owner()
        assert lock.acquire(timeout=10, owner=a)
        outcome: List[object] = []

        def waiter() -> None:
            # Short polls, so that a request of B's is in flight when the session goes.
            try:
                while not lock.acquire(timeout=0.03, owner=b):
                    pass
                outcome.append(True)
            except BaseException as e:  # noqa: BLE001 - reported by the assertion below
                outcome.append(e)

        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        wait_until(lambda: len(lock.participant_nodes()) == 2, 20, f"round {round}: B queued behind A")
        c._expire_session_for_testing()
        t.join(30)
        assert outcome == [True], f"round {round}: B must get the lock on the new session, got {outcome}"
        if isinstance(lock, InterProcessMutex):
            assert lock.is_held_valid(owner=b) and not lock.is_held_valid(owner=a), f"round {round}"
        lock.release(owner=b)
        c.close()


def test_a_shared_count_overwritten_with_garbage_reports_corrupted_data(
    make_client: Callable[..., Client], path: str
) -> None:
    c = make_client()
    errors: List[BaseException] = []
    counts: List[int] = []
    got_error = threading.Event()
    with zkrecipes.SharedCount(c, path, 7) as count:
        count.add_listener(counts.append, error=lambda e: (errors.append(e), got_error.set()))
        make_client().set_data(path, b"not a count")
        assert got_error.wait(10)
        assert isinstance(errors[0], zkrecipes.CorruptedDataError) and path in str(errors[0])
        with pytest.raises(zkrecipes.CorruptedDataError):
            count.get_count()
        c.set_data(path, (5).to_bytes(4, "big"))  # a valid count again
        wait_until(lambda: 5 in counts, 10, "the valid count heard again")
        assert count.get_count() == 5


def test_a_lock_node_deleted_by_another_client_is_a_lost_hold(
    make_client: Callable[..., Client], path: str
) -> None:
    c = make_client()
    m = InterProcessMutex(c, path)
    lost: List[int] = []
    m.on_lost(lost.append)
    assert m.acquire(timeout=10)
    node = m.lock_node()
    assert node is not None and m.is_held_valid()
    make_client().delete(node)
    wait_until(lambda: not m.is_held_valid(), 10, "the hold reported invalid")
    wait_until(lambda: len(lost) == 1, 10, "the lost signal")
    assert lost == [zkrecipes._owners.current_owner_id()]
