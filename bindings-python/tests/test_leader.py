"""LeaderLatch and LeaderSelector."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from typing import Callable, List

import pytest

import zkrecipes
from zkrecipes import CancelReason, LatchState, LeaderLatch, LeaderSelector, LeadershipContext, Participant

from conftest import ZooKeeper, run_python, wait_until


def test_ten_latch_clients_take_turns(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    leaders: "queue.Queue[str]" = queue.Queue()
    latches: List[LeaderLatch] = []
    for i in range(10):
        latch = LeaderLatch(make_client(), path, f"p{i}")
        latch.add_listener(is_leader=lambda name=f"p{i}": leaders.put(name))
        latch.start()
        latches.append(latch)
    by_id = {latch.id: latch for latch in latches}
    order: List[str] = []
    for _ in range(10):
        leader = leaders.get(timeout=30)
        assert sum(1 for latch in latches if latch.has_leadership()) == 1
        assert by_id[leader].get_leader() == Participant(leader, True)
        order.append(leader)
        by_id[leader].close()
        assert by_id[leader].state is LatchState.CLOSED
    assert sorted(order) == sorted(by_id) and order == [f"p{i}" for i in range(10)]


def test_latch_hands_over_when_the_leaders_session_expires(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    first_client = make_client()
    first = LeaderLatch(first_client, path, "first")
    second = LeaderLatch(make_client(), path, "second")
    events: List[str] = []
    first.add_listener(is_leader=lambda: events.append("is"), not_leader=lambda: events.append("not"))
    with first, second:
        assert first.await_leadership(10)
        epoch1 = first.leadership_epoch
        assert not second.await_leadership(0.2)
        assert [p.id for p in second.get_participants()] == ["first", "second"]
        first_client._expire_session_for_testing()
        assert second.await_leadership(15)
        epoch2 = second.leadership_epoch
        assert epoch1 is not None and epoch2 is not None and epoch2 > epoch1
        wait_until(lambda: events[:2] == ["is", "not"], what="first to hear not_leader")


def test_latch_async_api(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    client = make_client()

    async def main() -> None:
        async with LeaderLatch(client, path, "a") as latch:
            assert await latch.await_leadership_async(10)
            assert (await latch.get_leader_async()).id == "a"
            assert [p.id for p in await latch.get_participants_async()] == ["a"]
            assert latch.our_path is not None and latch.our_path.startswith(path + "/_c_")
        assert latch.state is LatchState.CLOSED

    asyncio.run(main())


def test_await_leadership_of_an_unstarted_latch(client: zkrecipes.Client, path: str) -> None:
    latch = LeaderLatch(client, path, "x")
    assert latch.await_leadership(0.1) is False
    with pytest.raises(zkrecipes.ClosedError):
        latch.await_leadership()


def test_selector_with_auto_requeue_takes_turns(make_client: Callable[..., zkrecipes.Client], path: str) -> None:
    terms: "queue.Queue[tuple[str, int, int]]" = queue.Queue()

    def take(ctx: LeadershipContext) -> None:
        assert ctx.fencing_token is not None
        terms.put((ctx.id, ctx.term, ctx.fencing_token))
        ctx.cancelled.wait(0.05)  # lead a moment, then give up

    selectors = [LeaderSelector(make_client(), path, take, f"s{i}") for i in range(3)]
    for s in selectors:
        s.auto_requeue()
        s.start()
    seen = [terms.get(timeout=30) for _ in range(9)]
    for s in selectors:
        s.close()
    tokens = [t for _, _, t in seen]
    assert tokens == sorted(tokens) and len(set(tokens)) == 9  # one leader at a time, fenced
    for i in range(3):
        mine = [term for sid, term, _ in seen if sid == f"s{i}"]
        assert len(mine) >= 2 and mine == sorted(mine)  # requeued and led again
    assert all(s.leadership_count >= 2 for s in selectors)


def test_selector_cancels_on_interrupt_and_closes(client: zkrecipes.Client, path: str) -> None:
    started = threading.Event()
    reasons: List[CancelReason] = []

    def take(ctx: LeadershipContext) -> None:
        started.set()
        assert ctx.cancelled.wait(10)
        assert ctx.cancel_reason is not None
        reasons.append(ctx.cancel_reason)

    selector = LeaderSelector(client, path, take, "me")
    with selector:
        assert started.wait(10)
        assert selector.has_leadership() and selector.get_leader().id == "me"
        selector.interrupt_leadership()
        wait_until(lambda: reasons == [CancelReason.INTERRUPTED], what="the interrupted leadership to end")
        # requeue() is False while the ended leadership still holds the mutex, True once queued.
        wait_until(selector.requeue, what="requeue() to queue again")
        wait_until(lambda: selector.leadership_count == 2, what="the second leadership")
    assert reasons == [CancelReason.INTERRUPTED, CancelReason.CLOSED]
    assert selector.get_participants() == []


def test_async_take_leadership_runs_on_the_callers_loop(client: zkrecipes.Client, path: str) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        led = asyncio.Event()
        cancelled = asyncio.Event()

        async def take(ctx: LeadershipContext) -> None:
            assert asyncio.get_running_loop() is loop
            led.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        async with LeaderSelector(client, path, take, "async") as selector:
            await asyncio.wait_for(led.wait(), 10)
            assert selector.has_leadership()
        await asyncio.wait_for(cancelled.wait(), 10)

    asyncio.run(main())


def test_an_async_term_gives_leadership_up_only_once_its_coroutine_has_finished(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    """The cancelled coroutine's cleanup (it awaits after the CancelledError) still runs as the
    leader: the next participant leads only after it (before, the lock node went at the
    cancellation, and another process led while the cleanup ran: two leaders)."""
    cleaned = threading.Event()
    seen_by_b: List[bool] = []

    def take_b(ctx: LeadershipContext) -> None:
        seen_by_b.append(cleaned.is_set())

    async def main() -> None:
        led = asyncio.Event()

        async def take_a(ctx: LeadershipContext) -> None:
            led.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                await asyncio.sleep(0.5)  # cleanup, still leading
                cleaned.set()
                raise

        a = LeaderSelector(make_client(), path, take_a, "a")
        a.start()
        await asyncio.wait_for(led.wait(), 10)
        with LeaderSelector(make_client(), path, take_b, "b"):
            a.interrupt_leadership()
            deadline = time.monotonic() + 20
            while not seen_by_b:
                assert time.monotonic() < deadline, "b never led"
                await asyncio.sleep(0.01)
        assert seen_by_b == [True], "b led while a's cleanup still ran"
        await a.close_async()

    asyncio.run(main())


def test_an_async_selector_whose_loop_is_gone_leaves_the_election(client: zkrecipes.Client, path: str) -> None:
    """Its loop closed without close(): no term can run, so it leaves rather than lead and
    requeue in a busy loop (before: each term raised at once and requeued)."""
    terms: List[int] = []

    async def take(ctx: LeadershipContext) -> None:
        terms.append(ctx.term)
        await asyncio.sleep(60)

    async def main() -> LeaderSelector:
        selector = LeaderSelector(client, path, take, "gone")
        selector.auto_requeue()
        selector.start()
        deadline = time.monotonic() + 10
        while not terms:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        return selector

    selector = asyncio.run(main())  # ends the term (cancelled) and closes the loop
    wait_until(lambda: selector.state is LatchState.CLOSED, 20, "the selector to leave the election")
    assert selector.get_participants() == []
    # A term or two may begin before the loop closes; a busy loop would count hundreds.
    assert selector.leadership_count <= 5, "no busy loop of terms"


def test_async_take_leadership_needs_a_running_loop(client: zkrecipes.Client, path: str) -> None:
    async def take(ctx: LeadershipContext) -> None:
        pass

    with pytest.raises(TypeError, match="event loop"):
        LeaderSelector(client, path, take).start()

    async def main() -> None:
        selector = LeaderSelector(client, path, take)
        # Its close must be awaited: a plain `with` is refused before it starts (before, it
        # started, and the exit's close raised, leaving it running).
        with pytest.raises(TypeError, match="async with"):
            with selector:
                pass
        assert selector.state is LatchState.LATENT

    asyncio.run(main())


# A child interpreter that leaves a LeaderSelector leading at exit; its take_leadership waits
# for the cancellation and says which one it got.
_EXIT_CHILD = """
import sys, threading, zkrecipes
connect, path = sys.argv[1], sys.argv[2]
client = zkrecipes.Client(connect)
client.start()
leading = threading.Event()
def take(ctx):
    leading.set()
    print("CANCELLED", ctx.wait_cancelled(60), flush=True)
