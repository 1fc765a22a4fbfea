// kazoo's recipes that Curator does not have: SetPartitioner, NonBlockingLease,
// MultiNonBlockingLease, on kazoo's node layout (a kazoo process shares the path). Every decision
// (the assignment, the locks, the lease's rules) is the core's.
'use strict';

const { EventEmitter, on } = require('node:events');
const os = require('node:os');

const { native, nativeGetters } = require('./native');
const args = require('./args');
const { Client } = require('./client');
const { forwardTo } = require('./events');
const alive = require('./alive');
const { invalid, describe } = require('./errors');

const byName = (names) => Object.freeze(Object.fromEntries(names.map((n) => [n, n])));

/** kazoo's PartitionState: 'ALLOCATING', 'ACQUIRED', 'RELEASE', 'FAILURE'. */
const PartitionState = byName(native.partitionStates());

function partitionNames(set) {
  if (typeof set === 'string' || set === null || set === undefined || typeof set[Symbol.iterator] !== 'function') {
    throw invalid('set must be an iterable of partition names (strings)');
  }
  const names = [...set];
  names.forEach((p, i) => args.string(`set[${i}]`, p));
  return names;
}

/**
 * The native form of a user's `partitionFunc`: `{ share }`, or `{ error }` with what it threw or
 * why its answer is not an iterable of strings (a string is not: its characters are no names).
 */
function shareOf(partitionFunc) {
  return (identifier, members, set) => {
    try {
      const answer = partitionFunc(identifier, members, set);
      if (typeof answer === 'string' || answer === null || answer === undefined || typeof answer[Symbol.iterator] !== 'function') {
        return { error: `it must return an iterable of partition names, got ${describe(answer)}` };
      }
      const share = [...answer];
      const bad = share.findIndex((p) => typeof p !== 'string');
      if (bad >= 0) return { error: `its answer[${bad}] is ${describe(share[bad])}, not a partition name` };
      return { share };
    } catch (err) {
      return { error: `it threw: ${err instanceof Error ? err.message : String(err)}` };
    }
  };
}

/**
 * kazoo's SetPartitioner: the members of a party at `path` divide `set` (partition names) among
 * themselves, each partition to exactly one member, and divide it again when members come or go.
 * `await p.start()` joins. Emits `'state'` with each new state. Options: `identifier` (default
 * `<hostname>-<pid>`), `timeBoundaryMs` (30000, kazoo's), `maxReactionTimeMs` (1000), and
 * `partitionFunc` (kazoo's `partition_func`): `(identifier, members, set) => partitions` returns
 * this member's partitions from the party's identifiers (in the server's listing order) and the
 * set as given. Every member must compute the same division (a kazoo member without one computes
 * kazoo's default: members and partitions sorted, member i of n takes every n-th from the i-th);
 * one that disagrees waits for locks another keeps, and no partition is ever held twice. It runs
 * on the JS thread once per division (a division waits at most 30 s for the JS thread to run it);
 * if it throws, or answers a name not in `set` or one twice, the partitioner becomes FAILURE and
 * leaves the party (the reason is logged). The share is kept sorted, whatever order it returns.
 *
 * kazoo's loop:
 *   if (p.failed) throw ...; else if (p.release) await p.releaseSet();
 *   else if (p.acquired) for (const partition of p) ...; else await p.waitForAcquire();
 */
class SetPartitioner extends EventEmitter {
  #native;

  // `path`, `identifier`, `state`.
  static {
    nativeGetters(this, (p) => p.#native, ['path', 'identifier', 'state']);
  }

  constructor(client, path, set, options) {
    super();
    const nc = Client._native(client);
    const o = args.options('options', options, ['identifier', 'timeBoundaryMs', 'maxReactionTimeMs', 'partitionFunc']);
    if (o.partitionFunc !== undefined && o.partitionFunc !== null && typeof o.partitionFunc !== 'function') {
      throw invalid(`partitionFunc must be a function, got ${describe(o.partitionFunc)}`);
    }
    const init = {
      identifier: args.optionalString('identifier', o.identifier),
      timeBoundaryMs: args.number('timeBoundaryMs', o.timeBoundaryMs) ?? 30000,
      maxReactionTimeMs: args.number('maxReactionTimeMs', o.maxReactionTimeMs) ?? 1000,
    };
    alive.belongsTo(this, client);
    const forward = forwardTo(this);
    const ref = new WeakRef(this);
    const emit = (name, payload, extra) => {
      // FAILURE is for good (kazoo's callers make a new partitioner): no longer kept.
      if (name === 'state' && payload === 'FAILURE') {
        const self = ref.deref();
        if (self !== undefined) alive.release(self);
      }
      forward(name, payload, extra);
    };
    const share = typeof o.partitionFunc === 'function' ? shareOf(o.partitionFunc) : undefined;
    this.#native = new native.NativeSetPartitioner(nc, args.path('path', path), partitionNames(set), init, emit, share);
  }

  /**
   * Joins the party and starts allocating (until finish() or FAILURE, referenced or not);
   * resolves once joined.
   */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => this.#native.start()));
  }

