// Fault suite child (tests/faults, scenario 6): a lock holder that writes to a fenced resource
// through the Node face. The protocol is in docs/FAULTS.md ("The fenced writer"): take the lock
// (2 s session), print ZKR_CHILD_HELD, then loop "check the hold, work, write with my token"
// until the check or the resource says the hold is gone; wait for the 'lost' event, release.
'use strict';
const path = require('node:path');
const readline = require('node:readline');
const { setTimeout: sleep } = require('node:timers/promises');
const { Client, InterProcessMutex } = require(path.join(__dirname, '..', '..', '..', 'bindings-node'));

const WORK_MS = 300; // between the check and the write
const IDLE_MS = 300; // after the write

const say = (...words) => process.stdout.write(`ZKR_CHILD_${words.join(' ')}\n`);
const replies = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function main() {
  const [connect, lockPath] = process.argv.slice(2);
  const client = await Client.connect(connect, { sessionTimeoutMs: 2000 });
  const mutex = new InterProcessMutex(client, lockPath);
  let lost = false;
  mutex.on('lost', () => {
    say('SIGNAL');
    lost = true;
  });
  if (!(await mutex.acquire({ timeoutMs: 30000 }))) {
    throw new Error('fenced_writer.js: the lock was not acquired within 30 s');
  }
  const token = mutex.fencingToken;
  say('HELD', token, client.sessionId, mutex.lockNode);
  for (let n = 1; ; n++) {
    if (lost || !mutex.isHeldValid()) {
      say('LOST', lost ? 'callback' : 'invalid');
      break;
    }
    say('CHECKED', n);
    await sleep(WORK_MS);
    say('WRITE', token, n);
    const { value, done } = await replies.next();
    if (done) process.exit(0); // the parent (the resource) is gone
    const reply = value.split(' ');
    if (reply[0] !== 'OK') {
      say('REJECTED', reply[1]);
      break;
    }
    say('IDLE', n);
    await sleep(IDLE_MS);
  }
  for (const deadline = Date.now() + 30000; !lost || mutex.isHeldValid(); await sleep(10)) {
    if (Date.now() > deadline) throw new Error('fenced_writer.js: no lost event within 30 s of learning the hold was gone');
  }
  say('DONE');
  await mutex.release();
  await client.close();
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
