// Service discovery against a real ZooKeeper: Curator's JSON byte for byte, every field and
// payload kind through a round trip, update / disable / unregister, conflicts, the service
// cache's events (an INVALID one for a garbage node) and `for await` with replay, providers by
// strategy with disabled and down instances left out, closed use, bad input.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');

const zkr = require('..');
const { native } = require('../lib/native');
const { useZooKeeper, uniquePath, waitFor } = require('./helpers');

const {
  Client,
  ServiceDiscovery,
  ServiceInstance,
  ServiceCache,
  ServiceProvider,
  ServiceType,
  ServiceCacheEventKind: K,
  ProviderStrategy,
  Registration,
  UriSpec,
} = zkr;

let zk;
let client;
useZooKeeper((z, c) => {
  zk = z;
  client = c;
});

const bad = { code: 'ZKR_INVALID_ARGUMENT' };
const closed = { code: 'ZKR_CLOSED' };

function everyField(name, id, changes = {}) {
  return ServiceInstance.create(name, {
    id,
    address: '10.0.0.7',
    port: 8080,
    sslPort: 8443,
    payload: { region: 'eu', weights: [1, 2.5, null, true], nested: { k: 'é\n"q"' } },
    payloadClass: null,
    serviceType: ServiceType.DYNAMIC,
    uriSpec: '{scheme}://{address}:{ssl-port}/v1',
    enabled: true,
    registrationTimeUTC: 1700000000123,
    ...changes,
  });
}

test("an instance is Curator's JSON byte for byte, and reads back equal", () => {
  const i = ServiceInstance.create('orders', {
    id: '6f2c',
    address: '10.0.0.7',
    port: 8080,
    registrationTimeUTC: 1700000000123,
    uriSpec: '{scheme}://{address}:{port}',
  });
  const expected =
    '{"name":"orders","id":"6f2c","address":"10.0.0.7","port":8080,"sslPort":null,"payload":null,' +
    '"registrationTimeUTC":1700000000123,"serviceType":"DYNAMIC","uriSpec":{"parts":[' +
    '{"value":"scheme","variable":true},{"value":"://","variable":false},' +
    '{"value":"address","variable":true},{"value":":","variable":false},' +
    '{"value":"port","variable":true}]}}';
  const json = ServiceInstance.toJson(i);
  assert.ok(Buffer.isBuffer(json));
  assert.equal(json.toString(), expected);
  assert.equal(ServiceInstance.toJson(i, { compatible: false }).toString(), `${expected.slice(0, -1)},"enabled":true}`);
  assert.deepEqual(ServiceInstance.fromJson(json), i);
  assert.deepEqual(Object.keys(i), [
    'name',
    'id',
    'address',
    'port',
    'sslPort',
    'payload',
    'payloadClass',
    'registrationTimeUTC',
    'serviceType',
    'uriSpec',
    'enabled',
  ]);
  // Jackson's type information: a list as [class, value], an object with "@class" first.
  const listed = ServiceInstance.create('s', { id: 'i', payload: ['a', 'b'], payloadClass: 'java.util.ArrayList' });
  assert.match(ServiceInstance.toJson(listed).toString(), /"payload":\["java\.util\.ArrayList",\["a","b"\]\]/);
  const typed = ServiceInstance.create('s', { id: 'i', payload: { region: 'eu' }, payloadClass: 'com.example.Details' });
  assert.match(ServiceInstance.toJson(typed).toString(), /"payload":\{"@class":"com\.example\.Details","region":"eu"\}/);
  for (const inst of [listed, typed]) assert.deepEqual(ServiceInstance.fromJson(ServiceInstance.toJson(inst)), inst);
  // Defaults: a random UUID id, now, DYNAMIC, enabled, nulls.
  const a = ServiceInstance.create('s');
  assert.notEqual(a.id, ServiceInstance.create('s').id);
  assert.equal(a.id.length, 36);
  assert.ok(a.registrationTimeUTC > 1.6e12);
  assert.deepEqual([a.serviceType, a.enabled, a.payload, a.uriSpec, a.port], ['DYNAMIC', true, null, null, null]);
  for (const garbage of ['not json', '[1]', '{"port":"eighty"}', '{"serviceType":"WEIRD"}']) {
    assert.throws(() => ServiceInstance.fromJson(garbage), { code: 'ZKR_CORRUPTED_DATA' }, garbage);
  }
  // What Jackson coerces, Java reads and so do we: a numeric string for a port.
  assert.equal(ServiceInstance.fromJson('{"name":"s","id":"x","port":"80"}').port, 80);
  // A Java long past 2^53 in a payload: exact in the hidden payloadJson, and written exactly
  // from one; a read instance written back (spread) keeps its payload.
  const big = ServiceInstance.fromJson('{"name":"s","id":"x","payload":{"@class":"com.example.Ids","id":9007199254740993}}');
  assert.equal(big.payloadJson, '{"id":9007199254740993}');
  assert.equal(big.payload.id, 9007199254740992, 'a JS number rounds it');
  assert.ok(!Object.keys(big).includes('payloadJson'), 'not enumerable');
  const written = ServiceInstance.toJson({ name: 's', id: 'x', payloadClass: 'com.example.Ids', payloadJson: big.payloadJson });
  assert.match(written.toString(), /"payload":\{"@class":"com\.example\.Ids","id":9007199254740993\}/);
  assert.deepEqual(ServiceInstance.fromJson(ServiceInstance.toJson({ ...big, port: 81 })).payload, big.payload);
  assert.throws(
    () => ServiceInstance.toJson({ name: 's', payload: { a: 1 }, payloadJson: '{"a":1}' }),
    { code: 'ZKR_INVALID_ARGUMENT', message: /payload or payloadJson, not both/ },
  );
  assert.throws(() => ServiceInstance.toJson({ name: 's', payloadJson: '{oops' }), { code: 'ZKR_INVALID_ARGUMENT' });
});

