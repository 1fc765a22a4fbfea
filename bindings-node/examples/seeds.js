#!/usr/bin/env node
// The seeds' scenarios, from Node, against the ZooKeeper given as the first argument:
// 100 concurrent withLock tasks on one InterProcessMutex (with an overlap check), 10 clients
// taking turns in a LeaderLatch, 10 workers x 100 increments on a DistributedAtomicLong.
// Prints what happened; exits 0 only if every scenario went right.
//
//   node bindings-node/examples/seeds.js 127.0.0.1:2181
'use strict';

const { setTimeout: sleep } = require('node:timers/promises');
const { Client, InterProcessMutex, LeaderLatch, DistributedAtomicLong } = require('..');

const ms = (t0) => `${(performance.now() - t0).toFixed(0)} ms`;

async function mutexScenario(client, run) {
  const mutex = new InterProcessMutex(client, `${run}/lock`);
  let inside = 0;
  let overlaps = 0;
  const tokens = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 100 }, () =>
      mutex.withLock(
        async () => {
          if (inside++ !== 0) overlaps++;
          tokens.push(mutex.fencingToken);
          await sleep(1); // hold it briefly, as the seed does
          inside--;
        },
        { timeoutMs: 60000 },
      ),
    ),
  );
  const increasing = tokens.every((t, i) => i === 0 || t > tokens[i - 1]);
  console.log(
    `  mutex: ${tokens.length}/100 tasks held ${run}/lock, ${overlaps} overlaps, ` +
      `fencing tokens strictly increasing: ${increasing}, ${ms(t0)}`,
  );
  if (overlaps !== 0 || !increasing || tokens.length !== 100) throw new Error('mutual exclusion or fencing violated');
}

async function latchScenario(connect, run) {
  const path = `${run}/latch`;
  const members = [];
  try {
    for (let i = 0; i < 10; i++) {
      const c = await Client.connect(connect);
      const latch = new LeaderLatch(c, path, { id: `client-${i}` });
      members.push({ c, latch });
      await latch.start();
    }
    const order = [];
    while (members.length > 0) {
      // Wait until one member leads, check it is the only one, then let it step down.
      const leader = await Promise.any(
        members.map((m) => m.latch.await({ timeoutMs: 30000 }).then((ok) => (ok ? m : Promise.reject(new Error('no leader within 30 s'))))),
      );
      const leading = members.filter((m) => m.latch.hasLeadership());
      if (leading.length !== 1) throw new Error(`${leading.length} leaders at once: ${leading.map((m) => m.latch.id)}`);
      order.push(leader.latch.id);
      members.splice(members.indexOf(leader), 1);
      await leader.latch.close();
      await leader.c.close();
    }
    console.log(`  latch: leaders in turn: ${order.join(' -> ')}`);
    if (new Set(order).size !== 10) throw new Error(`expected 10 distinct leaders, got ${order}`);
  } finally {
    await Promise.all(members.map((m) => m.c.close()));
  }
}

async function counterScenario(connect, run) {
  const path = `${run}/counter`;
  const clients = await Promise.all(Array.from({ length: 10 }, () => Client.connect(connect)));
  try {
    const t0 = performance.now();
    await Promise.all(
      clients.map(async (c) => {
        const counter = new DistributedAtomicLong(c, path);
        for (let i = 0; i < 100; i++) await counter.addAndGet(1, { timeoutMs: 30000 });
      }),
    );
    const value = (await new DistributedAtomicLong(clients[0], path).get()).postValue;
    const writes = clients.reduce((n, c) => n + c._requestCounts().setData, 0);
    console.log(`  counter: final value ${value} (expected 1000) after ${writes} ZooKeeper writes, ${ms(t0)}`);
    if (value !== 1000n) throw new Error(`lost or doubled increments: ${value} != 1000`);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}

async function main() {
  const connect = process.argv[2] ?? '127.0.0.1:2181';
  const run = `/zkrecipes-seeds/node-${process.pid}`;
  let client;
  try {
    client = await Client.connect(connect);
  } catch (err) {
    console.error(`cannot connect to ${connect}: ${err.code}: ${err.message}`);
    return 2;
  }
  const results = [];
  for (const [name, scenario] of [
    ['InterProcessMutex: 100 concurrent withLock tasks', () => mutexScenario(client, run)],
    ['LeaderLatch: 10 clients in turn', () => latchScenario(connect, run)],
    ['DistributedAtomicLong: 10 x 100 increments', () => counterScenario(connect, run)],
  ]) {
    try {
      await scenario();
      results.push([name, null]);
    } catch (err) {
      results.push([name, err]);
    }
  }
  await client.delete(run, { recursive: true }).catch(() => {});
  await client.close();
  for (const [name, err] of results) {
    console.log(err ? `FAIL  ${name}: ${err.code ? `${err.code}: ` : ''}${err.message}` : `PASS  ${name}`);
  }
  return results.some(([, err]) => err) ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err);
    process.exitCode = 1;
  },
);
