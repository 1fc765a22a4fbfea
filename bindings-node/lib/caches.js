// Caches: CuratorCache and, as views of the same engine, NodeCache, PathChildrenCache and
// TreeCache. One persistent recursive watch, an immutable snapshot, a recreate seen as DELETED
// then CREATED, an exact resync after reconnects (events flagged `resync`, then RESYNCED),
// INITIALIZED once; a cache never writes. Events: `cache.on('event', fn)` and
// `for await (const ev of cache)`, in order, on the JS thread (see lib/events.js).
'use strict';

const { EventEmitter } = require('node:events');

const { native, nativeGetters } = require('./native');
const args = require('./args');
const { invalid } = require('./errors');
const { Client } = require('./client');
const alive = require('./alive');
const { forwardTo, eventIterator } = require('./events');

const words = native.cacheVocabulary();
const byName = (names) => Object.freeze(Object.fromEntries(names.map((n) => [n, n])));
/** What a cache event says: CREATED, CHANGED, DELETED, INITIALIZED, RESYNCED (the core's list). */
const CacheEventType = byName(words.eventTypes);
/** PathChildrenCache's start modes (Curator's StartMode; the core's list). */
const StartMode = byName(words.startModes);
/**
 * What a PersistentWatcher hears: CREATED, DELETED, DATA_CHANGED, CHILDREN_CHANGED (node
 * events), DISCONNECTED, RECONNECTED, SESSION_LOST (the core's list).
 */
const WatcherEventType = byName(native.watcherEventTypes());

class CacheBase extends EventEmitter {
  #native;
  #iterators = new Set();
  #sawInitialized;
  #seen;
  #initializedSeen = false;
  #closed = false;

  // `path`, `size` (nodes cached), `initialized`, `resyncs` (completed resyncs).
  static {
    nativeGetters(this, (c) => c.#native, ['path', 'size', 'initialized', 'resyncs']);
  }

  constructor(client, path, options, expectsInitialized, pathFilter) {
    super();
    const nc = Client._native(client);
    alive.belongsTo(this, client);
    args.path('path', path);
    let seen;
    this.#sawInitialized = new Promise((resolve) => {
      seen = resolve;
    });
    const forward = forwardTo(this);
    const ref = new WeakRef(this);
    const emit = (name, payload, extra) => {
      const self = ref.deref();
      if (!self || self.#closed) return; // queued before close(): dropped
      if (payload && payload.type === CacheEventType.INITIALIZED) {
        self.#initializedSeen = true;
        seen();
      }
      for (const it of self.#iterators) it.push(payload);
      forward(name, payload, extra);
    };
    this.#seen = seen;
    this.#expectsInitialized = expectsInitialized;
    this.#native = new native.NativeCache(nc, path, options, emit, pathFilter);
  }

  #expectsInitialized;

  /**
   * Sets the watch and starts loading ('event' listeners added before hear the initial load).
   * A started cache lives until close() (or its client's), referenced or not.
   */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => this.#native.start()));
  }

