// Client (Curator's CuratorFramework).
'use strict';

const { EventEmitter } = require('node:events');

const { native, nativeGetters } = require('./native');
const { ErrorCode } = require('./vocabulary');
const { zkrError, invalid, describe } = require('./errors');
const args = require('./args');
const alive = require('./alive');
const { RetryPolicy } = require('./retry');

const PERMS = { READ: 1, WRITE: 2, CREATE: 4, DELETE: 8, ADMIN: 16, ALL: 31 };
/** The kinds of watches `client.removeWatches` removes (ZooKeeper's WatcherType; the core's list). */
const WatcherType = Object.freeze(Object.fromEntries(native.watcherTypes().map((n) => [n, n])));
const constructing = Symbol('zkrecipes.constructing');

// A Client that is garbage collected without close() must not keep the process alive.
const keepAliveRegistry = new FinalizationRegistry((timer) => clearInterval(timer));

const CONNECT_OPTIONS = [
  'sessionTimeoutMs', 'connectionTimeoutMs', 'retry', 'namespace', 'auth', 'acl', 'canBeReadOnly',
  'tls', 'sasl', 'aclProvider', 'maxRequestBytes', 'trackEnsemble',
];

/** Server lines for reconfig: a string (one line) or an array of strings. */
function serverLines(what, v) {
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list)) throw invalid(`${what} must be a server line or an array of them, got ${describe(v)}`);
  return list.map((line, i) => args.string(`${what}[${i}]`, line));
}

/** An ensemble configuration from the native layer: `version` as a BigInt, frozen. */
function ensembleConfig(c) {
  return Object.freeze({
    members: Object.freeze(c.members.map((m) => Object.freeze({
      id: m.id,
      host: m.host,
      quorumPort: m.quorumPort,
      electionPort: m.electionPort,
      role: m.role,
      clientHost: m.clientHost ?? null,
      clientPort: m.clientPort ?? null,
      clientAddress: m.clientAddress ?? null,
      serverLine: m.serverLine,
    }))),
    version: BigInt(c.version),
    connectString: c.connectString,
    data: c.data,
  });
}

/** A retry option: a RetryPolicy, as a plain object for the native layer; `undefined` if omitted. */
function retryOption(what, v) {
  const policy = args.instance(what, v, RetryPolicy, 'a retry policy (new ExponentialBackoffRetry(...), ...)');
  return policy === undefined ? undefined : { ...policy };
}

function perms(what, p) {
  if (!Array.isArray(p)) return args.uint32(what, p);
  return p.reduce((bits, name) => {
    if (!Object.hasOwn(PERMS, name)) throw invalid(`${what}: unknown permission ${describe(name)}`);
    return bits | PERMS[name];
  }, 0);
}

/** An ACL list `[{ perms, scheme, id }]` (perms as bits or names) for the native layer. */
function aclList(what, acl) {
  if (!Array.isArray(acl)) throw invalid(`${what} must be an array of { perms, scheme, id }, got ${describe(acl)}`);
  if (acl.length === 0) throw invalid(`${what} must not be empty`);
  return acl.map((a, i) => {
    const e = args.options(`${what}[${i}]`, a, ['perms', 'scheme', 'id']);
    const bits = perms(`${what}[${i}].perms`, e.perms);
    if (bits === undefined) throw invalid(`${what}[${i}].perms is required (names or bits)`);
    return { perms: bits, scheme: args.string(`${what}[${i}].scheme`, e.scheme), id: args.string(`${what}[${i}].id`, e.id) };
  });
}

/**
 * A PEM option: a string (a path, or PEM text when it holds -----BEGIN anywhere or a line break)
 * or a Buffer / Uint8Array, always PEM text (UTF-8; the native layer checks it).
 */
function pem(what, v) {
  if (v === undefined || v === null) return undefined;
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  return args.string(what, v);
}

function tlsOptions(v) {
  if (v === undefined || v === null || v === false) return undefined;
  const t = args.options('tls', v === true ? {} : v, ['ca', 'cert', 'key', 'verifyHostname', 'everyHost']);
  return {
    ca: pem('tls.ca', t.ca),
    cert: pem('tls.cert', t.cert),
    key: pem('tls.key', t.key),
    verifyHostname: args.bool('tls.verifyHostname', t.verifyHostname, true),
    everyHost: args.bool('tls.everyHost', t.everyHost, true),
  };
}

