// Dynamic ensembles: getConfig, reconfig and the ensemble tracker. Refusals and bad input against
// the standalone test server; the real 3 -> 4 -> 3 change with a tracked client keeping its
// session against ONE reconfigurable ensemble from the testing kit.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const { Client } = require('..');
const { TestingCluster } = require('../testing');
const { useZooKeeper, waitFor } = require('./helpers');

let zk;
let client;

useZooKeeper((z, c) => {
  zk = z;
  client = c;
}, { trackEnsemble: true });

test('a standalone server has no members and refuses reconfig, with typed errors for bad input', async () => {
  const config = await client.getConfig();
  assert.deepEqual(config.members, []);
  assert.equal(config.version, 0n);
  assert.equal(config.connectString, '');
  assert.ok(Object.isFrozen(config));
  // No member lines: the tracker keeps the hosts it was given.
  assert.equal(client.currentConnectString, zk.connectString);

  const refused = await client.reconfig({ leaving: [2] }).then(() => null, (e) => e);
  assert.equal(refused?.code, 'ZKR_SERVER');
  assert.equal(refused.zkCode, -123);
  assert.match(refused.message, /reconfigEnabled/);
  await assert.rejects(client.reconfig({ leaving: 2, fromConfig: config.version }), { code: 'ZKR_SERVER' });

  for (const bad of [
    { joining: '4=127.0.0.4:1:2;3' },
    { joining: ['server.x=127.0.0.4:1:2;3'] },
    { joining: ['server.4=127.0.0.4:1:2:leader;3'] },
    { joining: ['server.4=127.0.0.4:1:2;3'], leaving: [4] },
    { newMembers: ['server.1=127.0.0.1:1:2;3'], leaving: [2] },
    { newMembers: [] },
    { fromConfig: -2 },
    { fromConfig: 1.5 },
    { leaving: ['2'] },
    { joining: [4] },
    { members: [] },
  ]) {
    await assert.rejects(client.reconfig(bad), { code: 'ZKR_INVALID_ARGUMENT' }, JSON.stringify(bad));
  }
  // No options: an empty incremental change (only a new version), refused by this server.
  await assert.rejects(client.reconfig(), { code: 'ZKR_SERVER' });
  assert.deepEqual(await client.getConfig(), config);

  // The tracker cannot follow TLS ports.
  await assert.rejects(Client.connect('127.0.0.1:1', { tls: true, trackEnsemble: true }), { code: 'ZKR_INVALID_ARGUMENT', message: /trackEnsemble|track_ensemble/ });
  await assert.rejects(Client.connect('127.0.0.1:1', { trackEnsemble: 'yes' }), { code: 'ZKR_INVALID_ARGUMENT' });
});

