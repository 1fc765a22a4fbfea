"""InterProcessMutex with cohort handoffs: the owners of one mutex object queue in memory behind
its one lock node and are handed the hold without a round trip, within a fairness bound; wide
fencing tokens (czxid << 32 | handoff) strictly increase from holder to holder. Against the real
ZooKeeper of the suite."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import threading
import time
from typing import Callable, Dict, List, Tuple

import pytest

import zkrecipes
from zkrecipes import CohortOptions, InterProcessMutex, Owner

from conftest import wait_until


class Sections:
    """Records critical sections in hold order (under a lock) and counts overlaps."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inside = 0
        self.overlaps = 0
        self.holds: List[Tuple[str, int]] = []

    def enter(self, tag: str, token: int) -> None:
        with self._lock:
            self._inside += 1
            if self._inside != 1:
                self.overlaps += 1
            self.holds.append((tag, token))

    def leave(self) -> None:
        with self._lock:
            self._inside -= 1


def run_threads(targets: List[Callable[[], None]], timeout: float = 120.0) -> List[BaseException]:
    """Runs each target in a thread; the exceptions they raised."""
    errors: List[BaseException] = []

    def guarded(f: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                f()
            except BaseException as e:  # noqa: BLE001 - collected for the assertion
                errors.append(e)

        return run

    threads = [threading.Thread(target=guarded(f)) for f in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "threads still running"
    return errors


def test_threads_share_one_node_with_increasing_wide_tokens_and_a_remote_contender_is_served(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    threads, rounds, remote_rounds = 20, 25, 5
    cohort = InterProcessMutex(make_client(), path, cohort=CohortOptions(max_handoffs=16, max_hold=0.02))
    plain = InterProcessMutex(make_client(), path)
    sections = Sections()
    start = threading.Barrier(threads + 1)
    mismatches: List[str] = []

    def local() -> None:
        start.wait()
        for _ in range(rounds):
            assert cohort.acquire(timeout=60)
            wide = cohort.fencing_token_wide
            if cohort.fencing_token != wide >> 32 or cohort.get_fencing_token_wide() != wide:
                mismatches.append(f"plain {cohort.fencing_token} vs wide {wide}")
            sections.enter("cohort", wide)
            time.sleep(0.0002)  # work inside the section, to let an overlap show
            sections.leave()
            cohort.release()

    def remote() -> None:
        start.wait()
        for _ in range(remote_rounds):
            assert plain.acquire(timeout=60)
            wide = plain.fencing_token_wide
            if wide != plain.fencing_token << 32:
                mismatches.append(f"plain mutex: wide {wide} is not czxid << 32")
            sections.enter("plain", wide)
            time.sleep(0.0002)
            sections.leave()
            plain.release()

    errors = run_threads([local] * threads + [remote])
    assert errors == []
    assert mismatches == []
    holds = sections.holds
    assert len(holds) == threads * rounds + remote_rounds
    assert sections.overlaps == 0
    tokens = [t for _, t in holds]
    assert all(a < b for a, b in zip(tokens, tokens[1:])), "wide tokens do not strictly increase in hold order"
    # The other client was served while the cohort still had work to do.
    tags = [tag for tag, _ in holds]
    last_cohort = len(tags) - 1 - tags[::-1].index("cohort")
    assert tags.index("plain") < last_cohort
    # Handoffs in memory: fewer nodes (zxids) than holds, each node's holds numbered 0, 1, 2...
    per_node: Dict[int, List[int]] = {}
    for tag, t in holds:
        if tag == "cohort":
            per_node.setdefault(t >> 32, []).append(t & 0xFFFFFFFF)
    assert len(per_node) < threads * rounds
    assert all(h == list(range(len(h))) for h in per_node.values())
    assert max(len(h) for h in per_node.values()) > 1
    assert cohort.participant_nodes() == [] and cohort.local_waiters == 0
    assert not cohort.is_acquired_in_this_process()


def test_one_node_for_the_cohort_however_many_threads_wait(client: zkrecipes.Client, path: str) -> None:
    waiting = 6
    m = InterProcessMutex(client, path, cohort=True)
    assert m.acquire()
    first = m.fencing_token_wide
    node = m.lock_node()
    tokens: List[int] = []
    tokens_lock = threading.Lock()

    def take() -> None:
        with m:
            assert m.lock_node() == node
            with tokens_lock:
                tokens.append(m.fencing_token_wide)

    threads = [threading.Thread(target=take) for _ in range(waiting)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: m.local_waiters == waiting, what=f"{waiting} owners in the local queue")
        assert m.participant_nodes() == [node]
    finally:
        m.release()
        for t in threads:
            t.join(30)
    assert not any(t.is_alive() for t in threads)
    # Nobody else waited: the node stayed, handed on in memory from owner to owner.
    assert tokens == [first + i for i in range(1, waiting + 1)]
    assert first & 0xFFFFFFFF == 0
    assert m.participant_nodes() == [] and m.local_waiters == 0


def test_a_plain_mutex_has_a_node_per_waiter(client: zkrecipes.Client, path: str) -> None:
    """The contrast of the test above: without cohort handoffs every waiting thread has a node."""
    m = InterProcessMutex(client, path)
    assert m.cohort_options is None and m.local_waiters == 0
    assert m.acquire()

    def take() -> None:
        with m:
            pass

    threads = [threading.Thread(target=take) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: len(m.participant_nodes()) == 4, what="a node per waiting thread")
        assert m.local_waiters == 0
    finally:
        m.release()
        for t in threads:
            t.join(30)
    assert not any(t.is_alive() for t in threads)


def test_timeout_in_the_local_queue_returns_false_and_leaves_no_node(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    m = InterProcessMutex(make_client(), path, cohort=True)
    holder = Owner()
    assert m.acquire(owner=holder)
    node = m.lock_node(owner=holder)
    assert m.acquire(timeout=0) is False
    got: List[Tuple[bool, float]] = []

    def wait_in_queue() -> None:
        started = time.monotonic()
        got.append((m.acquire(timeout=2.0), time.monotonic() - started))

    t = threading.Thread(target=wait_in_queue)
    t.start()
    try:
        wait_until(lambda: m.local_waiters == 1 or not t.is_alive(), what="the waiter in the local queue")
        assert m.local_waiters == 1 and m.participant_nodes() == [node]  # it waits in memory
    finally:
        t.join(30)
    assert not t.is_alive()
    assert len(got) == 1 and got[0][0] is False and 1.9 < got[0][1] < 10
    assert m.local_waiters == 0 and m.participant_nodes() == [node]
    assert not m.is_owned_by_current_thread() and m.get_fencing_token_wide() is None
    m.release(owner=holder)
    assert m.participant_nodes() == []

    # The only local waiter times out while the cohort's node waits behind another client:
    # that node goes too.
    other = InterProcessMutex(make_client(), path)
    assert other.acquire()
    assert m.acquire(timeout=0.3) is False
    wait_until(lambda: m.participant_nodes() == [other.lock_node()], what="the cohort's node to go")
    assert m.local_waiters == 0 and not m.is_acquired_in_this_process()
    other.release()
    assert m.acquire(timeout=10)
    m.release()
    assert m.participant_nodes() == []


def test_reentrancy_and_release_by_a_non_owner(client: zkrecipes.Client, path: str) -> None:
    m = InterProcessMutex(client, path, cohort=True)
    with pytest.raises(zkrecipes.NotOwnerError, match=path):
        m.release()
    with pytest.raises(zkrecipes.NotOwnerError):
        _ = m.fencing_token_wide
    assert m.acquire()
    token = m.fencing_token_wide
    assert m.acquire(timeout=0) is True  # re-entry: count 2, the same hold
    assert m.fencing_token_wide == token and m.is_held_valid()
    errors: List[BaseException] = []

    def release_elsewhere() -> None:
        try:
            m.release()
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    t = threading.Thread(target=release_elsewhere)
    t.start()
    t.join(10)
    assert len(errors) == 1 and isinstance(errors[0], zkrecipes.NotOwnerError)
    with pytest.raises(zkrecipes.NotOwnerError):
        m.release(owner=Owner())
    # A thread waiting in the local queue gets the hold only after the last release, in memory.
    got: List[int] = []

    def take() -> None:
        with m:
            got.append(m.fencing_token_wide)

    t = threading.Thread(target=take)
    t.start()
    try:
        wait_until(lambda: m.local_waiters == 1 or not t.is_alive(), what="the waiter in the local queue")
        m.release()
        assert m.is_owned_by_current_thread() and m.participant_nodes() == [m.lock_node()]
        assert m.local_waiters == 1 and got == []
        m.release()
    finally:
        t.join(30)
    assert not t.is_alive() and got == [token + 1]  # the same node, one handoff later
    assert not m.is_owned_by_current_thread() and not m.is_acquired_in_this_process()
    with pytest.raises(zkrecipes.NotOwnerError):
        m.release()
    assert m.participant_nodes() == []

    # An explicit owner acquires in one thread and releases in another.
    owner = Owner()
    t = threading.Thread(target=lambda: m.acquire(owner=owner))
    t.start()
    t.join(10)
    assert m.is_owned_by(owner) and m.get_fencing_token_wide(owner=owner) is not None
    m.release(owner=owner)
    assert m.participant_nodes() == []


def test_asyncio_tasks_take_turns_on_a_cohort_mutex(client: zkrecipes.Client, path: str) -> None:
    tasks, rounds = 10, 5
    m = InterProcessMutex(client, path, cohort=CohortOptions(max_handoffs=8, max_hold=0.5))
    tokens: List[int] = []

    async def main() -> int:
        inside = 0
        most = 0

        async def work() -> None:
            nonlocal inside, most
            for _ in range(rounds):
                async with m:
                    assert m.is_owned_by_current_thread()  # the current Task owns it
                    inside += 1
                    most = max(most, inside)
                    tokens.append(m.fencing_token_wide)
                    await asyncio.sleep(0)
                    inside -= 1

        await asyncio.gather(*(work() for _ in range(tasks)))
        return most

    assert asyncio.run(main()) == 1
    assert len(tokens) == tasks * rounds
    assert all(a < b for a, b in zip(tokens, tokens[1:]))
    assert len({t >> 32 for t in tokens}) < len(tokens)
    assert m.participant_nodes() == [] and m.local_waiters == 0


def test_cohort_options_are_checked(client: zkrecipes.Client, path: str) -> None:
    assert CohortOptions() == CohortOptions(max_handoffs=64, max_hold=0.02)
    assert "CohortOptions" in zkrecipes.__all__ and zkrecipes.CohortOptions is CohortOptions
    for bad in (0, -1, 2**32):
        with pytest.raises(zkrecipes.InvalidArgumentError, match="max_handoffs"):
            CohortOptions(max_handoffs=bad)
    for wrong in (True, 1.5, "8", None):
        with pytest.raises(TypeError, match="max_handoffs"):
            CohortOptions(max_handoffs=wrong)  # type: ignore[arg-type]
    for bad_hold in (-0.001, math.nan, math.inf):
        with pytest.raises(zkrecipes.InvalidArgumentError, match="max_hold"):
            CohortOptions(max_hold=bad_hold)
    for wrong_hold in ("0.02", None, False):
        with pytest.raises(TypeError, match="max_hold"):
            CohortOptions(max_hold=wrong_hold)  # type: ignore[arg-type]
    assert CohortOptions(max_handoffs=2**32 - 1, max_hold=0).max_handoffs == 2**32 - 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        CohortOptions().max_handoffs = 2  # type: ignore[misc]

    # One node serves every local owner: a cohort mutex is not revocable, and says so.
    with pytest.raises(zkrecipes.InvalidArgumentError, match="not revocable"):
        InterProcessMutex(client, path, cohort=True).make_revocable(lambda owner: None)

    for wrong_cohort in ("yes", 1, (8, 0.005)):
        with pytest.raises(TypeError, match="cohort"):
            InterProcessMutex(client, path, cohort=wrong_cohort)  # type: ignore[arg-type]
    # Values that got past the dataclass are checked again by the native module and the core.
    sneaky = CohortOptions()
    object.__setattr__(sneaky, "max_handoffs", 0)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="max_handoffs"):
        InterProcessMutex(client, path, cohort=sneaky)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="max_hold"):
        InterProcessMutex(client, path, cohort=CohortOptions(max_hold=1e300))

    assert InterProcessMutex(client, path, cohort=True).cohort_options == CohortOptions()
    custom = InterProcessMutex(client, path, cohort=CohortOptions(8, 0.005))
    assert custom.cohort_options == CohortOptions(max_handoffs=8, max_hold=0.005)
    assert "cohort=CohortOptions(max_handoffs=8" in repr(custom)
    for off in (None, False):
        plain = InterProcessMutex(client, path, cohort=off)
        assert plain.cohort_options is None and plain.local_waiters == 0
        assert " cohort=" not in repr(plain)
        with plain:  # without a cohort the wide token is czxid << 32
            assert plain.fencing_token_wide == plain.fencing_token << 32