// A node as a newer Java writer leaves it: a field this version does not know, a double as
// Java prints it, a long past 2^53 in the payload.
const NEWER = (id, port) =>
  `{"name":"s","id":"${id}","address":"10.0.0.1","port":${port},"sslPort":null,` +
  '"payload":{"@class":"com.example.D","big":9007199254740993,"w":1.0E10},"registrationTimeUTC":5,' +
  '"serviceType":"PERMANENT","uriSpec":null,"zone":{"rack":"r1","weight":2.50}}';

test('a read instance keeps what its fields do not show: toJson, register and update write it back', async () => {
  const read = ServiceInstance.fromJson(NEWER('x', 80));
  const from = read[ServiceInstance.readFrom];
  assert.ok(Buffer.isBuffer(from.node), 'a read instance with more than its fields carries the node');
  assert.equal(Object.keys(read).includes('zone'), false, 'not one of its fields');
  assert.equal(JSON.stringify(read).includes('zone'), false);
  // Spread and changed, or as is: byte for byte but for the change.
  assert.equal(ServiceInstance.toJson(read).toString(), NEWER('x', 80));
  assert.equal(ServiceInstance.toJson({ ...read, port: 81 }).toString(), NEWER('x', 81));
  // A changed payload is written as given, the unknown field stays.
  const repaid = ServiceInstance.toJson({ ...read, payload: { big: 1 } }).toString();
  assert.match(repaid, /"payload":\{"@class":"com\.example\.D","big":1\},/);
  assert.match(repaid, /"zone":\{"rack":"r1","weight":2\.50\}\}$/);
  // A field left out takes a new instance's default, not the node's.
  const renewed = ServiceInstance.fromJson(ServiceInstance.toJson({ ...read, id: undefined, serviceType: undefined }));
  assert.notEqual(renewed.id, 'x');
  assert.equal(renewed.serviceType, 'DYNAMIC');
  assert.equal(renewed[ServiceInstance.readFrom] !== undefined, true, 'the unknown field still kept');
  // An instance made here with a number JS would write differently carries nothing: nothing
  // was read.
  assert.equal(ServiceInstance.create('s', { payload: { n: 1e21, w: 2 } })[ServiceInstance.readFrom], undefined);
  // Deleted: the fields alone.
  const bare = { ...read };
  delete bare[ServiceInstance.readFrom];
  assert.equal(ServiceInstance.toJson(bare).toString().includes('zone'), false);
  // Nothing to keep, nothing carried.
  assert.equal(ServiceInstance.create('s')[ServiceInstance.readFrom], undefined);
  assert.equal(ServiceInstance.fromJson('{"name":"s","id":"i"}')[ServiceInstance.readFrom], undefined);
  assert.throws(() => ServiceInstance.toJson({ ...read, [ServiceInstance.readFrom]: { node: 'x' } }), {
    code: 'ZKR_INVALID_ARGUMENT',
    message: /readFrom record was replaced/,
  });

  // Through a live registration: queried, registered under another id, updated.
  const base = uniquePath('newer');
  const c = await Client.connect(zk.connectString);
  const d = new ServiceDiscovery(c, base);
  try {
    await client.create(`${base}/s/java`, NEWER('java', 80), { createParents: true });
    const found = await d.queryForInstance('s', 'java');
    const reg = await d.register({ ...found, id: 'copy' });
    assert.equal((await client.getData(`${base}/s/copy`)).data.toString(), NEWER('copy', 80));
    reg.update({ ...reg.instance, port: 82 });
    await waitFor(async () => (await client.getData(`${base}/s/copy`)).data.toString() === NEWER('copy', 82), { what: 'the update written' });
  } finally {
    await d.close();
    await c.close();
  }
});

