// The Node face's own promises, against a real ZooKeeper: the core's vocabulary (and index.d.ts
// agreeing with it), the timeout contract, misspelled options refused, panics contained as
// ZKR_INTERNAL, logging, and the warning for a held lock that is garbage-collected.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const zkr = require('..');
const { native } = require('../lib/native');
const { useZooKeeper, uniquePath, waitFor } = require('./helpers');
const { FaultProxy } = require('../testing');

const {
  Client,
  ErrorCode,
  CreateMode,
  WatchedEventType,
  ConnectionState,
  CancelReason,
  LogLevel,
  InterProcessMutex,
  InterProcessSemaphoreMutex,
  InterProcessSemaphoreV2,
  InterProcessMultiLock,
  LeaderLatch,
  LeaderSelector,
  LeaderObserver,
  DistributedAtomicLong,
  SharedCount,
  Owner,
  setLogger,
} = zkr;

let zk;
let client;
useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

const bad = { code: 'ZKR_INVALID_ARGUMENT' };

// The members of `export type NAME = 'A' | 'B' ...;` in index.d.ts.
function declaredUnion(name) {
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');
  const m = new RegExp(`export type ${name} =([^;]*);`).exec(dts);
  assert.ok(m, `index.d.ts declares type ${name}`);
  return [...m[1].matchAll(/'([A-Z_]+)'/g)].map((x) => x[1]);
}

test("the vocabulary is the core's, and index.d.ts spells the same lists", async () => {
  const words = native.vocabulary();
  assert.deepEqual(Object.values(ErrorCode), words.errorKinds.map((k) => `ZKR_${k.name}`));
  assert.equal(ErrorCode.CONFLICT, 'ZKR_CONFLICT');
  assert.deepEqual(
    words.errorKinds.find((k) => k.name === 'NO_NODE'),
    { name: 'NO_NODE', code: 300 },
    'the C status numbers come along',
  );
  for (const [name, values] of [
    ['ZkrErrorCode', Object.values(ErrorCode)],
    ['CreateMode', Object.keys(CreateMode)],
    ['WatchedEventType', Object.keys(WatchedEventType)],
    ['ConnectionState', Object.keys(ConnectionState)],
    ['CancelReason', Object.keys(CancelReason)],
    ['LeaseLostReason', Object.keys(zkr.LeaseLostReason)],
    ['LogLevelName', Object.keys(LogLevel)],
    ['ServiceTypeName', Object.keys(zkr.ServiceType)],
    ['ServiceCacheEventKindName', Object.keys(zkr.ServiceCacheEventKind)],
    ['PartitionState', Object.keys(zkr.PartitionState)],
  ]) {
    assert.deepEqual(declaredUnion(name).sort(), [...values].sort(), `index.d.ts's ${name}`);
  }
  // An error from the server: our code, and ZooKeeper's own.
  const err = await client.getData(uniquePath('missing')).catch((e) => e);
  assert.equal(err.code, ErrorCode.NO_NODE);
  assert.equal(err.zkCode, -101);
  assert.equal(await client.create(uniquePath('mode'), 'x', { mode: CreateMode.CONTAINER, createParents: true }).then(() => 'ok'), 'ok');
  await assert.rejects(client.create(uniquePath('mode'), 'x', { mode: 'FOREVER' }), { ...bad, message: /FOREVER.*PERSISTENT/ });
});

