#!/usr/bin/env node
// Benchmark driver for the Node face's peers (issue 34): what a Node team without zkrecipes
// uses, with the lock recipe of ZooKeeper's "Recipes and Solutions" page and a counter by
// versioned setData, the same recipe as tests/bench/drivers/zkc_driver.c:
//
//   --impl nzc  node-zookeeper-client (pure JavaScript, the most used ZooKeeper package on npm),
//               its callback API, promisified here one call at a time;
//   --impl nzk  the `zookeeper` package (Apache ZooKeeper's C client bound to Node), its own
//               Promise API.
//
//   node tests/bench/drivers/node_peers_driver.js --impl nzc|nzk \
//     --scenario uncontended|contended|counter_threads|counter_clients \
//     --connect HOST:PORT --path /bench/<unique> [--iterations N] [--warmup W] [--clients C]
//     [--threads T] [--seconds S] [--timeout SECONDS] [--min-seconds S]
//
// Same protocol as the other drivers: EXACTLY one JSON line on stdout, diagnostics on stderr,
// exit 1 on any failure, never a hang (every wait has a timeout; a watchdog ends the process).
// "threads" are T concurrent async loops on one client; clients are separate sessions.
//
// The lock: 1. create PATH/lock/lock- EPHEMERAL_SEQUENTIAL; 2. getChildren(PATH/lock);
// 3. lowest sequence number: held; 4. else exists(the next lower node, watch): gone: go to 2,
// else wait for its notification, then go to 2. Release: delete our node. The counter:
// PATH/counter holds an 8-byte big-endian long; an increment is getData, then
// setData(value + 1, the version read), again from getData on BADVERSION. The lock directory
// and the counter node are created before anything is timed.
//
// The packages are installed by scripts/setup-bench into tests/bench/node-peers/node_modules
// (pinned in tests/bench/node-peers/package.json), never into bindings-node.
'use strict';

const path = require('node:path');
const fs = require('node:fs');

const PEERS = path.join(__dirname, '..', 'node-peers');
const WAIT_MS = 60000; // the longest any single wait may take before the run fails
const PKG = { nzc: 'node-zookeeper-client', nzk: 'zookeeper' };

function fail(msg) {
  process.stderr.write(`node_peers_driver: FAILED: ${msg}\n`);
  process.exit(1);
}

