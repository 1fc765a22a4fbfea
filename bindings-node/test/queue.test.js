// Barriers and queues against a real ZooKeeper: Curator's names and framing, exactly-once
// consumption with a lock path (a consumer whose session ends mid-item cannot complete it; the
// next taker gets a larger fencing token), the async iterator, the variants, barriers.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const {
  Client,
  DistributedBarrier,
  DistributedDoubleBarrier,
  SimpleDistributedQueue,
  DistributedQueue,
  DistributedIdQueue,
  DistributedPriorityQueue,
  DistributedDelayQueue,
} = require('..');
const { useZooKeeper, uniquePath, waitFor } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

test('SimpleDistributedQueue: FIFO of raw bytes, timeouts', async () => {
  const p = uniquePath('simple');
  const q = new SimpleDistributedQueue(client, p);
  assert.equal(await q.poll(), null);
  const node = await q.offer('one');
  assert.ok(node.startsWith(`${p}/qn-`));
  await q.offer(Buffer.from('two'));
  assert.deepEqual((await client.getData(node)).data, Buffer.from('one'));
  assert.deepEqual(await q.peek(), Buffer.from('one'));
  assert.deepEqual(await q.take(), Buffer.from('one'));
  assert.deepEqual(await q.take({ timeoutMs: 1000 }), Buffer.from('two'));
  const t0 = Date.now();
  assert.equal(await q.take({ timeoutMs: 200 }), null);
  assert.ok(Date.now() - t0 >= 190);
});

test('DistributedQueue: Curator framing, exactly once across consumers, fencing tokens', async () => {
  const p = uniquePath('queue');
  const lockPath = `${p}-locks`;
  const other = await Client.connect(zk.connectString, { sessionTimeoutMs: 10000 });
  try {
    const qa = new DistributedQueue(client, p, { lockPath });
    const qb = new DistributedQueue(other, p, { lockPath });
    assert.equal(await qa.put('hi'), true);
    const [name] = await client.getChildren(p);
    assert.ok(name.startsWith('queue-'));
    assert.deepEqual((await client.getData(`${p}/${name}`)).data, Buffer.from([0, 1, 0, 1, 1, 0, 0, 0, 2, 104, 105, 2]));
    const held = await qb.take({ timeoutMs: 1000 });
    assert.deepEqual(held.data, Buffer.from('hi'));
    assert.equal(typeof held.fencingToken, 'bigint');
    assert.equal(await qa.take({ timeoutMs: 200 }), null, 'a held item is not handed to another consumer');
    await other._expireSessionForTesting();
    const again = await qa.take({ timeoutMs: 10000 });
    assert.ok(again.fencingToken > held.fencingToken);
    await assert.rejects(held.done(), { code: 'ZKR_SESSION_EXPIRED' });
    await again.done();
    await assert.rejects(again.done(), { code: 'ZKR_INVALID_ARGUMENT' });
    assert.equal(await qa.length(), 0);
  } finally {
    await other.close();
  }
});

test('DistributedQueue: for await over consume(), release gives an item back', async () => {
  const p = uniquePath('iter');
  const q = new DistributedQueue(client, p, { lockPath: `${p}-locks` });
  for (let i = 0; i < 5; i++) await q.put(String(i));
  const first = await q.take();
  await first.release();
  const got = [];
  for await (const item of q.consume({ timeoutMs: 300 })) {
    got.push(item.data.toString());
    await item.done();
  }
  assert.deepEqual(got, ['0', '1', '2', '3', '4']);
});

test('giveBack without a lock path puts the item back with its priority', async () => {
  // The take removed the item: giveBack puts it back with its key, so it comes first again,
  // ahead of the lower priority (release() would have nothing to give back).
  const p = uniquePath('give-back-prio');
  const q = new DistributedPriorityQueue(client, p);
  await q.put('high', -5);
  await q.put('low', 50);
  const first = await q.take({ timeoutMs: 5000 });
  assert.equal(first.data.toString(), 'high');
  assert.equal(await first.giveBack(), undefined);
  const again = await q.take({ timeoutMs: 5000 });
  assert.equal(again.data.toString(), 'high', 'not back ahead of a lower priority');
  assert.notEqual(again.node, first.node);
  assert.ok(again.fencingToken > first.fencingToken);
  const next = await q.take({ timeoutMs: 5000 });
  assert.equal(next.data.toString(), 'low');
  assert.equal(await q.length(), 0);
});

test('giveBack with a lock path releases the item for another take', async () => {
  const p = uniquePath('give-back-locked');
  const lockPath = `${p}-locks`;
  const q = new DistributedQueue(client, p, { lockPath });
  await q.put('x');
  await q.put('y');
  const first = await q.take({ timeoutMs: 5000 });
  assert.equal(first.data.toString(), 'x');
  assert.equal((await client.getChildren(lockPath)).length, 1);
  await first.giveBack();
  assert.deepEqual(await client.getChildren(lockPath), [], 'our lock node is gone');
  const again = await q.take({ timeoutMs: 5000 });
  assert.equal(again.data.toString(), 'x', 'given back where it was: first again');
  assert.equal(again.node, first.node);
  assert.ok(again.fencingToken > first.fencingToken);
  await again.done();
  assert.equal(await q.length(), 1);
});

