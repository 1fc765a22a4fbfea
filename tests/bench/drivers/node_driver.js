#!/usr/bin/env node
// Benchmark driver for the Node face of zkrecipes (issue 10; protocol in the bench docs): one
// scenario per run, EXACTLY one JSON line on stdout, diagnostics on stderr, exit 1 on any
// failure, never a hang (every wait has a timeout, and a watchdog ends the process).
//
//   node tests/bench/drivers/node_driver.js --impl node \
//     --scenario uncontended|contended|counter_threads|counter_clients|failover|memory \
//     --connect HOST:PORT --path /bench/<unique> [--iterations N] [--warmup W] [--clients C]
//     [--threads T] [--seconds S] [--locks L] [--timeout SECONDS] [--min-seconds S]
//
// The Promise API throughout: "threads" are T concurrent async loops on one client, clients
// are separate Client.connect sessions, each with its own loop. Uses the addon built in
// bindings-node (scripts/setup-node).
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const PKG = path.join(__dirname, '..', '..', '..', 'bindings-node');
const WAIT_MS = 60000; // the longest any single wait may take before the run fails

function fail(msg) {
  process.stderr.write(`node_driver: FAILED: ${msg}\n`);
  process.exit(1);
}

let zk;
try {
  zk = require(PKG);
} catch (err) {
  fail(`cannot load the Node face from ${PKG}: ${err.message} (run scripts/setup-node)`);
}
const { Client, InterProcessMutex, LeaderLatch, DistributedAtomicLong, Owner } = zk;

