// Nodes and membership against a real ZooKeeper: transactions (all or nothing, the failing
// index), TTL modes, persistent parents, Curator's GZIP, PersistentNode, PersistentTtlNode,
// GroupMember (payloads, changes, leaving, the same id from two sessions is ZKR_CONFLICT).
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const { Client, CreateMode, ErrorCode, GroupMember, PersistentNode, PersistentTtlNode, Transaction } = require('..');
const { useZooKeeper, uniquePath, waitFor, nextEvent, childrenLeft } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

test('a failing check aborts the whole transaction and names its index', async () => {
  const p = uniquePath('txn');
  await client.create(p, 'v0', { createParents: true });
  const txn = client.transaction().create(`${p}/a`, 'a').setData(p, 'v1').check(p, 7).create(`${p}/b`);
  assert.ok(txn instanceof Transaction);
  await assert.rejects(txn.commit(), (err) => err.code === ErrorCode.BAD_VERSION && err.index === 2);
  assert.equal(await client.exists(`${p}/a`), null, 'an aborted create was applied');
  assert.equal((await client.getData(p)).data.toString(), 'v0');

  const results = await client
    .transaction()
    .check(p, 0)
    .create(`${p}/ttl`, null, { mode: CreateMode.PERSISTENT_WITH_TTL, ttlMs: 60000 })
    .setData(p, 'v1', { version: 0 })
    .delete(`${p}/ttl`)
    .commit();
  assert.deepEqual(results.map((r) => r.type), ['check', 'create', 'setData', 'delete']);
  assert.equal(results[1].path, `${p}/ttl`);
  assert.equal(results[2].stat.version, 1);
  await assert.rejects(client.transaction().check(p, 1).check('no slash', 0).commit(), (err) => err.code === ErrorCode.INVALID_ARGUMENT && err.index === 1);
});

test('TTL modes, persistent parents and compressed data', async () => {
  const p = uniquePath('framework');
  await client.create(`${p}/ttl`, null, { mode: CreateMode.PERSISTENT_WITH_TTL, ttlMs: 300, createParents: 'persistent' });
  await waitFor(async () => (await client.exists(`${p}/ttl`)) === null, { timeoutMs: 10000, what: 'the TTL node to be reaped' });
  assert.notEqual(await client.exists(p), null, 'a persistent parent was reaped');
  await assert.rejects(client.create(`${p}/x`, null, { mode: CreateMode.PERSISTENT_WITH_TTL }), { code: ErrorCode.INVALID_ARGUMENT });
  await assert.rejects(client.create(`${p}/x`, null, { ttlMs: 100 }), { code: ErrorCode.INVALID_ARGUMENT });
  await assert.rejects(client.create(`${p}/x`, null, { createParents: 'yes' }), { code: ErrorCode.INVALID_ARGUMENT });

  const plain = Buffer.from('compress me '.repeat(50));
  await client.create(`${p}/z`, plain, { compressed: true });
  const raw = (await client.getData(`${p}/z`)).data;
  assert.deepEqual(raw.subarray(0, 10), GZIP_HEADER);
  assert.ok(raw.length < plain.length / 4);
  assert.deepEqual((await client.getData(`${p}/z`, { compressed: true })).data, plain);
  const stat = await client.setData(`${p}/z`, '', { version: 0, compressed: true });
  assert.equal(stat.version, 1);
  assert.equal((await client.getData(`${p}/z`, { compressed: true })).data.length, 0);
  await assert.rejects(client.getData(p, { compressed: true }), { code: ErrorCode.CORRUPTED_DATA });
});

test('a persistent node comes back after a delete and a session expiry', async () => {
  const p = uniquePath('svc');
  const c = await Client.connect(zk.connectString, { sessionTimeoutMs: 10000 });
  try {
    const node = new PersistentNode(c, p, { mode: CreateMode.EPHEMERAL, data: 'addr' });
    const events = [];
    for (const e of ['registered', 'unregistered']) node.on(e, (path) => events.push([e, path]));
    await node.start();
    assert.equal(await node.waitForInitialCreate({ timeoutMs: 15000 }), true);
    assert.equal(node.actualPath, p);
    const first = await client.exists(p);
    assert.equal(first.ephemeralOwner, c.sessionId);
    await client.delete(p);
    await waitFor(async () => (await client.exists(p))?.czxid > first.czxid, { timeoutMs: 15000, what: 're-created after a delete' });
    node.setData('addr2');
    const old = c.sessionId;
    await c._expireSessionForTesting();
    await waitFor(
      async () => {
        const s = await client.exists(p);
        return s !== null && s.ephemeralOwner !== old && s.ephemeralOwner === c.sessionId && (await client.getData(p)).data.toString() === 'addr2';
      },
      { timeoutMs: 15000, what: 're-created in the new session with the new data' },
    );
    await waitFor(() => node.registered, { timeoutMs: 15000, what: 'registered again' });
    // Listeners run on the event loop after the node's state has changed: wait for the events
    // themselves (CI saw the check run before the last ones arrived).
    await waitFor(() => events.filter(([e]) => e === 'unregistered').length >= 2 && events.at(-1)[0] === 'registered', {
      timeoutMs: 15000,
      what: () => `the unregistered and registered events (so far ${JSON.stringify(events)})`,
    });
    assert.equal(events[0][0], 'registered');
    assert.ok(events.every(([, path]) => path === p));
    await node.close();
    assert.equal(await client.exists(p), null, 'close left the node');
  } finally {
    await c.close();
  }
});

