"""Fault suite child (tests/faults, scenario 6): a lock holder that writes to a fenced resource
through the Python face. The protocol is in docs/FAULTS.md ("The fenced writer"): take the
lock (2 s session), print ZKR_CHILD_HELD, then loop "check the hold, work, write with my token"
until the check or the resource says the hold is gone; wait for the lost callback, release."""
import sys
import threading
import time

import zkrecipes

WORK, IDLE = 0.3, 0.3  # seconds between the check and the write, and after the write


def say(*words):
    # One write per line: the lost callback says SIGNAL from a library thread.
    sys.stdout.write("ZKR_CHILD_" + " ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


def on_lost(owner):
    say("SIGNAL")  # before the flag: the main thread says DONE only after it
    lost.set()


connect, path = sys.argv[1], sys.argv[2]
client = zkrecipes.Client(connect, session_timeout=2.0)
client.start()
mutex = zkrecipes.InterProcessMutex(client, path)
lost = threading.Event()
mutex.on_lost(on_lost)
if not mutex.acquire(timeout=30.0):
    sys.exit("fenced_writer.py: the lock was not acquired within 30 s")
token = mutex.fencing_token
say("HELD", token, client.session_id, mutex.lock_node())
n = 0
while True:
    if lost.is_set() or not mutex.is_held_valid():
        say("LOST", "callback" if lost.is_set() else "invalid")
        break
    n += 1
    say("CHECKED", n)
    time.sleep(WORK)
    say("WRITE", token, n)
    reply = sys.stdin.readline().split()
    if not reply:
        sys.exit(0)  # the parent (the resource) is gone
    if reply[0] != "OK":
        say("REJECTED", reply[1])
        break
    say("IDLE", n)
    time.sleep(IDLE)
if not lost.wait(30.0) or mutex.is_held_valid():
    sys.exit("fenced_writer.py: no lost callback within 30 s of learning the hold was gone")
say("DONE")
mutex.release()
client.close()
