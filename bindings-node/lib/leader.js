// Leader election: LeaderLatch, LeaderSelector (with its per-term LeadershipContext) and
// LeaderObserver.
'use strict';

const { EventEmitter } = require('node:events');

const { native, nativeGetters } = require('./native');
const { zkrError, invalid } = require('./errors');
const args = require('./args');
const { Client, constructing } = require('./client');
const { forwardTo } = require('./events');
const alive = require('./alive');

// The `err.code` of a cancelled term's `ctx.signal.reason`: the core's error kind for the reason
// (`ZKR_CONNECTION_LOSS`, `ZKR_SESSION_EXPIRED`, `ZKR_CLOSED`), or `ZKR_` + the reason for an
// interrupt, which is no failure.
const cancelCodes = new Map(native.vocabulary().cancelReasons.map((r) => [r.name, `ZKR_${r.errorKind ?? r.name}`]));

// The native half of each latch and selector, for the methods below.
const natives = new WeakMap();

/** What a LeaderLatch and a LeaderSelector have in common. */
class LeaderParticipant extends EventEmitter {
  // `leadershipEpoch` (a BigInt while leading: the latch node's czxid, the term's fencing
  // token; else null), `state` ('LATENT' | 'STARTED' | 'CLOSED'), `id`, `path`.
  static {
    nativeGetters(this, (p) => natives.get(p), ['leadershipEpoch', 'state', 'id', 'path']);
  }

  constructor(make) {
    super();
    natives.set(this, make(this));
  }

  /** Whether this participant leads now. */
  hasLeadership() {
    return natives.get(this).hasLeadership();
  }

  /** Resolves to the leader `{ id, isLeader }` (`{ id: '', isLeader: false }` if none). */
  getLeader() {
    return args.rejecting(() => natives.get(this).getLeader());
  }

  /** Resolves to every participant `[{ id, isLeader }]` in queue order, the leader first. */
  getParticipants() {
    return args.rejecting(() => natives.get(this).getParticipants());
  }
}

/**
 * Curator's LeaderLatch. `await latch.start()` joins; emits `'isLeader'` and `'notLeader'`;
 * `await latch.await({ timeoutMs })` waits for leadership. Options: `id`, `closeMode`
 * ('SILENT' | 'NOTIFY_LEADER'), `lostPolicy` ('standard' | 'session').
 */
class LeaderLatch extends LeaderParticipant {
  constructor(client, path, options) {
    const nc = Client._native(client);
    const o = args.options('options', options, ['id', 'closeMode', 'lostPolicy']);
    const id = args.optionalString('id', o.id) ?? '';
    const closeMode = args.optionalString('closeMode', o.closeMode);
    const lostPolicy = args.optionalString('lostPolicy', o.lostPolicy);
    args.path('path', path);
    super((self) => new native.NativeLeaderLatch(nc, path, id, forwardTo(self), closeMode, lostPolicy));
    alive.belongsTo(this, client);
  }

  /** Joins the election (once); the latch takes part until close(), referenced or not. */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => natives.get(this).start()));
  }

  /** Resolves to whether this participant leads, waiting without limit or at most `{ timeoutMs }`. */
  await(options) {
    return args.rejecting(() => natives.get(this).await(args.timeoutOption(options)));
  }

  /** Our latch node's path, once created. */
  get ourPath() {
    return natives.get(this).ourPath;
  }

  /** Leaves the election (`{ closeMode }` overrides the latch's). */
  close(options) {
    return args.rejecting(() => {
      const o = args.options('options', options, ['closeMode']);
      const closeMode = args.optionalString('closeMode', o.closeMode);
      return alive.closing(this, () => natives.get(this).close(closeMode));
    });
  }
}

/**
 * What `takeLeadership` gets for one term: `signal` (an AbortSignal aborted when leadership
 * is cancelled: connection SUSPENDED/LOST, interruptLeadership(), close()), `fencingToken`
 * (BigInt), `term`, `id`, `path`, `cancelReason`.
 */
class LeadershipContext {
  #native;
  #controller = new AbortController();

