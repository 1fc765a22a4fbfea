// InterProcessMutex with cohort handoffs (`{ cohort }`) against a real ZooKeeper: the owners of
// one object share one lock node and hand the hold over in memory, within the fairness bound;
// wide fencing tokens strictly increase from holder to holder; a plain mutex elsewhere is
// served; timeouts, reentrancy and wrong owners behave as on a plain mutex; bad options throw.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const { Client, InterProcessMutex, Owner } = require('..');
const { useZooKeeper, uniquePath, waitFor } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
}, { sessionTimeoutMs: 10000 });

const yieldToLoop = () => new Promise((r) => setImmediate(r));
const zxidOf = (wide) => wide >> 32n;
const handoffOf = (wide) => wide & 0xffffffffn;

test('20 owners x 25 holds on one cohort mutex and a plain mutex on another client: no overlap, wide tokens increase, the other client is served', async () => {
  const other = await Client.connect(zk.connectString, { sessionTimeoutMs: 10000 });
  try {
    const lockPath = uniquePath('cohort-seed');
    const mutex = new InterProcessMutex(client, lockPath, { cohort: true });
    const plain = new InterProcessMutex(other, lockPath);
    const OWNERS = 20;
    const HOLDS = 25;
    const holds = []; // { who, token } in hold order
    let inside = 0;
    let maxInside = 0;
    let cohortDone = false;

    // One critical section: `who` holds with wide token `token`; it yields to the event loop
    // while holding so that an overlapping holder would be seen.
    const section = async (who, token, first) => {
      inside += 1;
      maxInside = Math.max(maxInside, inside);
      assert.equal(typeof token, 'bigint', `${who} holds a wide fencing token`);
      holds.push({ who, token });
      if (first) {
        // Hold until the other client's node is in line behind ours: it must be served
        // before the cohort's 500 holds are done.
        await waitFor(async () => (await mutex.participantNodes()).length === 2, { what: "the other client's node in line behind the cohort's one node" });
      }
      await yieldToLoop();
      inside -= 1;
    };

    let firstHold;
    const firstHeld = new Promise((r) => (firstHold = r));
    let started = false;
    const perOwner = new Array(OWNERS).fill(0);
    const owners = Array.from({ length: OWNERS }, (_, k) => {
      const owner = new Owner();
      if (k % 2 === 0) {
        // withLock inside the owner's own async context.
        return owner.run(async () => {
          for (let i = 0; i < HOLDS; i++) {
            await mutex.withLock(async () => {
              assert.ok(mutex.isOwnedByCurrentOwner(), 'the context owner holds');
              const first = !started;
              started = true;
              if (first) firstHold();
              await section(`owner${k}`, mutex.fencingTokenWide, first);
              perOwner[k] += 1;
            });
          }
        });
      }
      // Explicit { owner } with acquire/release.
      return (async () => {
        for (let i = 0; i < HOLDS; i++) {
          assert.equal(await mutex.acquire({ owner }), true);
          try {
            assert.ok(mutex.isOwnedByCurrentOwner(owner));
            const first = !started;
            started = true;
            if (first) firstHold();
            await section(`owner${k}`, mutex.fencingTokenWideOf(owner), first);
            perOwner[k] += 1;
          } finally {
            await mutex.release({ owner });
          }
        }
      })();
    });
    const cohortRun = Promise.all(owners).finally(() => {
      cohortDone = true;
    });

    // The other client contends (started once the cohort holds, so its node is behind the
    // cohort's) until the cohort is done.
    await firstHeld;
    let plainHolds = 0;
    const plainRun = (async () => {
      do {
        await plain.withLock(async () => {
          await section('other', plain.fencingTokenWide, false);
          plainHolds += 1;
        });
      } while (!cohortDone);
    })();
    await Promise.all([cohortRun, plainRun]);

    assert.deepEqual(perOwner, new Array(OWNERS).fill(HOLDS));
    assert.equal(maxInside, 1, 'two holders at once');
    const cohortHolds = holds.filter((h) => h.who !== 'other');
    assert.equal(cohortHolds.length, OWNERS * HOLDS);
    assert.ok(plainHolds >= 1, 'the plain mutex was served');
    const lastCohort = holds.findLastIndex((h) => h.who !== 'other');
    const firstOther = holds.findIndex((h) => h.who === 'other');
    assert.ok(firstOther >= 0 && firstOther < lastCohort, `the other client was served while the cohort still had holds to go (first other hold #${firstOther}, last cohort hold #${lastCohort})`);
    for (let i = 1; i < holds.length; i++) {
      assert.ok(holds[i].token > holds[i - 1].token, `hold #${i} (${holds[i].who}, ${holds[i].token}) after #${i - 1} (${holds[i - 1].who}, ${holds[i - 1].token})`);
    }
    const zxids = new Set(cohortHolds.map((h) => zxidOf(h.token)));
    assert.ok(zxids.size < cohortHolds.length, `${zxids.size} lock nodes for ${cohortHolds.length} holds: no handoffs`);
    assert.ok(zxids.size >= 2, 'the cohort gave its node up for the other client at least once');
    for (const h of holds.filter((x) => x.who === 'other')) assert.equal(handoffOf(h.token), 0n, 'a plain hold has handoff 0');
    assert.equal(mutex.isAcquiredInThisProcess(), false);
    assert.equal(mutex.localWaiters, 0);
    assert.deepEqual(await mutex.participantNodes(), []);
  } finally {
    await other.close();
  }
});

