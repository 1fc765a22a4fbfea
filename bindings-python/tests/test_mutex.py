"""InterProcessMutex: owners and reentrancy, timeouts and cancellation without leaks, fencing
tokens, the lost signal, the GIL released while waiting, Ctrl-C, and fork safety."""

from __future__ import annotations

import _thread
import asyncio
import os
import signal
import sys
import threading
import time
import traceback
from typing import AsyncIterator, Callable, Iterator, List

import pytest

import zkrecipes
from zkrecipes import InterProcessMutex, Owner

from conftest import ZooKeeper, run_python, wait_until


def test_reentrant_per_thread_and_contended_by_other_threads(client: zkrecipes.Client, path: str) -> None:
    m = InterProcessMutex(client, path)
    assert m.acquire() is True
    assert m.acquire(timeout=0) is True  # re-entry: no round trip, count 2
    assert m.is_owned_by_current_thread() and m.is_acquired_in_this_process()
    other: List[bool] = []
    t = threading.Thread(target=lambda: other.append(m.acquire(timeout=0.2)))
    t.start()
    t.join()
    assert other == [False]
    m.release()
    assert m.is_owned_by_current_thread()
    m.release()
    assert not m.is_owned_by_current_thread() and not m.is_acquired_in_this_process()
    with pytest.raises(zkrecipes.NotOwnerError, match=path):
        m.release()
    assert m.participant_nodes() == []


def test_release_by_another_thread_is_rejected(client: zkrecipes.Client, path: str) -> None:
    m = InterProcessMutex(client, path)
    with m:
        errors: List[BaseException] = []

        def release_elsewhere() -> None:
            try:
                m.release()
            except BaseException as e:  # noqa: BLE001 - collected for the assertion
                errors.append(e)

        t = threading.Thread(target=release_elsewhere)
        t.start()
        t.join()
        assert len(errors) == 1 and isinstance(errors[0], zkrecipes.NotOwnerError)
        assert m.is_owned_by_current_thread()


def test_explicit_owner_acquires_in_one_thread_and_releases_in_another(
    client: zkrecipes.Client, path: str
) -> None:
    m = InterProcessMutex(client, path)
    owner = Owner()
    t = threading.Thread(target=lambda: m.acquire(owner=owner))
    t.start()
    t.join()
    assert m.is_owned_by(owner) and not m.is_owned_by_current_thread()
    assert m.acquire(timeout=0.1) is False  # this thread is another owner
    m.release(owner=owner)
    assert not m.is_acquired_in_this_process()
    assert owner != Owner() and hash(owner) == hash(owner) and owner.id > 0