const nowUs = () => Number(process.hrtime.bigint()) / 1000;
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
// Percentile of an ascending array: s[round((n - 1) * p / 100)] (the rule of every driver).
const pct = (s, p) => (s.length ? s[Math.round(((s.length - 1) * p) / 100)] : NaN);
const r2 = (x) => Math.round(x * 100) / 100;
function latStats(xs) {
  const s = Float64Array.from(xs).sort();
  let t = 0;
  for (const x of s) t += x;
  return { n: s.length, p50_us: r2(pct(s, 50)), p99_us: r2(pct(s, 99)), mean_us: r2(t / s.length) };
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function within(p, ms, what) {
  let timer;
  const t = new Promise((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

function parseArgs(argv) {
  const o = { timeout: 600 };
  const num = new Set(['iterations', 'warmup', 'clients', 'threads', 'seconds', 'timeout', 'min-seconds']);
  const known = new Set(['impl', 'scenario', 'connect', 'path', ...num]);
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!argv[i].startsWith('--') || !known.has(k)) fail(`unknown option ${argv[i]}`);
    if (i + 1 >= argv.length) fail(`option ${argv[i]} needs a value`);
    o[k] = num.has(k) ? Number(argv[i + 1]) : argv[i + 1];
    if (num.has(k) && !Number.isFinite(o[k])) fail(`option ${argv[i]} needs a number`);
  }
  if (!PKG[o.impl]) fail(`--impl must be nzc or nzk, not ${o.impl}`);
  if (!o.scenario || !o.connect || !o.path) fail('--scenario, --connect and --path are required');
  if (!o.path.startsWith('/') || o.path.endsWith('/')) fail(`--path must be absolute without a trailing slash: ${o.path}`);
  return o;
}

function load(name) {
  try {
    return require(path.join(PEERS, 'node_modules', name));
  } catch (err) {
    fail(`cannot load ${name} from ${PEERS}/node_modules: ${err.message} (run scripts/setup-bench)`);
  }
}

function version(name) {
  return JSON.parse(fs.readFileSync(path.join(PEERS, 'node_modules', name, 'package.json'), 'utf8')).version;
}

// ---- one adapter per package: the handful of calls the recipe needs ----
//
// create(path, data, ephemeralSequential) -> created path; children(path) -> names;
// existsWatch(path, onEvent) -> whether it exists (the watch is set either way);
// remove(path); getData(path) -> { data, version }; setData(path, data, version) -> true, or
// false on BADVERSION; mkdirp(path); close().

async function connectNzc(o) {
  const zk = load('node-zookeeper-client');
  const { CreateMode, Exception } = zk;
  const c = zk.createClient(o.connect, { sessionTimeout: 30000, spinDelay: 100, retries: 0 });
  const connected = new Promise((resolve) => c.once('connected', resolve));
  c.on('expired', () => fail('session expired'));
  c.connect();
  await within(connected, 15000, 'connect');
  const call = (fn, ...args) =>
    new Promise((resolve, reject) => fn.call(c, ...args, (err, ...res) => (err ? reject(err) : resolve(res))));
  return {
    create: async (p, data, seq) =>
      (await call(c.create, p, data, seq ? CreateMode.EPHEMERAL_SEQUENTIAL : CreateMode.PERSISTENT))[0],
    children: async (p) => (await call(c.getChildren, p))[0],
    existsWatch: async (p, onEvent) => (await call(c.exists, p, onEvent))[0] != null,
    remove: (p) => call(c.remove, p, -1),
    getData: async (p) => {
      const [data, stat] = await call(c.getData, p);
      return { data, version: stat.version };
    },
    setData: (p, data, v) =>
      call(c.setData, p, data, v).then(
        () => true,
        (err) => {
          if (err.getCode && err.getCode() === Exception.BAD_VERSION) return false;
          throw err;
        },
      ),
    mkdirp: (p) => call(c.mkdirp, p),
    close: async () => {
      const closed = new Promise((resolve) => c.once('disconnected', resolve));
      c.close();
      await within(closed, 15000, 'close');
    },
  };
}

async function connectNzk(o) {
  const ZooKeeper = load('zookeeper');
  const K = ZooKeeper.constants;
  const c = new ZooKeeper({
    connect: o.connect,
    timeout: 30000,
    debug_level: K.ZOO_LOG_LEVEL_ERROR,
    host_order_deterministic: false,
    data_as_buffer: true,
  });
  const connected = new Promise((resolve) => c.once('connect', resolve));
  c.init({});
  await within(connected, 15000, 'connect');
  // The Promise API rejects with Error(`${rc} ${message}`).
  const rcOf = (err) => Number(String(err.message).split(' ')[0]);
  return {
    create: (p, data, seq) => c.create(p, data, seq ? K.ZOO_EPHEMERAL_SEQUENTIAL : K.ZOO_PERSISTENT),
    children: (p) => c.get_children(p, false),
    existsWatch: (p, onEvent) =>
      c.w_exists(p, onEvent).then(
        () => true,
        (err) => {
          if (rcOf(err) === K.ZNONODE) return false;
          throw err;
        },
      ),
    remove: (p) => c.delete_(p, -1),
    getData: async (p) => {
      const [stat, data] = await c.get(p, false);
      return { data, version: stat.version };
    },
    setData: (p, data, v) =>
      c.set(p, data, v).then(
        () => true,
        (err) => {
          if (rcOf(err) === K.ZBADVERSION) return false;
          throw err;
        },
      ),
    mkdirp: (p) =>
      new Promise((resolve, reject) => {
        c.mkdirp(p, (err) => (err ? reject(err) : resolve()));
      }),
    close: async () => {
      c.close();
    },
  };
}

const connect = (o) => (o.impl === 'nzc' ? connectNzc(o) : connectNzk(o));
const dflt = (v, d) => (v === undefined ? d : v);

// ---- the recipes ----

const seqOf = (name) => (name.startsWith('lock-') ? Number(name.slice(5)) : -1);

class RecipeLock {
  constructor(c, dir) {
    this.c = c;
    this.dir = dir;
    this.node = null;
  }

  async acquire() {
    const created = await this.c.create(`${this.dir}/lock-`, Buffer.alloc(0), true);
    this.node = created;
    const mine = seqOf(created.slice(created.lastIndexOf('/') + 1));
    for (;;) {
      const names = await this.c.children(this.dir);
      let best = -1;
      let pred = null;
      for (const n of names) {
        const s = seqOf(n);
        if (s >= 0 && s < mine && s > best) {
          best = s;
          pred = n;
        }
      }
      if (pred === null) return; // the lowest: ours
      let notify;
      const fired = new Promise((resolve) => {
        notify = resolve;
      });
      if (!(await this.c.existsWatch(`${this.dir}/${pred}`, () => notify()))) continue;
      await within(fired, WAIT_MS, `notification on ${this.dir}/${pred}`);
    }
  }

  async release() {
    await this.c.remove(this.node);
    this.node = null;
  }
}

const encode = (v) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(v));
  return b;
};
const decode = (b, p) => {
  if (!b || b.length !== 8) throw new Error(`${p} does not hold an 8-byte long`);
  return Number(b.readBigInt64BE());
};

