"""Fault suite child (tests/faults/tests/queue.rs): an exactly-once queue consumer through the
Python face. Protocol: print ZKR_CHILD_READY; per item print ZKR_CHILD_WRITE DATA TOKEN and read
the fenced sink's answer (OK, or STALE HIGHEST); on OK complete the item and print
ZKR_CHILD_DONE DATA TOKEN (ZKR_CHILD_DONEFAIL DATA ERROR if it could not); after 5 s without an
item print ZKR_CHILD_FINISHED and exit."""
import sys

import zkrecipes


def say(*words):
    sys.stdout.write("ZKR_CHILD_" + " ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


connect, path = sys.argv[1], sys.argv[2]
client = zkrecipes.Client(connect, session_timeout=2.0)
client.start()
queue = zkrecipes.DistributedQueue(client, path, lock_path=path + "-locks")
say("READY")
for item in queue.consume(timeout=5.0):
    data, token = item.data.decode(), item.fencing_token
    say("WRITE", data, token)
    reply = sys.stdin.readline().split()
    if not reply:
        sys.exit(0)  # the parent (the sink) is gone
    if reply[0] != "OK":
        say("STALE", data)
        item.release()
        continue
    try:
        item.done()
        say("DONE", data, token)
    except zkrecipes.ZkRecipesError as e:
        say("DONEFAIL", data, type(e).__name__)
say("FINISHED")
client.close()
