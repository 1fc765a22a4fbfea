#!/usr/bin/env node
// The package's `install` script. A package made by scripts/package carries a prebuilt addon
// (`zkrecipes.<platform>.node`, lib/platform.js): when one matches this platform and loads, there
// is nothing to do, and cargo is never run. Otherwise, in a source checkout (Cargo.toml next to
// this package), it builds the addon with cargo (scripts/build.js --release); in a package
// without a matching binary, it fails saying what to do.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { platformName, prebuiltFile } = require('../lib/platform');

const root = path.resolve(__dirname, '..');
const name = platformName();
const prebuilt = path.join(root, prebuiltFile(name));

if (process.env.ZKRECIPES_NATIVE) {
  console.error(`zkrecipes: ZKRECIPES_NATIVE=${process.env.ZKRECIPES_NATIVE}: nothing to build`);
  process.exit(0);
}
if (fs.existsSync(prebuilt)) {
  try {
    require(prebuilt);
    console.error(`zkrecipes: using the prebuilt addon ${path.basename(prebuilt)}`);
    process.exit(0);
  } catch (err) {
    console.error(`zkrecipes: the prebuilt addon ${path.basename(prebuilt)} does not load here (${err.message})`);
  }
}
if (fs.existsSync(path.join(root, 'Cargo.toml')) && fs.existsSync(path.join(root, 'src'))) {
  const build = spawnSync(process.execPath, [path.join(__dirname, 'build.js'), '--release'], { stdio: 'inherit' });
  process.exit(build.status === null ? 1 : build.status);
}
const shipped = fs.readdirSync(root).filter((f) => /^zkrecipes\..+\.node$/.test(f));
console.error(
  `zkrecipes: this package has no prebuilt addon for ${name} (it has: ${shipped.join(', ') || 'none'}).\n` +
    'Build it from source instead: clone the zkrecipes repository and run `npm install ./bindings-node` ' +
    '(needs Rust, https://rustup.rs).',
);
process.exit(1);