test('one lock node for the cohort however many owners wait; the node is handed over in memory', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('cohort-one-node'), { cohort: { maxHandoffs: 64, maxHoldMs: 20 } });
  const first = new Owner();
  assert.equal(await mutex.acquire({ owner: first }), true);
  assert.equal(mutex.lockNode, null, 'the thread owner holds nothing');
  const firstNode = await first.run(async () => mutex.lockNode);
  assert.match(firstNode, /-lock-\d{10}$/);
  const tokens = [mutex.fencingTokenWideOf(first)];
  assert.equal(mutex.fencingTokenOf(first), zxidOf(tokens[0]), 'the plain token is the node czxid');

  const WAITERS = 6;
  const order = [];
  const waiters = Array.from({ length: WAITERS }, (_, k) => {
    const owner = new Owner();
    return owner.run(async () => {
      assert.equal(await mutex.acquire(), true);
      order.push(k);
      tokens.push(mutex.fencingTokenWide);
      assert.equal(mutex.lockNode, firstNode, 'the cohort keeps its one node');
      assert.equal(mutex.fencingToken, zxidOf(mutex.fencingTokenWide), 'local holders share the node czxid');
      await mutex.release();
    });
  });
  await waitFor(() => mutex.localWaiters >= 5, { what: 'at least 5 owners in the local queue' });
  assert.deepEqual(await mutex.participantNodes(), [firstNode], 'one node for the whole cohort');
  await waitFor(() => mutex.localWaiters === WAITERS, { what: `all ${WAITERS} owners in the local queue` });
  assert.deepEqual(await mutex.participantNodes(), [firstNode], 'still one node');
  assert.equal(mutex.isOwnedByCurrentOwner(first), true);
  assert.deepEqual(order, [], 'nobody got in while the first owner held');

  await mutex.release({ owner: first });
  await Promise.all(waiters);
  assert.deepEqual([...order].sort(), [0, 1, 2, 3, 4, 5], 'every waiter got its turn once');
  // Nobody else contended: every hold was on the one node, handed over 0, 1, 2, ...
  assert.deepEqual(tokens.map(zxidOf), new Array(WAITERS + 1).fill(zxidOf(tokens[0])));
  assert.deepEqual(tokens.map(handoffOf), Array.from({ length: WAITERS + 1 }, (_, i) => BigInt(i)));
  assert.equal(mutex.localWaiters, 0);
  await waitFor(async () => (await mutex.participantNodes()).length === 0, { what: 'the node released once the queue is empty' });
  assert.equal(mutex.fencingTokenWideOf(first), null, 'no hold, no token');
});

test('a timeout in the local queue resolves false and leaves no node; reentrancy; a non-owner release is ZKR_NOT_OWNER', async () => {
  const other = await Client.connect(zk.connectString, { sessionTimeoutMs: 10000 });
  try {
    const lockPath = uniquePath('cohort-timeout');
    const mutex = new InterProcessMutex(client, lockPath, { cohort: { maxHandoffs: 4 } });
    const a = new Owner();
    const b = new Owner();

    // Reentrancy: the same owner re-enters at once, with the same token and no second node.
    assert.equal(await mutex.acquire({ owner: a }), true);
    const token = mutex.fencingTokenWideOf(a);
    assert.equal(await mutex.acquire({ owner: a, timeoutMs: 0 }), true, 'the holder re-enters at once');
    assert.equal(mutex.fencingTokenWideOf(a), token, 'a re-entry keeps the hold');
    const nested = await a.run(() => mutex.withLock(async () => mutex.fencingTokenWide));
    assert.equal(nested, token, 'a nested withLock re-enters too');
    assert.equal((await mutex.participantNodes()).length, 1);

    // Another owner of the object waits in the local queue and times out: false, no node.
    const t0 = Date.now();
    assert.equal(await mutex.acquire({ owner: b, timeoutMs: 200 }), false, 'b must not get a held lock');
    assert.ok(Date.now() - t0 >= 150, 'the timed acquire waited');
    assert.equal(mutex.localWaiters, 0, 'the timed-out owner left the local queue');
    assert.equal((await mutex.participantNodes()).length, 1, 'a timed-out local waiter makes no node');
    assert.equal(mutex.isOwnedByCurrentOwner(b), false);

    // Release by an owner that holds nothing.
    await assert.rejects(mutex.release({ owner: b }), { code: 'ZKR_NOT_OWNER' });
    await assert.rejects(mutex.release(), { code: 'ZKR_NOT_OWNER' }, 'the thread owner holds nothing');

    await mutex.release({ owner: a });
    assert.ok(mutex.isOwnedByCurrentOwner(a), 'one release of two leaves it held');
    await mutex.release({ owner: a });
    assert.equal(mutex.isOwnedByCurrentOwner(a), false);
    await assert.rejects(mutex.release({ owner: a }), { code: 'ZKR_NOT_OWNER' });
    await waitFor(async () => (await mutex.participantNodes()).length === 0, { what: 'the cohort node released' });

    // A timeout while the cohort's node waits behind another client's hold: false, and the
    // cohort's node goes away.
    const plain = new InterProcessMutex(other, lockPath);
    assert.equal(await plain.acquire(), true);
    const otherNode = plain.lockNode;
    assert.equal(await mutex.acquire({ owner: b, timeoutMs: 300 }), false);
    assert.equal(mutex.localWaiters, 0);
    await waitFor(async () => (await mutex.participantNodes()).length === 1, { what: "the cohort's node removed after the timeout" });
    assert.deepEqual(await mutex.participantNodes(), [otherNode]);
    await plain.release();

    // And the object still works afterwards.
    assert.equal(await mutex.acquire({ owner: b, timeoutMs: 10000 }), true);
    assert.ok(mutex.fencingTokenWideOf(b) > token);
    await mutex.release({ owner: b });
  } finally {
    await other.close();
  }
});

