// LeaderLatch and LeaderSelector against a real ZooKeeper: the seed scenario (10 clients take
// turns), events, AbortSignal cancellation, auto-requeue, and bad inputs.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { setTimeout: sleep } = require('node:timers/promises');

const { Client, LeaderLatch, LeaderSelector, LeaderObserver } = require('..');
const { useZooKeeper, uniquePath, waitFor, nextEvent, childrenLeft } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

const seq = (latch) => Number(latch.ourPath.slice(latch.ourPath.lastIndexOf('latch-') + 6));

test('seed: 10 LeaderLatch clients take turns, one leader at a time, in join order', async () => {
  const latchPath = uniquePath('seed-latch');
  const clients = await Promise.all(Array.from({ length: 10 }, () => Client.connect(zk.connectString)));
  try {
    const latches = clients.map((c, i) => new LeaderLatch(c, latchPath, { id: `client-${i}` }));
    const becameLeader = new Map();
    for (const l of latches) l.on('isLeader', () => becameLeader.set(l.id, (becameLeader.get(l.id) ?? 0) + 1));
    await Promise.all(latches.map((l) => l.start()));
    const joinOrder = [...latches].sort((a, b) => seq(a) - seq(b)).map((l) => l.id);
    let remaining = [...latches];
    const turns = [];
    while (remaining.length > 0) {
      const leader = await Promise.any(
        remaining.map((l) => l.await({ timeoutMs: 10000 }).then((ok) => (ok ? l : Promise.reject(new Error('no leadership'))))),
      );
      const leaders = remaining.filter((l) => l.hasLeadership());
      assert.deepEqual(leaders.map((l) => l.id), [leader.id], 'exactly one leader');
      assert.deepEqual(await leader.getLeader(), { id: leader.id, isLeader: true });
      const participants = await leader.getParticipants();
      assert.equal(participants.length, remaining.length);
      assert.equal(participants.filter((p) => p.isLeader).length, 1);
      assert.equal(typeof leader.leadershipEpoch, 'bigint');
      turns.push(leader.id);
      await leader.close();
      assert.equal(leader.hasLeadership(), false);
      remaining = remaining.filter((l) => l !== leader);
    }
    assert.deepEqual(turns, joinOrder, 'leadership follows the order of joining');
    await waitFor(() => becameLeader.size === 10, { what: "every 'isLeader' event" });
    assert.ok([...becameLeader.values()].every((n) => n === 1));
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
});

test("LeaderLatch emits 'isLeader', and 'notLeader' on close with NOTIFY_LEADER", async () => {
  const latch = new LeaderLatch(client, uniquePath('events'), { id: 'me', closeMode: 'NOTIFY_LEADER' });
  assert.equal(latch.state, 'LATENT');
  const isLeader = nextEvent(latch, 'isLeader');
  await latch.start();
  await isLeader;
  assert.equal(latch.state, 'STARTED');
  assert.ok(latch.hasLeadership());
  assert.equal(await latch.await({ timeoutMs: 0 }), true);
  const notLeader = nextEvent(latch, 'notLeader');
  await latch.close();
  await notLeader;
  assert.equal(latch.state, 'CLOSED');
  assert.deepEqual(await new LeaderLatch(client, latch.path).getLeader(), { id: '', isLeader: false });
});

test('LeaderLatch.await times out with false for a follower; bad inputs are rejected', async () => {
  const latchPath = uniquePath('follower');
  const first = new LeaderLatch(client, latchPath, { id: 'first' });
  await first.start();
  assert.equal(await first.await({ timeoutMs: 5000 }), true);
  const other = await Client.connect(zk.connectString);
  try {
    const second = new LeaderLatch(other, latchPath, { id: 'second' });
    await second.start();
    assert.equal(await second.await({ timeoutMs: 100 }), false);
    const participants = await second.getParticipants();
    assert.deepEqual(participants, [
      { id: 'first', isLeader: true },
      { id: 'second', isLeader: false },
    ]);
    await assert.rejects(second.await({ timeoutMs: -1 }), { code: 'ZKR_INVALID_ARGUMENT' });
    await assert.rejects(second.start(), { code: 'ZKR_INVALID_ARGUMENT', message: /start/ }, 'started twice');
    await second.close();
  } finally {
    await other.close();
    await first.close();
  }
  const bad = { code: 'ZKR_INVALID_ARGUMENT' };
  assert.throws(() => new LeaderLatch(client, '/'), bad);
  assert.throws(() => new LeaderLatch(client, 'relative'), bad);
  assert.throws(() => new LeaderLatch(client, '/x', { id: 5 }), bad);
  assert.throws(() => new LeaderLatch(client, '/x', { closeMode: 'LOUD' }), bad);
  assert.throws(() => new LeaderLatch(client, '/x', { id: 'a\0b' }), bad);
});

test('LeaderSelector with auto-requeue: 3 participants lead in turn, never two at once', async () => {
  const leaderPath = uniquePath('selector');
  const clients = await Promise.all(Array.from({ length: 3 }, () => Client.connect(zk.connectString)));
  const terms = [];
  let leading = 0;
  let overlaps = 0;
  const selectors = clients.map(
    (c, i) =>
      new LeaderSelector(
        c,
        leaderPath,
        async (ctx) => {
          leading += 1;
          if (leading > 1) overlaps += 1;
          terms.push({ id: ctx.id, term: ctx.term, token: ctx.fencingToken });
          assert.equal(ctx.signal.aborted, false);
          await sleep(20);
          leading -= 1;
        },
        { id: `s${i}`, autoRequeue: true },
      ),
  );
  try {
    selectors.forEach((s) => s.start());
    await waitFor(() => terms.length >= 9, { what: '9 leadership terms', timeoutMs: 20000 });
    await Promise.all(selectors.map((s) => s.close()));
    assert.equal(overlaps, 0, 'two takeLeadership calls overlapped');
    for (const s of selectors) {
      assert.ok(s.leadershipCount >= 2, `${s.id} led ${s.leadershipCount} times: the queue is fair with auto-requeue`);
      assert.equal(s.state, 'CLOSED');
    }
    for (let i = 1; i < terms.length; i++) assert.ok(terms[i].token > terms[i - 1].token, 'fencing tokens increase');
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
});

test('LeaderSelector: ctx.signal aborts on interruptLeadership() and on close()', async () => {
  const leaderPath = uniquePath('signal');
  const reasons = [];
  let entered;
  let enteredP = new Promise((r) => (entered = r));
  const selector = new LeaderSelector(
    client,
    leaderPath,
    async (ctx) => {
      entered(ctx);
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      reasons.push({ reason: ctx.signal.reason.reason, code: ctx.signal.reason.code, cancelReason: ctx.cancelReason });
    },
    { id: 'interruptible', autoRequeue: true },
  );
  selector.start();
  await enteredP;
  assert.ok(selector.hasLeadership());
  assert.deepEqual(await selector.getLeader(), { id: 'interruptible', isLeader: true });
  enteredP = new Promise((r) => (entered = r));
  selector.interruptLeadership();
  await enteredP; // auto-requeue: leads again
  await selector.close();
  assert.deepEqual(reasons, [
    { reason: 'INTERRUPTED', code: 'ZKR_INTERRUPTED', cancelReason: 'INTERRUPTED' },
    { reason: 'CLOSED', code: 'ZKR_CLOSED', cancelReason: 'CLOSED' },
  ]);
  assert.equal(selector.hasLeadership(), false);
  assert.deepEqual(await childrenLeft(client, leaderPath), [], 'the leader node is gone after close');
});

test("LeaderSelector: an error thrown by takeLeadership is emitted as 'error', not an unhandled rejection", async () => {
  const boom = new Error('leader failed');
  const selector = new LeaderSelector(client, uniquePath('throws'), async () => {
    throw boom;
  });
  const error = nextEvent(selector, 'error');
  selector.start();
  assert.equal(await error, boom);
  await selector.close();
  assert.throws(() => selector.start(), { code: 'ZKR_CLOSED' });
  assert.throws(() => new LeaderSelector(client, '/x', 'not a function'), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new LeaderSelector(client, '/', async () => {}), { code: 'ZKR_INVALID_ARGUMENT' });
});

// Waits (bounded) until the observed leader is `id`: changes may coalesce between two waits.
async function leaderBecomes(observer, id, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  while (observer.leader.id !== id) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`the observed leader is ${JSON.stringify(observer.leader)}, not ${id}`);
    await observer.waitChanged({ timeoutMs: left });
  }
  return observer.leader;
}