  // `fencingToken` (BigInt, strictly greater than any earlier leader's), `term` (1 for the
  // first), `id`, `path`, `cancelReason` (a CancelReason, or null).
  static {
    nativeGetters(this, (c) => c.#native, ['fencingToken', 'term', 'id', 'path', 'cancelReason']);
  }

  constructor(token, nativeCtx) {
    if (token !== constructing) throw invalid('a LeadershipContext is made by LeaderSelector');
    this.#native = nativeCtx;
    const controller = this.#controller;
    const path = nativeCtx.path;
    nativeCtx.onCancel((_name, reason) => {
      const err = zkrError(cancelCodes.get(reason), `leadership of ${path} cancelled: ${reason}`);
      err.reason = reason;
      controller.abort(err);
    });
  }

  /**
   * Aborted when leadership is cancelled; `signal.reason` is an Error with `code`
   * (`ZKR_CONNECTION_LOSS`, `ZKR_SESSION_EXPIRED`, `ZKR_INTERRUPTED` or `ZKR_CLOSED`) and `reason`.
   */
  get signal() {
    return this.#controller.signal;
  }
}

/**
 * Curator's LeaderSelector: while `takeLeadership(ctx)` (async) runs, this participant leads;
 * when it returns, leadership passes on. Options: `id`, `autoRequeue` (false), `lostPolicy`.
 * An error thrown by `takeLeadership` is emitted as `'error'` (or a process warning when
 * nobody listens); it never becomes an unhandled rejection.
 */
class LeaderSelector extends LeaderParticipant {
  constructor(client, path, takeLeadership, options) {
    const nc = Client._native(client);
    args.path('path', path);
    args.func('takeLeadership', takeLeadership);
    const o = args.options('options', options, ['id', 'autoRequeue', 'lostPolicy']);
    const id = args.optionalString('id', o.id) ?? '';
    const autoRequeue = args.bool('autoRequeue', o.autoRequeue, false);
    const lostPolicy = args.optionalString('lostPolicy', o.lostPolicy);
    super((self) => {
      const ref = new WeakRef(self);
      const take = (nativeCtx) => {
        runTerm(ref, takeLeadership, nativeCtx);
      };
      return new native.NativeLeaderSelector(nc, path, id, take, lostPolicy);
    });
    alive.belongsTo(this, client);
    if (autoRequeue) this.autoRequeue();
  }

  /** Requeue after every term, by itself (Curator's autoRequeue()). */
  autoRequeue() {
    natives.get(this).autoRequeue();
    return this;
  }

  /**
   * Joins the queue (returns at once; leadership comes through takeLeadership). The selector
   * takes part until close(), referenced or not.
   */
  start() {
    alive.whileStarted(this, () => natives.get(this).start());
  }

  /** Queues again after a term; whether it was queued now. */
  requeue() {
    return natives.get(this).requeue();
  }

  /** Cancels the current term (its `ctx.signal` aborts with reason INTERRUPTED). */
  interruptLeadership() {
    natives.get(this).interruptLeadership();
  }

  /** How many terms this selector has started. */
  get leadershipCount() {
    return natives.get(this).leadershipCount;
  }

  /** Leaves for good; resolves once the current term (if any) has ended. */
  close() {
    return alive.closing(this, () => args.rejecting(() => natives.get(this).close()));
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

  // `path`; `leader`: the leader as last seen, `{ id, isLeader }`, or null before `start()`
  // resolved and after `close()`.
  static {
    nativeGetters(this, (o) => o.#native, ['path', 'leader']);
  }

  constructor(client, path) {
    super();
    this.#native = new native.NativeLeaderObserver(Client._native(client), args.path('path', path), forwardTo(this));
    alive.belongsTo(this, client);
  }

  /** Starts observing (until close(), referenced or not); resolves to this observer once the current leader is known. */
  start() {
    return alive.whileStarted(this, () =>
      args.rejecting(async () => {
        await this.#native.start();
        return this;
      }),
    );
  }

  /**
   * Resolves to the next new leader since the last call (or `start()`), each change once; to
   * `null` once `{ timeoutMs }` passed (default: no limit). Rejects with `ZKR_CLOSED` once the
   * observer or its client is closed.
   */
  waitChanged(options) {
    return args.rejecting(() => this.#native.waitChanged(args.timeoutOption(options)));
  }

  /** Stops observing (its watch is removed from the server). Idempotent. */
  close() {
    return alive.closing(this, () => args.rejecting(() => this.#native.close()));
  }
}

module.exports = { LeaderLatch, LeaderSelector, LeadershipContext, LeaderObserver };
