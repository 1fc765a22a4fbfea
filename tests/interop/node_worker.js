'use strict';
// The Node worker of the interop runner (tests/interop/run):
//   node node_worker.js --role ROLE --connect HOST:PORT --path P --iterations N --id ID --log FILE
//        [--go FILE] [--expect K] [--peers DIR] [--max-leases M]
//        [--tls-ca F --tls-cert F --tls-key F] [--sasl-user U --sasl-password P] [--whoami DIR]
// Secured servers (the tls scenario): { tls: { ca, cert, key }, sasl: { username, password } };
// --whoami DIR creates DIR/ID with CREATOR_ALL_ACL, so that its ACL names the identities the
// session authenticated as.
// ROLE: mutex, cohort, counter, latch, selector, sharedcount, rwlock, semaphore, semcount, queue,
// simplequeue, doublebarrier, group, gzip, cache, watch, discovery (see discoveryRun below),
// partition, lease (partition, lease: the
// loops of py_worker.py and kazoo_worker.py, on SetPartitioner and MultiNonBlockingLease).
// simplequeue, doublebarrier, group, gzip, cache, watch, putmulti, sharder.
// putmulti: puts "node:i" three to a node (putMulti) into a DistributedQueue (lock path P-locks),
// then consumes until idle: "got node ID ITEM TOKEN" per message. sharder: a QueueSharder
// (P/queues, leader P/leader, lock paths P-locks/SHARD, threshold 3, checks every 200 ms, at
// most 4 shards): puts through getQueue(), consumes from every shard, then "shards node ID K".
// cohort: 4 async owners (each its own Owner) share ONE InterProcessMutex object with cohort
// handoffs ({ cohort: { maxHandoffs: 8, maxHoldMs: 5 } }: one lock node for the process, the
// hold handed between them in memory) and take it N times in total (owner k: floor(N/4), one
// more if k < N % 4), holding ~0.2 ms; logged like mutex, but TOKEN is the wide fencing token
// (czxid << 32 | handoff, decimal), which strictly increases also across in-memory handoffs.
// values: a SharedValue at P/value, DistributedAtomicValues at P/atomic and P/atomic-set (promoted
// to a lock at P/atomic-lock) and a CachedAtomicLong at P/ids, the workload of Values.java (see
// valuesStart/valuesRun below): "set node ID PRE POST PROMOTED", "value node ID V", "atomic node
// ID V", "id node ID V", then "retries node ID VALUE ATOMIC SET ID".
// ensemble: connected with { trackEnsemble: true } to a reconfigurable ensemble; "session node ID
// SID" before the barrier, then mutex sections stamped like mutex's until the file GO.changed
// exists ("changed node ID K" after K sections), then N more; then "session node ID SID" again
// and "hosts node ID CONNECT" (client.currentConnectString).
// Log lines: "start node ID TOKEN NS" / "end node ID TOKEN NS" (process.hrtime.bigint(), i.e.
// CLOCK_MONOTONIC; rwlock/semaphore: TOKEN is the tag read|write|lease), "inc node ID VALUE" /
// "fail node ID CODE", "lead"/"unlead node ID NS", then "done node ID COUNT".
const fs = require('fs');
const path = require('path');
const {
  Client, InterProcessMutex, DistributedAtomicLong, LeaderLatch, LeaderSelector, SharedCount,
  InterProcessReadWriteLock, InterProcessSemaphoreV2, GroupMember, Owner,
  DistributedQueue, SimpleDistributedQueue, DistributedDoubleBarrier, CuratorCache, PersistentWatcher,
  ServiceDiscovery, ServiceCache, ServiceProvider, ServiceInstance,
  SetPartitioner, MultiNonBlockingLease,
  QueueSharder,
  SharedValue, DistributedAtomicValue, CachedAtomicLong, RetryNTimes,
} = require(path.join(__dirname, '..', '..', 'bindings-node'));

function args() {
  const a = {
    role: '', connect: '', path: '', iterations: 20, id: 'node', log: '/dev/null', go: '', expect: 5,
    peers: '', 'max-leases': 2, 'tls-ca': '', 'tls-cert': '', 'tls-key': '', 'sasl-user': '',
    'sasl-password': '', whoami: '',
  };
  const v = process.argv.slice(2);
  for (let i = 0; i + 1 < v.length; i += 2) {
    const k = v[i].replace(/^--/, '');
    if (!(k in a)) throw new Error(`unknown option ${v[i]}`);
    a[k] = k === 'iterations' || k === 'expect' || k === 'max-leases' ? Number(v[i + 1]) : v[i + 1];
  }
  return a;
}

