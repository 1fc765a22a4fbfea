// ACL administration and the connect options of secured ensembles, against a real ZooKeeper
// (the harness). TLS and SASL against secured servers are in secure.test.js.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { useZooKeeper, uniquePath } = require('./helpers');
const { Client, InterProcessMutex } = require('..');

let zk;
useZooKeeper((z) => {
  zk = z;
});

const OPEN = [{ perms: 31, scheme: 'world', id: 'anyone' }];
const READ = [{ perms: 1, scheme: 'world', id: 'anyone' }];
function digest(user, password) {
  const hash = crypto.createHash('sha1').update(`${user}:${password}`).digest('base64');
  return [{ perms: 31, scheme: 'digest', id: `${user}:${hash}` }];
}

test('getAcl and setAcl follow the ACL version', async () => {
  const c = await Client.connect(zk.connectString);
  try {
    const p = uniquePath('acl-version');
    await c.create(p, 'x', { createParents: true });
    let { acl, stat } = await c.getAcl(p);
    assert.deepEqual(acl, OPEN);
    assert.equal(stat.aversion, 0);
    stat = await c.setAcl(p, READ, { version: 0 });
    assert.equal(stat.aversion, 1);
    assert.deepEqual((await c.getAcl(p)).acl, READ);
    await assert.rejects(c.setData(p, 'y'), { code: 'ZKR_NO_AUTH' });
    await assert.rejects(c.getAcl(`${p}/missing`), { code: 'ZKR_NO_NODE' });
    await assert.rejects(c.setAcl(p, []), { code: 'ZKR_INVALID_ARGUMENT' });
    await assert.rejects(c.setAcl(p, READ, { versio: 1 }), /version/);
  } finally {
    await c.close();
  }
});

test('create({ acl }) and aclProvider (function and prefixes) choose each node\'s ACL', async () => {
  const base = uniquePath('acl-provider');
  const alice = digest('alice', 'secret');
  const seen = [];
  const owner = await Client.connect(zk.connectString, {
    auth: { scheme: 'digest', credentials: 'alice:secret' },
    aclProvider: (path) => {
      seen.push(path);
      if (path.endsWith('/boom')) throw new Error('provider refused');
      return path.includes('/private') ? alice : undefined;
    },
  });
  const anonymous = await Client.connect(zk.connectString);
  try {
    await anonymous.create(base, null, { createParents: true });
    await owner.create(`${base}/private/a`, null, { createParents: 'persistent' });
    await owner.create(`${base}/public`);
    assert.ok(seen.includes(`${base}/private`) && seen.includes(`${base}/private/a`), JSON.stringify(seen));
    assert.deepEqual((await owner.getAcl(`${base}/private/a`)).acl, alice);
    assert.deepEqual((await anonymous.getAcl(`${base}/public`)).acl, OPEN);
    await assert.rejects(anonymous.getData(`${base}/private/a`), { code: 'ZKR_NO_AUTH' });
    // A recipe's nodes go through the provider.
    const lock = new InterProcessMutex(owner, `${base}/private/lock`);
    await lock.withLock(async () => {
      const [name] = await owner.getChildren(`${base}/private/lock`);
      assert.deepEqual((await owner.getAcl(`${base}/private/lock/${name}`)).acl, alice);
    });
    // What the function throws fails the create; nothing is created.
    await assert.rejects(owner.create(`${base}/boom`), (e) => e.code === 'ZKR_INVALID_ARGUMENT' && /provider refused/.test(e.message));
    assert.equal(await anonymous.exists(`${base}/boom`), null);
    // A node's own ACL wins.
    await owner.create(`${base}/private/open`, null, { acl: OPEN });
    assert.deepEqual((await anonymous.getAcl(`${base}/private/open`)).acl, OPEN);
  } finally {
    await owner.close();
    await anonymous.close();
  }
  const mapped = await Client.connect(zk.connectString, {
    auth: { scheme: 'digest', credentials: 'alice:secret' },
    aclProvider: { [`${base}/m`]: alice },
  });
  try {
    await mapped.create(`${base}/m`);
    await mapped.create(`${base}/n`);
    assert.deepEqual((await mapped.getAcl(`${base}/m`)).acl, alice);
    assert.deepEqual((await mapped.getAcl(`${base}/n`)).acl, OPEN);
  } finally {
    await mapped.close();
  }
});

test('a transaction create takes its own { acl }', async () => {
  const base = uniquePath('acl-transaction');
  const alice = digest('alice', 'secret');
  const owner = await Client.connect(zk.connectString, { auth: { scheme: 'digest', credentials: 'alice:secret' } });
  const anonymous = await Client.connect(zk.connectString);
  try {
    await owner.create(base, null, { createParents: true });
    const results = await owner
      .transaction()
      .create(`${base}/private`, 'p', { acl: alice })
      .create(`${base}/open`, 'o')
      .commit();
    assert.deepEqual(results.map((r) => r.path), [`${base}/private`, `${base}/open`]);
    assert.deepEqual((await owner.getAcl(`${base}/private`)).acl, alice);
    assert.deepEqual((await owner.getAcl(`${base}/open`)).acl, OPEN);
    await assert.rejects(anonymous.getData(`${base}/private`), { code: 'ZKR_NO_AUTH' });
    assert.equal((await anonymous.getData(`${base}/open`)).data.toString(), 'o');
    // An empty ACL is refused when the operation is added: nothing is sent.
    assert.throws(() => owner.transaction().create(`${base}/never`, null, { acl: [] }), { code: 'ZKR_INVALID_ARGUMENT' });
    assert.equal(await owner.exists(`${base}/never`), null);
  } finally {
    await owner.close();
    await anonymous.close();
  }
});

test('security options are checked before anything connects', async () => {
  const bad = { code: 'ZKR_INVALID_ARGUMENT' };
  await assert.rejects(Client.connect('127.0.0.1:1', { tls: { caa: 'x' } }), /did you mean ca\?/);
  await assert.rejects(Client.connect('127.0.0.1:1', { aclProvider: 42 }), bad);
  await assert.rejects(Client.connect('127.0.0.1:1', { sasl: { username: 'u', password: 'p', mechanism: 'PLAIN' } }), /not supported/);
  await assert.rejects(
    Client.connect('127.0.0.1:1', { tls: { ca: '/nonexistent/ca.pem' }, connectionTimeoutMs: 30000 }),
    (e) => e.code === 'ZKR_INVALID_ARGUMENT' && /cannot read the TLS CA file \/nonexistent\/ca.pem/.test(e.message),
  );
  await assert.rejects(
    Client.connect('127.0.0.1:1', { tls: { ca: Buffer.from('-----BEGIN CERTIFICATE-----\ngarbage\n') } }),
    (e) => e.code === 'ZKR_INVALID_ARGUMENT' && /TLS CA/.test(e.message),
  );
});
