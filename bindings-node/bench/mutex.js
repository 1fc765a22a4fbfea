#!/usr/bin/env node
// Mutex benchmark: the Node binding next to the Rust core, in one run, on one client and one
// server. Uncontended acquire+release latency (p50/p90/p99) and contended handoffs per second
// (4 contenders on one lock). Build the addon with `node scripts/build.js --release` first for
// meaningful figures.
//
//   node bench/mutex.js HOST:PORT [iterations=2000] [seconds=5]
'use strict';

const native = require('../zkrecipes.node');
const { Client, InterProcessMutex, Owner } = require('..');

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: pct(s, 50), p90: pct(s, 90), p99: pct(s, 99) };
};
const fmt = (x) => `${x.toFixed(0)} us`;

async function main() {
  const connect = process.argv[2] ?? '127.0.0.1:2181';
  const iterations = Number(process.argv[3] ?? 2000);
  const seconds = Number(process.argv[4] ?? 5);
  const client = await Client.connect(connect);
  const nativeClient = Client._native(client);
  const base = `/zkrecipes-bench/node-${process.pid}`;
  const warm = Math.min(200, iterations);

  // Uncontended: alternate the two sides in rounds, so server drift hits both alike.
  const js = [];
  const core = [];
  const mutex = new InterProcessMutex(client, `${base}/uncontended-js`);
  const owner = new Owner();
  const rounds = Math.max(1, Math.round(iterations / 100));
  for (let r = 0; r < rounds; r++) {
    const n = Math.ceil(iterations / rounds);
    const extra = r === 0 ? warm : 0;
    const jsFirst = r % 2 === 1; // alternate which side goes first
    const runJs = async () => {
      for (let i = 0; i < n + extra; i++) {
        const t0 = process.hrtime.bigint();
        await mutex.acquire({ owner });
        await mutex.release({ owner });
        if (i >= extra) js.push(Number(process.hrtime.bigint() - t0) / 1000);
      }
    };
    const runCore = async () => {
      const c = await native.benchCoreUncontended(nativeClient, `${base}/uncontended-core`, n + extra);
      core.push(...c.slice(extra));
    };
    if (jsFirst) {
      await runJs();
      await runCore();
    } else {
      await runCore();
      await runJs();
    }
  }
  const sj = stats(js);
  const sc = stats(core);
  console.log(`uncontended acquire+release, ${js.length} iterations each:`);
  console.log(`  rust core : p50 ${fmt(sc.p50)}  p90 ${fmt(sc.p90)}  p99 ${fmt(sc.p99)}`);
  console.log(`  node      : p50 ${fmt(sj.p50)}  p90 ${fmt(sj.p90)}  p99 ${fmt(sj.p99)}`);
  console.log(`  binding overhead at p50: ${(((sj.p50 - sc.p50) / sc.p50) * 100).toFixed(1)}%`);

  // Contended: 4 contenders (one mutex object each, as 4 processes would) for `seconds`.
  const contenders = 4;
  const coreHolds = await native.benchCoreContended(nativeClient, `${base}/contended-core`, contenders, seconds * 1000);
  const deadline = Date.now() + seconds * 1000;
  let jsHolds = 0;
  await Promise.all(
    Array.from({ length: contenders }, async () => {
      const m = new InterProcessMutex(client, `${base}/contended-js`);
      const o = new Owner();
      while (Date.now() < deadline) {
        await m.acquire({ owner: o });
        jsHolds += 1;
        await m.release({ owner: o });
      }
    }),
  );
  console.log(`contended handoffs, ${contenders} contenders, ${seconds} s:`);
  console.log(`  rust core : ${(coreHolds / seconds).toFixed(0)} holds/s`);
  console.log(`  node      : ${(jsHolds / seconds).toFixed(0)} holds/s`);
  await client.delete(base, { recursive: true }).catch(() => {});
  await client.close();
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