async function increment(c, p) {
  for (;;) {
    const { data, version: v } = await c.getData(p);
    const next = decode(data, p) + 1;
    if (await c.setData(p, encode(next), v)) return next;
  }
}

async function closeAll(clients) {
  await Promise.all(clients.map((c) => c.close()));
}

// ---- scenarios ----

async function uncontended(o) {
  const n = dflt(o.iterations, 2000);
  const w = dflt(o.warmup, 200);
  const c = await connect(o);
  try {
    const dir = `${o.path}/lock`;
    await c.mkdirp(dir);
    const m = new RecipeLock(c, dir);
    for (let i = 0; i < w; i++) {
      await m.acquire();
      await m.release();
    }
    const acqL = [];
    const relL = [];
    const cycL = [];
    const minUs = dflt(o['min-seconds'], 2) * 1e6;
    const cpu0 = cpuUs();
    const phase0 = nowUs();
    for (let i = 0; i < n || (n > 0 && (i % n !== 0 || nowUs() - phase0 < minUs)); i++) {
      const t0 = nowUs();
      await m.acquire();
      const t1 = nowUs();
      await m.release();
      const t2 = nowUs();
      acqL.push(t1 - t0);
      relL.push(t2 - t1);
      cycL.push(t2 - t0);
    }
    const cpu = cpuUs() - cpu0;
    return {
      ...latStats(cycL),
      acquire_p50_us: r2(pct(Float64Array.from(acqL).sort(), 50)),
      release_p50_us: r2(pct(Float64Array.from(relL).sort(), 50)),
      cpu_us_per_op: r2(cpu / Math.max(1, cycL.length)),
    };
  } finally {
    await c.close();
  }
}

async function contended(o) {
  const k = dflt(o.clients, 8);
  const secs = dflt(o.seconds, 10);
  const clients = await Promise.all(Array.from({ length: k }, () => connect(o)));
  try {
    const dir = `${o.path}/lock`;
    await clients[0].mkdirp(dir);
    const start = nowUs() + 50000;
    const m0 = start + 1e6;
    const m1 = m0 + secs * 1e6;
    const waits = [];
    const box = {};
    const sampler = (async () => {
      await sleep((m0 - nowUs()) / 1000);
      box.cpu0 = cpuUs();
      await sleep((m1 - nowUs()) / 1000);
      box.cpu1 = cpuUs();
    })();
    await Promise.all(
      clients.map(async (c) => {
        const m = new RecipeLock(c, dir);
        await sleep(Math.max(0, (start - nowUs()) / 1000));
        for (;;) {
          const t0 = nowUs();
          await m.acquire();
          const t1 = nowUs();
          await m.release();
          if (t1 >= m0 && t1 < m1) waits.push(t1 - t0);
          if (t1 >= m1) return;
        }
      }),
    );
    await sampler;
    if (waits.length === 0) throw new Error('no acquisition completed in the measured window');
    const s = latStats(waits);
    return {
      ...s,
      ops_per_s: r2(s.n / secs),
      wait_p99_us: s.p99_us,
      cpu_us_per_op: r2((box.cpu1 - box.cpu0) / s.n),
      clients: k,
      seconds: secs,
    };
  } finally {
    await closeAll(clients);
  }
}