test('members see each other, changes and leaving; the same id from another session is ZKR_CONFLICT', async () => {
  const p = uniquePath('group');
  const c2 = await Client.connect(zk.connectString);
  try {
    const a = new GroupMember(client, p, 'a', 'pa');
    const changes = [];
    a.on('change', (m) => changes.push(m));
    await a.start();
    const b = new GroupMember(c2, p, 'b', 'pb');
    await b.start();
    const view = (m) => Object.fromEntries([...m.currentMembers()].map(([k, v]) => [k, v.toString()]));
    await waitFor(() => view(a).b === 'pb', { timeoutMs: 15000, what: 'a to see b' });
    await waitFor(() => view(b).a === 'pa', { timeoutMs: 15000, what: 'b to see a' });

    const before = await client.exists(`${p}/a`);
    const dup = new GroupMember(c2, p, 'a', 'other');
    await assert.rejects(dup.start(), (err) => err.code === ErrorCode.CONFLICT && err.message.includes(`${p}/a`));
    await dup.close();
    assert.deepEqual(await client.exists(`${p}/a`), before, "the first member's node was touched");

    const iterated = (async () => {
      for await (const members of a) if (members.get('b')?.toString() === 'pb2') return true;
      return false;
    })();
    b.setThisData('pb2');
    assert.equal(await iterated, true);
    await b.close();
    await waitFor(() => !a.currentMembers().has('b'), { timeoutMs: 15000, what: 'a to see b leave' });
    await waitFor(() => changes.length > 0 && !changes.at(-1).has('b'), { timeoutMs: 5000, what: "the 'change' event of b leaving" });
    await a.close();
    assert.deepEqual(await childrenLeft(client, p), []);
  } finally {
    await c2.close();
  }
});

test('a TTL node stays while kept and goes within its TTL after close', async () => {
  const p = uniquePath('ttlnode');
  const node = new PersistentTtlNode(client, p, 600, { data: 'here' });
  await node.start();
  assert.equal(await node.waitForInitialCreate({ timeoutMs: 15000 }), true);
  await waitFor(async () => (await client.exists(`${p}/touch`)) !== null, { timeoutMs: 5000, what: 'the touch child' });
  const kept = Date.now();
  while (Date.now() - kept < 2400) {
    assert.notEqual(await client.exists(p), null, 'gone while kept');
    await new Promise((r) => setTimeout(r, 50));
  }
  await node.close();
  await waitFor(async () => (await client.exists(p)) === null, { timeoutMs: 600 + 4000, what: 'the TTL node to go' });
});

test('bad arguments are refused with ZKR_INVALID_ARGUMENT, unknown options named', async () => {
  assert.throws(() => new PersistentNode(client, '/'), { code: ErrorCode.INVALID_ARGUMENT });
  assert.throws(() => new PersistentNode(client, '/t', { mode: 'PERSISTENT_WITH_TTL' }), { code: ErrorCode.INVALID_ARGUMENT });
  assert.throws(() => new PersistentNode(client, '/t', { ttl: 5 }), (err) => err.code === ErrorCode.INVALID_ARGUMENT && /ttlMs/.test(err.message));
  assert.throws(() => new PersistentNode(client, '/t', { mode: 'NOPE' }), { code: ErrorCode.INVALID_ARGUMENT });
  assert.throws(() => new GroupMember(client, '/g', 'a/b'), { code: ErrorCode.INVALID_ARGUMENT });
  assert.throws(() => new GroupMember(client, '/g', 5), { code: ErrorCode.INVALID_ARGUMENT });
  assert.throws(() => new PersistentTtlNode(client, '/t', 0), { code: ErrorCode.INVALID_ARGUMENT });
  assert.throws(() => new PersistentNode({}, '/t'), { code: ErrorCode.INVALID_ARGUMENT });
  const node = new PersistentNode(client, uniquePath('never'));
  await assert.rejects(node.waitForInitialCreate({ timeoutMs: 0 }), (err) => err.code === ErrorCode.INVALID_ARGUMENT && /not started/.test(err.message));
  await node.close();
  assert.throws(() => node.setData('x'), { code: ErrorCode.CLOSED });
  assert.throws(() => client.transaction().check('/x'), { code: ErrorCode.INVALID_ARGUMENT });
  await assert.rejects(nextEvent(node, 'registered', { timeoutMs: 50 }), /no 'registered' event/);
});
