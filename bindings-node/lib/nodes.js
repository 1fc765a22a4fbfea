// Nodes and membership: PersistentNode, PersistentTtlNode, GroupMember. Every decision
// (re-creates, ownership, conflicts) is the core's.
'use strict';

const { EventEmitter, on } = require('node:events');

const { native, nativeGetters } = require('./native');
const args = require('./args');
const { Client } = require('./client');
const { forwardTo } = require('./events');
const alive = require('./alive');

const natives = new WeakMap();

/**
 * Curator's PersistentNode: a node kept on the server while started — created again after a
 * delete, checked after every reconnect, created again after a session expiry. Another live
 * session's node at the path is never taken over: `waitForInitialCreate()` rejects with
 * `ZKR_CONFLICT` and that node is left untouched. Emits `'registered'`, `'unregistered'` and
 * `'conflict'` with the node's actual path. Options: `mode` (default 'EPHEMERAL'), `data`,
 * `protected`, `ttlMs` (required for the *_WITH_TTL modes).
 */
class PersistentNode extends EventEmitter {
  // `path`, `actualPath` (null until created), `data` (a Buffer), `registered`.
  static {
    nativeGetters(this, (n) => natives.get(n), ['path', 'actualPath', 'data', 'registered']);
  }

  constructor(client, path, options) {
    super();
    const nc = Client._native(client);
    const o = args.options('options', options, ['mode', 'data', 'protected', 'ttlMs']);
    alive.belongsTo(this, client);
    natives.set(
      this,
      new native.NativePersistentNode(
        nc,
        args.path('path', path),
        args.optionalString('mode', o.mode) ?? 'EPHEMERAL',
        args.buffer('data', o.data),
        args.bool('protected', o.protected, false),
        args.ms('ttlMs', o.ttlMs),
        forwardTo(this),
      ),
    );
  }

  /**
   * Starts keeping the node (in the background; see `waitForInitialCreate`), until close(),
   * referenced or not.
   */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => natives.get(this).start()));
  }

  /** Resolves to whether the node was first created (waiting without limit or `{ timeoutMs }`). */
  waitForInitialCreate(options) {
    return args.rejecting(() => natives.get(this).waitForInitialCreate(args.timeoutOption(options)));
  }

  /** Sets the node's data: written now when connected, else on the next create or reconnect. */
  setData(data) {
    natives.get(this).setData(args.buffer('data', data, { optional: false }));
  }

  /** Stops keeping the node and deletes it (our own node only). */
  close() {
    return alive.closing(this, () => args.rejecting(() => natives.get(this).close()));
  }
}

/**
 * Curator's PersistentTtlNode: a CONTAINER node kept at `path` and a child `path/touch` of
 * `ttlMs`, touched every `ttlMs / 2`; once its owner stops (closed, crashed, killed) the node is
 * gone within the TTL plus the server's container check interval. Closing does not delete it.
 * Options: `data`.
 */
class PersistentTtlNode {
  #native;

  // `path`.
  static {
    nativeGetters(this, (n) => n.#native, ['path']);
  }

  constructor(client, path, ttlMs, options) {
    const nc = Client._native(client);
    const o = args.options('options', options, ['data']);
    alive.belongsTo(this, client);
    this.#native = new native.NativePersistentTtlNode(nc, args.path('path', path), args.requiredMs('ttlMs', ttlMs), args.buffer('data', o.data));
  }

  /** Starts keeping the node and touching its child, until close(), referenced or not. */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => this.#native.start()));
  }

  /** Resolves to whether the node was first created (waiting without limit or `{ timeoutMs }`). */
  waitForInitialCreate(options) {
    return args.rejecting(() => this.#native.waitForInitialCreate(args.timeoutOption(options)));
  }

  /** Sets the node's data. */
  setData(data) {
    this.#native.setData(args.buffer('data', data, { optional: false }));
  }

  /** Stops touching and keeping the node (it goes once its TTL passes). */
  close() {
    return alive.closing(this, () => args.rejecting(() => this.#native.close()));
  }
}

const toMap = (pairs) => new Map(pairs);

/**
 * Curator's GroupMember: this member's ephemeral node `path/id` holding `payload`, kept like a
 * PersistentNode, and the group's membership. `await member.start()` resolves once registered
 * (rejects with `ZKR_CONFLICT` when another live session holds the id; its node is left
 * untouched). Emits `'change'` with each new membership (a Map id → Buffer); `for await (const
 * members of member)` iterates the same.
 */
class GroupMember extends EventEmitter {
  #native;

  // `path`, `id`.
  static {
    nativeGetters(this, (m) => m.#native, ['path', 'id']);
  }

  constructor(client, path, id, payload) {
    super();
    const nc = Client._native(client);
    const forward = forwardTo(this, (_name, pairs) => [toMap(pairs)]);
    alive.belongsTo(this, client);
    this.#native = new native.NativeGroupMember(nc, args.path('path', path), args.string('id', id), args.buffer('payload', payload), forward);
  }

  /** Joins the group (until close(), referenced or not); resolves once registered. */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => this.#native.start()));
  }

  /** Every member id → payload (this member's own included), as a Map. */
  currentMembers() {
    return toMap(this.#native.currentMembers());
  }

  /** Changes this member's payload (written now when connected, else on reconnect). */
  setThisData(payload) {
    this.#native.setThisData(args.buffer('payload', payload, { optional: false }));
  }

  /** Leaves the group (deletes this member's node, ours only). */
  close() {
    return alive.closing(this, () => args.rejecting(() => this.#native.close()));
  }

  /** Each new membership, as 'change' events (ends when the loop breaks). */
  async *[Symbol.asyncIterator]() {
    for await (const [members] of on(this, 'change')) yield members;
  }
}

// Transaction's home is the client module (as in the core); it stays importable from here.
const { Transaction } = require('./client');

module.exports = { PersistentNode, PersistentTtlNode, GroupMember, Transaction };
