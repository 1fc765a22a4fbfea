// Fault suite child (tests/faults): take an InterProcessMutex through the Node face, print
// `ZKR_CHILD_HELD <fencing token> <session id> <lock node>`, then hold it until killed (kill -9)
// or until stdin closes (the parent died).
'use strict';
const path = require('node:path');
const { Client, InterProcessMutex } = require(path.join(__dirname, '..', '..', '..', 'bindings-node'));

async function main() {
  const [connect, lockPath] = process.argv.slice(2);
  const client = await Client.connect(connect, { sessionTimeoutMs: 2000 });
  const mutex = new InterProcessMutex(client, lockPath);
  if (!(await mutex.acquire({ timeoutMs: 30000 }))) {
    throw new Error('hold_lock.js: the lock was not acquired within 30 s');
  }
  process.stdout.write(`ZKR_CHILD_HELD ${mutex.fencingToken} ${client.sessionId} ${mutex.lockNode}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
