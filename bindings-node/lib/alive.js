// Started recipes stay alive until closed.
//
// A recipe whose start() succeeded (a latch, selector, observer, cache, watcher, persistent or
// TTL node, group member, shared count or value, partitioner, sharder, service cache or
// provider, a discovery with registrations) is kept referenced here until its close(), or until
// its client's close(): dropping the last reference to it does not stop it. Before, the garbage
// collector did, whenever it ran: a collected PersistentNode or registration deleted its node
// (the service vanished from discovery), a collected latch left the election, silently. Curator's
// and kazoo's started objects live until closed (their client holds them), as a listening server
// or a timer does in Node. Being kept here does not keep the event loop alive (the client's
// own ref()/unref() decides that). Module-internal: index.js does not re-export it.
'use strict';

/** Client -> the Set of its started objects. Holds both, strongly. */
const started = new Map();
/** Object -> its Client (weakly: an object never started can be collected). */
const clientOf = new WeakMap();
/** Object -> the object it was made on, whose close ends it too (a discovery's cache). */
const madeOn = new WeakMap();

/** Records that `object` works through `client` (call in the constructor). */
function belongsTo(object, client) {
  clientOf.set(object, client);
}

/**
 * Records that `object` works through the same client as `other`, and ends with it (a
 * discovery's cache and provider: the discovery's close closes them).
 */
function belongsWith(object, other) {
  const client = clientOf.get(other);
  if (client !== undefined) clientOf.set(object, client);
  madeOn.set(object, other);
}

/** Keeps `object`; true if this call added it. */
function keep(object) {
  const client = clientOf.get(object);
  if (client === undefined) return false;
  let set = started.get(client);
  if (set === undefined) {
    set = new Set();
    started.set(client, set);
  }
  if (set.has(object)) return false;
  set.add(object);
  return true;
}

/** Lets `object` go; `closed`: also what was made on it (a discovery's close ends them). */
function release(object, closed = true) {
  const client = clientOf.get(object);
  const set = started.get(client);
  if (set === undefined) return;
  set.delete(object);
  if (closed) for (const o of set) if (madeOn.get(o) === object) set.delete(o);
  if (set.size === 0) started.delete(client);
}

/** Lets every object of `client` go (the client is closed). */
function releaseClient(client) {
  started.delete(client);
}

/**
 * Runs `start` (which returns a value or a Promise, or throws) with `object` kept from now on;
 * if the start fails, `object` is let go again, unless an earlier start had kept it (a second
 * start that fails must not drop the running first one).
 */
function whileStarted(object, start) {
  const added = keep(object);
  const undo = (err) => {
    if (added) release(object, false);
    throw err;
  };
  let result;
  try {
    result = start();
  } catch (err) {
    undo(err);
  }
  if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
    return result.then(undefined, undo);
  }
  return result;
}

/** Runs `close` (a value, a Promise, or a throw) and lets `object` go whatever it gives. */
function closing(object, close) {
  try {
    return close();
  } finally {
    release(object);
  }
}

/** How many objects are kept for `client` (for tests). */
function keptFor(client) {
  return started.get(client)?.size ?? 0;
}

module.exports = { belongsTo, belongsWith, keep, whileStarted, closing, release, releaseClient, keptFor };
