'use strict';
// The Node worker of the interop runner (tests/interop/run):
//   node node_worker.js --role mutex|counter --connect HOST:PORT --path P --iterations N --id ID --log FILE
// Log lines: "start node ID TOKEN NS" / "end node ID TOKEN NS" (process.hrtime.bigint(), i.e.
// CLOCK_MONOTONIC), "inc node ID VALUE" / "fail node ID CODE", then "done node ID COUNT".
const fs = require('fs');
const path = require('path');
const { Client, InterProcessMutex, DistributedAtomicLong, LeaderLatch } = require(path.join(__dirname, '..', '..', 'bindings-node'));

function args() {
  const a = { role: '', connect: '', path: '', iterations: 20, id: 'node', log: '/dev/null', go: '', expect: 5 };
  const v = process.argv.slice(2);
  for (let i = 0; i + 1 < v.length; i += 2) {
    const k = v[i].replace(/^--/, '');
    if (!(k in a)) throw new Error(`unknown option ${v[i]}`);
    a[k] = k === 'iterations' || k === 'expect' ? Number(v[i + 1]) : v[i + 1];
  }
  return a;
}

async function main() {
  const a = args();
  const fd = fs.openSync(a.log, 'a');
  const log = (line) => fs.writeSync(fd, line + '\n');
  const client = await Client.connect(a.connect, { sessionTimeoutMs: 30000, connectionTimeoutMs: 15000 });
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
    if (a.go) { // start barrier
      log(`ready node ${a.id}`);
      while (!fs.existsSync(a.go)) await new Promise((r) => setTimeout(r, 1));
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
