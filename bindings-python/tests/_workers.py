"""Worker functions for the multiprocessing tests (importable by spawned processes)."""

from __future__ import annotations

from typing import Tuple

import zkrecipes


def contend(hosts: str, path: str, rounds: int) -> Tuple[int, int]:
    """Takes the lock ``rounds`` times, each time reading and writing a plain node (a
    read-modify-write that only the lock makes safe), and adds to a counter. Returns how many
    rounds it did and the largest counter value it saw."""
    top = 0
    with zkrecipes.Client(hosts, session_timeout=20.0) as client:
        lock = zkrecipes.InterProcessMutex(client, path + "/lock")
        counter = zkrecipes.DistributedAtomicLong(client, path + "/counter")
        for _ in range(rounds):
            with lock:
                data, stat = client.get_data(path + "/plain")
                client.set_data(path + "/plain", str(int(data) + 1).encode(), version=stat.version)
            top = max(top, counter.add_and_get(1))
    return rounds, top
