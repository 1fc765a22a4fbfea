// Service discovery: Curator's curator-x-discovery on the same nodes and JSON (byte for byte),
// so Node services register and find each other with Java services using Curator.
// ServiceDiscovery (register, query), Registration (update, setEnabled, unregister),
// ServiceCache (an EventEmitter: 'event' with { kind, path, instance, old, error, resync }, and
// `for await`), ServiceProvider (round robin, random, sticky; never a disabled or down instance),
// UriSpec, and ServiceInstance's functions. Instances are plain objects:
//   { name, id, address, port, sslPort, payload, payloadClass, registrationTimeUTC, serviceType,
//     uriSpec, enabled }
// (absent values null; `payload` any JSON value); one read from a node also carries, under the
// symbol ServiceInstance.readFrom, what those fields do not show (unknown fields, the payload's
// text), written back while unchanged. Every decision is the core's.
'use strict';

const { EventEmitter } = require('node:events');

const { native, nativeGetters } = require('./native');
const args = require('./args');
const { invalid, describe, zkrError } = require('./errors');
const { Client } = require('./client');
const { forwardTo, eventIterator } = require('./events');
const alive = require('./alive');

const words = native.discoveryVocabulary();
const byName = (names) => Object.freeze(Object.fromEntries(names.map((n) => [n, n])));
/** How an instance is registered: DYNAMIC, STATIC, PERMANENT, DYNAMIC_SEQUENTIAL (the core's list). */
const ServiceType = byName(words.serviceTypes);
/** What a ServiceCache event says: ADDED, UPDATED, REMOVED, INVALID, INITIALIZED (the core's list). */
const ServiceCacheEventKind = byName(words.cacheEventKinds);
/** How a ServiceProvider picks: `ProviderStrategy.ROUND_ROBIN === 'round_robin'`, RANDOM, STICKY. */
const ProviderStrategy = Object.freeze(Object.fromEntries(words.strategies.map((s) => [s.toUpperCase(), s])));

const FIELDS = [
  'name',
  'id',
  'address',
  'port',
  'sslPort',
  'payload',
  'payloadJson',
  'payloadClass',
  'registrationTimeUTC',
  'serviceType',
  'uriSpec',
  'enabled',
];

// Where an instance read from a node keeps what its plain fields do not show (fields a newer
// writer added, the payload's exact text): `{ node, payload }`, the node's JSON and the payload
// as first seen (`JSON.stringify`). Enumerable, so `{ ...instance, port: 81 }` and
// `Object.assign` keep it; a symbol key, so `JSON.stringify` and `Object.keys` never show it.
// Only an instance that holds such text has it.
const READ_FROM = Symbol('zkrecipes.ServiceInstance.readFrom');

/** The read-from record of `instance` checked, or undefined. */
function readFrom(what, instance) {
  const from = instance[READ_FROM];
  if (from === undefined) return undefined;
  if (from === null || typeof from !== 'object' || !Buffer.isBuffer(from.node) || typeof from.payload !== 'string') {
    throw invalid(`${what}: its ServiceInstance.readFrom record was replaced (${describe(from)}); delete it to write the fields alone`);
  }
  return from;
}

