// kazoo's recipes against a real ZooKeeper: SetPartitioner (kazoo's loop, 'state' events,
// kazoo's layout, a member leaving, session loss), NonBlockingLease and MultiNonBlockingLease
// (held until the end, renewed by the holder, the holder's JSON byte for byte, at most count).
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const { Client, PartitionState, SetPartitioner, NonBlockingLease, MultiNonBlockingLease } = require('..');
const { useZooKeeper, uniquePath, waitFor } = require('./helpers');
const { keptFor } = require('../lib/alive');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

const bad = { code: 'ZKR_INVALID_ARGUMENT' };
const fast = { timeBoundaryMs: 300, maxReactionTimeMs: 200 };

// kazoo's default partition_func, written out.
function expected(id, members, parts) {
  const workers = [...members].sort();
  return [...parts].sort().filter((_, i) => i % workers.length === workers.indexOf(id));
}

// A partitionFunc of contiguous runs: member i of n takes the i-th run of the sorted set.
function ranges(id, members, parts) {
  const workers = [...members].sort();
  const sorted = [...parts].sort();
  const [i, n] = [workers.indexOf(id), workers.length];
  const each = Math.floor(sorted.length / n);
  const extra = sorted.length % n;
  const start = i * each + Math.min(i, extra);
  return sorted.slice(start, start + each + (i < extra ? 1 : 0));
}

// kazoo's loop for every member until all hold exactly the shares `share` gives (kazoo's
// default function's unless told).
async function settle(members, parts, timeoutMs = 60000, share = expected) {
  const ids = members.map((m) => m.identifier);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    assert.ok(Date.now() < deadline, `never settled: ${members.map((m) => `${m.identifier}=${m.state}`)}`);
    let done = true;
    for (const m of members) {
      if (m.failed) throw new Error(`${m.identifier} failed`);
      if (m.release) {
        await m.releaseSet();
        done = false;
      } else if (m.allocating) {
        await m.waitForAcquire({ timeoutMs: 100 });
        done = false;
      }
    }
    if (done && members.every((m) => JSON.stringify([...m]) === JSON.stringify(share(m.identifier, ids, parts)))) {
      assert.deepEqual(members.flatMap((m) => m.partitions).sort(), [...parts].sort());
      return;
    }
  }
}

test('a partitionFunc divides the set, and a wrong answer is FAILURE', async () => {
  const p = uniquePath('custom');
  const parts = ['p3', 'p0', 'p5', 'p1', 'p4', 'p2', 'p6'];
  const calls = [];
  const contiguous = (id, members, set) => {
    calls.push([id, [...members].sort(), set]);
    return ranges(id, members, set);
  };
  const [ca, cb, cc] = await Promise.all([1, 2, 3].map(() => Client.connect(zk.connectString)));
  try {
    const a = new SetPartitioner(ca, p, parts, { identifier: 'a', partitionFunc: contiguous, ...fast });
    const b = new SetPartitioner(cb, p, parts, { identifier: 'b', partitionFunc: contiguous, ...fast });
    await a.start();
    await b.start();
    await settle([a, b], parts, 60000, ranges);
    assert.deepEqual([a.partitions, b.partitions], [['p0', 'p1', 'p2', 'p3'], ['p4', 'p5', 'p6']]);
    const [, members, set] = calls.at(-1);
    assert.deepEqual([members, set], [['a', 'b'], parts], "the party's identifiers, the set as given");

    // Throwing, a name outside the set, a name twice, a string: FAILURE, and it leaves the party.
    for (const wrong of [
      () => {
        throw new Error('no answer');
      },
      () => ['p9'],
      () => ['p1', 'p1'],
      () => 'p1',
    ]) {
      const c = new SetPartitioner(cc, p, parts, { identifier: 'c', partitionFunc: wrong, ...fast });
      await c.start();
      await waitFor(() => c.failed, { timeoutMs: 60000, what: 'FAILURE after a wrong answer' });
      assert.deepEqual(c.partitions, []);
      await waitFor(async () => !(await ca.getChildren(`${p}/party`)).some((n) => n.endsWith('-c')), {
        timeoutMs: 30000,
        what: 'c to leave the party',
      });
      await settle([a, b], parts, 60000, ranges);
      await c.finish();
    }
    assert.throws(() => new SetPartitioner(cc, p, parts, { partitionFunc: 'no' }), bad);
    await a.finish();
    await b.finish();
  } finally {
    await Promise.all([ca, cb, cc].map((c) => c.close()));
  }
});