// The values scenario (tests/interop/README.md), as Curator's worker runs it (Values.java): P/value
// a SharedValue (seed "0") counting in decimal text with getVersionedValue / trySetValue; P/atomic
// a DistributedAtomicValue (initialized "0") with get / compareAndSet; P/atomic-set one with
// RetryNTimes(0, 0) (one optimistic try) promoted to a lock at P/atomic-lock (one try under it,
// Curator's default), initialized "seed", written with trySet("ID:i"); P/ids a CachedAtomicLong
// (cache factor 5). Everything started and initialized before the barrier.
async function valuesStart(client, p) {
  const oneTry = new RetryNTimes(0, 0);
  const value = new SharedValue(client, `${p}/value`, '0');
  await value.start();
  const atomic = new DistributedAtomicValue(client, `${p}/atomic`, { retry: oneTry });
  await atomic.initialize('0');
  const set = new DistributedAtomicValue(client, `${p}/atomic-set`, {
    retry: oneTry, promotedToLock: { lockPath: `${p}/atomic-lock` },
  });
  await set.initialize('seed');
  const counter = new DistributedAtomicLong(client, `${p}/ids`, { retry: new RetryNTimes(50, 10) });
  return { value, atomic, set, ids: new CachedAtomicLong(counter, 5) };
}

