"""The rest of the lock family: semaphore mutex, read/write lock, semaphore, multi lock."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Callable, List, Optional

import pytest

import zkrecipes
from zkrecipes import (
    InterProcessMultiLock,
    InterProcessMutex,
    InterProcessReadWriteLock,
    InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
    Owner,
)

from conftest import ZooKeeper, wait_until


def test_semaphore_mutex_is_not_reentrant_and_any_thread_may_release(client: zkrecipes.Client, path: str) -> None:
    m = InterProcessSemaphoreMutex(client, path)
    assert m.acquire(timeout=5)
    assert m.acquire(timeout=0.2) is False  # not reentrant, even for the same thread
    assert m.is_acquired_in_this_process() and m.lease_node is not None
    t = threading.Thread(target=m.release)  # not owned
    t.start()
    t.join()
    assert not m.is_acquired_in_this_process()
    with m:
        assert "-lease-" in m.participant_nodes()[0]
    assert m.participant_nodes() == []


def test_read_write_lock_shares_reads_and_excludes_writes(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    a = InterProcessReadWriteLock(make_client(), path)
    b = InterProcessReadWriteLock(make_client(), path)
    with a.read_lock():
        assert b.read_lock().acquire(timeout=5)  # readers share
        assert b.write_lock().acquire(timeout=0.2) is False
        b.read_lock().release()
    with a.write_lock():
        assert "__WRIT__" in a.write_lock().participant_nodes()[0]
        assert b.read_lock().acquire(timeout=0.2) is False
        with a.read_lock():  # the writer may read too (downgrade path)
            pass
    assert b.write_lock().acquire(timeout=5)
    b.write_lock().release()


def test_semaphore_hands_out_at_most_max_leases(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    s1 = InterProcessSemaphoreV2(make_client(), path, 2)
    s2 = InterProcessSemaphoreV2(make_client(), path, 2)
    leases = s1.acquire(2, timeout=5)
    assert leases is not None and len(leases) == 2
    assert s2.acquire(1, timeout=0.3) is None
    assert len(s1.participant_nodes()) == 2
    s1.return_lease(leases[0])
    assert leases[0].returned
    more = s2.acquire(1, timeout=5)
    assert more is not None
    with more[0] as lease:
        assert lease.czxid > leases[1].czxid and lease.data() == b""
    s1.return_all(leases)
    assert s1.participant_nodes() == []


def test_semaphore_async_acquire(client: zkrecipes.Client, path: str) -> None:
    s = InterProcessSemaphoreV2(client, path, 1)

    async def main() -> None:
        leases = await s.acquire_async(1, timeout=5)
        assert leases is not None
        assert await s.acquire_async(1, timeout=0.2) is None
        leases[0].release()

    asyncio.run(main())
    assert s.participant_nodes() == []


def test_multi_lock_takes_all_or_none(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    c1, c2 = make_client(), make_client()
    multi = InterProcessMultiLock(c1, [path + "/a", path + "/b"])
    blocker = InterProcessMutex(c2, path + "/b")
    assert blocker.acquire()
    assert multi.acquire(timeout=0.3) is False
    assert not multi.is_acquired_in_this_process()
    assert InterProcessMutex(c2, path + "/a").participant_nodes() == []  # nothing kept
    blocker.release()
    owner = Owner()
    with multi:
        assert multi.is_acquired_in_this_process()
    assert multi.acquire(owner=owner)
    multi.release(owner=owner)


def test_multi_lock_over_lock_objects(client: zkrecipes.Client, path: str) -> None:
    m = InterProcessMutex(client, path + "/m")
    s = InterProcessSemaphoreMutex(client, path + "/s")
    multi = InterProcessMultiLock(client, [m, s])

    async def main() -> None:
        async with multi:
            assert m.is_owned_by_current_thread() and s.is_acquired_in_this_process()

    asyncio.run(main())
    assert not m.is_acquired_in_this_process() and not s.is_acquired_in_this_process()
    with pytest.raises(TypeError):
        InterProcessMultiLock(client, [42])  # type: ignore[list-item]


def test_cancelled_semaphore_mutex_acquire_leaves_no_lease(client: zkrecipes.Client, path: str) -> None:
    holder = InterProcessSemaphoreMutex(client, path)
    waiter = InterProcessSemaphoreMutex(client, path)
    assert holder.acquire(timeout=5)

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(waiter.acquire_async(), 0.3)

    asyncio.run(main())
    wait_until(lambda: len(holder.participant_nodes()) == 1, what="the cancelled lease to go")
    holder.release()
    leases: List[str] = waiter.participant_nodes()
    assert leases == []


def test_lease_data_while_another_thread_returns_the_lease_does_not_deadlock(zk: ZooKeeper, path: str) -> None:
    # Lease.data() used to hold the lease's lock while it waited (GIL released); a release()
    # from another thread then blocked on that lock holding the GIL, and neither could go on.
    # Run in a subprocess so that a deadlock fails this test instead of hanging the suite.
    script = Path(__file__).with_name("_lease_race.py")
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, str(script), zk.connect, f"{path}/{uuid.uuid4().hex[:6]}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def _one_lease(client: zkrecipes.Client, path: str) -> zkrecipes.Lease:
    leases = InterProcessSemaphoreV2(client, path, 1).acquire(1, timeout=5)
    assert leases is not None and len(leases) == 1
    return leases[0]


def test_lease_wait_lost_does_not_answer_while_the_lease_is_good_nor_when_it_is_returned(
    client: zkrecipes.Client, path: str
) -> None:
    lease = _one_lease(client, path)
    assert lease.wait_lost(timeout=0) is None
    assert lease.wait_lost(timeout=0.3) is None
    assert lease.wait_lost(timeout=0.3, lost_policy="SESSION") is None
    assert lease.wait_lost(timeout=0.3, lost_policy=zkrecipes.LockLostPolicy.SESSION) is None

    async def main() -> None:
        waiting = asyncio.ensure_future(lease.wait_lost_async())
        done, _ = await asyncio.wait({waiting}, timeout=0.3)
        assert not done, "a good lease is not lost"
        await asyncio.to_thread(lease.release)
        done, _ = await asyncio.wait({waiting}, timeout=0.3)
        assert not done, "returning the lease does not end a wait for its loss"
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(main())
    assert lease.returned
    # A lease already returned can no longer be lost: a wait is refused, as data() is.
    with pytest.raises(zkrecipes.ClosedError, match="was returned"):
        lease.wait_lost(timeout=0)
    with pytest.raises(zkrecipes.ClosedError, match="was returned"):
        lease.wait_lost_async()


def test_lease_wait_lost_answers_when_the_session_expires(client: zkrecipes.Client, path: str) -> None:
    lease = _one_lease(client, path)
    got: List[Optional[zkrecipes.LeaseLost]] = []
    waiter = threading.Thread(target=lambda: got.append(lease.wait_lost(timeout=60, lost_policy="SESSION")))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive(), "no answer before the expiry"

    async def standard() -> Optional[zkrecipes.LeaseLost]:
        waiting = asyncio.ensure_future(lease.wait_lost_async(timeout=60))
        done, _ = await asyncio.wait({waiting}, timeout=0.2)
        assert not done
        await asyncio.to_thread(client._expire_session_for_testing)
        return await waiting

    why = asyncio.run(standard())
    # STANDARD: SUSPENDED (the connection dropped), LOST, or already a new session.
    assert why is not None and why.reason in ("STATE", "SESSION_CHANGED"), why
    if why.reason == "STATE":
        assert why.state in ("SUSPENDED", "LOST") and why.state == zkrecipes.ConnectionState(why.state)
    else:
        assert why.state is None
    waiter.join(60)
    assert not waiter.is_alive()
    lost = got[0]
    # SESSION: only the session's loss counts (LOST, or the new session seen first).
    assert lost is not None and (lost.reason, lost.state) in (("STATE", "LOST"), ("SESSION_CHANGED", None)), lost
    assert lost.reason == zkrecipes.LeaseLostReason(lost.reason)
    assert str(lost) == lost.message and lost.message in (
        "the ZooKeeper session was lost",
        "the ZooKeeper session changed (the lease went with the old one)",
    )
    # Once the client runs on a new session, a new wait answers at once.
    wait_until(lambda: client.state in (zkrecipes.ConnectionState.CONNECTED, zkrecipes.ConnectionState.RECONNECTED))
    again = lease.wait_lost(timeout=0)
    assert again is not None and again.reason == "SESSION_CHANGED", again
    lease.release()  # returning a lost lease is clean


def test_lease_wait_lost_answers_closed_when_the_client_closes(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    c = make_client()
    lease = _one_lease(c, path)
    got: List[Optional[zkrecipes.LeaseLost]] = []
    waiter = threading.Thread(target=lambda: got.append(lease.wait_lost()))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()

    async def closing() -> Optional[zkrecipes.LeaseLost]:
        waiting = asyncio.ensure_future(lease.wait_lost_async(lost_policy="SESSION"))
        done, _ = await asyncio.wait({waiting}, timeout=0.2)
        assert not done
        await asyncio.to_thread(c.close)
        return await asyncio.wait_for(waiting, 30)

    why = asyncio.run(closing())
    waiter.join(30)
    assert not waiter.is_alive()
    for lost in (why, got[0]):
        assert lost is not None and lost.reason == zkrecipes.LeaseLostReason.CLOSED and lost.state is None
        assert str(lost) == "the client was closed" and repr(lost) == "LeaseLost(reason='CLOSED')"
    assert why == got[0]
    # After the close a wait answers at once, even with no time to wait.
    now = lease.wait_lost(timeout=0)
    assert now is not None and now.reason == "CLOSED"


def test_lease_wait_lost_refuses_bad_arguments(client: zkrecipes.Client, path: str) -> None:
    lease = _one_lease(client, path)
    with pytest.raises(zkrecipes.InvalidArgumentError, match="lost_policy must be STANDARD or SESSION"):
        lease.wait_lost(timeout=0, lost_policy="standard")
    with pytest.raises(zkrecipes.InvalidArgumentError, match="lost_policy must be STANDARD or SESSION"):
        lease.wait_lost_async(lost_policy="NEVER")
    with pytest.raises(zkrecipes.InvalidArgumentError):
        lease.wait_lost(timeout=-1)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        lease.wait_lost_async(timeout=float("nan"))
    with pytest.raises(TypeError, match="must be a str"):
        lease.wait_lost(lost_policy=1)  # type: ignore[arg-type]
    assert lease.wait_lost(timeout=0) is None  # the lease is untouched
    lease.release()