function saslOptions(v) {
  if (v === undefined || v === null) return undefined;
  const s = args.options('sasl', v, ['mechanism', 'username', 'password']);
  return {
    mechanism: args.optionalString('sasl.mechanism', s.mechanism),
    username: args.string('sasl.username', s.username),
    password: args.string('sasl.password', s.password),
  };
}

/**
 * Curator's ACLProvider: a function `(path) => Acl[] | undefined` (called for each create with
 * the server-side path; what it throws fails the create) or an object `{ [pathPrefix]: Acl[] }`.
 * Returns [rules for the native options, the wrapped function or undefined].
 */
function aclProvider(v) {
  if (v === undefined || v === null) return [undefined, undefined];
  if (typeof v === 'function') {
    const wrapped = (path) => {
      try {
        const acl = v(path);
        return { acl: acl === undefined || acl === null ? undefined : aclList(`aclProvider(${JSON.stringify(path)})`, acl) };
      } catch (e) {
        return { error: e instanceof Error ? e.message : String(e) };
      }
    };
    return [undefined, wrapped];
  }
  if (typeof v !== 'object' || Array.isArray(v)) {
    throw invalid(`aclProvider must be a function (path) => Acl[] | undefined or an object { [prefix]: Acl[] }, got ${describe(v)}`);
  }
  return [Object.entries(v).map(([prefix, acl]) => ({ prefix, acl: aclList(`aclProvider[${JSON.stringify(prefix)}]`, acl) })), undefined];
}

function connectOptions(options) {
  const o = args.options('options', options, CONNECT_OPTIONS);
  const out = {
    sessionTimeoutMs: args.ms('sessionTimeoutMs', o.sessionTimeoutMs),
    connectionTimeoutMs: args.ms('connectionTimeoutMs', o.connectionTimeoutMs),
    retry: retryOption('retry', o.retry),
    namespace: args.optionalString('namespace', o.namespace),
    canBeReadOnly: args.bool('canBeReadOnly', o.canBeReadOnly, undefined),
    maxRequestBytes: args.uint32('maxRequestBytes', o.maxRequestBytes),
    trackEnsemble: args.bool('trackEnsemble', o.trackEnsemble, undefined),
  };
  if (o.auth !== undefined && o.auth !== null) {
    const list = Array.isArray(o.auth) ? o.auth : [o.auth];
    out.auth = list.map((a, i) => {
      const e = args.options(`auth[${i}]`, a, ['scheme', 'credentials']);
      return {
        scheme: args.string(`auth[${i}].scheme`, e.scheme),
        credentials: args.buffer(`auth[${i}].credentials`, e.credentials, { optional: false }),
      };
    });
  }
  if (o.acl !== undefined && o.acl !== null) out.acl = aclList('acl', o.acl);
  out.tls = tlsOptions(o.tls);
  out.sasl = saslOptions(o.sasl);
  const [rules, fn] = aclProvider(o.aclProvider);
  out.aclRules = rules;
  return [out, fn];
}

/**
 * A ZooKeeper client. Make one with `await Client.connect(hosts, options)`; close it with
 * `await client.close()`. Emits `'state'` with `'CONNECTED' | 'SUSPENDED' | 'RECONNECTED' |
 * 'LOST' | 'READ_ONLY'`. While open it keeps the process alive, like a socket (see `unref()`).
 * Its 'state' events and its one-shot watches reach JS in the order they happened.
 */
class Client extends EventEmitter {
  #native;
  #keepAlive;
  #hosts;
  #watches = new Map(); // one-shot watch id -> function
  #nextWatch = 1;