/** The native form of an instance object (types checked here, values by the core). */
function toNative(what, instance) {
  if (instance === undefined || instance === null || typeof instance !== 'object' || Array.isArray(instance)) {
    throw invalid(`${what} must be a service instance object ({ name, address, port, ... }), got ${describe(instance)}`);
  }
  const o = args.options(what, instance, FIELDS);
  const from = readFrom(what, instance);
  let payloadJson;
  // `payloadJson` given by the caller (an own enumerable property: a read instance's is hidden,
  // and may be stale once `payload` is changed): the payload's JSON text as is, for integers
  // past 2^53 that a JS number would round.
  const explicitJson = Object.prototype.propertyIsEnumerable.call(o, 'payloadJson') && o.payloadJson !== undefined;
  if (explicitJson) {
    if (o.payload !== undefined && o.payload !== null) {
      throw invalid(`${what}: give payload or payloadJson, not both`);
    }
    payloadJson = args.optionalString('payloadJson', o.payloadJson);
  } else if (o.payload !== undefined && o.payload !== null) {
    try {
      payloadJson = JSON.stringify(o.payload);
    } catch (err) {
      throw invalid(`payload must be a JSON value: ${err.message}`);
    }
    if (payloadJson === undefined) throw invalid(`payload must be a JSON value, got ${describe(o.payload)}`);
  }
  // The payload as read, unchanged: the node's text is written back (a JS number would round
  // a Java long past 2^53, and 1.0E10 would become 10000000000).
  let keepPayload;
  if (from !== undefined && !explicitJson && (payloadJson ?? 'null') === from.payload) {
    keepPayload = true;
    payloadJson = undefined;
  }
  return {
    name: args.string('name', o.name),
    id: args.optionalString('id', o.id),
    address: args.optionalString('address', o.address),
    port: args.int32('port', o.port),
    sslPort: args.int32('sslPort', o.sslPort),
    payloadJson,
    payloadClass: args.optionalString('payloadClass', o.payloadClass),
    serviceType: args.optionalString('serviceType', o.serviceType),
    uriSpec: o.uriSpec instanceof UriSpec ? o.uriSpec.toString() : args.optionalString('uriSpec', o.uriSpec),
    enabled: args.bool('enabled', o.enabled, undefined),
    registrationTimeUTC: args.number('registrationTimeUTC', o.registrationTimeUTC),
    node: from?.node,
    keepPayload,
  };
}

/** The public form of a native instance (or null). */
function fromNative(o) {
  if (o === null || o === undefined) return null;
  const instance = {
    name: o.name,
    id: o.id,
    address: o.address,
    port: o.port,
    sslPort: o.sslPort,
    payload: o.payloadJson === null ? null : JSON.parse(o.payloadJson),
    payloadClass: o.payloadClass,
    registrationTimeUTC: o.registrationTimeUTC,
    serviceType: o.serviceType,
    uriSpec: o.uriSpec,
    enabled: o.enabled,
  };
  // The payload's text as on the node (a Java `long` past 2^53 is exact there): not enumerable,
  // so the object compares, spreads and prints as before, and is not written back.
  Object.defineProperty(instance, 'payloadJson', { value: o.payloadJson, enumerable: false });
  if (o.node) instance[READ_FROM] = Object.freeze({ node: o.node, payload: JSON.stringify(instance.payload) });
  return instance;
}

/** A URI spec's variables: an object of strings (`undefined` when omitted). */
function variablesArg(v) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid(`variables must be an object of strings, got ${describe(v)}`);
  for (const [k, value] of Object.entries(v)) args.string(`variables.${k}`, value);
  return { ...v };
}

/**
 * Curator's UriSpec: a template such as `'{scheme}://{address}:{port}/v1'`. An instance gives
 * `scheme` (https with an sslPort, else http), `name`, `id`, `address`, `port`, `ssl-port`,
 * `registration-time-utc`, `service-type`, and `[` / `]` for literal braces; `variables`
 * override them; a variable without a value renders as nothing. `toString()` is the template.
 */
class UriSpec {
  #native;

  constructor(template) {
    this.#native = new native.NativeUriSpec(args.string('template', template));
  }

  /** The URI for `instance` (or none: only `scheme`, http) with `variables` on top. */
  build(instance, variables) {
    const i = instance === undefined || instance === null ? undefined : toNative('instance', instance);
    return this.#native.build(i, variablesArg(variables));
  }

  toString() {
    return this.#native.template;
  }
}

/**
 * Service instances are plain objects; these make and convert them (Curator's
 * ServiceInstanceBuilder and JsonInstanceSerializer).
 */