test('timeouts: omitted, null or Infinity wait without limit, 0 tries once, negative or NaN is refused', async () => {
  const p = uniquePath('timeouts');
  const holder = new Owner();
  const other = new Owner();
  const mutex = new InterProcessMutex(client, `${p}/mutex`);
  for (const timeoutMs of [undefined, null, Infinity]) {
    assert.equal(await mutex.acquire({ owner: holder, timeoutMs }), true, `timeoutMs ${timeoutMs}`);
  }
  assert.equal(await mutex.acquire({ owner: other, timeoutMs: 0 }), false, '0: one try, no wait');
  const semMutex = new InterProcessSemaphoreMutex(client, `${p}/semaphore-mutex`);
  const sem = new InterProcessSemaphoreV2(client, `${p}/semaphore`, 1);
  const multi = new InterProcessMultiLock(client, [`${p}/multi`]);
  const latch = new LeaderLatch(client, `${p}/latch`);
  const observer = await new LeaderObserver(client, `${p}/latch`).start();
  const counter = new DistributedAtomicLong(client, `${p}/counter`);
  const calls = {
    'mutex.acquire': (timeoutMs) => mutex.acquire({ owner: other, timeoutMs }),
    'mutex.withLock': (timeoutMs) => mutex.withLock(() => {}, { timeoutMs }),
    'semaphoreMutex.acquire': (timeoutMs) => semMutex.acquire({ timeoutMs }),
    'semaphore.acquire': (timeoutMs) => sem.acquire({ timeoutMs }),
    'multiLock.acquire': (timeoutMs) => multi.acquire({ owner: other, timeoutMs }),
    'latch.await': (timeoutMs) => latch.await({ timeoutMs }),
    'observer.waitChanged': (timeoutMs) => observer.waitChanged({ timeoutMs }),
    'counter.addAndGet': (timeoutMs) => counter.addAndGet(1, { timeoutMs }),
    'promotedToLock.timeoutMs': async (timeoutMs) => new DistributedAtomicLong(client, `${p}/c2`, { promotedToLock: { lockPath: `${p}/l2`, timeoutMs } }),
  };
  for (const [what, call] of Object.entries(calls)) {
    for (const timeoutMs of [-1, -0.5, NaN, -Infinity]) {
      const check = (e) => e.code === 'ZKR_INVALID_ARGUMENT' && /timeoutMs/.test(e.message) && /negative or not a number/.test(e.message);
      await assert.rejects(Promise.resolve().then(() => call(timeoutMs)), check, `${what} with ${timeoutMs}`);
    }
    await assert.rejects(Promise.resolve().then(() => call('10')), bad, `${what} with a string`);
  }
  await observer.close();
  await mutex.release({ owner: holder });
  await mutex.release({ owner: holder });
  await mutex.release({ owner: holder });
});

test('the native half reads owner ids in place: a negative or 64-bit-overflowing BigInt is ZKR_INVALID_ARGUMENT, anything else too; the fast mutex calls check their receiver', async () => {
  // lib/ only ever passes Owner ids; this is the native check behind it (src/args.rs OwnerId).
  const nm = new native.NativeMutex(Client._native(client), `${uniquePath('owner-ids')}/m`, () => {}, undefined, undefined);
  const owner = new Owner();
  for (const id of [-1n, 2n ** 64n, -(2n ** 64n)]) {
    await assert.rejects(nm.acquire(id, 0), (e) => e.code === 'ZKR_INVALID_ARGUMENT' && /owner id/.test(e.message), `acquire ${id}`);
    await assert.rejects(nm.release(id), (e) => e.code === 'ZKR_INVALID_ARGUMENT', `release ${id}`);
    assert.throws(() => nm.isOwnedBy(id), (e) => e.code === 'ZKR_INVALID_ARGUMENT', `isOwnedBy ${id}`);
  }
  for (const id of [1, '1', undefined, {}]) {
    await assert.rejects(nm.acquire(id, 0), (e) => e.code === 'ZKR_INVALID_ARGUMENT' && /not a BigInt/.test(e.message), `acquire ${typeof id}`);
  }
  // The largest id is an id: it acquires (another owner's), and 0n holds nothing.
  assert.equal(await nm.acquire(2n ** 64n - 1n, 0), true);
  assert.equal(nm.isOwnedBy(2n ** 64n - 1n), true);
  assert.equal(nm.isOwnedBy(owner.id), false);
  assert.equal(await nm.acquire(owner.id, 0), false, 'another owner of the same object contends');
  await assert.rejects(nm.release(0n), { code: 'ZKR_NOT_OWNER' });
  await nm.release(2n ** 64n - 1n);
  assert.equal(nm.isAcquiredInThisProcess(), false);

  // The fast calls lib/locks.js uses (src/lock.rs mutex_fast_calls): the same checks, and a
  // receiver that is not a NativeMutex (by its type tag) is refused before anything reads it.
  const fast = native.mutexFastCalls();
  await assert.rejects(fast.acquire(nm, -1n, 0), (e) => e.code === 'ZKR_INVALID_ARGUMENT' && /owner id/.test(e.message));
  const other = new native.NativeSemaphoreMutex(Client._native(client), `${uniquePath('owner-ids')}/s`);
  for (const receiver of [{}, other, Object.create(Object.getPrototypeOf(nm))]) {
    assert.throws(() => fast.acquire(receiver, owner.id, 0), /must be a NativeMutex/);
    assert.throws(() => fast.release(receiver, owner.id), /must be a NativeMutex/);
  }
  assert.throws(() => fast.acquire(1n, owner.id, 0), /NativeMutex|object/i);
  assert.equal(await fast.acquire(nm, owner.id, 0), true);
  assert.equal(nm.isOwnedBy(owner.id), true);
  await assert.rejects(fast.release(nm, 0n), { code: 'ZKR_NOT_OWNER' });
  await fast.release(nm, owner.id);
  assert.equal(nm.isAcquiredInThisProcess(), false);
});

