// Owners (API.md "Owners and reentrancy"): who holds a lock. The async context entered by
// `withLock` / `owner.run(fn)` (AsyncLocalStorage), else this JS thread's owner, else an
// explicit `{ owner }`.
'use strict';

const { AsyncLocalStorage } = require('node:async_hooks');

const { native } = require('./native');
const { ErrorCode } = require('./vocabulary');
const { zkrError } = require('./errors');
const args = require('./args');

const ownerContext = new AsyncLocalStorage();

// Owner ids back to their Owner objects, for events that name an owner ('lost', 'revoke').
const ownersById = new Map();
const ownerRegistry = new FinalizationRegistry((id) => {
  if (ownersById.get(id)?.deref() === undefined) ownersById.delete(id);
});

/**
 * Who holds a lock. The same owner may acquire again (reentrancy); a different owner
 * contends, also inside this process. By default the owner is the async context entered by
 * `withLock` / `owner.run(fn)`, else this JS thread's owner.
 */
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
  run(fn, ...rest) {
    args.func('fn', fn);
    return ownerContext.run(this, fn, ...rest);
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

/** `owner` if given (it must be an Owner), else the current owner. */
function resolveOwner(owner) {
  return args.instance('owner', owner, Owner, 'an Owner') ?? currentOwner();
}

// The async flow of a plain acquire (see ThreadOwnerGuard): a private store, marked with
// enterWith by the flow's first plain acquire, so that the flow's later calls find their mark.
const plainFlow = new AsyncLocalStorage();

/**
 * A plain `acquire()` (no `{ owner }`, outside `withLock` / `owner.run`) belongs to this
 * thread's owner, like a Java thread in Curator. In Node that owner is shared by every async
 * task of the thread, so two tasks that both acquire plainly would both "re-enter" one hold and
 * run their critical sections together. This guard, one per lock object, refuses the second
 * task's acquire with `ZKR_NOT_OWNER` whenever it can tell the tasks apart:
 *   - another plain acquire of the lock is still pending (sequential code awaits each acquire,
 *     so two at once are two tasks: `Promise.all([task(), task()])`);
 *   - the thread owner holds the lock and the acquire comes from another async flow than the
 *     one that took it (two requests of a server, two timers).
 * It cannot tell apart tasks that one flow started after its own acquire (they share the flow's
 * mark); only owners make that safe: `withLock`, `owner.run`, `{ owner }`. Re-entering from the
 * same flow (`await m.acquire(); await m.acquire()`) stays allowed, as API.md promises.
 */
class ThreadOwnerGuard {
  #flow = undefined; // the mark of the flow whose plain acquires hold the lock or are pending
  #pending = 0; // plain acquires under way
  #held = 0; // the thread owner's acquires not yet released

  /**
   * Runs `acquire()` for `owner`, or refuses it (`plain`: the owner was not given, it is the
   * thread's). `lock.path` names the lock in the message. Resolves to whether it was acquired.
   * An owner the guard does not count (given, and not the thread's) goes straight to
   * `acquire()`: no async frame, no Promise of its own.
   */
  acquire(lock, owner, plain, acquire) {
    if (!plain && owner !== threadOwner) return acquire();
    return this.#acquireCounted(lock, owner, plain, acquire);
  }

  async #acquireCounted(lock, owner, plain, acquire) {
    if (plain) {
      let flow = plainFlow.getStore();
      if (flow === undefined) {
        flow = Symbol('plain acquire flow');
        plainFlow.enterWith(flow); // this flow, and what it starts from now on
      }
      if (this.#pending > 0 || (this.#held > 0 && this.#flow !== undefined && this.#flow !== flow)) {
        throw zkrError(
          ErrorCode.NOT_OWNER,
          `acquire ${lock.path}: this thread's default owner already holds the lock, or is acquiring it, ` +
            'for another async task; give each concurrent task its own owner: ' +
            'lock.withLock(fn), owner.run(fn) or { owner: new Owner() }',
        );
      }
      this.#flow = flow;
      this.#pending += 1;
    }
    let acquired = false;
    try {
      acquired = await acquire();
      return acquired;
    } finally {
      if (plain) this.#pending -= 1;
      if (acquired && owner === threadOwner) this.#held += 1;
      this.#settle();
    }
  }

  /**
   * Runs `release()` for `owner`, counting the thread owner's holds down (another owner's
   * release changes nothing the guard counts: straight to `release()`).
   */
  release(owner, release) {
    if (owner !== threadOwner) return release();
    return this.#releaseCounted(release);
  }

  async #releaseCounted(release) {
    try {
      await release();
    } finally {
      // The core lets the hold go before its delete can fail (ZKR_CLOSED, a connection loss:
      // the node goes with the session, or in the background), and a ZKR_NOT_OWNER means it
      // held nothing: either way this owner no longer holds what the guard counted.
      if (this.#held > 0) this.#held -= 1;
      this.#settle();
    }
  }

  // Forgets the holding flow once the thread owner neither holds nor is acquiring the lock.
  #settle() {
    if (this.#pending === 0 && this.#held === 0) this.#flow = undefined;
  }
}

module.exports = { Owner, ownerContext, threadOwner, currentOwner, resolveOwner, ThreadOwnerGuard };
