// The testing kit: a real ZooKeeper for the user's tests, as Curator's curator-test gives Java
// (`require('zkrecipes/testing')`). Every verb returns a Promise; the servers run in temporary
// directories on loopback addresses and die with this process.
'use strict';

const { native } = require('./native');
const args = require('./args');
const { invalid, describe } = require('./errors');

const SECURITY_OPTIONS = ['tls', 'serverCert', 'saslUsers', 'saslRequired', 'x509', 'superuser'];

/**
 * The native security options of `{ tls, serverCert, saslUsers, saslRequired, x509, superuser }`
 * (and an ensemble's `readOnlyMode`, with `cluster`): names and types checked here, values
 * natively (before any server starts); both throw `ZKR_INVALID_ARGUMENT`.
 */
function securityOptions(what, v, cluster = false) {
  const o = args.options(what, v, cluster ? [...SECURITY_OPTIONS, 'readOnlyMode'] : SECURITY_OPTIONS);
  const users = o.saslUsers ?? undefined;
  if (users !== undefined && (typeof users !== 'object' || Array.isArray(users))) {
    throw invalid(`${what}: saslUsers must be an object mapping user names to passwords, got ${describe(users)}`);
  }
  for (const [name, password] of Object.entries(users ?? {})) {
    args.string(`${what}: the password of saslUsers.${name}`, password);
  }
  const superuser = args.options(`${what}: superuser`, o.superuser, ['name', 'password']);
  if (o.superuser !== undefined && o.superuser !== null) {
    args.string(`${what}: superuser.name`, superuser.name);
    args.string(`${what}: superuser.password`, superuser.password);
  }
  const security = {
    tls: args.optionalString(`${what}: tls`, o.tls),
    serverCert: args.optionalString(`${what}: serverCert`, o.serverCert),
    saslUsers: users,
    saslRequired: args.bool(`${what}: saslRequired`, o.saslRequired, false),
    x509: args.bool(`${what}: x509`, o.x509, false),
    superuserName: superuser.name,
    superuserPassword: superuser.password,
    readOnlyMode: cluster ? args.bool(`${what}: readOnlyMode`, o.readOnlyMode, false) : false,
  };
  const problem = native.checkSecurity(security);
  if (problem) throw invalid(`${what}: ${problem}`);
  return security;
}

const camel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

/** The client identities of TlsMaterial (`keystore(which)`, `x509Id(which)`). */
const CLIENT_IDENTITIES = Object.freeze([
  'client',
  'otherClient',
  'rsaClient',
  'sec1Client',
  'expiredClient',
  'wrongCaClient',
]);

/**
 * The CA, certificates and keys of a TLS server or ensemble, made when it started: PEM files in
 * `dir` (the server's temporary directory, removed with it). Paths are strings: `ca`,
 * `clientCert`, `clientKey` (PKCS#8), `clientKeystore` (key + certificate, for Java clients),
 * `clientX509Id`, and the same for `otherClient*`, `rsaClient*` (PKCS#1 key), `sec1Client*` (SEC1
 * key), `expiredClient*`, `wrongCaClient*`; `encryptedClientKey` and
 * `encryptedClientKeyPassword`; `wrongCa`.
 */
class TlsMaterial {
  /** @private made by TestingServer/TestingCluster */
  constructor(entries) {
    for (const [key, value] of Object.entries(entries)) {
      Object.defineProperty(this, camel(key), { value, enumerable: true });
    }
    Object.freeze(this);
  }

  /** The PKCS#8 key and certificate of `which` (one of CLIENT_IDENTITIES) in one file. */
  keystore(which) {
    return this[`${identity(which)}Keystore`];
  }

  /** The `x509` identity ZooKeeper records for `which`'s certificate (`'CN=zkr-client'`). */
  x509Id(which) {
    return this[`${identity(which)}X509Id`];
  }

  /** The `x509` identity of a certificate from issueClient with this `cn`. */
  static x509IdForCn(cn) {
    kit();
    return native.x509IdForCn(args.string('x509IdForCn: cn', cn));
  }

