// InterProcessMutex (and the read/write lock) against a real ZooKeeper: the seed scenario,
// owners and reentrancy, fencing tokens, the lost signal, and bad inputs.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { setTimeout: sleep } = require('node:timers/promises');

const {
  Client,
  InterProcessMutex,
  InterProcessReadWriteLock,
  InterProcessSemaphoreMutex,
  InterProcessSemaphoreV2,
  InterProcessMultiLock,
  Owner,
  attemptRevoke,
  LeaseLostReason,
} = require('..');
const { useZooKeeper, uniquePath, waitFor, nextEvent, childrenLeft } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
}, { sessionTimeoutMs: 10000 });

test('seed: 100 concurrent withLock tasks on one mutex never overlap', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('seed-mutex'));
  let inside = 0;
  let maxInside = 0;
  let done = 0;
  const tasks = Array.from({ length: 100 }, (_, i) =>
    mutex.withLock(async () => {
      inside += 1;
      maxInside = Math.max(maxInside, inside);
      // Yield to the event loop while "holding" so that an overlap would be seen.
      await sleep(i % 3);
      assert.ok(mutex.isOwnedByCurrentOwner());
      inside -= 1;
      done += 1;
      return i;
    }),
  );
  const results = await Promise.all(tasks);
  assert.deepEqual(results, Array.from({ length: 100 }, (_, i) => i));
  assert.equal(done, 100);
  assert.equal(maxInside, 1, 'two withLock bodies ran at once');
  assert.equal(mutex.isAcquiredInThisProcess(), false);
  assert.deepEqual(await mutex.participantNodes(), []);
});

test('seed: 4 worker_threads x 25 withLock tasks on one mutex never overlap', async () => {
  const lockPath = uniquePath('seed-workers');
  const shared = new Int32Array(new SharedArrayBuffer(8)); // [inside, overlaps]
  const worker = path.join(__dirname, 'fixtures', 'mutex-worker.js');
  const runs = Array.from({ length: 4 }, () => {
    const w = new Worker(worker, {
      workerData: { connectString: zk.connectString, lockPath, tasks: 25, shared: shared.buffer },
    });
    return new Promise((resolve, reject) => {
      let result;
      w.on('message', (m) => (result = m));
      w.on('error', reject);
      w.on('exit', (code) => (code === 0 ? resolve(result) : reject(new Error(`worker exited with ${code}`))));
    });
  });
  const results = await Promise.all(runs);
  assert.deepEqual(
    results.map((r) => r.done),
    [25, 25, 25, 25],
  );
  assert.equal(Atomics.load(shared, 1), 0, 'holders in two threads overlapped');
  assert.equal(Atomics.load(shared, 0), 0);
  // Fencing tokens strictly increase across every hold, whichever thread held it.
  const tokens = results.flatMap((r) => r.tokens.map(BigInt)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  assert.equal(new Set(tokens).size, 100);
});

test('nested withLock on the same mutex re-enters; the lock is released once the outer body ends', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('nested'));
  const value = await mutex.withLock(async () => {
    const token = mutex.fencingToken;
    assert.equal(typeof token, 'bigint');
    const inner = await mutex.withLock(async () => {
      assert.equal(mutex.fencingToken, token, 'a re-entry keeps the same hold');
      return 'inner';
    });
    assert.equal(inner, 'inner');
    assert.ok(mutex.isOwnedByCurrentOwner(), 'still held after the inner withLock');
    assert.equal((await mutex.participantNodes()).length, 1, 'a re-entry makes no second node');
    return 42;
  });
  assert.equal(value, 42);
  assert.equal(mutex.isAcquiredInThisProcess(), false);
  assert.deepEqual(await mutex.participantNodes(), []);
});

