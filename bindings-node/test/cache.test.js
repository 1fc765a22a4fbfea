// Caches against a real ZooKeeper: the initial load (one INITIALIZED), iteration and get,
// 'event' listeners and `for await`, read-your-writes, a recreate as DELETED + CREATED, the
// views, a session expiry resync, bad input.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const { Client, CuratorCache, NodeCache, PathChildrenCache, TreeCache, CacheEventType, StartMode } = require('..');
const { useZooKeeper, uniquePath, waitFor } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

async function tree(root) {
  await client.create(root, 'root', { createParents: true });
  await client.create(`${root}/one`, '1');
  await client.create(`${root}/one/two`, '2');
  await client.create(`${root}/one/two/three`, '3');
}

test('initialized once; iteration, get, events, read-your-writes, recreate', async () => {
  const root = uniquePath('cache');
  await tree(root);
  const cache = new CuratorCache(client, root);
  const early = [];
  cache.on('event', (e) => early.push(e));
  await cache.start();
  try {
    assert.equal(await cache.awaitInitialized(10000), true);
    assert.equal(cache.initialized, true);
    assert.equal(cache.size, 4);
    assert.deepEqual(
      [...cache].map((n) => n.path),
      [root, `${root}/one`, `${root}/one/two`, `${root}/one/two/three`],
    );
    const three = cache.get(`${root}/one/two/three`);
    assert.equal(three.data.toString(), '3');
    assert.equal(typeof three.stat.czxid, 'bigint');
    assert.equal(cache.get(`${root}/nothing`), null);
    // awaitInitialized resolved after INITIALIZED was emitted: the early listener has it all.
    assert.deepEqual(
      early.map((e) => e.type),
      ['CREATED', 'CREATED', 'CREATED', 'CREATED', 'INITIALIZED'],
    );

    // A late listener hears only what happens next.
    const late = [];
    cache.on('event', (e) => late.push(e));
    const stat = await client.setData(`${root}/one`, 'x');
    assert.equal(await cache.awaitZxid(stat.mzxid, 10000), true);
    assert.equal(cache.get(`${root}/one`).data.toString(), 'x');
    await waitFor(() => late.length === 1, { what: 'the change' });
    assert.equal(late[0].type, CacheEventType.CHANGED);
    assert.equal(late[0].old.data.toString(), '1');
    assert.equal(late[0].new.data.toString(), 'x');
    assert.equal(late[0].resync, false);

    await client.delete(`${root}/one/two/three`);
    await client.create(`${root}/one/two/three`, 'again');
    await waitFor(() => late.length === 3, { what: 'the recreate' });
    assert.deepEqual(late.slice(1).map((e) => e.type), ['DELETED', 'CREATED']);
    assert.equal(early.filter((e) => e.type === 'INITIALIZED').length, 1);
  } finally {
    cache.close();
  }
  assert.equal(cache.size, 4); // the last snapshot stays readable
  await assert.rejects(cache.awaitInitialized(10), { code: 'ZKR_CLOSED' });
});

test('for await delivers events in order and ends at close', async () => {
  const root = uniquePath('iter');
  await client.create(root, '', { createParents: true });
  const cache = new CuratorCache(client, root);
  await cache.start();
  assert.equal(await cache.awaitInitialized(10000), true);
  const got = [];
  const consumed = (async () => {
    for await (const ev of cache) {
      got.push(`${ev.type} ${ev.path}`);
    }
  })();
  // One write per event seen: three quick writes may reach the cache as fewer events (its
  // read after the create can already see the second value), as in Curator.
  await client.create(`${root}/a`, '1');
  await waitFor(() => got.length === 1, { what: 'the CREATED' });
  await client.setData(`${root}/a`, '2');
  await waitFor(() => got.length === 2, { what: 'the CHANGED' });
  await client.delete(`${root}/a`);
  await waitFor(() => got.length === 3, { what: 'three events' });
  cache.close();
  await consumed; // close ends the loop
  assert.deepEqual(got, [`CREATED ${root}/a`, `CHANGED ${root}/a`, `DELETED ${root}/a`]);
});

test('views: NodeCache, PathChildrenCache start modes, TreeCache depth, stats only', async () => {
  const root = uniquePath('views');
  await client.create(`${root}/a/x/deep`, 'd', { createParents: true });
  await client.create(`${root}/b`, 'b');
  const node = new NodeCache(client, `${root}/a`);
  const kids = new PathChildrenCache(client, root, { cacheData: false, startMode: StartMode.BUILD_INITIAL_CACHE });
  const post = new PathChildrenCache(client, root, { startMode: 'POST_INITIALIZED_EVENT' });
  const postEvents = [];
  post.on('event', (e) => postEvents.push(e.type));
  const tree1 = new TreeCache(client, root, { maxDepth: 1 });
  const stats = new CuratorCache(client, root, { data: false });
  const all = [node, kids, post, tree1, stats];
  try {
    for (const c of all) await c.start();
    assert.equal(kids.initialized, true, 'BUILD_INITIAL_CACHE: start waits');
    for (const c of all) assert.equal(await c.awaitInitialized(10000), true);
    assert.deepEqual(all.map((c) => c.size), [1, 2, 2, 3, 5]);
    assert.equal(node.currentData.path, `${root}/a`);
    assert.deepEqual(kids.currentData.map((n) => n.path), [`${root}/a`, `${root}/b`]);
    assert.equal(kids.get(`${root}/a`).data, null);
    assert.equal(stats.get(`${root}/b`).data, null);
    assert.deepEqual(postEvents, ['CREATED', 'CREATED', 'INITIALIZED']);
  } finally {
    for (const c of all) c.close();
  }
});

