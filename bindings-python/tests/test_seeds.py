"""The seeds' scenarios, end to end: threads on one mutex, processes on one lock and counter,
and the example programs (the demo's seeds.py and the typed tour) against the real server."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import zkrecipes
from zkrecipes import InterProcessMutex

from _workers import contend
from conftest import ZooKeeper

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_hundred_threads_on_one_mutex_never_overlap(client: zkrecipes.Client, path: str) -> None:
    lock = InterProcessMutex(client, path)
    guard = threading.Lock()
    inside = 0
    most = 0
    tokens: List[int] = []

    def work() -> None:
        nonlocal inside, most
        with lock:
            with guard:
                inside += 1
                most = max(most, inside)
            tokens.append(lock.fencing_token)
            time.sleep(0.001)  # hold it a moment so an overlap would show
            with guard:
                inside -= 1

    threads = [threading.Thread(target=work) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1 and len(tokens) == 100
    assert tokens == sorted(tokens) and len(set(tokens)) == 100  # handed over in order, fenced
    assert lock.participant_nodes() == []


def test_four_processes_contend_on_one_lock_and_count_on_one_counter(zk: ZooKeeper, client: zkrecipes.Client, path: str) -> None:
    client.create(path + "/plain", b"0", create_parents=True)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.starmap(contend, [(zk.connect, path, 25)] * 4, chunksize=1)
    assert sum(r for r, _ in results) == 100
    assert client.get_data(path + "/plain")[0] == b"100"  # no lost update under the lock
    assert zkrecipes.DistributedAtomicLong(client, path + "/counter").get().post_value == 100
    assert max(top for _, top in results) == 100


def test_the_demo_seeds_program_passes(zk: ZooKeeper) -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "seeds.py"), zk.connect], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 passed, 0 failed" in run.stdout


def test_the_typed_example_runs(zk: ZooKeeper) -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "typed_usage.py"), zk.connect], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "typed tour ok" in run.stdout
