#!/usr/bin/env node
// Builds the native addon with cargo and puts it next to index.js as `zkrecipes.node`.
//
//   node scripts/build.js            debug build (what the tests use)
//   node scripts/build.js --release  optimized build (what `npm install ./bindings-node` makes)
//
// This is the `install` script of the package, so it must not need any devDependency: it calls
// cargo directly and copies the cdylib. The target dir is cargo's (the workspace's shared
// `target/`, or CARGO_TARGET_DIR).
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const release = process.argv.includes('--release');
const out = path.join(root, 'zkrecipes.node');

function fail(message) {
  console.error(`zkrecipes: ${message}`);
  process.exit(1);
}

const cargo = process.env.CARGO || 'cargo';
const probe = spawnSync(cargo, ['--version'], { encoding: 'utf8' });
if (probe.error || probe.status !== 0) {
  fail(
    'building the native addon needs Rust (cargo), which was not found.\n' +
      'Install it with rustup (https://rustup.rs), open a new shell, and run `npm install` again.',
  );
}

const args = ['build', '-p', 'zkrecipes-node', '--lib', '--message-format=json-render-diagnostics'];
if (release) args.push('--release');
// --testing: the test-only entry points (session expiry), for this package's own tests.
// The testing kit (require('zkrecipes/testing')) is in every test build too.
if (process.argv.includes('--testing')) args.push('--features', 'testing,kit');
console.error(`zkrecipes: cargo ${args.join(' ')}`);
const build = spawnSync(cargo, args, {
  cwd: root,
  encoding: 'utf8',
  maxBuffer: 256 * 1024 * 1024,
  stdio: ['ignore', 'pipe', 'inherit'],
});
if (build.error) fail(`cannot run cargo: ${build.error.message}`);
if (build.status !== 0) fail(`cargo build failed (exit ${build.status}); see the messages above`);

// The artifact's path comes from cargo's own report, whatever the target dir is.
let artifact = null;
for (const line of build.stdout.split('\n')) {
  if (!line.startsWith('{')) continue;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    continue;
  }
  if (msg.reason !== 'compiler-artifact' || msg.target.name !== 'zkrecipes_node') continue;
  const lib = msg.filenames.find((f) => /\.(so|dylib|dll)$/.test(f));
  if (lib) artifact = lib;
}
if (!artifact) fail('cargo did not report the zkrecipes_node cdylib');

// Copy, then rename: a running process that mapped the old addon keeps its (unlinked) file.
const tmp = `${out}.${process.pid}.tmp`;
fs.copyFileSync(artifact, tmp);
fs.renameSync(tmp, out);
console.error(`zkrecipes: ${path.relative(process.cwd(), out) || out} <- ${artifact}`);
