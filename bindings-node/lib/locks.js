// The lock family: InterProcessMutex (and the halves of InterProcessReadWriteLock),
// InterProcessSemaphoreMutex, InterProcessSemaphoreV2 with its Leases, InterProcessMultiLock,
// and Curator's Revoker.attemptRevoke.
'use strict';

const { EventEmitter } = require('node:events');

const { native, nativeGetters } = require('./native');
const { ErrorCode } = require('./vocabulary');
const { zkrError, invalid, describe } = require('./errors');
const args = require('./args');
const { Owner, ownerContext, resolveOwner, ThreadOwnerGuard } = require('./owners');
const { Client, constructing } = require('./client');
const { forwardTo } = require('./events');
const { nativeOf } = require('./handles');
const { SharedCount } = require('./counters');

// A held lock whose object is collected keeps its node until the session ends (the core does
// not delete it from a finalizer: that would race with the session). Say so, like Node does of
// an unclosed file handle.
const collectedWhileHeld = new FinalizationRegistry(({ what, isHeld }) => {
  let held = false;
  try {
    held = isHeld();
  } catch {
    // the client is gone: so is the session, and the node with it
  }
  if (held) {
    process.emitWarning(
      `zkrecipes: ${what} was garbage-collected while held; its node stays until the session ends ` +
        '(release() it, or use withLock(), before dropping the last reference)',
      { code: 'ZKR_LOCK_GARBAGE_COLLECTED' },
    );
  }
});

/**
 * Warns when `lock` is collected while `isHeld()` and its client `nc` is open (`isHeld` must
 * not reference `lock`).
 */
function warnIfCollectedHeld(lock, nc, what, isHeld) {
  collectedWhileHeld.register(lock, { what, isHeld: () => !nc.isClosed && isHeld() });
}

// 'lost' and 'revoke' carry the owner whose hold was lost / is asked for.
function lockEvents(name, payload) {
  return [Owner._byId(payload) ?? payload];
}

const ACQUIRE_OPTIONS = ['timeoutMs', 'owner'];

// The native half of each owner-based lock.
const natives = new WeakMap();

// A NativeMutex's acquire and release as plain native functions (src/lock.rs
// `mutex_fast_calls`: the same calls without napi-rs's per-call borrow bookkeeping).
const mutexCalls = native.mutexFastCalls();

function nativeAcquire(nm, id, timeoutMs) {
  return nm instanceof native.NativeMutex ? mutexCalls.acquire(nm, id, timeoutMs) : nm.acquire(id, timeoutMs);
}

function nativeRelease(nm, id) {
  return nm instanceof native.NativeMutex ? mutexCalls.release(nm, id) : nm.release(id);
}

/**
 * What the locks held by owners (InterProcessMutex, InterProcessMultiLock) share: acquire,
 * release and withLock for the current owner or `{ owner }`, through the thread owner's guard.
 */
class OwnedLock extends EventEmitter {
  #guard = new ThreadOwnerGuard();

  // `make(self)` makes the native half; `what(native)` names the lock in the GC warning.
  constructor(nc, make, what) {
    super();
    const nm = make(this);
    natives.set(this, nm);
    warnIfCollectedHeld(this, nc, what(nm), () => nm.isAcquiredInThisProcess());
  }

