// Secured ensembles from Node, against real servers from the testing kit
// (`TestingServer.start({ tls, saslUsers, x509 })`): TLS with x509 identities, SASL, and every
// hostile case of issue 30 with its err.code and the words a user needs.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');

const { Client, InterProcessMutex } = require('..');
const { TestingServer } = require('../testing');

let mtls;
let sasl;
before(async () => {
  mtls = await TestingServer.start({ tls: 'need', x509: true });
  sasl = await TestingServer.start({ saslUsers: { alice: 'secret' }, saslRequired: true });
});
after(async () => {
  await mtls?.close();
  await sasl?.close();
});

const tlsOf = (server, who = 'client', extra = {}) => ({
  ca: server.tls.ca,
  cert: server.tls[`${who}Cert`],
  key: server.tls[`${who}Key`],
  ...extra,
});
const connect = (hosts, options = {}) => Client.connect(hosts, { connectionTimeoutMs: 5000, ...options });
const code = (c, words) => (e) => {
  assert.equal(e.code, c, e.message);
  assert.match(e.message, words);
  return true;
};

test('mutual TLS gives the certificate\'s x509 identity; another certificate gets ZKR_NO_AUTH', async () => {
  const c = await connect(mtls.secureConnectString, { tls: tlsOf(mtls), acl: [{ perms: ['ALL'], scheme: 'auth', id: '' }] });
  try {
    await c.create('/node-mine', 'x');
    const { acl } = await c.getAcl('/node-mine');
    assert.deepEqual(acl, [{ perms: 31, scheme: 'x509', id: mtls.tls.clientX509Id }]);
    await new InterProcessMutex(c, '/node-locks/tls').withLock(async () => {});
    const other = await connect(mtls.secureConnectString, { tls: tlsOf(mtls, 'otherClient') });
    try {
      await assert.rejects(other.getData('/node-mine'), { code: 'ZKR_NO_AUTH' });
    } finally {
      await other.close();
    }
  } finally {
    await c.close();
  }
  // PEM text and Buffers instead of paths; RSA and SEC1 keys.
  const text = await connect(mtls.secureConnectString, {
    tls: { ca: fs.readFileSync(mtls.tls.ca, 'utf8'), cert: fs.readFileSync(mtls.tls.clientCert), key: fs.readFileSync(mtls.tls.clientKey) },
  });
  assert.equal((await text.getData('/node-mine')).data.toString(), 'x');
  await text.close();
  for (const who of ['rsaClient', 'sec1Client']) {
    const k = await connect(mtls.secureConnectString, { tls: tlsOf(mtls, who) });
    assert.notEqual(await k.exists('/node-mine'), null);
    await k.close();
  }
});

test('server certificates we refuse reject with ZKR_AUTH_FAILED saying why', async () => {
  const started = Date.now();
  await assert.rejects(
    connect(mtls.secureConnectString, { connectionTimeoutMs: 60000, tls: { ...tlsOf(mtls), ca: mtls.tls.wrongCa } }),
    code('ZKR_AUTH_FAILED', /unknown issuer/),
  );
  assert.ok(Date.now() - started < 30000, 'waited for the connection timeout');
  const expired = await TestingServer.start({ tls: 'none', serverCert: 'expired' });
  try {
    await assert.rejects(connect(expired.secureConnectString, { tls: { ca: expired.tls.ca } }), code('ZKR_AUTH_FAILED', /expired/));
  } finally {
    await expired.close();
  }
  const wrong = await TestingServer.start({ tls: 'none', serverCert: 'wrong-name' });
  try {
    await assert.rejects(connect(wrong.secureConnectString, { tls: { ca: wrong.tls.ca } }), code('ZKR_AUTH_FAILED', /does not name the host/));
    const c = await connect(wrong.secureConnectString, { tls: { ca: wrong.tls.ca, verifyHostname: false } });
    await c.close();
  } finally {
    await wrong.close();
  }
});

test('client certificates the server refuses reject with ZKR_AUTH_FAILED', async () => {
  await assert.rejects(connect(mtls.secureConnectString, { tls: { ca: mtls.tls.ca } }), code('ZKR_AUTH_FAILED', /client certificate/));
  for (const who of ['expiredClient', 'wrongCaClient']) {
    await assert.rejects(
      connect(mtls.secureConnectString, { tls: tlsOf(mtls, who) }),
      code('ZKR_AUTH_FAILED', /the server rejected the client certificate/),
    );
  }
});