test('two concurrent withLock calls contend: the second waits for the first', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('contend'));
  const order = [];
  let releaseFirst;
  const firstHolding = new Promise((r) => (releaseFirst = r));
  let firstIn;
  const firstEntered = new Promise((r) => (firstIn = r));
  const first = mutex.withLock(async () => {
    order.push('first in');
    firstIn();
    await firstHolding;
    order.push('first out');
  });
  await firstEntered;
  const second = mutex.withLock(async () => {
    order.push('second in');
  });
  // The second is queued behind the first: two nodes in line, the second not admitted.
  await waitFor(async () => (await mutex.participantNodes()).length === 2, { what: 'the second contender in line' });
  assert.deepEqual(order, ['first in']);
  releaseFirst();
  await Promise.all([first, second]);
  assert.deepEqual(order, ['first in', 'first out', 'second in']);
});

test('acquire outside any context belongs to this thread and re-enters; release must match', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('thread-owner'));
  assert.equal(await mutex.acquire(), true);
  assert.equal(await mutex.acquire({ timeoutMs: 0 }), true, 'the same owner re-enters at once');
  assert.ok(mutex.isOwnedByCurrentOwner());
  await mutex.release();
  assert.ok(mutex.isOwnedByCurrentOwner(), 'one release of two leaves it held');
  await mutex.release();
  assert.equal(mutex.isOwnedByCurrentOwner(), false);
  await assert.rejects(mutex.release(), { code: 'ZKR_NOT_OWNER', message: /release lock .*thread-owner/ });
});

test('explicit owners: another owner contends and times out; owner.run sets the default owner', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('explicit'));
  const a = new Owner();
  const b = new Owner();
  assert.equal(await mutex.acquire({ owner: a }), true);
  const t0 = Date.now();
  assert.equal(await mutex.acquire({ owner: b, timeoutMs: 200 }), false, 'b must not get a held lock');
  assert.ok(Date.now() - t0 >= 150, 'the timed acquire waited');
  assert.equal((await mutex.participantNodes()).length, 1, 'a timed-out acquire leaves no node behind');
  await assert.rejects(mutex.release({ owner: b }), { code: 'ZKR_NOT_OWNER' });
  await a.run(async () => {
    assert.equal(Owner.current(), a);
    assert.ok(mutex.isOwnedByCurrentOwner());
    await mutex.release();
  });
  assert.equal(mutex.isOwnedByCurrentOwner(a), false);
  assert.equal(await mutex.acquire({ owner: b, timeoutMs: 5000 }), true);
  assert.ok(mutex.isOwnedByCurrentOwner(b));
  await mutex.release({ owner: b });
});

test('fencing tokens strictly increase from one holder to the next', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('fencing'));
  const tokens = [];
  for (let i = 0; i < 5; i++) {
    await mutex.withLock(async () => {
      tokens.push(mutex.fencingToken);
      assert.match(mutex.lockNode, /\/_c_[0-9a-f-]{36}-lock-\d{10}$/);
    });
  }
  for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i] > tokens[i - 1], `${tokens[i]} > ${tokens[i - 1]}`);
  assert.equal(mutex.fencingToken, null, 'no hold, no token');
});

test('a second client contends with the first for the same path', async () => {
  const other = await Client.connect(zk.connectString);
  try {
    const lockPath = uniquePath('two-clients');
    const m1 = new InterProcessMutex(client, lockPath);
    const m2 = new InterProcessMutex(other, lockPath);
    assert.equal(await m1.acquire(), true);
    assert.equal(await m2.acquire({ timeoutMs: 100 }), false);
    const waiting = m2.acquire({ timeoutMs: 10000 });
    await m1.release();
    assert.equal(await waiting, true);
    assert.ok(m2.fencingToken > 0n);
    await m2.release();
  } finally {
    await other.close();
  }
});

test("a hold emits 'lost' with its owner when the session expires, and release still works", async () => {
  const own = await Client.connect(zk.connectString, { sessionTimeoutMs: 4000 });
  try {
    const mutex = new InterProcessMutex(own, uniquePath('lost'));
    const owner = new Owner();
    assert.equal(await mutex.acquire({ owner }), true);
    assert.ok(mutex.isHeldValid(owner));
    const lost = nextEvent(mutex, 'lost');
    await own._expireSessionForTesting();
    assert.equal(await lost, owner);
    assert.equal(mutex.isHeldValid(owner), false);
    await mutex.release({ owner }); // a lost hold releases cleanly
    assert.equal(mutex.isOwnedByCurrentOwner(owner), false);
  } finally {
    await own.close();
  }
});

