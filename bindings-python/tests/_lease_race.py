"""Run as a script (by test_lock_family): one thread reads ``Lease.data()`` over and over while
the main thread returns the lease. Prints "ok" when both finish; a deadlock hangs (the test's
subprocess timeout catches it)."""

from __future__ import annotations

import sys
import threading

import zkrecipes


def main(hosts: str, path: str) -> None:
    with zkrecipes.Client(hosts, session_timeout=10.0) as client:
        sem = zkrecipes.InterProcessSemaphoreV2(client, path, 1, data=b"payload")
        leases = sem.acquire(1, timeout=10)
        assert leases is not None
        lease = leases[0]
        reads = threading.Semaphore(0)
        outcome: list = []

        def reader() -> None:
            try:
                while True:
                    assert lease.data() == b"payload"
                    reads.release()
            except zkrecipes.ClosedError:
                outcome.append("closed")  # returned meanwhile: the expected end
            except zkrecipes.NoNodeError:
                outcome.append("closed")  # its node deleted between the check and the read

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        for _ in range(3):  # the reader is inside data() again and again
            assert reads.acquire(timeout=10)
        lease.release()
        t.join(timeout=20)
        assert not t.is_alive() and outcome == ["closed"], outcome
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