test('register, query, update, disable, unregister with every field and payload kind', async () => {
  const base = uniquePath('discovery');
  const c = await Client.connect(zk.connectString);
  const d = new ServiceDiscovery(c, base);
  try {
    assert.equal(d.basePath, base);
    const instances = [
      everyField('orders', 'a1'),
      everyField('orders', 'a2', { payload: ['x', 1], payloadClass: 'java.util.ArrayList' }),
      everyField('orders', 'a3', { payload: { region: 'us' }, payloadClass: 'com.example.Details', address: null }),
      everyField('billing', 'b1', { payload: 'text', sslPort: null, uriSpec: null, port: null }),
    ];
    const regs = [];
    for (const i of instances) regs.push(await d.register(i));
    assert.ok(regs[0] instanceof Registration);
    assert.equal(regs[0].path, `${base}/orders/a1`);
    assert.equal(regs[0].registered, true);
    const { data, stat } = await client.getData(`${base}/orders/a1`);
    assert.equal(stat.ephemeralOwner, c.sessionId, 'DYNAMIC is ephemeral');
    assert.deepEqual(data, ServiceInstance.toJson(instances[0]), "Curator's compatible JSON on the node");
    assert.ok(!data.toString().includes('"enabled"'));
    assert.deepEqual(await d.queryForNames(), ['billing', 'orders']);
    assert.deepEqual(await d.queryForInstances('orders'), instances.slice(0, 3), 'every field and payload kind back equal');
    assert.deepEqual(
      regs.map((r) => r.instance),
      instances,
    );
    assert.deepEqual(await d.queryForInstance('billing', 'b1'), instances[3]);
    assert.equal(await d.queryForInstance('orders', 'zz'), null);
    assert.deepEqual(await d.queryForInstances('nothing'), []);
    assert.equal(ServiceInstance.buildUri(await d.queryForInstance('orders', 'a1')), 'https://10.0.0.7:8443/v1');

    const changed = { ...instances[0], port: 8090, payload: { region: 'ap' } };
    regs[0].update(changed);
    await waitFor(async () => (await d.queryForInstance('orders', 'a1')).port === 8090, { what: 'the update on the server' });
    assert.deepEqual(await d.queryForInstance('orders', 'a1'), changed);
    assert.deepEqual(regs[0].instance, changed);
    assert.throws(() => regs[0].update({ ...changed, id: 'other' }), { ...bad, message: /must stay/ });

    regs[0].setEnabled(false);
    await waitFor(async () => (await client.getData(`${base}/orders/a1`)).data.toString().endsWith('"enabled":false}'), {
      what: 'disabled on the wire',
    });
    assert.deepEqual(await d.queryForInstance('orders', 'a1'), { ...changed, enabled: false });

    await regs[0].unregister();
    await regs[0].unregister(); // idempotent
    assert.equal(await client.exists(`${base}/orders/a1`), null);
    assert.throws(() => regs[0].update(changed), closed);
    assert.equal(await regs[1].waitRegistered({ timeoutMs: 10000 }), true);
    await d.close();
    assert.deepEqual(await new ServiceDiscovery(client, base).queryForInstances('orders'), [], 'close unregisters the rest');
    await assert.rejects(d.queryForNames(), closed);
    await assert.rejects(d.register(everyField('orders', 'late')), closed);
    assert.throws(() => new ServiceCache(d, 'orders'), closed);
  } finally {
    await c.close();
  }
});