test('a session expiry is resynced: RESYNCED and the server tree', async () => {
  const root = uniquePath('resync');
  const c = await Client.connect(zk.connectString, { sessionTimeoutMs: 10000 });
  try {
    await client.create(`${root}/keep`, 'k', { createParents: true });
    await client.create(`${root}/gone`, 'g');
    const cache = new CuratorCache(c, root);
    await cache.start();
    assert.equal(await cache.awaitInitialized(10000), true);
    const events = [];
    cache.on('event', (e) => events.push(e));
    await c._expireSessionForTesting();
    await client.delete(`${root}/gone`);
    await client.create(`${root}/new`, 'n');
    await waitFor(() => cache.resyncs >= 1, { timeoutMs: 30000, what: 'the resync' });
    const stat = await client.setData(`${root}/keep`, 'k2');
    assert.equal(await cache.awaitZxid(stat.mzxid, 10000), true);
    assert.deepEqual([...cache].map((n) => n.path), [root, `${root}/keep`, `${root}/new`]);
    // Listeners run on the event loop after the snapshot changed: a marker written now is heard
    // after every event emitted so far, duplicates included.
    const marker = await client.setData(`${root}/keep`, 'marker');
    assert.equal(await cache.awaitZxid(marker.mzxid, 10000), true);
    await waitFor(() => events.some((e) => e.new && e.new.data.toString() === 'marker'), {
      what: "the marker's CHANGED",
    });
    assert.ok(events.some((e) => e.type === 'RESYNCED'), 'RESYNCED');
    assert.equal(events.filter((e) => e.type === 'DELETED').length, 1);
    assert.equal(events.filter((e) => e.type === 'CREATED').length, 1);
    cache.close();
  } finally {
    await c.close();
  }
});

test('bad input is a coded error', async () => {
  assert.throws(() => new CuratorCache(client, 'no-slash'), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new CuratorCache(client, '/x', { depth: 1 }), /did you mean data|maxDepth/);
  assert.throws(() => new TreeCache(client, '/x', { maxDepth: -1 }), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new PathChildrenCache(client, '/x', { startMode: 'SOMETIMES' }), { code: 'ZKR_INVALID_ARGUMENT' });
  const cache = new CuratorCache(client, '/x');
  await assert.rejects(cache.awaitInitialized(0), { code: 'ZKR_INVALID_ARGUMENT' }); // not started
  await cache.start();
  await assert.rejects(cache.start(), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(cache.awaitInitialized(-5), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(cache.awaitZxid('12'), { code: 'ZKR_INVALID_ARGUMENT' });
  cache.close();
});

test('no event reaches a listener after close, not even one queued before it; awaitInitialized ends', async () => {
  const root = uniquePath('closed-events');
  await client.create(root, 'r', { createParents: true });
  const cache = new CuratorCache(client, root);
  await cache.start();
  assert.equal(await cache.awaitInitialized(10000), true);
  const heard = [];
  cache.on('event', (e) => heard.push(['event', e.type]));
  cache.listen((e) => heard.push(['listen', e.type]));
  const seen = [];
  const iterating = (async () => {
    for await (const e of cache) seen.push(e.type);
  })();
  await client.create(`${root}/a`, 'x');
  // Hold the JS thread (no await) while the change is applied and its events are queued
  // toward it, then close: those events were on their way before close.
  const until = Date.now() + 10000;
  while (cache.get(`${root}/a`) === null) assert.ok(Date.now() < until, 'the cache never saw the change');
  const queued = Date.now() + 200;
  while (Date.now() < queued);
  cache.close();
  await iterating;
  await client.exists(root); // a round trip: anything still queued has had its turn
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(heard, [], 'events reached listeners after close');
  assert.deepEqual(seen, []);
  // A cache closed before its initial load: awaitInitialized ends instead of waiting for an
  // INITIALIZED event that close drops.
  const early = new CuratorCache(client, root);
  await early.start();
  early.close();
  await early.awaitInitialized(10000).then(
    (ok) => assert.equal(typeof ok, 'boolean'),
    (err) => assert.equal(err.code, 'ZKR_CLOSED'),
  );
});
