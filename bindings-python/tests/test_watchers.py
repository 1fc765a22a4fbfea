"""Persistent watchers (Curator's PersistentWatcher) against the real server: a recursive watch
hears every change below its path, a plain one its node and its children list; listeners and
``async for``; a session expiry is reported as SESSION_LOST then RECONNECTED and the watch is set
again; closing; bad input."""

from __future__ import annotations

import asyncio
import threading
from typing import Callable, List, Optional, Tuple

import pytest

import zkrecipes
from zkrecipes import PersistentWatcher, WatcherEvent, WatcherEventType, _native

from conftest import ZooKeeper, run_python, wait_until

T = WatcherEventType


class Heard:
    def __init__(self) -> None:
        self.events: List[WatcherEvent] = []
        self.lock = threading.Lock()

    def __call__(self, event: WatcherEvent) -> None:
        with self.lock:
            self.events.append(event)

    def pairs(self) -> List[Tuple[WatcherEventType, Optional[str]]]:
        with self.lock:
            return [(e.type, e.path) for e in self.events]


def test_a_recursive_watcher_hears_every_change_below_its_path(client: zkrecipes.Client, path: str) -> None:
    heard = Heard()
    with PersistentWatcher(client, path, recursive=True) as w:
        assert w.started and w.recursive and w.path == path
        # The other mode on the same path shares the path's one watch (issue 32): no error.
        with PersistentWatcher(client, path) as plain:
            assert plain.started
        w.listen(heard)
        # Persistent parents: a container emptied by the delete below would be reaped by the
        # server at some point, and that deletion is an event the later assertions do not expect.
        client.create(f"{path}/a/b", b"b", create_parents="persistent")
        client.set_data(f"{path}/a/b", b"x")
        client.delete(f"{path}/a/b")
        expected = [
            (T.CREATED, path),
            (T.CREATED, f"{path}/a"),
            (T.CREATED, f"{path}/a/b"),
            (T.DATA_CHANGED, f"{path}/a/b"),
            (T.DELETED, f"{path}/a/b"),
        ]
        wait_until(lambda: len(heard.pairs()) >= 5, what="five events")
        assert heard.pairs() == expected
    assert not w.started
    client.create(f"{path}/after", b"")
    # The watch is gone: a new watcher on the same path hears only its own changes.
    again = Heard()
    with PersistentWatcher(client, path, recursive=True) as w2:
        w2.listen(again)
        client.set_data(path, b"z")
        wait_until(lambda: len(again.pairs()) >= 1, what="the set")
        assert again.pairs() == [(T.DATA_CHANGED, path)]
    assert heard.pairs() == expected


def test_a_plain_watcher_hears_its_node_and_its_children_list(client: zkrecipes.Client, path: str) -> None:
    client.create(path, b"", create_parents=True)
    heard = Heard()
    w = PersistentWatcher(client, path)
    lid = w.listen(heard)
    w.start()
    try:
        client.create(f"{path}/c", b"")
        client.create(f"{path}/c/deep", b"")  # a grandchild: not heard
        client.set_data(path, b"v")
        wait_until(lambda: len(heard.pairs()) >= 2, what="two events")
        assert heard.pairs() == [(T.CHILDREN_CHANGED, path), (T.DATA_CHANGED, path)]
        assert w.remove_listener(lid)
        assert not w.remove_listener(lid)
        with pytest.raises(zkrecipes.InvalidArgumentError):
            w.start()  # once only
    finally:
        w.close()
        w.close()
    with pytest.raises(zkrecipes.ClosedError):
        w.start()


def test_a_session_expiry_is_reported_and_the_watch_set_again(
    make_client: Callable[..., zkrecipes.Client], path: str
) -> None:
    c = make_client()
    writer = make_client()
    heard = Heard()
    with PersistentWatcher(c, path, recursive=True) as w:
        w.listen(heard)
        c._expire_session_for_testing()

        def reconnected_after_loss() -> bool:
            kinds = [k for k, _ in heard.pairs()]
            return T.SESSION_LOST in kinds and T.RECONNECTED in kinds[kinds.index(T.SESSION_LOST) :]

        # (A RECONNECTED may come first: the old session can be resumed briefly before it
        # expires; the one that counts is the one after SESSION_LOST.)
        wait_until(reconnected_after_loss, timeout=30, what="RECONNECTED after SESSION_LOST")
        writer.create(f"{path}/x", b"", create_parents=True)
        wait_until(lambda: (T.CREATED, f"{path}/x") in heard.pairs(), what="a change on the new session")


def test_async_for_ends_when_closed(client: zkrecipes.Client, path: str) -> None:
    async def main() -> List[Tuple[WatcherEventType, Optional[str]]]:
        seen: List[Tuple[WatcherEventType, Optional[str]]] = []
        async with PersistentWatcher(client, path, recursive=True) as w:
            events = w.events()
            await asyncio.to_thread(client.create, f"{path}/n", b"", create_parents=True)
            async for e in events:
                seen.append((e.type, e.path))
                if e.path == f"{path}/n":
                    break
            it = w.__aiter__()
        # Closed: a loop started before the close ends.
        async for _ in it:
            raise AssertionError("an event after close")
        return seen

    assert asyncio.run(asyncio.wait_for(main(), 20)) == [(T.CREATED, path), (T.CREATED, f"{path}/n")]


def test_names_and_bad_input(make_client: Callable[..., zkrecipes.Client]) -> None:
    client = make_client()
    assert [t.value for t in WatcherEventType] == _native.WATCHER_EVENT_TYPES
    with pytest.raises(zkrecipes.InvalidArgumentError):
        PersistentWatcher(client, "no-slash")
    with pytest.raises(TypeError):
        PersistentWatcher(client, "/x", recursive="yes")  # type: ignore[arg-type]
    w = PersistentWatcher(client, "/x")
    with pytest.raises(TypeError):
        w.listen(42)  # type: ignore[arg-type]
    w.close()
    other = make_client()
    other.close()
    with pytest.raises(zkrecipes.ClosedError):
        PersistentWatcher(other, "/x")


# A child interpreter that exits while its watcher's listener is still being called from the
# library's dispatcher thread: the listener releases the GIL (time.sleep) mid-call, so the main
# thread reaches interpreter exit with deliveries queued and one running.
_EXIT_CHILD = """
import sys, threading, time, zkrecipes
connect, path = sys.argv[1], sys.argv[2]
client = zkrecipes.Client(connect)
client.start()
client.create(path, b"", create_parents="persistent")
watcher = zkrecipes.PersistentWatcher(client, path)
heard = threading.Event()
def listener(event):
    heard.set()
    time.sleep(0.0005)
    sum(range(2000))
watcher.listen(listener)
watcher.start()
for i in range(300):
    client.set_data(path, b"%d" % i)
if not heard.wait(10):
    sys.exit("the listener was never called")
print("EXITING", flush=True)
"""


def test_an_interpreter_exiting_while_listeners_run_exits_cleanly(zk: ZooKeeper, path: str) -> None:
    # Before the atexit gate (bridge::attach), 45 of 60 such children aborted with "Fatal Python
    # error: PyGILState_Release: thread state ... must be current when releasing".
    for i in range(8):
        child = run_python(_EXIT_CHILD, zk.connect, f"{path}/{i}")
        assert (child.returncode, child.stdout) == (0, "EXITING\n"), f"run {i}: {child.stderr[-2000:]}"
        assert "Fatal Python error" not in child.stderr