async function valuesRun(v, id, n, log) {
  let valueRetries = 0;
  let atomicRetries = 0;
  let setFails = 0;
  let idFails = 0;
  const text = (b) => (b === null ? 'null' : b.toString('utf8'));
  for (let i = 0; i < n; i++) {
    for (;;) {
      const r = await v.set.trySet(`${id}:${i}`);
      if (r.succeeded) {
        log(`set node ${id} ${text(r.preValue)} ${text(r.postValue)} ${r.stats.promotedLockTries}`);
        break;
      }
      setFails++;
    }
  }
  for (let i = 0; i < n; i++) {
    for (;;) {
      const vv = v.value.getVersionedValue();
      const next = Number(vv.value.toString('utf8')) + 1;
      if (await v.value.trySetValue(vv, String(next))) {
        log(`value node ${id} ${next}`);
        break;
      }
      valueRetries++;
    }
    for (;;) {
      const current = (await v.atomic.get()).postValue;
      const next = Number(text(current)) + 1;
      if ((await v.atomic.compareAndSet(current, String(next))).succeeded) {
        log(`atomic node ${id} ${next}`);
        break;
      }
      atomicRetries++;
    }
    for (;;) {
      const r = await v.ids.next();
      if (r.succeeded) {
        log(`id node ${id} ${r.postValue}`);
        break;
      }
      idFails++;
    }
  }
  log(`retries node ${id} ${valueRetries} ${atomicRetries} ${setFails} ${idFails}`);
  log(`done node ${id} ${n}`);
  v.value.close();
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// the start barrier's poll: every worker waits for the runner's go file (about 120 workers at once; 1 ms polls starved the servers on 2 cores)
const BARRIER_POLL_MS = 20;

// Holds for about `ns` nanoseconds: yields to the event loop once (so the other owners' calls
// run while we hold), then spins out the rest (timers are too coarse for 0.2 ms).
async function holdFor(ns) {
  const until = process.hrtime.bigint() + ns;
  await new Promise((r) => setImmediate(r));
  while (process.hrtime.bigint() < until);
}

// Marks our first section in PEERS/ID and waits (30 s at most) for another worker's mark.
async function waitForPeer(peers, id) {
  if (!peers) return;
  fs.writeFileSync(path.join(peers, id), '');
  const t = Date.now();
  while (Date.now() - t < 30000) {
    if (fs.readdirSync(peers).some((n) => n !== id)) return;
    await sleep(1);
  }
}

// Queue scenarios: consume once Curator took one of our items (GO.ROLE.java-took), or after 30 s.
// A semaphore whose limit is the SharedCount at P-count (1): N sections at limit 1 (lease1);
// then PEERS/p1/ID, wait for the Rust worker's PEERS/raised (it set the count to 3 and holds a
// lease until every other worker marked PEERS/p2/ID inside its first lease2 section), and N
// sections (lease2).
async function semcount(client, a, log) {
  const count = new SharedCount(client, `${a.path}-count`, 1);
  await count.start();
  const sem = new InterProcessSemaphoreV2(client, a.path, { count });
  const section = async (tag, mark) => {
    const leases = await sem.acquire({ qty: 1 });
    if (!leases) throw new Error('no lease without a timeout');
    log(`start node ${a.id} ${tag} ${process.hrtime.bigint()}`);
    if (mark) fs.writeFileSync(mark, '');
    await sleep(1);
    log(`end node ${a.id} ${tag} ${process.hrtime.bigint()}`);
    await sem.returnLease(leases[0]);
  };
  for (let i = 0; i < a.iterations; i++) await section('lease1');
  for (const d of ['p1', 'p2']) fs.mkdirSync(path.join(a.peers, d), { recursive: true });
  fs.writeFileSync(path.join(a.peers, 'p1', a.id), '');
  const deadline = Date.now() + 120000;
  while (!fs.existsSync(path.join(a.peers, 'raised'))) {
    if (Date.now() > deadline) throw new Error('the count was never raised');
    await sleep(2);
  }
  for (let i = 0; i < a.iterations; i++) await section('lease2', i === 0 ? path.join(a.peers, 'p2', a.id) : null);
  log(`done node ${a.id} ${2 * a.iterations}`);
  count.close();
}

async function waitForCuratorConsumer(go, role) {
  const deadline = Date.now() + 30000;
  while (go && !fs.existsSync(`${go}.${role}.java-took`) && Date.now() < deadline) await sleep(5);
}

async function waitForFile(go) {
  while (go && !fs.existsSync(go)) await sleep(BARRIER_POLL_MS);
}

// Polls `f` every 20 ms for up to 60 s; whether it held.
async function poll(f) {
  const t = Date.now();
  while (Date.now() - t < 60000) {
    if (await f()) return true;
    await sleep(20);
  }
  return false;
}

// Polls count() every 5 ms until it reaches want, giving up only after 60 s in which it did not
// grow: a slow peer on a loaded machine (the long run's 120 workers on 2 CPUs) is still waited
// for, a stuck one is not; the count last seen.
async function waitCount(want, count) {
  let seen = count();
  let since = Date.now();
  while (seen < want && Date.now() - since < 60000) {
    await sleep(5);
    const now = count();
    if (now !== seen) [seen, since] = [now, Date.now()];
  }
  return seen;
}

const membersAt = (members, expect, phases) =>
  members.size >= expect && [...members].every(([k, v]) => phases.some((p) => v.toString() === `${p}-${k}`));

// The group scenario (tests/interop/README.md): join, see all, set p1, see all p1, mark, then
// see rust-group leave.
async function group(client, a, log) {
  const m = new GroupMember(client, a.path, a.id, `p0-${a.id}`);
  await m.start();
  log(`joined node ${a.id}`);
  const keys = () => [...m.currentMembers().keys()].sort().join(',');
  if (await poll(() => membersAt(m.currentMembers(), a.expect, ['p0', 'p1']))) log(`saw-all node ${a.id} ${keys()}`);
  m.setThisData(`p1-${a.id}`);
  if (await poll(() => membersAt(m.currentMembers(), a.expect, ['p1']))) log(`saw-data node ${a.id} ${keys()}`);
  fs.writeFileSync(path.join(a.peers, a.id), '');
  if (await poll(() => !m.currentMembers().has('rust-group'))) log(`saw-leave node ${a.id}`);
  await m.close();
  log(`done node ${a.id} 1`);
}

const gzipPayload = (id) => Buffer.from(`gzip payload of ${id} `.repeat(20));

// The gzip scenario: write ours compressed, read every runtime's back decompressed.
async function gzip(client, a, log) {
  await client.create(`${a.path}/${a.id}`, gzipPayload(a.id), { compressed: true, createParents: 'persistent' });
  log(`wrote node ${a.id}`);
  await poll(async () => (await client.getChildren(a.path)).length >= a.expect);
  const children = (await client.getChildren(a.path)).sort();
  for (const other of children) {
    let ok = false;
    try {
      ok = (await client.getData(`${a.path}/${other}`, { compressed: true })).data.equals(gzipPayload(other));
    } catch {
      ok = false;
    }
    log(`read node ${a.id} ${other} ${ok ? 'ok' : 'bad'}`);
  }
  log(`done node ${a.id} ${children.length}`);
}

const DISCOVERY_SERVICES = ['java', 'rust', 'c', 'python', 'node'];

// An instance's fields as one JSON object, the same in every worker.
function canon(i) {
  return JSON.stringify({
    name: i.name, id: i.id, address: i.address, port: i.port, sslPort: i.sslPort, payload: i.payload,
    payloadClass: i.payloadClass, registrationTimeUTC: i.registrationTimeUTC, serviceType: i.serviceType,
    uriSpec: i.uriSpec === null || i.uriSpec === undefined ? null : String(i.uriSpec), enabled: i.enabled,
  }, (k, v) => (typeof v === 'bigint' ? Number(v) : v));
}

// The discovery scenario (tests/interop/README.md): a ServiceCache and a round-robin
// ServiceProvider per runtime's service, started before the barrier.
async function discoveryStart(client, base) {
  const d = new ServiceDiscovery(client, base);
  const caches = {};
  const providers = {};
  for (const s of DISCOVERY_SERVICES) {
    const c = new ServiceCache(d, s);
    await c.start();
    if (!(await c.awaitInitialized(60000))) throw new Error('service cache not loaded');
    caches[s] = c;
    const p = new ServiceProvider(d, s, { strategy: 'round_robin' });
    await p.start();
    providers[s] = p;
  }
  return { d, caches, providers };
}

// This worker's instances under service "node" (map, pojo, list, none, the disabled "off", K
// extras; the Node face has no write-enabled mode, so no "full"), then the registered / found /
// picked / usable lines, the peers' marks, close.
async function discoveryRun({ d, caches, providers }, a, log) {
  const lhm = 'java.util.LinkedHashMap';
  const map = {
    region: 'eu-west', weight: 1.5, ratio: 2.5e-4, big: 10000000000, tags: ['a', 'b'], nested: { k: 'v' },
    note: 'say "hi"\t\u00e9\u00fc/\u0001',
  };
  const mine = [
    { id: 'node-map', address: '10.0.0.1', port: 8080, payload: map, payloadClass: lhm,
      uriSpec: '{scheme}://{address}:{port}/map' },
    { id: 'node-pojo', address: '10.0.0.2', port: 8081, sslPort: 8443,
      payload: { region: 'us', weight: 3, primary: true }, payloadClass: 'zkrecipes.interop.Discovery$Details',
      serviceType: 'STATIC', uriSpec: '{scheme}://{address}:{ssl-port}/pojo' },
    { id: 'node-list', address: '10.0.0.3', port: 8082, payload: ['x', 1, 2.5, true, null],
      payloadClass: 'java.util.ArrayList', uriSpec: '{scheme}://{address}:{port}/{[}list{]}' },
    { id: 'node-none', address: '10.0.0.4', port: 8083 },
    { id: 'node-off', address: '10.0.0.5', port: 8084, enabled: false },
  ];
  for (let k = 0; k < a.iterations; k++) {
    mine.push({ id: `node-e${k}`, address: `10.1.0.${k % 250}`, port: 9000 + k, payload: { i: k }, payloadClass: lhm });
  }
  let registered = 0;
  for (const o of mine) {
    const r = await d.register(ServiceInstance.create('node', o));
    log(`registered node node/${r.instance.id} ${canon(r.instance)}`);
    registered++;
  }
  const count = () => DISCOVERY_SERVICES.reduce((n, s) => n + caches[s].instances().length, 0);
  const t = Date.now();
  await waitCount(a.expect, count);
  // Each provider has a cache of its own, which may lag the worker's (seen under the load of the
  // long run): wait until it offers every enabled instance (all but the service's "-off").
  const caughtUp = () => DISCOVERY_SERVICES.every((s) =>
    providers[s].getAllInstances().length === caches[s].instances().filter((i) => !i.id.endsWith('-off')).length);
  const t1 = Date.now();
  while (!caughtUp() && Date.now() - t1 < 60000) await sleep(20);
  log(`waited node ${t1 - t} ${Date.now() - t1} ${caughtUp()}`);
  for (const s of DISCOVERY_SERVICES) {
    for (const i of caches[s].instances()) log(`found node ${s}/${i.id} ${canon(i)}`);
  }
  for (const s of DISCOVERY_SERVICES) {
    const p = providers[s];
    for (let k = 0; k < 2 * caches[s].instances().length; k++) {
      const i = p.getInstance();
      log(`picked node ${s}/${i === null ? '-' : i.id}`);
    }
    log(`usable node ${s} ${p.getAllInstances().map((i) => i.id).sort().join(',')}`);
  }
  fs.writeFileSync(path.join(a.peers, a.id), '');
  // Our instances stay registered until every peer has picked and marked (the runner marks a
  // peer that exited; it kills every worker at its deadline).
  const t2 = Date.now();
  while (fs.readdirSync(a.peers).length < DISCOVERY_SERVICES.length && Date.now() - t2 < 600000) await sleep(20);
  for (const s of DISCOVERY_SERVICES) {
    providers[s].close();
    caches[s].close();
  }
  await d.close();
  log(`done node ${a.id} ${registered}`);
}

const PARTS = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `p${i}`);
const HOLD_MS = 400;