test('LeaderObserver follows a latch group without joining it', async () => {
  const groupPath = uniquePath('observed-latch');
  const [a, b] = await Promise.all([Client.connect(zk.connectString), Client.connect(zk.connectString)]);
  const observer = new LeaderObserver(client, groupPath);
  assert.equal(observer.leader, null, 'null before start');
  assert.equal(await observer.start(), observer);
  try {
    assert.equal(observer.path, groupPath);
    assert.deepEqual(observer.leader, { id: '', isLeader: false }, 'nobody leads a group that does not exist');
    const heard = [];
    observer.on('change', (p) => heard.push(p));
    assert.equal(await observer.waitChanged({ timeoutMs: 100 }), null, 'no change: null after the timeout');

    const latchA = new LeaderLatch(a, groupPath, { id: 'a' });
    await latchA.start();
    assert.deepEqual(await observer.waitChanged({ timeoutMs: 10000 }), { id: 'a', isLeader: true });
    const latchB = new LeaderLatch(b, groupPath, { id: 'b' });
    await latchB.start();
    await waitFor(async () => (await latchB.getParticipants()).length === 2, { what: 'b joined' });
    assert.equal(observer.leader.id, 'a', 'a follower joining changes nothing');
    await latchA.close();
    assert.deepEqual(await leaderBecomes(observer, 'b'), { id: 'b', isLeader: true });
    // waitChanged may first hand out the 'b' change leaderBecomes saw by polling: read changes
    // until nobody leads (each wait bounded; null = timed out, which fails the assertion).
    const pending = (async () => {
      for (;;) {
        const p = await observer.waitChanged({ timeoutMs: 10000 });
        if (p === null || p.id === '') return p;
      }
    })();
    await latchB.close();
    assert.deepEqual(await pending, { id: '', isLeader: false });
    await waitFor(() => heard.map((p) => p.id).join(',') === 'a,b,', { what: "'change' events a, b, nobody" });
    // No node of the observer's in the group (an empty group is a container the server may reap).
    const left = await childrenLeft(client, groupPath);
    assert.deepEqual(left, [], 'the observer has no node in the group');
  } finally {
    await observer.close();
    await Promise.all([a.close(), b.close()]);
  }
  await observer.close(); // idempotent
  assert.equal(observer.leader, null);
  await assert.rejects(observer.waitChanged(), { code: 'ZKR_CLOSED' });
  await assert.rejects(observer.start(), { code: 'ZKR_CLOSED' });
});