test('read/write lock: readers share, a writer excludes them', async () => {
  const rw = new InterProcessReadWriteLock(client, uniquePath('rw'));
  const r1 = new Owner();
  const r2 = new Owner();
  const w = new Owner();
  assert.equal(await rw.readLock().acquire({ owner: r1 }), true);
  assert.equal(await rw.readLock().acquire({ owner: r2, timeoutMs: 2000 }), true, 'readers share');
  assert.equal(await rw.writeLock().acquire({ owner: w, timeoutMs: 100 }), false, 'a writer waits for readers');
  await rw.readLock().release({ owner: r1 });
  await rw.readLock().release({ owner: r2 });
  assert.equal(await rw.writeLock().acquire({ owner: w, timeoutMs: 5000 }), true);
  assert.equal(await rw.readLock().acquire({ owner: r1, timeoutMs: 100 }), false, 'a reader waits for the writer');
  assert.equal(await rw.readLock().acquire({ owner: w, timeoutMs: 2000 }), true, 'the writer may also read');
  await rw.readLock().release({ owner: w });
  await rw.writeLock().release({ owner: w });
  assert.equal(rw.readLock(), rw.readLock());
});

test('bad inputs reject (or throw, for constructors) with ZKR_INVALID_ARGUMENT', async () => {
  const bad = { code: 'ZKR_INVALID_ARGUMENT' };
  assert.throws(() => new InterProcessMutex(client, 'no-leading-slash'), { ...bad, message: /no-leading-slash/ });
  assert.throws(() => new InterProcessMutex(client, '/a//b'), bad);
  assert.throws(() => new InterProcessMutex(client, 17), bad);
  assert.throws(() => new InterProcessMutex({}, '/x'), bad);
  assert.throws(() => new InterProcessMutex(client, '/x', { lostPolicy: 'sometimes' }), bad);
  const mutex = new InterProcessMutex(client, uniquePath('bad-inputs'));
  await assert.rejects(mutex.acquire({ timeoutMs: -1 }), { ...bad, message: /timeoutMs/ });
  await assert.rejects(mutex.acquire({ timeoutMs: '10' }), bad);
  await assert.rejects(mutex.acquire({ timeoutMs: NaN }), bad);
  await assert.rejects(mutex.acquire({ owner: 'me' }), bad);
  await assert.rejects(mutex.acquire(5), bad);
  await assert.rejects(mutex.withLock('not a function'), bad);
  await assert.rejects(mutex.withLock(async () => {}, { timeoutMs: -5 }), bad);
  assert.throws(() => mutex.isOwnedByCurrentOwner('me'), bad);
  await assert.rejects(mutex.release(), { code: 'ZKR_NOT_OWNER' });
});

test('withLock rejects with ZKR_TIMEOUT when not acquired in time, and releases when fn throws', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('withlock-errors'));
  const holder = new Owner();
  await mutex.acquire({ owner: holder });
  await assert.rejects(
    mutex.withLock(async () => assert.fail('must not run'), { timeoutMs: 50 }),
    { code: 'ZKR_TIMEOUT', message: /withLock .*withlock-errors/ },
  );
  await mutex.release({ owner: holder });
  const boom = new Error('boom');
  await assert.rejects(
    mutex.withLock(async () => {
      throw boom;
    }),
    (err) => err === boom,
  );
  assert.equal(mutex.isAcquiredInThisProcess(), false, 'released after fn threw');
});

