"""Queue extras (issue 32): put_multi, put listeners, error modes and the QueueSharder, against a
real ZooKeeper."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable, List

import pytest

import zkrecipes
from zkrecipes import (
    DistributedDelayQueue,
    DistributedIdQueue,
    DistributedPriorityQueue,
    DistributedQueue,
    ErrorMode,
    QueueItem,
    QueuePut,
    QueueSharder,
)

from conftest import children_left, wait_until


def curator_framing(*messages: bytes) -> bytes:
    out = b"\x00\x01\x00\x01"
    for m in messages:
        out += b"\x01" + len(m).to_bytes(4, "big") + m
    return out + b"\x02"


def test_put_multi_is_one_node_in_curators_framing(client: zkrecipes.Client, path: str) -> None:
    q = DistributedQueue(client, path, lock_path=path + "-locks")
    assert q.put_multi([b"a", b"", b"ccc"])
    nodes = client.get_children(path)
    assert len(nodes) == 1
    data, _ = client.get_data(f"{path}/{nodes[0]}")
    assert data == curator_framing(b"a", b"", b"ccc")
    item = q.take(5)
    assert item is not None
    assert item.messages == [b"a", b"", b"ccc"] and item.data == b"a"
    item.done()
    with pytest.raises(zkrecipes.InvalidArgumentError):
        q.put_multi([])
    with pytest.raises(TypeError):
        q.put_multi([b"ok", "not bytes"])  # type: ignore[list-item]
    # The id queue has no putMulti in Curator, and none here.
    assert not hasattr(DistributedIdQueue, "put_multi")


def test_priority_and_delay_put_multi(client: zkrecipes.Client, path: str) -> None:
    pq = DistributedPriorityQueue(client, path + "/p", lock_path=path + "/p-locks")
    assert pq.put_multi([b"late-1", b"late-2"], 9)
    assert pq.put_multi([b"early"], -2)
    first = pq.take(5)
    assert first is not None and first.messages == [b"early"]
    first.done()
    second = pq.take(5)
    assert second is not None and second.messages == [b"late-1", b"late-2"]
    second.done()
    dq = DistributedDelayQueue(client, path + "/d", lock_path=path + "/d-locks")
    due = time.time() + 0.5
    assert dq.put_multi([b"d1", b"d2"], due)
    item = dq.take(20)
    assert item is not None and time.time() >= due - 0.05
    assert item.messages == [b"d1", b"d2"]
    item.done()


def test_put_listeners_hear_completed_puts(client: zkrecipes.Client, path: str) -> None:
    q = DistributedQueue(client, path, lock_path=path + "-locks", max_items=2)
    heard: List[QueuePut] = []
    lock = threading.Lock()

    def on_put(put: QueuePut) -> None:
        with lock:
            heard.append(put)

    lid = q.add_put_listener(on_put)
    q.put(b"one")
    q.put_multi([b"two", b"three"])
    wait_until(lambda: len(heard) == 2, 10, "two puts heard")
    assert heard[0].messages == [b"one"] and not heard[0].multi and heard[0].data == b"one"
    assert heard[1].messages == [b"two", b"three"] and heard[1].multi
    assert sorted(h.node for h in heard) == sorted(f"{path}/{n}" for n in client.get_children(path))
    # No room in time: nothing put, nothing heard.
    assert not q.put(b"no room", 0.1)
    assert q.remove_put_listener(lid)
    assert not q.remove_put_listener(lid)
    item = q.take(5)
    assert item is not None
    item.done()
    sentinel: List[QueuePut] = []
    q.add_put_listener(sentinel.append)
    q.put(b"later")
    wait_until(lambda: len(sentinel) == 1, 10, "the sentinel heard the put")
    assert len(heard) == 2, "a removed listener heard a put"
    with pytest.raises(TypeError):
        q.add_put_listener("not callable")  # type: ignore[arg-type]


def test_put_multi_async_and_put_listener(client: zkrecipes.Client, path: str) -> None:
    q = DistributedQueue(client, path, lock_path=path + "-locks")

    async def main() -> int:
        loop = asyncio.get_running_loop()
        heard: "asyncio.Future[QueuePut]" = loop.create_future()
        q.add_put_listener(lambda p: loop.call_soon_threadsafe(heard.set_result, p))
        assert await q.put_multi_async([b"x", b"y"])
        put = await asyncio.wait_for(heard, 10)
        assert put.multi and put.messages == [b"x", b"y"]
        item = await q.take_async(5)
        assert item is not None
        async with item:
            assert item.messages == [b"x", b"y"]
        return await q.len_async()

    assert asyncio.run(main()) == 0


def test_an_exception_requeues_the_item_at_the_tail(client: zkrecipes.Client, path: str) -> None:
    q = DistributedQueue(client, path, lock_path=path + "-locks")
    assert q.error_mode is ErrorMode.REQUEUE
    q.put(b"a")
    q.put(b"b")
    item = q.take(5)
    assert item is not None
    first_node = item.node
    with pytest.raises(RuntimeError):
        with item:
            raise RuntimeError("processing failed")
    assert first_node not in client.get_children(path)
    assert children_left(client, path + "-locks") == []  # no lock left
    b = q.take(5)
    assert b is not None and b.data == b"b"
    b.done()
    a = q.take(5)
    assert a is not None and a.data == b"a"
    # DELETE: a failed item is gone.
    q.error_mode = ErrorMode.DELETE
    assert q.error_mode is ErrorMode.DELETE
    a.fail()
    assert len(q) == 0
    with pytest.raises(zkrecipes.InvalidArgumentError):
        a.fail()
    with pytest.raises(ValueError):
        q.error_mode = "RETRY"  # type: ignore[assignment]


def test_a_stopped_consumer_gives_the_item_back_untouched(client: zkrecipes.Client, path: str) -> None:
    """Ctrl-C, SystemExit or a cancelled Task inside ``with item:`` is a stop, not a failure:
    the item stays where it was, even under ErrorMode.DELETE (before, it was failed: deleted,
    or requeued at the tail)."""
    q = DistributedQueue(client, path, lock_path=path + "-locks", error_mode=ErrorMode.DELETE)
    q.put(b"a")
    q.put(b"b")
    for stop in (KeyboardInterrupt, SystemExit):
        item = q.take(5)
        assert item is not None and item.data == b"a"
        with pytest.raises(stop):
            with item:
                raise stop()

    async def cancelled() -> None:
        item = await q.take_async(5)
        assert item is not None and item.data == b"a"

        async def consume() -> None:
            async with item:
                await asyncio.sleep(60)

        task = asyncio.get_running_loop().create_task(consume())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    first, second = q.take(5), q.take(5)  # both kept: an item dropped unsettled is released
    assert first is not None and second is not None
    assert [first.data, second.data] == [b"a", b"b"], "still first, not deleted"
    first.done()
    second.done()


def test_error_mode_option_and_its_rules(client: zkrecipes.Client, path: str) -> None:
    q = DistributedQueue(client, path, lock_path=path + "-locks", error_mode="DELETE")
    assert q.error_mode is ErrorMode.DELETE
    q.put(b"x")
    item = q.take(5)
    assert item is not None
    item.fail()
    assert len(q) == 0
    with pytest.raises(zkrecipes.InvalidArgumentError):
        DistributedQueue(client, path, error_mode=ErrorMode.REQUEUE)
    plain = DistributedQueue(client, path)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        plain.error_mode = ErrorMode.DELETE


def test_a_consumer_whose_session_ended_fails_nothing(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    doomed, other = make_client(), make_client()
    q = DistributedQueue(doomed, path, lock_path=path + "-locks")
    q.put(b"only")
    held = q.take(5)
    assert held is not None
    doomed._expire_session_for_testing()
    with pytest.raises(zkrecipes.SessionExpiredError):
        held.fail()
    q2 = DistributedQueue(other, path, lock_path=path + "-locks")
    again = q2.take(20)
    assert again is not None and again.data == b"only"
    again.done()
    assert q2.take(0.2) is None


def test_a_sharder_adds_shards_and_takes_every_item_once(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    a_client, b_client = make_client(), make_client()
    options = dict(lock_path=path + "-locks", new_queue_threshold=5, threshold_check=0.1, max_queues=3)
    a = QueueSharder(a_client, path + "/queues", path + "/leader", **options)  # type: ignore[arg-type]
    with pytest.raises(zkrecipes.InvalidArgumentError):
        a.get_queue()
    with a, QueueSharder(b_client, path + "/queues", path + "/leader", **options) as b:  # type: ignore[arg-type]
        assert a.shard_qty == 1 and b.queue_paths == a.queue_paths
        assert a.queue_paths[0].startswith(path + "/queues/queue-")
        wait_until(lambda: a.is_leader != b.is_leader, 30, "one leader")
        for i in range(30):
            assert (a if i % 2 else b).get_queue().put(f"item-{i}".encode())
            if i % 10 == 9:
                want = min(i // 10 + 2, 3)
                # The leader adds a shard at every check while one is at the threshold (as Curator's).
                wait_until(lambda: a.shard_qty >= want and b.shard_qty >= want, 30, f"{want} shards")
        wait_until(lambda: a.shard_qty == 3 and b.shard_qty == 3, 30, "three shards")
        seen: List[bytes] = []
        lock = threading.Lock()

        def consume(s: QueueSharder) -> None:
            for item in s.consume(timeout=2):
                with item:
                    with lock:
                        seen.append(item.data)

        threads = [threading.Thread(target=consume, args=(s,)) for s in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert sorted(seen) == sorted(f"item-{i}".encode() for i in range(30))
    assert client_children(a_client, path + "/queues") == 3
    with pytest.raises(zkrecipes.ClosedError):
        a.get_queue()


def client_children(client: zkrecipes.Client, p: str) -> int:
    return len(client.get_children(p))


def test_a_sharder_async(client: zkrecipes.Client, path: str) -> None:
    async def main() -> List[QueueItem]:
        async with QueueSharder(client, path + "/q", path + "/l") as s:
            assert s.get_queue().put(b"hello")
            item = await s.take_async(5)
            assert item is not None and item.data == b"hello"
            await item.done_async()
            return [i async for i in s.consume_async(timeout=0.2)]

    assert asyncio.run(main()) == []


def test_sharder_arguments(client: zkrecipes.Client, path: str) -> None:
    with pytest.raises(zkrecipes.InvalidArgumentError):
        QueueSharder(client, path, path)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        QueueSharder(client, path, path + "/leader")
    with pytest.raises(zkrecipes.InvalidArgumentError):
        QueueSharder(client, path, path + "-l", new_queue_threshold=0)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        QueueSharder(client, path, path + "-l", threshold_check=-1)
    with pytest.raises(zkrecipes.InvalidArgumentError):
        QueueSharder(client, path, path + "-l", error_mode=ErrorMode.DELETE)
