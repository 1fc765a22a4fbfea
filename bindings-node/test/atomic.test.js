// DistributedAtomicLong / DistributedAtomicInteger / SharedCount against a real ZooKeeper:
// the seed scenario (10 x 100 increments = 1000), BigInt mapping, and change events.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const { Client, DistributedAtomicLong, DistributedAtomicInteger, SharedCount, RetryNTimes } = require('..');
const { useZooKeeper, uniquePath, waitFor, nextEvent } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

test('seed: 10 clients x 100 increments = 1000, no increment lost or hidden', async () => {
  const counterPath = uniquePath('seed-counter');
  const clients = await Promise.all(Array.from({ length: 10 }, () => Client.connect(zk.connectString)));
  try {
    const results = await Promise.all(
      clients.map(async (c) => {
        const counter = new DistributedAtomicLong(c, counterPath);
        const seen = [];
        for (let i = 0; i < 100; i++) seen.push(await counter.addAndGet(1));
        return seen;
      }),
    );
    const all = results.flat();
    assert.equal(all.length, 1000);
    // Every increment got its own new value: exactly 1..1000, each once.
    assert.deepEqual(
      [...all].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      Array.from({ length: 1000 }, (_, i) => BigInt(i + 1)),
    );
    for (const seen of results) {
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], 'one worker sees its values grow');
    }
    const value = await new DistributedAtomicLong(client, counterPath).get();
    assert.deepEqual({ succeeded: value.succeeded, preValue: value.preValue, postValue: value.postValue }, {
      succeeded: true,
      preValue: 1000n,
      postValue: 1000n,
    });
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
});

test('DistributedAtomicLong: BigInt in and out, Curator-style AtomicValues', async () => {
  const p = uniquePath('long');
  const counter = new DistributedAtomicLong(client, p);
  assert.equal(counter.path, p);
  assert.equal(await counter.addAndGet(1), 1n);
  const got = await counter.get();
  assert.equal(got.succeeded, true);
  assert.equal(got.preValue, 1n);
  assert.equal(got.postValue, 1n);
  assert.equal(typeof got.stats.optimisticTries, 'number');
  const added = await counter.add(41n);
  assert.deepEqual([added.succeeded, added.preValue, added.postValue], [true, 1n, 42n]);
  assert.equal((await counter.subtract(2)).postValue, 40n);
  assert.equal((await counter.increment()).postValue, 41n);
  assert.equal((await counter.decrement()).postValue, 40n);
  const big = 2n ** 62n;
  await counter.forceSet(big);
  assert.equal((await counter.get()).postValue, big, 'values beyond 2^53 survive');
  const cas = await counter.compareAndSet(big, -5n);
  assert.equal(cas.succeeded, true);
  const stale = await counter.compareAndSet(big, 7);
  assert.equal(stale.succeeded, false, 'compareAndSet with a stale expected value fails');
  assert.equal((await counter.trySet(9)).succeeded, true);
  assert.equal((await counter.get()).postValue, 9n);
  assert.equal(await counter.initialize(100), false, 'initialize on an existing node');
  const fresh = new DistributedAtomicLong(client, uniquePath('long-init'), { retry: new RetryNTimes(3, 10) });
  assert.equal(await fresh.initialize(100n), true);
  assert.equal((await fresh.get()).postValue, 100n);
});

test('DistributedAtomicLong: addAndGet reports overflow; bad values reject with ZKR_INVALID_ARGUMENT', async () => {
  const counter = new DistributedAtomicLong(client, uniquePath('overflow'));
  await counter.forceSet(2n ** 63n - 1n);
  await assert.rejects(counter.addAndGet(1), { code: 'ZKR_OVERFLOW' });
  // Curator's add wraps silently; ours refuses and leaves the counter as it was.
  await assert.rejects(counter.add(1), { code: 'ZKR_OVERFLOW' });
  await assert.rejects(counter.increment(), { code: 'ZKR_OVERFLOW' });
  await counter.forceSet(-(2n ** 63n));
  await assert.rejects(counter.subtract(1n), { code: 'ZKR_OVERFLOW' });
  await assert.rejects(counter.decrement(), { code: 'ZKR_OVERFLOW' });
  assert.equal((await counter.get()).postValue, -(2n ** 63n), 'unchanged');
  const small = new DistributedAtomicInteger(client, uniquePath('overflow-int'));
  await small.forceSet(2147483647);
  await assert.rejects(small.add(1), { code: 'ZKR_OVERFLOW' });
  assert.equal((await small.get()).postValue, 2147483647, 'unchanged');
  const bad = { code: 'ZKR_INVALID_ARGUMENT' };
  await assert.rejects(counter.addAndGet(1.5), bad);
  await assert.rejects(counter.addAndGet('1'), bad);
  await assert.rejects(counter.addAndGet(2n ** 64n), bad);
  await assert.rejects(counter.addAndGet(Number.MAX_SAFE_INTEGER + 2), bad);
  await assert.rejects(counter.addAndGet(1, { timeoutMs: -1 }), bad);
  await assert.rejects(counter.add(), bad);
  assert.throws(() => new DistributedAtomicLong(client, 'x'), bad);
  assert.throws(() => new DistributedAtomicLong(client, '/x', { retry: 3 }), bad);
  assert.throws(() => new DistributedAtomicLong(client, '/x', { promotedToLock: { lockPath: 'rel' } }), bad);
});