test('a closed client: waiting acquires reject and new calls reject with ZKR_CLOSED', async () => {
  const own = await Client.connect(zk.connectString);
  const lockPath = uniquePath('closed');
  const mutex = new InterProcessMutex(own, lockPath);
  const holder = new Owner();
  await mutex.acquire({ owner: holder });
  const waiting = mutex.acquire({ owner: new Owner() });
  await waitFor(async () => (await mutex.participantNodes()).length === 2, { what: 'the waiter in line' });
  const rejected = assert.rejects(waiting, { code: 'ZKR_CLOSED' });
  await own.close();
  await rejected;
  await assert.rejects(mutex.acquire(), { code: 'ZKR_CLOSED' });
  await assert.rejects(mutex.participantNodes(), { code: 'ZKR_CLOSED' });
  // The session's lock nodes went with it.
  assert.deepEqual(await childrenLeft(client, lockPath), []);
});

test('InterProcessSemaphoreMutex is not reentrant and any code may release it', async () => {
  const m = new InterProcessSemaphoreMutex(client, uniquePath('semaphore-mutex'));
  assert.equal(await m.acquire(), true);
  assert.match(m.leaseNode, /-lease-\d{10}$/);
  assert.equal(await m.acquire({ timeoutMs: 100 }), false, 'a second acquire waits, even here');
  await new Owner().run(() => m.release()); // not owned: another context may release
  assert.equal(m.isAcquiredInThisProcess(), false);
  await assert.rejects(m.release(), { code: 'ZKR_NOT_OWNER' });
  assert.equal(await m.withLock(async () => 'done'), 'done');
});