test('a misspelled option is refused, naming the nearest valid one', async () => {
  const p = uniquePath('options');
  const mutex = new InterProcessMutex(client, `${p}/m`);
  const latch = new LeaderLatch(client, `${p}/latch`);
  const observer = new LeaderObserver(client, `${p}/latch`);
  const counter = new DistributedAtomicLong(client, `${p}/counter`);
  const shared = new SharedCount(client, `${p}/shared`, 0);
  const sem = new InterProcessSemaphoreV2(client, `${p}/sem`, 2);
  const typos = [
    ['sessionTimeout', 'sessionTimeoutMs', () => Client.connect(zk.connectString, { sessionTimeout: 5000 })],
    ['connectTimeoutMs', 'connectionTimeoutMs', () => Client.connect(zk.connectString, { connectTimeoutMs: 5000 })],
    ['schema', 'scheme', () => Client.connect(zk.connectString, { auth: { schema: 'digest', credentials: 'a:b' } })],
    ['perm', 'perms', () => Client.connect(zk.connectString, { acl: [{ perm: ['ALL'], scheme: 'auth', id: '' }] })],
    ['createParent', 'createParents', () => client.create(`${p}/x`, 'x', { createParent: true })],
    ['versoin', 'version', () => client.setData(`${p}/x`, 'x', { versoin: 1 })],
    ['recursively', 'recursive', () => client.delete(`${p}/x`, { recursively: true })],
    ['wacth', 'watch', () => client.getData(`${p}/x`, { wacth: () => {} })],
    ['timeout', 'timeoutMs', () => mutex.acquire({ timeout: 10 })],
    ['Owner', 'owner', () => mutex.release({ Owner: new Owner() })],
    ['timeout', 'timeoutMs', () => mutex.withLock(() => {}, { timeout: 10 })],
    ['lostpolicy', 'lostPolicy', async () => new InterProcessMutex(client, `${p}/m2`, { lostpolicy: 'session' })],
    ['ID', 'id', async () => new LeaderLatch(client, `${p}/latch2`, { ID: 'me' })],
    ['autoRequeu', 'autoRequeue', async () => new LeaderSelector(client, `${p}/sel`, async () => {}, { autoRequeu: true })],
    ['timeOutMs', 'timeoutMs', () => latch.await({ timeOutMs: 10 })],
    ['mode', 'closeMode', () => latch.close({ mode: 'SILENT' })],
    ['timeout', 'timeoutMs', () => observer.waitChanged({ timeout: 10 })],
    ['lockpath', 'lockPath', async () => new DistributedAtomicLong(client, `${p}/c`, { promotedToLock: { lockpath: `${p}/l` } })],
    ['retries', 'retry', async () => new DistributedAtomicLong(client, `${p}/c`, { retries: 3 })],
    ['timeout', 'timeoutMs', () => counter.addAndGet(1, { timeout: 10 })],
    ['quantity', 'qty', () => sem.acquire({ quantity: 2 })],
    ['val', 'value', () => shared.trySetCount({ version: 0, val: 0 }, 1)],
  ];
  for (const [key, nearest, call] of typos) {
    const check = (e) =>
      e.code === 'ZKR_INVALID_ARGUMENT' && e.message.includes(`unknown option "${key}"`) && e.message.includes(`did you mean ${nearest}?`);
    await assert.rejects(Promise.resolve().then(call), check, `${key} -> ${nearest}`);
  }
});