  /**
   * Resolves to whether the initial load completed within `timeoutMs` (omitted: no limit). Once
   * it resolves true, the INITIALIZED event (if this cache emits one) has been emitted too, so a
   * listener added now hears only what happens next.
   */
  async awaitInitialized(timeoutMs) {
    const ok = await args.rejecting(() => this.#native.awaitInitialized(args.ms('timeoutMs', timeoutMs)));
    if (ok && this.#expectsInitialized && !this.#initializedSeen) await this.#sawInitialized;
    return ok;
  }

  /**
   * Read-your-writes: resolves to whether the cache applied every change up to `zxid` (the
   * `mzxid` or `czxid` of the stat your write returned; bigint or number) within `timeoutMs`.
   */
  awaitZxid(zxid, timeoutMs) {
    return args.rejecting(() => this.#native.awaitZxid(args.int64('zxid', zxid), args.ms('timeoutMs', timeoutMs)));
  }

  /** The cached node `{ path, data, stat }` at `path`, or null (no server call). */
  get(path) {
    return this.#native.get(args.path('path', path));
  }

  /** A consistent copy of the cache, sorted by path. */
  snapshot() {
    return this.#native.snapshot();
  }

  /** `for (const node of cache)`: the snapshot, sorted by path. */
  [Symbol.iterator]() {
    return this.snapshot()[Symbol.iterator]();
  }

  /** `for await (const ev of cache)`: the events from now on; ends when the cache is closed. */
  [Symbol.asyncIterator]() {
    return this.events();
  }

  /** The events from now on as an async iterator (what `for await` uses). */
  events() {
    return eventIterator(this.#iterators);
  }

  /**
   * Adds `fn(event)` as a listener of its own and returns its id (a bigint, for `unlisten`).
   * With `{ replay: true }` it first hears the current contents as CREATED events, then what
   * happens next — nothing missed, nothing twice (C's zkr_cache_add_listener_with_replay,
   * Python's `listen(fn, replay=True)`): for a listener added after `start()`. Events arrive
   * on the JS thread, in order.
   */
  listen(fn, options) {
    const o = args.options('options', options, ['replay']);
    args.func('fn', fn);
    const replay = args.bool('replay', o.replay, false);
    const ref = new WeakRef(this);
    return this.#native.listen((_name, payload) => {
      const self = ref.deref();
      if (!self || self.#closed) return; // queued before close(): dropped
      try {
        fn(payload);
      } catch (err) {
        process.emitWarning(`zkrecipes: a cache listener threw: ${err?.stack ?? err}`, { code: 'ZKR_LISTENER_ERROR' });
      }
    }, replay);
  }

  /** Removes a listener added by `listen`; whether it was there. */
  unlisten(id) {
    return this.#native.removeListener(args.int64('id', id));
  }

  /** Stops the cache: no event after this; `for await` loops end; the snapshot stays readable. */
  close() {
    this.#closed = true;
    alive.closing(this, () => this.#native.close());
    for (const it of this.#iterators) it.end();
    this.#iterators.clear();
    // An awaitInitialized waiting for the INITIALIZED event, which close drops, ends.
    this.#seen();
  }
}

function maxDepthOption(what, v) {
  const d = args.uint32(what, v);
  return d;
}

/**
 * Curator 5.x's CuratorCache: the whole subtree at `path`; options `{ data, maxDepth,
 * pathFilter }`. `pathFilter(path) => boolean` (Curator's selector) decides which nodes the
 * cache keeps: false leaves a node and everything below it out. It is called on the JS thread
 * for the root and each level below it (so keep it quick); one that throws keeps the node (with
 * a process warning).
 */
class CuratorCache extends CacheBase {
  constructor(client, path, options) {
    const o = args.options('options', options, ['data', 'maxDepth', 'pathFilter']);
    let filter;
    if (o.pathFilter !== undefined && o.pathFilter !== null) {
      const f = args.func('pathFilter', o.pathFilter);
      filter = (p) => {
        try {
          return Boolean(f(p));
        } catch (err) {
          process.emitWarning(`zkrecipes: a cache's pathFilter threw (the node is kept): ${err?.stack ?? err}`, { code: 'ZKR_LISTENER_ERROR' });
          return true;
        }
      };
    }
    super(client, path, { view: 'curator', data: args.bool('data', o.data, true), maxDepth: maxDepthOption('maxDepth', o.maxDepth) }, true, filter);
  }
}

/** Curator's NodeCache: the one node at `path`. */
class NodeCache extends CacheBase {
  constructor(client, path) {
    super(client, path, { view: 'node' }, true);
  }

  /** The node, or null. */
  get currentData() {
    return this.get(this.path);
  }
}

/**
 * Curator's PathChildrenCache: the children of `path` (not the path itself); options
 * `{ cacheData, startMode }` (StartMode: NORMAL, BUILD_INITIAL_CACHE, POST_INITIALIZED_EVENT).
 */
class PathChildrenCache extends CacheBase {
  constructor(client, path, options) {
    const o = args.options('options', options, ['cacheData', 'startMode']);
    const mode = args.optionalString('startMode', o.startMode) ?? StartMode.NORMAL;
    if (!Object.hasOwn(StartMode, mode)) {
      throw invalid(`startMode must be one of ${Object.keys(StartMode).join(', ')}, got ${JSON.stringify(mode)}`);
    }
    const data = args.bool('cacheData', o.cacheData, true);
    super(client, path, { view: 'path_children', data, startMode: mode }, mode === StartMode.POST_INITIALIZED_EVENT);
  }

  /** The children, sorted by path. */
  get currentData() {
    return this.snapshot();
  }
}

/** Curator's TreeCache: the subtree at `path` to `{ maxDepth }` (0: the root alone). */
class TreeCache extends CacheBase {
  constructor(client, path, options) {
    const o = args.options('options', options, ['maxDepth']);
    super(client, path, { view: 'tree', maxDepth: maxDepthOption('maxDepth', o.maxDepth) }, true);
  }
}

/**
 * Curator's PersistentWatcher: a persistent watch on `path` (ZooKeeper 3.6+'s addWatch), kept
 * after it fires and across reconnects and sessions until `close()`; `{ recursive: true }` also
 * covers every node below it. Events `{ type, path }` (`path` null for DISCONNECTED, RECONNECTED
 * and SESSION_LOST): `watcher.on('event', fn)` and `for await (const ev of watcher)`, in the
 * order the server sent them. RECONNECTED means changes made meanwhile were not reported: read
 * again what matters (or use a cache). Watchers and caches on one path of one client share one
 * watch on the server, whatever their modes (the recursive one serves the plain ones, filtered).
 * `client.removeWatches` of its kind ends it: WATCH_REMOVED is its last event.
 */
class PersistentWatcher extends EventEmitter {
  #native;
  #iterators = new Set();
  #closed = false;

  // `path`, `recursive`, `started`.
  static {
    nativeGetters(this, (w) => w.#native, ['path', 'recursive', 'started']);
  }

  constructor(client, path, options) {
    super();
    const nc = Client._native(client);
    args.path('path', path);
    const o = args.options('options', options, ['recursive']);
    const recursive = args.bool('recursive', o.recursive, false);
    alive.belongsTo(this, client);
    const forward = forwardTo(this);
    const ref = new WeakRef(this);
    const emit = (name, payload, extra) => {
      const self = ref.deref();
      if (!self || self.#closed) return; // queued before close(): dropped
      for (const it of self.#iterators) it.push(payload);
      forward(name, payload, extra);
    };
    this.#native = new native.NativePersistentWatcher(nc, path, recursive, emit);
  }

  /** Sets the watch; resolves once the server has it. Once only. Lives until close(), referenced or not. */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => this.#native.start()));
  }

  /** `for await (const ev of watcher)`: the events from now on; ends when closed. */
  [Symbol.asyncIterator]() {
    return this.events();
  }

  /** The events from now on as an async iterator (what `for await` uses). */
  events() {
    return eventIterator(this.#iterators);
  }

  /** Removes the watch: no event after this; `for await` loops end. Idempotent. */
  close() {
    this.#closed = true;
    alive.closing(this, () => this.#native.close());
    for (const it of this.#iterators) it.end();
    this.#iterators.clear();
  }
}

module.exports = {
  CuratorCache,
  NodeCache,
  PathChildrenCache,
  TreeCache,
  CacheEventType,
  StartMode,
  PersistentWatcher,
  WatcherEventType,
};