  /**
   * Acquires the lock for the current owner (or `{ owner }`); waits without limit, or at most
   * `{ timeoutMs }`. Resolves to whether it was acquired. The same owner re-enters at once.
   *
   * Outside `withLock` / `owner.run` and without `{ owner }`, the owner is this JS thread's,
   * shared by all its async tasks: two concurrent tasks acquiring that way would both get in.
   * Give each task its own owner; a second plain acquire from another task is refused with
   * `ZKR_NOT_OWNER` where that can be told (see README, "Owners").
   */
  acquire(options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ACQUIRE_OPTIONS);
      const timeoutMs = args.ms('timeoutMs', o.timeoutMs);
      const plain = (o.owner === undefined || o.owner === null) && ownerContext.getStore() === undefined;
      const owner = resolveOwner(o.owner);
      return this.#guard.acquire(this, owner, plain, () => nativeAcquire(natives.get(this), owner.id, timeoutMs));
    });
  }

  /** Releases one acquire of the current owner (or `{ owner }`); `ZKR_NOT_OWNER` if it holds none. */
  release(options) {
    return args.rejecting(() => {
      const owner = resolveOwner(args.options('options', options, ['owner']).owner);
      return this.#guard.release(owner, () => nativeRelease(natives.get(this), owner.id));
    });
  }

  /**
   * Runs `fn` holding the lock, in an async context owned by the holder (so a nested
   * `withLock` on the same lock re-enters), and releases it afterwards, even if `fn` throws.
   * Options: `timeoutMs` (rejects with `ZKR_TIMEOUT` if not acquired in time), `owner`.
   */
  withLock(fn, options) {
    return args.rejecting(async () => {
      args.func('fn', fn);
      const o = args.options('options', options, ACQUIRE_OPTIONS);
      // Inside a context entered by withLock/owner.run the owner is that context's (so a nested
      // withLock re-enters); outside any, a new owner, so concurrent withLock calls contend.
      const owner = o.owner !== undefined && o.owner !== null ? resolveOwner(o.owner) : ownerContext.getStore() ?? new Owner();
      if (!(await this.acquire({ timeoutMs: o.timeoutMs, owner }))) {
        throw zkrError(ErrorCode.TIMEOUT, `withLock ${this.path}: not acquired within ${o.timeoutMs} ms`);
      }
      let result;
      try {
        result = await ownerContext.run(owner, fn);
      } catch (err) {
        try {
          await this.release({ owner });
        } catch (releaseErr) {
          // The callback's error wins; the release's is kept beside it.
          if (err !== null && typeof err === 'object') err.releaseError = releaseErr;
        }
        throw err;
      }
      await this.release({ owner });
      return result;
    });
  }

  /** Whether any owner in this process holds the lock through this object. */
  isAcquiredInThisProcess() {
    return natives.get(this).isAcquiredInThisProcess();
  }
}

/**
 * The `cohort` option of InterProcessMutex: `true` (the core's defaults), an object
 * `{ maxHandoffs, maxHoldMs }` (omitted fields: the defaults), or omitted / `false` (none).
 * Types here; values (maxHandoffs >= 1, maxHoldMs finite and >= 0) in the native layer.
 */
function cohortOption(v) {
  if (v === undefined || v === null || v === false) return undefined;
  if (v === true) return {};
  const o = args.options('cohort', v, ['maxHandoffs', 'maxHoldMs']);
  return {
    maxHandoffs: args.number('cohort.maxHandoffs', o.maxHandoffs),
    maxHoldMs: args.ms('cohort.maxHoldMs', o.maxHoldMs),
  };
}

/**
 * Curator's InterProcessMutex: a reentrant lock across processes. Reentrancy is per owner
 * (see `Owner`); another owner contends, also in this process. Emits `'lost'` (owner) when a
 * hold's session is SUSPENDED or LOST (see the `lostPolicy` option), or when someone else
 * deletes its lock node.
 *
 * With `{ cohort }` the owners of this object queue in memory behind its one lock node, and a
 * release hands the hold to the next local owner without a round trip, up to the fairness
 * bound (`maxHandoffs` handoffs or `maxHoldMs` since the node was granted; then, if another
 * contender waits, the node goes and the local owners queue again). The plain `fencingToken`
 * is then shared by the local holders of one node: fence with `fencingTokenWide`.
 */
class InterProcessMutex extends OwnedLock {
  constructor(client, path, options) {
    let nc;
    let make;
    if (client === constructing) {
      // Made by InterProcessReadWriteLock from a native half: `path` is { nc, half }.
      ({ nc, half: make } = path);
    } else {
      nc = Client._native(client);
      const o = args.options('options', options, ['lostPolicy', 'cohort']);
      const policy = args.optionalString('lostPolicy', o.lostPolicy);
      const cohort = cohortOption(o.cohort);
      args.path('path', path);
      make = (emit) => new native.NativeMutex(nc, path, emit, policy, cohort);
    }
    super(nc, (self) => make(forwardTo(self, lockEvents)), (nm) => `the InterProcessMutex of ${nm.path}`);
  }

  /** The lock path. */
  get path() {
    return natives.get(this).path;
  }

  /** Whether the current owner (or `owner`) holds the lock. */
  isOwnedByCurrentOwner(owner) {
    return natives.get(this).isOwnedBy(resolveOwner(owner).id);
  }

  /** Whether the current owner (or `owner`) holds the lock and the hold is still trustworthy. */
  isHeldValid(owner) {
    return natives.get(this).isHeldValid(resolveOwner(owner).id);
  }

  /**
   * The fencing token of the current owner's hold (a BigInt, strictly greater than any earlier
   * holder's), or `null` if it holds nothing.
   */
  get fencingToken() {
    return this.fencingTokenOf();
  }