// kazoo's default partition_func.
function kazooShare(me, ids, parts) {
  const workers = [...ids].sort();
  const i = workers.indexOf(me);
  return i < 0 ? null : [...parts].sort().filter((_, k) => k % workers.length === i);
}

async function partyIds(client, p) {
  return (await client.getChildren(`${p}/party`)).map((c) => c.slice(c.indexOf('-') + 1));
}

// kazoo's loop on one partitioner, stamping start/end around each hold (start once ACQUIRED,
// end before releaseSet); resolves to the held partitions once until(state, parts, since).
async function drive(p, log, me, until) {
  let held = null;
  let since = 0;
  for (;;) {
    const [state, parts] = p.snapshot();
    if (state === 'ACQUIRED' && held === null) {
      held = parts;
      since = Date.now();
      for (const q of held) log(`start node ${me} ${q} ${process.hrtime.bigint()}`);
    }
    if (await until(state, parts, since)) return held;
    if (state === 'RELEASE') {
      for (const q of held ?? []) log(`end node ${me} ${q} ${process.hrtime.bigint()}`);
      held = null;
      await p.releaseSet();
    } else if (state === 'FAILURE') {
      throw new Error('partitioner FAILURE');
    } else {
      await p.waitForChange(state, { timeoutMs: 50 });
    }
  }
}

