"""The kazoo worker of the interop runner (tests/interop/run): real kazoo (PyPI, installed into
the repo's .venv by scripts/setup-interop) on the paths zkrecipes' workers use.

    kazoo_worker.py --role partition|lease --connect HOST:PORT --path P --iterations N --id ID
                    --log FILE [--go FILE] [--expect K] [--peers DIR]

partition: kazoo's own SetPartitioner (kazoo's party and locks), the loop of py_worker.py's
partition role: `iterations` rounds of join, hold for 0.4 s, leave; then a final member that logs
`final kazoo ID p,q,...` once the party is all `expect` workers and its share is kazoo's for
them, until every worker did. Stamps `start/end kazoo ID PARTITION NS` (time.monotonic_ns,
CLOCK_MONOTONIC) around each hold: start once ACQUIRED, end before release_set or finish.

lease: kazoo's own MultiNonBlockingLease (2 leases of 1 s), tried every 0.1 s until held
`iterations` times; the holder's slot and end are read
from its `lease_holder` node (kazoo does not say which it got). Logs `lease kazoo ID SLOT
START_NS END_NS` (wall clock) per hold, `renew kazoo ID ok|lost RETURNED_NS END_NS` for the renewal within it,
and `lapsed kazoo ID` for a hold whose lease had already ended and been taken when its slot was read.
"""
import argparse
import calendar
import datetime
import json
import os
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.recipe.lease import MultiNonBlockingLease
from kazoo.recipe.partitioner import PartitionState, SetPartitioner

# the start barrier's poll: every worker waits for the runner's go file (about 120 workers at once; 1 ms polls starved the servers on 2 cores)
BARRIER_POLL = 0.02

PARTS = [f"p{i}" for i in range(8)]
HOLD = 0.4


def kazoo_share(me, ids, parts):
    workers = sorted(ids)
    return sorted(parts)[workers.index(me) :: len(workers)] if me in workers else None


def party_ids(client, path):
    return [c[c.find("-") + 1 :] for c in client.get_children(path + "/party")]


def drive(p, event, log, me, until):
    """kazoo's loop, stamped as py_worker.py's drive."""
    held = None
    since = 0.0
    while True:
        event.clear()
        state = p.state
        parts = sorted(p) if state == PartitionState.ACQUIRED else []
        if state == PartitionState.ACQUIRED and held is None:
            held, since = parts, time.monotonic()
            for q in held:
                log.write(f"start kazoo {me} {q} {time.monotonic_ns()}\n")
        if until(state, parts, since):
            return held
        if state == PartitionState.RELEASE:
            for q in held or []:
                log.write(f"end kazoo {me} {q} {time.monotonic_ns()}\n")
            held = None
            p.release_set()
        elif state == PartitionState.FAILURE:
            raise SystemExit("partitioner FAILURE")
        else:
            event.wait(0.05)


def leave(p, held, log, me):
    for q in held or []:
        log.write(f"end kazoo {me} {q} {time.monotonic_ns()}\n")
    p.finish()


def partition(client, a, log):
    def member():
        event = threading.Event()
        p = SetPartitioner(client, a.path, PARTS, identifier=a.id, time_boundary=0.2,
                           max_reaction_time=0.1, state_change_event=event)
        return p, event

    # After the Rust worker's first round (py_worker.py's wait_for_first).
    deadline = time.monotonic() + 120
    while not os.path.exists(a.peers + ".first"):
        if time.monotonic() > deadline:
            raise SystemExit("the Rust worker's first round never ended (no PEERS.first)")
        time.sleep(0.005)
    for r in range(a.iterations):
        p, event = member()
        deadline = time.monotonic() + 120
        hold = HOLD + (time.monotonic_ns() % 200) / 1000  # jittered, so that members leave apart
        held = drive(p, event, log, a.id, lambda s, _, since: (s == PartitionState.ACQUIRED and
                                                              time.monotonic() - since >= hold)
                     or time.monotonic() > deadline)
        if held is None:
            raise SystemExit(f"round {r}: never ACQUIRED")
        leave(p, held, log, a.id)
        log.write(f"round kazoo {a.id} {r}\n")
        time.sleep(0.3 + (time.monotonic_ns() % 200) / 1000)  # > time_boundary: the rest divide without us
    p, event = member()
    logged = [None]
    deadline = time.monotonic() + 120

    def final(state, parts, _since):
        if state == PartitionState.ACQUIRED and logged[0] != parts:
            ids = party_ids(client, a.path)
            if len(set(ids)) == len(ids) == a.expect and parts == kazoo_share(a.id, ids, PARTS):
                log.write(f"final kazoo {a.id} {','.join(parts) or '-'}\n")
                open(os.path.join(a.peers, a.id), "w").close()
                logged[0] = parts
        return len(os.listdir(a.peers)) >= a.expect or time.monotonic() > deadline

    leave(p, drive(p, event, log, a.id, final), log, a.id)
    log.write(f"done kazoo {a.id} {a.iterations}\n")


