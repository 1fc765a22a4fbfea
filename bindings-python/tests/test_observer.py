"""LeaderObserver: who leads a latch or selector group, without joining it."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable, List, Optional

import pytest

import zkrecipes
from zkrecipes import LeaderLatch, LeaderObserver, LeaderSelector, LeadershipContext, Participant

from conftest import ZooKeeper, children_left, wait_until

NOBODY = Participant("", False)


def wait_for_leader(observer: LeaderObserver, leader_id: str, timeout: float = 10.0) -> Participant:
    """wait_changed until the leader is ``leader_id`` (changes may coalesce), bounded."""
    deadline = time.monotonic() + timeout
    while observer.leader.id != leader_id:
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"the observed leader is {observer.leader!r}, not {leader_id!r}, after {timeout} s")
        observer.wait_changed(timeout=left)
    return observer.leader


def test_observer_follows_a_latch_group(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    watcher = make_client()
    a, b = make_client(), make_client()
    heard: List[Participant] = []
    with LeaderObserver(watcher, path) as observer:
        assert observer.path == path
        assert observer.leader == NOBODY, "nobody leads a group that does not exist yet"
        observer.add_listener(heard.append)
        latch_a = LeaderLatch(a, path, "a")
        latch_a.start()
        changed = observer.wait_changed(timeout=10)
        assert changed == Participant("a", True) and observer.leader == changed
        latch_b = LeaderLatch(b, path, "b")
        latch_b.start()
        wait_until(lambda: len(latch_b.get_participants()) == 2, what="b joined")
        assert observer.leader.id == "a", "a follower joining changes nothing"
        latch_a.close()
        assert wait_for_leader(observer, "b") == Participant("b", True)
        latch_b.close()
        assert wait_for_leader(observer, "") == NOBODY
        wait_until(lambda: [p.id for p in heard] == ["a", "b", ""], what="the listener heard a, b, nobody")
        # The observer never joined: no node of its own in the group.
        assert children_left(watcher, path) == []
    with pytest.raises(zkrecipes.ClosedError):
        observer.wait_changed(timeout=1)
    with pytest.raises(zkrecipes.ClosedError):
        observer.start()


def test_observer_sees_a_selector_and_wait_times_out(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    watcher = make_client()
    leading = threading.Event()
    release = threading.Event()

    def take_leadership(ctx: LeadershipContext) -> None:
        leading.set()
        release.wait(10)

    selector = LeaderSelector(make_client(), path, take_leadership, "sel-1")
    observer = LeaderObserver(watcher, path).start()
    try:
        assert observer.wait_changed(timeout=0.2) is None, "no change: None after the timeout"
        selector.start()
        assert leading.wait(10)
        assert wait_for_leader(observer, "sel-1") == Participant("sel-1", True)
        release.set()
        selector.close()
        assert wait_for_leader(observer, "") == NOBODY
    finally:
        release.set()
        selector.close()
        observer.close()
        observer.close()  # idempotent


def test_observer_async_api(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    watcher = make_client()
    member = make_client()

    async def main() -> None:
        async with LeaderObserver(watcher, path) as observer:
            assert await observer.wait_changed_async(timeout=0.1) is None
            latch = LeaderLatch(member, path, "async-1")
            await latch.start_async()
            got: Optional[Participant] = await observer.wait_changed_async(timeout=10)
            assert got == Participant("async-1", True)
            waiting = asyncio.ensure_future(observer.wait_changed_async())
            await latch.close_async()
            assert await asyncio.wait_for(waiting, 10) == NOBODY

    asyncio.run(main())


def test_observer_misuse(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    c = make_client()
    observer = LeaderObserver(c, path)
    with pytest.raises(zkrecipes.ClosedError, match="not started"):
        _ = observer.leader
    never_started = LeaderObserver(c, path)
    never_started.close()  # closing one that never started is fine; it stays closed
    with pytest.raises(zkrecipes.ClosedError):
        never_started.start()
    with pytest.raises(zkrecipes.InvalidArgumentError):
        LeaderObserver(c, "no-slash")
    observer.start()
    with pytest.raises(zkrecipes.InvalidArgumentError, match="already started"):
        observer.start()
    with pytest.raises(TypeError):
        observer.add_listener(42)  # type: ignore[arg-type]
    lid = observer.add_listener(lambda p: None)
    assert observer.remove_listener(lid) and not observer.remove_listener(lid)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        observer.wait_changed(timeout=-1)
    # Closing the client closes the observer's waits.
    waiter: List[BaseException] = []

    def wait() -> None:
        try:
            observer.wait_changed()
        except BaseException as e:  # noqa: BLE001 - recorded for the assertion
            waiter.append(e)

    t = threading.Thread(target=wait)
    t.start()
    c.close()
    t.join(10)
    assert not t.is_alive() and len(waiter) == 1 and isinstance(waiter[0], zkrecipes.ClosedError)


def test_an_observer_closed_while_it_starts_does_not_run(
    zk: "ZooKeeper", make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    """close() while start() waits (every request 0.4 s late through a proxy): the start ends
    with ClosedError and no observer runs in the closed object; before, the start put a live
    observer there (its listeners went on hearing changes)."""
    from zkrecipes.testing import FaultProxy

    writer = make_client()
    with FaultProxy(zk.connect) as proxy, zkrecipes.Client(proxy.connect_string, session_timeout=20).start() as slow:
        observer = LeaderObserver(slow, path)
        proxy.delay(0.4)
        outcome: List[BaseException] = []
        before = sum(slow.request_counts().values())

        def start() -> None:
            try:
                observer.start()
            except BaseException as e:  # noqa: BLE001 - the test looks at it
                outcome.append(e)

        t = threading.Thread(target=start)
        t.start()
        # Its first request is on its way (0.4 s each way): close while it waits.
        wait_until(lambda: sum(slow.request_counts().values()) > before, 10, "the start's first request")
        observer.close()
        t.join(30)
        assert not t.is_alive(), "start() never returned"
        assert outcome and isinstance(outcome[0], zkrecipes.ClosedError), outcome
        assert "while it started" in str(outcome[0]), outcome
        heard: List[Participant] = []
        with pytest.raises(zkrecipes.ClosedError):
            observer.add_listener(heard.append)
        proxy.restore()
    writer.create(f"{path}/x", b"", create_parents=True)
