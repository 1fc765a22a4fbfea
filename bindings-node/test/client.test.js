// Client against a real ZooKeeper: options, plain operations, errors with codes, connection
// states, closing, and a process that exits by itself after close.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');

const zkr = require('..');
const { Client, ExponentialBackoffRetry, RetryNTimes, RetryOneTime, RetryForever, RetryUntilElapsed, BoundedExponentialBackoffRetry } = zkr;
const { useZooKeeper, uniquePath, waitFor, childrenLeft } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
}, { sessionTimeoutMs: 10000, connectionTimeoutMs: 5000 });

test('connects: state, session id, namespace', async () => {
  assert.equal(client.state, 'CONNECTED');
  assert.equal(typeof client.sessionId, 'bigint');
  assert.ok(client.sessionId > 0n);
  assert.equal(client.isClosed, false);
  assert.equal(client.namespace, '');
  assert.match(zkr.coreVersion, /^\d+\.\d+\.\d+/);
});

test('plain operations: create (modes, parents, protected), getData, setData, exists, getChildren, delete', async () => {
  const base = uniquePath('ops');
  assert.equal(await client.create(`${base}/a`, 'hello', { createParents: true }), `${base}/a`);
  const { data, stat } = await client.getData(`${base}/a`);
  assert.equal(data.toString(), 'hello');
  assert.equal(stat.version, 0);
  assert.equal(typeof stat.czxid, 'bigint');
  assert.equal(stat.ephemeralOwner, 0n);
  const newStat = await client.setData(`${base}/a`, Buffer.from([1, 2]), { version: 0 });
  assert.equal(newStat.version, 1);
  await assert.rejects(client.setData(`${base}/a`, 'x', { version: 0 }), { code: 'ZKR_BAD_VERSION' });
  const seqPath = await client.create(`${base}/s-`, new Uint8Array([9]), { mode: 'PERSISTENT_SEQUENTIAL' });
  assert.match(seqPath, /\/s-\d{10}$/);
  const eph = await client.create(`${base}/e`, null, { mode: 'EPHEMERAL' });
  assert.equal((await client.exists(eph)).ephemeralOwner, client.sessionId);
  const prot = await client.create(`${base}/p`, 'x', { mode: 'EPHEMERAL_SEQUENTIAL', protected: true });
  assert.match(prot, /\/_c_[0-9a-f-]{36}-p\d{10}$/);
  assert.deepEqual((await client.getChildren(base)).sort(), ['a', 'e', path.basename(prot), path.basename(seqPath)].sort());
  await assert.rejects(client.create(`${base}/a`), { code: 'ZKR_NODE_EXISTS', message: new RegExp(`${base}/a`) });
  await assert.rejects(client.delete(base), { code: 'ZKR_NOT_EMPTY' });
  await client.delete(base, { recursive: true });
  assert.equal(await client.exists(base), null);
  await assert.rejects(client.getData(`${base}/a`), { code: 'ZKR_NO_NODE', message: new RegExp(`${base}/a`) });
});

test('errors are Error objects with a code and the path in the message', async () => {
  const missing = uniquePath('missing');
  const err = await client.getData(missing).catch((e) => e);
  assert.ok(err instanceof Error);
  assert.equal(err.code, 'ZKR_NO_NODE');
  assert.ok(err.message.includes(missing), err.message);
  assert.equal(zkr.ErrorCode.NO_NODE, 'ZKR_NO_NODE');
});

test('bad inputs reject with ZKR_INVALID_ARGUMENT', async () => {
  const bad = { code: 'ZKR_INVALID_ARGUMENT' };
  await assert.rejects(client.getData('relative/path'), { ...bad, message: /relative\/path/ });
  await assert.rejects(client.getData('/trailing/'), bad);
  await assert.rejects(client.getData('/a//b'), bad);
  await assert.rejects(client.getData('/bad\u0001char'), bad);
  await assert.rejects(client.getData(42), bad);
  await assert.rejects(client.getData(), bad);
  await assert.rejects(client.create('/x', 42), bad);
  await assert.rejects(client.create('/x', 'x', { mode: 'FOREVER' }), bad);
  await assert.rejects(client.create('/x', 'x', { createParents: 'yes' }), bad);
  await assert.rejects(client.create('/x', 'x', 'not options'), bad);
  await assert.rejects(client.create('/x', Buffer.alloc(2 * 1024 * 1024)), bad);
  await assert.rejects(client.setData('/x', 'x', { version: 1.5 }), bad);
  await assert.rejects(client.delete('/x', { version: 'latest' }), bad);
  await assert.rejects(Client.connect(42), bad);
  await assert.rejects(Client.connect(''), bad);
  await assert.rejects(Client.connect('localhost:99999'), bad);
  await assert.rejects(Client.connect(zk.connectString, { sessionTimeoutMs: -1 }), bad);
  await assert.rejects(Client.connect(zk.connectString, { sessionTimeoutMs: 0 }), bad);
  await assert.rejects(Client.connect(zk.connectString, { connectionTimeoutMs: '1s' }), bad);
  await assert.rejects(Client.connect(zk.connectString, { retry: { kind: 'forever' } }), bad);
  assert.throws(() => new BoundedExponentialBackoffRetry(100, 10, 3), { ...bad, message: /max_sleep/ });
  await assert.rejects(Client.connect(zk.connectString, { namespace: 'bad//ns' }), bad);
  await assert.rejects(Client.connect(zk.connectString, { auth: { scheme: 'digest' } }), bad);
  await assert.rejects(Client.connect(zk.connectString, { acl: [{ perms: 64, scheme: 'world', id: 'anyone' }] }), bad);
  assert.throws(() => new RetryNTimes(-1, 10), bad);
  assert.throws(() => new RetryOneTime(), bad);
  assert.throws(() => new Client(), bad);
});

