// SharedValue, DistributedAtomicValue, CachedAtomicLong/Integer and the InterProcessSemaphoreV2
// whose max leases come from a SharedCount (issue 32), against a real ZooKeeper.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const {
  Client,
  SharedValue,
  SharedCount,
  DistributedAtomicValue,
  DistributedAtomicLong,
  DistributedAtomicInteger,
  CachedAtomicLong,
  CachedAtomicInteger,
  InterProcessSemaphoreV2,
  RetryNTimes,
  ConnectionState,
} = require('..');
const { useZooKeeper, uniquePath, waitFor } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

async function withClients(n, fn) {
  const clients = await Promise.all(Array.from({ length: n }, () => Client.connect(zk.connectString)));
  try {
    return await fn(clients);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}

test('SharedValue: bytes, versioned sets, change events', async () => {
  const p = uniquePath('shared-value');
  await withClients(2, async ([a, b]) => {
    const va = new SharedValue(a, p, 'seed');
    assert.deepEqual(va.getVersionedValue(), { version: -1, value: Buffer.from('seed') });
    await assert.rejects(va.setValue('x'), { code: 'ZKR_INVALID_ARGUMENT' });
    await va.start();
    assert.deepEqual((await a.getData(p)).data, Buffer.from('seed'));
    const vb = new SharedValue(b, p, Buffer.from('other'));
    const heard = [];
    vb.on('change', (value, version) => heard.push([value.toString(), version]));
    await vb.start();
    assert.deepEqual(vb.getValue(), Buffer.from('seed'));
    const seen = va.getVersionedValue();
    assert.equal(await va.trySetValue(seen, 'one'), true);
    await waitFor(() => heard.some(([v]) => v === 'one'), { what: 'b hears one' });
    assert.deepEqual(heard.find(([v]) => v === 'one'), ['one', 1]);
    assert.equal(await va.trySetValue(seen, 'stale'), false);
    assert.deepEqual((await a.getData(p)).data, Buffer.from('one'));
    await vb.setValue(new Uint8Array([0, 255]));
    await waitFor(() => va.getValue().equals(Buffer.from([0, 255])), { what: 'a sees the bytes' });
    await assert.rejects(va.trySetValue({ version: 'x', value: 'a' }, 'b'), { code: 'ZKR_INVALID_ARGUMENT' });
    await assert.rejects(va.setValue(42), { code: 'ZKR_INVALID_ARGUMENT' });
    vb.close();
    await assert.rejects(vb.setValue('after'), { code: 'ZKR_CLOSED' });
    va.close();
  });
});

test('SharedValue: every try_set_value increment counts once', async () => {
  const p = uniquePath('shared-value-increments');
  const per = 15;
  await withClients(4, async (clients) => {
    await Promise.all(
      clients.map(async (c) => {
        const v = new SharedValue(c, p, '0');
        await v.start();
        let done = 0;
        while (done < per) {
          const seen = v.getVersionedValue();
          if (await v.trySetValue(seen, String(Number(seen.value.toString()) + 1))) done++;
        }
        v.close();
      }),
    );
    assert.equal(Number((await client.getData(p)).data.toString()), 4 * per);
  });
});

test('SharedValue: hears connection states, and changes after a session expiry', async () => {
  const p = uniquePath('shared-value-expiry');
  await withClients(2, async ([a, b]) => {
    const va = new SharedValue(a, p, 'a');
    const states = [];
    const values = [];
    va.on('state', (s) => states.push(s));
    va.on('change', (v) => values.push(v.toString()));
    await va.start();
    const vb = new SharedValue(b, p);
    await vb.start();
    await a._expireSessionForTesting();
    await waitFor(() => states.includes(ConnectionState.LOST) && states.at(-1) === ConnectionState.RECONNECTED, {
      timeoutMs: 30000,
      what: 'LOST then RECONNECTED',
    });
    await vb.setValue('after expiry');
    await waitFor(() => values.includes('after expiry'), { timeoutMs: 20000, what: 'a hears the new value' });
    va.close();
    vb.close();
  });
});

test("DistributedAtomicValue: Curator's semantics, Buffers and null", async () => {
  const p = uniquePath('atomic-value');
  const v = new DistributedAtomicValue(client, p);
  const got = await v.get();
  assert.equal(got.succeeded, true);
  assert.equal(got.preValue, null);
  assert.equal(got.postValue, null);
  assert.equal((await v.compareAndSet('', 'x')).succeeded, false);
  assert.equal(await v.initialize('start'), true);
  assert.equal(await v.initialize('again'), false);
  const miss = await v.compareAndSet('star', 'no');
  assert.equal(miss.succeeded, false);
  assert.deepEqual(miss.preValue, Buffer.from('start'));
  assert.equal(miss.postValue, null);
  const hit = await v.compareAndSet(Buffer.from('start'), 'next');
  assert.equal(hit.succeeded, true);
  assert.deepEqual([hit.preValue.toString(), hit.postValue.toString()], ['start', 'next']);
  const tried = await v.trySet('tried');
  assert.equal(tried.succeeded, true);
  assert.equal(tried.stats.optimisticTries, 1);
  await v.forceSet('forced');
  assert.deepEqual((await client.getData(p)).data, Buffer.from('forced'));
  // Curator's 8-byte long, as bytes.
  const counter = new DistributedAtomicLong(client, `${p}-long`);
  await counter.forceSet(41n);
  const asBytes = new DistributedAtomicValue(client, `${p}-long`);
  const b41 = Buffer.alloc(8);
  b41.writeBigInt64BE(41n);
  const b42 = Buffer.alloc(8);
  b42.writeBigInt64BE(42n);
  assert.equal((await asBytes.compareAndSet(b41, b42)).succeeded, true);
  assert.equal((await counter.get()).postValue, 42n);
  // Bad input.
  assert.throws(() => new DistributedAtomicValue(client, 'no-slash'), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new DistributedAtomicValue(client, p, { promotedToLock: { lockPath: p } }), {
    code: 'ZKR_INVALID_ARGUMENT',
  });
  assert.throws(() => new DistributedAtomicValue(client, p, { retries: 1 }), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(v.trySet(7), { code: 'ZKR_INVALID_ARGUMENT' });
});

test('DistributedAtomicValue: compare-and-set increments across clients are exact, promoted too', async () => {
  const p = uniquePath('atomic-value-cas');
  const per = 15;
  await new DistributedAtomicValue(client, p).initialize('0');
  await withClients(4, async (clients) => {
    await Promise.all(
      clients.map(async (c, i) => {
        const options =
          i % 2 === 0
            ? { retry: new RetryNTimes(0, 0) }
            : { retry: new RetryNTimes(0, 0), promotedToLock: { lockPath: `${p}-lock`, timeoutMs: 10000 } };
        const v = new DistributedAtomicValue(c, p, options);
        let done = 0;
        while (done < per) {
          const now = (await v.get()).postValue;
          if ((await v.compareAndSet(now, String(Number(now.toString()) + 1))).succeeded) done++;
        }
      }),
    );
  });
  assert.equal(Number((await client.getData(p)).data.toString()), 4 * per);
});

test('CachedAtomicLong / CachedAtomicInteger: no id handed out twice', async () => {
  const p = uniquePath('cached');
  const ids = [];
  await withClients(3, async (clients) => {
    await Promise.all(
      clients.map(async (c, i) => {
        const cached = new CachedAtomicLong(new DistributedAtomicLong(c, p), 5 + i);
        await Promise.all(
          [0, 1].map(async () => {
            let mine = 0;
            while (mine < 30) {
              const v = await cached.next();
              if (v.succeeded) {
                assert.equal(v.postValue, v.preValue + 1n);
                ids.push(v.postValue);
                mine++;
              }
            }
          }),
        );
      }),
    );
  });
  assert.equal(ids.length, 180);
  assert.equal(new Set(ids).size, 180);
  const int = new DistributedAtomicInteger(client, `${p}-int`);
  const ci = new CachedAtomicInteger(int, 3);
  assert.equal(ci.counter, int);
  const got = [];
  for (let i = 0; i < 4; i++) got.push((await ci.next()).postValue);
  assert.deepEqual(got, [1, 2, 3, 4]);
  assert.equal((await int.get()).postValue, 6);
  assert.throws(() => new CachedAtomicLong(new DistributedAtomicLong(client, p), 0), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new CachedAtomicLong(int, 3), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new CachedAtomicInteger(int, 1.5), { code: 'ZKR_INVALID_ARGUMENT' });
});

test('InterProcessSemaphoreV2 { count }: the limit follows a SharedCount live', async () => {
  const p = uniquePath('semcount');
  await withClients(3, async (clients) => {
    const counts = clients.map((c) => new SharedCount(c, `${p}-max`, 1));
    await Promise.all(counts.map((n) => n.start()));
    const sems = clients.map((c, i) => new InterProcessSemaphoreV2(c, p, { count: counts[i] }));
    assert.equal(sems[0].maxLeases, 1);
    const first = await sems[0].acquire({ timeoutMs: 20000 });
    assert.equal(first.length, 1);
    assert.equal(await sems[1].acquire({ timeoutMs: 300 }), null);
    const second = sems[1].acquire({ timeoutMs: 30000 });
    await waitFor(async () => (await sems[0].participantNodes()).length === 2, { what: 'the second waits' });
    await counts[2].setCount(2);
    const got = await second;
    assert.equal(got.length, 1, 'admitted once the count was raised');
    await counts[2].setCount(1);
    await waitFor(() => sems.every((s) => s.maxLeases === 1), { what: 'every semaphore sees 1' });
    await sems[0].returnAll(first);
    assert.equal(await sems[2].acquire({ timeoutMs: 500 }), null, 'one held with a limit of 1');
    await sems[1].returnAll(got);
    const third = await sems[2].acquire({ timeoutMs: 20000 });
    assert.equal(third.length, 1);
    await sems[2].returnAll(third);
    // More than the count waits (the count may be raised) instead of being refused.
    assert.equal(await sems[0].acquire({ qty: 2, timeoutMs: 300 }), null);
    assert.throws(() => new InterProcessSemaphoreV2(client, p, { count: 3 }), { code: 'ZKR_INVALID_ARGUMENT' });
    assert.throws(() => new InterProcessSemaphoreV2(client, p, { cont: counts[0] }), { code: 'ZKR_INVALID_ARGUMENT' });
    counts.forEach((n) => n.close());
  });
});
