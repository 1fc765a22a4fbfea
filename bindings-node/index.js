// zkrecipes for Node: Apache Curator's coordination recipes on ZooKeeper, on one Rust core.
//
// This file is the public, hand-written layer over the native addon (`zkrecipes.node`, built
// from src/ with napi-rs). It does what a face does (DESIGN.md) and nothing more:
//   - checks argument types, so a wrong type rejects with `code: 'ZKR_INVALID_ARGUMENT'`
//     instead of a napi type error;
//   - maps owners: the async context entered by `withLock` / `owner.run(fn)`
//     (AsyncLocalStorage), else this JS thread's owner, else an explicit `{ owner }`;
//   - turns native events into EventEmitter events;
//   - converts 64-bit values (accepts number or BigInt, returns BigInt).
// Every recipe decision (queues, watches, retries, fencing) is the core's.
'use strict';

const { EventEmitter } = require('node:events');
const { AsyncLocalStorage } = require('node:async_hooks');
const path = require('node:path');

// ---------------------------------------------------------------------------------------------
// The native addon

function loadNative() {
  const file = process.env.ZKRECIPES_NATIVE || path.join(__dirname, 'zkrecipes.node');
  try {
    return require(file);
  } catch (cause) {
    const err = new Error(
      `zkrecipes: cannot load the native addon ${file} (${cause.message}). ` +
        'Build it with `npm run build` in bindings-node (needs Rust), or reinstall the package.',
      { cause },
    );
    err.code = 'ZKR_NATIVE_MISSING';
    throw err;
  }
}

const native = loadNative();

// ---------------------------------------------------------------------------------------------
// Errors: plain `Error`s with API.md's `code`; the native layer builds the same shape.

/** The `err.code` values (API.md's table, plus the core's extra kinds). */
const ErrorCode = Object.freeze({
  INVALID_ARGUMENT: 'ZKR_INVALID_ARGUMENT',
  NOT_OWNER: 'ZKR_NOT_OWNER',
  CONNECTION_LOSS: 'ZKR_CONNECTION_LOSS',
  SESSION_EXPIRED: 'ZKR_SESSION_EXPIRED',
  OUTCOME_UNKNOWN: 'ZKR_OUTCOME_UNKNOWN',
  CLOSED: 'ZKR_CLOSED',
  NO_NODE: 'ZKR_NO_NODE',
  NODE_EXISTS: 'ZKR_NODE_EXISTS',
  BAD_VERSION: 'ZKR_BAD_VERSION',
  NO_AUTH: 'ZKR_NO_AUTH',
  NOT_EMPTY: 'ZKR_NOT_EMPTY',
  TIMEOUT: 'ZKR_TIMEOUT',
  CORRUPTED_DATA: 'ZKR_CORRUPTED_DATA',
  OVERFLOW: 'ZKR_OVERFLOW',
  SERVER: 'ZKR_SERVER',
  INTERNAL: 'ZKR_INTERNAL',
});

function zkrError(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}

function invalid(message) {
  return zkrError(ErrorCode.INVALID_ARGUMENT, message);
}

function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}...` : v);
  if (typeof v === 'object') return `an object (${v.constructor?.name ?? 'Object'})`;
  if (typeof v === 'function') return 'a function';
  return String(v);
}

// ---------------------------------------------------------------------------------------------
// Argument checks (types here; paths and values are checked again by the core)

function checkString(what, v) {
  if (typeof v !== 'string') throw invalid(`${what} must be a string, got ${describe(v)}`);
  return v;
}

function checkPath(what, v) {
  // The core applies ZooKeeper's path rules and names the path in its message.
  return checkString(what, v);
}

function checkOptions(what, v) {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) {
    throw invalid(`${what} must be an options object, got ${describe(v)}`);
  }
  return v;
}

function checkFunction(what, v) {
  if (typeof v !== 'function') throw invalid(`${what} must be a function, got ${describe(v)}`);
  return v;
}

function checkBool(what, v, dflt) {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw invalid(`${what} must be a boolean, got ${describe(v)}`);
  return v;
}

// Milliseconds: a non-negative number; undefined/null (or Infinity) means "no limit".
function checkMs(what, v) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || Number.isNaN(v)) {
    throw invalid(`${what} must be a number of milliseconds, got ${describe(v)}`);
  }
  if (v < 0) throw invalid(`${what} must not be negative, got ${v}`);
  return v === Infinity ? undefined : v;
}

function checkPositiveMs(what, v) {
  const ms = checkMs(what, v);
  if (ms === undefined) return undefined;
  if (ms <= 0) throw invalid(`${what} must be positive, got ${v}`);
  return ms;
}

function checkInt32(what, v, { min = -2147483648 } = {}) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > 2147483647) {
    throw invalid(`${what} must be an integer in ${min}..2147483647, got ${describe(v)}`);
  }
  return v;
}

function checkUint32(what, v) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 4294967295) {
    throw invalid(`${what} must be a non-negative integer, got ${describe(v)}`);
  }
  return v;
}

// A 64-bit signed value: a BigInt, or a number that is a safe integer.
function toInt64(what, v) {
  let b;
  if (typeof v === 'bigint') b = v;
  else if (typeof v === 'number' && Number.isSafeInteger(v)) b = BigInt(v);
  else throw invalid(`${what} must be a BigInt or a safe integer number, got ${describe(v)}`);
  if (b < -(2n ** 63n) || b >= 2n ** 63n) throw invalid(`${what} ${b} does not fit a signed 64-bit integer`);
  return b;
}

// Node data: Buffer, any Uint8Array, or a string (UTF-8).
function toBuffer(what, v, { optional = true } = {}) {
  if (v === undefined || v === null) {
    if (optional) return undefined;
    throw invalid(`${what} is required`);
  }
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  throw invalid(`${what} must be a Buffer, Uint8Array or string, got ${describe(v)}`);
}

// An async method body: argument errors become rejections, never synchronous throws.
function rejecting(fn) {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}

// ---------------------------------------------------------------------------------------------
// Owners (API.md "Owners and reentrancy")

const ownerContext = new AsyncLocalStorage();

/**
 * Who holds a lock. The same owner may acquire again (reentrancy); a different owner
 * contends, also inside this process. By default the owner is the async context entered by
 * `withLock` / `owner.run(fn)`, else this JS thread's owner.
 */
// Owner ids back to their Owner objects, for events that name an owner ('lost').
const ownersById = new Map();
const ownerRegistry = new FinalizationRegistry((id) => {
  if (ownersById.get(id)?.deref() === undefined) ownersById.delete(id);
});

class Owner {
  #id;

  constructor() {
    this.#id = native.newOwnerId();
    ownersById.set(this.#id, new WeakRef(this));
    ownerRegistry.register(this, this.#id);
  }

  /** @internal the Owner with this id, if it is still alive. */
  static _byId(id) {
    return ownersById.get(id)?.deref();
  }

  /** This owner's id (unique in the process). */
  get id() {
    return this.#id;
  }

  /**
   * Runs `fn(...args)` in an async context owned by this owner: locks taken inside (without an
   * explicit `{ owner }`) belong to it. Returns what `fn` returns.
   */
  run(fn, ...args) {
    checkFunction('fn', fn);
    return ownerContext.run(this, fn, ...args);
  }

  /** The owner that a lock call made here would use. */
  static current() {
    return currentOwner();
  }

  toString() {
    return `Owner(${this.#id})`;
  }
}