  /** The fencing token of `owner`'s hold, or `null`. */
  fencingTokenOf(owner) {
    return natives.get(this).fencingToken(resolveOwner(owner).id);
  }

  /**
   * The wide fencing token of the current owner's hold, or `null`: a BigInt
   * `czxid << 32n | handoff` (handoff: local cohort handoffs on that node before this hold; 0
   * without cohort handoffs). Strictly greater than any earlier holder's, also across cohort
   * handoffs inside this process: fence with this one when the mutex has `{ cohort }`.
   */
  get fencingTokenWide() {
    return this.fencingTokenWideOf();
  }

  /** The wide fencing token of `owner`'s hold, or `null`. */
  fencingTokenWideOf(owner) {
    return natives.get(this).fencingTokenWide(resolveOwner(owner).id);
  }

  /** How many owners of this object wait in its cohort's local queue (0 without `{ cohort }`). */
  get localWaiters() {
    return natives.get(this).localWaiters;
  }

  /** The cohort options `{ maxHandoffs, maxHoldMs }`, or `null` without `{ cohort }`. */
  get cohortOptions() {
    return natives.get(this).cohortOptions;
  }

  /** The path of the current owner's lock node, or `null`. */
  get lockNode() {
    return natives.get(this).lockNode(resolveOwner().id);
  }

  /** Resolves to the lock's nodes in line order (the holder first). */
  participantNodes() {
    return args.rejecting(() => natives.get(this).participantNodes());
  }

  /**
   * Curator's makeRevocable: from now on this lock's nodes are watched for revocation requests
   * (`attemptRevoke(client, node)` from any process or face). Each request emits `'revoke'` with
   * the `Owner` of that hold; `listener`, if given, is added as a `'revoke'` listener. Revocation
   * is cooperative: release (`lock.release({ owner })`) or ignore it. Applies to acquires that
   * start after this call. Returns the lock. Throws `ZKR_INVALID_ARGUMENT` on a mutex with cohort
   * handoffs (its one node serves every local owner).
   */
  makeRevocable(listener) {
    if (listener !== undefined && listener !== null) args.func('listener', listener);
    natives.get(this).makeRevocable();
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
  return args.rejecting(() => native.attemptRevoke(Client._native(client), args.path('nodePath', nodePath)));
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
    const o = args.options('options', options, ['lostPolicy']);
    const policy = args.optionalString('lostPolicy', o.lostPolicy);
    const rw = new native.NativeReadWriteLock(nc, args.path('path', path));
    this.#read = new InterProcessMutex(constructing, { nc, half: (emit) => rw.half(false, emit, policy) });
    this.#write = new InterProcessMutex(constructing, { nc, half: (emit) => rw.half(true, emit, policy) });
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
    const nm = new native.NativeSemaphoreMutex(nc, args.path('path', path));
    this.#native = nm;
    warnIfCollectedHeld(this, nc, `the InterProcessSemaphoreMutex of ${path}`, () => nm.isAcquiredInThisProcess());
  }

