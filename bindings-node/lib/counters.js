// Counters: DistributedAtomicLong, DistributedAtomicInteger and SharedCount.
'use strict';

const { EventEmitter } = require('node:events');

const { native, nativeGetters } = require('./native');
const { ErrorCode } = require('./vocabulary');
const { zkrError } = require('./errors');
const args = require('./args');
const { Client, retryOption } = require('./client');
const { forwardTo } = require('./events');

function atomicOptions(options) {
  const o = args.options('options', options, ['retry', 'promotedToLock']);
  const out = { retry: retryOption('retry', o.retry) };
  if (o.promotedToLock !== undefined && o.promotedToLock !== null) {
    const p = args.options('promotedToLock', o.promotedToLock, ['lockPath', 'timeoutMs', 'retry']);
    out.promotedToLock = {
      lockPath: args.path('promotedToLock.lockPath', p.lockPath),
      timeoutMs: args.ms('promotedToLock.timeoutMs', p.timeoutMs),
      retry: retryOption('promotedToLock.retry', p.retry),
    };
  }
  return out;
}

const int32 = (what, v) => args.requiredInt32(what, v);

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
    return args.rejecting(() => this.#native.get());
  }

  /** Curator's add: resolves to an AtomicValue (check `succeeded`). */
  add(delta) {
    return args.rejecting(() => this.#native.add(this.#conv('delta', delta)));
  }

  /** Curator's subtract: resolves to an AtomicValue (check `succeeded`). */
  subtract(delta) {
    return args.rejecting(() => this.#native.subtract(this.#conv('delta', delta)));
  }

  /** Curator's increment: resolves to an AtomicValue (check `succeeded`). */
  increment() {
    return args.rejecting(() => this.#native.increment());
  }

  /** Curator's decrement: resolves to an AtomicValue (check `succeeded`). */
  decrement() {
    return args.rejecting(() => this.#native.decrement());
  }

  /** Curator's compareAndSet: sets `newValue` only if the value is `expected`. */
  compareAndSet(expected, newValue) {
    return args.rejecting(() => this.#native.compareAndSet(this.#conv('expected', expected), this.#conv('newValue', newValue)));
  }

  /** Curator's trySet: one optimistic set. */
  trySet(value) {
    return args.rejecting(() => this.#native.trySet(this.#conv('value', value)));
  }

  /** Curator's forceSet: sets whatever the value was. */
  forceSet(value) {
    return args.rejecting(() => this.#native.forceSet(this.#conv('value', value)));
  }

  /** Curator's initialize: creates the node with `value` if missing; resolves to whether it did. */
  initialize(value) {
    return args.rejecting(() => this.#native.initialize(this.#conv('value', value)));
  }

  /**
   * Adds `delta` and resolves to the new value, or rejects (`ZKR_TIMEOUT` after `{ timeoutMs }`,
   * `ZKR_OUTCOME_UNKNOWN` if a write's reply was lost, `ZKR_OVERFLOW`); never "not succeeded".
   */
  addAndGet(delta, options) {
    return args.rejecting(() => this.#native.addAndGet(this.#conv('delta', delta), args.timeoutOption(options)));
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
    super(new native.NativeAtomicLong(nc, args.path('path', path), atomicOptions(options)), args.int64);
  }
}

/** Curator's DistributedAtomicInteger: a 32-bit counter; values are numbers. */
class DistributedAtomicInteger extends CounterBase {
  constructor(client, path, options) {
    const nc = Client._native(client);
    super(new native.NativeAtomicInteger(nc, args.path('path', path), atomicOptions(options)), int32);
  }
}

/**
 * Curator's SharedCount: a 32-bit count watched by every client. `await count.start()`, then
 * `count.count` answers from memory; emits `'change'` (value, version) and `'state'` (name).
 * When the node is overwritten with data that is not a count, it emits `'error'` (an Error with
 * code `ZKR_CORRUPTED_DATA` and the data `version`; a process warning when nobody listens to
 * `'error'`), and `count`, `getCount()` and `getVersionedValue()` throw `ZKR_CORRUPTED_DATA`
 * until a valid value is written (Curator keeps the stale count silently).
 */
class SharedCount extends EventEmitter {
  #native;

  // `count` (as last seen; the seed before start), `path`.
  static {
    nativeGetters(this, (c) => c.#native, ['count', 'path']);
  }

  constructor(client, path, seed) {
    super();
    const nc = Client._native(client);
    args.path('path', path);
    const translate = (name, payload, extra) => (name === 'change' ? [payload, extra] : [payload]);
    const forward = forwardTo(this, translate);
    const ref = new WeakRef(this);
    const emit = (name, payload, extra) => {
      if (name === 'corrupted') ref.deref()?.#corrupted(path, payload);
      else forward(name, payload, extra);
    };
    this.#native = new native.NativeSharedCount(nc, path, int32('seed', seed ?? 0), emit);
  }

  #corrupted(path, version) {
    const err = zkrError(ErrorCode.CORRUPTED_DATA, `shared count ${path}: the node holds data that is not a count (data version ${version})`);
    err.version = version;
    if (this.listenerCount('error') > 0) this.emit('error', err);
    else process.emitWarning(err.message, { code: ErrorCode.CORRUPTED_DATA });
  }

  /** Creates the node with the seed if missing, reads it and starts watching. */
  start() {
    return args.rejecting(() => this.#native.start());
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
    return args.rejecting(() => this.#native.setCount(int32('count', count)));
  }

  /** Sets the count only if it is still at `previous` ({ version, value }); resolves to whether it did. */
  trySetCount(previous, count) {
    return args.rejecting(() => {
      const p = args.options('previous', previous, ['version', 'value']);
      return this.#native.trySetCount(int32('previous.version', p.version), int32('previous.value', p.value), int32('count', count));
    });
  }

  /** Stops watching (the node stays). */
  close() {
    this.#native.close();
  }
}

module.exports = { DistributedAtomicLong, DistributedAtomicInteger, SharedCount };