test('service types: sequential ids, persistent nodes, close keeps PERMANENT only', async () => {
  const base = uniquePath('types');
  const c = await Client.connect(zk.connectString);
  try {
    const d = new ServiceDiscovery(c, base);
    const seq = await d.register({ name: 's', id: 'q', serviceType: 'DYNAMIC_SEQUENTIAL' });
    assert.match(seq.path, new RegExp(`^${base}/s/q\\d{10}$`));
    for (const [id, serviceType] of [
      ['st', ServiceType.STATIC],
      ['pe', ServiceType.PERMANENT],
    ]) {
      await d.register({ name: 's', id, serviceType });
      assert.equal((await client.exists(`${base}/s/${id}`)).ephemeralOwner, 0n, `${serviceType} is persistent`);
    }
    await d.close();
    assert.deepEqual(await client.getChildren(`${base}/s`), ['pe'], 'close keeps PERMANENT only');
  } finally {
    await c.close();
  }
});

test("another session's instance is ZKR_CONFLICT and left untouched", async () => {
  const base = uniquePath('conflict');
  const other = await Client.connect(zk.connectString);
  try {
    const mine = new ServiceDiscovery(client, base);
    const theirs = new ServiceDiscovery(other, base);
    await mine.register({ name: 's', id: 'same', port: 1 });
    await assert.rejects(theirs.register({ name: 's', id: 'same', port: 2 }), { code: 'ZKR_CONFLICT' });
    assert.equal((await theirs.queryForInstance('s', 'same')).port, 1);
    assert.equal((await other.exists(`${base}/s/same`)).ephemeralOwner, client.sessionId);
    await mine.close();
    await theirs.close();
  } finally {
    await other.close();
  }
});