// One per module instance, i.e. per JS thread (each worker_thread loads its own).
const threadOwner = new Owner();

function currentOwner() {
  return ownerContext.getStore() ?? threadOwner;
}

function resolveOwner(owner) {
  if (owner === undefined || owner === null) return currentOwner();
  if (!(owner instanceof Owner)) throw invalid(`owner must be an Owner, got ${describe(owner)}`);
  return owner;
}

// ---------------------------------------------------------------------------------------------
// Retry policies (Curator's six), described as plain objects for the native layer

class RetryPolicy {
  constructor(kind, fields) {
    this.kind = kind;
    Object.assign(this, fields);
    Object.freeze(this);
  }
}

/** Curator's ExponentialBackoffRetry(baseSleepMs, maxRetries[, maxSleepMs]). */
class ExponentialBackoffRetry extends RetryPolicy {
  constructor(baseSleepMs, maxRetries, maxSleepMs) {
    super('exponentialBackoff', {
      baseSleepMs: checkMs('baseSleepMs', baseSleepMs) ?? mustBe('baseSleepMs'),
      maxRetries: checkUint32('maxRetries', maxRetries) ?? mustBe('maxRetries'),
      maxSleepMs: checkMs('maxSleepMs', maxSleepMs),
    });
  }
}

/** Curator's BoundedExponentialBackoffRetry(baseSleepMs, maxSleepMs, maxRetries). */
class BoundedExponentialBackoffRetry extends RetryPolicy {
  constructor(baseSleepMs, maxSleepMs, maxRetries) {
    super('boundedExponentialBackoff', {
      baseSleepMs: checkMs('baseSleepMs', baseSleepMs) ?? mustBe('baseSleepMs'),
      maxSleepMs: checkMs('maxSleepMs', maxSleepMs) ?? mustBe('maxSleepMs'),
      maxRetries: checkUint32('maxRetries', maxRetries) ?? mustBe('maxRetries'),
    });
  }
}

/** Curator's RetryNTimes(n, sleepMs). */
class RetryNTimes extends RetryPolicy {
  constructor(n, sleepMs) {
    super('nTimes', {
      n: checkUint32('n', n) ?? mustBe('n'),
      sleepMs: checkMs('sleepMs', sleepMs) ?? mustBe('sleepMs'),
    });
  }
}

/** Curator's RetryOneTime(sleepMs). */
class RetryOneTime extends RetryPolicy {
  constructor(sleepMs) {
    super('oneTime', { sleepMs: checkMs('sleepMs', sleepMs) ?? mustBe('sleepMs') });
  }
}

/** Curator's RetryUntilElapsed(maxElapsedMs, sleepMs). */
class RetryUntilElapsed extends RetryPolicy {
  constructor(maxElapsedMs, sleepMs) {
    super('untilElapsed', {
      maxElapsedMs: checkMs('maxElapsedMs', maxElapsedMs) ?? mustBe('maxElapsedMs'),
      sleepMs: checkMs('sleepMs', sleepMs) ?? mustBe('sleepMs'),
    });
  }
}

/** Curator's RetryForever(sleepMs). */
class RetryForever extends RetryPolicy {
  constructor(sleepMs) {
    super('forever', { sleepMs: checkMs('sleepMs', sleepMs) ?? mustBe('sleepMs') });
  }
}

function mustBe(what) {
  throw invalid(`${what} is required (a finite number)`);
}

// ---------------------------------------------------------------------------------------------
// Client (Curator's CuratorFramework)

const CREATE_MODES = new Set(['PERSISTENT', 'PERSISTENT_SEQUENTIAL', 'EPHEMERAL', 'EPHEMERAL_SEQUENTIAL', 'CONTAINER']);
const PERMS = { READ: 1, WRITE: 2, CREATE: 4, DELETE: 8, ADMIN: 16, ALL: 31 };
const constructing = Symbol('zkrecipes.constructing');

// A Client that is garbage collected without close() must not keep the process alive.
const keepAliveRegistry = new FinalizationRegistry((timer) => clearInterval(timer));

// `{ watch }` of getData/exists/getChildren: a function called once with `{ type, path }`.
function watchOption(options) {
  const o = checkOptions('options', options);
  if (o.watch === undefined || o.watch === null) return undefined;
  if (typeof o.watch !== 'function') throw invalid(`watch must be a function, got ${describe(o.watch)}`);
  const watch = o.watch;
  return (type, path) => {
    try {
      watch({ type, path });
    } catch (err) {
      process.emitWarning(`zkrecipes: a watch function threw: ${err?.stack ?? err}`);
    }
  };
}