test('options: namespace, retry policies, auth and ACL are applied', async () => {
  const ns = uniquePath('ns').slice(1).replace('/', '-');
  const policies = [
    new ExponentialBackoffRetry(10, 3),
    new ExponentialBackoffRetry(10, 3, 100),
    new BoundedExponentialBackoffRetry(10, 100, 3),
    new RetryNTimes(2, 10),
    new RetryOneTime(10),
    new RetryUntilElapsed(1000, 10),
    new RetryForever(10),
  ];
  for (const [i, retry] of policies.entries()) {
    const c = await Client.connect(zk.connectString, { namespace: ns, retry });
    try {
      assert.equal(c.namespace, `/${ns}`);
      await c.create(`/k-${i}-${retry.kind}`, 'v', { createParents: true });
    } finally {
      await c.close();
    }
  }
  assert.equal((await client.getChildren(`/${ns}`)).length, policies.length, 'each client wrote under the namespace');
  // digest auth + creator-only ACL: the owner reads, an anonymous client may not.
  const owner = await Client.connect(zk.connectString, {
    auth: { scheme: 'digest', credentials: 'alice:secret' },
    acl: [{ perms: ['ALL'], scheme: 'auth', id: '' }],
  });
  // Under a persistent node of the test's own: a shared container parent may be reaped by the
  // server between a create of it and the owner's create (which makes no parents: its would
  // carry the owner's ACL).
  const dir = uniquePath('acl');
  await client.create(dir, null, { createParents: true });
  const p = `${dir}/n`;
  try {
    await owner.create(p, 'private');
    assert.equal((await owner.getData(p)).data.toString(), 'private');
    await assert.rejects(client.getData(p), { code: 'ZKR_NO_AUTH' });
  } finally {
    await owner.close();
  }
});

test("'state' events: SUSPENDED/LOST then RECONNECTED with a new session after expiry", async () => {
  const c = await Client.connect(zk.connectString, { sessionTimeoutMs: 4000 });
  try {
    const states = [];
    c.on('state', (s) => states.push(s));
    const before = c.sessionId;
    await c._expireSessionForTesting();
    await waitFor(() => states.includes('LOST') && states.at(-1) === 'RECONNECTED', { what: 'LOST then RECONNECTED' });
    assert.notEqual(c.sessionId, before, 'a new session after LOST');
    assert.equal(c.state, 'RECONNECTED');
    assert.ok(c._requestCounts().create >= 0);
  } finally {
    await c.close();
  }
});

test('a closed client rejects every call with ZKR_CLOSED; ephemerals are gone at once', async () => {
  const c = await Client.connect(zk.connectString);
  const p = uniquePath('closing');
  await c.create(p, 'x', { mode: 'EPHEMERAL', createParents: true });
  await c.close();
  await c.close(); // twice is fine
  assert.equal(c.isClosed, true);
  assert.equal(c.sessionId, 0n);
  assert.equal(await client.exists(p), null, 'the ephemeral node went with the session');
  for (const call of [() => c.getData(p), () => c.create(p), () => c.exists(p), () => c.getChildren('/'), () => c.delete(p)]) {
    await assert.rejects(call(), { code: 'ZKR_CLOSED' });
  }
});

test('connecting to a server that is not there times out with ZKR_TIMEOUT', async () => {
  await assert.rejects(Client.connect('127.0.0.1:1', { connectionTimeoutMs: 300 }), { code: 'ZKR_TIMEOUT' });
});

function runChild(script, timeoutMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--unhandled-rejections=strict', path.join(__dirname, 'fixtures', script), zk.connectString], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the child did not exit within ${timeoutMs} ms after close; output:\n${out}`));
    }, timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out });
    });
  });
}