  /**
   * Issues a fresh client identity now: a new EC P-256 key (PKCS#8) at `keyPath` and a certificate
   * for `CN=cn` signed by `ca` at `certPath`, each written atomically (temporary file, rename),
   * the key first.
   */
  async issueClient(cn, certPath, keyPath) {
    await native.issueClient(
      this.dir,
      args.string('issueClient: cn', cn),
      args.string('issueClient: certPath', certPath),
      args.string('issueClient: keyPath', keyPath),
    );
  }
}

function identity(which) {
  if (!CLIENT_IDENTITIES.includes(which)) {
    throw invalid(`which must be one of ${CLIENT_IDENTITIES.join(', ')}, got ${describe(which)}`);
  }
  return which;
}

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

/** What a native start resolved to: `{ connectString, secureConnectString, tls }`. */
function parseStarted(json) {
  const started = JSON.parse(json);
  return { ...started, tls: started.tls === null ? null : new TlsMaterial(started.tls) };
}

/**
 * One standalone server on 127.0.0.1 and a free port: `await TestingServer.start()`, or secured:
 * `await TestingServer.start({ tls: 'need', saslUsers: { alice: 'secret' }, x509: true })`.
 */
class TestingServer {
  #native;
  #started;

  /** @private use TestingServer.start() */
  constructor(nativeServer, started) {
    this.#native = nativeServer;
    this.#started = started;
  }

  /**
   * Starts a server; resolves once it serves. Options (all off by default): `tls` (`'none'`,
   * `'want'`, `'need'`: a TLS port too, asking clients for certificates so), `serverCert`
   * (`'valid'`, `'expired'`, `'wrong-name'`), `saslUsers` (`{ name: password }`, SASL
   * DIGEST-MD5), `saslRequired`, `x509` (client certificates give x509 identities; implies
   * `tls: 'need'`), `superuser` (`{ name, password }`).
   */
  static async start(options) {
    const security = securityOptions('TestingServer.start', options);
    findZooKeeper();
    const server = new native.NativeTestingServer();
    try {
      return new TestingServer(server, parseStarted(await server.start(security)));
    } catch (err) {
      await server.close();
      throw err;
    }
  }

  /** `'127.0.0.1:PORT'` (plaintext, always there). */
  get connectString() {
    return this.#started.connectString;
  }

  /** `'127.0.0.1:SECUREPORT'`, the TLS port; null without `tls`. */
  get secureConnectString() {
    return this.#started.secureConnectString;
  }

  /** The CA, certificates and keys (TlsMaterial); null without `tls`. */
  get tls() {
    return this.#started.tls;
  }

  /** Stops the server (its data stays); `start()` brings it back on the same port. */
  async stop() {
    await this.#native.stop();
  }

  /** Starts the stopped server again. */
  async start() {
    await this.#native.start(undefined);
  }

  /** Stops and starts the server: same port, same data; clients reconnect. */
  async restart() {
    await this.#native.restart();
  }

  /** Kills the server (SIGKILL), as a crash would. */
  async kill() {
    await this.#native.kill();
  }

  /**
   * Freezes the server (SIGSTOP), as a hung machine: it keeps its sockets and sessions but
   * answers nothing, so its clients go SUSPENDED. Resolves once the process is stopped; rejects
   * if the server is not running.
   */
  async pause() {
    await this.#native.pause();
  }

  /**
   * Resumes a paused server (SIGCONT): clients back within their session timeout keep their
   * session (RECONNECTED). Rejects if the server is not running.
   */
  async resume() {
    await this.#native.resume();
  }

