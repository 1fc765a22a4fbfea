// One version everywhere: the workspace's (Cargo.toml [workspace.package]) is package.json's,
// `require('zkrecipes').version` (the addon's own), the ESM export's, the C header's macros and
// the Python package's (what maturin stamps from the same Cargo.toml).
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const repo = path.resolve(__dirname, '..', '..');

function workspaceVersion() {
  const toml = fs.readFileSync(path.join(repo, 'Cargo.toml'), 'utf8');
  const section = toml.split(/^\[workspace\.package\]$/m)[1].split(/^\[/m)[0];
  const m = /^version = "([^"]+)"$/m.exec(section);
  assert.ok(m, 'no version in [workspace.package] of Cargo.toml');
  return m[1];
}

test('package.json, require().version, import().version and the C header agree with Cargo.toml', async () => {
  const want = workspaceVersion();
  assert.equal(require('../package.json').version, want, 'bindings-node/package.json version');
  assert.equal(require('..').version, want, "require('zkrecipes').version");
  const esm = await import('../index.mjs');
  assert.equal(esm.version, want, "import { version } from 'zkrecipes'");
  const header = fs.readFileSync(path.join(repo, 'include', 'zkrecipes.h'), 'utf8');
  const macro = (name) => new RegExp(`^#define ${name} (\\S+)$`, 'm').exec(header)?.[1];
  assert.equal(macro('ZKR_VERSION_STRING'), JSON.stringify(want));
  assert.equal(
    [macro('ZKR_VERSION_MAJOR'), macro('ZKR_VERSION_MINOR'), macro('ZKR_VERSION_PATCH')].join('.'),
    want.split(/[-+]/)[0],
  );
});