test('the process exits by itself after close (locks, latches, selectors, counters used)', async () => {
  const { code, out } = await runChild('exit-after-close.js', 15000);
  assert.equal(code, 0, out);
  const report = JSON.parse(out.trim().split('\n').at(-1));
  assert.ok(report.closedAfterMs >= 0);
  // What the child left unreleased went with its session (the lock's container node may be
  // gone too, once the server's container check has run).
  const left = await childrenLeft(client, report.lockPath);
  assert.deepEqual(left, []);
});

test('an open client keeps the process alive until unref()', async () => {
  const { code, out } = await runChild('unref.js', 15000);
  assert.equal(code, 0, out);
  assert.match(out, /unref'd/);
});

test('a pending Promise keeps the process alive until it settles, and only until then', async () => {
  const { code, out } = await runChild('pending-keeps-alive.js', 15000);
  assert.equal(code, 0, out);
  assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)), { settled: 50 });
});

test('one-shot watches on getData / exists / getChildren', async () => {
  const p = uniquePath('watched');
  const other = await Client.connect(zk.connectString);
  const events = [];
  let wake = () => {};
  const record = (e) => {
    events.push(e);
    wake();
  };
  const nextWatchEvent = async () => {
    if (events.length === 0) {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no watch event within 10 s')), 10000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return events.shift();
  };
  try {
    assert.equal(await client.exists(p, { watch: record }), null);
    await other.create(p, 'v1', { createParents: true });
    assert.deepEqual(await nextWatchEvent(), { type: 'CREATED', path: p });

    assert.equal((await client.getData(p, { watch: record })).data.toString(), 'v1');
    await other.setData(p, 'v2');
    assert.deepEqual(await nextWatchEvent(), { type: 'DATA_CHANGED', path: p });
    await other.setData(p, 'v3'); // one-shot: fires nothing (the next event proves the order)

    assert.deepEqual(await client.getChildren(p, { watch: record }), []);
    await other.create(`${p}/kid`);
    assert.deepEqual(await nextWatchEvent(), { type: 'CHILDREN_CHANGED', path: p });

    assert.notEqual(await client.exists(`${p}/kid`, { watch: record }), null);
    await other.delete(`${p}/kid`);
    assert.deepEqual(await nextWatchEvent(), { type: 'DELETED', path: `${p}/kid` });
    assert.equal(events.length, 0);

    await assert.rejects(client.getData(p, { watch: 42 }), { code: 'ZKR_INVALID_ARGUMENT' });
    await assert.rejects(client.getData(`${p}/none`, { watch: record }), { code: 'ZKR_NO_NODE' });

    // A watch pending when its client closes ends with SESSION_ENDED.
    await other.getData(p, { watch: record });
    await other.close();
    assert.equal((await nextWatchEvent()).type, 'SESSION_ENDED');
  } finally {
    await other.close();
  }
});

test('ACL through recipes: a CREATOR_ALL counter and lock node refuse other identities, not the same digest', async () => {
  const base = uniquePath('acl-recipes');
  // Parents created by the owner would carry its ACL: keep the shared ones open.
  await client.create(base, null, { createParents: true });
  const owner = await Client.connect(zk.connectString, {
    auth: [
      { scheme: 'digest', credentials: 'alice:secret' },
      { scheme: 'digest', credentials: 'bob:pw' },
    ],
    acl: [{ perms: ['ALL'], scheme: 'auth', id: '' }],
  });
  const bob = await Client.connect(zk.connectString, { auth: { scheme: 'digest', credentials: 'bob:pw' } });
  try {
    const counter = new zkr.DistributedAtomicLong(owner, `${base}/counter`);
    assert.equal(await counter.addAndGet(3), 3n);
    const lock = new zkr.InterProcessMutex(owner, `${base}/lock`);
    const holder = new zkr.Owner();
    assert.equal(await lock.acquire({ owner: holder }), true);
    const [node] = await lock.participantNodes();
    await assert.rejects(client.getData(`${base}/counter`), { code: 'ZKR_NO_AUTH' });
    await assert.rejects(client.delete(node), { code: 'ZKR_NO_AUTH' });
    await assert.rejects(client.getChildren(`${base}/lock`), { code: 'ZKR_NO_AUTH' });
    // bob is one of the creator's identities: reads and deletes.
    assert.equal((await new zkr.DistributedAtomicLong(bob, `${base}/counter`).get()).postValue, 3n);
    await bob.delete(node);
    assert.equal(await owner.exists(node), null);
    await owner.delete(base, { recursive: true });
  } finally {
    await Promise.all([owner.close(), bob.close()]);
  }
});
