// Queue extras (issue 32) against a real ZooKeeper: putMulti in Curator's framing, 'put' events
// (Curator's QueuePutListener), error modes (REQUEUE at the tail, DELETE) and the QueueSharder.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const {
  Client,
  DistributedQueue,
  DistributedIdQueue,
  DistributedPriorityQueue,
  DistributedDelayQueue,
  QueueSharder,
} = require('..');
const { useZooKeeper, uniquePath, waitFor, nextEvent, childrenLeft } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

function curatorFraming(...messages) {
  const parts = [Buffer.from([0, 1, 0, 1])];
  for (const m of messages) {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(m.length);
    parts.push(Buffer.from([1]), len, Buffer.from(m));
  }
  parts.push(Buffer.from([2]));
  return Buffer.concat(parts);
}

test('putMulti: one node in Curator framing, messages handed out together', async () => {
  const p = uniquePath('pm');
  const q = new DistributedQueue(client, p, { lockPath: `${p}-locks` });
  assert.equal(await q.putMulti(['a', Buffer.alloc(0), new Uint8Array([99, 99])]), true);
  const [name] = await client.getChildren(p);
  assert.deepEqual((await client.getData(`${p}/${name}`)).data, curatorFraming('a', '', 'cc'));
  const item = await q.take({ timeoutMs: 5000 });
  assert.deepEqual(item.messages, [Buffer.from('a'), Buffer.alloc(0), Buffer.from('cc')]);
  await item.done();
  await assert.rejects(q.putMulti([]), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(q.putMulti('not an array'), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(q.putMulti(['ok', 7]), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.equal(typeof new DistributedIdQueue(client, p).putMulti, 'undefined');

  const pq = new DistributedPriorityQueue(client, `${p}/prio`);
  await pq.putMulti(['l1', 'l2'], 5);
  await pq.putMulti(['e'], -5);
  const first = await pq.take({ timeoutMs: 5000 });
  assert.deepEqual(first.messages, [Buffer.from('e')]);
  const second = await pq.take({ timeoutMs: 5000 });
  assert.deepEqual(second.messages, [Buffer.from('l1'), Buffer.from('l2')]);
  await assert.rejects(pq.putMulti(['x'], 1.5), { code: 'ZKR_INVALID_ARGUMENT' });

  const dq = new DistributedDelayQueue(client, `${p}/delay`);
  const due = Date.now() + 400;
  await dq.putMulti(['d1', 'd2'], new Date(due));
  const d = await dq.take({ timeoutMs: 20000 });
  assert.ok(Date.now() >= due - 5);
  assert.deepEqual(d.messages, [Buffer.from('d1'), Buffer.from('d2')]);
});

test("put events: every completed put, with Curator's putCompleted / putMultiCompleted split", async () => {
  const p = uniquePath('puts');
  const q = new DistributedQueue(client, p, { lockPath: `${p}-locks`, maxItems: 2 });
  const heard = [];
  const listener = (e) => heard.push(e);
  q.addPutListener(listener);
  await q.put('one');
  await q.putMulti(['two', 'three']);
  await waitFor(() => heard.length === 2, { what: 'two put events' });
  assert.deepEqual(heard[0].messages, [Buffer.from('one')]);
  assert.equal(heard[0].multi, false);
  assert.deepEqual(heard[1].messages, [Buffer.from('two'), Buffer.from('three')]);
  assert.equal(heard[1].multi, true);
  const names = (await client.getChildren(p)).map((n) => `${p}/${n}`).sort();
  assert.deepEqual(heard.map((e) => e.node).sort(), names);
  assert.equal(await q.put('no room', { timeoutMs: 100 }), false);
  q.removePutListener(listener);
  const item = await q.take({ timeoutMs: 5000 });
  await item.done();
  const sentinel = nextEvent(q, 'put');
  await q.put('later');
  assert.deepEqual((await sentinel).messages, [Buffer.from('later')]);
  assert.equal(heard.length, 2, 'a removed listener heard a put');
  assert.throws(() => q.addPutListener('nope'), { code: 'ZKR_INVALID_ARGUMENT' });
  q.close();
});

test('error modes: a failed item is requeued at the tail, or deleted', async () => {
  const p = uniquePath('em');
  const q = new DistributedQueue(client, p, { lockPath: `${p}-locks` });
  assert.equal(q.errorMode, 'REQUEUE');
  await q.put('a');
  await q.put('b');
  const a = await q.take({ timeoutMs: 5000 });
  const firstNode = a.node;
  await a.fail();
  assert.ok(!(await client.getChildren(p)).includes(firstNode));
  // No lock left (the lock parent is a container: it may be reaped already).
  assert.deepEqual(await childrenLeft(client, `${p}-locks`), []);
  const b = await q.take({ timeoutMs: 5000 });
  assert.deepEqual(b.data, Buffer.from('b'));
  await b.done();
  const again = await q.take({ timeoutMs: 5000 });
  assert.deepEqual(again.data, Buffer.from('a'));
  q.errorMode = 'DELETE';
  assert.equal(q.errorMode, 'DELETE');
  await again.fail();
  assert.equal(await q.length(), 0);
  await assert.rejects(again.fail(), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => { q.errorMode = 'RETRY'; }, { code: 'ZKR_INVALID_ARGUMENT' });
  const plain = new DistributedQueue(client, p);
  assert.throws(() => { plain.errorMode = 'DELETE'; }, { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new DistributedQueue(client, p, { errorMode: 'DELETE' }), { code: 'ZKR_INVALID_ARGUMENT' });
  const d = new DistributedQueue(client, p, { lockPath: `${p}-locks`, errorMode: 'DELETE' });
  assert.equal(d.errorMode, 'DELETE');
  q.close();
  plain.close();
  d.close();
});

test('error modes: a consumer whose session ended fails nothing; the item is taken once', async () => {
  const p = uniquePath('em-expire');
  const doomed = await Client.connect(zk.connectString, { sessionTimeoutMs: 10000 });
  try {
    const q = new DistributedQueue(doomed, p, { lockPath: `${p}-locks` });
    await q.put('only');
    const held = await q.take({ timeoutMs: 5000 });
    await doomed._expireSessionForTesting();
    await assert.rejects(held.fail(), { code: 'ZKR_SESSION_EXPIRED' });
    const q2 = new DistributedQueue(client, p, { lockPath: `${p}-locks` });
    const again = await q2.take({ timeoutMs: 20000 });
    assert.deepEqual(again.data, Buffer.from('only'));
    await again.done();
    assert.equal(await q2.take({ timeoutMs: 200 }), null);
    q.close();
    q2.close();
  } finally {
    await doomed.close();
  }
});

test('QueueSharder: shards added past the threshold, every item taken once', async () => {
  const p = uniquePath('sharder');
  const other = await Client.connect(zk.connectString, { sessionTimeoutMs: 10000 });
  const options = { lockPath: `${p}-locks`, newQueueThreshold: 5, thresholdCheckMs: 100, maxQueues: 3 };
  const a = new QueueSharder(client, `${p}/queues`, `${p}/leader`, options);
  const b = new QueueSharder(other, `${p}/queues`, `${p}/leader`, options);
  try {
    assert.throws(() => a.getQueue(), { code: 'ZKR_INVALID_ARGUMENT' });
    await a.start();
    await b.start();
    assert.equal(a.shardQty, 1);
    assert.deepEqual(b.queuePaths, a.queuePaths);
    assert.ok(a.queuePaths[0].startsWith(`${p}/queues/queue-`));
    await waitFor(() => a.isLeader !== b.isLeader, { timeoutMs: 30000, what: 'one leader' });
    for (let i = 0; i < 30; i++) {
      const q = (i % 2 ? a : b).getQueue();
      assert.equal(await q.put(`item-${i}`), true);
      q.close();
      if (i % 10 === 9) {
        const want = Math.min(Math.floor(i / 10) + 2, 3);
        // The leader adds a shard at every check while one is at the threshold (as Curator's).
        await waitFor(() => a.shardQty >= want && b.shardQty >= want, { timeoutMs: 30000, what: `${want} shards` });
      }
    }
    const seen = [];
    await Promise.all([a, b].map(async (s) => {
      for await (const item of s.consume({ timeoutMs: 2000 })) {
        seen.push(item.data.toString());
        await item.done();
      }
    }));
    assert.equal(a.shardQty, 3);
    assert.equal(b.shardQty, 3);
    assert.deepEqual(seen.sort(), Array.from({ length: 30 }, (_, i) => `item-${i}`).sort());
    assert.equal((await client.getChildren(`${p}/queues`)).length, 3);
  } finally {
    await a.close();
    await b.close();
    await other.close();
  }
  assert.throws(() => a.getQueue(), { code: 'ZKR_CLOSED' });
  assert.throws(() => new QueueSharder(client, p, p), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new QueueSharder(client, p, `${p}-l`, { maxQueue: 1 }), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new QueueSharder(client, p, `${p}-l`, { errorMode: 'DELETE' }), { code: 'ZKR_INVALID_ARGUMENT' });
});

test('QueueSharder: an item given back (giveBack) is taken again', async () => {
  // Without a lock path the take removed the item from its shard: giveBack puts it back.
  const p = uniquePath('sharder-give-back');
  const s = new QueueSharder(client, `${p}/queues`, `${p}/leader`);
  try {
    await s.start();
    const q = s.getQueue();
    assert.equal(await q.put('x'), true);
    q.close();
    const first = await s.take({ timeoutMs: 5000 });
    assert.equal(first.data.toString(), 'x');
    await first.giveBack();
    await assert.rejects(first.giveBack(), { code: 'ZKR_INVALID_ARGUMENT' });
    const again = await s.take({ timeoutMs: 5000 });
    assert.ok(again, 'the item given back is taken again');
    assert.equal(again.data.toString(), 'x');
    await again.done();
    assert.equal(await s.take({ timeoutMs: 0 }), null);
  } finally {
    await s.close();
  }
});
