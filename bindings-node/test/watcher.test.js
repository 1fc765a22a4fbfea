// Persistent watchers (Curator's PersistentWatcher) against a real ZooKeeper: a recursive watch
// hears every change below its path, a plain one its node and its children list; 'event'
// listeners and `for await`; a session expiry as SESSION_LOST then RECONNECTED with the watch set
// again; close; bad input.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const { Client, PersistentWatcher, WatcherEventType } = require('..');
const { useZooKeeper, uniquePath, waitFor } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

const pairs = (events) => events.map((e) => [e.type, e.path]);

test('a recursive watcher hears every change below its path until closed', async () => {
  const root = uniquePath('watcher');
  const w = new PersistentWatcher(client, root, { recursive: true });
  const heard = [];
  w.on('event', (e) => heard.push(e));
  assert.equal(w.started, false);
  await w.start();
  assert.equal(w.started, true);
  assert.equal(w.recursive, true);
  assert.equal(w.path, root);
  // The other mode on the same path of the same client shares the path's one watch (issue 32).
  const plain = new PersistentWatcher(client, root);
  await plain.start();
  plain.close();
  // Persistent parents: a container emptied by the delete below would be reaped by the server
  // at some point, and that deletion is an event the assertions below do not expect.
  await client.create(`${root}/a/b`, 'b', { createParents: 'persistent' });
  await client.setData(`${root}/a/b`, 'x');
  await client.delete(`${root}/a/b`);
  await waitFor(() => heard.length >= 5, { what: 'five events' });
  const expected = [
    ['CREATED', root],
    ['CREATED', `${root}/a`],
    ['CREATED', `${root}/a/b`],
    ['DATA_CHANGED', `${root}/a/b`],
    ['DELETED', `${root}/a/b`],
  ];
  assert.deepEqual(pairs(heard), expected);
  w.close();
  w.close();
  assert.equal(w.started, false);
  await assert.rejects(w.start(), { code: 'ZKR_CLOSED' });
  // Closed: a second watcher on the same path hears the next change, the first does not.
  const w2 = new PersistentWatcher(client, root, { recursive: true });
  const again = [];
  w2.on('event', (e) => again.push(e));
  await w2.start();
  await client.setData(root, 'z');
  await waitFor(() => again.length >= 1, { what: 'the set' });
  assert.deepEqual(pairs(again), [['DATA_CHANGED', root]]);
  assert.deepEqual(pairs(heard), expected);
  w2.close();
});

test('a plain watcher hears its node and its children list; for await ends at close', async () => {
  const root = uniquePath('plain');
  await client.create(root, '', { createParents: true });
  const w = new PersistentWatcher(client, root);
  await w.start();
  const seen = [];
  const loop = (async () => {
    for await (const e of w) seen.push([e.type, e.path]);
  })();
  await client.create(`${root}/c`, '');
  await client.create(`${root}/c/deep`, ''); // a grandchild: not heard
  await client.setData(root, 'v');
  await waitFor(() => seen.length >= 2, { what: 'two events' });
  w.close();
  await loop;
  assert.deepEqual(seen, [
    ['CHILDREN_CHANGED', root],
    ['DATA_CHANGED', root],
  ]);
  await assert.rejects(w.start(), { code: 'ZKR_CLOSED' });
});

test('a session expiry is SESSION_LOST then RECONNECTED, and the watch is set again', async () => {
  const root = uniquePath('expiry');
  const c = await Client.connect(zk.connectString, { sessionTimeoutMs: 10000 });
  try {
    const w = new PersistentWatcher(c, root, { recursive: true });
    const heard = [];
    w.on('event', (e) => heard.push(e));
    await w.start();
    await c._expireSessionForTesting();
    // (A RECONNECTED may come first: the old session can be resumed briefly before it expires;
    // the one that counts is the one after SESSION_LOST.)
    const afterLoss = () => {
      const lost = heard.findIndex((e) => e.type === 'SESSION_LOST');
      return lost >= 0 ? heard.slice(lost).find((e) => e.type === 'RECONNECTED') : undefined;
    };
    await waitFor(() => afterLoss() !== undefined, { timeoutMs: 30000, what: 'RECONNECTED after SESSION_LOST' });
    assert.equal(afterLoss().path, null);
    await client.create(`${root}/x`, '', { createParents: true });
    await waitFor(() => heard.some((e) => e.type === 'CREATED' && e.path === `${root}/x`), {
      what: 'a change on the new session',
    });
    w.close();
  } finally {
    await c.close();
  }
});

test('names and bad input', async () => {
  assert.deepEqual(Object.keys(WatcherEventType), [
    'CREATED',
    'DELETED',
    'DATA_CHANGED',
    'CHILDREN_CHANGED',
    'DISCONNECTED',
    'RECONNECTED',
    'SESSION_LOST',
    'WATCH_REMOVED',
  ]);
  assert.throws(() => new PersistentWatcher(client, 'no-slash'), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new PersistentWatcher(client, '/x', { recursive: 'yes' }), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new PersistentWatcher(client, '/x', { recurse: true }), { code: 'ZKR_INVALID_ARGUMENT' });
  assert.throws(() => new PersistentWatcher({}, '/x'), { code: 'ZKR_INVALID_ARGUMENT' });
  const w = new PersistentWatcher(client, '/x');
  await w.start();
  await assert.rejects(w.start(), { code: 'ZKR_INVALID_ARGUMENT' });
  w.close();
  const closed = await Client.connect(zk.connectString);
  await closed.close();
  assert.throws(() => new PersistentWatcher(closed, '/x'), { code: 'ZKR_CLOSED' });
});