  /** Acquires; waits without limit or at most `{ timeoutMs }`; resolves to whether it was acquired. */
  acquire(options) {
    return args.rejecting(() => this.#native.acquire(args.timeoutOption(options)));
  }

  /** Releases; `ZKR_NOT_OWNER` if this object does not hold it. */
  release() {
    return args.rejecting(() => this.#native.release());
  }

  /** Runs `fn` holding the lock and releases it afterwards (`ZKR_TIMEOUT` if not acquired in time). */
  withLock(fn, options) {
    return args.rejecting(async () => {
      args.func('fn', fn);
      const timeoutMs = args.timeoutOption(options);
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

  // `path` (the lease node's), `czxid` (a BigInt that grows with every lease), `isReturned`.
  static {
    nativeGetters(this, (l) => l.#native, ['path', 'czxid', 'isReturned']);
  }

  constructor(token, nativeLease, nc) {
    if (token !== constructing) throw invalid('leases come from InterProcessSemaphoreV2.acquire()');
    this.#native = nativeLease;
    warnIfCollectedHeld(this, nc, `the lease ${nativeLease.path}`, () => !nativeLease.isReturned);
  }

  /**
   * Resolves when the lease can no longer be counted on, to why (`{ reason, state, message }`,
   * see `LeaseLost` in index.d.ts), or to `null` once `{ timeoutMs }` passed (no limit when
   * omitted). `{ lostPolicy }`: 'standard' (default: SUSPENDED or LOST is a loss) or 'session'
   * (LOST only). Also lost: the client closed, its session changed, the lease node gone. Never
   * settles while the lease stays good; returning the lease meanwhile does not settle it. A
   * lease already returned rejects with `ZKR_CLOSED`.
   */
  waitLost(options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ['lostPolicy', 'timeoutMs']);
      return this.#native.waitLost(args.optionalString('lostPolicy', o.lostPolicy), args.ms('timeoutMs', o.timeoutMs));
    });
  }

  /** Returns the lease; `ZKR_NOT_OWNER` if it was returned already. */
  release() {
    return args.rejecting(() => this.#native.release());
  }
}

/** Curator's InterProcessSemaphoreV2: at most `maxLeases` leases at a time, across processes. */
class InterProcessSemaphoreV2 {
  #native;
  #nc;

  // `maxLeases` (the most leases held at once), `path`.
  static {
    nativeGetters(this, (s) => s.#native, ['maxLeases', 'path']);
  }

  /**
   * `maxLeases` is a number, or `{ count }`: a SharedCount whose value is the limit, read live
   * (Curator's constructor taking a SharedCountReader). Raising the count lets waiters in at
   * once; lowering it takes no lease back but admits nobody until fewer than the new count are
   * held (below 1: nobody). Start the count to follow its changes.
   */
  constructor(client, path, maxLeases) {
    this.#nc = Client._native(client);
    args.path('path', path);
    if (typeof maxLeases === 'object' && maxLeases !== null) {
      const o = args.options('maxLeases', maxLeases, ['count']);
      const count = nativeOf('maxLeases.count', o.count, SharedCount);
      this.#native = native.NativeSemaphoreV2.withCount(this.#nc, path, count);
    } else {
      this.#native = new native.NativeSemaphoreV2(this.#nc, path, args.requiredUint32('maxLeases', maxLeases));
    }
  }

  /**
   * Acquires `qty` leases (1) all or nothing; waits without limit or at most `{ timeoutMs }`.
   * Resolves to the leases, or `null` if they were not all acquired in time; `qty` above a
   * fixed `maxLeases` rejects with `ZKR_INVALID_ARGUMENT` at once (with `{ count }` it waits:
   * the count may be raised).
   */
  acquire(options) {
    return args.rejecting(async () => {
      const o = args.options('options', options, ['qty', 'timeoutMs']);
      const leases = await this.#native.acquire(args.uint32('qty', o.qty) ?? 1, args.ms('timeoutMs', o.timeoutMs));
      return leases === null ? null : leases.map((l) => new Lease(constructing, l, this.#nc));
    });
  }

  /** Returns a lease (Curator's returnLease). */
  returnLease(lease) {
    return args.rejecting(() => {
      if (!(lease instanceof Lease)) throw invalid(`lease must be a Lease, got ${describe(lease)}`);
      return lease.release();
    });
  }

  /** Returns every lease (Curator's returnAll); rejects with the first error after trying all. */
  returnAll(leases) {
    return args.rejecting(async () => {
      if (!Array.isArray(leases)) throw invalid(`leases must be an array of Lease, got ${describe(leases)}`);
      const results = await Promise.allSettled(leases.map((l) => this.returnLease(l)));
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    });
  }

  /** Resolves to the lease nodes in sequence order. */
  participantNodes() {
    return args.rejecting(() => this.#native.participantNodes());
  }
}

/** Curator's InterProcessMultiLock: mutexes at several paths, taken all or none. */
class InterProcessMultiLock extends OwnedLock {
  #paths;

  constructor(client, paths) {
    const nc = Client._native(client);
    if (!Array.isArray(paths)) throw invalid(`paths must be an array of paths, got ${describe(paths)}`);
    const list = paths.map((p, i) => args.path(`paths[${i}]`, p));
    super(nc, () => new native.NativeMultiLock(nc, list), () => `the InterProcessMultiLock of ${list.join(',')}`);
    this.#paths = list;
  }

  /** The lock paths. */
  get paths() {
    return [...this.#paths];
  }

  /** The lock's path, for messages: the paths joined with ','. */
  get path() {
    return this.#paths.join(',');
  }
}

module.exports = {
  InterProcessMutex,
  InterProcessReadWriteLock,
  InterProcessSemaphoreMutex,
  InterProcessSemaphoreV2,
  InterProcessMultiLock,
  Lease,
  attemptRevoke,
};