test('every native method body runs inside the one boundary (src/boundary.rs)', () => {
  // The boundary turns panics into ZKR_INTERNAL and core errors into coded errors; a body
  // outside it would abort the process on a panic. Read the sources: every #[napi] fn starts
  // with one of the boundary's entry points.
  const src = path.join(__dirname, '..', 'src');
  const entry = /^(sync|promise|promise_by|promise_on|promise_timed|boundary::sync|atomic_op!|add_op!|self\.read)\(/;
  const outside = [];
  let checked = 0;
  for (const file of fs.readdirSync(src).filter((f) => f.endsWith('.rs'))) {
    const lines = fs.readFileSync(path.join(src, file), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!/^\s*#\[napi(\(|\]$)/.test(lines[i]) || /#\[napi\(object\)\]/.test(lines[i])) continue;
      let j = i + 1;
      while (j < lines.length && /^\s*(#\[|\/\/)/.test(lines[j])) j++;
      if (!/^\s*pub fn /.test(lines[j])) continue; // a struct or an impl block
      while (!/\{$/.test(lines[j])) j++; // the end of the signature
      let k = j + 1;
      while (/^\s*(\/\/|use )/.test(lines[k])) k++;
      checked++;
      if (!entry.test(lines[k].trim())) outside.push(`${file}:${k + 1}: ${lines[k].trim()}`);
    }
  }
  assert.ok(checked > 80, `only ${checked} napi functions found: the scan is broken`);
  assert.deepEqual(outside, []);
});

test('a panic in the native layer is ZKR_INTERNAL, never an abort: sync methods, getters, constructors, Promises', async () => {
  const p = uniquePath('panics');
  const mutex = new InterProcessMutex(client, p);
  const internal = { code: 'ZKR_INTERNAL', message: /panicked.*panicForTesting/ };
  const sync = {
    'a getter': () => client.state,
    'a method': () => mutex.isAcquiredInThisProcess(),
    'a constructor': () => new InterProcessMutex(client, p),
    'a module function': () => new Owner(),
  };
  for (const [what, call] of Object.entries(sync)) {
    native.panicForTesting('sync');
    assert.throws(call, internal, what);
  }
  native.panicForTesting('sync');
  await assert.rejects(client.exists(p), internal, 'the synchronous part of an async method');
  native.panicForTesting('async');
  await assert.rejects(client.exists(p), internal, 'the future of an async method');
  // Everything still works.
  assert.equal(client.state, 'CONNECTED');
  assert.equal(await mutex.acquire({ owner: new Owner() }), true);
  assert.equal(mutex.isAcquiredInThisProcess(), true);
});

test('setLogger: a session expiry is a WARN record; setLogger(null) turns logging off', async () => {
  const records = [];
  setLogger((r) => records.push(r), 'INFO');
  const c = await Client.connect(zk.connectString, { sessionTimeoutMs: 4000 });
  try {
    await c._expireSessionForTesting();
    const warned = () => records.findIndex((r) => r.level === 'WARN' && r.target.startsWith('zkrecipes::client'));
    const reopened = () => records.findIndex((r) => r.level === 'INFO' && /new session/.test(r.message));
    await waitFor(() => warned() >= 0 && reopened() >= 0, { what: 'a WARN record from zkrecipes::client, then INFO' });
    assert.ok(warned() < reopened(), 'in the order they happened');
    const warn = records[warned()];
    assert.match(warn.message, /session/);
    assert.equal(typeof warn.fields, 'object');
  } finally {
    setLogger(null);
    await c.close();
  }
  const count = records.length;
  const quiet = await Client.connect(zk.connectString);
  await quiet.close();
  await zkr.Client.connect(zk.connectString).then((q) => q.close()); // a round trip later
  assert.equal(records.length, count, 'nothing after setLogger(null)');
  assert.throws(() => setLogger(() => {}, 'LOUD'), { ...bad, message: /LOUD/ });
  assert.throws(() => setLogger('stderr'), bad);
});

function runFixture(script, { env = {}, nodeArgs = [], timeoutMs = 30000, args = [] } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, path.join(__dirname, 'fixtures', script), zk.connectString, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not exit within ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test('ZKRECIPES_LOG=warn logs to stderr from the start: a session expiry is a WARN line', async () => {
  const { code, stdout, stderr } = await runFixture('expire-session.js', { env: { ZKRECIPES_LOG: 'warn' } });
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  assert.match(stderr, /^zkrecipes WARN zkrecipes::client\S*: /m);
  assert.doesNotMatch(stderr, /zkrecipes INFO /, 'INFO is below the level asked for');
});

test('a held lock that is garbage-collected warns ZKR_LOCK_GARBAGE_COLLECTED; a released one does not', async () => {
  const { code, stdout, stderr } = await runFixture('gc-held-lock.js', { nodeArgs: ['--expose-gc'] });
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  const report = JSON.parse(stdout.trim().split('\n').at(-1));
  assert.equal(report.warnings.length, 2, JSON.stringify(report));
  assert.ok(report.warnings.every((w) => w.code === 'ZKR_LOCK_GARBAGE_COLLECTED'));
  assert.ok(report.warnings.some((w) => w.message.includes(report.heldPath)), 'the held mutex is named');
  assert.ok(report.warnings.some((w) => w.message.includes('lease')), 'the held lease is named');
  assert.ok(!report.warnings.some((w) => w.message.includes(report.releasedPath)), 'no warning for the released one');
  // The node of the collected hold is still there (until the session ends).
  assert.equal(report.nodesLeft, 1);
});

test('a started recipe nothing references stays alive until closed or its client is; a closed one is collected', async () => {
  const { code, stdout, stderr } = await runFixture('gc-started-recipes.js', { nodeArgs: ['--expose-gc'], timeoutMs: 60000 });
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  const report = JSON.parse(stdout.trim().split('\n').at(-1));
  assert.deepEqual(report.whileOpen, ['closed', 'closedCache', 'closedDiscovery'], 'only the closed recipes were collected while the client was open');
  assert.deepEqual(report.kept, { node: true, latchNodes: 1, member: true, registered: true }, 'nodes, leadership, membership and registration kept');
  assert.deepEqual(report.afterClose, ['cache', 'closed', 'closedCache', 'closedDiscovery', 'count', 'discovery', 'latch', 'member', 'node'], 'all let go once the client closed');
});

test('a queue item collected before done(), fail() or release() is given back; a completed one is not', async () => {
  const { code, stdout, stderr } = await runFixture('gc-queue-item.js', { nodeArgs: ['--expose-gc'], timeoutMs: 60000 });
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  const report = JSON.parse(stdout.trim().split('\n').at(-1));
  assert.deepEqual(report, { taken: 'dropped', again: 'dropped', left: null });
});

test('the JS thread drives the runtime: calls start in its turns, concurrent adds go to the background driver, a lone add takes a turn; ZKR_NODE_LOOP_TURNS=0 goes through the background driver with the same results', async () => {
  const env = { ...process.env };
  delete env.ZKR_NODE_LOOP_TURNS;
  delete env.ZKR_RUNTIME_THREADS;
  const runs = {};
  // The burst's adds go through a proxy that delays each way by 2 ms: on a busy machine an add
  // on the plain loopback could be answered within its own turn (the JS thread descheduled
  // between its write and its look), so that none was ever pending when the next was made
  // (CI once saw 0 of 500 behind another).
  const proxy = await FaultProxy.start(zk.connectString);
  try {
    await proxy.delay(2);
    for (const [name, extra] of [['turns', {}], ['background', { ZKR_NODE_LOOP_TURNS: '0' }]]) {
      const { code, stdout, stderr } = await runFixture('loop-turns.js', {
        env: { ...env, ...extra },
        nodeArgs: ['--unhandled-rejections=strict'],
        timeoutMs: 120000,
        args: [proxy.connectString],
      });
      assert.equal(code, 0, stderr);
      runs[name] = JSON.parse(stdout.trim().split('\n').at(-1));
    }
  } finally {
    await proxy.close();
  }
  // Which way a call starts is decided on the JS thread, so it is exact; which thread settles
  // its Promise depends on timing (the background driver takes the runtime back after 5 ms
  // without a turn: on a loaded machine it settles many), so only the sums are exact there.
  const all = (r, n) => assert.equal(r.onTurn + r.queued, n, JSON.stringify(r));
  for (const r of Object.values(runs)) {
    assert.equal(r.held, 200);
    assert.equal(r.value, 200);
    all(r.cycles, 601);
    assert.equal(r.burstValue, 500, JSON.stringify(r));
    all(r.burst, 500);
    assert.equal(r.loneValue, 50, JSON.stringify(r));
    all(r.lone, 50);
  }
  // Without turns every call goes to the background driver, and every Promise comes from it.
  for (const part of ['cycles', 'burst', 'lone']) {
    const r = runs.background[part];
    assert.deepEqual([r.onTurn, r.startedOnTurn, r.startedBehind], [0, 0, 0], JSON.stringify(r));
  }
  // With turns, every call awaited one after another starts in a turn of the JS thread, and
  // their Promises are settled after its turns unless the background driver took the runtime
  // back meanwhile: some are, whatever the load.
  const t = runs.turns;
  assert.deepEqual([t.cycles.startedOnTurn, t.cycles.startedBehind], [601, 0], JSON.stringify(t.cycles));
  assert.ok(t.cycles.onTurn > 0, `no Promise settled after the JS thread's turns: ${JSON.stringify(t.cycles)}`);
  // Ten loops of increments at once: an add made while another add is pending goes to the
  // background driver (its chain runs off the JS thread). Only an add made when every other
  // had settled starts in a turn: the first, and one per batch of settles that emptied the set.
  assert.equal(t.burst.startedOnTurn + t.burst.startedBehind, 500, JSON.stringify(t.burst));
  assert.ok(t.burst.startedBehind > 250, `only ${t.burst.startedBehind} of 500 concurrent adds went to the background driver`);
  // Adds one by one while an acquire waits: alone of their kind, each starts in a turn.
  assert.deepEqual([t.lone.startedOnTurn, t.lone.startedBehind], [50, 0], JSON.stringify(t.lone));
});