def our_slot(client, path, me):
    """(slot, end as wall-clock ns) of the lease `me` just obtained, read from the holder nodes:
    the one of ours written last (an older one of ours may still be in another slot; the end is
    whole seconds, so it may even have passed by the time it is read). None when no holder node
    is ours any more: the lease ended before the read and another contender took it."""
    ours = []
    for i in range(2):
        try:
            raw, stat = client.get(f"{path}/{i}/lease_holder")
        except NoNodeError:
            continue
        data = json.loads(raw.decode("utf-8"))
        if data["holder"] == me:
            end = datetime.datetime.strptime(data["end"], "%Y-%m-%dT%H:%M:%S")
            ours.append((stat.czxid, i, calendar.timegm(end.timetuple()) * 10**9))
    if not ours:
        # Its end (whole seconds) came before this read, and another contender took the slot.
        return None
    _, slot, end = max(ours)
    return slot, end


def lease(client, a, log):
    got = 0
    duration = datetime.timedelta(seconds=1)
    deadline = time.monotonic() + 60
    while got < a.iterations and time.monotonic() < deadline:
        if not MultiNonBlockingLease(client, 2, a.path, duration, identifier=a.id):
            time.sleep(0.1)
            continue
        got += 1
        held = our_slot(client, a.path, a.id)
        if held is None:
            log.write(f"lapsed kazoo {a.id}\n")
            continue
        slot, end = held
        log.write(f"lease kazoo {a.id} {slot} {time.time_ns()} {end}\n")
        time.sleep(0.2)
        if time.time_ns() < end - 500_000_000:
            ok = bool(MultiNonBlockingLease(client, 2, a.path, duration, identifier=a.id))
            log.write(f"renew kazoo {a.id} {'ok' if ok else 'lost'} {time.time_ns()} {end}\n")
            held = our_slot(client, a.path, a.id) if ok else None
            if held is not None:
                slot, end = held
                log.write(f"lease kazoo {a.id} {slot} {time.time_ns()} {end}\n")
            elif ok:
                log.write(f"lapsed kazoo {a.id}\n")
        time.sleep(max(0, end - time.time_ns()) / 1e9 + 0.05 + (time.monotonic_ns() % 100) / 1000)
    log.write(f"done kazoo {a.id} {got}\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--role", required=True)
    p.add_argument("--connect", required=True)
    p.add_argument("--path", required=True)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--id", default="kazoo")
    p.add_argument("--log", default="/dev/null")
    p.add_argument("--go")
    p.add_argument("--expect", type=int, default=5)
    p.add_argument("--peers")
    a = p.parse_args()
    client = KazooClient(hosts=a.connect, timeout=30.0)
    client.start(timeout=15)
    try:
        with open(a.log, "a", buffering=1) as log:
            if a.go:
                log.write(f"ready kazoo {a.id}\n")
                while not os.path.exists(a.go):
                    time.sleep(BARRIER_POLL)
            if a.role == "partition":
                partition(client, a, log)
            elif a.role == "lease":
                lease(client, a, log)
            else:
                raise SystemExit(f"unknown role {a.role}")
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    main()
