#!/usr/bin/env node
// Makes the npm tarball with a prebuilt addon inside (scripts/package calls this):
//   node scripts/pack.js --addon PATH --platform NAME [--addon PATH --platform NAME ...]
//                        --version X.Y.Z --out DIR
// Stages the package's runtime files, each addon as `zkrecipes.<platform>.node`, and a
// package.json for users (the workspace's version, no devDependencies, only the `install`
// script), then runs `npm pack` into DIR and prints the tarball's path.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const args = process.argv.slice(2);
const addons = [];
let version = null;
let out = null;
for (let i = 0; i < args.length; i += 2) {
  const [flag, value] = [args[i], args[i + 1]];
  if (value === undefined) throw new Error(`${flag} needs a value`);
  if (flag === '--addon') addons.push({ file: value, platform: null });
  else if (flag === '--platform' && addons.length) addons[addons.length - 1].platform = value;
  else if (flag === '--version') version = value;
  else if (flag === '--out') out = path.resolve(value);
  else throw new Error(`unknown argument ${flag}`);
}
if (!version || !out || !addons.length || addons.some((a) => !a.platform)) {
  console.error('usage: pack.js --addon PATH --platform NAME [...] --version X.Y.Z --out DIR');
  process.exit(2);
}

const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'zkr-npm-'));
try {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  // What a user installs: the JS, the types, the addons, the install script.
  const runtime = ['index.js', 'index.mjs', 'index.d.ts', 'lib', 'README.md', 'scripts/install.js'];
  for (const extra of ['testing.js', 'testing.mjs', 'testing.d.ts']) {
    if (fs.existsSync(path.join(root, extra))) runtime.push(extra);
  }
  for (const f of runtime) fs.cpSync(path.join(root, f), path.join(stage, f), { recursive: true });
  const files = [...runtime];
  for (const { file, platform } of addons) {
    const name = `zkrecipes.${platform}.node`;
    fs.copyFileSync(file, path.join(stage, name));
    files.push(name);
  }
  pkg.version = version;
  pkg.files = files;
  pkg.scripts = { install: 'node scripts/install.js' };
  delete pkg.devDependencies;
  fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  fs.mkdirSync(out, { recursive: true });
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const packed = spawnSync(npm, ['pack', '--json', '--pack-destination', out], { cwd: stage, encoding: 'utf8' });
  if (packed.status !== 0) {
    process.stderr.write(packed.stderr || '');
    throw new Error(`npm pack failed (exit ${packed.status})`);
  }
  const [report] = JSON.parse(packed.stdout);
  console.log(path.join(out, report.filename));
} finally {
  fs.rmSync(stage, { recursive: true, force: true });
}