test('cache events are named, a garbage node is INVALID, replay and for await', async () => {
  const base = uniquePath('cache');
  const d = new ServiceDiscovery(client, base);
  const cache = new ServiceCache(d, 's');
  const events = [];
  cache.on('event', (e) => events.push(e));
  await cache.start();
  try {
    assert.equal(await cache.awaitInitialized(10000), true);
    const reg = await d.register(everyField('s', 'a'));
    assert.equal(await cache.awaitZxid((await client.exists(reg.path)).czxid, 10000), true); // ADDED before the update
    reg.update({ ...reg.instance, port: 2 });
    await waitFor(() => cache.instances().length === 1 && cache.instances()[0].port === 2, { what: 'the update cached' });
    await client.create(`${base}/s/garbage`, 'not json');
    await assert.rejects(d.queryForInstance('s', 'garbage'), { code: 'ZKR_CORRUPTED_DATA' });
    assert.deepEqual(
      (await d.queryForInstances('s')).map((i) => i.id),
      ['a'],
      'query leaves the garbage out',
    );
    await reg.unregister();
    const fence = await client.setData(`${base}/s`, '');
    assert.equal(await cache.awaitZxid(fence.mzxid, 10000), true);
    await waitFor(() => events.some((e) => e.kind === K.REMOVED), { what: 'the removal heard' });
    assert.deepEqual(
      events.map((e) => e.kind),
      [K.INITIALIZED, K.ADDED, K.UPDATED, K.INVALID, K.REMOVED],
    );
    const [, added, updated, invalid, removed] = events;
    assert.deepEqual(added.instance, everyField('s', 'a'));
    assert.equal(added.path, `${base}/s/a`);
    assert.equal(updated.old.port, 8080);
    assert.equal(updated.instance.port, 2);
    assert.equal(invalid.path, `${base}/s/garbage`);
    assert.ok(invalid.error instanceof Error);
    assert.equal(invalid.error.code, 'ZKR_CORRUPTED_DATA');
    assert.equal(invalid.instance, null);
    assert.equal(removed.instance.id, 'a');
    assert.ok(events.every((e) => e.resync === false && (e.kind === K.INVALID) === (e.error !== null)));
    assert.deepEqual(cache.instances(), []);

    // `for await` with replay: the cached instances (and the still invalid node), INITIALIZED,
    // then what happens next.
    await d.register(everyField('s', 'b'));
    await waitFor(() => cache.instances().length === 1, { what: 'b cached' });
    const replayed = [];
    const iterator = cache.events({ replay: true });
    const consumer = (async () => {
      for await (const ev of iterator) {
        replayed.push(ev);
        if (replayed.length === 4) break;
      }
    })();
    await d.register(everyField('s', 'c'));
    await consumer;
    assert.deepEqual(
      replayed.map((e) => [e.kind, e.instance?.id ?? null]),
      [
        [K.ADDED, 'b'],
        [K.INVALID, null],
        [K.INITIALIZED, null],
        [K.ADDED, 'c'],
      ],
    );
    // A loop over the cache ends when it is closed.
    const ending = cache[Symbol.asyncIterator]();
    const ended = (async () => {
      const seen = [];
      for await (const ev of ending) seen.push(ev);
      return seen;
    })();
    cache.close();
    assert.deepEqual(await ended, []);
    await assert.rejects(cache.awaitInitialized(1000), closed);
    await assert.rejects(cache.start(), closed);
  } finally {
    cache.close();
    await d.close();
  }
});

