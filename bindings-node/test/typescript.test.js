// The TypeScript example: `tsc --strict` accepts it against index.d.ts, and the compiled
// program runs against a real ZooKeeper, so the declared types are the ones the runtime has.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const { startZooKeeper } = require('./helpers');

const root = path.resolve(__dirname, '..');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const outDir = path.join(root, 'target-ts');

let zk;

before(() => {
  zk = startZooKeeper();
});

after(() => {
  zk?.stop();
  fs.rmSync(outDir, { recursive: true, force: true });
});

test('the TypeScript example type-checks with --strict and runs against ZooKeeper', () => {
  if (!fs.existsSync(tsc)) {
    throw new Error(`TypeScript is missing (${tsc}): run scripts/setup-node (npm ci in bindings-node)`);
  }
  // Emitted inside the package, so that `import ... from 'zkrecipes'` resolves to this package.
  execFileSync(process.execPath, [tsc, '--strict', '-p', 'examples/tsconfig.json', '--noEmit', 'false', '--outDir', outDir, '--rootDir', 'examples/typescript'], {
    cwd: root,
    stdio: 'inherit',
  });
  const run = spawnSync(process.execPath, [path.join(outDir, 'example.js'), zk.connectString], {
    encoding: 'utf8',
    timeout: 60000,
  });
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /no node, as expected/);
  assert.match(run.stdout, /fencing token \d+n?/);
});

test('require and import give the same module', async () => {
  const cjs = require('..');
  const esm = await import('../index.mjs');
  assert.equal(esm.default, cjs);
  assert.equal(esm.Client, cjs.Client);
  assert.deepEqual(Object.keys(esm).filter((k) => k !== 'default').sort(), Object.keys(cjs).sort());
  const pkg = await import('zkrecipes'); // the package's own name, through its exports map
  assert.equal(pkg.InterProcessMutex, cjs.InterProcessMutex);
});