  // `state` (the connection state), `sessionId` (a BigInt, 0n once closed), `isClosed`,
  // `namespace` (`''` or `'/ns'`).
  static {
    nativeGetters(this, (c) => c.#native, ['state', 'sessionId', 'isClosed', 'namespace', 'maxRequestBytes', 'currentConnectString']);
  }

  constructor(token, nativeClient, hosts) {
    super();
    if (token !== constructing) throw invalid('use `await Client.connect(hosts, options)` to make a Client');
    this.#native = nativeClient;
    this.#hosts = hosts;
    const self = new WeakRef(this);
    // The native side holds this function (weakly, for the event loop); the WeakRef lets an
    // unclosed, unreachable Client be collected.
    nativeClient.setEmitter((name, payload, extra) => {
      const client = self.deref();
      if (name === 'watch') client?.#fireWatch(payload, extra);
      else client?.emit(name, payload);
    });
    this.#keepAlive = setInterval(() => {}, 2 ** 30);
    keepAliveRegistry.register(this, this.#keepAlive, this);
  }

  /**
   * Connects to `hosts` (`'host:port[,host:port...][/chroot]'`). Options: `sessionTimeoutMs`
   * (60000), `connectionTimeoutMs` (15000), `retry` (ExponentialBackoffRetry(1000, 3)),
   * `namespace`, `auth` ({ scheme, credentials } or a list), `acl` ([{ perms, scheme, id }]),
   * `canBeReadOnly`, `tls` ({ ca, cert, key, verifyHostname, everyHost }: each PEM a path, PEM
   * text or a Buffer), `sasl` ({ mechanism: 'DIGEST-MD5', username, password }), `aclProvider`
   * (a function `(path) => Acl[] | undefined`, or `{ [pathPrefix]: Acl[] }`), `maxRequestBytes`
   * (the largest request sent, in bytes on the wire: default 1048575, the server's default
   * jute.maxbuffer, at least 1024; a bigger request rejects with ZKR_INVALID_ARGUMENT before it
   * is sent; raise it only with the servers' jute.maxbuffer), `trackEnsemble` (Curator's
   * EnsembleTracker: follow /zookeeper/config, so that members added or removed by `reconfig`
   * become the client's servers, `currentConnectString`, without ending the session; not with
   * `tls`). An unknown option
   * is refused (`ZKR_INVALID_ARGUMENT`); a refused authentication rejects with `ZKR_AUTH_FAILED`
   * at once (never retried).
   */
  static connect(hosts, options) {
    return args.rejecting(async () => {
      args.string('hosts', hosts);
      const [o, providerFn] = connectOptions(options);
      const nativeClient = await native.NativeClient.connect(hosts, o, providerFn);
      return new Client(constructing, nativeClient, hosts);
    });
  }

  /** @internal the native client, for the recipes of this package. */
  static _native(client) {
    if (!(client instanceof Client)) throw invalid(`client must be a Client, got ${describe(client)}`);
    return client.#native;
  }

  /**
   * Closes the session: ephemeral nodes (locks, latches) vanish at once, pending waits reject
   * with `ZKR_CLOSED`, later calls reject with `ZKR_CLOSED`. Nothing of zkrecipes keeps the
   * event loop alive afterwards. Closing twice is fine.
   */
  async close() {
    alive.releaseClient(this);
    clearInterval(this.#keepAlive);
    keepAliveRegistry.unregister(this);
    try {
      await this.#native.close();
    } finally {
      // Again: a start() while the close waited for work in flight kept its recipe.
      alive.releaseClient(this);
    }
  }

  /** Lets the process exit while this client is open (like `socket.unref()`). */
  unref() {
    this.#keepAlive.unref();
    return this;
  }

  /** Undoes `unref()`. */
  ref() {
    if (!this.isClosed) this.#keepAlive.ref();
    return this;
  }

  /**
   * Creates a node; resolves to its actual path (with the sequence number and the protected
   * prefix, if any). Options: `mode` ('PERSISTENT'; see `CreateMode`), `createParents` (false,
   * parents are CONTAINER nodes), `protected` (false, Curator's protected mode).
   */
  create(path, data, options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ['mode', 'createParents', 'protected', 'compressed', 'ttlMs', 'acl']);
      const persistentParents = o.createParents === 'persistent';
      const mode = args.optionalString('mode', o.mode) ?? 'PERSISTENT';
      const createParents = persistentParents ? false : args.bool('createParents', o.createParents, false);
      const isProtected = args.bool('protected', o.protected, false);
      const compressed = args.bool('compressed', o.compressed, false);
      const ttlMs = args.ms('ttlMs', o.ttlMs);
      const acl = o.acl === undefined || o.acl === null ? undefined : aclList('acl', o.acl);
      if (persistentParents || compressed || ttlMs !== undefined || acl !== undefined) {
        // Persistent parents, Curator's GZIP, TTL modes, a node's own ACL.
        const ex = { mode, createParents, persistentParents, protected: isProtected, compressed, ttlMs, acl };
        return native.createEx(this.#native, args.path('path', path), args.buffer('data', data), ex);
      }
      return this.#native.create(args.path('path', path), args.buffer('data', data), mode, createParents, isProtected);
    });
  }

  /**
   * Resolves to `{ acl: [{ perms, scheme, id }], stat }` (Curator's getACL()); reading it needs
   * READ or ADMIN permission (`ZKR_NO_AUTH` otherwise).
   */
  getAcl(path) {
    return args.rejecting(() => this.#native.getAcl(args.path('path', path)));
  }

  /**
   * Replaces the node's ACL; resolves to the new stat. Options: `version` (the ACL version,
   * the stat's `aversion`; -1 or omitted: any).
   */
  setAcl(path, acl, options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ['version']);
      const version = o.version === undefined ? undefined : args.requiredInt32('version', o.version);
      return this.#native.setAcl(args.path('path', path), aclList('acl', acl), version);
    });
  }

  /** A new Transaction (Curator's transaction()): chain operations, then `await commit()`. */
  transaction() {
    return new Transaction(this);
  }

  /**
   * Resolves to `{ data: Buffer, stat }`; rejects with `ZKR_NO_NODE` if there is no node.
   * `{ watch }` (a function) leaves a one-shot watch: `watch({ type, path })` is called once,
   * `type` being 'DATA_CHANGED' | 'DELETED' (or 'SESSION_ENDED' if the session ends first).
   */
  getData(path, options) {
    if (options?.compressed !== undefined && options?.compressed !== null) {
      // Curator's getData().decompressed() (no watch with it).
      return args.rejecting(() => {
        const o = args.options('options', options, ['compressed']);
        if (!args.bool('compressed', o.compressed, false)) return this.#read('getData', path, undefined);
        return native.getDataDecompressed(this.#native, args.path('path', path));
      });
    }
    return this.#read('getData', path, options);
  }

  /**
   * Sets a node's data (only at `version`, if given); resolves to the new stat. `{ compressed }`
   * stores it as Curator's GZIP provider does.
   */
  setData(path, data, options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ['version', 'compressed']);
      const p = args.path('path', path);
      const d = args.buffer('data', data) ?? Buffer.alloc(0);
      const version = args.int32('version', o.version, -1);
      if (args.bool('compressed', o.compressed, false)) {
        return native.setDataCompressed(this.#native, p, d, version === -1 ? undefined : version);
      }
      return this.#native.setData(p, d, version);
    });
  }

  /**
   * Resolves to the node's stat, or `null` if it does not exist. `{ watch }` leaves a one-shot
   * watch: 'CREATED' | 'DELETED' | 'DATA_CHANGED' (see `getData`).
   */
  exists(path, options) {
    return this.#read('exists', path, options);
  }

  /**
   * Resolves to the names of the node's children. `{ watch }` leaves a one-shot watch on the
   * children: 'CHILDREN_CHANGED' | 'DELETED' (see `getData`).
   */
  getChildren(path, options) {
    return this.#read('getChildren', path, options);
  }

  // getData / exists / getChildren, with their optional one-shot watch.
  #read(method, path, options) {
    return args.rejecting(async () => {
      args.path('path', path);
      const o = args.options('options', options, ['watch']);
      const watch = o.watch === undefined || o.watch === null ? undefined : args.func('watch', o.watch);
      if (watch === undefined) return this.#native[method](path);
      const id = this.#nextWatch++;
      this.#watches.set(id, watch);
      try {
        return await this.#native[method](path, id);
      } catch (err) {
        this.#watches.delete(id); // no watch was left
        throw err;
      }
    });
  }

  #fireWatch(id, event) {
    const watch = this.#watches.get(id);
    this.#watches.delete(id);
    try {
      watch?.(event);
    } catch (err) {
      process.emitWarning(`zkrecipes: a watch function threw: ${err?.stack ?? err}`, { code: 'ZKR_WATCH_ERROR' });
    }
  }

  /**
   * ZooKeeper's sync (Curator's sync()): the server this client talks to catches up with the
   * leader before answering, so a read issued after this resolves sees every write committed
   * before the call, by any client. A reconnection in between (to another server) loses that:
   * sync again once the connection is back. A missing node is fine.
   */
  sync(path) {
    return args.rejecting(() => this.#native.sync(args.path('path', path)));
  }

  /**
   * Removes this client's watches of `type` on `path` (ZooKeeper's removeAllWatches, Curator's
   * watchers().removeAll()); `type` is a WatcherType: 'CHILDREN', 'DATA', 'PERSISTENT',
   * 'PERSISTENT_RECURSIVE' or 'ANY'. A removed one-shot watch is called with `{ type:
   * 'WATCH_REMOVED', path }`; a removed PersistentWatcher emits WATCH_REMOVED last. Rejects with
   * ZKR_NO_WATCHER when the client has no watch of that kind there. One-shot kinds are removed
   * on the server first: with `{ local: false }` (the default) a failure to reach it rejects
   * (ZKR_CONNECTION_LOSS) and nothing is removed; with `{ local: true }` one try is made and the
   * watches are removed here whatever it says. Persistent kinds are removed here at once (the
   * path's one shared watch leaves the server with its last user). A recipe waiting on a removed
   * watch reads again; a cache whose watch is removed sets it again and resyncs. ZooKeeper
   * before 3.9 cannot remove a persistent watch by its kind (ZOOKEEPER-4472) and strips half of
   * one with a data or child removal (ZOOKEEPER-4471): such a watch is set again and its users
   * hear RECONNECTED (read again).
   */
  removeWatches(path, type, options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ['local']);
      const t = args.string('type', type);
      if (!Object.hasOwn(WatcherType, t)) {
        throw invalid(`type must be one of ${Object.keys(WatcherType).join(', ')}, got ${JSON.stringify(t)}`);
      }
      return this.#native.removeWatches(args.path('path', path), t, args.bool('local', o.local, false));
    });
  }

  /**
   * Curator's blockUntilConnected(timeout): resolves to true once the client is connected
   * (CONNECTED, RECONNECTED or READ_ONLY; at once if it is now), false when `{ timeoutMs }`
   * (omitted or Infinity: no limit; 0: look once) ran out first. Rejects with ZKR_CLOSED on a
   * closed client.
   */
  waitForState(options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ['timeoutMs']);
      return this.#native.waitForState(args.ms('timeoutMs', o.timeoutMs));
    });
  }

  /**
   * The ensemble's configuration (/zookeeper/config, Curator's getConfig().forEnsemble()):
   * `{ members, version, connectString, data }`, the members by id (`id`, `host`, `quorumPort`,
   * `electionPort`, `role` 'PARTICIPANT' | 'OBSERVER', `clientHost`, `clientPort`,
   * `clientAddress` — null without a client port —, `serverLine`), `version` a BigInt. Any
   * session may read it; a standalone server lists no members.
   */
  getConfig() {
    return args.rejecting(() => this.#native.getConfig().then(ensembleConfig));
  }

  /**
   * Changes the ensemble's members (ZooKeeper's reconfig, Curator's reconfig()); resolves to the
   * new configuration. Options: `joining` (server lines 'server.ID=HOST:QUORUM:ELECTION[:ROLE];[HOST:]PORT',
   * as `serverLine` gives them), `leaving` (member ids), or `newMembers` (the whole new member
   * list, not with the other two), and `fromConfig` (a `version`: only if still current, else
   * ZKR_BAD_VERSION). Rejects with ZKR_SERVER (`zkCode` -123) when the servers lack
   * reconfigEnabled=true, ZKR_NO_AUTH unless the session is a superuser (or the servers skip
   * ACLs), ZKR_INVALID_ARGUMENT before sending anything for bad lines or combinations.
   */
  reconfig(options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ['joining', 'leaving', 'newMembers', 'fromConfig']);
      const joining = serverLines('joining', o.joining);
      let leaving = o.leaving ?? [];
      if (typeof leaving === 'number') leaving = [leaving];
      if (!Array.isArray(leaving)) throw invalid(`leaving must be a member id or an array of them, got ${describe(o.leaving)}`);
      leaving = leaving.map((id, i) => args.requiredUint32(`leaving[${i}]`, id));
      const newMembers = o.newMembers === undefined || o.newMembers === null ? null : serverLines('newMembers', o.newMembers);
      const from = o.fromConfig === undefined || o.fromConfig === null ? null : args.int64('fromConfig', o.fromConfig).toString();
      return this.#native.reconfig(joining, leaving, newMembers, from).then(ensembleConfig);
    });
  }

  /**
   * Deletes a node. Options: `version` (only at that version), `guaranteed` (keep retrying in
   * the background after connection loss, Curator's guaranteed()), `recursive` (children first).
   */
  delete(path, options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ['version', 'guaranteed', 'recursive']);
      return this.#native.delete(
        args.path('path', path),
        args.int32('version', o.version, -1),
        args.bool('guaranteed', o.guaranteed, false),
        args.bool('recursive', o.recursive, false),
      );
    });
  }

  /**
   * Testing only (builds with the `testing` feature: `node scripts/build.js --testing`):
   * expires this client's session on the server (Curator's KillSession) and waits for LOST.
   */
  _expireSessionForTesting() {
    return args.rejecting(() => {
      if (typeof this.#native.expireSessionForTesting !== 'function') {
        throw zkrError(ErrorCode.INVALID_ARGUMENT, 'this addon was built without the testing feature (node scripts/build.js --testing)');
      }
      return this.#native.expireSessionForTesting();
    });
  }

  /** Requests sent so far, per operation (for tests and benchmarks). */
  _requestCounts() {
    return this.#native.requestCounts();
  }

  toString() {
    return `Client(${this.#hosts}, ${this.state})`;
  }
}