test('providers pick by strategy, never a disabled or down instance', async () => {
  const base = uniquePath('provider');
  const d = new ServiceDiscovery(client, base);
  try {
    const regs = {};
    for (const [port, id] of ['c', 'a', 'b'].entries()) regs[id] = await d.register({ name: 's', id, port });
    const p = new ServiceProvider(d, 's');
    await p.start();
    await waitFor(() => p.getAllInstances().length === 3, { what: 'three instances' });
    assert.deepEqual(
      Array.from({ length: 6 }, () => p.getInstance().id),
      ['a', 'b', 'c', 'a', 'b', 'c'],
      'round robin in id order',
    );
    regs.b.setEnabled(false);
    await waitFor(() => p.getAllInstances().length === 2, { what: 'b disabled in the cache' });
    assert.deepEqual(new Set(Array.from({ length: 10 }, () => p.getInstance().id)), new Set(['a', 'c']));
    const first = p.getAllInstances()[0];
    assert.equal(first.id, 'a');
    p.noteError(first);
    assert.equal(p.getAllInstances().length, 2, 'one error: not down');
    p.noteError(first);
    assert.deepEqual(
      Array.from({ length: 5 }, () => p.getInstance().id),
      ['c', 'c', 'c', 'c', 'c'],
      'a down, b disabled',
    );
    regs.c.setEnabled(false);
    await waitFor(() => p.getInstance() === null, { what: 'nothing usable' });
    p.close();
    assert.throws(() => p.getInstance(), closed);
    assert.throws(() => p.noteError(first), closed);
    await assert.rejects(p.start(), closed);
    regs.b.setEnabled(true);
    regs.c.setEnabled(true);

    const sticky = new ServiceProvider(d, 's', { strategy: ProviderStrategy.STICKY });
    await sticky.start();
    await waitFor(() => sticky.getAllInstances().length === 3, { what: 'sticky sees three' });
    const kept = sticky.getInstance().id;
    for (let i = 0; i < 10; i++) assert.equal(sticky.getInstance().id, kept);
    sticky.close();

    const seen = [];
    const onlyA = new ServiceProvider(d, 's', {
      strategy: 'random',
      filter: (i) => {
        seen.push(i.id);
        return i.port === 1;
      },
    });
    await onlyA.start();
    await waitFor(() => onlyA.getAllInstances().length === 1, { what: 'filtered' });
    assert.equal(onlyA.getInstance().id, 'a');
    assert.deepEqual(new Set(seen), new Set(['a', 'b', 'c']), 'the filter sees every cached instance');
    onlyA.close();
    const broken = new ServiceProvider(d, 's', {
      filter: () => {
        throw new Error('filter bug');
      },
    });
    await broken.start();
    assert.throws(() => broken.getInstance(), /filter bug/);
    broken.close();

    // A short down timeout: the instance comes back.
    const quick = new ServiceProvider(d, 's', { downErrorThreshold: 1, downTimeoutMs: 50 });
    await quick.start();
    await waitFor(() => quick.getAllInstances().length === 3, { what: 'all three enabled again' });
    quick.noteError(quick.getAllInstances().find((i) => i.id === 'b'));
    assert.ok(!quick.getAllInstances().some((i) => i.id === 'b'));
    await waitFor(() => quick.getAllInstances().some((i) => i.id === 'b'), { what: 'b back after the timeout' });
    quick.close();
  } finally {
    await d.close();
  }
});

// Review-discovery #6: DYNAMIC_SEQUENTIAL instances share their id; noteError and a filter's
// verdict apply to one of them, not to every instance with the id.
test('instances that share an id are told apart by noteError and by a filter', async () => {
  const base = uniquePath('shared-id');
  const d1 = new ServiceDiscovery(client, base);
  const d2 = new ServiceDiscovery(client, base);
  try {
    for (const [d, port] of [[d1, 1], [d2, 2]]) {
      await d.register({ name: 's', id: 'q', port, serviceType: ServiceType.DYNAMIC_SEQUENTIAL });
    }
    const p = new ServiceProvider(d1, 's');
    await p.start();
    await waitFor(() => p.getAllInstances().length === 2, { what: 'both instances' });
    const one = p.getAllInstances().find((i) => i.port === 1);
    p.noteError(one);
    p.noteError(one);
    assert.deepEqual(p.getAllInstances().map((i) => i.port), [2], 'only the instance with the errors is down');
    p.close();

    const onlyTwo = new ServiceProvider(d1, 's', { filter: (i) => i.port === 2 });
    await onlyTwo.start();
    await waitFor(() => onlyTwo.getAllInstances().length > 0, { what: 'the filtered instance' });
    assert.deepEqual(onlyTwo.getAllInstances().map((i) => i.port), [2], 'the filter refused the other');
    for (let i = 0; i < 4; i++) assert.equal(onlyTwo.getInstance().port, 2);
    onlyTwo.close();
  } finally {
    await d1.close();
    await d2.close();
  }
});