const nowUs = () => Number(process.hrtime.bigint()) / 1000;
const cpuUs = () => {
  const u = process.cpuUsage(); // user + system of the whole process, microseconds
  return u.user + u.system;
};
const rssKb = () => {
  const m = /^VmRSS:\s+(\d+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  if (!m) fail('no VmRSS in /proc/self/status');
  return Number(m[1]);
};
// Percentile of an ascending array: s[round((n - 1) * p / 100)], half away from zero (the rule
// of every driver, the Rust and Curator ones included).
const pct = (s, p) => (s.length ? s[Math.round(((s.length - 1) * p) / 100)] : NaN);
const r2 = (x) => Math.round(x * 100) / 100;
function latStats(xs) {
  const s = Float64Array.from(xs).sort();
  let t = 0;
  for (const x of s) t += x;
  return { n: s.length, p50_us: r2(pct(s, 50)), p99_us: r2(pct(s, 99)), mean_us: r2(t / s.length) };
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Rejects if `p` has not settled within `ms`.
function within(p, ms, what) {
  let timer;
  const t = new Promise((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

function parseArgs(argv) {
  const o = { impl: 'node', timeout: 600 };
  const num = new Set(['iterations', 'warmup', 'clients', 'threads', 'seconds', 'locks', 'timeout', 'min-seconds']);
  const known = new Set(['impl', 'scenario', 'connect', 'path', ...num]);
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!argv[i].startsWith('--') || !known.has(k)) fail(`unknown option ${argv[i]}`);
    if (i + 1 >= argv.length) fail(`option ${argv[i]} needs a value`);
    o[k] = num.has(k) ? Number(argv[i + 1]) : argv[i + 1];
    if (num.has(k) && !Number.isFinite(o[k])) fail(`option ${argv[i]} needs a number`);
  }
  if (o.impl !== 'node') fail(`--impl must be node, not ${o.impl}`);
  if (!o.scenario || !o.connect || !o.path) fail('--scenario, --connect and --path are required');
  if (!o.path.startsWith('/') || o.path.endsWith('/')) fail(`--path must be absolute without a trailing slash: ${o.path}`);
  return o;
}

const dflt = (v, d) => (v === undefined ? d : v);
const connect = (o) => Client.connect(o.connect, { sessionTimeoutMs: 30000, connectionTimeoutMs: 15000 });

async function acquire(m, owner) {
  if (!(await m.acquire({ owner, timeoutMs: WAIT_MS }))) throw new Error(`acquire of ${m.path} timed out after ${WAIT_MS} ms`);
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
    const m = new InterProcessMutex(c, `${o.path}/lock`);
    const owner = new Owner();
    for (let i = 0; i < w; i++) {
      await acquire(m, owner);
      await m.release({ owner });
    }
    const acqL = [];
    const relL = [];
    const cycL = [];
    const minUs = dflt(o['min-seconds'], 2) * 1e6;
    const cpu0 = cpuUs();
    const phase0 = nowUs();
    // Rounds of n cycles until the phase has lasted --min-seconds.
    for (let i = 0; i < n || (n > 0 && (i % n !== 0 || nowUs() - phase0 < minUs)); i++) {
      const t0 = nowUs();
      await acquire(m, owner);
      const t1 = nowUs();
      await m.release({ owner });
      const t2 = nowUs();
      acqL.push(t1 - t0);
      relL.push(t2 - t1);
      cycL.push(t2 - t0);
    }
    const cpu = cpuUs() - cpu0;
    const acq = Float64Array.from(acqL);
    const rel = Float64Array.from(relL);
    const cyc = Float64Array.from(cycL);
    return {
      ...latStats(cyc),
      n: cyc.length,
      acquire_p50_us: r2(pct(acq.sort(), 50)),
      release_p50_us: r2(pct(rel.sort(), 50)),
      cpu_us_per_op: r2(cpu / Math.max(1, cyc.length)),
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
        const m = new InterProcessMutex(c, `${o.path}/lock`);
        const owner = new Owner();
        await sleep(Math.max(0, (start - nowUs()) / 1000));
        for (;;) {
          const t0 = nowUs();
          await acquire(m, owner);
          const t1 = nowUs();
          await m.release({ owner });
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
  const value = async (a) => {
    const v = await a.get();
    return v.preValue;
  };
  try {
    const ctrs = Array.from({ length: workers }, (_, i) => new DistributedAtomicLong(clients[perClient ? i : 0], p));
    for (let i = 0; i < w; i++) await ctrs[0].addAndGet(1, { timeoutMs: WAIT_MS });
    for (const a of ctrs.slice(1)) await value(a);
    const initial = await value(ctrs[0]);
    const writes = () => clients.reduce((t, c) => t + c._requestCounts().setData + c._requestCounts().create, 0);
    const requests = () =>
      clients.reduce((t, c) => t + Object.values(c._requestCounts()).reduce((x, y) => x + y, 0), 0);
    const writes0 = writes();
    const requests0 = requests();
    let ok = 0;
    let failed = 0;
    const lat = [];
    const minUs = dflt(o['min-seconds'], 2) * 1e6;
    const cpu0 = cpuUs();
    const t0 = nowUs();
    await Promise.all(
      ctrs.map(async (a) => {
        // Rounds of `each` increments until the phase has lasted --min-seconds.
        const more = (i) => i < each || (each > 0 && (i % each !== 0 || nowUs() - t0 < minUs));
        for (let i = 0; more(i); i++) {
          const s = nowUs();
          try {
            await a.addAndGet(1, { timeoutMs: WAIT_MS });
            ok++;
          } catch (err) {
            failed++;
            process.stderr.write(`node_driver: increment failed: ${err.code ?? ''} ${err.message}\n`);
          }
          lat.push(nowUs() - s);
        }
      }),
    );
    const elapsed = (nowUs() - t0) / 1e6;
    const cpu = cpuUs() - cpu0;
    const writes1 = writes();
    const requests1 = requests();
    // On an ensemble this session's server may lag the others' last writes (reads are not
    // linearizable): re-read for up to 5 s before a shortfall counts as lost.
    const reader = new DistributedAtomicLong(clients[0], p);
    let final = await value(reader);
    let finalReads = 1;
    while (Number(final - initial) < ok && finalReads < 10) {
      await sleep(500);
      final = await value(reader);
      finalReads++;
    }
    const st = latStats(lat);
    const out = {
      ...st,
      n: ok,
      ops_per_s: r2(ok / elapsed),
      final: Number(final),
      expected: Number(initial) + ok,
      lost: ok - Number(final - initial),
      failed,
      cpu_us_per_op: r2(cpu / Math.max(1, ok)),
      final_reads: finalReads,
    };
    out[perClient ? 'clients' : 'threads'] = workers;
    if (ok) {
      out.writes_per_op = Math.round(((writes1 - writes0) / ok) * 1000) / 1000;
      out.client_requests_per_op = Math.round(((requests1 - requests0) / ok) * 1000) / 1000;
    }
    return out;
  } finally {
    await closeAll(clients);
  }
}

async function failover(o) {
  const k = dflt(o.clients, 3);
  const n = dflt(o.iterations, 200);
  const w = dflt(o.warmup, 10);
  if (k < 2) throw new Error('failover needs --clients >= 2');
  const p = `${o.path}/latch`;
  const clients = await Promise.all(Array.from({ length: k }, () => connect(o)));
  const latches = new Array(k).fill(null);
  // A one-slot mailbox: the latest leadership report { member, at }, or whoever waits for it.
  let report = null;
  let waiter = null;
  const announce = (r) => {
    const w = waiter;
    waiter = null;
    report = w ? null : r;
    w?.(r);
  };
  const nextLeader = (what) =>
    within(
      new Promise((resolve) => {
        waiter = resolve;
        if (report) announce(report);
      }),
      WAIT_MS,
      what,
    );
  const join = async (i) => {
    const l = new LeaderLatch(clients[i], p, { id: `m${i}` });
    l.on('isLeader', () => announce({ member: i, at: nowUs() }));
    await l.start();
    latches[i] = l;
  };
  try {
    for (let i = 0; i < k; i++) await join(i);
    const times = [];
    for (let r = 0; r < w + n; r++) {
      const { member: old } = await nextLeader('start of round');
      if (!latches[old].hasLeadership()) throw new Error(`member ${old} was reported leader but hasLeadership() is false`);
      const t0 = nowUs();
      const next = nextLeader(`after member ${old} closed`);
      await latches[old].close();
      const { member, at } = await next;
      if (member === old) throw new Error('the closed member leads again');
      if (r >= w) times.push(at - t0);
      // The new leader is reported again at the start of the next round.
      report = { member, at };
      await join(old); // a fresh latch for the closed member, at the back of the queue
    }
    return { ...latStats(times), clients: k };
  } finally {
    for (const l of latches) if (l) await l.close().catch(() => {});
    await closeAll(clients);
  }
}

async function memory(o) {
  const count = dflt(o.locks, 1000);
  const w = dflt(o.warmup, 50);
  const c = await connect(o);
  try {
    const owner = new Owner();
    const warm = new InterProcessMutex(c, `${o.path}/warmup`);
    for (let i = 0; i < w; i++) {
      await acquire(warm, owner);
      await warm.release({ owner });
    }
    if (global.gc) global.gc();
    const before = rssKb();
    const locks = [];
    const lat = [];
    const cpu0 = cpuUs();
    for (let i = 0; i < count; i++) {
      const m = new InterProcessMutex(c, `${o.path}/m${i}`);
      const t0 = nowUs();
      await acquire(m, owner);
      lat.push(nowUs() - t0);
      locks.push(m);
    }
    const cpu = cpuUs() - cpu0;
    const after = rssKb();
    for (const m of locks) await m.release({ owner });
    return { ...latStats(lat), rss_kb: after, rss_delta_kb: after - before, cpu_us_per_op: r2(cpu / count), locks: count };
  } finally {
    await c.close();
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
    failover: () => failover(o),
    memory: () => memory(o),
  };
  const run = scenarios[o.scenario];
  if (!run) fail(`unknown scenario ${o.scenario}`);
  const out = await run();
  const version = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8')).version;
  process.stdout.write(`${JSON.stringify({ impl: 'node', scenario: o.scenario, ...out, version: `zkrecipes ${version} (node ${process.version})` })}\n`);
}

main().then(
  () => process.exit(0),
  (err) => fail(`${err.code ? `${err.code}: ` : ''}${err.stack || err}`),
);