test('members divide the set on kazoo\'s layout and divide it again when one leaves', async () => {
  const p = uniquePath('partitioner');
  const parts = ['w0', 'w1', 'w2', 'w3'];
  const other = await Client.connect(zk.connectString);
  try {
    const a = new SetPartitioner(client, p, new Set(parts), { identifier: 'a', ...fast });
    const kept = keptFor(client);
    const states = [];
    a.on('state', (s) => states.push(s));
    await a.start();
    assert.equal(await a.waitForAcquire({ timeoutMs: 60000 }), true);
    assert.deepEqual([...a], parts);
    const b = new SetPartitioner(other, p, parts, { identifier: 'b', ...fast });
    await b.start();
    assert.equal(await a.waitForChange(PartitionState.ACQUIRED, { timeoutMs: 60000 }), 'RELEASE');
    assert.deepEqual(a.partitions, [], 'nothing to work on in RELEASE');
    await settle([a, b], parts);
    assert.deepEqual(b.partitions, ['w1', 'w3']);
    const party = await client.getChildren(`${p}/party`);
    assert.deepEqual(party.map((n) => n.slice(33)).sort(), ['a', 'b']);
    const locks = await client.getChildren(`${p}/locks/w1`);
    assert.match(locks[0], /__lock__\d{10}$/);

    await b.finish();
    assert.equal(b.state, 'FAILURE');
    await settle([a], parts);
    await waitFor(() => states.includes('RELEASE') && states.includes('ALLOCATING'), { what: "a's 'state' events" });
    assert.equal(states[0], 'ACQUIRED');

    // The session expires: FAILURE for good, and no longer kept alive (kazoo's callers make a
    // new partitioner without finishing the failed one).
    assert.equal(keptFor(client), kept + 1, 'a started partitioner is kept alive');
    await client._expireSessionForTesting();
    await waitFor(() => a.failed, { timeoutMs: 60000, what: 'FAILURE after expiry' });
    await waitFor(() => keptFor(client) === kept, { what: 'the failed partitioner let go' });
    assert.equal(await a.waitForAcquire({ timeoutMs: 0 }), false);
    await a.close();
  } finally {
    await other.close();
  }
});

test('bad input is ZKR_INVALID_ARGUMENT', async () => {
  const p = uniquePath('bad');
  assert.throws(() => new SetPartitioner(client, p, 'abc'), bad);
  assert.throws(() => new SetPartitioner(client, p, [1]), bad);
  assert.throws(() => new SetPartitioner(client, p, ['a/b']), bad);
  assert.throws(() => new SetPartitioner(client, p, ['a', 'a']), bad);
  assert.throws(() => new SetPartitioner(client, p, ['a'], { timeBoundaryMs: 0 }), bad);
  assert.throws(() => new SetPartitioner(client, p, ['a'], { timeBoundry: 5 }), { ...bad, message: /timeBoundaryMs/ });
  const s = new SetPartitioner(client, p, ['a']);
  await assert.rejects(s.releaseSet(), bad);
  await assert.rejects(s.waitForChange('NOPE'), bad);
  assert.match(s.identifier, new RegExp(`-${process.pid}$`));
  await s.finish();
  await assert.rejects(NonBlockingLease.obtain(client, p, -1), bad);
  await assert.rejects(NonBlockingLease.obtain(client, p, 1000, { now: 5 }), bad);
  await assert.rejects(MultiNonBlockingLease.obtain(client, 0, p, 1000), bad);
  await assert.rejects(MultiNonBlockingLease.obtain(client, -1, p, 1000), bad);
});

test('a lease is held until its end, renewed by its holder, and at most count are given', async () => {
  const p = uniquePath('lease');
  const t0 = new Date(Date.UTC(2024, 1, 29, 23, 59, 59, 500));
  const hour = 3600 * 1000;
  const a = await NonBlockingLease.obtain(client, p, hour, { identifier: 'a', now: t0 });
  assert.equal(a.held, true);
  assert.deepEqual(a.end, new Date(Date.UTC(2024, 2, 1, 0, 59, 59)));
  const { data } = await client.getData(`${p}/lease_holder`);
  assert.equal(data.toString(), '{"version": 1, "holder": "a", "end": "2024-03-01T00:59:59"}');
  const later = new Date(t0.getTime() + 60000);
  assert.equal((await NonBlockingLease.obtain(client, p, hour, { identifier: 'b', now: later })).held, false);
  assert.equal((await NonBlockingLease.obtain(client, p, hour, { identifier: 'a', now: later })).held, true);
  const after = new Date(t0.getTime() + 3 * hour);
  assert.equal((await NonBlockingLease.obtain(client, p, hour, { identifier: 'b', now: after })).held, true);
  assert.deepEqual(await client.getChildren(p), ['lease_holder']);

  const m = uniquePath('multi');
  const got = [];
  for (const id of ['a', 'b', 'c']) got.push(await MultiNonBlockingLease.obtain(client, 2, m, 60000, { identifier: id }));
  assert.deepEqual(got.map((g) => [g.held, g.index]), [[true, 0], [true, 1], [false, null]]);
  await client.setData(`${m}/0/lease_holder`, 'junk');
  await assert.rejects(MultiNonBlockingLease.obtain(client, 2, m, 60000, { identifier: 'a' }), { code: 'ZKR_CORRUPTED_DATA' });
});