selector = zkrecipes.LeaderSelector(client, path, take, "exiting")
selector.start()
if not leading.wait(10):
    sys.exit("never led")
print("EXITING", flush=True)
"""


def test_an_interpreter_exiting_while_leading_interrupts_the_leadership_and_exits_cleanly(
    zk: ZooKeeper, path: str
) -> None:
    # Without the exit hook the callback kept its thread state into finalization and the child
    # aborted (Fatal Python error: PyGILState_Release) after the gate's 5 s wait.
    for i in range(3):
        child = run_python(_EXIT_CHILD, zk.connect, f"{path}/{i}")
        assert (child.returncode, child.stdout) == (0, "EXITING\nCANCELLED INTERRUPTED\n"), (
            f"run {i}: {child.stdout!r} {child.stderr[-2000:]}"
        )


_EXIT_CHILD_EVENT = _EXIT_CHILD.replace(
    'print("CANCELLED", ctx.wait_cancelled(60), flush=True)',
    'print("CANCELLED", ctx.cancelled.wait(60), ctx.cancelled.is_set(), flush=True)',
)


def test_an_exit_while_leading_sets_the_contexts_cancelled_event(zk: ZooKeeper, path: str) -> None:
    # The documented idiom, ``ctx.cancelled.wait()``: the event was set by a callback, and
    # callbacks no longer run at exit, so the child waited out the exit hook (5 s) and could abort.
    assert "ctx.cancelled.wait(60)" in _EXIT_CHILD_EVENT
    for i in range(2):
        started = time.monotonic()
        child = run_python(_EXIT_CHILD_EVENT, zk.connect, f"{path}/{i}")
        assert (child.returncode, child.stdout) == (0, "EXITING\nCANCELLED True True\n"), (
            f"run {i}: {child.stdout!r} {child.stderr[-2000:]}"
        )
        assert time.monotonic() - started < 4.5, "the exit waited for the hook's limit"


def test_the_cancelled_event_waits_with_a_timeout_and_sees_an_interrupt(client: zkrecipes.Client, path: str) -> None:
    seen: List[object] = []
    leading = threading.Event()
    done = threading.Event()

    def take(ctx: LeadershipContext) -> None:
        seen.append(ctx.cancelled.is_set())
        seen.append(ctx.cancelled.wait(0.05))
        leading.set()
        seen.append(ctx.cancelled.wait(30))
        seen.append(ctx.cancel_reason)
        done.set()

    selector = LeaderSelector(client, path, take)
    selector.start()
    assert leading.wait(10)
    selector.interrupt_leadership()
    assert done.wait(10)
    assert seen == [False, False, True, zkrecipes.CancelReason.INTERRUPTED]
    selector.close()


def test_selectors_and_their_contexts_are_collected(client: zkrecipes.Client, path: str) -> None:
    """Neither a selector nor the context of a term that returned (not cancelled) is kept alive
    by the native side: before, the native selector kept the selector's bound method and each
    context's cancel callback kept the context, cycles Python's collector cannot see through."""
    import gc
    import weakref

    contexts: List["weakref.ReferenceType[LeadershipContext]"] = []
    terms = threading.Semaphore(0)

    def take(ctx: LeadershipContext) -> None:
        contexts.append(weakref.ref(ctx))
        terms.release()

    selector = LeaderSelector(client, path, take)
    selector.auto_requeue()
    selector.start()
    for _ in range(3):
        assert terms.acquire(timeout=10), "a term did not run"
    selector.close()
    ref = weakref.ref(selector)
    del selector
    gc.collect()
    assert ref() is None, "the closed selector was kept alive"
    wait_until(lambda: gc.collect() >= 0 and all(w() is None for w in contexts), 10, "every term's context collected")


def test_ctrl_c_interrupts_a_selector_close_and_closing_again_waits(client: zkrecipes.Client, path: str) -> None:
    """close() waits for take_leadership, which here ignores its cancellation: Ctrl-C interrupts
    that wait as every blocking call's (before, it was one uninterruptible wait), and a close
    after it waits again until take_leadership has returned."""
    import _thread
    import signal
    import time

    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    release = threading.Event()
    leading = threading.Event()
    returned = threading.Event()

    def take(ctx: LeadershipContext) -> None:
        leading.set()
        release.wait(30)  # ignores ctx.cancelled
        returned.set()

    selector = LeaderSelector(client, path, take)
    try:
        selector.start()
        assert leading.wait(10)

        def ctrl_c() -> None:
            wait_until(lambda: not selector.has_leadership(), what="close() to begin")
            _thread.interrupt_main()

        t = threading.Thread(target=ctrl_c)
        t.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            selector.close()
        t.join()
        assert time.monotonic() - started < 10 and not returned.is_set()
        threading.Timer(0.2, release.set).start()
        selector.close()
        assert returned.is_set(), "the second close returned before take_leadership did"
    finally:
        release.set()
        signal.signal(signal.SIGINT, previous)
