// The testing kit users get (`require('zkrecipes/testing')`): real servers started from a test,
// restart, expiry, an ensemble losing its leader, and where ZooKeeper comes from.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('..');
const { TestingServer, TestingCluster, expireSession, findZooKeeper } = require('../testing');

const DEBIAN_JAR = '/usr/share/java/zookeeper.jar';

/** Runs `fn` with the ZooKeeper location variables set as given (unset when undefined). */
async function withZooKeeperEnv(vars, fn) {
  const names = ['ZKRECIPES_ZOOKEEPER_JAR', 'ZOOKEEPER_HOME'];
  const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
  try {
    for (const n of names) {
      if (vars[n] === undefined) delete process.env[n];
      else process.env[n] = vars[n];
    }
    return await fn();
  } finally {
    for (const n of names) {
      if (saved[n] === undefined) delete process.env[n];
      else process.env[n] = saved[n];
    }
  }
}

/** Resolves with the first `state` event named `want`, rejecting after 30 s. */
function nextState(client, want) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${want} within 30 s`)), 30000);
    client.on('state', function onState(state) {
      if (state !== want) return;
      clearTimeout(timer);
      client.off('state', onState);
      resolve();
    });
  });
}

test('a server restarts with its data and the client reconnects; close is final', async () => {
  const server = await TestingServer.start();
  try {
    assert.match(server.connectString, /^127\.0\.0\.1:\d+$/);
    assert.equal(await server.isRunning(), true);
    const client = await Client.connect(server.connectString, { sessionTimeoutMs: 10000 });
    try {
      await client.create('/kit', 'kept');
      await server.restart();
      assert.equal((await client.getData('/kit')).data.toString(), 'kept');
    } finally {
      await client.close();
    }
    await server.stop();
    assert.equal(await server.isRunning(), false);
    await server.start();
    assert.match(await server.fourLetter('srvr'), /Mode: standalone/);
  } finally {
    await server.close();
  }
  // Closed: ZKR_CLOSED, as a closed FaultProxy or Client (and Python's ClosedError).
  await assert.rejects(server.restart(), { code: 'ZKR_CLOSED', message: /closed/ });
  await assert.rejects(server.isRunning(), { code: 'ZKR_CLOSED' });
});

test('expireSession loses the session and its ephemeral nodes', async () => {
  const server = await TestingServer.start();
  const client = await Client.connect(server.connectString, { sessionTimeoutMs: 10000 });
  try {
    await client.create('/eph', '', { mode: 'EPHEMERAL' });
    const lost = nextState(client, 'LOST');
    const back = nextState(client, 'RECONNECTED');
    await expireSession(client);
    await lost;
    await back;
    assert.equal(await client.exists('/eph'), null);
  } finally {
    await client.close();
    await server.close();
  }
});

test('a cluster elects a new leader when its leader dies', async () => {
  const cluster = await TestingCluster.start(3);
  try {
    assert.equal(cluster.servers.length, 3);
    const client = await Client.connect(cluster.connectString, { sessionTimeoutMs: 20000 });
    try {
      await client.create('/ensemble', '1');
      const leader = await cluster.leader();
      assert.ok(leader);
      await leader.kill();
      const next = await cluster.waitForQuorum({ timeoutMs: 30000 });
      assert.ok(next && next.index !== leader.index);
      assert.equal((await client.getData('/ensemble')).data.toString(), '1');
      // The new leader frozen (SIGSTOP) and thawed (SIGCONT).
      await next.pause();
      assert.equal(await next.isPaused(), true);
      await next.resume();
      assert.equal(await next.isPaused(), false);
      assert.equal((await client.getData('/ensemble')).data.toString(), '1');
    } finally {
      await client.close();
    }
  } finally {
    await cluster.close();
  }
  await assert.rejects(cluster.leader(), { code: 'ZKR_CLOSED' });
});

test('ZooKeeper from a given jar and from ZOOKEEPER_HOME', async () => {
  await withZooKeeperEnv({ ZKRECIPES_ZOOKEEPER_JAR: `/etc/zookeeper/conf:${DEBIAN_JAR}` }, async () => {
    assert.equal(findZooKeeper(), 'ZKRECIPES_ZOOKEEPER_JAR');
    const server = await TestingServer.start();
    await server.close();
  });
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'zkr-home-'));
  try {
    // A binary release's layout (Debian's jar names its dependencies by absolute path).
    fs.mkdirSync(path.join(home, 'lib'));
    fs.symlinkSync(DEBIAN_JAR, path.join(home, 'lib', 'zookeeper-3.8.0.jar'));
    await withZooKeeperEnv({ ZOOKEEPER_HOME: home }, async () => {
      assert.equal(findZooKeeper(), `ZOOKEEPER_HOME=${home}`);
      const server = await TestingServer.start();
      try {
        assert.match(await server.fourLetter('srvr'), /Mode: standalone/);
      } finally {
        await server.close();
      }
    });
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test('no ZooKeeper: a coded error naming what to install', async () => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'zkr-empty-'));
  try {
    await withZooKeeperEnv({ ZOOKEEPER_HOME: empty }, async () => {
      await assert.rejects(TestingServer.start(), (err) => {
        assert.equal(err.code, 'ZKR_ZOOKEEPER_NOT_FOUND');
        assert.match(err.message, /apt-get install -y zookeeper/);
        assert.match(err.message, /zookeeper\.apache\.org/);
        return true;
      });
    });
    await withZooKeeperEnv({ ZKRECIPES_ZOOKEEPER_JAR: '/nonexistent/zookeeper.jar' }, async () => {
      await assert.rejects(TestingCluster.start(3), { code: 'ZKR_ZOOKEEPER_NOT_FOUND' });
    });
    await assert.rejects(TestingCluster.start(0), RangeError);
  } finally {
    fs.rmSync(empty, { recursive: true, force: true });
  }
});

test('sync: a reader on another server sees every write made before its sync', async () => {
  const cluster = await TestingCluster.start(3);
  try {
    const writer = await Client.connect(cluster.servers[0].connectString, { sessionTimeoutMs: 20000 });
    const reader = await Client.connect(cluster.servers[1].connectString, { sessionTimeoutMs: 20000 });
    try {
      await writer.create('/sync/x', '0', { createParents: true });
      const before = reader._requestCounts().sync;
      for (let i = 1; i <= 50; i++) {
        const stat = await writer.setData('/sync/x', String(i));
        await reader.sync('/sync/x');
        const { data, stat: seen } = await reader.getData('/sync/x');
        assert.equal(data.toString(), String(i));
        assert.equal(seen.version, stat.version);
      }
      assert.equal(reader._requestCounts().sync - before, 50);
      await reader.sync('/sync/missing'); // a missing node is fine
      await assert.rejects(reader.sync('relative'), { code: 'ZKR_INVALID_ARGUMENT' });
    } finally {
      await writer.close();
      await reader.close();
    }
    await assert.rejects(reader.sync('/sync/x'), { code: 'ZKR_CLOSED' });
  } finally {
    await cluster.close();
  }
});

// --- Secured servers: TLS, SASL, x509 ---------------------------------------------------------

const tls = require('node:tls');
const { TlsMaterial, CLIENT_IDENTITIES } = require('../testing');

/**
 * A TLS handshake with Node's own `tls` module (independent of zkrecipes' client), then the
 * four-letter word `srvr`; resolves to the answer, rejects if the handshake fails.
 */
function handshake(address, { ca, cert, key, passphrase, checkName = true }) {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host,
      port,
      ca: fs.readFileSync(ca),
      cert: cert && fs.readFileSync(cert),
      key: key && fs.readFileSync(key),
      passphrase,
      checkServerIdentity: checkName ? tls.checkServerIdentity : () => undefined,
    });
    let answer = '';
    socket.setTimeout(30000, () => socket.destroy(new Error('no answer within 30 s')));
    socket.on('secureConnect', () => socket.write('srvr'));
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

/** Whether the server refuses this client: the handshake fails or no answer comes. */
async function refused(address, options) {
  try {
    return !(await handshake(address, options)).includes('Zookeeper version');
  } catch {
    return true;
  }
}

test('a TLS server hands its secure port and PEM files, and speaks TLS', async () => {
  const server = await TestingServer.start({ tls: 'need', saslUsers: { alice: 'secret' }, x509: true });
  try {
    const { tls: material, secureConnectString } = server;
    assert.ok(material instanceof TlsMaterial);
    assert.match(secureConnectString, /^127\.0\.0\.1:\d+$/);
    assert.notEqual(secureConnectString, server.connectString);
    for (const which of CLIENT_IDENTITIES) {
      for (const file of [material[`${which}Cert`], material[`${which}Key`], material.keystore(which)]) {
        assert.ok(fs.statSync(file).isFile(), `${which}: ${file}`);
      }
    }
    assert.match(fs.readFileSync(material.rsaClientKey, 'utf8'), /^-----BEGIN RSA PRIVATE KEY-----/);
    assert.match(fs.readFileSync(material.sec1ClientKey, 'utf8'), /^-----BEGIN EC PRIVATE KEY-----/);
    assert.match(fs.readFileSync(material.encryptedClientKey, 'utf8'), /^-----BEGIN ENCRYPTED PRIVATE KEY-----/);
    assert.equal(material.x509Id('client'), 'CN=zkr-client');
    assert.equal(material.clientX509Id, 'CN=zkr-client');
    assert.equal(material.x509Id('otherClient'), 'CN=zkr-other');

    const { ca } = material;
    for (const [cert, key, passphrase] of [
      [material.clientCert, material.clientKey],
      [material.rsaClientCert, material.rsaClientKey],
      [material.sec1ClientCert, material.sec1ClientKey],
      [material.clientCert, material.encryptedClientKey, material.encryptedClientKeyPassword],
    ]) {
      assert.match(await handshake(secureConnectString, { ca, cert, key, passphrase }), /Zookeeper version/, key);
    }
    assert.ok(await refused(secureConnectString, { ca }), 'no client certificate');
    assert.ok(await refused(secureConnectString, { ca, cert: material.expiredClientCert, key: material.expiredClientKey }), 'expired');
    assert.ok(await refused(secureConnectString, { ca, cert: material.wrongCaClientCert, key: material.wrongCaClientKey }), 'wrong CA');
    await assert.rejects(handshake(secureConnectString, { ca: material.wrongCa, cert: material.clientCert, key: material.clientKey }));

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zkr-node-issued-'));
    try {
      await material.issueClient('zkr-rotated', path.join(dir, 'c.pem'), path.join(dir, 'c.key'));
      const answer = await handshake(secureConnectString, { ca, cert: path.join(dir, 'c.pem'), key: path.join(dir, 'c.key') });
      assert.match(answer, /Zookeeper version/);
      assert.equal(TlsMaterial.x509IdForCn('zkr-rotated'), 'CN=zkr-rotated');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    await server.close();
  }
});

test('server certificates expired or for another name fail verification', async () => {
  const expired = await TestingServer.start({ tls: 'none', serverCert: 'expired' });
  const wrong = await TestingServer.start({ tls: 'none', serverCert: 'wrong-name' });
  try {
    await assert.rejects(handshake(expired.secureConnectString, { ca: expired.tls.ca }), { code: 'CERT_HAS_EXPIRED' });
    await assert.rejects(handshake(wrong.secureConnectString, { ca: wrong.tls.ca }), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
    assert.match(await handshake(wrong.secureConnectString, { ca: wrong.tls.ca, checkName: false }), /Zookeeper version/);
  } finally {
    await wrong.close();
    await expired.close();
  }
});

test('a TLS cluster serves TLS on every member', async () => {
  const cluster = await TestingCluster.start(3, { tls: 'want' });
  try {
    const members = cluster.secureConnectString.split(',');
    assert.equal(members.length, 3);
    for (const [i, server] of cluster.servers.entries()) {
      assert.equal(server.secureConnectString, members[i]);
      assert.ok(members[i].startsWith(`127.0.0.${i + 1}:`));
      const { ca, clientCert: cert, clientKey: key } = cluster.tls;
      assert.match(await handshake(members[i], { ca, cert, key }), /Zookeeper version/);
      assert.match(await handshake(members[i], { ca }), /Zookeeper version/, 'want: no certificate');
    }
  } finally {
    await cluster.close();
  }
});

test('unsecured servers have no TLS; unknown options and bad values are refused', async () => {
  const server = await TestingServer.start();
  try {
    assert.equal(server.tls, null);
    assert.equal(server.secureConnectString, null);
  } finally {
    await server.close();
  }
  await assert.rejects(TestingServer.start({ tsl: 'need' }), { code: 'ZKR_INVALID_ARGUMENT', message: /did you mean tls/ });
  await assert.rejects(TestingServer.start({ tls: 'maybe' }), { code: 'ZKR_INVALID_ARGUMENT', message: /'want'/ });
  await assert.rejects(TestingServer.start({ tls: 'none', x509: true }), {
    code: 'ZKR_INVALID_ARGUMENT',
    message: /x509 identities need client certificates/,
  });
  await assert.rejects(TestingServer.start({ saslUsers: { alice: 7 } }), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(TestingServer.start({ superuser: { name: 'a', pass: 'b' } }), { code: 'ZKR_INVALID_ARGUMENT' });
  await assert.rejects(TestingCluster.start(3, { serverCert: 'stale' }), { code: 'ZKR_INVALID_ARGUMENT' });
});
