// Test helpers: ONE real ZooKeeper per test file, started and stopped with the harness CLI
// (`zk-harness`, built from tests/harness). No mocks: every test talks to that server.
'use strict';

const { before, after } = require('node:test');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');

const repo = path.resolve(__dirname, '..', '..');
const targetDir = process.env.CARGO_TARGET_DIR || path.join(repo, 'target');
const harness = process.env.ZK_HARNESS || path.join(targetDir, 'debug', 'zk-harness');

/**
 * Starts a standalone ZooKeeper for this test file; returns `{ connectString, stop() }`.
 * Fails loudly (never skips) when the harness or ZooKeeper is missing.
 */
function startZooKeeper() {
  if (!fs.existsSync(harness)) {
    throw new Error(
      `the ZooKeeper test harness is missing at ${harness}.\n` +
        'Build it with `cargo build -p zkrecipes-testing --bin zk-harness` (scripts/test-node does), ' +
        'and install ZooKeeper with scripts/setup.',
    );
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zkr-node-'));
  let connectString;
  try {
    connectString = execFileSync(harness, ['start', '--dir', dir], { encoding: 'utf8' }).trim();
  } catch (err) {
    throw new Error(`zk-harness start failed (is ZooKeeper installed? run scripts/setup): ${err.message}`);
  }
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      execFileSync(harness, ['stop', '--dir', dir], { stdio: 'ignore' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  // Stop the server even if the test process dies on an uncaught error.
  process.once('exit', stop);
  return { connectString, dir, stop, harness };
}

/**
 * The usual set-up of a test file: one ZooKeeper (before the tests) and one client of it, both
 * handed to `set(zk, client)`; closed and stopped after the tests.
 */
function useZooKeeper(set, connectOptions) {
  let zk;
  let client;
  before(async () => {
    zk = startZooKeeper();
    const { Client } = require('..');
    client = await Client.connect(zk.connectString, connectOptions);
    set(zk, client);
  });
  after(async () => {
    await client?.close();
    zk?.stop();
  });
}

/** A unique path for one test: `/node-tests/<name>-<random>`. */
function uniquePath(name) {
  return `/node-tests/${name}-${crypto.randomBytes(6).toString('hex')}`;
}

/** Waits until `predicate()` is true, polling every 10 ms; rejects after `timeoutMs`. */
async function waitFor(predicate, { timeoutMs = 10000, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The children of `path`, none if the node is gone: recipes make their parents containers,
 * which the harness's servers reap within 250 ms of their emptying, so a test that checks a
 * recipe left nothing under one takes either answer. Rejects on any other error.
 */
async function childrenLeft(client, path) {
  try {
    return await client.getChildren(path);
  } catch (e) {
    if (e.code === 'ZKR_NO_NODE') return [];
    throw e;
  }
}

/** Resolves with the next `event` of `emitter`, or rejects after `timeoutMs`. */
function nextEvent(emitter, event, { timeoutMs = 10000 } = {}) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.off(event, on);
      reject(new Error(`no '${event}' event within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (...args) => {
      clearTimeout(timer);
      resolve(args.length <= 1 ? args[0] : args);
    };
    emitter.once(event, on);
  });
}

module.exports = { startZooKeeper, useZooKeeper, uniquePath, waitFor, nextEvent, childrenLeft, repo, harness };