test('DistributedAtomicLong reads a corrupted node as ZKR_CORRUPTED_DATA naming the path', async () => {
  const p = uniquePath('corrupt');
  await client.create(p, Buffer.from([1, 2, 3]), { createParents: true });
  const counter = new DistributedAtomicLong(client, p);
  await assert.rejects(counter.get(), (err) => err.code === 'ZKR_CORRUPTED_DATA' && err.message.includes(p));
});

test('DistributedAtomicInteger: numbers in and out, with promotion to a lock', async () => {
  const counter = new DistributedAtomicInteger(client, uniquePath('int'), {
    promotedToLock: { lockPath: uniquePath('int-lock'), timeoutMs: 5000 },
  });
  assert.equal(await counter.addAndGet(5), 5);
  const v = await counter.add(-2);
  assert.deepEqual([v.succeeded, v.preValue, v.postValue], [true, 5, 3]);
  await assert.rejects(counter.addAndGet(5n), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(counter.addAndGet(2 ** 31), { code: 'ZKR_INVALID_ARGUMENT' });
});

test("SharedCount: 'change' events reach every client; trySetCount is versioned", async () => {
  const p = uniquePath('shared');
  const other = await Client.connect(zk.connectString);
  try {
    const a = new SharedCount(client, p, 7);
    const b = new SharedCount(other, p, 0);
    assert.equal(a.count, 7, 'the seed before start');
    assert.equal(a.path, p);
    await a.start();
    await b.start();
    assert.equal(b.count, 7, 'the node was created with the first seed');
    const change = nextEvent(b, 'change');
    await a.setCount(11);
    const [value, version] = await change;
    assert.equal(value, 11);
    assert.equal(typeof version, 'number');
    await waitFor(() => b.count === 11, { what: 'b to see 11' });
    const seen = b.getVersionedValue();
    assert.deepEqual(seen, { version, value: 11 });
    assert.equal(await b.trySetCount(seen, 12), true);
    await waitFor(() => a.count === 12, { what: 'a to see 12' });
    assert.equal(await b.trySetCount(seen, 13), false, 'a stale version is refused');
    await assert.rejects(a.setCount(1.5), { code: 'ZKR_INVALID_ARGUMENT' });
    await assert.rejects(a.start(), { code: 'ZKR_INVALID_ARGUMENT' }, 'started twice');
    a.close();
    b.close();
    await assert.rejects(a.setCount(1), { code: 'ZKR_CLOSED' });
  } finally {
    await other.close();
  }
});

test("SharedCount: data that is not a count is ZKR_CORRUPTED_DATA (an 'error' event, and the getters throw) until a valid value returns", async () => {
  const p = uniquePath('shared-corrupt');
  const count = new SharedCount(client, p, 5);
  await count.start();
  const error = nextEvent(count, 'error');
  await client.setData(p, Buffer.from([1, 2, 3]));
  const err = await error;
  assert.equal(err.code, 'ZKR_CORRUPTED_DATA');
  assert.equal(err.version, 1);
  assert.ok(err.message.includes(p), err.message);
  assert.throws(() => count.count, { code: 'ZKR_CORRUPTED_DATA' });
  assert.throws(() => count.getCount(), { code: 'ZKR_CORRUPTED_DATA' });
  assert.throws(() => count.getVersionedValue(), { code: 'ZKR_CORRUPTED_DATA' });
  // A valid value written again: the count is back, with a 'change'.
  const change = nextEvent(count, 'change');
  await client.setData(p, Buffer.from([0, 0, 0, 9]));
  assert.deepEqual(await change, [9, 2]);
  assert.equal(count.count, 9);
  count.close();
});