async function leave(p, held, log, me) {
  for (const q of held ?? []) log(`end node ${me} ${q} ${process.hrtime.bigint()}`);
  await p.finish();
}

// The partition scenario (tests/interop/README.md).
async function partition(client, a, log) {
  const member = async () => {
    const p = new SetPartitioner(client, a.path, PARTS, { identifier: a.id, timeBoundaryMs: 200, maxReactionTimeMs: 100 });
    await p.start();
    return p;
  };
  // After the Rust worker's first round (py_worker.py's wait_for_first).
  const until = Date.now() + 120000;
  while (!fs.existsSync(`${a.peers}.first`)) {
    if (Date.now() > until) throw new Error('the Rust worker\'s first round never ended (no PEERS.first)');
    await sleep(5);
  }
  for (let r = 0; r < a.iterations; r++) {
    const p = await member();
    const deadline = Date.now() + 120000;
    const hold = HOLD_MS + Number(process.hrtime.bigint() % 200n); // jittered, so that members leave apart
    const held = await drive(p, log, a.id, (s, _, since) => (s === 'ACQUIRED' && Date.now() - since >= hold) || Date.now() > deadline);
    if (held === null) throw new Error(`round ${r}: never ACQUIRED`);
    await leave(p, held, log, a.id);
    log(`round node ${a.id} ${r}`);
    await sleep(300 + Number(process.hrtime.bigint() % 200n)); // > timeBoundary: the rest divide without us
  }
  const p = await member();
  let logged = null;
  const deadline = Date.now() + 120000;
  const final = async (state, parts) => {
    if (state === 'ACQUIRED' && JSON.stringify(logged) !== JSON.stringify(parts)) {
      const ids = await partyIds(client, a.path);
      if (new Set(ids).size === ids.length && ids.length === a.expect
          && JSON.stringify(parts) === JSON.stringify(kazooShare(a.id, ids, PARTS))) {
        log(`final node ${a.id} ${parts.join(',') || '-'}`);
        fs.writeFileSync(path.join(a.peers, a.id), '');
        logged = parts;
      }
    }
    return fs.readdirSync(a.peers).length >= a.expect || Date.now() > deadline;
  };
  await leave(p, await drive(p, log, a.id, final), log, a.id);
  log(`done node ${a.id} ${a.iterations}`);
}

// The lease scenario: tries for one of 2 leases of 1 s (every 0.1 s) until it held one
// `iterations` times (60 s at most); a holder renews once within its lease, then waits for its
// end (wall-clock ns in the log).
async function lease(client, a, log) {
  const wallNs = () => BigInt(Date.now()) * 1000000n;
  let got = 0;
  const deadline = Date.now() + 60000;
  while (got < a.iterations && Date.now() < deadline) {
    const m = await MultiNonBlockingLease.obtain(client, 2, a.path, 1000, { identifier: a.id });
    if (!m.held) {
      await sleep(100);
      continue;
    }
    got += 1;
    let end = BigInt(m.end.getTime()) * 1000000n;
    log(`lease node ${a.id} ${m.index} ${wallNs()} ${end}`);
    await sleep(200);
    if (wallNs() < end - 500000000n) {
      const r = await MultiNonBlockingLease.obtain(client, 2, a.path, 1000, { identifier: a.id });
      log(`renew node ${a.id} ${r.held ? 'ok' : 'lost'} ${wallNs()} ${end}`);
      if (r.held) {
        end = BigInt(r.end.getTime()) * 1000000n;
        log(`lease node ${a.id} ${r.index} ${wallNs()} ${end}`);
      }
    }
    await sleep(Math.max(0, Number((end - wallNs()) / 1000000n)) + 50 + Number(process.hrtime.bigint() % 100n));
  }
  log(`done node ${a.id} ${got}`);
}