def test_timed_out_acquire_returns_false_and_leaves_no_node(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    a = InterProcessMutex(make_client(), path)
    b = InterProcessMutex(make_client(), path)
    assert a.acquire()
    started = time.monotonic()
    assert b.acquire(timeout=0.3) is False
    assert 0.25 < time.monotonic() - started < 10  # the upper bound only tells a timeout from a hang
    assert len(a.participant_nodes()) == 1
    a.release()
    assert b.acquire(timeout=5) is True
    b.release()


def test_fencing_tokens_increase_from_holder_to_holder(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    a = InterProcessMutex(make_client(), path)
    b = InterProcessMutex(make_client(), path)
    with a:
        t1 = a.fencing_token
        assert a.lock_node() is not None and a.get_fencing_token() == t1
    with pytest.raises(zkrecipes.NotOwnerError):
        _ = a.fencing_token
    assert a.get_fencing_token() is None
    with b:
        t2 = b.fencing_token
    with a:
        t3 = a.fencing_token
    assert t1 < t2 < t3


def test_participant_nodes_list_holder_first_in_curators_layout(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    a = InterProcessMutex(make_client(), path)
    b = InterProcessMutex(make_client(), path)
    a.acquire()
    t = threading.Thread(target=lambda: (b.acquire(), b.release()))
    t.start()
    wait_until(lambda: len(a.participant_nodes()) == 2, what="the waiter's node")
    nodes = a.participant_nodes()
    assert nodes[0] == a.lock_node()
    for n in nodes:
        name = n.rsplit("/", 1)[1]
        assert name.startswith("_c_") and len(name) == 3 + 36 + 1 + 5 + 10 and "-lock-" in name
    a.release()
    t.join(10)
    assert not t.is_alive()


def test_hundred_asyncio_tasks_are_separate_owners(client: zkrecipes.Client, path: str) -> None:
    m = InterProcessMutex(client, path)

    async def main() -> None:
        inside = 0
        most = 0

        async def work() -> None:
            nonlocal inside, most
            async with m:
                assert m.is_owned_by_current_thread()  # the current Task owns it
                inside += 1
                most = max(most, inside)
                await asyncio.sleep(0)
                inside -= 1

        await asyncio.gather(*(work() for _ in range(100)))
        assert most == 1

    asyncio.run(main())
    assert m.participant_nodes() == []


def test_blocking_calls_resolve_the_owner_as_every_other_call(client: zkrecipes.Client, path: str) -> None:
    """The blocking acquire and release resolve ``owner=`` in the native module (one call, no
    Python lookups): the same owners as the rest of the API. A plain thread is its own owner; in
    a coroutine the current Task is (two Tasks on one thread are two owners); an Owner is
    itself; anything else is a TypeError that names what was given."""
    m = InterProcessMutex(client, path)
    assert m.acquire(timeout=10)
    assert m.is_owned_by_current_thread() and m.is_owned_by()
    tried: List[bool] = []
    other = threading.Thread(target=lambda: tried.append(m.acquire(timeout=0)))
    other.start()
    other.join(10)
    assert not other.is_alive() and tried == [False], "another thread is another owner"
    assert m.is_owned_by_current_thread()
    m.release()
    assert not m.is_owned_by_current_thread()

    async def main() -> None:
        acquired, holder_done = asyncio.Event(), asyncio.Event()

        async def holder() -> None:
            assert m.acquire(timeout=10)  # blocking, inside a coroutine: this Task owns it
            assert m.is_owned_by_current_thread()
            acquired.set()
            await holder_done.wait()
            m.release()

        task = asyncio.ensure_future(holder())
        await asyncio.wait_for(acquired.wait(), 10)
        assert not m.is_owned_by_current_thread()  # main() is another Task
        assert m.acquire(timeout=0) is False  # and so is not let in
        with pytest.raises(zkrecipes.NotOwnerError):
            m.release()
        holder_done.set()
        await task

    asyncio.run(main())
    explicit = Owner()
    assert m.acquire(timeout=10, owner=explicit)
    assert m.is_owned_by(explicit) and not m.is_owned_by_current_thread()
    with pytest.raises(TypeError, match="owner must be a zkrecipes.Owner or None, not str"):
        m.release(owner="me")
    with pytest.raises(TypeError, match="not int"):
        m.acquire(timeout=1, owner=7)
    m.release(owner=explicit)
    assert m.participant_nodes() == []


def test_cancelled_async_acquire_leaves_no_node(client: zkrecipes.Client, path: str) -> None:
    m = InterProcessMutex(client, path)
    holder = Owner()

    async def main() -> None:
        assert await m.acquire_async(owner=holder)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(m.acquire_async(), 0.3)
        deadline = time.monotonic() + 10
        while len(await m.participant_nodes_async()) != 1:
            assert time.monotonic() < deadline, "the cancelled waiter's node is still there"
            await asyncio.sleep(0.01)
        assert await m.acquire_async(timeout=0.1) is False
        await m.release_async(owner=holder)
        assert await m.acquire_async(timeout=5)
        await m.release_async()

    asyncio.run(main())
    assert m.participant_nodes() == []


def test_an_acquire_wrapped_in_another_task_is_the_callers(client: zkrecipes.Client, path: str) -> None:
    """``asyncio.wait_for`` (a new Task on Python 3.11), ``create_task`` and ``gather`` run the
    acquire's coroutine in a Task of their own: the hold is still the caller's, which releases
    it (before, the wrapper Task owned it, nobody could release it, and it stayed held for the
    session's life)."""
    m = InterProcessMutex(client, path)

    async def main() -> None:
        for wrap in (
            lambda c: asyncio.wait_for(c, 10),
            lambda c: asyncio.get_running_loop().create_task(c),
            lambda c: asyncio.gather(c),
        ):
            got = await wrap(m.acquire_async(timeout=10))
            assert got in (True, [True])
            assert m.is_owned_by(), "the caller owns it"
            await asyncio.wait_for(m.release_async(), 10)
            assert m.participant_nodes() == [], "released by the caller"
        # A coroutine made outside the loop is resolved in the Task that runs it.
        assert m.participant_nodes() == []

    asyncio.run(main())
    coro = m.acquire_async(timeout=10)

    async def run_it() -> None:
        assert await coro
        assert m.is_owned_by()
        await m.release_async()

    asyncio.run(run_it())
    assert m.participant_nodes() == []


_CANCELLED_RELEASE_CHILD = """
import asyncio, sys, threading, zkrecipes
connect, path = sys.argv[1], sys.argv[2]
client = zkrecipes.Client(connect)
client.start()
other = zkrecipes.Client(connect)
other.start()
# Another thread drives the runtime (a blocking acquire waiting on a lock someone else holds),
# so an awaited call's task is queued for it rather than run in the awaiting thread's turn.
blocker = zkrecipes.InterProcessMutex(other, path + "-blocker")
blocker.acquire(owner=zkrecipes.Owner())
waiting = zkrecipes.InterProcessMutex(client, path + "-blocker")
threading.Thread(target=lambda: waiting.acquire(timeout=30), daemon=True).start()
m = zkrecipes.InterProcessMutex(client, path)
async def main():
    for i in range(30):
        owner = zkrecipes.Owner()
        assert m.acquire(timeout=10, owner=owner)
        task = asyncio.get_running_loop().create_task(m.release_async(owner=owner))
        await asyncio.sleep(0)  # the release is awaited: its task is made
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        for _ in range(1000):
            if not m.is_owned_by(owner):
                break
            await asyncio.sleep(0.01)
        else:
            print("HELD", i, flush=True)
            return
    print("RELEASED", flush=True)
asyncio.run(main())
"""


def test_a_release_whose_awaiter_is_cancelled_still_releases(
    zk: ZooKeeper, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release is never stopped half way: cancelling the Task that awaits it only stops the
    waiting (before, a release whose task had not yet run was aborted, and the lock stayed held
    by a live session)."""
    monkeypatch.setenv("ZKR_PYTHON_LOOP_TURNS", "0")
    child = run_python(_CANCELLED_RELEASE_CHILD, zk.connect, path)
    assert child.stdout == "RELEASED\n", child.stdout + child.stderr[-2000:]


def test_a_with_block_closed_by_another_task_or_thread_releases_its_owners_hold(
    client: zkrecipes.Client, path: str
) -> None:
    """A generator abandoned inside ``async with lock`` / ``with lock`` is closed by another Task
    (the loop's async-generator finalizer) or thread: the block's exit releases the owner that
    entered it (before, it released as the closer, NotOwnerError was swallowed, and the lock
    stayed held for the session's life with nobody able to release it)."""
    m = InterProcessMutex(client, path)

    async def rows() -> "AsyncIterator[int]":
        async with m:
            for r in range(10):
                yield r

    async def main() -> None:
        async for _ in rows():
            break  # the generator is left inside the block; the loop closes it in a new Task
        deadline = time.monotonic() + 10
        while m.is_acquired_in_this_process():
            assert time.monotonic() < deadline, "the abandoned generator's hold stayed"
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert m.participant_nodes() == []

    def gen() -> "Iterator[int]":
        with m:
            yield 1

    g = gen()
    next(g)
    closer = threading.Thread(target=g.close)  # GeneratorExit in another thread: its exit
    closer.start()
    closer.join(10)
    assert not m.is_acquired_in_this_process() and m.participant_nodes() == []
    # No block entered: an exit is the caller's own release, NotOwnerError as before.
    with pytest.raises(zkrecipes.NotOwnerError):
        m.__exit__(None, None, None)


def test_lost_signal_fires_when_the_session_expires(client: zkrecipes.Client, path: str) -> None:
    m = InterProcessMutex(client, path)
    lost: List[int] = []
    m.on_lost(lost.append)
    owner = Owner()
    m.acquire(owner=owner)
    assert m.is_held_valid(owner=owner)
    client._expire_session_for_testing()
    wait_until(lambda: lost == [owner.id], what="the lost callback")
    assert not m.is_held_valid(owner=owner)
    m.release(owner=owner)  # releasing a lost hold is clean
    assert not m.is_owned_by(owner)


def test_revocation_asks_the_holder_to_release(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    c = make_client()
    m = InterProcessMutex(c, path)
    asked: List[int] = []
    m.make_revocable(asked.append)
    owner = Owner()
    m.acquire(owner=owner)
    zkrecipes.attempt_revoke(make_client(), m.participant_nodes()[0])
    wait_until(lambda: asked == [owner.id], what="the revocation request")
    m.release(owner=owner)


def _spin(seconds: float) -> int:
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1
    return n


def test_a_thread_blocked_in_acquire_releases_the_gil(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    m = InterProcessMutex(make_client(), path)
    holder = Owner()
    m.acquire(owner=holder)
    baseline = _spin(0.3)
    result: List[bool] = []
    t = threading.Thread(target=lambda: result.append(m.acquire(timeout=5)))
    t.start()
    wait_until(lambda: len(m.participant_nodes()) == 2, what="the second thread to wait in acquire()")
    progress = _spin(0.3)  # while the other thread is blocked inside acquire()
    assert t.is_alive(), "the blocked acquire should still be waiting"
    m.release(owner=holder)
    t.join(10)
    assert result == [True]
    # Were the GIL held by the waiting thread, this loop would not run at all.
    assert progress > 0.3 * baseline, f"only {progress} iterations vs {baseline} alone"


def test_the_main_thread_blocked_in_acquire_releases_the_gil(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    assert threading.current_thread() is threading.main_thread()
    m = InterProcessMutex(make_client(), path)
    holder = Owner()
    m.acquire(owner=holder)
    counts: List[int] = []
    t = threading.Thread(target=lambda: counts.append(_spin(0.3)))  # the main thread idles in join()
    t.start()
    t.join()

    def measure() -> None:
        wait_until(lambda: len(m.participant_nodes()) == 2, what="the main thread to wait in acquire()")
        counts.append(_spin(0.3))  # the main thread is blocked inside acquire()
        m.release(owner=holder)

    t = threading.Thread(target=measure)
    t.start()
    assert m.acquire(timeout=10) is True  # granted when the measuring thread releases
    t.join()
    m.release()
    baseline, progress = counts
    assert progress > 0.3 * baseline, f"only {progress} iterations vs {baseline} alone"


@pytest.mark.parametrize("how", ["interrupt_main", "pthread_kill"])
def test_ctrl_c_interrupts_a_blocking_acquire_within_100ms_and_leaves_no_node(
    make_client: Callable[..., zkrecipes.Client], path: str, how: str
) -> None:
    assert threading.current_thread() is threading.main_thread()
    # Ctrl-C as an interactive process gets it: Python's own handler. A process started in the
    # background by a non-interactive shell (`cmd &`, as CI jobs may be) inherits SIGINT ignored,
    # and then neither interrupt_main nor the signal would reach the wait (seen in a CI run).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_interrupts_a_blocking_acquire(make_client, path, how)
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_interrupts_a_blocking_acquire(
    make_client: Callable[..., zkrecipes.Client], path: str, how: str
) -> None:
    m = InterProcessMutex(make_client(), path)
    holder = Owner()
    m.acquire(owner=holder)
    fired: List[float] = []

    def ctrl_c() -> None:
        wait_until(lambda: len(m.participant_nodes()) == 2, what="the main thread to wait in acquire()")
        fired.append(time.monotonic())
        if how == "interrupt_main":
            _thread.interrupt_main()
        else:
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    t = threading.Thread(target=ctrl_c)
    t.start()
    with pytest.raises(KeyboardInterrupt):
        m.acquire(timeout=20)
    interrupted = time.monotonic()
    t.join()
    # Well under the 20 s timeout, with room for a stalled machine.
    assert interrupted - fired[0] < 2, f"took {interrupted - fired[0]:.3f} s"
    assert not m.is_owned_by_current_thread()
    wait_until(lambda: m.participant_nodes() == [m.lock_node(owner=holder)], what="the abandoned node to go")
    m.release(owner=holder)
    assert m.acquire(timeout=5)
    m.release()


def _wait_child(pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"forked child {pid} hung")
        time.sleep(0.01)


def _in_child(body: Callable[[], None]) -> int:
    """Runs ``body`` in a forked child; returns its exit code (0: body returned)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            body()
            code = 0
        except BaseException:  # noqa: BLE001 - report, then exit with a code
            traceback.print_exc()
        finally:
            os._exit(code)
    return _wait_child(pid, 60)


def test_ctrl_c_interrupts_a_blocking_acquire_in_a_forked_child(zk: ZooKeeper, client: zkrecipes.Client, path: str) -> None:
    """The main thread keeps its Ctrl-C timer between calls; a child must not inherit the
    parent's (it belongs to the parent's runtime, which no thread drives in the child)."""
    m = InterProcessMutex(client, path)
    for _ in range(3):  # the parent's main thread waits, and keeps its timer
        with m:
            pass

    def child() -> None:
        made: List[zkrecipes.Client] = []

        def make_client() -> zkrecipes.Client:
            made.append(zkrecipes.Client(zk.connect, connection_timeout=5).start())
            return made[-1]

        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            _ctrl_c_interrupts_a_blocking_acquire(make_client, path, "pthread_kill")
        finally:
            for c in made:
                c.close()

    assert _in_child(child) == 0


def test_after_fork_the_parents_client_is_refused_in_the_child(client: zkrecipes.Client, path: str) -> None:
    m = InterProcessMutex(client, path)
    with m:  # the parent's runtime, session and watches are in use
        pass

    def child() -> None:
        with pytest.raises(zkrecipes.ClosedError, match="fork"):
            client.exists("/")
        with pytest.raises(zkrecipes.ClosedError, match="fork"):
            m.acquire(timeout=1)

    assert _in_child(child) == 0
    with m:  # the parent still works
        assert m.is_owned_by_current_thread()


def test_fork_gives_the_child_a_working_fresh_runtime(zk: ZooKeeper, client: zkrecipes.Client, path: str) -> None:
    m = InterProcessMutex(client, path)
    with m:  # the parent's runtime, session and watches are in use
        pass

    def child() -> None:
        c = zkrecipes.Client(zk.connect, connection_timeout=5).start()
        try:
            with InterProcessMutex(c, path):
                c.create(path + "/from-child")
        finally:
            c.close()

    assert _in_child(child) == 0
    assert client.exists(path + "/from-child") is not None