async function counter(o, perClient) {
  const workers = perClient ? dflt(o.clients, 10) : dflt(o.threads, 10);
  const each = dflt(o.iterations, 100);
  const w = dflt(o.warmup, 20);
  const clients = await Promise.all(Array.from({ length: perClient ? workers : 1 }, () => connect(o)));
  const p = `${o.path}/counter`;
  const value = async (c) => decode((await c.getData(p)).data, p);
  try {
    await clients[0].mkdirp(o.path);
    await clients[0].create(p, encode(0), false).catch(async (err) => {
      // Only "it exists already" is fine, and then it must hold a long.
      await value(clients[0]).catch(() => {
        throw err;
      });
    });
    for (let i = 0; i < w; i++) await increment(clients[0], p);
    for (const c of clients.slice(1)) await value(c);
    const initial = await value(clients[0]);
    let ok = 0;
    let failed = 0;
    const lat = [];
    const minUs = dflt(o['min-seconds'], 2) * 1e6;
    const cpu0 = cpuUs();
    const t0 = nowUs();
    await Promise.all(
      Array.from({ length: workers }, async (_, i) => {
        const c = clients[perClient ? i : 0];
        const more = (j) => j < each || (each > 0 && (j % each !== 0 || nowUs() - t0 < minUs));
        for (let j = 0; more(j); j++) {
          const s = nowUs();
          try {
            await within(increment(c, p), WAIT_MS, 'increment');
            ok++;
          } catch (err) {
            failed++;
            process.stderr.write(`node_peers_driver: increment failed: ${err.message}\n`);
          }
          lat.push(nowUs() - s);
        }
      }),
    );
    const elapsed = (nowUs() - t0) / 1e6;
    const cpu = cpuUs() - cpu0;
    let final = await value(clients[0]);
    let finalReads = 1;
    while (final - initial < ok && finalReads < 10) {
      await sleep(500);
      final = await value(clients[0]);
      finalReads++;
    }
    const out = {
      ...latStats(lat),
      n: ok,
      ops_per_s: r2(ok / elapsed),
      final,
      expected: initial + ok,
      lost: ok - (final - initial),
      failed,
      cpu_us_per_op: r2(cpu / Math.max(1, ok)),
      final_reads: finalReads,
    };
    out[perClient ? 'clients' : 'threads'] = workers;
    return out;
  } finally {
    await closeAll(clients);
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  setTimeout(() => fail(`watchdog: no result after ${o.timeout} s`), o.timeout * 1000).unref();
  const scenarios = {
    uncontended: () => uncontended(o),
    contended: () => contended(o),
    counter_threads: () => counter(o, false),
    counter_clients: () => counter(o, true),
  };
  const run = scenarios[o.scenario];
  if (!run) fail(`unknown scenario ${o.scenario} (the peer drivers have ${Object.keys(scenarios).join(', ')})`);
  const out = await run();
  const name = PKG[o.impl];
  const what = o.impl === 'nzc' ? 'pure JS' : 'the C client bound to Node';
  process.stdout.write(
    `${JSON.stringify({ impl: o.impl, scenario: o.scenario, ...out, version: `${name} ${version(name)} (${what}; recipe-page lock; node ${process.version})` })}\n`,
  );
}

main().then(
  () => process.exit(0),
  (err) => fail(`${err.code ? `${err.code}: ` : ''}${err.stack || err}`),
);