test('cohort options: defaults, read back, and bad values throw ZKR_INVALID_ARGUMENT', () => {
  const p = uniquePath('cohort-options');
  assert.deepEqual(new InterProcessMutex(client, p, { cohort: true }).cohortOptions, { maxHandoffs: 64, maxHoldMs: 20 });
  assert.deepEqual(new InterProcessMutex(client, p, { cohort: {} }).cohortOptions, { maxHandoffs: 64, maxHoldMs: 20 });
  assert.deepEqual(new InterProcessMutex(client, p, { cohort: { maxHandoffs: 3 } }).cohortOptions, { maxHandoffs: 3, maxHoldMs: 20 });
  assert.deepEqual(
    new InterProcessMutex(client, p, { cohort: { maxHandoffs: 2 ** 32 - 1, maxHoldMs: 0 } }).cohortOptions,
    { maxHandoffs: 2 ** 32 - 1, maxHoldMs: 0 },
  );
  assert.deepEqual(new InterProcessMutex(client, p, { cohort: { maxHoldMs: 2.5 }, lostPolicy: 'session' }).cohortOptions, { maxHandoffs: 64, maxHoldMs: 2.5 });
  for (const none of [undefined, null, false]) {
    const plain = new InterProcessMutex(client, p, { cohort: none });
    assert.equal(plain.cohortOptions, null, `cohort: ${none}`);
    assert.equal(plain.localWaiters, 0);
    assert.equal(plain.fencingTokenWide, null);
  }
  assert.equal(new InterProcessMutex(client, p).cohortOptions, null);

  const bad = { code: 'ZKR_INVALID_ARGUMENT' };
  const cases = [
    [{ maxHandoffs: 0 }, /maxHandoffs/],
    [{ maxHandoffs: -1 }, /maxHandoffs/],
    [{ maxHandoffs: 1.5 }, /maxHandoffs/],
    [{ maxHandoffs: 2 ** 32 }, /maxHandoffs/],
    [{ maxHandoffs: NaN }, /maxHandoffs/],
    [{ maxHandoffs: Infinity }, /maxHandoffs/],
    [{ maxHandoffs: '8' }, /maxHandoffs/],
    [{ maxHandoffs: 8n }, /maxHandoffs/],
    [{ maxHoldMs: -1 }, /maxHoldMs/],
    [{ maxHoldMs: NaN }, /maxHoldMs/],
    [{ maxHoldMs: Infinity }, /maxHoldMs/],
    [{ maxHoldMs: '5' }, /maxHoldMs/],
    [{ maxHandoff: 8 }, /did you mean maxHandoffs/],
    ['yes', /cohort/],
    [1, /cohort/],
    [[], /cohort/],
  ];
  for (const [cohort, message] of cases) {
    assert.throws(() => new InterProcessMutex(client, p, { cohort }), { ...bad, message }, `cohort: ${String(cohort)} ${JSON.stringify(cohort, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))}`);
  }
  assert.throws(() => new InterProcessMutex(client, p, { cohorts: true }), { ...bad, message: /did you mean cohort/ });
  const mutex = new InterProcessMutex(client, p, { cohort: true });
  assert.throws(() => mutex.fencingTokenWideOf('me'), bad);
  // One node serves every local owner: a cohort mutex is not revocable, and says so.
  assert.throws(() => mutex.makeRevocable(), { ...bad, message: /not revocable/ });
});

test('a plain mutex: fencingTokenWide is the czxid shifted, with handoff 0', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('wide-plain'));
  await mutex.withLock(async () => {
    assert.equal(mutex.fencingTokenWide, mutex.fencingToken << 32n);
    assert.equal(mutex.localWaiters, 0);
  });
  assert.equal(mutex.fencingTokenWide, null);
});