test('LeaderObserver sees a LeaderSelector; close rejects a pending waitChanged; bad input', async () => {
  const groupPath = uniquePath('observed-selector');
  const other = await Client.connect(zk.connectString);
  let release;
  const released = new Promise((r) => (release = r));
  const selector = new LeaderSelector(other, groupPath, async () => released, { id: 'sel-1' });
  const observer = await new LeaderObserver(client, groupPath).start();
  try {
    selector.start();
    assert.deepEqual(await leaderBecomes(observer, 'sel-1'), { id: 'sel-1', isLeader: true });
    await assert.rejects(observer.start(), { code: 'ZKR_INVALID_ARGUMENT' });
    await assert.rejects(observer.waitChanged({ timeoutMs: -5 }), { code: 'ZKR_INVALID_ARGUMENT' });
    // leaderBecomes may have seen sel-1 by polling `leader` without consuming the change:
    // consume it, so that the next waitChanged really waits.
    while ((await observer.waitChanged({ timeoutMs: 200 })) !== null);
    const pending = observer.waitChanged();
    await observer.close();
    await assert.rejects(pending, { code: 'ZKR_CLOSED' });
  } finally {
    release();
    await selector.close();
    await other.close();
    await observer.close();
  }
  assert.throws(() => new LeaderObserver(client, 'no-slash'), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new LeaderObserver({}, groupPath), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(new LeaderObserver(client, groupPath).waitChanged(), { code: 'ZKR_CLOSED' });
});

test('a LeaderObserver closed while its start fails stays closed', async () => {
  const { FaultProxy } = require('../testing');
  const { RetryNTimes } = require('..');
  const proxy = await FaultProxy.start(zk.connectString);
  const c = await Client.connect(proxy.connectString, {
    sessionTimeoutMs: 10000,
    connectionTimeoutMs: 1000,
    retry: new RetryNTimes(1, 10),
  });
  try {
    const observer = new LeaderObserver(c, uniquePath('observer-closed'));
    await proxy.cut();
    const starting = observer.start();
    observer.close();
    await assert.rejects(starting);
    await assert.rejects(observer.start(), { code: 'ZKR_CLOSED' });
  } finally {
    await proxy.restore();
    await c.close();
    await proxy.close();
  }
});
