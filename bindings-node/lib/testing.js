// The testing kit: a real ZooKeeper for the user's tests, as Curator's curator-test gives Java
// (`require('zkrecipes/testing')`). Every verb returns a Promise; the servers run in temporary
// directories on loopback addresses and die with this process.
'use strict';

const { native } = require('./native');

function kit() {
  if (typeof native.NativeTestingServer !== 'function') {
    const err = new Error(
      'zkrecipes: this addon has no testing kit: install the package from dist/ (scripts/package), ' +
        'or build from source with `node scripts/build.js --testing`',
    );
    err.code = 'ZKR_TESTING_KIT_MISSING';
    throw err;
  }
}

/**
 * Where ZooKeeper will come from (`ZKRECIPES_ZOOKEEPER_JAR`, `ZOOKEEPER_HOME`, Debian's
 * package); throws an Error with code `ZKR_ZOOKEEPER_NOT_FOUND` naming what to install.
 */
function findZooKeeper() {
  kit();
  try {
    return native.findZookeeper();
  } catch (cause) {
    const err = new Error(cause.message, { cause });
    err.code = 'ZKR_ZOOKEEPER_NOT_FOUND';
    throw err;
  }
}

/** One standalone server on 127.0.0.1 and a free port: `await TestingServer.start()`. */
class TestingServer {
  #native;
  #connectString;

  /** @private use TestingServer.start() */
  constructor(nativeServer, connectString) {
    this.#native = nativeServer;
    this.#connectString = connectString;
  }

  /** Starts a server; resolves once it serves. */
  static async start() {
    findZooKeeper();
    const server = new native.NativeTestingServer();
    try {
      return new TestingServer(server, await server.start());
    } catch (err) {
      await server.close();
      throw err;
    }
  }

  /** `'127.0.0.1:PORT'`. */
  get connectString() {
    return this.#connectString;
  }

  /** Stops the server (its data stays); `start()` brings it back on the same port. */
  async stop() {
    await this.#native.stop();
  }

  /** Starts the stopped server again. */
  async start() {
    await this.#native.start();
  }

  /** Stops and starts the server: same port, same data; clients reconnect. */
  async restart() {
    await this.#native.restart();
  }

  /** Kills the server (SIGKILL), as a crash would. */
  async kill() {
    await this.#native.kill();
  }

  /** Whether the server process runs. */
  async isRunning() {
    return (await this.#native.isRunning()) === 'true';
  }

  /** A four-letter word's answer (`srvr`, `cons`, `mntr`, ...), `''` if none. */
  async fourLetter(cmd) {
    return this.#native.fourLetter(String(cmd));
  }

  /** Stops the server and removes its directory; idempotent. */
  async close() {
    await this.#native.close();
  }
}

/** Server `index` of a TestingCluster. */
class ClusterServer {
  #native;

  constructor(nativeCluster, index, connectString) {
    this.#native = nativeCluster;
    this.index = index;
    this.connectString = connectString;
  }

  async stop() {
    await this.#native.stopServer(this.index);
  }

  async start() {
    await this.#native.startServer(this.index);
  }

  async restart() {
    await this.#native.restartServer(this.index);
  }

  async kill() {
    await this.#native.killServer(this.index);
  }
}

/** An ensemble of `n` servers, server i on 127.0.0.(i+1): `await TestingCluster.start(3)`. */
class TestingCluster {
  #native;
  #connectString;

  /** @private use TestingCluster.start(n) */
  constructor(nativeCluster, connectString, servers) {
    this.#native = nativeCluster;
    this.#connectString = connectString;
    /** @type {ClusterServer[]} */
    this.servers = servers;
  }

  /** Starts `n` servers (default 3); resolves once every one serves and one leads. */
  static async start(n = 3) {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`TestingCluster.start: n must be a positive integer, got ${n}`);
    findZooKeeper();
    const cluster = new native.NativeTestingCluster();
    try {
      const connectString = await cluster.start(n);
      const servers = [];
      for (let i = 0; i < n; i += 1) servers.push(new ClusterServer(cluster, i, await cluster.serverConnectString(i)));
      return new TestingCluster(cluster, connectString, servers);
    } catch (err) {
      await cluster.close();
      throw err;
    }
  }

  /** `'127.0.0.1:p1,127.0.0.2:p2,...'`. */
  get connectString() {
    return this.#connectString;
  }

  /** The server that leads now, or null. */
  async leader() {
    const i = Number(await this.#native.leaderIndex());
    return i < 0 ? null : this.servers[i];
  }

  /** Waits (up to `timeoutMs`, default 30 s) until the running servers elect a leader; it, or null. */
  async waitForQuorum({ timeoutMs = 30000 } = {}) {
    const i = Number(await this.#native.waitForQuorum(timeoutMs));
    return i < 0 ? null : this.servers[i];
  }

  /** Restarts every server, one after another. */
  async restart() {
    for (const server of this.servers) await server.restart();
  }

  /** Stops every server and removes the directory; idempotent. */
  async close() {
    await this.#native.close();
  }
}

/**
 * Expires `client`'s session on the server (Curator's KillSession): the client reports LOST,
 * then opens a new session (RECONNECTED). Resolves once no server knows the old session.
 */
async function expireSession(client) {
  kit();
  await client._expireSessionForTesting();
}

module.exports = { TestingServer, TestingCluster, ClusterServer, expireSession, findZooKeeper };