const ServiceInstance = Object.freeze({
  /**
   * The symbol under which an instance read from a node keeps what its fields do not show
   * (fields a newer writer added, the payload's exact text): written back while unchanged, so a
   * read instance passed to `toJson`, `register` or `update` (spread and changed, or as is) keeps
   * them. `delete instance[ServiceInstance.readFrom]` writes the fields alone.
   */
  readFrom: READ_FROM,

  /**
   * An instance of service `name` with every field: `id` a random UUID and
   * `registrationTimeUTC` now unless given, `serviceType` 'DYNAMIC', `enabled` true. Checked
   * (ZKR_INVALID_ARGUMENT naming the field).
   */
  create(name, options) {
    const o = args.options('options', options, FIELDS.filter((f) => f !== 'name'));
    return fromNative(native.serviceInstanceNormalize(toNative('instance', { ...o, name })));
  },

  /**
   * The node's bytes (a Buffer): Curator's JSON, `{"name":...,"id":...}` in Jackson's order;
   * `enabled` only with `{ compatible: false }` (Curator's default is compatible).
   */
  toJson(instance, options) {
    const o = args.options('options', options, ['compatible']);
    return native.serviceInstanceToJson(toNative('instance', instance), args.bool('compatible', o.compatible, true));
  },

  /** Reads a node's bytes as Curator does; ZKR_CORRUPTED_DATA saying what is wrong otherwise. */
  fromJson(data) {
    return fromNative(native.serviceInstanceFromJson(args.buffer('data', data, { optional: false })));
  },

  /** Renders the instance's `uriSpec` (`''` without one); see UriSpec. */
  buildUri(instance, variables) {
    return native.serviceInstanceBuildUri(toNative('instance', instance), variablesArg(variables));
  },
});

/**
 * One registered instance (from `discovery.register`). `update` and `setEnabled` return at once
 * (written now when connected, else on reconnection); `unregister()` is idempotent.
 */
class Registration {
  #native;