test('InterProcessSemaphoreV2 hands out at most maxLeases leases', async () => {
  const p = uniquePath('semaphore');
  const sem = new InterProcessSemaphoreV2(client, p, 2);
  assert.equal(sem.maxLeases, 2);
  const two = await sem.acquire({ qty: 2 });
  assert.equal(two.length, 2);
  assert.ok(two[1].czxid > two[0].czxid);
  const other = await Client.connect(zk.connectString);
  try {
    const sem2 = new InterProcessSemaphoreV2(other, p, 2);
    assert.equal(await sem2.acquire({ timeoutMs: 100 }), null, 'no third lease');
    assert.equal((await sem.participantNodes()).length, 2, 'a timed-out acquire leaves no lease node');
    const waiting = sem2.acquire({ timeoutMs: 10000 });
    await sem.returnLease(two[0]);
    const [lease] = await waiting;
    assert.ok(lease.path.startsWith(`${p}/leases/`));
    await assert.rejects(two[0].release(), { code: 'ZKR_NOT_OWNER' }, 'a lease returns once');
    await sem.returnAll([two[1], lease]);
    assert.deepEqual(await sem.participantNodes(), []);
  } finally {
    await other.close();
  }
  assert.throws(() => new InterProcessSemaphoreV2(client, p, 0), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new InterProcessSemaphoreV2(client, p), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(sem.acquire({ qty: -1 }), { code: 'ZKR_INVALID_ARGUMENT' });
});

test('InterProcessMultiLock takes all its locks or none', async () => {
  const a = uniquePath('multi-a');
  const b = uniquePath('multi-b');
  const multi = new InterProcessMultiLock(client, [a, b]);
  const single = new InterProcessMutex(client, b);
  const holder = new Owner();
  assert.equal(await single.acquire({ owner: holder }), true);
  assert.equal(await multi.acquire({ timeoutMs: 200 }), false);
  assert.deepEqual(await new InterProcessMutex(client, a).participantNodes(), [], 'none held after a failed acquire');
  await single.release({ owner: holder });
  const result = await multi.withLock(async () => {
    assert.equal(multi.isAcquiredInThisProcess(), true);
    return (await new InterProcessMutex(client, a).participantNodes()).length;
  });
  assert.equal(result, 1);
  assert.equal(multi.isAcquiredInThisProcess(), false);
  assert.throws(() => new InterProcessMultiLock(client, [a, a]), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new InterProcessMultiLock(client, []), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new InterProcessMultiLock(client, 'a'), { code: 'ZKR_INVALID_ARGUMENT' });
});

test('revocation: makeRevocable + attemptRevoke from another client; the holder gives up', async () => {
  const p = uniquePath('revoke');
  const other = await Client.connect(zk.connectString, { sessionTimeoutMs: 10000 });
  try {
    const holder = new InterProcessMutex(client, p);
    const owner = new Owner();
    const heard = [];
    assert.equal(
      holder.makeRevocable((o) => {
        heard.push(o);
        holder.release({ owner: o }).catch(() => {});
      }),
      holder,
    );
    assert.equal(await holder.acquire({ owner }), true);
    const node = holder.lockNode ?? (await holder.participantNodes())[0];
    assert.deepEqual(await holder.participantNodes(), [node]);

    const waiter = new InterProcessMutex(other, p);
    const waiterOwner = new Owner();
    const acquiring = waiter.acquire({ owner: waiterOwner, timeoutMs: 10000 });
    await waitFor(async () => (await waiter.participantNodes()).length === 2, { what: 'the waiter in line' });
    await attemptRevoke(other, node);
    assert.equal(await acquiring, true, 'the waiter got the lock after the holder gave it up');
    assert.equal(heard.length, 1);
    assert.equal(heard[0], owner, "'revoke' carries the hold's Owner");
    assert.equal(holder.isOwnedByCurrentOwner(owner), false);

    // A revoke for a node that is gone resolves; bad arguments reject.
    await attemptRevoke(other, node);
    await assert.rejects(attemptRevoke(other, 'no-slash'), { code: 'ZKR_INVALID_ARGUMENT' });
    await assert.rejects(attemptRevoke({}, node), { code: 'ZKR_INVALID_ARGUMENT' });
    assert.throws(() => waiter.makeRevocable(42), { code: 'ZKR_INVALID_ARGUMENT' });
    await waiter.release({ owner: waiterOwner });
  } finally {
    await other.close();
  }
});

test("revocation: a raw __REVOKE__ (Curator's wire format) reaches a read/write lock's write half", async () => {
  const rw = new InterProcessReadWriteLock(client, uniquePath('revoke-rw'));
  const w = rw.writeLock().makeRevocable();
  const owner = new Owner();
  assert.equal(await w.acquire({ owner }), true);
  const revoked = nextEvent(w, 'revoke');
  const [node] = await w.participantNodes();
  // What Curator's Revoker (and every face's attemptRevoke) writes: the wire-level request.
  await client.setData(node, '__REVOKE__');
  assert.equal(await revoked, owner);
  await w.release({ owner });
  assert.deepEqual(await w.participantNodes(), []);
});

test('plain acquire() from two concurrent async tasks: the second is refused (ZKR_NOT_OWNER), never let in', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('plain-concurrent'));
  let inside = 0;
  let overlaps = 0;
  const task = async () => {
    await mutex.acquire();
    inside += 1;
    if (inside > 1) overlaps += 1;
    await sleep(20);
    inside -= 1;
    await mutex.release();
  };
  // Both acquires pending at once: two tasks for sure.
  const results = await Promise.allSettled([task(), task()]);
  assert.equal(overlaps, 0, 'both tasks were in the critical section');
  assert.equal(results[0].status, 'fulfilled');
  assert.equal(results[1].status, 'rejected');
  assert.equal(results[1].reason.code, 'ZKR_NOT_OWNER');
  assert.match(results[1].reason.message, /another async task.*withLock.*owner\.run.*new Owner/);
  assert.equal(mutex.isAcquiredInThisProcess(), false);
  // Owners make concurrent tasks safe (they contend, no refusal).
  await Promise.all([new Owner(), new Owner()].map((o) => mutex.withLock(() => sleep(5), { owner: o })));
});