function connectOptions(options) {
  const o = checkOptions('options', options);
  const out = {
    sessionTimeoutMs: checkPositiveMs('sessionTimeoutMs', o.sessionTimeoutMs),
    connectionTimeoutMs: checkPositiveMs('connectionTimeoutMs', o.connectionTimeoutMs),
  };
  if (o.retry !== undefined && o.retry !== null) {
    if (!(o.retry instanceof RetryPolicy)) {
      throw invalid(`retry must be a retry policy (new ExponentialBackoffRetry(...), ...), got ${describe(o.retry)}`);
    }
    out.retry = { ...o.retry };
  }
  if (o.namespace !== undefined && o.namespace !== null) out.namespace = checkString('namespace', o.namespace);
  if (o.auth !== undefined && o.auth !== null) {
    const list = Array.isArray(o.auth) ? o.auth : [o.auth];
    out.auth = list.map((a, i) => {
      const e = checkOptions(`auth[${i}]`, a);
      return {
        scheme: checkString(`auth[${i}].scheme`, e.scheme),
        credentials: toBuffer(`auth[${i}].credentials`, e.credentials, { optional: false }),
      };
    });
  }
  if (o.acl !== undefined && o.acl !== null) {
    if (!Array.isArray(o.acl)) throw invalid(`acl must be an array of { perms, scheme, id }, got ${describe(o.acl)}`);
    out.acl = o.acl.map((a, i) => {
      const e = checkOptions(`acl[${i}]`, a);
      let perms = e.perms;
      if (Array.isArray(perms)) {
        perms = perms.reduce((bits, p) => {
          if (!(p in PERMS)) throw invalid(`acl[${i}].perms: unknown permission ${describe(p)}`);
          return bits | PERMS[p];
        }, 0);
      }
      return {
        perms: checkUint32(`acl[${i}].perms`, perms) ?? mustBe(`acl[${i}].perms`),
        scheme: checkString(`acl[${i}].scheme`, e.scheme),
        id: checkString(`acl[${i}].id`, e.id),
      };
    });
  }
  out.canBeReadOnly = checkBool('canBeReadOnly', o.canBeReadOnly, undefined);
  return out;
}

/**
 * A ZooKeeper client. Make one with `await Client.connect(hosts, options)`; close it with
 * `await client.close()`. Emits `'state'` with `'CONNECTED' | 'SUSPENDED' | 'RECONNECTED' |
 * 'LOST' | 'READ_ONLY'`. While open it keeps the process alive, like a socket (see `unref()`).
 */
class Client extends EventEmitter {
  #native;
  #keepAlive;
  #hosts;