test('the wrong protocol on a port is named', async () => {
  await assert.rejects(connect(mtls.secureConnectString, { connectionTimeoutMs: 2000 }), code('ZKR_TIMEOUT', /speaks TLS/));
  await assert.rejects(
    connect(mtls.connectString, { connectionTimeoutMs: 2000, tls: tlsOf(mtls) }),
    code('ZKR_TIMEOUT', /speaks plaintext ZooKeeper, not TLS/),
  );
});

test('bad TLS inputs are ZKR_INVALID_ARGUMENT before any connection', async () => {
  const m = mtls.tls;
  const cases = [
    [{ ca: '/nonexistent/ca.pem' }, /cannot read the TLS CA file/],
    [{ ca: '-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n' }, /TLS CA/],
    [{ ca: m.ca, cert: m.clientCert, key: m.otherClientKey }, /does the key belong/],
    [{ ca: m.ca, cert: m.clientCert, key: m.encryptedClientKey }, /is encrypted/],
    [{ ca: m.ca, cert: m.clientCert }, /without its private key/],
  ];
  for (const [tls, words] of cases) {
    // Port 1: nothing listens; a connection attempt would end in ZKR_TIMEOUT, not this.
    await assert.rejects(Client.connect('127.0.0.1:1', { connectionTimeoutMs: 30000, tls }), code('ZKR_INVALID_ARGUMENT', words));
  }
});

test('SASL users authenticate; refusals are ZKR_AUTH_FAILED at once', async () => {
  const c = await connect(sasl.connectString, {
    sasl: { username: 'alice', password: 'secret' },
    acl: [{ perms: ['ALL'], scheme: 'auth', id: '' }],
  });
  await c.create('/node-alice');
  assert.deepEqual((await c.getAcl('/node-alice')).acl, [{ perms: 31, scheme: 'sasl', id: 'alice' }]);
  await c.close();
  for (const [options, words] of [
    [{ sasl: { username: 'alice', password: 'wrong' } }, /as "alice"/],
    [{ sasl: { username: 'mallory', password: 'not-alices' } }, /as "mallory"/],
    [{}, /requires authentication/],
  ]) {
    const started = Date.now();
    await assert.rejects(connect(sasl.connectString, { connectionTimeoutMs: 60000, ...options }), code('ZKR_AUTH_FAILED', words));
    assert.ok(Date.now() - started < 30000, `${words}: retried?`);
  }
});

// Review-secure #3: PEM text with text before its first -----BEGIN (OpenSSL's Bag Attributes)
// was taken for a path: refused, with the private key in the error message.
test('PEM with a preamble connects; key material is never echoed', async () => {
  const m = mtls.tls;
  const preamble = 'Bag Attributes\n    localKeyID: 01 00 00 00\nKey Attributes: <No Attributes>\n';
  const keyText = preamble + fs.readFileSync(m.clientKey, 'utf8');
  const certBuffer = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), fs.readFileSync(m.clientCert)]);
  const acl = [{ perms: ['ALL'], scheme: 'auth', id: '' }];
  for (const [name, key] of [['buffer', Buffer.from(keyText)], ['uint8array', new Uint8Array(Buffer.from(keyText))], ['string', keyText]]) {
    const c = await connect(mtls.secureConnectString, { tls: { ca: m.ca, cert: certBuffer, key }, acl });
    try {
      await c.create(`/node-preamble-${name}`);
      assert.deepEqual((await c.getAcl(`/node-preamble-${name}`)).acl, [{ perms: 31, scheme: 'x509', id: m.clientX509Id }]);
    } finally {
      await c.close();
    }
  }
  // A Buffer is PEM text whatever it holds, a string with a line break too: never a path, never shown.
  for (const key of [Buffer.from('SECRET-MARKER'), 'SECRET-MARKER\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49', Buffer.from('SECRET-MARKER\n')]) {
    await assert.rejects(
      Client.connect('127.0.0.1:1', { connectionTimeoutMs: 30000, tls: { ca: m.ca, cert: m.clientCert, key } }),
      (e) => {
        assert.equal(e.code, 'ZKR_INVALID_ARGUMENT', e.message);
        assert.doesNotMatch(e.message, /SECRET/);
        assert.match(e.message, /TLS client/);
        return true;
      },
    );
  }
  await assert.rejects(
    Client.connect('127.0.0.1:1', { connectionTimeoutMs: 30000, tls: { ca: m.ca, cert: m.clientCert, key: Buffer.from([0xff, 0xfe]) } }),
    code('ZKR_INVALID_ARGUMENT', /tls\.key: a PEM Buffer must be UTF-8 text/),
  );
});