test('plain acquire() while this thread holds the lock for another async flow is refused; the same flow re-enters', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('plain-flows'));
  // A flow that waits since before this test's first plain acquire is another task (as two
  // requests of a server are): refused while the lock is held for this flow.
  let open;
  const gate = new Promise((r) => (open = r));
  const laterTask = (async () => {
    await gate;
    return mutex.acquire({ timeoutMs: 100 });
  })();
  assert.equal(await mutex.acquire(), true);
  assert.equal(await mutex.acquire(), true, 'this flow re-enters, as API.md promises');
  open();
  await assert.rejects(laterTask, { code: 'ZKR_NOT_OWNER' });
  await mutex.release();
  await mutex.release();
  // Once released, the other flow may take it plainly.
  const again = (async () => {
    await mutex.acquire();
    await mutex.release();
    return 'ok';
  })();
  assert.equal(await again, 'ok');
});

test('a plain release that fails still counts the hold down: another flow then gets the real error, not ZKR_NOT_OWNER', async () => {
  const own = await Client.connect(zk.connectString);
  const mutex = new InterProcessMutex(own, uniquePath('failed-release'));
  let open;
  const gate = new Promise((r) => (open = r));
  const laterTask = (async () => {
    await gate;
    return mutex.acquire({ timeoutMs: 100 });
  })();
  assert.equal(await mutex.acquire(), true);
  await own.close();
  await assert.rejects(mutex.release(), { code: 'ZKR_CLOSED' });
  open();
  // The hold went with the release: the other flow is not refused as if this one still held.
  await assert.rejects(laterTask, { code: 'ZKR_CLOSED' });
});

test('an oversized request rejects at once, naming the sizes; a mutex held on the same client stays held', async () => {
  const mutex = new InterProcessMutex(client, uniquePath('oversized'));
  const owner = new Owner();
  const lost = [];
  mutex.on('lost', (o) => lost.push(o));
  assert.equal(await mutex.acquire({ owner }), true);
  const t0 = Date.now();
  const err = await client.create(`/${'q'.repeat(1000)}`, Buffer.alloc(1047552)).catch((e) => e);
  assert.equal(err.code, 'ZKR_INVALID_ARGUMENT', String(err));
  assert.match(err.message, /\d+ bytes on the wire .*over the 1048575-byte limit/);
  assert.ok(Date.now() - t0 < 5000, 'refused before sending, not after a timeout');
  // The session and the hold are untouched: a round trip works, nothing was lost.
  assert.equal(await client.exists(uniquePath('after-oversized')), null);
  assert.equal(client.state, 'CONNECTED');
  assert.equal(mutex.isHeldValid(owner), true);
  assert.deepEqual(lost, []);
  await mutex.release({ owner });
});