  constructor(token, nativeClient, hosts) {
    super();
    if (token !== constructing) throw invalid('use `await Client.connect(hosts, options)` to make a Client');
    this.#native = nativeClient;
    this.#hosts = hosts;
    const self = new WeakRef(this);
    // The native side holds this function (weakly, for the event loop); the WeakRef lets an
    // unclosed, unreachable Client be collected.
    nativeClient.setEmitter((name, payload) => {
      self.deref()?.emit(name, payload);
    });
    this.#keepAlive = setInterval(() => {}, 2 ** 30);
    keepAliveRegistry.register(this, this.#keepAlive, this);
  }

  /**
   * Connects to `hosts` (`'host:port[,host:port...][/chroot]'`). Options: `sessionTimeoutMs`
   * (60000), `connectionTimeoutMs` (15000), `retry` (ExponentialBackoffRetry(1000, 3)),
   * `namespace`, `auth` ({ scheme, credentials } or a list), `acl` ([{ perms, scheme, id }]),
   * `canBeReadOnly`.
   */
  static connect(hosts, options) {
    return rejecting(async () => {
      checkString('hosts', hosts);
      const opts = connectOptions(options);
      const nativeClient = await native.NativeClient.connect(hosts, opts);
      return new Client(constructing, nativeClient, hosts);
    });
  }

  /** @internal the native client, for the recipes of this module. */
  static _native(client) {
    if (!(client instanceof Client)) throw invalid(`client must be a Client, got ${describe(client)}`);
    return client.#native;
  }

  /** The current connection state. */
  get state() {
    return this.#native.state;
  }

  /** The current session id, as a BigInt (0n once closed). */
  get sessionId() {
    return this.#native.sessionId;
  }

  /** Whether `close()` was called. */
  get isClosed() {
    return this.#native.isClosed;
  }

  /** The namespace prefix: `''` or `'/ns'`. */
  get namespace() {
    return this.#native.namespace;
  }

  /**
   * Closes the session: ephemeral nodes (locks, latches) vanish at once, pending waits reject
   * with `ZKR_CLOSED`, later calls reject with `ZKR_CLOSED`. Nothing of zkrecipes keeps the
   * event loop alive afterwards. Closing twice is fine.
   */
  async close() {
    clearInterval(this.#keepAlive);
    keepAliveRegistry.unregister(this);
    await this.#native.close();
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
   * prefix, if any). Options: `mode` ('PERSISTENT'), `createParents` (false, parents are
   * CONTAINER nodes), `protected` (false, Curator's protected mode).
   */
  create(path, data, options) {
    return rejecting(() => {
      checkPath('path', path);
      const buf = toBuffer('data', data);
      const o = checkOptions('options', options);
      const mode = o.mode ?? 'PERSISTENT';
      if (!CREATE_MODES.has(mode)) throw invalid(`mode must be one of ${[...CREATE_MODES].join(', ')}, got ${describe(mode)}`);
      return this.#native.create(
        path,
        buf,
        mode,
        checkBool('createParents', o.createParents, false),
        checkBool('protected', o.protected, false),
      );
    });
  }

  /**
   * Resolves to `{ data: Buffer, stat }`; rejects with `ZKR_NO_NODE` if there is no node.
   * `{ watch }` (a function) leaves a one-shot watch: `watch({ type, path })` is called once,
   * `type` being 'CHANGED' | 'DELETED' (or 'SESSION_ENDED' if the session ends first).
   */
  getData(path, options) {
    return rejecting(() => this.#native.getData(checkPath('path', path), watchOption(options)));
  }

  /** Sets a node's data (only at `version`, if given); resolves to the new stat. */
  setData(path, data, options) {
    return rejecting(() => {
      checkPath('path', path);
      const buf = toBuffer('data', data) ?? Buffer.alloc(0);
      const o = checkOptions('options', options);
      return this.#native.setData(path, buf, checkInt32('version', o.version, { min: -1 }));
    });
  }

  /**
   * Resolves to the node's stat, or `null` if it does not exist. `{ watch }` leaves a one-shot
   * watch: 'CREATED' | 'DELETED' | 'CHANGED' (see `getData`).
   */
  exists(path, options) {
    return rejecting(() => this.#native.exists(checkPath('path', path), watchOption(options)));
  }

  /**
   * Resolves to the names of the node's children. `{ watch }` leaves a one-shot watch on the
   * children (see `getData`).
   */
  getChildren(path, options) {
    return rejecting(() => this.#native.getChildren(checkPath('path', path), watchOption(options)));
  }

  /**
   * Deletes a node. Options: `version` (only at that version), `guaranteed` (keep retrying in
   * the background after connection loss, Curator's guaranteed()), `recursive` (children first).
   */
  delete(path, options) {
    return rejecting(() => {
      checkPath('path', path);
      const o = checkOptions('options', options);
      return this.#native.delete(
        path,
        checkInt32('version', o.version, { min: -1 }),
        checkBool('guaranteed', o.guaranteed, false),
        checkBool('recursive', o.recursive, false),
      );
    });
  }

  /** Testing only: expires this client's session on the server (Curator's KillSession). */
  _expireSessionForTesting() {
    return this.#native.expireSessionForTesting();
  }

  /** Testing only: requests sent so far, per operation. */
  _requestCounts() {
    return this.#native.requestCounts();
  }

  toString() {
    return `Client(${this.#hosts}, ${this.state})`;
  }
}

// ---------------------------------------------------------------------------------------------
// Native events -> EventEmitter. The native side holds only this forwarding function (weakly
// for the event loop); the WeakRef lets an unreachable recipe be collected.

function forwardTo(target, translate) {
  const ref = new WeakRef(target);
  return (name, payload, extra) => {
    const t = ref.deref();
    if (t !== undefined) {
      const args = translate ? translate(name, payload, extra) : [payload];
      t.emit(name, ...args);
    }
  };
}

// 'lost' and 'revoke' carry the owner whose hold was lost / is asked for.
function lockEvents(name, payload) {
  if (name === 'lost' || name === 'revoke') return [Owner._byId(payload) ?? payload];
  return [payload];
}

function lockCallOptions(options) {
  const o = checkOptions('options', options);
  return { timeoutMs: checkMs('timeoutMs', o.timeoutMs), owner: resolveOwner(o.owner) };
}

const LOST_POLICIES = new Set(['standard', 'session']);

function lostPolicyOption(o) {
  const p = o.lostPolicy;
  if (p === undefined || p === null) return undefined;
  if (!LOST_POLICIES.has(p)) throw invalid(`lostPolicy must be 'standard' or 'session', got ${describe(p)}`);
  return p;
}

// The shared body of withLock for every owner-based lock.
async function withLockBody(lock, fn, options) {
  checkFunction('fn', fn);
  const o = checkOptions('options', options);
  const timeoutMs = checkMs('timeoutMs', o.timeoutMs);
  // Inside a context entered by withLock/owner.run the owner is that context's (so a nested
  // withLock re-enters); outside any, a new owner, so concurrent withLock calls contend.
  const owner = o.owner !== undefined && o.owner !== null ? resolveOwner(o.owner) : ownerContext.getStore() ?? new Owner();
  const acquired = await lock.acquire({ timeoutMs, owner });
  if (!acquired) {
    throw zkrError(ErrorCode.TIMEOUT, `withLock ${lock.path}: not acquired within ${timeoutMs} ms`);
  }
  let result;
  try {
    result = await ownerContext.run(owner, fn);
  } catch (err) {
    try {
      await lock.release({ owner });
    } catch (releaseErr) {
      // The callback's error wins; the release's is kept beside it.
      if (err !== null && typeof err === 'object') err.releaseError = releaseErr;
    }
    throw err;
  }
  await lock.release({ owner });
  return result;
}

/**
 * Curator's InterProcessMutex: a reentrant lock across processes. Reentrancy is per owner
 * (see `Owner`); another owner contends, also in this process. Emits `'lost'` (owner) when a
 * hold's session is SUSPENDED or LOST (see the `lostPolicy` option).
 */
class InterProcessMutex extends EventEmitter {
  #native;

  constructor(client, path, options) {
    super();
    if (client === constructing) {
      // Made by InterProcessReadWriteLock from a native half.
      this.#native = path(forwardTo(this, lockEvents));
      return;
    }
    const nc = Client._native(client);
    checkPath('path', path);
    const o = checkOptions('options', options);
    this.#native = new native.NativeMutex(nc, path, forwardTo(this, lockEvents), lostPolicyOption(o));
  }

  /** The lock path. */
  get path() {
    return this.#native.path;
  }

  /**
   * Acquires the lock for the current owner (or `{ owner }`); waits forever, or at most
   * `{ timeoutMs }`. Resolves to whether it was acquired. The same owner re-enters at once.
   */
  acquire(options) {
    return rejecting(() => {
      const { timeoutMs, owner } = lockCallOptions(options);
      return this.#native.acquire(owner.id, timeoutMs);
    });
  }

  /** Releases one acquire of the current owner (or `{ owner }`); `ZKR_NOT_OWNER` if it holds none. */
  release(options) {
    return rejecting(() => {
      const o = checkOptions('options', options);
      return this.#native.release(resolveOwner(o.owner).id);
    });
  }

  /**
   * Runs `fn` holding the lock, in an async context owned by the holder (so a nested
   * `withLock` on the same lock re-enters), and releases it afterwards, even if `fn` throws.
   * Options: `timeoutMs` (rejects with `ZKR_TIMEOUT` if not acquired in time), `owner`.
   */
  withLock(fn, options) {
    return rejecting(() => withLockBody(this, fn, options));
  }

  /** Whether the current owner (or `owner`) holds the lock. */
  isOwnedByCurrentOwner(owner) {
    return this.#native.isOwnedBy(resolveOwner(owner).id);
  }

  /** Whether any owner in this process holds the lock through this object. */
  isAcquiredInThisProcess() {
    return this.#native.isAcquiredInThisProcess();
  }

  /** Whether the current owner (or `owner`) holds the lock and the hold is still trustworthy. */
  isHeldValid(owner) {
    return this.#native.isHeldValid(resolveOwner(owner).id);
  }

  /**
   * The fencing token of the current owner's hold (a BigInt, strictly greater than any earlier
   * holder's), or `null` if it holds nothing.
   */
  get fencingToken() {
    return this.#native.fencingToken(currentOwner().id);
  }

  /** The fencing token of `owner`'s hold, or `null`. */
  fencingTokenOf(owner) {
    return this.#native.fencingToken(resolveOwner(owner).id);
  }

  /** The path of the current owner's lock node, or `null`. */
  get lockNode() {
    return this.#native.lockNode(currentOwner().id);
  }

  /** Resolves to the lock's nodes in line order (the holder first). */
  participantNodes() {
    return rejecting(() => this.#native.participantNodes());
  }

  /**
   * Curator's makeRevocable: from now on this lock's nodes are watched for revocation requests
   * (`attemptRevoke(client, node)` from any process or face). Each request emits `'revoke'` with
   * the `Owner` of that hold; `listener`, if given, is added as a `'revoke'` listener. Revocation
   * is cooperative: release (`lock.release({ owner })`) or ignore it. Applies to acquires that
   * start after this call. Returns the lock.
   */
  makeRevocable(listener) {
    if (listener !== undefined && listener !== null && typeof listener !== 'function') {
      throw invalid(`listener must be a function, got ${describe(listener)}`);
    }
    this.#native.makeRevocable(forwardTo(this, lockEvents));
    if (typeof listener === 'function') this.on('revoke', listener);
    return this;
  }
}

/**
 * Curator's Revoker.attemptRevoke: asks the holder of lock node `nodePath` (one of
 * `participantNodes()`, any face's or Curator's) to release, by writing `__REVOKE__` into it.
 * Resolves once written; a node that is already gone is fine. The holder decides.
 */
function attemptRevoke(client, nodePath) {
  return rejecting(() => {
    const nc = Client._native(client);
    checkPath('nodePath', nodePath);
    return native.attemptRevoke(nc, nodePath);
  });
}

/**
 * Curator's InterProcessReadWriteLock: `readLock` (shared) and `writeLock` (exclusive), both
 * InterProcessMutex-shaped; the write holder may also take the read lock (downgrade).
 */
class InterProcessReadWriteLock {
  #read;
  #write;

  constructor(client, path, options) {
    const nc = Client._native(client);
    checkPath('path', path);
    const o = checkOptions('options', options);
    const policy = lostPolicyOption(o);
    const rw = new native.NativeReadWriteLock(nc, path);
    this.#read = new InterProcessMutex(constructing, (emit) => rw.readLock(emit, policy));
    this.#write = new InterProcessMutex(constructing, (emit) => rw.writeLock(emit, policy));
  }

  /** The read lock (Curator's readLock()); the same object every call. */
  readLock() {
    return this.#read;
  }

  /** The write lock (Curator's writeLock()); the same object every call. */
  writeLock() {
    return this.#write;
  }
}

/**
 * Curator's InterProcessSemaphoreMutex: a mutex that is NOT reentrant (a second acquire waits,
 * even from the same code) and that this object may release whoever acquired it.
 */
class InterProcessSemaphoreMutex {
  #native;

  constructor(client, path) {
    const nc = Client._native(client);
    checkPath('path', path);
    this.#native = new native.NativeSemaphoreMutex(nc, path);
  }

  /** Acquires; waits forever or at most `{ timeoutMs }`; resolves to whether it was acquired. */
  acquire(options) {
    return rejecting(() => {
      const o = checkOptions('options', options);
      return this.#native.acquire(checkMs('timeoutMs', o.timeoutMs));
    });
  }

  /** Releases; `ZKR_NOT_OWNER` if this object does not hold it. */
  release() {
    return rejecting(() => this.#native.release());
  }

  /** Runs `fn` holding the lock and releases it afterwards (`ZKR_TIMEOUT` if not acquired in time). */
  withLock(fn, options) {
    return rejecting(async () => {
      checkFunction('fn', fn);
      const o = checkOptions('options', options);
      const timeoutMs = checkMs('timeoutMs', o.timeoutMs);
      if (!(await this.acquire({ timeoutMs }))) {
        throw zkrError(ErrorCode.TIMEOUT, `withLock: semaphore mutex not acquired within ${timeoutMs} ms`);
      }
      try {
        return await fn();
      } finally {
        await this.release();
      }
    });
  }

  /** Whether this object holds it. */
  isAcquiredInThisProcess() {
    return this.#native.isAcquiredInThisProcess();
  }

  /** The path of the lease node held, or `null`. */
  get leaseNode() {
    return this.#native.leaseNode;
  }
}

/** One lease of an InterProcessSemaphoreV2. */
class Lease {
  #native;

  constructor(token, nativeLease) {
    if (token !== constructing) throw invalid('leases come from InterProcessSemaphoreV2.acquire()');
    this.#native = nativeLease;
  }

  /** The lease node's path. */
  get path() {
    return this.#native.path;
  }

  /** The lease node's czxid (a BigInt that grows with every lease). */
  get czxid() {
    return this.#native.czxid;
  }

  /** Whether it was returned. */
  get isReturned() {
    return this.#native.isReturned;
  }

  /** Returns the lease; `ZKR_NOT_OWNER` if it was returned already. */
  release() {
    return rejecting(() => this.#native.release());
  }
}

/** Curator's InterProcessSemaphoreV2: at most `maxLeases` leases at a time, across processes. */
class InterProcessSemaphoreV2 {
  #native;

  constructor(client, path, maxLeases) {
    const nc = Client._native(client);
    checkPath('path', path);
    const max = checkUint32('maxLeases', maxLeases);
    if (max === undefined) throw invalid('maxLeases is required (a positive integer)');
    this.#native = new native.NativeSemaphoreV2(nc, path, max);
  }

  /**
   * Acquires `qty` leases (1) all or nothing; waits forever or at most `{ timeoutMs }`.
   * Resolves to the leases, or `null` if they were not all acquired in time.
   */
  acquire(options) {
    return rejecting(async () => {
      const o = checkOptions('options', options);
      const qty = checkUint32('qty', o.qty) ?? 1;
      const leases = await this.#native.acquire(qty, checkMs('timeoutMs', o.timeoutMs));
      return leases === null ? null : leases.map((l) => new Lease(constructing, l));
    });
  }

  /** Returns a lease (Curator's returnLease). */
  returnLease(lease) {
    return rejecting(() => {
      if (!(lease instanceof Lease)) throw invalid(`lease must be a Lease, got ${describe(lease)}`);
      return lease.release();
    });
  }

  /** Returns every lease (Curator's returnAll); rejects with the first error after trying all. */
  returnAll(leases) {
    return rejecting(async () => {
      if (!Array.isArray(leases)) throw invalid(`leases must be an array of Lease, got ${describe(leases)}`);
      const results = await Promise.allSettled(leases.map((l) => this.returnLease(l)));
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    });
  }

  /** Resolves to the lease nodes in sequence order. */
  participantNodes() {
    return rejecting(() => this.#native.participantNodes());
  }

  /** The most leases held at once. */
  get maxLeases() {
    return this.#native.maxLeases;
  }

  /** The semaphore's path. */
  get path() {
    return this.#native.path;
  }
}

/** Curator's InterProcessMultiLock: mutexes at several paths, taken all or none. */
class InterProcessMultiLock {
  #native;
  #paths;

  constructor(client, paths) {
    const nc = Client._native(client);
    if (!Array.isArray(paths)) throw invalid(`paths must be an array of paths, got ${describe(paths)}`);
    paths.forEach((p, i) => checkPath(`paths[${i}]`, p));
    this.#paths = [...paths];
    this.#native = new native.NativeMultiLock(nc, this.#paths);
  }

  /** The lock paths. */
  get paths() {
    return [...this.#paths];
  }

  /** The lock's path, for messages: the paths joined with ','. */
  get path() {
    return this.#paths.join(',');
  }

  /** Acquires every lock for the current owner (or `{ owner }`); resolves to whether all were. */
  acquire(options) {
    return rejecting(() => {
      const { timeoutMs, owner } = lockCallOptions(options);
      return this.#native.acquire(owner.id, timeoutMs);
    });
  }

  /** Releases every lock of the current owner (or `{ owner }`). */
  release(options) {
    return rejecting(() => {
      const o = checkOptions('options', options);
      return this.#native.release(resolveOwner(o.owner).id);
    });
  }

  /** Like InterProcessMutex.withLock. */
  withLock(fn, options) {
    return rejecting(() => withLockBody(this, fn, options));
  }

  /** Whether the locks are held in this process. */
  isAcquiredInThisProcess() {
    return this.#native.isAcquiredInThisProcess();
  }
}

// ---------------------------------------------------------------------------------------------
// Leader election

const CLOSE_MODES = new Set(['SILENT', 'NOTIFY_LEADER']);

function closeModeOption(v) {
  if (v === undefined || v === null) return undefined;
  if (!CLOSE_MODES.has(v)) throw invalid(`closeMode must be 'SILENT' or 'NOTIFY_LEADER', got ${describe(v)}`);
  return v;
}

function idOption(v) {
  if (v === undefined || v === null) return '';
  return checkString('id', v);
}

/**
 * Curator's LeaderLatch. `await latch.start()` joins; emits `'isLeader'` and `'notLeader'`;
 * `await latch.await({ timeoutMs })` waits for leadership. Options: `id`, `closeMode`
 * ('SILENT' | 'NOTIFY_LEADER'), `lostPolicy` ('standard' | 'session').
 */
class LeaderLatch extends EventEmitter {
  #native;

  constructor(client, path, options) {
    super();
    const nc = Client._native(client);
    checkPath('path', path);
    const o = checkOptions('options', options);
    this.#native = new native.NativeLeaderLatch(
      nc,
      path,
      idOption(o.id),
      forwardTo(this),
      closeModeOption(o.closeMode),
      lostPolicyOption(o),
    );
  }

  /** Joins the election (once). */
  start() {
    return rejecting(() => this.#native.start());
  }

  /** Resolves to whether this participant leads, waiting forever or at most `{ timeoutMs }`. */
  await(options) {
    return rejecting(() => {
      const o = checkOptions('options', options);
      return this.#native.await(checkMs('timeoutMs', o.timeoutMs));
    });
  }

  /** Whether this participant leads now. */
  hasLeadership() {
    return this.#native.hasLeadership();
  }

  /** The leadership epoch (our node's czxid, a BigInt) while leading, else `null`. */
  get leadershipEpoch() {
    return this.#native.leadershipEpoch;
  }

  /** Our latch node's path, once created. */
  get ourPath() {
    return this.#native.ourPath;
  }

  /** 'LATENT' | 'STARTED' | 'CLOSED'. */
  get state() {
    return this.#native.state;
  }

  /** The participant id. */
  get id() {
    return this.#native.id;
  }

  /** The latch path. */
  get path() {
    return this.#native.path;
  }

  /** Resolves to the leader `{ id, isLeader }` (`{ id: '', isLeader: false }` if none). */
  getLeader() {
    return rejecting(() => this.#native.getLeader());
  }

  /** Resolves to every participant `[{ id, isLeader }]`, the leader first. */
  getParticipants() {
    return rejecting(() => this.#native.getParticipants());
  }

  /** Leaves the election (`{ closeMode }` overrides the latch's). */
  close(options) {
    return rejecting(() => {
      const o = checkOptions('options', options);
      return this.#native.close(closeModeOption(o.closeMode));
    });
  }
}

const CANCEL_CODES = {
  CONNECTION_SUSPENDED: ErrorCode.CONNECTION_LOSS,
  SESSION_LOST: ErrorCode.SESSION_EXPIRED,
  INTERRUPTED: 'ZKR_INTERRUPTED',
  CLOSED: ErrorCode.CLOSED,
};

/**
 * What `takeLeadership` gets for one term: `signal` (an AbortSignal aborted when leadership
 * is cancelled: connection SUSPENDED/LOST, interruptLeadership(), close()), `fencingToken`
 * (BigInt), `term`, `id`, `path`, `cancelReason`.
 */
class LeadershipContext {
  #native;
  #controller = new AbortController();

  constructor(token, nativeCtx) {
    if (token !== constructing) throw invalid('a LeadershipContext is made by LeaderSelector');
    this.#native = nativeCtx;
    const controller = this.#controller;
    const path = nativeCtx.path;
    nativeCtx.onCancel((_name, reason) => {
      const err = zkrError(CANCEL_CODES[reason] ?? ErrorCode.INTERNAL, `leadership of ${path} cancelled: ${reason}`);
      err.reason = reason;
      controller.abort(err);
    });
  }

  /** Aborted when leadership is cancelled; `signal.reason` is an Error with `code` and `reason`. */
  get signal() {
    return this.#controller.signal;
  }

  /** This term's fencing token (BigInt), strictly greater than any earlier leader's. */
  get fencingToken() {
    return this.#native.fencingToken;
  }

  /** Which term of this selector (1 for the first). */
  get term() {
    return this.#native.term;
  }

  /** The participant id. */
  get id() {
    return this.#native.id;
  }

  /** The leader path. */
  get path() {
    return this.#native.path;
  }

  /** 'CONNECTION_SUSPENDED' | 'SESSION_LOST' | 'INTERRUPTED' | 'CLOSED', or null. */
  get cancelReason() {
    return this.#native.cancelReason;
  }
}

/**
 * Who leads a LeaderLatch or LeaderSelector group on `path` (of any face, or Curator) without
 * taking part (etcd's Observe; Python's and C's LeaderObserver). One children watch on the group:
 * each join or leave costs one getChildren. Emits `'change'` with the new leader
 * (`{ id, isLeader }`; `{ id: '', isLeader: false }` when nobody leads).
 *
 *   const observer = await new LeaderObserver(client, '/leaders/billing').start();
 *   observer.leader;                                     // { id: 'host-a', isLeader: true }
 *   const next = await observer.waitChanged({ timeoutMs: 5000 });   // or null
 *   await observer.close();
 */
class LeaderObserver extends EventEmitter {
  #native;

  constructor(client, path) {
    super();
    const nc = Client._native(client);
    checkPath('path', path);
    this.#native = new native.NativeLeaderObserver(nc, path, forwardTo(this, observerEvents));
  }

  /** Starts observing; resolves to this observer once the current leader is known. */
  start() {
    return rejecting(async () => {
      await this.#native.start();
      return this;
    });
  }

  /** The group path. */
  get path() {
    return this.#native.path;
  }

  /** The leader as last seen, `{ id, isLeader }`; `null` before `start()` resolved or after `close()`. */
  get leader() {
    return this.#native.leader ?? null;
  }

  /**
   * Resolves to the next new leader since the last call (or `start()`), each change once; to
   * `null` once `{ timeoutMs }` passed (default: no limit). Rejects with `ZKR_CLOSED` once the
   * observer or its client is closed.
   */
  waitChanged(options) {
    return rejecting(() => {
      const o = checkOptions('options', options);
      return this.#native.waitChanged(checkMs('timeoutMs', o.timeoutMs));
    });
  }

  /** Stops observing (its watch is removed from the server). Idempotent. */
  close() {
    return rejecting(async () => {
      this.#native.close();
    });
  }
}

// 'change' carries (id, isLeader) from the native side.
function observerEvents(name, id, isLeader) {
  if (name === 'change') return [{ id, isLeader }];
  return [id];
}

/**
 * Curator's LeaderSelector: while `takeLeadership(ctx)` (async) runs, this participant leads;
 * when it returns, leadership passes on. Options: `id`, `autoRequeue` (false), `lostPolicy`.
 * An error thrown by `takeLeadership` is emitted as `'error'` (or a process warning when
 * nobody listens); it never becomes an unhandled rejection.
 */
class LeaderSelector extends EventEmitter {
  #native;

  constructor(client, path, takeLeadership, options) {
    super();
    const nc = Client._native(client);
    checkPath('path', path);
    checkFunction('takeLeadership', takeLeadership);
    const o = checkOptions('options', options);
    const autoRequeue = checkBool('autoRequeue', o.autoRequeue, false);
    const ref = new WeakRef(this);
    this.#native = new native.NativeLeaderSelector(
      nc,
      path,
      idOption(o.id),
      (nativeCtx) => {
        runTerm(ref, takeLeadership, nativeCtx);
      },
      lostPolicyOption(o),
    );
    if (autoRequeue) this.#native.autoRequeue();
  }

  /** Requeue after every term, by itself (Curator's autoRequeue()). */
  autoRequeue() {
    this.#native.autoRequeue();
    return this;
  }

  /** Joins the queue (returns at once; leadership comes through takeLeadership). */
  start() {
    this.#native.start();
  }

  /** Queues again after a term; whether it was queued now. */
  requeue() {
    return this.#native.requeue();
  }

  /** Cancels the current term (its `ctx.signal` aborts with reason INTERRUPTED). */
  interruptLeadership() {
    this.#native.interruptLeadership();
  }

  /** Whether this participant leads now. */
  hasLeadership() {
    return this.#native.hasLeadership();
  }

  /** The current term's fencing token (BigInt) while leading, else `null`. */
  get leadershipEpoch() {
    return this.#native.leadershipEpoch;
  }

  /** How many terms this selector has started. */
  get leadershipCount() {
    return this.#native.leadershipCount;
  }

  /** 'LATENT' | 'STARTED' | 'CLOSED'. */
  get state() {
    return this.#native.state;
  }

  /** The participant id. */
  get id() {
    return this.#native.id;
  }

  /** The leader path. */
  get path() {
    return this.#native.path;
  }

  /** Resolves to the leader `{ id, isLeader }`. */
  getLeader() {
    return rejecting(() => this.#native.getLeader());
  }

  /** Resolves to every participant in queue order. */
  getParticipants() {
    return rejecting(() => this.#native.getParticipants());
  }

  /** Leaves for good; resolves once the current term (if any) has ended. */
  close() {
    return rejecting(() => this.#native.close());
  }
}

// One leadership term: run the user's function, always tell the core when it is over.
async function runTerm(selectorRef, takeLeadership, nativeCtx) {
  const ctx = new LeadershipContext(constructing, nativeCtx);
  try {
    await takeLeadership(ctx);
  } catch (err) {
    const selector = selectorRef.deref();
    if (selector !== undefined && selector.listenerCount('error') > 0) {
      selector.emit('error', err);
    } else {
      process.emitWarning(`zkrecipes: takeLeadership of ${ctx.path} threw: ${err?.stack ?? err}`, {
        code: 'ZKR_TAKE_LEADERSHIP_ERROR',
      });
    }
  } finally {
    nativeCtx.finish();
  }
}

// ---------------------------------------------------------------------------------------------
// Counters

function atomicOptions(options) {
  const o = checkOptions('options', options);
  const out = {};
  if (o.retry !== undefined && o.retry !== null) {
    if (!(o.retry instanceof RetryPolicy)) throw invalid(`retry must be a retry policy, got ${describe(o.retry)}`);
    out.retry = { ...o.retry };
  }
  if (o.promotedToLock !== undefined && o.promotedToLock !== null) {
    const p = checkOptions('promotedToLock', o.promotedToLock);
    const promoted = { lockPath: checkPath('promotedToLock.lockPath', p.lockPath), timeoutMs: checkMs('promotedToLock.timeoutMs', p.timeoutMs) };
    if (p.retry !== undefined && p.retry !== null) {
      if (!(p.retry instanceof RetryPolicy)) throw invalid(`promotedToLock.retry must be a retry policy, got ${describe(p.retry)}`);
      promoted.retry = { ...p.retry };
    }
    out.promotedToLock = promoted;
  }
  return out;
}

function toInt32(what, v) {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < -2147483648 || v > 2147483647) {
    throw invalid(`${what} must be a 32-bit integer number, got ${describe(v)}`);
  }
  return v;
}

// The Curator-style API shared by both widths; `conv` checks and converts a JS value.
class CounterBase {
  #native;
  #conv;

  constructor(nativeCounter, conv) {
    this.#native = nativeCounter;
    this.#conv = conv;
  }

  /** The counter's path. */
  get path() {
    return this.#native.path;
  }

  /** Resolves to `{ succeeded: true, preValue, postValue, stats }` with the current value. */
  get() {
    return rejecting(() => this.#native.get());
  }

  /** Curator's add: resolves to an AtomicValue (check `succeeded`). */
  add(delta) {
    return rejecting(() => this.#native.add(this.#conv('delta', delta)));
  }

  /** Curator's subtract: resolves to an AtomicValue (check `succeeded`). */
  subtract(delta) {
    return rejecting(() => this.#native.subtract(this.#conv('delta', delta)));
  }

  /** Curator's increment: resolves to an AtomicValue (check `succeeded`). */
  increment() {
    return rejecting(() => this.#native.increment());
  }

  /** Curator's decrement: resolves to an AtomicValue (check `succeeded`). */
  decrement() {
    return rejecting(() => this.#native.decrement());
  }

  /** Curator's compareAndSet: sets `newValue` only if the value is `expected`. */
  compareAndSet(expected, newValue) {
    return rejecting(() => this.#native.compareAndSet(this.#conv('expected', expected), this.#conv('newValue', newValue)));
  }

  /** Curator's trySet: one optimistic set. */
  trySet(value) {
    return rejecting(() => this.#native.trySet(this.#conv('value', value)));
  }

  /** Curator's forceSet: sets whatever the value was. */
  forceSet(value) {
    return rejecting(() => this.#native.forceSet(this.#conv('value', value)));
  }

  /** Curator's initialize: creates the node with `value` if missing; resolves to whether it did. */
  initialize(value) {
    return rejecting(() => this.#native.initialize(this.#conv('value', value)));
  }

  /**
   * Adds `delta` and resolves to the new value, or rejects (`ZKR_TIMEOUT` after `{ timeoutMs }`,
   * `ZKR_OUTCOME_UNKNOWN` if a write's reply was lost, `ZKR_OVERFLOW`); never "not succeeded".
   */
  addAndGet(delta, options) {
    return rejecting(() => {
      const o = checkOptions('options', options);
      return this.#native.addAndGet(this.#conv('delta', delta), checkMs('timeoutMs', o.timeoutMs));
    });
  }
}

/**
 * Curator's DistributedAtomicLong: a 64-bit counter (8 bytes, big-endian) shared by every
 * client. Values come back as BigInt and are accepted as BigInt or safe-integer numbers.
 * Options: `retry` (the optimistic tries' policy), `promotedToLock` ({ lockPath, timeoutMs, retry }).
 */
class DistributedAtomicLong extends CounterBase {
  constructor(client, path, options) {
    const nc = Client._native(client);
    checkPath('path', path);
    super(new native.NativeAtomicLong(nc, path, atomicOptions(options)), toInt64);
  }
}

/** Curator's DistributedAtomicInteger: a 32-bit counter; values are numbers. */
class DistributedAtomicInteger extends CounterBase {
  constructor(client, path, options) {
    const nc = Client._native(client);
    checkPath('path', path);
    super(new native.NativeAtomicInteger(nc, path, atomicOptions(options)), toInt32);
  }
}

/**
 * Curator's SharedCount: a 32-bit count watched by every client. `await count.start()`, then
 * `count.count` answers from memory; emits `'change'` (value, version) and `'state'` (name).
 */
class SharedCount extends EventEmitter {
  #native;

  constructor(client, path, seed) {
    super();
    const nc = Client._native(client);
    checkPath('path', path);
    this.#native = new native.NativeSharedCount(nc, path, toInt32('seed', seed ?? 0), forwardTo(this, (name, payload, extra) => (name === 'change' ? [payload, extra] : [payload])));
  }

  /** Creates the node with the seed if missing, reads it and starts watching. */
  start() {
    return rejecting(() => this.#native.start());
  }

  /** The count as last seen (the seed before start). */
  get count() {
    return this.#native.count;
  }

  /** Curator's getCount(). */
  getCount() {
    return this.#native.count;
  }

  /** `{ version, value }`, for trySetCount. */
  getVersionedValue() {
    return this.#native.versionedValue();
  }

  /** Sets the count whatever it was. */
  setCount(count) {
    return rejecting(() => this.#native.setCount(toInt32('count', count)));
  }

  /** Sets the count only if it is still at `previous` ({ version, value }); resolves to whether it did. */
  trySetCount(previous, count) {
    return rejecting(() => {
      const p = checkOptions('previous', previous);
      return this.#native.trySetCount(toInt32('previous.version', p.version), toInt32('previous.value', p.value), toInt32('count', count));
    });
  }

  /** Stops watching (the node stays). */
  close() {
    this.#native.close();
  }

  /** The path. */
  get path() {
    return this.#native.path;
  }
}

module.exports = {
  Client,
  Owner,
  InterProcessMutex,
  InterProcessReadWriteLock,
  InterProcessSemaphoreMutex,
  InterProcessSemaphoreV2,
  InterProcessMultiLock,
  Lease,
  LeaderLatch,
  LeaderSelector,
  LeaderObserver,
  LeadershipContext,
  DistributedAtomicLong,
  DistributedAtomicInteger,
  SharedCount,
  attemptRevoke,
  ErrorCode,
  RetryPolicy,
  ExponentialBackoffRetry,
  BoundedExponentialBackoffRetry,
  RetryNTimes,
  RetryOneTime,
  RetryUntilElapsed,
  RetryForever,
  coreVersion: native.coreVersion(),
};
