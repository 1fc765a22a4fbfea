// Counters and values: DistributedAtomicLong, DistributedAtomicInteger, SharedCount,
// DistributedAtomicValue, SharedValue, CachedAtomicLong and CachedAtomicInteger.
'use strict';

const { EventEmitter } = require('node:events');

const { native, nativeGetters } = require('./native');
const { ErrorCode } = require('./vocabulary');
const { zkrError } = require('./errors');
const { registerNative, nativeOf } = require('./handles');
const args = require('./args');
const { Client, retryOption } = require('./client');
const { forwardTo } = require('./events');
const alive = require('./alive');

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
    registerNative(this, nativeCounter);
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
    alive.belongsTo(this, client);
    const translate = (name, payload, extra) => (name === 'change' ? [payload, extra] : [payload]);
    const forward = forwardTo(this, translate);
    const ref = new WeakRef(this);
    const emit = (name, payload, extra) => {
      if (name === 'corrupted') ref.deref()?.#corrupted(path, payload);
      else forward(name, payload, extra);
    };
    this.#native = new native.NativeSharedCount(nc, path, int32('seed', seed ?? 0), emit);
    registerNative(this, this.#native);
  }

  #corrupted(path, version) {
    const err = zkrError(ErrorCode.CORRUPTED_DATA, `shared count ${path}: the node holds data that is not a count (data version ${version})`);
    err.version = version;
    if (this.listenerCount('error') > 0) this.emit('error', err);
    else process.emitWarning(err.message, { code: ErrorCode.CORRUPTED_DATA });
  }

  /** Creates the node with the seed if missing, reads it and starts watching (until close(), referenced or not). */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => this.#native.start()));
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
    alive.closing(this, () => this.#native.close());
  }
}

/**
 * Curator's SharedValue: bytes watched by every client, with versioned (compare-and-set)
 * writes. `await value.start()`, then `getValue()` answers from memory; emits `'change'`
 * (value, version) and `'state'` (name): Curator's SharedValueListener hears both. Values are
 * Buffers (accepted as Buffer, Uint8Array or string). SharedCount is this over a 4-byte int.
 */
class SharedValue extends EventEmitter {
  #native;

  // `path`.
  static {
    nativeGetters(this, (v) => v.#native, ['path']);
  }

  constructor(client, path, seed) {
    super();
    const nc = Client._native(client);
    args.path('path', path);
    alive.belongsTo(this, client);
    const translate = (name, payload, extra) => (name === 'change' ? [payload, extra] : [payload]);
    this.#native = new native.NativeSharedValue(nc, path, args.buffer('seed', seed) ?? Buffer.alloc(0), forwardTo(this, translate));
  }

  /** Creates the node with the seed if missing, reads it and starts watching (until close(), referenced or not). */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => this.#native.start()));
  }

  /** Curator's getValue(): the bytes as last seen (the seed before start). */
  getValue() {
    return this.#native.versionedValue().value;
  }

  /** `{ version, value }`, for trySetValue. */
  getVersionedValue() {
    return this.#native.versionedValue();
  }

  /** Sets the value whatever it was. */
  setValue(value) {
    return args.rejecting(() => this.#native.setValue(args.buffer('value', value, { optional: false })));
  }

  /**
   * Sets the value only if it is still at `previous` ({ version, value }, from
   * getVersionedValue); resolves to whether it did (when not, the fresh value has been read).
   * Rejects with ZKR_OUTCOME_UNKNOWN if the write's reply was lost and its fate cannot be known.
   */
  trySetValue(previous, value) {
    return args.rejecting(() => {
      const p = args.options('previous', previous, ['version', 'value']);
      return this.#native.trySetValue(
        int32('previous.version', p.version),
        args.buffer('previous.value', p.value, { optional: false }),
        args.buffer('value', value, { optional: false }),
      );
    });
  }

  /** Stops watching (the node stays). */
  close() {
    alive.closing(this, () => this.#native.close());
  }
}

const bytes = (what, v) => args.buffer(what, v, { optional: false });

/**
 * Curator's DistributedAtomicValue: bytes set atomically in one node. Resolves to AtomicValues
 * whose values are Buffers, or `null` where the node does not exist (Curator's null); check
 * `succeeded`. Options as the counters': `retry`, `promotedToLock`.
 */
class DistributedAtomicValue {
  #native;

  constructor(client, path, options) {
    const nc = Client._native(client);
    this.#native = new native.NativeAtomicValue(nc, args.path('path', path), atomicOptions(options));
  }

  /** The value's path. */
  get path() {
    return this.#native.path;
  }

  /** Resolves to `{ succeeded: true, preValue, postValue, stats }` with the current bytes. */
  get() {
    return args.rejecting(() => this.#native.get());
  }

  /** Curator's compareAndSet: sets `newValue` only if the node holds exactly `expected`. */
  compareAndSet(expected, newValue) {
    return args.rejecting(() => this.#native.compareAndSet(bytes('expected', expected), bytes('newValue', newValue)));
  }

  /** Curator's trySet: the optimistic tries, then the promoted lock (check `succeeded`). */
  trySet(value) {
    return args.rejecting(() => this.#native.trySet(bytes('value', value)));
  }

  /** Curator's forceSet: sets whatever the value was, creating the node if needed. */
  forceSet(value) {
    return args.rejecting(() => this.#native.forceSet(bytes('value', value)));
  }

  /** Curator's initialize: creates the node with `value` if missing; resolves to whether it did. */
  initialize(value) {
    return args.rejecting(() => this.#native.initialize(bytes('value', value)));
  }
}

/**
 * Curator's CachedAtomicLong(counter, cacheFactor): ids handed out from ranges of a
 * DistributedAtomicLong, `cacheFactor` (at least 1) reserved at a time with one Curator-style
 * add. `next()` resolves to an AtomicValue whose `postValue` is the id (bigint); check
 * `succeeded`. After a rejection the next call reserves a fresh range: ids may be skipped,
 * never handed out twice across processes.
 */
class CachedAtomicLong {
  #native;
  #counter;

  constructor(counter, cacheFactor) {
    const nc = nativeOf('counter', counter, DistributedAtomicLong);
    this.#native = new native.NativeCachedAtomicLong(nc, args.requiredInt32('cacheFactor', cacheFactor));
    this.#counter = counter;
  }

  /** The counter ranges are reserved from. */
  get counter() {
    return this.#counter;
  }

  /** Resolves to the next id's AtomicValue. */
  next() {
    return args.rejecting(() => this.#native.next());
  }
}

/** Curator's CachedAtomicInteger: CachedAtomicLong over a DistributedAtomicInteger (numbers). */
class CachedAtomicInteger {
  #native;
  #counter;

  constructor(counter, cacheFactor) {
    const nc = nativeOf('counter', counter, DistributedAtomicInteger);
    this.#native = new native.NativeCachedAtomicInteger(nc, args.requiredInt32('cacheFactor', cacheFactor));
    this.#counter = counter;
  }

  /** The counter ranges are reserved from. */
  get counter() {
    return this.#counter;
  }

  /** Resolves to the next id's AtomicValue. */
  next() {
    return args.rejecting(() => this.#native.next());
  }
}

module.exports = {
  DistributedAtomicLong,
  DistributedAtomicInteger,
  SharedCount,
  SharedValue,
  DistributedAtomicValue,
  CachedAtomicLong,
  CachedAtomicInteger,
};