test('InterProcessSemaphoreV2: qty above maxLeases rejects at once with ZKR_INVALID_ARGUMENT', async () => {
  const sem = new InterProcessSemaphoreV2(client, uniquePath('semaphore-qty'), 2);
  await assert.rejects(sem.acquire({ qty: 3 }), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(sem.acquire({ qty: 3, timeoutMs: 1000 }), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.deepEqual(await sem.participantNodes(), []);
});

test("a held lock node deleted by another client is a lost hold: 'lost' with the owner, isHeldValid() false", async () => {
  const other = await Client.connect(zk.connectString);
  try {
    const mutex = new InterProcessMutex(client, uniquePath('deleted-node'));
    const owner = new Owner();
    assert.equal(await mutex.acquire({ owner }), true);
    const lost = nextEvent(mutex, 'lost');
    const [node] = await mutex.participantNodes();
    await other.delete(node);
    assert.equal(await lost, owner);
    assert.equal(mutex.isHeldValid(owner), false);
    await mutex.release({ owner }); // a lost hold releases cleanly (its node is gone already)
    assert.equal(mutex.isAcquiredInThisProcess(), false);
  } finally {
    await other.close();
  }
});

async function oneLease(c, name) {
  const leases = await new InterProcessSemaphoreV2(c, uniquePath(name), 1).acquire({ timeoutMs: 5000 });
  assert.ok(leases !== null && leases.length === 1);
  return leases[0];
}

test('lease.waitLost() does not settle while the lease is good, nor when the lease is returned', async () => {
  const lease = await oneLease(client, 'lease-good');
  assert.equal(await lease.waitLost({ timeoutMs: 0 }), null);
  assert.equal(await lease.waitLost({ timeoutMs: 300 }), null);
  assert.equal(await lease.waitLost({ lostPolicy: 'session', timeoutMs: 300 }), null);
  const waiting = lease.waitLost({ timeoutMs: 600 });
  await lease.release();
  assert.equal(lease.isReturned, true);
  assert.equal(await waiting, null, 'returning the lease does not settle a wait for its loss');
  // A lease already returned can no longer be lost: the wait is refused.
  await assert.rejects(lease.waitLost(), { code: 'ZKR_CLOSED', message: /was returned/ });
});

test('lease.waitLost() resolves with the session loss when the session expires', async () => {
  const own = await Client.connect(zk.connectString, { sessionTimeoutMs: 4000 });
  try {
    const lease = await oneLease(own, 'lease-expiry');
    const standard = lease.waitLost();
    const session = lease.waitLost({ lostPolicy: 'session', timeoutMs: 60000 });
    await own._expireSessionForTesting();
    const a = await standard;
    // 'standard': SUSPENDED (the connection dropped), LOST, or already the new session.
    assert.ok(
      (a.reason === LeaseLostReason.STATE && ['SUSPENDED', 'LOST'].includes(a.state)) ||
        (a.reason === LeaseLostReason.SESSION_CHANGED && a.state === null),
      JSON.stringify(a),
    );
    const b = await session;
    // 'session': only the session's loss counts.
    assert.ok(
      (b.reason === 'STATE' && b.state === 'LOST' && b.message === 'the ZooKeeper session was lost') ||
        (b.reason === 'SESSION_CHANGED' && b.state === null &&
          b.message === 'the ZooKeeper session changed (the lease went with the old one)'),
      JSON.stringify(b),
    );
    // Once the client runs on its new session, a new wait answers at once.
    await waitFor(() => own.state === 'CONNECTED' || own.state === 'RECONNECTED', { what: 'the new session' });
    assert.deepEqual(await lease.waitLost({ timeoutMs: 0 }), {
      reason: 'SESSION_CHANGED',
      state: null,
      message: 'the ZooKeeper session changed (the lease went with the old one)',
    });
    await lease.release(); // returning a lost lease is clean
  } finally {
    await own.close();
  }
});

test("lease.waitLost() resolves 'CLOSED' when the client is closed", async () => {
  const own = await Client.connect(zk.connectString);
  const lease = await oneLease(own, 'lease-closed');
  const waiting = [lease.waitLost(), lease.waitLost({ lostPolicy: 'session' })];
  await own.close();
  const closed = { reason: 'CLOSED', state: null, message: 'the client was closed' };
  assert.deepEqual(await Promise.all(waiting), [closed, closed]);
  assert.deepEqual(await lease.waitLost({ timeoutMs: 0 }), closed, 'after the close it answers at once');
});

test('lease.waitLost() refuses bad options with ZKR_INVALID_ARGUMENT', async () => {
  const bad = { code: 'ZKR_INVALID_ARGUMENT' };
  const lease = await oneLease(client, 'lease-bad');
  await assert.rejects(lease.waitLost({ lostPolicy: 'sometimes' }), { ...bad, message: /lostPolicy must be 'standard' or 'session'/ });
  await assert.rejects(lease.waitLost({ lostPolicy: 'SESSION' }), bad);
  await assert.rejects(lease.waitLost({ lostPolicy: 1 }), { ...bad, message: /lostPolicy/ });
  await assert.rejects(lease.waitLost({ policy: 'session' }), { ...bad, message: /lostPolicy/ });
  await assert.rejects(lease.waitLost({ timeoutMs: -1 }), { ...bad, message: /timeoutMs/ });
  await assert.rejects(lease.waitLost({ timeoutMs: '10' }), bad);
  await assert.rejects(lease.waitLost({ timeoutMs: NaN }), bad);
  await assert.rejects(lease.waitLost('session'), bad);
  assert.equal(await lease.waitLost({ timeoutMs: 0 }), null, 'the lease is untouched');
  await lease.release();
});