test('UriSpec, and bad input refused naming the option', async () => {
  const spec = new UriSpec('{scheme}://foo.com:{port}/{ fred }{[}x{]}');
  const i = ServiceInstance.create('s', { id: 'the-id', port: 1234, registrationTimeUTC: 42 });
  assert.equal(spec.build(i, { fred: 'barney' }), 'http://foo.com:1234/barney{x}');
  assert.equal(new UriSpec('{scheme}/{port}').build(), 'http/');
  assert.equal(String(spec), '{scheme}://foo.com:{port}/{fred}{[}x{]}');
  assert.equal(ServiceInstance.create('s', { uriSpec: spec }).uriSpec, String(spec));
  assert.throws(() => new UriSpec('{a'), { ...bad, message: /Final variable not closed/ });
  assert.throws(() => spec.build(i, { fred: 1 }), { ...bad, message: /variables\.fred/ });

  const refused = [
    [{}, /name must be a string/],
    [{ name: '' }, /name must not be empty/],
    [{ name: 'a/b' }, /name/],
    [{ name: 's', id: '' }, /id must not be empty/],
    [{ name: 's', port: 70000 }, /port 70000 is not a port/],
    [{ name: 's', port: 1.5 }, /port must be an integer/],
    [{ name: 's', sslPort: -1 }, /ssl_port/],
    [{ name: 's', serviceType: 'WEIRD' }, /serviceType/],
    [{ name: 's', uriSpec: 'a}' }, /uriSpec/],
    [{ name: 's', payload: 1n }, /payload must be a JSON value/],
    [{ name: 's', payload: () => 1 }, /payload must be a JSON value/],
    [{ name: 's', payload: [1], payloadClass: 'NotAClass' }, /payload_class/],
    [{ name: 's', registrationTimeUTC: 1.5 }, /registrationTimeUTC/],
    [{ name: 's', enabled: 'yes' }, /enabled must be a boolean/],
    [{ name: 's', prot: 1 }, /unknown option "prot" \(did you mean port\?\)/],
  ];
  const d = new ServiceDiscovery(client, uniquePath('bad'));
  for (const [instance, message] of refused) {
    await assert.rejects(d.register(instance), { ...bad, message }, JSON.stringify(instance, (k, v) => (typeof v === 'bigint' ? `${v}n` : v)));
  }
  assert.throws(() => ServiceInstance.create('s', { port: 70000 }), { ...bad, message: /port/ });
  await assert.rejects(d.register('s'), { ...bad, message: /service instance object/ });
  assert.throws(() => new ServiceDiscovery(client, 'no-slash'), bad);
  assert.throws(() => new ServiceProvider(d, 's', { strategy: 'fastest' }), { ...bad, message: /strategy/ });
  assert.throws(() => new ServiceProvider(d, 's', { downTimeoutMs: -1 }), { ...bad, message: /downTimeoutMs/ });
  assert.throws(() => new ServiceProvider(d, 's', { downErrorThreshold: -1 }), { ...bad, message: /downErrorThreshold/ });
  assert.throws(() => new ServiceProvider(d, 's', { stratgy: 'random' }), { ...bad, message: /did you mean strategy\?/ });
  assert.throws(() => new ServiceProvider(d, 's', { filter: 42 }), { ...bad, message: /filter must be a function/ });
  assert.throws(() => new ServiceProvider({}, 's'), { ...bad, message: /discovery must be a ServiceDiscovery/ });
  assert.throws(() => new ServiceCache(d, 'a/b'), bad);
  assert.throws(() => ServiceInstance.toJson({ name: 's' }, { compat: true }), { ...bad, message: /did you mean compatible\?/ });
  // A registered instance changed into a bad one: refused by update, as by register.
  const reg = await d.register({ name: 's', id: 'ok' });
  assert.throws(() => reg.update({ ...reg.instance, port: 99999 }), { ...bad, message: /port/ });
  assert.throws(() => reg.setEnabled('no'), bad);
  await d.close();
});

test("the discovery words are the core's", () => {
  const words = native.discoveryVocabulary();
  assert.deepEqual(Object.keys(ServiceType), words.serviceTypes);
  assert.deepEqual(Object.keys(K), words.cacheEventKinds);
  assert.deepEqual(Object.values(ProviderStrategy), words.strategies);
  assert.deepEqual(Object.keys(ProviderStrategy), ['ROUND_ROBIN', 'RANDOM', 'STICKY']);
});