for (const locked of [false, true]) {
  test(`giveBack twice or after done() rejects as release() does (${locked ? 'with' : 'without'} a lock path)`, async () => {
    const p = uniquePath('give-back-twice');
    const q = new DistributedQueue(client, p, locked ? { lockPath: `${p}-locks` } : undefined);
    await q.put('a');
    await q.put('b');
    const given = await q.take({ timeoutMs: 5000 });
    await given.giveBack();
    const twice = await given.giveBack().then(() => null, (e) => e);
    const releaseAfter = await given.release().then(() => null, (e) => e);
    assert.equal(twice?.code, 'ZKR_INVALID_ARGUMENT');
    assert.equal(twice.message, releaseAfter?.message);
    const done = await q.take({ timeoutMs: 5000 });
    await done.done();
    const afterDone = await done.giveBack().then(() => null, (e) => e);
    const releaseAfterDone = await done.release().then(() => null, (e) => e);
    assert.equal(afterDone?.code, 'ZKR_INVALID_ARGUMENT');
    assert.equal(afterDone.message, releaseAfterDone?.message);
    // Nothing was given back or completed twice: one item left, the other one.
    assert.equal(await q.length(), 1);
    const left = await q.take({ timeoutMs: 5000 });
    assert.notDeepEqual(left.data, done.data);
    await left.done();
  });
}

test('variants: bounded puts, priorities, ids, delays; states are emitted', async () => {
  const p = uniquePath('variants');
  const bounded = new DistributedQueue(client, `${p}/bounded`, { maxItems: 1 });
  assert.equal(await bounded.put('1'), true);
  assert.equal(await bounded.put('2', { timeoutMs: 100 }), false);
  const prio = new DistributedPriorityQueue(client, `${p}/prio`);
  await prio.put('mid', 5);
  await prio.put('low', -3);
  const order = [];
  for await (const item of prio.consume({ timeoutMs: 200 })) order.push(item.data.toString());
  assert.deepEqual(order, ['low', 'mid']);
  const ids = new DistributedIdQueue(client, `${p}/ids`, { lockPath: `${p}/ids-locks` });
  await ids.put('a', 'job/1');
  await ids.put('b', 'job-2');
  assert.equal(await ids.remove('job/1'), 1);
  const item = await ids.take({ timeoutMs: 1000 });
  assert.equal(item.id, 'job-2');
  await item.done();
  await assert.rejects(ids.put('x', ''), { code: 'ZKR_INVALID_ARGUMENT' });
  const delay = new DistributedDelayQueue(client, `${p}/delay`);
  const due = Date.now() + 300;
  await delay.put('later', new Date(due));
  assert.equal(await delay.take({ timeoutMs: 0 }), null);
  assert.ok(await delay.take({ timeoutMs: 10000 }));
  assert.ok(Date.now() >= due);
  assert.throws(() => new DistributedQueue(client, p, { lockpath: '/x' }), { code: 'ZKR_INVALID_ARGUMENT' });
  const c = await Client.connect(zk.connectString, { sessionTimeoutMs: 10000 });
  try {
    const q = new DistributedQueue(c, p);
    const states = [];
    q.on('state', (s) => states.push(s));
    await c._expireSessionForTesting();
    await waitFor(() => states.includes('LOST'), { timeoutMs: 20000, what: 'LOST emitted by the queue' });
  } finally {
    await c.close();
  }
});

test('barriers: a barrier holds until removed; three members enter and leave together', async () => {
  const p = uniquePath('barrier');
  const b = new DistributedBarrier(client, p);
  await b.setBarrier();
  assert.equal(await b.waitOnBarrier({ timeoutMs: 100 }), false);
  const waiting = b.waitOnBarrier();
  await b.removeBarrier();
  assert.equal(await waiting, true);
  const lone = new DistributedDoubleBarrier(client, `${p}-double`, 3);
  assert.equal(await lone.enter({ timeoutMs: 200 }), false);
  const clients = await Promise.all([0, 1, 2].map(() => Client.connect(zk.connectString)));
  try {
    const members = clients.map((c) => new DistributedDoubleBarrier(c, `${p}-double`, 3));
    assert.deepEqual(await Promise.all(members.map((m) => m.enter({ timeoutMs: 30000 }))), [true, true, true]);
    assert.deepEqual(await Promise.all(members.map((m) => m.leave({ timeoutMs: 30000 }))), [true, true, true]);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  assert.throws(() => new DistributedDoubleBarrier(client, p, -1), { code: 'ZKR_INVALID_ARGUMENT' });
});