  get failed() {
    return this.state === 'FAILURE';
  }

  get release() {
    return this.state === 'RELEASE';
  }

  get allocating() {
    return this.state === 'ALLOCATING';
  }

  get acquired() {
    return this.state === 'ACQUIRED';
  }

  /** This member's partitions, sorted, while ACQUIRED; `[]` in any other state. */
  get partitions() {
    return this.#native.snapshot()[1];
  }

  /** `[state, partitions]` in one reading. */
  snapshot() {
    return this.#native.snapshot();
  }

  [Symbol.iterator]() {
    return this.partitions[Symbol.iterator]();
  }

  /** kazoo's wait_for_acquire: waits while ALLOCATING (`{ timeoutMs }`, default 30000); resolves to whether ACQUIRED. */
  waitForAcquire(options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ['timeoutMs']);
      const t = o.timeoutMs === undefined ? 30000 : args.ms('timeoutMs', o.timeoutMs);
      return this.#native.waitForAcquire(t);
    });
  }

  /** Resolves to the state once it is no longer `seen` (default: the state now), `{ timeoutMs }`. */
  waitForChange(seen, options) {
    return args.rejecting(() => {
      const s = seen === undefined || seen === null ? this.state : args.string('seen', seen);
      return this.#native.waitForChange(s, args.timeoutOption(options));
    });
  }

  /** kazoo's release_set: releases the partitions' locks and allocates again. */
  releaseSet() {
    return args.rejecting(() => this.#native.releaseSet());
  }

  /** kazoo's finish: FAILURE at once, then the locks released and the party left. */
  finish() {
    return alive.closing(this, () => args.rejecting(() => this.#native.finish()));
  }

  /** The same as finish(). */
  close() {
    return this.finish();
  }

  /** Each new state, as 'state' events (ends when the loop breaks). */
  async *[Symbol.asyncIterator]() {
    for await (const [state] of on(this, 'state')) yield state;
  }
}

function leaseInit(options) {
  const o = args.options('options', options, ['identifier', 'now', 'timeoutMs']);
  let nowMs;
  if (o.now !== undefined && o.now !== null) {
    if (!(o.now instanceof Date)) throw invalid(`now must be a Date, got ${typeof o.now}`);
    nowMs = o.now.getTime();
  }
  return { identifier: args.optionalString('identifier', o.identifier), nowMs, timeoutMs: args.ms('timeoutMs', o.timeoutMs) };
}

const endDate = (ms) => (ms === null ? null : new Date(ms));

/**
 * kazoo's NonBlockingLease: `const lease = await NonBlockingLease.obtain(client, path, durationMs,
 * { identifier, now, timeoutMs })`; `lease.held` is true when the lease was obtained (nobody else
 * held an unexpired one, or we did: obtaining again with the same identifier renews it). The
 * lease ends at now + duration (whole seconds, UTC) and is never released. `identifier` defaults
 * to this host's name (kazoo's), `now` (a Date) replaces the clock (tests), `timeoutMs` bounds
 * the wait for the lease's lock.
 */
class NonBlockingLease {
  constructor(path, identifier, [held, endMs]) {
    /** Whether the lease was obtained. */
    this.held = held;
    this.path = path;
    this.identifier = identifier;
    /** When our lease ends (whole seconds), if held. */
    this.end = endDate(endMs);
  }

  static obtain(client, path, durationMs, options) {
    return args.rejecting(async () => {
      const init = leaseInit(options);
      const p = args.path('path', path);
      const r = await native.nonBlockingLease(Client._native(client), p, args.requiredMs('durationMs', durationMs), init);
      return new NonBlockingLease(p, init.identifier ?? os.hostname(), r);
    });
  }
}

/**
 * kazoo's MultiNonBlockingLease: tries `path/0` … `path/<count-1>` in order (each a
 * NonBlockingLease); `held` when one was obtained, `index` which one (null if none).
 */
class MultiNonBlockingLease {
  constructor(path, identifier, [held, index, endMs]) {
    this.held = held;
    this.index = index;
    this.path = path;
    this.identifier = identifier;
    this.end = endDate(endMs);
  }

  static obtain(client, count, path, durationMs, options) {
    return args.rejecting(async () => {
      const init = leaseInit(options);
      const p = args.path('path', path);
      const n = args.requiredUint32('count', count);
      const r = await native.multiNonBlockingLease(Client._native(client), n, p, args.requiredMs('durationMs', durationMs), init);
      return new MultiNonBlockingLease(p, init.identifier ?? os.hostname(), r);
    });
  }
}

module.exports = { PartitionState, SetPartitioner, NonBlockingLease, MultiNonBlockingLease };