async function main() {
  const a = args();
  const fd = fs.openSync(a.log, 'a');
  const log = (line) => fs.writeSync(fd, line + '\n');
  // Every scenario's workers connect at once on a 2-core machine (a 15 s connect timed out in CI):
  // a minute for every connection, within the runner's 90 s ready barrier.
  const options = { sessionTimeoutMs: 30000, connectionTimeoutMs: 60000 };
  if (a['tls-ca']) {
    options.tls = { ca: a['tls-ca'], cert: a['tls-cert'] || undefined, key: a['tls-key'] || undefined };
  }
  if (a['sasl-user']) options.sasl = { username: a['sasl-user'], password: a['sasl-password'] };
  // ensemble: follow the members as they change (Curator's EnsembleTracker).
  if (a.role === 'ensemble') options.trackEnsemble = true;
  const client = await Client.connect(a.connect, options);
  if (a.role === 'ensemble') log(`session node ${a.id} ${client.sessionId}`);
  if (a.whoami) { // a node whose ACL is the session's own identities (CREATOR_ALL_ACL)
    await client.create(`${a.whoami}/${a.id}`, Buffer.alloc(0),
      { createParents: true, acl: [{ perms: 31, scheme: 'auth', id: '' }] });
  }
  try {
    let latch = null;
    if (a.role === 'latch') { // join, then wait until every runtime's participant is listed
      latch = new LeaderLatch(client, a.path, { id: a.id });
      await latch.start();
      const t = Date.now();
      let ids;
      for (;;) {
        ids = (await latch.getParticipants()).map((p) => p.id).sort();
        if (ids.length >= a.expect || Date.now() - t > 60000) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      log(`participants node ${a.id} ${ids.join(',')}`);
    }
    let selector = null;
    let terms = 0;
    let termsDone = null;
    const allTerms = new Promise((r) => { termsDone = r; });
    if (a.role === 'selector') { // queue, then wait until every runtime's participant is listed
      selector = new LeaderSelector(client, a.path, async (ctx) => {
        await waitForFile(a.go);
        if (terms >= a.iterations) return; // our share is done; main closes the selector
        log(`lead node ${a.id} ${process.hrtime.bigint()}`);
        await sleep(10);
        if (ctx.signal.aborted) throw new Error('leadership cancelled while leading');
        log(`unlead node ${a.id} ${process.hrtime.bigint()}`);
        terms++;
        if (terms >= a.iterations) termsDone();
      }, { id: a.id, autoRequeue: true });
      selector.on('error', (e) => { console.error('node_worker: takeLeadership:', e); process.exit(2); });
      selector.start();
      const t = Date.now();
      let ids;
      for (;;) {
        ids = (await selector.getParticipants()).map((p) => p.id).sort();
        if (ids.length >= a.expect || Date.now() - t > 60000) break;
        await sleep(20);
      }
      log(`participants node ${a.id} ${ids.join(',')}`);
    }
    let cache = null;
    let net = 0;
    if (a.role === 'cache') { // a CuratorCache counting its events, loaded before the barrier
      cache = new CuratorCache(client, a.path);
      cache.on('event', (e) => {
        net += e.type === 'CREATED' ? 1 : e.type === 'DELETED' ? -1 : 0;
      });
      await cache.start();
      if (!(await cache.awaitInitialized(60000))) throw new Error('cache not loaded');
    }
    let watcher = null;
    const heard = [];
    if (a.role === 'watch') { // a recursive PersistentWatcher, set before the barrier
      watcher = new PersistentWatcher(client, a.path, { recursive: true });
      watcher.on('event', (e) => {
        if (e.path !== null && e.path !== a.path) heard.push(`${e.type} ${e.path}`);
      });
      await watcher.start();
    }
    let disco = null;
    if (a.role === 'discovery') disco = await discoveryStart(client, a.path); // before the barrier
    const values = a.role === 'values' ? await valuesStart(client, a.path) : null; // before the barrier
    if (a.go) { // start barrier
      log(`ready node ${a.id}`);
      await waitForFile(a.go);
    }
    if (a.role === 'mutex') {
      const m = new InterProcessMutex(client, a.path);
      for (let i = 0; i < a.iterations; i++) {
        await m.withLock(async () => {
          const token = m.fencingToken;
          log(`start node ${a.id} ${token} ${process.hrtime.bigint()}`);
          await new Promise((r) => setTimeout(r, 0));
          log(`end node ${a.id} ${m.fencingToken} ${process.hrtime.bigint()}`);
        });
      }
      log(`done node ${a.id} ${a.iterations}`);
    } else if (a.role === 'ensemble') { // sections until the runner changed the ensemble, then N more
      const m = new InterProcessMutex(client, a.path);
      let count = 0;
      let after = null;
      while (after === null || count < after + a.iterations) {
        if (after === null && fs.existsSync(`${a.go}.changed`)) {
          log(`changed node ${a.id} ${count}`);
          after = count;
        }
        await m.withLock(async () => {
          const token = m.fencingToken;
          log(`start node ${a.id} ${token} ${process.hrtime.bigint()}`);
          await new Promise((r) => setTimeout(r, 0));
          log(`end node ${a.id} ${m.fencingToken} ${process.hrtime.bigint()}`);
        });
        count++;
      }
      log(`session node ${a.id} ${client.sessionId}`);
      log(`hosts node ${a.id} ${client.currentConnectString}`);
      log(`done node ${a.id} ${count}`);
    } else if (a.role === 'cohort') {
      const m = new InterProcessMutex(client, a.path, { cohort: { maxHandoffs: 8, maxHoldMs: 5 } });
      const OWNERS = 4;
      const share = (k) => Math.floor(a.iterations / OWNERS) + (k < a.iterations % OWNERS ? 1 : 0);
      let sections = 0;
      await Promise.all(Array.from({ length: OWNERS }, (_, k) => {
        const owner = new Owner();
        return owner.run(async () => {
          for (let i = 0; i < share(k); i++) {
            await m.withLock(async () => {
              const token = m.fencingTokenWide;
              log(`start node ${a.id} ${token} ${process.hrtime.bigint()}`);
              await holdFor(200000n);
              log(`end node ${a.id} ${m.fencingTokenWide} ${process.hrtime.bigint()}`);
              sections++;
            });
          }
        });
      }));
      log(`done node ${a.id} ${sections}`);
    } else if (a.role === 'latch') {
      for (let round = 0; round < a.iterations; round++) {
        if (round > 0) {
          latch = new LeaderLatch(client, a.path, { id: a.id });
          await latch.start();
        }
        if (!(await latch.await({ timeoutMs: 60000 }))) throw new Error('never led');
        log(`lead node ${a.id} ${process.hrtime.bigint()}`);
        await new Promise((r) => setTimeout(r, 20));
        if (!latch.hasLeadership()) throw new Error('lost leadership while leading');
        log(`unlead node ${a.id} ${process.hrtime.bigint()}`);
        await latch.close();
      }
      log(`done node ${a.id} ${a.iterations}`);
    } else if (a.role === 'counter') {
      const c = new DistributedAtomicLong(client, a.path);
      let ok = 0;
      for (let i = 0; i < a.iterations; i++) {
        try {
          const v = await c.addAndGet(1, { timeoutMs: 30000 });
          ok++;
          log(`inc node ${a.id} ${v}`);
        } catch (e) {
          log(`fail node ${a.id} ${e.code || e.message}`);
        }
      }
      log(`done node ${a.id} ${ok}`);
    } else if (a.role === 'selector') {
      let timer;
      const timeout = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`led only ${terms} times`)), 120000); });
      await Promise.race([allTerms, timeout]);
      clearTimeout(timer);
      await selector.close();
      log(`done node ${a.id} ${terms}`);
    } else if (a.role === 'values') {
      await valuesRun(values, a.id, a.iterations, log);
    } else if (a.role === 'sharedcount') {
      const c = new SharedCount(client, a.path, 0);
      await c.start();
      let ok = 0;
      let retries = 0;
      for (let i = 0; i < a.iterations; i++) {
        for (;;) {
          const v = c.getVersionedValue();
          if (await c.trySetCount(v, v.value + 1)) {
            ok++;
            log(`inc node ${a.id} ${v.value + 1}`);
            break;
          }
          retries++;
        }
      }
      log(`retries node ${a.id} ${retries}`);
      log(`done node ${a.id} ${ok}`);
      c.close();
    } else if (a.role === 'rwlock') {
      const rw = new InterProcessReadWriteLock(client, a.path);
      for (let i = 0; i < a.iterations; i++) {
        const write = i % 3 === 1;
        const tag = write ? 'write' : 'read';
        await (write ? rw.writeLock() : rw.readLock()).withLock(async () => {
          log(`start node ${a.id} ${tag} ${process.hrtime.bigint()}`);
          if (i === 0) await waitForPeer(a.peers, a.id);
          await sleep(write ? 1 : 2);
          log(`end node ${a.id} ${tag} ${process.hrtime.bigint()}`);
        });
      }
      log(`done node ${a.id} ${a.iterations}`);
    } else if (a.role === 'semaphore') {
      const sem = new InterProcessSemaphoreV2(client, a.path, a['max-leases']);
      for (let i = 0; i < a.iterations; i++) {
        const leases = await sem.acquire({ qty: 1 });
        if (!leases) throw new Error('no lease without a timeout');
        log(`start node ${a.id} lease ${process.hrtime.bigint()}`);
        if (i === 0) await waitForPeer(a.peers, a.id);
        await sleep(1);
        log(`end node ${a.id} lease ${process.hrtime.bigint()}`);
        await sem.returnLease(leases[0]);
      }
      log(`done node ${a.id} ${a.iterations}`);
    } else if (a.role === 'semcount') {
      await semcount(client, a, log);
    } else if (a.role === 'group') {
      await group(client, a, log);
    } else if (a.role === 'gzip') {
      await gzip(client, a, log);
    } else if (a.role === 'partition') {
      await partition(client, a, log);
    } else if (a.role === 'lease') {
      await lease(client, a, log);
    } else if (a.role === 'queue') {
      // Put N items, then consume until idle for 3 s (exactly once, lock path P-locks).
      const q = new DistributedQueue(client, a.path, { lockPath: `${a.path}-locks` });
      for (let i = 0; i < a.iterations; i++) await q.put(`node:${i}`);
      await waitForCuratorConsumer(a.go, a.role);
      let got = 0;
      for await (const item of q.consume({ timeoutMs: 3000 })) {
        await sleep(2);
        await item.done();
        log(`got node ${a.id} ${item.data.toString()} ${item.fencingToken}`);
        got++;
      }
      log(`done node ${a.id} ${got}`);
    } else if (a.role === 'putmulti') {
      const q = new DistributedQueue(client, a.path, { lockPath: `${a.path}-locks` });
      const items = Array.from({ length: a.iterations }, (_, i) => `node:${i}`);
      for (let k = 0; k < items.length; k += 3) await q.putMulti(items.slice(k, k + 3));
      await waitForCuratorConsumer(a.go, a.role);
      let got = 0;
      for await (const item of q.consume({ timeoutMs: 3000 })) {
        await sleep(2);
        await item.done();
        for (const m of item.messages) {
          log(`got node ${a.id} ${m.toString()} ${item.fencingToken}`);
          got++;
        }
      }
      log(`done node ${a.id} ${got}`);
    } else if (a.role === 'sharder') {
      const s = new QueueSharder(client, `${a.path}/queues`, `${a.path}/leader`,
        { lockPath: `${a.path}-locks`, newQueueThreshold: 3, thresholdCheckMs: 200, maxQueues: 4 });
      await s.start();
      for (let i = 0; i < a.iterations; i++) {
        const q = s.getQueue();
        await q.put(`node:${i}`);
        q.close();
        await sleep(10);
      }
      await waitForCuratorConsumer(a.go, a.role);
      let got = 0;
      for await (const item of s.consume({ timeoutMs: 3000 })) {
        await item.done();
        log(`got node ${a.id} ${item.data.toString()} ${item.fencingToken}`);
        got++;
      }
      log(`shards node ${a.id} ${s.shardQty}`);
      await s.close();
      log(`done node ${a.id} ${got}`);
    } else if (a.role === 'simplequeue') {
      const q = new SimpleDistributedQueue(client, a.path);
      for (let i = 0; i < a.iterations; i++) await q.offer(`node:${i}`);
      await waitForCuratorConsumer(a.go, a.role);
      let got = 0;
      for (let d; (d = await q.take({ timeoutMs: 3000 })) !== null; got++) log(`got node ${a.id} ${d.toString()} 0`);
      log(`done node ${a.id} ${got}`);
    } else if (a.role === 'doublebarrier') {
      const b = new DistributedDoubleBarrier(client, a.path, a.expect);
      await sleep(Number(process.hrtime.bigint() % 300n));
      log(`arrive node ${a.id} ${process.hrtime.bigint()}`);
      if (!(await b.enter({ timeoutMs: 60000 }))) throw new Error('enter timed out');
      log(`entered node ${a.id} ${process.hrtime.bigint()}`);
      await sleep(50);
      log(`leaving node ${a.id} ${process.hrtime.bigint()}`);
      if (!(await b.leave({ timeoutMs: 60000 }))) throw new Error('leave timed out');
      log(`left node ${a.id} ${process.hrtime.bigint()}`);
      log(`done node ${a.id} 1`);
    } else if (a.role === 'cache') { // our share, then wait until every runtime's share is cached
      for (let i = 0; i < a.iterations; i++) {
        await client.create(`${a.path}/${a.id}-${i}`, a.id, { createParents: true });
      }
      const want = a.expect * a.iterations + 1;
      await waitCount(want, () => cache.size);
      const children = [...cache].filter((n) => n.path !== a.path);
      for (const n of children) log(`node node ${a.id} ${n.path} ${(n.data ?? Buffer.alloc(0)).toString()}`);
      const t = Date.now();
      while (net !== cache.size && Date.now() - t < 10000) await sleep(5);
      log(`events node ${a.id} ${net} ${cache.size}`);
      log(`done node ${a.id} ${children.length}`);
      cache.close();
    } else if (a.role === 'watch') { // create + set our share, wait to hear everyone's
      for (let i = 0; i < a.iterations; i++) {
        const p = `${a.path}/${a.id}-${i}`;
        await client.create(p, '', { createParents: true });
        await client.setData(p, a.id);
      }
      const want = 2 * a.expect * a.iterations;
      await waitCount(want, () => heard.length);
      watcher.close();
      for (const h of heard) log(`heard node ${a.id} ${h}`);
      log(`done node ${a.id} ${heard.length}`);
    } else if (a.role === 'discovery') {
      await discoveryRun(disco, a, log);
    } else {
      throw new Error(`unknown role ${a.role}`);
    }
  } finally {
    fs.closeSync(fd);
    await client.close();
  }
}

main().catch((e) => {
  console.error('node_worker:', e);
  process.exit(2);
});
