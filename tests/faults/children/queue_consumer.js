// Fault suite child (tests/faults/tests/queue.rs): an exactly-once queue consumer through the
// Node face; the protocol is queue_consumer.py's (READY, WRITE DATA TOKEN -> OK | STALE,
// DONE DATA TOKEN | DONEFAIL DATA CODE, FINISHED after 5 s without an item).
'use strict';
const path = require('node:path');
const readline = require('node:readline');
const { Client, DistributedQueue } = require(path.join(__dirname, '..', '..', '..', 'bindings-node'));

const say = (...words) => process.stdout.write(`ZKR_CHILD_${words.join(' ')}\n`);
const replies = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function main() {
  const [connect, queuePath] = process.argv.slice(2);
  const client = await Client.connect(connect, { sessionTimeoutMs: 2000 });
  const queue = new DistributedQueue(client, queuePath, { lockPath: `${queuePath}-locks` });
  say('READY');
  for await (const item of queue.consume({ timeoutMs: 5000 })) {
    const data = item.data.toString();
    say('WRITE', data, item.fencingToken);
    const reply = await replies.next();
    if (reply.done) process.exit(0); // the parent (the sink) is gone
    if (!reply.value.startsWith('OK')) {
      say('STALE', data);
      await item.release();
      continue;
    }
    try {
      await item.done();
      say('DONE', data, item.fencingToken);
    } catch (err) {
      say('DONEFAIL', data, err.code);
    }
  }
  say('FINISHED');
  await client.close();
  process.exit(0);
}

main().catch((err) => {
  console.error('queue_consumer.js:', err);
  process.exit(1);
});
