// Barriers and queues: DistributedBarrier, DistributedDoubleBarrier, SimpleDistributedQueue and
// the DistributedQueue family (DistributedIdQueue, DistributedPriorityQueue,
// DistributedDelayQueue), with Curator's node names and item framing.
'use strict';

const { EventEmitter } = require('node:events');

const { native } = require('./native');
const args = require('./args');
const { Client } = require('./client');
const { forwardTo } = require('./events');
const alive = require('./alive');
const { invalid, describe } = require('./errors');

const data = (what, v) => args.buffer(what, v, { optional: false });

/** Curator's DistributedBarrier: waiters wait while the node at `path` exists. */
class DistributedBarrier {
  #native;

  constructor(client, path) {
    this.#native = new native.NativeBarrier(Client._native(client), args.path('path', path));
    this.path = path;
  }

  /** Sets the barrier (creates its node); already set is fine. */
  setBarrier() {
    return args.rejecting(() => this.#native.setBarrier());
  }

  /** Removes the barrier, releasing every waiter; not set is fine. */
  removeBarrier() {
    return args.rejecting(() => this.#native.removeBarrier());
  }

  /** Resolves to true once the barrier is removed, false after `{ timeoutMs }`. */
  waitOnBarrier(options) {
    return args.rejecting(() => this.#native.waitOnBarrier(args.timeoutOption(options)));
  }
}

/**
 * Curator's DistributedDoubleBarrier, one member: `enter()` resolves once `memberQty` members
 * are in (a threshold, not a limit), `leave()` once all have left. A wait resolves to true only
 * after a read shows its condition; a timed-out enter removes its member node.
 */
class DistributedDoubleBarrier {
  #native;

  constructor(client, path, memberQty) {
    this.#native = new native.NativeDoubleBarrier(
      Client._native(client),
      args.path('path', path),
      args.requiredUint32('memberQty', memberQty),
    );
    this.path = path;
    this.memberQty = memberQty;
  }

  /** This member's node name (a UUID). */
  get memberName() {
    return this.#native.memberName;
  }

  /** Enters; resolves to true once in, false after `{ timeoutMs }`. */
  enter(options) {
    return args.rejecting(() => this.#native.enter(args.timeoutOption(options)));
  }

  /** Leaves; resolves to true once every member has left, false after `{ timeoutMs }`. */
  leave(options) {
    return args.rejecting(() => this.#native.leave(args.timeoutOption(options)));
  }
}

/** Curator's SimpleDistributedQueue: `qn-<seq>` nodes of raw bytes; at-most-once delivery. */
class SimpleDistributedQueue {
  #native;

  constructor(client, path) {
    this.#native = new native.NativeSimpleQueue(Client._native(client), args.path('path', path));
    this.path = path;
  }

  /** Adds `data` (Buffer, Uint8Array or string); resolves to the item's node path. */
  offer(value) {
    return args.rejecting(() => this.#native.offer(data('data', value)));
  }

  /** Resolves to the head (removed) as a Buffer, or null after `{ timeoutMs }`. */
  take(options) {
    return args.rejecting(() => this.#native.take(args.timeoutOption(options)));
  }

  /** Resolves to the head (not removed), or null when empty. */
  peek() {
    return args.rejecting(() => this.#native.peek());
  }

  /** Resolves to the head (removed), or null at once when empty. */
  poll() {
    return args.rejecting(() => this.#native.poll());
  }
}

/**
 * One taken item: `data` (Buffer), `messages`, `fencingToken` (BigInt: the czxid of this
 * consumer's lock node; a later taker of the item gets a larger one), `node`, `id`. Valid until
 * `done()` (completes it exactly once, or rejects with `ZKR_SESSION_EXPIRED` when our lock went
 * with the session), `release()` or `giveBack()` (give it back).
 */
class QueueItem {
  #queue;
  #handle;

  constructor(queue, raw) {
    this.#queue = queue;
    this.#handle = raw.handle;
    this.data = raw.data;
    this.messages = raw.messages;
    this.fencingToken = raw.fencingToken;
    this.node = raw.node;
    this.id = raw.id;
    // An item collected before done(), fail(), release() or giveBack() (a loop body that threw)
    // is given back, as Python's and C's are: its lock would otherwise stay for the life of the
    // process.
    collectedItems.register(this, { queue, handle: raw.handle }, this);
  }

  /** Completes the item. */
  done() {
    collectedItems.unregister(this);
    return args.rejecting(() => this.#queue.itemDone(this.#handle));
  }

  /**
   * The consumer failed the item (Curator's consumer threw): with a lock path the queue's
   * `errorMode` puts it back at the tail (`'REQUEUE'`, the default) or deletes it (`'DELETE'`),
   * in one transaction that checks our lock; rejects as `done()` does. Without a lock path the
   * item was removed when taken: nothing to do.
   */
  fail() {
    collectedItems.unregister(this);
    return args.rejecting(() => this.#queue.itemFail(this.#handle));
  }

  /**
   * With a lock path, gives the item back where it was, without completing it (taken again
   * next). Without one the take removed the item and this does nothing: see `giveBack()`.
   */
  release() {
    collectedItems.unregister(this);
    return args.rejecting(() => this.#queue.itemRelease(this.#handle));
  }

  /**
   * Gives the item back for another take without completing it, whatever the queue: with a
   * lock path it is `release()` (our lock goes; the item stayed in the queue); without one the
   * item was removed when it was taken, so it is put back at the tail with its messages and its
   * key (priority, delay, id), as a failed item is requeued. For a consumer that will not
   * process an item nobody else has seen: consumption stays at most once. A put-back whose reply
   * was lost is not resent: rejects with `ZKR_OUTCOME_UNKNOWN`. An item already completed,
   * released or given back: `ZKR_INVALID_ARGUMENT`.
   */
  giveBack() {
    collectedItems.unregister(this);
    return args.rejecting(() => this.#queue.itemGiveBack(this.#handle));
  }
}

/** Items collected while held: given back (the native side keeps them until then). */
const collectedItems = new FinalizationRegistry(({ queue, handle }) => {
  try {
    Promise.resolve(queue.itemRelease(handle)).catch(() => {}); // already gone, or a closed queue
  } catch {
    // a closed queue refuses at once: nothing held any more
  }
});

const ERROR_MODES = ['REQUEUE', 'DELETE'];

function errorModeArg(what, v) {
  if (v === undefined || v === null) return undefined;
  if (!ERROR_MODES.includes(v)) throw invalid(`${what} must be one of ${ERROR_MODES.join(', ')}, got ${describe(v)}`);
  return v;
}

function queueOptions(options) {
  const o = args.options('options', options, ['lockPath', 'maxItems', 'errorMode']);
  return {
    lockPath: args.optionalString('lockPath', o.lockPath),
    maxItems: args.uint32('maxItems', o.maxItems),
    errorMode: errorModeArg('errorMode', o.errorMode),
  };
}

function messagesArg(values) {
  if (!Array.isArray(values)) throw invalid(`messages must be an array of Buffers, Uint8Arrays or strings, got ${describe(values)}`);
  return values.map((v, i) => data(`messages[${i}]`, v));
}

/**
 * What the DistributedQueue family shares: `take()`, `consume()` (an async iterator), `length()`,
 * `close()`, and `'state'` events (connection states; Curator's consumers hear none).
 */
class QueueBase extends EventEmitter {
  #native;

  constructor(client, path, kind, options, make) {
    super();
    const forward = forwardTo(this);
    if (make !== undefined) {
      this.#native = make(forward); // a shard of a QueueSharder
      this.path = this.#native.path;
    } else {
      this.#native = new native.NativeQueue(Client._native(client), args.path('path', path), kind, queueOptions(options), forward);
      this.path = path;
    }
  }

  _put(value, id, number, options) {
    return args.rejecting(() => this.#native.put(data('data', value), id, number, args.timeoutOption(options)));
  }

  _putMulti(values, number, options) {
    return args.rejecting(() => this.#native.putMulti(messagesArg(values), number, args.timeoutOption(options)));
  }

  /**
   * What `item.fail()` does (Curator's ErrorMode): `'REQUEUE'` (the default) or `'DELETE'`.
   * Setting it needs a lock path (ZKR_INVALID_ARGUMENT otherwise).
   */
  get errorMode() {
    return this.#native.errorMode;
  }

  set errorMode(mode) {
    this.#native.setErrorMode(errorModeArg('errorMode', mode) ?? describe(mode));
  }

  /**
   * Calls `listener({ node, messages, multi })` after every put or putMulti through this queue
   * that succeeded (Curator's QueuePutListener); the same as `on('put', listener)`.
   */
  addPutListener(listener) {
    return this.on('put', args.func('listener', listener));
  }

  /** Removes a put listener (`off('put', listener)`). */
  removePutListener(listener) {
    return this.off('put', listener);
  }

  _native() {
    return this.#native;
  }

  /** Resolves to the next QueueItem, or null after `{ timeoutMs }`. */
  async take(options) {
    const raw = await args.rejecting(() => this.#native.take(args.timeoutOption(options)));
    return raw === null ? null : new QueueItem(this.#native, raw);
  }

  /**
   * Items as they come: `for await (const item of queue.consume()) { ...; await item.done(); }`.
   * Ends when no item came within `{ timeoutMs }` (default: never).
   */
  async *consume(options) {
    const timeoutMs = args.timeoutOption(options);
    for (;;) {
      const item = await this.take({ timeoutMs });
      if (item === null) return;
      yield item;
    }
  }

  /** Resolves to the number of items now. */
  length() {
    return args.rejecting(() => this.#native.len());
  }

  /** Gives back every item still held and not completed. */
  close() {
    this.#native.close();
  }
}

/**
 * Curator's DistributedQueue; options `{ lockPath, maxItems, errorMode }` (lockPath: exactly
 * once).
 */
class DistributedQueue extends QueueBase {
  constructor(client, path, options, make) {
    super(client, path, 'queue', options, make);
  }

  /** Puts one item; resolves to false if a bounded queue had no room within `{ timeoutMs }`. */
  put(value, options) {
    return this._put(value, undefined, undefined, options);
  }

  /**
   * Puts `values` (at least one) as one item (Curator's putMulti: one node, handed to one
   * consumer together as `item.messages`); waits for room as `put`.
   */
  putMulti(values, options) {
    return this._putMulti(values, undefined, options);
  }
}

/** Curator's DistributedIdQueue: items carry an id and can be removed by it. */
class DistributedIdQueue extends QueueBase {
  constructor(client, path, options) {
    super(client, path, 'id', options);
  }

  /** Puts `value` with `id` (a non-empty string). */
  put(value, id, options) {
    return this._put(value, args.string('id', id), undefined, options);
  }

  /** Removes the items with `id` that no consumer holds; resolves to how many. */
  remove(id) {
    return args.rejecting(() => this._native().remove(args.string('id', id)));
  }
}

/** Curator's DistributedPriorityQueue: lower priorities first. */
class DistributedPriorityQueue extends QueueBase {
  constructor(client, path, options) {
    super(client, path, 'priority', options);
  }

  /** Puts `value` with `priority` (a 32-bit integer). */
  put(value, priority, options) {
    return this._put(value, undefined, args.requiredInt32('priority', priority), options);
  }

  /** Puts `values` as one item with `priority` (Curator's putMulti(items, priority)). */
  putMulti(values, priority, options) {
    return args.rejecting(() => this._putMulti(values, args.requiredInt32('priority', priority), options));
  }
}

/** Curator's DistributedDelayQueue: an item is handed out once its time has passed. */
class DistributedDelayQueue extends QueueBase {
  constructor(client, path, options) {
    super(client, path, 'delay', options);
  }

  /** Puts `value`, handed out from `delayUntil` (a Date, or epoch milliseconds) on. */
  put(value, delayUntil, options) {
    const ms = delayUntil instanceof Date ? delayUntil.getTime() : delayUntil;
    if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms <= 0) {
      return Promise.reject(invalid(`delayUntil must be a Date or positive epoch milliseconds, got ${describe(delayUntil)}`));
    }
    return this._put(value, undefined, ms, options);
  }

  /** Puts `values` as one item handed out from `delayUntil` on (Curator's putMulti(items, delayUntilEpoch)). */
  putMulti(values, delayUntil, options) {
    const ms = delayUntil instanceof Date ? delayUntil.getTime() : delayUntil;
    if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms <= 0) {
      return Promise.reject(invalid(`delayUntil must be a Date or positive epoch milliseconds, got ${describe(delayUntil)}`));
    }
    return this._putMulti(values, ms, options);
  }
}

/**
 * Curator's QueueSharder: DistributedQueue shards `queuePath/queue-<UUID>`; when a shard holds
 * `newQueueThreshold` items (counted every `thresholdCheckMs`), the sharders' leader (a
 * LeaderLatch at `leaderPath`, outside `queuePath`) adds one, up to `maxQueues` (Curator's
 * defaults: 10000, 30000, 10). With `lockPath`, shard S locks under `lockPath/S` (exactly once).
 * `getQueue()` picks a shard for puts; `take()` / `consume()` take from every shard and follow
 * new ones at once.
 */
class QueueSharder {
  #native;

  constructor(client, queuePath, leaderPath, options) {
    const o = args.options('options', options, ['lockPath', 'errorMode', 'newQueueThreshold', 'thresholdCheckMs', 'maxQueues']);
    this.#native = new native.NativeQueueSharder(Client._native(client), args.path('queuePath', queuePath),
      args.path('leaderPath', leaderPath), {
        lockPath: args.optionalString('lockPath', o.lockPath),
        errorMode: errorModeArg('errorMode', o.errorMode),
        newQueueThreshold: args.uint32('newQueueThreshold', o.newQueueThreshold),
        thresholdCheckMs: args.ms('thresholdCheckMs', o.thresholdCheckMs),
        maxQueues: args.uint32('maxQueues', o.maxQueues),
      });
    alive.belongsTo(this, client);
    this.path = queuePath;
  }

  /** Makes the path, takes up its shards (or adds the first), joins the election (until close(), referenced or not). */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => this.#native.start()));
  }

  /** Stops counting and leaves the election (shards and items stay); gives back items held. */
  close() {
    return alive.closing(this, () => args.rejecting(() => this.#native.close()));
  }

  /** A shard for puts (Curator's getQueue: one under the threshold, at random). */
  getQueue() {
    return new DistributedQueue(undefined, undefined, undefined, (forward) => this.#native.getQueue(forward));
  }

  /** The number of shards this sharder knows (Curator's getShardQty). */
  get shardQty() {
    return this.#native.shardQty;
  }

  /** The shards' paths, sorted (Curator's getQueuePaths). */
  get queuePaths() {
    return this.#native.queuePaths;
  }

  /** Whether this sharder leads (adds shards). */
  get isLeader() {
    return this.#native.isLeader;
  }

  /** Resolves to the next QueueItem of any shard, or null after `{ timeoutMs }`. */
  async take(options) {
    const raw = await args.rejecting(() => this.#native.take(args.timeoutOption(options)));
    return raw === null ? null : new QueueItem(this.#native, raw);
  }

  /** Items of every shard as they come; ends when none came within `{ timeoutMs }`. */
  async *consume(options) {
    const timeoutMs = args.timeoutOption(options);
    for (;;) {
      const item = await this.take({ timeoutMs });
      if (item === null) return;
      yield item;
    }
  }
}

module.exports = {
  DistributedBarrier,
  DistributedDoubleBarrier,
  SimpleDistributedQueue,
  QueueItem,
  DistributedQueue,
  DistributedIdQueue,
  DistributedPriorityQueue,
  DistributedDelayQueue,
  QueueSharder,
};
