"""SimpleDistributedQueue and the DistributedQueue family against a real ZooKeeper."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable, Dict, List

import pytest

import zkrecipes
from zkrecipes import (
    DistributedDelayQueue,
    DistributedIdQueue,
    DistributedPriorityQueue,
    DistributedQueue,
    SimpleDistributedQueue,
)

from conftest import wait_until


def test_simple_queue_is_fifo_with_raw_bytes(client: zkrecipes.Client, path: str) -> None:
    q = SimpleDistributedQueue(client, path)
    assert q.poll() is None and q.peek() is None
    node = q.offer(b"one")
    assert node.startswith(path + "/qn-")
    q.offer(b"two")
    data, _ = client.get_data(node)
    assert data == b"one"  # raw bytes, as ZooKeeper's recipe and Curator store them
    assert q.peek() == b"one"
    assert q.take() == b"one"
    assert q.take(1.0) == b"two"
    started = time.monotonic()
    assert q.take(0.2) is None
    assert time.monotonic() - started >= 0.19


def test_simple_take_survives_the_container_being_reaped(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    producer, consumer = make_client(), make_client()
    q = SimpleDistributedQueue(producer, path)
    q.offer(b"first")
    first = producer.exists(path)
    assert first is not None
    cq = SimpleDistributedQueue(consumer, path)
    assert cq.take() == b"first"
    got: List[object] = []
    t = threading.Thread(target=lambda: got.append(cq.take(60)))
    t.start()

    def reaped() -> bool:
        s = producer.exists(path)
        return s is None or s.czxid != first.czxid

    wait_until(reaped, 20, "the empty container reaped")
    q.offer(b"after")
    t.join(30)
    assert not t.is_alive(), "take hung after the container was reaped (CURATOR-308)"
    assert got == [b"after"]


def test_items_use_curators_framing(client: zkrecipes.Client, path: str) -> None:
    q = DistributedQueue(client, path)
    assert q.put(b"hi")
    (name,) = client.get_children(path)
    assert name.startswith("queue-")
    data, _ = client.get_data(f"{path}/{name}")
    assert data == bytes([0, 1, 0, 1, 1, 0, 0, 0, 2]) + b"hi" + bytes([2])
    assert len(q) == 1
    item = q.take(1)
    assert item is not None and item.data == b"hi" and item.messages == [b"hi"]
    item.done()  # no lock path: removed on receipt already
    assert len(q) == 0


def test_exactly_once_with_four_consumers_and_a_fenced_sink(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    locks = path + "-locks"
    producer = DistributedQueue(make_client(), path, lock_path=locks)
    total = 60
    for i in range(total):
        producer.put(str(i).encode())
    sink: Dict[bytes, int] = {}
    done: List[bytes] = []
    guard = threading.Lock()

    def consume() -> None:
        q = DistributedQueue(make_client(), path, lock_path=locks)
        for item in q.consume(timeout=2):
            with item:
                with guard:
                    assert item.fencing_token > sink.get(item.data, -1)
                    sink[item.data] = item.fencing_token
                    done.append(item.data)

    threads = [threading.Thread(target=consume) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(done, key=int) == [str(i).encode() for i in range(total)]


def test_a_consumer_whose_session_ends_cannot_complete_its_item(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    locks = path + "-locks"
    a, b = make_client(), make_client()
    qa = DistributedQueue(a, path, lock_path=locks)
    qb = DistributedQueue(b, path, lock_path=locks)
    qa.put(b"job")
    held = qa.take(1)
    assert held is not None
    assert qb.take(0.2) is None  # held by the other consumer
    a._expire_session_for_testing()
    again = qb.take(10)
    assert again is not None and again.data == b"job"
    assert again.fencing_token > held.fencing_token
    with pytest.raises(zkrecipes.SessionExpiredError):
        held.done()
    again.done()
    with pytest.raises(zkrecipes.InvalidArgumentError):
        again.done()
    assert len(qb) == 0


def test_an_item_given_back_on_an_exception_is_taken_again(client: zkrecipes.Client, path: str) -> None:
    q = DistributedQueue(client, path, lock_path=path + "-locks")
    q.put(b"x")
    with pytest.raises(RuntimeError):
        for item in q.consume():
            with item:
                raise RuntimeError("processing failed")
    again = q.take(5)
    assert again is not None and again.data == b"x"
    again.done()


def test_bounded_puts_and_variants(client: zkrecipes.Client, path: str) -> None:
    q = DistributedQueue(client, path + "/bounded", lock_path=path + "/bounded-locks", max_items=1)
    assert q.put(b"1")
    assert q.put(b"2", timeout=0.1) is False
    prio = DistributedPriorityQueue(client, path + "/prio")
    for data, p in [(b"mid", 5), (b"low", -3), (b"high", 100)]:
        prio.put(data, p)
    order = [i.data for i in prio.consume(timeout=0.2)]
    assert order == [b"low", b"mid", b"high"]
    ids = DistributedIdQueue(client, path + "/ids", lock_path=path + "/ids-locks")
    ids.put(b"a", "job/1")
    ids.put(b"b", "job-2")
    assert ids.remove("job/1") == 1
    by_id = ids.take(1)
    assert by_id is not None and by_id.id == "job-2"
    by_id.done()
    delay = DistributedDelayQueue(client, path + "/delay")
    due = time.time() + 0.3
    delay.put(b"later", due)
    assert delay.take(0) is None
    delayed = delay.take(10)
    assert delayed is not None and time.time() >= due
    # A time that is no time is a ZkRecipesError like every other bad input.
    for bad in (float("nan"), float("inf"), -float("inf"), 1e300):
        with pytest.raises(zkrecipes.InvalidArgumentError, match="delay_until"):
            delay.put(b"x", bad)
        with pytest.raises(zkrecipes.InvalidArgumentError, match="delay_until"):
            delay.put_multi([b"x"], bad)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        ids.put(b"x", "")
    with pytest.raises(zkrecipes.InvalidArgumentError):
        DistributedQueue(client, path, lock_path=path + "/inside")
    with pytest.raises(zkrecipes.InvalidArgumentError):
        DistributedQueue(client, path, max_items=0)


def test_listeners_hear_connection_states(client: zkrecipes.Client, path: str) -> None:
    q = DistributedQueue(client, path)
    heard: List[zkrecipes.ConnectionState] = []
    lid = q.add_listener(heard.append)
    client._expire_session_for_testing()
    wait_until(lambda: zkrecipes.ConnectionState.LOST in heard, 20, "LOST heard by the queue's listener")
    assert q.remove_listener(lid)
    assert not q.remove_listener(lid)


def test_asyncio_twins(client: zkrecipes.Client, path: str) -> None:
    async def main() -> List[bytes]:
        q = DistributedQueue(client, path, lock_path=path + "-locks")
        s = SimpleDistributedQueue(client, path + "-simple")
        await s.offer_async(b"s")
        assert await s.take_async(1) == b"s"
        for i in range(3):
            await q.put_async(str(i).encode())
        got = []
        async for item in q.consume_async(timeout=0.3):
            async with item:
                got.append(item.data)
        return got

    assert asyncio.run(main()) == [b"0", b"1", b"2"]


def test_a_take_whose_asyncio_task_was_cancelled_after_it_removed_the_item_offers_it_again(
    client: zkrecipes.Client, make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    # At most once, but not lost: the core removed the item, the task was cancelled before the
    # result reached it; the item was handed to nobody, so it is offered again (it was lost).
    other = make_client()
    q = SimpleDistributedQueue(client, path)

    def items() -> List[str]:
        # The queue's path is a container: the server may reap it once empty.
        try:
            return other.get_children(path)
        except zkrecipes.NoNodeError:
            return []

    async def main() -> None:
        task = asyncio.create_task(q.take_async(10))
        # The take starts on an empty queue, so it cannot finish in its first step (with the item
        # already there it could, seen in CI: then there is nothing to cancel).
        await asyncio.sleep(0)
        # The loop is held from here (blocking calls, a wait on a condition) while the core
        # takes and removes the item the other client offers.
        SimpleDistributedQueue(other, path).offer(b"x")
        wait_until(lambda: items() == [], 10, "the take removed the item")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    wait_until(lambda: items() != [], 10, "the item offered again")
    assert SimpleDistributedQueue(other, path).poll() == b"x"


def test_an_unlocked_take_whose_asyncio_task_was_cancelled_after_it_removed_the_item_puts_it_back(
    client: zkrecipes.Client, make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    # Without a lock path the item is removed when taken: a task cancelled before the item
    # reached it must not lose it. It comes back at the tail with its priority.
    other = make_client()
    q = DistributedPriorityQueue(client, path)
    producer = DistributedPriorityQueue(other, path)

    async def main() -> None:
        task = asyncio.create_task(q.take_async(10))
        await asyncio.sleep(0)
        # The loop is held while the core takes and removes the item (see the simple queue's
        # test above for why the item comes after the take started).
        producer.put(b"x", -5)
        wait_until(lambda: other.get_children(path) == [], 10, "the take removed the item")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    wait_until(lambda: other.get_children(path) != [], 10, "the item put back")
    producer.put(b"low", 50)
    first = producer.take(5)
    assert first is not None and first.data == b"x", "not back ahead of a lower priority"


def test_give_back_without_a_lock_path_puts_the_item_back_with_its_priority(
    client: zkrecipes.Client, path: str
) -> None:
    # Without a lock path the take removed the item: give_back puts it back with its key, so it
    # comes first again, ahead of the lower priority (release would have nothing to give back).
    q = DistributedPriorityQueue(client, path)
    q.put(b"high", -5)
    q.put(b"low", 50)
    first = q.take(5)
    assert first is not None and first.data == b"high"
    first.give_back()
    again = q.take(5)
    assert again is not None and again.data == b"high", "not back ahead of a lower priority"
    assert again.node != first.node and again.fencing_token > first.fencing_token
    nxt = q.take(5)
    assert nxt is not None and nxt.data == b"low"
    assert len(q) == 0


def test_give_back_with_a_lock_path_releases_the_item_for_another_take(client: zkrecipes.Client, path: str) -> None:
    locks = path + "-locks"
    q = DistributedQueue(client, path, lock_path=locks)
    q.put(b"x")
    q.put(b"y")
    first = q.take(5)
    assert first is not None and first.data == b"x"
    assert len(client.get_children(locks)) == 1
    first.give_back()
    assert client.get_children(locks) == [], "our lock node is gone"

    async def take_and_give_back_async() -> None:
        again = await q.take_async(5)
        assert again is not None and again.data == b"x" and again.node == first.node
        assert again.fencing_token > first.fencing_token
        await again.give_back_async()

    asyncio.run(take_and_give_back_async())
    last = q.take(5)
    assert last is not None and last.data == b"x", "given back where it was: first again"
    last.done()
    assert len(q) == 1


@pytest.mark.parametrize("lock_path", [False, True])
def test_give_back_twice_or_after_done_raises_as_release_does(
    client: zkrecipes.Client, path: str, lock_path: bool
) -> None:
    q = DistributedQueue(client, path, lock_path=path + "-locks" if lock_path else None)
    for data in (b"a", b"b"):
        q.put(data)
    given = q.take(5)
    assert given is not None
    given.give_back()
    with pytest.raises(zkrecipes.InvalidArgumentError) as twice:
        given.give_back()
    with pytest.raises(zkrecipes.InvalidArgumentError) as release_after:
        given.release()
    assert str(twice.value) == str(release_after.value)
    done = q.take(5)
    assert done is not None
    done.done()
    with pytest.raises(zkrecipes.InvalidArgumentError) as after_done:
        done.give_back()
    with pytest.raises(zkrecipes.InvalidArgumentError) as release_after_done:
        done.release()
    assert str(after_done.value) == str(release_after_done.value)

    async def twice_async() -> None:
        with pytest.raises(zkrecipes.InvalidArgumentError):
            await given.give_back_async()

    asyncio.run(twice_async())
    # Nothing was given back or completed twice: one item left, the other one.
    assert len(q) == 1
    left = q.take(5)
    assert left is not None and left.data != done.data
