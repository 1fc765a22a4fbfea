// Issue 32: client.removeWatches, waitForState and maxRequestBytes; one shared watch per path
// (a node cache, a tree cache and watchers of both modes on one path of one client); a
// CuratorCache's pathFilter and replay for a listener added after start.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const { Client, CuratorCache, NodeCache, TreeCache, PersistentWatcher, WatcherType } = require('..');
const { useZooKeeper, uniquePath, waitFor } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

test('removeWatches removes one-shot watches by kind and ends a watcher with WATCH_REMOVED', async () => {
  const p = uniquePath('remove');
  await client.create(p, 'x', { createParents: true });
  const data = [];
  const children = [];
  await client.getData(p, { watch: (e) => data.push(e) });
  await client.exists(p, { watch: (e) => data.push(e) });
  await client.getChildren(p, { watch: (e) => children.push(e) });
  await assert.rejects(client.removeWatches(p, WatcherType.PERSISTENT), { code: 'ZKR_NO_WATCHER' });
  await client.removeWatches(p, WatcherType.DATA);
  await waitFor(() => data.length === 2, { what: 'two WATCH_REMOVED' });
  assert.deepEqual(data, [
    { type: 'WATCH_REMOVED', path: p },
    { type: 'WATCH_REMOVED', path: p },
  ]);
  await assert.rejects(client.removeWatches(p, 'DATA', { local: true }), { code: 'ZKR_NO_WATCHER' });
  await client.create(`${p}/k`);
  await waitFor(() => children.length === 1, { what: 'the child watch, untouched' });
  assert.deepEqual(children, [{ type: 'CHILDREN_CHANGED', path: p }]);

  const w = new PersistentWatcher(client, p, { recursive: true });
  const heard = [];
  w.on('event', (e) => heard.push(e));
  await w.start();
  await client.removeWatches(p, 'PERSISTENT_RECURSIVE', { local: true });
  await waitFor(() => heard.length === 1, { what: 'WATCH_REMOVED' });
  assert.deepEqual(heard, [{ type: 'WATCH_REMOVED', path: null }]);
  w.close();

  await assert.rejects(client.removeWatches(p, 'BOGUS'), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(client.removeWatches('relative', 'ANY'), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(client.removeWatches(p, 'ANY', { lokal: true }), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.deepEqual(Object.keys(WatcherType), ['CHILDREN', 'DATA', 'ANY', 'PERSISTENT', 'PERSISTENT_RECURSIVE']);
});

test('a node cache, a tree cache and watchers of both modes share one path of one client', async () => {
  const p = uniquePath('shared');
  await client.create(`${p}/a`, '', { createParents: 'persistent' });
  const node = new NodeCache(client, p);
  const tree = new TreeCache(client, p);
  const plain = new PersistentWatcher(client, p);
  const deep = new PersistentWatcher(client, p, { recursive: true });
  const plainHeard = [];
  const deepHeard = [];
  plain.on('event', (e) => plainHeard.push(e));
  deep.on('event', (e) => deepHeard.push(e));
  try {
    await node.start();
    await plain.start();
    await tree.start();
    await deep.start();
    assert.equal(await node.awaitInitialized(20000), true);
    assert.equal(await tree.awaitInitialized(20000), true);
    const other = await Client.connect(zk.connectString);
    try {
      await other.setData(p, 'root');
      await other.create(`${p}/a/deep`, 'd');
    } finally {
      await other.close();
    }
    await waitFor(() => deepHeard.length >= 2, { what: 'the recursive watcher' });
    await waitFor(() => plainHeard.length >= 1, { what: 'the plain watcher' });
    await waitFor(() => tree.get(`${p}/a/deep`) !== null, { what: 'the tree cache' });
    await waitFor(() => node.currentData?.data.toString() === 'root', { what: 'the node cache' });
    assert.deepEqual(deepHeard, [
      { type: 'DATA_CHANGED', path: p },
      { type: 'CREATED', path: `${p}/a/deep` },
    ]);
    assert.deepEqual(plainHeard, [{ type: 'DATA_CHANGED', path: p }]);
  } finally {
    for (const x of [node, tree, plain, deep]) x.close();
  }
});

test("a CuratorCache's pathFilter leaves nodes out; listen({ replay }) first hears the contents", async () => {
  const p = uniquePath('filter');
  await client.create(`${p}/skip/deep`, 's', { createParents: 'persistent' });
  await client.create(`${p}/keep`, 'k');
  const asked = [];
  const cache = new CuratorCache(client, p, {
    pathFilter: (path) => {
      asked.push(path);
      return !path.endsWith('/skip');
    },
  });
  try {
    await cache.start();
    assert.equal(await cache.awaitInitialized(20000), true);
    assert.deepEqual(cache.snapshot().map((n) => n.path), [p, `${p}/keep`]);
    assert.ok(asked.includes(`${p}/skip`), 'the filter was asked');
    const stat = await client.setData(`${p}/skip/deep`, 'ignored');
    const made = await client.setData(`${p}/keep`, 'k2');
    assert.ok(stat.mzxid < made.mzxid);
    assert.equal(await cache.awaitZxid(made.mzxid, 20000), true);
    assert.equal(cache.get(`${p}/skip/deep`), null);
    assert.equal(cache.get(`${p}/keep`).data.toString(), 'k2');

    // A listener added after start: the contents first (CREATED), then what happens next.
    const replayed = [];
    const id = cache.listen((e) => replayed.push(e), { replay: true });
    assert.equal(typeof id, 'bigint');
    await waitFor(() => replayed.length >= 2, { what: 'the replay' });
    assert.deepEqual(replayed.slice(0, 2).map((e) => [e.type, e.path]), [
      ['CREATED', p],
      ['CREATED', `${p}/keep`],
    ]);
    await client.create(`${p}/later`, 'l');
    await waitFor(() => replayed.some((e) => e.path === `${p}/later`), { what: 'a later event' });
    const plainId = cache.listen(() => {});
    assert.equal(cache.unlisten(plainId), true);
    assert.equal(cache.unlisten(id), true);
    assert.equal(cache.unlisten(id), false);
    assert.throws(() => new CuratorCache(client, p, { pathFilter: 'no' }), { code: 'ZKR_INVALID_ARGUMENT' });
    assert.throws(() => cache.listen('no'), { code: 'ZKR_INVALID_ARGUMENT' });
  } finally {
    cache.close();
  }
});

test('waitForState and maxRequestBytes', async () => {
  assert.equal(await client.waitForState({ timeoutMs: 0 }), true);
  assert.equal(await client.waitForState(), true);
  assert.equal(client.maxRequestBytes, 1048575);
  await assert.rejects(client.waitForState({ timeoutMs: -1 }), { code: 'ZKR_INVALID_ARGUMENT' });
  const small = await Client.connect(zk.connectString, { maxRequestBytes: 2048 });
  try {
    assert.equal(small.maxRequestBytes, 2048);
    const p = uniquePath('big');
    await assert.rejects(small.create(p, Buffer.alloc(3000), { createParents: true }), { code: 'ZKR_INVALID_ARGUMENT' });
    await small.create(p, Buffer.alloc(1000), { createParents: true });
  } finally {
    await small.close();
  }
  await assert.rejects(small.waitForState(), { code: 'ZKR_CLOSED' });
  await assert.rejects(Client.connect(zk.connectString, { maxRequestBytes: 10 }), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(Client.connect(zk.connectString, { maxRequestBytes: -1 }), { code: 'ZKR_INVALID_ARGUMENT' });
});
