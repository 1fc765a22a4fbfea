"""The Python worker of the interop runner (tests/interop/run); run with the repo's .venv.

    py_worker.py --role mutex|counter --connect HOST:PORT --path P --iterations N --id ID --log FILE

Log lines: "start python ID TOKEN NS" / "end python ID TOKEN NS" (time.monotonic_ns(), i.e.
CLOCK_MONOTONIC), "inc python ID VALUE" / "fail python ID ERR", then "done python ID COUNT".
"""
import argparse
import os
import time

import zkrecipes


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--role", required=True)
    p.add_argument("--connect", required=True)
    p.add_argument("--path", required=True)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--id", default="python")
    p.add_argument("--log", default="/dev/null")
    p.add_argument("--go", help="start barrier: wait for this file after connecting")
    p.add_argument("--expect", type=int, default=5, help="latch: participants to wait for")
    a = p.parse_args()
    with zkrecipes.Client(a.connect, session_timeout=30.0, connection_timeout=15.0) as client, \
            open(a.log, "a", buffering=1) as log:
        latch = None
        if a.role == "latch":  # join, then wait until every runtime's participant is listed
            latch = zkrecipes.LeaderLatch(client, a.path, id=a.id)
            latch.start()
            t = time.monotonic()
            while True:
                ids = sorted(p.id for p in latch.get_participants())
                if len(ids) >= a.expect or time.monotonic() - t > 60:
                    break
                time.sleep(0.02)
            log.write(f"participants python {a.id} {','.join(ids)}\n")
        if a.go:
            log.write(f"ready python {a.id}\n")
            while not os.path.exists(a.go):
                time.sleep(0.001)
        if a.role == "mutex":
            m = zkrecipes.InterProcessMutex(client, a.path)
            for _ in range(a.iterations):
                assert m.acquire()
                token = m.fencing_token
                log.write(f"start python {a.id} {token} {time.monotonic_ns()}\n")
                time.sleep(0.0002)
                log.write(f"end python {a.id} {token} {time.monotonic_ns()}\n")
                m.release()
            log.write(f"done python {a.id} {a.iterations}\n")
        elif a.role == "latch":
            for rnd in range(a.iterations):
                if rnd > 0:
                    latch = zkrecipes.LeaderLatch(client, a.path, id=a.id)
                    latch.start()
                assert latch.await_leadership(timeout=60.0), "never led"
                log.write(f"lead python {a.id} {time.monotonic_ns()}\n")
                time.sleep(0.02)
                assert latch.has_leadership(), "lost leadership while leading"
                log.write(f"unlead python {a.id} {time.monotonic_ns()}\n")
                latch.close()
            log.write(f"done python {a.id} {a.iterations}\n")
        elif a.role == "counter":
            c = zkrecipes.DistributedAtomicLong(client, a.path)
            ok = 0
            for _ in range(a.iterations):
                try:
                    v = c.add_and_get(1, timeout=30.0)
                    ok += 1
                    log.write(f"inc python {a.id} {v}\n")
                except zkrecipes.ZkRecipesError as e:
                    log.write(f"fail python {a.id} {type(e).__name__}\n")
            log.write(f"done python {a.id} {ok}\n")
        else:
            raise SystemExit(f"unknown role {a.role}")


if __name__ == "__main__":
    main()