  /** Whether the server is frozen by `pause()`. */
  async isPaused() {
    return (await this.#native.isPaused()) === 'true';
  }

  /** Whether the server process runs (a paused one does). */
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

  constructor(nativeCluster, index, connectString, secureConnectString) {
    this.#native = nativeCluster;
    this.index = index;
    this.connectString = connectString;
    /** `'127.0.0.x:SECUREPORT'`; null without `tls`. */
    this.secureConnectString = secureConnectString || null;
    /** In a reconfigurable ensemble, its `'server.ID=...'` line for `reconfig({ joining })`; null otherwise. */
    this.reconfigSpec = null;
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

  /** Freezes this server (SIGSTOP), as TestingServer's `pause()`. */
  async pause() {
    await this.#native.pauseServer(this.index);
  }

  /** Resumes this server (SIGCONT), as TestingServer's `resume()`. */
  async resume() {
    await this.#native.resumeServer(this.index);
  }

  /** Whether this server is frozen by `pause()`. */
  async isPaused() {
    return (await this.#native.serverIsPaused(this.index)) === 'true';
  }
}

/**
 * A TCP proxy on 127.0.0.1 and a free port in front of one server, to inject network faults
 * between clients and it: `const proxy = await FaultProxy.start(server.connectString)`, then
 * point clients at `proxy.connectString`. Each control takes effect at once on open and new
 * connections: `cut()` closes every connection (and new ones) until `restore()`; `blackhole()`
 * keeps them open but drops every byte both ways (a partition: clients go SUSPENDED);
 * `dropReplies()` lets requests through and drops the replies; `delay(ms)` adds `ms` each way,
 * `delayReplies(ms)` to replies only; `restore()` forwards normally again. After `close()`,
 * every method rejects (and the counters throw) with code `ZKR_CLOSED`.
 */
class FaultProxy {
  #native;
  #connectString;
  #upstream;

  /** @private use FaultProxy.start(upstream) */
  constructor(nativeProxy, connectString, upstream) {
    this.#native = nativeProxy;
    this.#connectString = connectString;
    this.#upstream = upstream;
  }

  /**
   * Starts forwarding to `upstream`, one server's `'host:port'` (a TestingServer's or
   * ClusterServer's `connectString`); rejects with `ZKR_INVALID_ARGUMENT` if it is not one.
   */
  static async start(upstream) {
    kit();
    args.string('FaultProxy.start: upstream', upstream);
    const proxy = new native.NativeFaultProxy();
    return new FaultProxy(proxy, await proxy.start(upstream), upstream);
  }

  /** `'127.0.0.1:PORT'`, for clients. */
  get connectString() {
    return this.#connectString;
  }

  /** The proxy's port. */
  get port() {
    return Number(this.#connectString.slice(this.#connectString.lastIndexOf(':') + 1));
  }

  /** The `'host:port'` it forwards to. */
  get upstream() {
    return this.#upstream;
  }

  /** Client connections open through the proxy now (throws `ZKR_CLOSED` after close()). */
  get connections() {
    return this.#native.connections();
  }

  /** Bytes delivered so far, both directions (throws `ZKR_CLOSED` after close()). */
  get bytesForwarded() {
    return this.#native.bytesForwarded();
  }

  /** Whether close() ran. */
  get closed() {
    return this.#native.isClosed();
  }

  /** Closes every connection and closes new ones on accept until restore(); resolves once none is open. */
  async cut() {
    await this.#native.cut();
  }

  /** Keeps connections open but silently drops every byte both ways (a network partition). */
  async blackhole() {
    this.#native.blackhole();
  }

  /** Forwards requests but drops every reply (a write applied whose answer never comes). */
  async dropReplies() {
    this.#native.dropReplies();
  }

  /**
   * Delays every chunk by `ms` milliseconds in each direction (a round trip: twice that);
   * `ZKR_INVALID_ARGUMENT` for a negative, NaN or infinite `ms`.
   */
  async delay(ms) {
    this.#native.delay(latencyMs('delay: ms', ms));
  }

  /** Delays every server-to-client chunk by `ms` milliseconds; requests pass at once. */
  async delayReplies(ms) {
    this.#native.delayReplies(latencyMs('delayReplies: ms', ms));
  }

  /** Back to normal forwarding, for open and new connections. */
  async restore() {
    this.#native.restore();
  }

  /** Stops the proxy and closes every connection through it; idempotent. */
  async close() {
    await this.#native.close();
  }
}

/** A latency in milliseconds: a finite, non-negative number. */
function latencyMs(what, v) {
  const ms = args.requiredMs(what, v);
  if (!Number.isFinite(ms) || ms < 0) {
    throw invalid(`${what} must be a finite, non-negative number of milliseconds, got ${describe(ms)}`);
  }
  return ms;
}

/** An ensemble of `n` servers, server i on 127.0.0.(i+1): `await TestingCluster.start(3)`. */
class TestingCluster {
  #native;
  #started;

  /** @private use TestingCluster.start(n) */
  constructor(nativeCluster, started, servers) {
    this.#native = nativeCluster;
    this.#started = started;
    /** @type {ClusterServer[]} */
    this.servers = servers;
  }

  /**
   * Starts `n` servers (default 3); resolves once every one serves and one leads. `options` as
   * for TestingServer.start, for every server: one CA, each server's certificate for its own
   * 127.0.0.x; quorum traffic stays plaintext. `readOnlyMode: true`: a member cut off from its
   * quorum goes on serving reads to new sessions that allow it (`readonlymode.enabled`, with
   * local sessions): a client made with `canBeReadOnly: true` connects there in `READ_ONLY`
   * state, and its writes are refused.
   */
  static async start(n = 3, options = undefined) {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`TestingCluster.start: n must be a positive integer, got ${n}`);
    const security = securityOptions('TestingCluster.start', options, true);
    findZooKeeper();
    const cluster = new native.NativeTestingCluster();
    try {
      const started = parseStarted(await cluster.start(n, security));
      const servers = [];
      for (let i = 0; i < n; i += 1) {
        servers.push(
          new ClusterServer(cluster, i, await cluster.serverConnectString(i), await cluster.serverSecureConnectString(i)),
        );
      }
      return new TestingCluster(cluster, started, servers);
    } catch (err) {
      await cluster.close();
      throw err;
    }
  }

  /** `'127.0.0.1:p1,127.0.0.2:p2,...'`. */
  get connectString() {
    return this.#started.connectString;
  }

  /** `'127.0.0.1:s1,127.0.0.2:s2,...'`, every TLS port; null without `tls`. */
  get secureConnectString() {
    return this.#started.secureConnectString;
  }

  /** The CA, certificates and keys (TlsMaterial); null without `tls`. */
  get tls() {
    return this.#started.tls;
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

  // Dynamic ensembles

  /**
   * Starts `n` members (default 3) with reconfigEnabled=true and a digest superuser
   * (`{ superuser: ['super', 'secret'] }` by default: connect with `auth: { scheme: 'digest',
   * credentials: 'super:secret' }` to reconfig). Grow it with `addServer`.
   */
  static async startReconfigurable(n = 3, { superuser = ['super', 'secret'] } = {}) {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`TestingCluster.startReconfigurable: n must be a positive integer, got ${n}`);
    findZooKeeper();
    const cluster = new native.NativeTestingCluster();
    try {
      const started = parseStarted(await cluster.startReconfigurable(n, String(superuser[0]), String(superuser[1])));
      const servers = [];
      for (let i = 0; i < n; i += 1) servers.push(new ClusterServer(cluster, i, await cluster.serverConnectString(i), ''));
      const self = new TestingCluster(cluster, started, servers);
      for (const s of servers) s.reconfigSpec = (await cluster.serverReconfigSpec(s.index)) || null;
      return self;
    } catch (err) {
      await cluster.close();
      throw err;
    }
  }

  /**
   * Starts a server synced with this reconfigurable ensemble, not a member yet:
   * `client.reconfig({ joining: server.reconfigSpec })` makes it one (`{ observer: true }`: an observer).
   */
  async addServer({ observer = false } = {}) {
    const i = Number(await this.#native.addServer(Boolean(observer)));
    const server = new ClusterServer(this.#native, i, await this.#native.serverConnectString(i), '');
    server.reconfigSpec = (await this.#native.serverReconfigSpec(i)) || null;
    this.servers.push(server);
    return server;
  }

  /** Waits (up to `timeoutMs`, default 30 s) until the running members list exactly `ids` and one leads. */
  async waitForMembers(ids, { timeoutMs = 30000 } = {}) {
    return (await this.#native.waitForMembers(ids, timeoutMs)) === 'true';
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

module.exports = {
  TestingServer,
  TestingCluster,
  ClusterServer,
  FaultProxy,
  TlsMaterial,
  CLIENT_IDENTITIES,
  expireSession,
  findZooKeeper,
};