test('a tracked client follows 3 -> 4 -> 3 members in one session', async () => {
  const cluster = await TestingCluster.startReconfigurable(3, { superuser: ['super', 'secret'] });
  let admin;
  let tracked;
  try {
    admin = await Client.connect(cluster.connectString, { auth: { scheme: 'digest', credentials: 'super:secret' } });
    tracked = await Client.connect(cluster.connectString, { sessionTimeoutMs: 20000, trackEnsemble: true });
    const states = [];
    tracked.on('state', (s) => states.push(s));
    const session = tracked.sessionId;
    await tracked.create('/eph', 'mine', { mode: 'EPHEMERAL' });

    const config = await tracked.getConfig();
    assert.deepEqual(config.members.map((m) => m.id), [1, 2, 3]);
    config.members.forEach((m, i) => {
      assert.equal(m.role, 'PARTICIPANT');
      assert.equal(m.serverLine, cluster.servers[i].reconfigSpec);
      assert.equal(m.clientAddress, cluster.servers[i].connectString);
    });
    const hostsOf = (servers) => servers.map((s) => s.connectString).join(',');
    const three = hostsOf(cluster.servers);
    assert.equal(config.connectString, three);
    await waitFor(() => tracked.currentConnectString === three, { timeoutMs: 30000, what: 'the tracker\'s first read' });
    await assert.rejects(tracked.reconfig({ leaving: [3] }), { code: 'ZKR_NO_AUTH', message: /superuser/ });

    // Grow: a fourth participant joins.
    const fourth = await cluster.addServer();
    const grown = await admin.reconfig({ joining: [fourth.reconfigSpec], fromConfig: config.version });
    assert.deepEqual(grown.members.map((m) => m.id), [1, 2, 3, 4]);
    assert.ok(grown.version > config.version);
    assert.ok(await cluster.waitForMembers([1, 2, 3, 4]));
    const four = hostsOf(cluster.servers);
    await waitFor(() => tracked.currentConnectString === four, { timeoutMs: 30000, what: 'the tracker follows 4 members' });
    await assert.rejects(admin.reconfig({ leaving: 4, fromConfig: config.version }), { code: 'ZKR_BAD_VERSION' });

    // Shrink: a member that does not lead leaves, and is stopped for good.
    const leader = await cluster.leader();
    const leaving = cluster.servers.slice(0, 3).find((s) => s !== leader);
    const shrunk = await admin.reconfig({ leaving: [leaving.index + 1] });
    const staying = cluster.servers.filter((s) => s !== leaving);
    assert.deepEqual(shrunk.members.map((m) => m.id), staying.map((s) => s.index + 1));
    assert.ok(await cluster.waitForMembers(staying.map((s) => s.index + 1)));
    const after = hostsOf(staying);
    await waitFor(() => tracked.currentConnectString === after, { timeoutMs: 30000, what: 'the tracker follows 3 members' });
    await leaving.stop();
    assert.ok(await tracked.exists('/'));

    // One session all along: its ephemeral node lives on.
    assert.equal(tracked.sessionId, session);
    const stat = await admin.exists('/eph');
    assert.equal(stat?.ephemeralOwner, session);
    assert.ok(!states.includes('LOST'), states.join(','));
  } finally {
    await tracked?.close();
    await admin?.close();
    await cluster.close();
  }
});

test('a member cut off from its quorum serves reads to a client that allows it', async () => {
  const cluster = await TestingCluster.start(3, { readOnlyMode: true });
  let ro;
  try {
    const writer = await Client.connect(cluster.connectString);
    try {
      await writer.create('/ro/seen', 'before', { createParents: true });
    } finally {
      await writer.close();
    }
    await cluster.servers[0].stop();
    await cluster.servers[1].stop();
    const third = cluster.servers[2].connectString;
    const connect = async (canBeReadOnly) => {
      try {
        return await Client.connect(third, { sessionTimeoutMs: 10000, connectionTimeoutMs: 2000, canBeReadOnly });
      } catch (err) {
        if (!err.code) throw err;
        return null;
      }
    };
    await waitFor(async () => {
      // A member that has not seen the loss yet still serves as a follower (CONNECTED).
      const c = await connect(true);
      if (c && c.state === 'READ_ONLY') {
        ro = c;
        return true;
      }
      if (c) await c.close();
      return false;
    }, { timeoutMs: 60000, what: 'a session on the member in read-only mode' });
    assert.equal((await ro.getData('/ro/seen')).data.toString(), 'before', 'reads are served');
    await assert.rejects(ro.setData('/ro/seen', 'after'), { code: 'ZKR_SERVER', zkCode: -119 });
    assert.equal((await ro.getData('/ro/seen')).data.toString(), 'before', 'the write was refused, not applied');
    // Without canBeReadOnly, the same member lets nobody in.
    assert.equal(await connect(false), null);
    // The option belongs to ensembles; a standalone server refuses it by name.
    await assert.rejects(
      require('../testing').TestingServer.start({ readOnlyMode: true }),
      { code: 'ZKR_INVALID_ARGUMENT', message: /readOnlyMode/ },
    );
    await assert.rejects(TestingCluster.start(3, { readOnlyMode: 'yes' }), { code: 'ZKR_INVALID_ARGUMENT' });
  } finally {
    if (ro) await ro.close();
    await cluster.close();
  }
});
