"""Fault suite child (tests/faults): take an InterProcessMutex through the Python face, print
`ZKR_CHILD_HELD <fencing token> <session id> <lock node>`, then hold it until killed (kill -9)
or until stdin closes (the parent died)."""
import sys

import zkrecipes

connect, path = sys.argv[1], sys.argv[2]
client = zkrecipes.Client(connect, session_timeout=2.0)
client.start()
mutex = zkrecipes.InterProcessMutex(client, path)
if not mutex.acquire(timeout=30.0):
    sys.exit("hold_lock.py: the lock was not acquired within 30 s")
print("ZKR_CHILD_HELD", mutex.fencing_token, client.session_id, mutex.lock_node(), flush=True)
sys.stdin.read()
