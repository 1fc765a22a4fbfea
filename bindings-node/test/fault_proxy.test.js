// The testing kit's network faults (`FaultProxy`) and frozen servers (`TestingServer.pause()` /
// `resume()`), seen by a real client of a real ZooKeeper started by the kit.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { Client, ErrorCode } = require('..');
const { TestingServer, FaultProxy } = require('../testing');
const { waitFor } = require('./helpers');

// A short read timeout (the connection timeout): a silent connection is noticed within about a
// second, while the session (10 s) outlives the fault, so the client comes back to the same one.
const OPTIONS = { sessionTimeoutMs: 10000, connectionTimeoutMs: 1000 };

let server;
before(async () => {
  server = await TestingServer.start();
});
after(async () => {
  await server?.close();
});

/** Records a client's 'state' events; `next(want)` resolves at the first `want` seen after the call. */
function states(client) {
  const waiting = [];
  client.on('state', (state) => {
    for (const w of waiting.splice(0)) {
      if (w.want === state) w.resolve();
      else waiting.push(w);
    }
  });
  return {
    next(want, timeoutMs = 30000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${want} within ${timeoutMs} ms`)), timeoutMs);
        waiting.push({
          want,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
  };
}

async function roundTrip(client) {
  const start = process.hrtime.bigint();
  await client.exists('/');
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** Runs `fn(proxy, client)` with a proxy in front of the server and a client through it. */
async function throughProxy(fn) {
  const proxy = await FaultProxy.start(server.connectString);
  try {
    const client = await Client.connect(proxy.connectString, OPTIONS);
    try {
      await fn(proxy, client);
    } finally {
      await client.close();
    }
  } finally {
    await proxy.close();
  }
}

test('blackhole() suspends the client; restore() brings back its session', async () => {
  await throughProxy(async (proxy, client) => {
    assert.equal(proxy.upstream, server.connectString);
    assert.equal(proxy.connectString, `127.0.0.1:${proxy.port}`);
    await client.exists('/');
    assert.equal(proxy.connections, 1);
    const forwarded = proxy.bytesForwarded;
    assert.ok(forwarded > 0);
    const session = client.sessionId;
    const seen = states(client);

    const suspended = seen.next('SUSPENDED');
    await proxy.blackhole();
    // (No byte count is compared across the switch: a ping may be mid-way through it.)
    await suspended;

    const reconnected = seen.next('RECONNECTED');
    await proxy.restore();
    await reconnected;
    assert.equal(client.sessionId, session);
    await client.exists('/');
    assert.ok(proxy.bytesForwarded > forwarded);
  });
});

test('cut() closes every connection, and new ones, until restore()', async () => {
  await throughProxy(async (proxy, client) => {
    await client.exists('/');
    const seen = states(client);
    const suspended = seen.next('SUSPENDED');
    await proxy.cut();
    assert.equal(proxy.connections, 0);
    await suspended;
    // A new connection is accepted and closed at once: end of stream, no answer.
    const answer = await new Promise((resolve, reject) => {
      const chunks = [];
      const probe = net.connect(proxy.port, '127.0.0.1', () => probe.write('srvr'));
      probe.setTimeout(10000, () => reject(new Error('the cut proxy kept a connection open')));
      probe.on('data', (d) => chunks.push(d));
      probe.on('error', () => {}); // a reset is a close too
      probe.on('close', () => resolve(Buffer.concat(chunks).toString()));
    });
    assert.equal(answer, '');
    const reconnected = seen.next('RECONNECTED');
    await proxy.restore();
    await reconnected;
    assert.equal(proxy.connections, 1);
    await client.exists('/');
  });
});

test('delay(ms) slows every round trip by twice the latency; restore() ends it', async () => {
  await throughProxy(async (proxy, client) => {
    await client.exists('/');
    await proxy.delay(200);
    // 200 ms each way: a request and its reply take at least 400 ms, however fast the machine.
    assert.ok((await roundTrip(client)) >= 400);
    await proxy.delayReplies(200);
    assert.ok((await roundTrip(client)) >= 200);
    await proxy.restore();
    await waitFor(async () => (await roundTrip(client)) < 200, { timeoutMs: 20000, what: 'round trips without the delay' });
  });
});

test('a paused server suspends its client; resume() keeps the session', async () => {
  const client = await Client.connect(server.connectString, OPTIONS);
  try {
    await client.create('/paused', 'kept');
    const session = client.sessionId;
    const seen = states(client);
    const suspended = seen.next('SUSPENDED');
    await server.pause();
    assert.equal(await server.isPaused(), true);
    assert.equal(await server.isRunning(), true);
    await suspended;
    const reconnected = seen.next('RECONNECTED');
    await server.resume();
    assert.equal(await server.isPaused(), false);
    await reconnected;
    assert.equal(client.sessionId, session);
    assert.equal((await client.getData('/paused')).data.toString(), 'kept');
  } finally {
    await client.close();
  }
});

test('bad upstreams and latencies are ZKR_INVALID_ARGUMENT; a closed proxy is ZKR_CLOSED', async () => {
  const invalid = { code: ErrorCode.INVALID_ARGUMENT };
  for (const bad of ['localhost', '127.0.0.1:', ':2181', '127.0.0.1:99999', '127.0.0.1:0', '', 2181, undefined]) {
    await assert.rejects(FaultProxy.start(bad), invalid, `upstream ${bad}`);
  }
  const proxy = await FaultProxy.start(server.connectString);
  for (const bad of [-1, NaN, Infinity, -Infinity, '200', undefined, null]) {
    await assert.rejects(proxy.delay(bad), invalid, `delay ${bad}`);
    await assert.rejects(proxy.delayReplies(bad), invalid, `delayReplies ${bad}`);
  }
  await proxy.delay(0);
  await proxy.restore();
  assert.equal(proxy.closed, false);
  await proxy.close();
  await proxy.close(); // idempotent
  assert.equal(proxy.closed, true);
  const closed = { code: ErrorCode.CLOSED };
  for (const verb of ['cut', 'blackhole', 'dropReplies', 'restore']) {
    await assert.rejects(proxy[verb](), closed, verb);
  }
  await assert.rejects(proxy.delay(10), closed);
  await assert.rejects(proxy.delayReplies(10), closed);
  assert.throws(() => proxy.connections, closed);
  assert.throws(() => proxy.bytesForwarded, closed);
});