/**
 * Curator's transaction(): operations committed all together or not at all. From
 * `client.transaction()`; chain `create(path, data, { mode, ttlMs, acl })`, `delete(path, { version })`,
 * `setData(path, data, { version })`, `check(path, version)`, then `await commit()`: one
 * `{ type, path?, stat? }` per operation, or a rejection with the failing operation's code and
 * its `index` (nothing applied); `ZKR_OUTCOME_UNKNOWN` when the reply was lost (never resent).
 */
class Transaction {
  #client;
  #ops = [];

  constructor(client) {
    this.#client = Client._native(client);
  }

  /** Adds a create (no parents); `acl` is this node's own ACL instead of the client's. */
  create(path, data, options) {
    const o = args.options('options', options, ['mode', 'ttlMs', 'acl']);
    this.#ops.push({
      op: 'create',
      path: args.path('path', path),
      data: args.buffer('data', data),
      mode: args.optionalString('mode', o.mode) ?? 'PERSISTENT',
      ttlMs: args.ms('ttlMs', o.ttlMs),
      acl: o.acl === undefined || o.acl === null ? undefined : aclList('acl', o.acl),
    });
    return this;
  }

  /** Adds a delete (at `{ version }` if given). */
  delete(path, options) {
    const o = args.options('options', options, ['version']);
    this.#ops.push({ op: 'delete', path: args.path('path', path), version: args.int32('version', o.version, -1) });
    return this;
  }

  /** Adds a set data (at `{ version }` if given). */
  setData(path, data, options) {
    const o = args.options('options', options, ['version']);
    this.#ops.push({
      op: 'setData',
      path: args.path('path', path),
      data: args.buffer('data', data) ?? Buffer.alloc(0),
      version: args.int32('version', o.version, -1),
    });
    return this;
  }

  /** Adds a check that `path` is at data `version`. */
  check(path, version) {
    this.#ops.push({ op: 'check', path: args.path('path', path), version: args.requiredInt32('version', version) });
    return this;
  }

  /** Commits every operation, in order, or none. */
  commit() {
    return args.rejecting(() => native.commitTransaction(this.#client, this.#ops));
  }
}

module.exports = { Client, Transaction, WatcherType, constructing, retryOption };