  // `path`, `registered`.
  static {
    nativeGetters(this, (r) => r.#native, ['path', 'registered']);
  }

  constructor(nativeRegistration) {
    this.#native = nativeRegistration;
  }

  /** The instance as registered (its last update). */
  get instance() {
    return fromNative(this.#native.instance);
  }

  /**
   * Replaces the instance; its name, id and serviceType must stay. ZKR_CLOSED once unregistered,
   * ZKR_CONFLICT once the registration ended in a conflict.
   */
  update(instance) {
    this.#native.update(toNative('instance', instance));
  }

  /** Enables or disables the instance: a disabled one is never picked by a provider. */
  setEnabled(enabled) {
    if (typeof enabled !== 'boolean') throw invalid(`enabled must be a boolean, got ${describe(enabled)}`);
    this.#native.setEnabled(enabled);
  }

  /** Resolves to whether the node is on the server (again) within `{ timeoutMs }`. */
  waitRegistered(options) {
    return args.rejecting(() => this.#native.waitRegistered(args.timeoutOption(options)));
  }

  /**
   * Deletes the node (ours only; a PERMANENT one even after close) and stops keeping it. A
   * guaranteed delete: without a connection it rejects (ZKR_CONNECTION_LOSS) and goes on in the
   * background until the node is gone.
   */
  unregister() {
    return args.rejecting(() => this.#native.unregister());
  }
}

const natives = new WeakMap();

function nativeDiscovery(discovery) {
  const n = natives.get(discovery);
  if (!n) throw invalid(`discovery must be a ServiceDiscovery, got ${describe(discovery)}`);
  return n;
}

/**
 * Curator's ServiceDiscovery over `basePath`: register instances at `basePath/name/id` and
 * query them. Nothing is written before a registration.
 */
class ServiceDiscovery {
  // `basePath`.
  static {
    nativeGetters(this, (d) => natives.get(d), ['basePath']);
  }

  constructor(client, basePath) {
    natives.set(this, new native.NativeServiceDiscovery(Client._native(client), args.path('basePath', basePath)));
    alive.belongsTo(this, client);
  }

  /**
   * Registers `instance` (a plain object; omitted fields take their defaults) and resolves to
   * its Registration once the node is on the server: ephemeral for the DYNAMIC types,
   * persistent for STATIC and PERMANENT. ZKR_CONFLICT when another live session holds the id
   * (its node is left untouched). Registering an id again updates it, unless its registration
   * ended in a conflict: then it is registered afresh. A register that fails leaves no node.
   */
  register(instance) {
    // Once one is registered, the discovery (and so its registrations) is kept until close()
    // (or the client's), referenced or not.
    return args
      .rejecting(() => natives.get(this).register(toNative('instance', instance)))
      .then((r) => {
        alive.keep(this);
        return new Registration(r);
      });
  }

  /** The service names, sorted (none if the base path is missing). */
  queryForNames() {
    return args.rejecting(() => natives.get(this).queryForNames());
  }

  /** The instances of service `name`, sorted by id (a node that does not decode is left out). */
  queryForInstances(name) {
    return args.rejecting(() => natives.get(this).queryForInstances(args.string('name', name))).then((l) => l.map(fromNative));
  }

  /** The instance `name`/`id`, or null; ZKR_CORRUPTED_DATA when its node does not decode. */
  queryForInstance(name, id) {
    return args
      .rejecting(() => natives.get(this).queryForInstance(args.string('name', name), args.string('id', id)))
      .then(fromNative);
  }

  /**
   * Unregisters every instance it registered but the PERMANENT ones, all at once; then
   * ZKR_CLOSED. Rejects with the first error an unregister met (the deletes go on).
   */
  close() {
    return alive.closing(this, () => args.rejecting(() => natives.get(this).close()));
  }
}

function toEvent(p) {
  return {
    kind: p.kind,
    path: p.path,
    instance: fromNative(p.instance),
    old: fromNative(p.old),
    error: p.error === null ? null : zkrError(p.error.code, p.error.message),
    resync: p.resync,
  };
}

/**
 * Curator's ServiceCache: the instances of service `name`, kept by one persistent recursive
 * watch (exact resync after reconnects and new sessions); it never writes. Events
 * `{ kind, path, instance, old, error, resync }`: `cache.on('event', fn)` (listeners added before
 * `start()` hear the initial load) and `for await (const ev of cache)` (`cache.events({ replay:
 * true })` first replays the cached instances). `start()` resolves once the watch is set;
 * `awaitInitialized()` waits for the first load.
 */
class ServiceCache extends EventEmitter {
  #native;
  #iterators = new Set();
  #closed = false;

  // `name`.
  static {
    nativeGetters(this, (c) => c.#native, ['name']);
  }

  constructor(discovery, name) {
    super();
    const nd = nativeDiscovery(discovery);
    alive.belongsWith(this, discovery);
    const forward = forwardTo(this, (_name, payload) => [toEvent(payload)]);
    const ref = new WeakRef(this);
    const emit = (n, payload, extra) => {
      const self = ref.deref();
      if (self && !self.#closed) forward(n, payload, extra);
    };
    this.#native = new native.NativeServiceCache(nd, args.string('name', name), emit);
  }

  /** Sets the watch and starts loading; the cache lives until close(), referenced or not. */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => this.#native.start()));
  }

  /** Resolves to whether the initial load completed within `timeoutMs` (omitted: no limit). */
  awaitInitialized(timeoutMs) {
    return args.rejecting(() => this.#native.awaitInitialized(args.ms('timeoutMs', timeoutMs)));
  }

  /** Read-your-writes: whether every change up to `zxid` (a stat's mzxid/czxid) was applied. */
  awaitZxid(zxid, timeoutMs) {
    return args.rejecting(() => this.#native.awaitZxid(args.int64('zxid', zxid), args.ms('timeoutMs', timeoutMs)));
  }

  /** The instances now, sorted by id (no server call; readable after close). */
  instances() {
    return this.#native.instances().map(fromNative);
  }

  /** `for await (const ev of cache)`: the events from now on; ends when the cache is closed. */
  [Symbol.asyncIterator]() {
    return this.events();
  }

  /** The events from now on as an async iterator; `{ replay: true }`: the cached instances first. */
  events(options) {
    const o = args.options('options', options, ['replay']);
    const replay = args.bool('replay', o.replay, false);
    let id;
    const it = eventIterator(this.#iterators, () => this.#native.removeListener(id));
    id = this.#native.listen(replay, (_name, payload) => {
      if (!this.#closed) it.push(toEvent(payload));
    });
    return it;
  }

  /** Stops the cache: no event after this; `for await` loops end. Idempotent. */
  close() {
    this.#closed = true;
    alive.closing(this, () => this.#native.close());
    for (const it of this.#iterators) it.end();
    this.#iterators.clear();
  }
}

/**
 * Curator's ServiceProvider: picks an instance of service `name` by `{ strategy }`
 * ('round_robin' default, 'random', 'sticky'), never a disabled one, nor one `{ filter }`
 * refuses (called with each cached instance, on the JS thread, at each pick), nor one noted down
 * (`{ downErrorThreshold }` noteError calls, default 2, leave it out for `{ downTimeoutMs }`,
 * default 30000, from the first). `start()` resolves once the cache is loaded; after `close()`,
 * every call but close throws ZKR_CLOSED.
 */
class ServiceProvider {
  #native;
  #filter;

  // `name`.
  static {
    nativeGetters(this, (p) => p.#native, ['name']);
  }

  constructor(discovery, name, options) {
    const nd = nativeDiscovery(discovery);
    alive.belongsWith(this, discovery);
    const o = args.options('options', options, ['strategy', 'filter', 'downErrorThreshold', 'downTimeoutMs']);
    this.#filter = o.filter === undefined || o.filter === null ? undefined : args.func('filter', o.filter);
    this.#native = new native.NativeServiceProvider(nd, args.string('name', name), {
      strategy: args.optionalString('strategy', o.strategy),
      hasFilter: this.#filter !== undefined,
      downErrorThreshold: args.uint32('downErrorThreshold', o.downErrorThreshold),
      downTimeoutMs: args.ms('downTimeoutMs', o.downTimeoutMs),
    });
  }

  /**
   * The cached instances the filter accepts now (undefined without a filter), as indexes into
   * what `cacheInstances` gave: the native side tells them apart, by more than the id, which
   * DYNAMIC_SEQUENTIAL instances share.
   */
  #accepted() {
    if (this.#filter === undefined) return undefined;
    const accepted = [];
    this.#native.cacheInstances().forEach((o, i) => {
      if (this.#filter(fromNative(o))) accepted.push(i);
    });
    return accepted;
  }

  /** Starts the cache (until close(), referenced or not); resolves once it is loaded. */
  start() {
    return alive.whileStarted(this, () => args.rejecting(() => this.#native.start()));
  }

  /** An instance by the strategy, or null when none is usable (no server call). */
  getInstance() {
    return fromNative(this.#native.getInstance(this.#accepted()));
  }

  /** Every usable instance (enabled, not down, accepted by the filter), sorted by id. */
  getAllInstances() {
    return this.#native.getAllInstances(this.#accepted()).map(fromNative);
  }

  /** Notes an error with `instance`: after `downErrorThreshold` of them it is left out for `downTimeoutMs`. */
  noteError(instance) {
    this.#native.noteError(toNative('instance', instance));
  }

  /** Stops the provider. Idempotent. */
  close() {
    alive.closing(this, () => this.#native.close());
  }
}

module.exports = {
  ServiceDiscovery,
  Registration,
  ServiceCache,
  ServiceProvider,
  ServiceInstance,
  UriSpec,
  ServiceType,
  ServiceCacheEventKind,
  ProviderStrategy,
};
