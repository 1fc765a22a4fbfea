// Type definitions for zkrecipes (hand-written and checked against the runtime: `scripts/test-node`
// compiles examples/typescript with `tsc --noEmit --strict` against them, and test/face.test.js
// checks that the word lists below are the core's).
//
// 64-bit values (zxids, session ids, fencing tokens, DistributedAtomicLong values) are
// `bigint`; they are accepted as `bigint` or safe-integer `number`. Every failure is an `Error`
// whose `code` is one of `ZkrErrorCode`; async methods reject (never throw), constructors throw.
//
// Options objects: an unknown key is refused with ZKR_INVALID_ARGUMENT naming the nearest valid
// one (`{ sessionTimeout }`: "did you mean sessionTimeoutMs?").
//
// Timeouts (`timeoutMs`), the core's contract for every face: omitted (or `undefined`, `null`)
// or `Infinity` waits without limit; 0 tries once without waiting; a negative value or NaN is
// refused with ZKR_INVALID_ARGUMENT.
//
// Events (EventEmitter events, watch functions, `setLogger` sinks, `takeLeadership`): the events
// of one object (a client's 'state' events and its one-shot watches; one recipe's events) reach
// JS one at a time, in the order they happened, on the JS thread that made the object; a
// listener may call any method, of that object too. They never keep the event loop alive, and
// nothing is delivered once the object is closed or collected.
//
// Lifetime: a recipe whose start() succeeded (latch, selector, observer, caches, watcher,
// PersistentNode, PersistentTtlNode, GroupMember, SharedCount, SharedValue, SetPartitioner,
// QueueSharder, ServiceCache, ServiceProvider, a ServiceDiscovery once it registered) lives until
// its close() (finish() or FAILURE for a partitioner) or its client's close(), whether or not your code
// still references it: the garbage collector never stops it (as Curator's client keeps its
// recipes). It does not keep the event loop alive either.

/// <reference types="node" />

import { EventEmitter } from 'node:events';

/** `err.code` of every error zkrecipes raises (API.md's table, plus the core's extra kinds). */
export type ZkrErrorCode =
  | 'ZKR_INVALID_ARGUMENT'
  | 'ZKR_NOT_OWNER'
  | 'ZKR_CONNECTION_LOSS'
  | 'ZKR_SESSION_EXPIRED'
  | 'ZKR_OUTCOME_UNKNOWN'
  | 'ZKR_CLOSED'
  | 'ZKR_NO_NODE'
  | 'ZKR_NODE_EXISTS'
  | 'ZKR_BAD_VERSION'
  | 'ZKR_NO_AUTH'
  | 'ZKR_NOT_EMPTY'
  | 'ZKR_CONFLICT'
  | 'ZKR_NO_WATCHER'
  | 'ZKR_TIMEOUT'
  | 'ZKR_AUTH_FAILED'
  | 'ZKR_CORRUPTED_DATA'
  | 'ZKR_OVERFLOW'
  | 'ZKR_SERVER'
  | 'ZKR_INTERNAL';

/** The error codes by kind name: `ErrorCode.NO_NODE === 'ZKR_NO_NODE'` (the core's list). */
export declare const ErrorCode: Readonly<{ [K in ZkrErrorCode as K extends `ZKR_${infer N}` ? N : never]: K }>;

/** The shape of every error zkrecipes raises: a plain `Error` with a `code`. */
export interface ZkrError extends Error {
  code: ZkrErrorCode;
  /** ZooKeeper's own error code (`KeeperException.Code`: -101 NONODE, ...) when the server gave one. */
  zkCode?: number;
  /** For a failed transaction commit: the index of the failing operation (nothing was applied). */
  index?: number;
}

/** An object mapping each name of a word list to itself: `CreateMode.EPHEMERAL === 'EPHEMERAL'`. */
type Names<T extends string> = Readonly<{ [K in T]: K }>;

/** The version of the Rust core the addon was built from. */
export declare const coreVersion: string;

/** Node data: bytes, or a string (sent as UTF-8). */
export type Data = Buffer | Uint8Array | string;

/** A 64-bit integer as accepted: a bigint, or a number that is a safe integer. */
export type Int64 = bigint | number;

// ---------------------------------------------------------------------------------------------
// Owners

/**
 * Who holds a lock. The same owner may acquire again (a count goes up); another owner
 * contends, also in this process. By default the owner is the async context entered by
 * `withLock` / `owner.run(fn)`, else this JS thread's owner.
 */
export declare class Owner {
  constructor();
  /** This owner's id (unique in the process). */
  readonly id: bigint;
  /** Runs `fn(...args)` in an async context owned by this owner; returns what `fn` returns. */
  run<R, A extends unknown[]>(fn: (...args: A) => R, ...args: A): R;
  /** The owner a lock call made here would use. */
  static current(): Owner;
}

// ---------------------------------------------------------------------------------------------
// Retry policies (Curator's six)

export type RetryPolicyKind =
  | 'exponentialBackoff'
  | 'boundedExponentialBackoff'
  | 'nTimes'
  | 'oneTime'
  | 'untilElapsed'
  | 'forever';

export declare abstract class RetryPolicy {
  readonly kind: RetryPolicyKind;
}
/** Curator's ExponentialBackoffRetry (maxRetries is capped at 29, as Curator does). */
export declare class ExponentialBackoffRetry extends RetryPolicy {
  constructor(baseSleepMs: number, maxRetries: number, maxSleepMs?: number);
  readonly kind: 'exponentialBackoff';
}
/** Curator's BoundedExponentialBackoffRetry. */
export declare class BoundedExponentialBackoffRetry extends RetryPolicy {
  constructor(baseSleepMs: number, maxSleepMs: number, maxRetries: number);
  readonly kind: 'boundedExponentialBackoff';
}
/** Curator's RetryNTimes. */
export declare class RetryNTimes extends RetryPolicy {
  constructor(n: number, sleepMs: number);
  readonly kind: 'nTimes';
}
/** Curator's RetryOneTime. */
export declare class RetryOneTime extends RetryPolicy {
  constructor(sleepMs: number);
  readonly kind: 'oneTime';
}
/** Curator's RetryUntilElapsed. */
export declare class RetryUntilElapsed extends RetryPolicy {
  constructor(maxElapsedMs: number, sleepMs: number);
  readonly kind: 'untilElapsed';
}
/** Curator's RetryForever. */
export declare class RetryForever extends RetryPolicy {
  constructor(sleepMs: number);
  readonly kind: 'forever';
}

// ---------------------------------------------------------------------------------------------
// Client

export type ConnectionState = 'CONNECTED' | 'SUSPENDED' | 'RECONNECTED' | 'LOST' | 'READ_ONLY';
/** Curator's connection states (the core's list). */
export declare const ConnectionState: Names<ConnectionState>;

export type Permission = 'READ' | 'WRITE' | 'CREATE' | 'DELETE' | 'ADMIN' | 'ALL';

export interface AuthInfo {
  /** e.g. 'digest' */
  scheme: string;
  /** e.g. 'user:password' */
  credentials: Data;
}

export interface AclEntry {
  /** Permission names, or ZooKeeper's bits (READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16). */
  perms: Permission[] | number;
  scheme: string;
  id: string;
}

export interface ConnectOptions {
  /** Session timeout asked of the server (default 60000). */
  sessionTimeoutMs?: number;
  /** How long to wait for a connection (default 15000). */
  connectionTimeoutMs?: number;
  /** Retry policy of operations (default ExponentialBackoffRetry(1000, 3)). */
  retry?: RetryPolicy;
  /** Curator's namespace: every path is relative to `/namespace`. */
  namespace?: string;
  /** Authentication added to the session. */
  auth?: AuthInfo | AuthInfo[];
  /** The ACL of nodes this client creates (default world:anyone, all). */
  acl?: AclEntry[];
  /** Allow connecting to a read-only server. */
  canBeReadOnly?: boolean;
  /**
   * The largest request sent, in bytes on the wire (default 1048575, the server's default
   * jute.maxbuffer; at least 1024): a bigger one rejects with ZKR_INVALID_ARGUMENT before it is
   * sent. Raise it only together with the servers' jute.maxbuffer.
   */
  maxRequestBytes?: number;
  /**
   * Follow the ensemble's configuration (Curator's EnsembleTracker): the client reads
   * /zookeeper/config at each connection and each change, and its servers become the members'
   * client addresses (`currentConnectString`), keeping the session when members join or leave.
   * Not with `tls` (ZKR_INVALID_ARGUMENT).
   */
  trackEnsemble?: boolean;
  /** TLS (ZooKeeper's secureClientPort); `true`: the system's trust store, nothing else. */
  tls?: TlsOptions | boolean;
  /** SASL authentication at each connection; a refusal rejects with ZKR_AUTH_FAILED, never retried. */
  sasl?: SaslOptions;
  /**
   * Curator's ACLProvider: the ACL of each node this client creates (recipes' included), by its
   * server-side path. A function (`undefined`: `acl`, the default; what it throws fails the
   * create, nothing is sent), or path prefixes to ACLs (the longest matching prefix wins).
   */
  aclProvider?: ((path: string) => AclEntry[] | undefined | null) | Record<string, AclEntry[]>;
}

/**
 * A PEM input: a file path (read again at each new connection, so a rotated certificate is
 * used from the next reconnection on), PEM text (a string holding `-----BEGIN` anywhere or a
 * line break: text such as OpenSSL's `Bag Attributes` may come first), or a Buffer /
 * Uint8Array, always PEM text (UTF-8). Errors never show PEM text.
 */
export type Pem = string | Buffer | Uint8Array;

export interface TlsOptions {
  /** The CA certificate(s) that sign the servers' certificates (default: the system's trust store). */
  ca?: Pem;
  /** This client's certificate, for servers with ssl.clientAuth (its subject is the client's `x509` identity). */
  cert?: Pem;
  /** The certificate's unencrypted private key (PKCS#8, RSA or EC). */
  key?: Pem;
  /** The server's certificate must name the host it is reached at (default true). */
  verifyHostname?: boolean;
  /**
   * Every host speaks TLS (default true; false: only hosts written `tcp+tls://host:port`). No
   * silent plaintext: a host written `tcp://` with true, or no `tcp+tls://` host with false, is
   * ZKR_INVALID_ARGUMENT.
   */
  everyHost?: boolean;
}

export interface SaslOptions {
  /** 'DIGEST-MD5' (the default). */
  mechanism?: 'DIGEST-MD5';
  username: string;
  password: string;
}

export type WatchedEventType = 'CREATED' | 'DELETED' | 'DATA_CHANGED' | 'CHILDREN_CHANGED' | 'SESSION_ENDED' | 'WATCH_REMOVED';
/** What a one-shot watch saw (the core's list). */
export declare const WatchedEventType: Names<WatchedEventType>;

/** What a one-shot watch saw; `path` is relative to the namespace. */
export interface WatchedEvent {
  type: WatchedEventType;
  path: string;
}

export interface WatchOptions {
  /**
   * A one-shot watch, called once (`'SESSION_ENDED'` if the session ends before the node
   * changes), on this JS thread, in order with the client's 'state' events.
   */
  watch?: (event: WatchedEvent) => void;
}

export type CreateMode = 'PERSISTENT' | 'PERSISTENT_SEQUENTIAL' | 'EPHEMERAL' | 'EPHEMERAL_SEQUENTIAL' | 'CONTAINER' | 'PERSISTENT_WITH_TTL' | 'PERSISTENT_SEQUENTIAL_WITH_TTL';
/** Node types (the core's list). */
export declare const CreateMode: Names<CreateMode>;

export interface CreateOptions {
  mode?: CreateMode;
  /** Create missing parents as CONTAINER nodes. */
  createParents?: boolean | 'persistent';
  /** Curator's protected mode (`_c_<uuid>-` prefix, found again after a connection loss). */
  protected?: boolean;
  /** Store the data as Curator's GZIP provider does (read it with `getData(p, { compressed: true })`). */
  compressed?: boolean;
  /** The time to live of PERSISTENT_WITH_TTL / PERSISTENT_SEQUENTIAL_WITH_TTL nodes (required there). */
  ttlMs?: number;
  /** This node's own ACL, instead of the client's (`acl` / `aclProvider`); parents keep the client's. */
  acl?: AclEntry[];
}

export interface DeleteOptions {
  version?: number;
  /** Keep retrying in the background after a connection loss (Curator's guaranteed()). */
  guaranteed?: boolean;
  /** Delete the children first. */
  recursive?: boolean;
}

/** ZooKeeper's Stat. */
export interface Stat {
  czxid: bigint;
  mzxid: bigint;
  pzxid: bigint;
  /** Milliseconds since the epoch. */
  ctime: number;
  mtime: number;
  version: number;
  cversion: number;
  aversion: number;
  /** The owning session of an ephemeral node, else 0n. */
  ephemeralOwner: bigint;
  dataLength: number;
  numChildren: number;
}

export interface RequestCounts {
  create: number;
  delete: number;
  getData: number;
  setData: number;
  exists: number;
  getChildren: number;
}

export interface ClientEvents {
  state: [state: ConnectionState];
}

export type WatcherTypeName = 'CHILDREN' | 'DATA' | 'ANY' | 'PERSISTENT' | 'PERSISTENT_RECURSIVE';
/** The kinds of watches `client.removeWatches` removes (ZooKeeper's WatcherType; the core's list). */
export declare const WatcherType: Names<WatcherTypeName>;

/**
 * A ZooKeeper client (Curator's CuratorFramework). While open it keeps the process alive,
 * like a socket; `close()` (or `unref()`) lets it exit. An oversized create or setData (over
 * `maxRequestBytes`, by default the server's 1 MiB jute.maxbuffer, path and ACL included) rejects at once with
 * ZKR_INVALID_ARGUMENT naming the sizes; the session and its holds are untouched.
 */
export declare class Client extends EventEmitter<ClientEvents> {
  private constructor();
  /** Connects to `'host:port[,host:port...][/chroot]'`. */
  static connect(hosts: string, options?: ConnectOptions): Promise<Client>;
  readonly state: ConnectionState;
  /** The current session id (0n once closed). */
  readonly sessionId: bigint;
  readonly isClosed: boolean;
  /** `''` or `'/namespace'`. */
  readonly namespace: string;
  /** The largest request this client sends, in bytes (the `maxRequestBytes` option). */
  readonly maxRequestBytes: number;
  /** Ends the session: ephemeral nodes vanish, waits reject with ZKR_CLOSED. */
  close(): Promise<void>;
  /** Lets the process exit while this client is open. */
  unref(): this;
  /** Undoes unref(). */
  ref(): this;
  /** Resolves to the created node's actual path. */
  create(path: string, data?: Data | null, options?: CreateOptions): Promise<string>;
  /** `watch`: called once when the data changes or the node is deleted. */
  getData(path: string, options?: WatchOptions | { compressed?: boolean }): Promise<{ data: Buffer; stat: Stat }>;
  setData(path: string, data: Data | null, options?: { version?: number; compressed?: boolean }): Promise<Stat>;
  /** A new transaction (Curator's transaction()): operations committed all together or not at all. */
  transaction(): Transaction;
  /** The node's ACL (perms as bits) and stat; needs READ or ADMIN permission. */
  getAcl(path: string): Promise<{ acl: Array<{ perms: number; scheme: string; id: string }>; stat: Stat }>;
  /** Replaces the node's ACL (at ACL `version`, the stat's aversion, if given); the new stat. */
  setAcl(path: string, acl: AclEntry[], options?: { version?: number }): Promise<Stat>;
  /** The node's stat, or null. `watch`: called once when it is created, deleted or changed. */
  exists(path: string, options?: WatchOptions): Promise<Stat | null>;
  /** `watch`: called once when a child is added or removed, or the node is deleted. */
  getChildren(path: string, options?: WatchOptions): Promise<string[]>;
  delete(path: string, options?: DeleteOptions): Promise<void>;
  /**
   * ZooKeeper's sync (Curator's sync()): the server this client talks to catches up with the
   * leader before answering, so a read issued after this resolves sees every write committed
   * before the call, by any client. A reconnection in between loses that: sync again once the
   * connection is back. A missing node is fine.
   */
  sync(path: string): Promise<void>;
  /**
   * Removes this client's watches of `type` on `path` (ZooKeeper's removeAllWatches): removed
   * one-shot watches are called with WATCH_REMOVED, removed PersistentWatchers emit WATCH_REMOVED
   * last; ZKR_NO_WATCHER when there is none of that kind. One-shot kinds are removed on the
   * server first: `local: false` (default) rejects when it cannot be reached and removes nothing;
   * `local: true` removes here whatever the server says. Persistent kinds are removed here at once.
   * A cache whose watch is removed sets it again and resyncs. Before ZooKeeper 3.9 (ZOOKEEPER-4472,
   * 4471) a persistent watch stripped by a data or child removal is set again, its users hear
   * RECONNECTED.
   */
  removeWatches(path: string, type: WatcherTypeName, options?: { local?: boolean }): Promise<void>;
  /**
   * Curator's blockUntilConnected(timeout): true once connected (CONNECTED, RECONNECTED or
   * READ_ONLY; at once if it is now), false when `timeoutMs` (omitted: no limit; 0: look once)
   * ran out first. Rejects with ZKR_CLOSED on a closed client.
   */
  waitForState(options?: { timeoutMs?: number }): Promise<boolean>;
  /** The ensemble's configuration (/zookeeper/config, Curator's getConfig().forEnsemble()). */
  getConfig(): Promise<EnsembleConfig>;
  /**
   * Changes the ensemble's members (Curator's reconfig()): `joining` server lines and `leaving`
   * ids, or `newMembers`; `fromConfig` only if the configuration is still that version (else
   * ZKR_BAD_VERSION, before anything is sent; a version-only change whose reply was lost while
   * the version moved: ZKR_OUTCOME_UNKNOWN). Needs
   * reconfigEnabled=true (else ZKR_SERVER, zkCode -123) and a superuser session (else ZKR_NO_AUTH).
   */
  reconfig(options: ReconfigOptions): Promise<EnsembleConfig>;
  /**
   * The servers the client connects to now: its hosts or, with `trackEnsemble`, the members as
   * the tracker last read them (with the chroot).
   */
  readonly currentConnectString: string;
  /** Testing only (addon built with `--testing`): expires the session on the server, waits for LOST. */
  _expireSessionForTesting(): Promise<void>;
  /** Testing only: requests sent so far. */
  _requestCounts(): RequestCounts;
}

// ---------------------------------------------------------------------------------------------
// Locks

export interface AcquireOptions {
  /** Give up after this many milliseconds (resolve false); omitted or Infinity: no limit; 0: one try. */
  timeoutMs?: number;
  /** Acquire for this owner instead of the current one. */
  owner?: Owner;
}

export interface OwnerOptions {
  owner?: Owner;
}

export type LostPolicy = 'standard' | 'session';

export interface LockOptions {
  /** 'standard' (default): a hold is lost on SUSPENDED or LOST; 'session': only on LOST. */
  lostPolicy?: LostPolicy;
}

/**
 * The fairness bound of cohort handoffs (`new InterProcessMutex(client, path, { cohort })`).
 *
 * With cohort handoffs the owners of ONE mutex object queue in memory behind the object's one
 * lock node, and a release hands the hold to the next local owner without a ZooKeeper round
 * trip. A node is handed over at most `maxHandoffs` times and for at most `maxHoldMs` after it
 * was granted; then, if another contender (another process or object) has a node on the lock
 * path, the node is released and the local owners queue again behind it; with nobody else
 * waiting the budget starts over.
 *
 * Local holders of one node share its czxid, the plain `fencingToken`: fence with
 * `fencingTokenWide`, which strictly increases from holder to holder, also across handoffs.
 */
export interface CohortOptions {
  /** Local handoffs on one node before checking for other contenders: an integer in 1..2**32-1 (default 64). */
  maxHandoffs?: number;
  /** How long, in milliseconds, one node may be passed around locally before checking: finite, >= 0 (default 20). */
  maxHoldMs?: number;
}

/** The options of `new InterProcessMutex`. */
export interface MutexOptions extends LockOptions {
  /**
   * Cohort handoffs (see `CohortOptions`): `true` for the defaults (64 handoffs, 20 ms), or the
   * bound; omitted or `false`: none. A mutex with cohort handoffs is not revocable
   * (`makeRevocable` throws `ZKR_INVALID_ARGUMENT`). Fence with `fencingTokenWide`, not `fencingToken`.
   */
  cohort?: CohortOptions | boolean;
}

export interface LockEvents {
  /** A hold of `owner` was lost (its session SUSPENDED or LOST, or its node deleted by someone else, noticed once the hold has lasted 100 ms): stop trusting it. */
  lost: [owner: Owner | bigint];
  /** Another process asked this hold to be released (`attemptRevoke`), after `makeRevocable()`. */
  revoke: [owner: Owner | bigint];
}

/**
 * Curator's InterProcessMutex: reentrant per owner, fair, with fencing tokens.
 *
 * A mutex collected by the garbage collector while held keeps its lock node until the session
 * ends (nobody can release it any more); a process warning `ZKR_LOCK_GARBAGE_COLLECTED` says so.
 * Release it (or use `withLock`) before dropping the last reference.
 */
export declare class InterProcessMutex extends EventEmitter<LockEvents> {
  /**
   * A mutex on `path`. With `{ cohort }` this object's owners share one lock node through
   * cohort handoffs (see `CohortOptions`); bad options throw ZKR_INVALID_ARGUMENT.
   */
  constructor(client: Client, path: string, options?: MutexOptions);
  readonly path: string;
  /**
   * Resolves to whether it was acquired (true unless `timeoutMs` passed).
   *
   * **Owners:** without `{ owner }` and outside `withLock` / `owner.run`, the owner is this JS
   * thread's, shared by ALL its async tasks: two concurrent tasks acquiring that way would
   * both be let in (a re-entry). Give each concurrent task its own owner (`withLock(fn)`,
   * `owner.run(fn)`, `{ owner: new Owner() }`). Where it can tell the tasks apart (both acquires
   * pending at once, or the lock held for another async flow), a second plain acquire rejects
   * with ZKR_NOT_OWNER instead of letting it in.
   */
  acquire(options?: AcquireOptions): Promise<boolean>;
  /** Releases one acquire; ZKR_NOT_OWNER if the owner holds none. */
  release(options?: OwnerOptions): Promise<void>;
  /** Runs `fn` holding the lock, in a context owned by the holder; ZKR_TIMEOUT if not acquired in time. */
  withLock<T>(fn: () => T | PromiseLike<T>, options?: AcquireOptions): Promise<T>;
  isOwnedByCurrentOwner(owner?: Owner): boolean;
  isAcquiredInThisProcess(): boolean;
  isHeldValid(owner?: Owner): boolean;
  /**
   * The current owner's fencing token (the lock node's czxid), or null. With cohort handoffs
   * the local holders of one node share it: use `fencingTokenWide` to fence.
   */
  readonly fencingToken: bigint | null;
  fencingTokenOf(owner: Owner): bigint | null;
  /**
   * The current owner's wide fencing token, or null: `czxid << 32n | handoff`, where `handoff`
   * counts the local cohort handoffs on that node before this hold (0 without cohort
   * handoffs). Strictly greater than any earlier holder's, across processes and across cohort
   * handoffs inside this one; every process fencing one resource must use the wide token.
   */
  readonly fencingTokenWide: bigint | null;
  /** `owner`'s wide fencing token (see `fencingTokenWide`), or null. */
  fencingTokenWideOf(owner: Owner): bigint | null;
  /** How many owners of this object wait in its cohort's local queue (0 without cohort handoffs). */
  readonly localWaiters: number;
  /** The cohort options this mutex runs with (defaults filled in), or null without cohort handoffs. */
  readonly cohortOptions: Required<CohortOptions> | null;
  /** The current owner's lock node path, or null. */
  readonly lockNode: string | null;
  participantNodes(): Promise<string[]>;
  /**
   * Curator's makeRevocable: later holds are watched for `attemptRevoke` requests, each emitted
   * as `'revoke'` with the hold's owner (`listener` is added as a `'revoke'` listener). Cooperative:
   * the holder decides whether to release. Returns this lock.
   */
  makeRevocable(listener?: (owner: Owner | bigint) => void): this;
}

/**
 * Curator's Revoker.attemptRevoke: asks the holder of lock node `nodePath` (one of
 * `participantNodes()`) to release by writing `__REVOKE__` into it; a node already gone is fine.
 */
export declare function attemptRevoke(client: Client, nodePath: string): Promise<void>;

/** Curator's InterProcessReadWriteLock. */
export declare class InterProcessReadWriteLock {
  constructor(client: Client, path: string, options?: LockOptions);
  readLock(): InterProcessMutex;
  writeLock(): InterProcessMutex;
}

/** Curator's InterProcessSemaphoreMutex: not reentrant, not owned. */
export declare class InterProcessSemaphoreMutex {
  constructor(client: Client, path: string);
  acquire(options?: { timeoutMs?: number }): Promise<boolean>;
  release(): Promise<void>;
  withLock<T>(fn: () => T | PromiseLike<T>, options?: { timeoutMs?: number }): Promise<T>;
  isAcquiredInThisProcess(): boolean;
  readonly leaseNode: string | null;
}

export type LeaseLostReason = 'STATE' | 'CLOSED' | 'SESSION_CHANGED' | 'NODE_GONE';
/** Why a lease was lost (the core's list; `LeaseLost['reason']`). */
export declare const LeaseLostReason: Names<LeaseLostReason>;

/** Why a lease can no longer be counted on (`lease.waitLost()`; the core's `LeaseLost`). */
export type LeaseLost =
  | {
      /** The connection entered a state the lost policy counts as a loss. */
      reason: 'STATE';
      /** 'SUSPENDED' (policy 'standard') or 'LOST'. */
      state: ConnectionState;
      /** The core's sentence, e.g. "the ZooKeeper session was lost". */
      message: string;
    }
  | {
      /**
       * 'CLOSED': the client was closed; 'SESSION_CHANGED': the client's session is another than
       * the one that made the lease (the node went with the old one); 'NODE_GONE': the lease
       * node is gone or another session's.
       */
      reason: 'CLOSED' | 'SESSION_CHANGED' | 'NODE_GONE';
      state: null;
      message: string;
    };

export interface WaitLostOptions {
  /** 'standard' (default): SUSPENDED or LOST is a loss; 'session': only LOST. */
  lostPolicy?: LostPolicy;
  /** Resolve null after this many milliseconds; omitted or Infinity: no limit; 0: look once. */
  timeoutMs?: number;
}

/** A lease of an InterProcessSemaphoreV2 (collected un-returned: warning `ZKR_LOCK_GARBAGE_COLLECTED`). */
export declare class Lease {
  private constructor();
  readonly path: string;
  readonly czxid: bigint;
  readonly isReturned: boolean;
  /**
   * Resolves when the lease can no longer be counted on, saying why: the connection entered a
   * state the `lostPolicy` counts as a loss, the client closed, its session changed, or the
   * lease node is gone (read once). The connection is watched from this call on. Never settles
   * while the lease stays good, and returning the lease meanwhile does not settle it; resolves
   * null once `timeoutMs` passed. Rejects with `ZKR_CLOSED` for a lease already returned,
   * `ZKR_INVALID_ARGUMENT` for a bad option.
   */
  waitLost(options: WaitLostOptions & { timeoutMs: number }): Promise<LeaseLost | null>;
  waitLost(options?: { lostPolicy?: LostPolicy }): Promise<LeaseLost>;
  waitLost(options?: WaitLostOptions): Promise<LeaseLost | null>;
  release(): Promise<void>;
}

/** Curator's InterProcessSemaphoreV2. */
export declare class InterProcessSemaphoreV2 {
  /**
   * `maxLeases` fixed, or `{ count }`: a SharedCount whose value is the limit, read live
   * (raising it admits waiters at once; lowering it revokes nothing).
   */
  constructor(client: Client, path: string, maxLeases: number | { count: SharedCount });
  readonly path: string;
  /** The limit now (with `{ count }`, the count's value; 0 below 1). */
  readonly maxLeases: number;
  /** `qty` leases (default 1), or null if not all were acquired within `timeoutMs`; qty > a fixed maxLeases: ZKR_INVALID_ARGUMENT. */
  acquire(options?: { qty?: number; timeoutMs?: number }): Promise<Lease[] | null>;
  returnLease(lease: Lease): Promise<void>;
  returnAll(leases: Lease[]): Promise<void>;
  participantNodes(): Promise<string[]>;
}

/**
 * Curator's InterProcessMultiLock over mutexes at several paths: all or none. A lock taken
 * early whose hold was lost while the others were awaited (its session ended: another process
 * may hold it now; or, with the standard lost policy, the connection was suspended) is not
 * answered as held: everything is released and `acquire` rejects with
 * that lock's error (code `ZKR_SESSION_EXPIRED`, `ZKR_CONNECTION_LOSS` or `ZKR_CLOSED`).
 */
export declare class InterProcessMultiLock {
  constructor(client: Client, paths: string[]);
  readonly paths: string[];
  readonly path: string;
  acquire(options?: AcquireOptions): Promise<boolean>;
  release(options?: OwnerOptions): Promise<void>;
  withLock<T>(fn: () => T | PromiseLike<T>, options?: AcquireOptions): Promise<T>;
  isAcquiredInThisProcess(): boolean;
}

// ---------------------------------------------------------------------------------------------
// Leader election

export interface Participant {
  id: string;
  isLeader: boolean;
}

export type CloseMode = 'SILENT' | 'NOTIFY_LEADER';

export interface LeaderLatchOptions {
  id?: string;
  closeMode?: CloseMode;
  lostPolicy?: LostPolicy;
}

export interface LeaderLatchEvents {
  isLeader: [];
  notLeader: [];
}

/** What a LeaderLatch and a LeaderSelector have in common (not exported at run time). */
declare abstract class LeaderParticipant<Events extends Record<keyof Events, unknown[]>> extends EventEmitter<Events> {
  hasLeadership(): boolean;
  /** The leadership epoch / the term's fencing token while leading, else null. */
  readonly leadershipEpoch: bigint | null;
  readonly state: 'LATENT' | 'STARTED' | 'CLOSED';
  readonly id: string;
  readonly path: string;
  getLeader(): Promise<Participant>;
  getParticipants(): Promise<Participant[]>;
}

/** Curator's LeaderLatch. */
export declare class LeaderLatch extends LeaderParticipant<LeaderLatchEvents> {
  constructor(client: Client, path: string, options?: LeaderLatchOptions);
  start(): Promise<void>;
  /** Resolves to whether this participant leads (false once `timeoutMs` passed). */
  await(options?: { timeoutMs?: number }): Promise<boolean>;
  readonly ourPath: string | null;
  close(options?: { closeMode?: CloseMode }): Promise<void>;
}

export interface LeaderObserverEvents {
  /** The leader changed (`{ id: '', isLeader: false }`: nobody leads). */
  change: [leader: Participant];
}

/**
 * Who leads a LeaderLatch / LeaderSelector group without taking part (etcd's Observe): one
 * children watch on the group. `await new LeaderObserver(client, path).start()`.
 */
export declare class LeaderObserver extends EventEmitter<LeaderObserverEvents> {
  constructor(client: Client, path: string);
  /** Starts observing; resolves to this observer once the current leader is known. */
  start(): Promise<this>;
  readonly path: string;
  /** The leader as last seen; null before start() resolved or after close(). */
  readonly leader: Participant | null;
  /** The next new leader since the last call (each change once), or null after `timeoutMs`. */
  waitChanged(options?: { timeoutMs?: number }): Promise<Participant | null>;
  close(): Promise<void>;
}

export type CancelReason = 'CONNECTION_SUSPENDED' | 'SESSION_LOST' | 'INTERRUPTED' | 'CLOSED';
/** Why leadership was cancelled (the core's list). */
export declare const CancelReason: Names<CancelReason>;

/** `ctx.signal.reason` once leadership is cancelled. */
export interface LeadershipCancelledError extends Error {
  code: 'ZKR_CONNECTION_LOSS' | 'ZKR_SESSION_EXPIRED' | 'ZKR_INTERRUPTED' | 'ZKR_CLOSED';
  reason: CancelReason;
}

/** One leadership term of a LeaderSelector. */
export declare class LeadershipContext {
  private constructor();
  /** Aborted when leadership is cancelled; its reason is a LeadershipCancelledError. */
  readonly signal: AbortSignal;
  readonly fencingToken: bigint | null;
  readonly term: number;
  readonly id: string;
  readonly path: string;
  readonly cancelReason: CancelReason | null;
}

export interface LeaderSelectorOptions {
  id?: string;
  autoRequeue?: boolean;
  lostPolicy?: LostPolicy;
}

export interface LeaderSelectorEvents {
  /** takeLeadership threw or rejected. */
  error: [err: unknown];
}

/** Curator's LeaderSelector: leadership lasts while `takeLeadership(ctx)` runs (on this JS thread). */
export declare class LeaderSelector extends LeaderParticipant<LeaderSelectorEvents> {
  constructor(
    client: Client,
    path: string,
    takeLeadership: (ctx: LeadershipContext) => void | PromiseLike<void>,
    options?: LeaderSelectorOptions,
  );
  autoRequeue(): this;
  start(): void;
  requeue(): boolean;
  interruptLeadership(): void;
  readonly leadershipCount: number;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Counters

export interface AtomicStats {
  optimisticTries: number;
  promotedLockTries: number;
  optimisticTimeMs: number;
  promotedTimeMs: number;
}

/** Curator's AtomicValue: check `succeeded` (or use addAndGet). */
export interface AtomicValue<T> {
  succeeded: boolean;
  preValue: T;
  postValue: T;
  stats: AtomicStats;
}

export interface PromotedToLockOptions {
  lockPath: string;
  timeoutMs?: number;
  retry?: RetryPolicy;
}

export interface AtomicOptions {
  retry?: RetryPolicy;
  promotedToLock?: PromotedToLockOptions;
}

/** Curator's counter API, for both widths: values are `T`, accepted as `In` (not exported at run time). */
declare abstract class Counter<T, In> {
  readonly path: string;
  get(): Promise<AtomicValue<T>>;
  add(delta: In): Promise<AtomicValue<T>>;
  subtract(delta: In): Promise<AtomicValue<T>>;
  increment(): Promise<AtomicValue<T>>;
  decrement(): Promise<AtomicValue<T>>;
  compareAndSet(expected: In, newValue: In): Promise<AtomicValue<T>>;
  trySet(value: In): Promise<AtomicValue<T>>;
  /** Sets the value whatever it was. After a lost reply it is resent only if certainly not applied: a ZKR_OUTCOME_UNKNOWN rejection when the node moved on further, is gone or cannot be read again (ours may have been applied and overwritten since; Curator resends it blindly). */
  forceSet(value: In): Promise<void>;
  initialize(value: In): Promise<boolean>;
  /** The new value, or a rejection (ZKR_TIMEOUT, ZKR_OUTCOME_UNKNOWN, ZKR_OVERFLOW; never "not succeeded"). */
  addAndGet(delta: In, options?: { timeoutMs?: number }): Promise<T>;
}

/** Curator's DistributedAtomicLong (values are bigint). */
export declare class DistributedAtomicLong extends Counter<bigint, Int64> {
  constructor(client: Client, path: string, options?: AtomicOptions);
}

/** Curator's DistributedAtomicInteger (values are 32-bit numbers). */
export declare class DistributedAtomicInteger extends Counter<number, number> {
  constructor(client: Client, path: string, options?: AtomicOptions);
}

/** Curator's VersionedValue: a count (`number`, the default) or bytes (`Buffer`, SharedValue). */
export interface VersionedValue<T = number> {
  version: number;
  value: T;
}

export interface SharedCountEvents {
  change: [value: number, version: number];
  state: [state: ConnectionState];
  /** The node holds data that is not a count (ZKR_CORRUPTED_DATA, at data version `version`). */
  error: [err: ZkrError & { version: number }];
}

/**
 * Curator's SharedCount. When the node is overwritten with data that is not a count, it emits
 * `'error'` (a process warning when nobody listens) and `count`, `getCount()` and
 * `getVersionedValue()` throw ZKR_CORRUPTED_DATA until a valid value is written.
 */
export declare class SharedCount extends EventEmitter<SharedCountEvents> {
  constructor(client: Client, path: string, seed?: number);
  readonly path: string;
  /** The count as last seen (the seed before start); throws ZKR_CORRUPTED_DATA (see above). */
  readonly count: number;
  start(): Promise<void>;
  getCount(): number;
  getVersionedValue(): VersionedValue;
  /** Sets the count whatever it was. After a lost reply it is resent only if certainly not applied: a ZKR_OUTCOME_UNKNOWN rejection when the node moved on further, is gone or cannot be read again (ours may have been applied and overwritten since; Curator resends it blindly). */
  setCount(count: number): Promise<void>;
  trySetCount(previous: VersionedValue, count: number): Promise<boolean>;
  close(): void;
}

/** Node data as the bytes recipes take it (a string is UTF-8). */
export type Bytes = Buffer | Uint8Array | string;

export interface SharedValueEvents {
  change: [value: Buffer, version: number];
  state: [state: ConnectionState];
}

/**
 * Curator's SharedValue: bytes watched by every client, with versioned writes. `trySetValue`
 * rejects with ZKR_OUTCOME_UNKNOWN if its reply was lost and its fate cannot be known.
 */
export declare class SharedValue extends EventEmitter<SharedValueEvents> {
  constructor(client: Client, path: string, seed?: Bytes);
  readonly path: string;
  start(): Promise<void>;
  /** The bytes as last seen (the seed before start). */
  getValue(): Buffer;
  getVersionedValue(): VersionedValue<Buffer>;
  /** Sets the value whatever it was. After a lost reply it is resent only if certainly not applied: a ZKR_OUTCOME_UNKNOWN rejection when the node moved on further, is gone or cannot be read again (ours may have been applied and overwritten since; Curator resends it blindly). */
  setValue(value: Bytes): Promise<void>;
  trySetValue(previous: VersionedValue<Bytes>, value: Bytes): Promise<boolean>;
  close(): void;
}

/** Curator's DistributedAtomicValue: values are Buffers, or null for a missing node. */
export declare class DistributedAtomicValue {
  constructor(client: Client, path: string, options?: AtomicOptions);
  readonly path: string;
  get(): Promise<AtomicValue<Buffer | null>>;
  compareAndSet(expected: Bytes, newValue: Bytes): Promise<AtomicValue<Buffer | null>>;
  trySet(value: Bytes): Promise<AtomicValue<Buffer | null>>;
  /** Sets the value whatever it was. After a lost reply it is resent only if certainly not applied: a ZKR_OUTCOME_UNKNOWN rejection when the node moved on further, is gone or cannot be read again (ours may have been applied and overwritten since; Curator resends it blindly). */
  forceSet(value: Bytes): Promise<void>;
  initialize(value: Bytes): Promise<boolean>;
}

/** Curator's CachedAtomicLong: ids (`postValue`) from ranges of `cacheFactor` reserved at a time. */
export declare class CachedAtomicLong {
  constructor(counter: DistributedAtomicLong, cacheFactor: number);
  readonly counter: DistributedAtomicLong;
  next(): Promise<AtomicValue<bigint>>;
}

/** Curator's CachedAtomicInteger: CachedAtomicLong over a DistributedAtomicInteger. */
export declare class CachedAtomicInteger {
  constructor(counter: DistributedAtomicInteger, cacheFactor: number);
  readonly counter: DistributedAtomicInteger;
  next(): Promise<AtomicValue<number>>;
}

// ---------------------------------------------------------------------------------------------
// Logging (opt-in)

export type LogLevelName = 'ERROR' | 'WARN' | 'INFO' | 'DEBUG' | 'TRACE';
/** Log levels, most severe first (the core's list). */
export declare const LogLevel: Names<LogLevelName>;

/** One of the core's log records. */
export interface LogRecord {
  level: LogLevelName;
  /** Where it comes from: `zkrecipes::client::connection`, `zkrecipes::lock`, ... */
  target: string;
  /** The message, followed by the fields as `key=value`. */
  message: string;
  /** The structured fields. */
  fields: Record<string, string>;
}

/**
 * Sends zkrecipes' log records of `level` (default 'INFO'; any case) and more severe to `sink`:
 * connection states (INFO; SUSPENDED and LOST at WARN), session expiry (WARN), retries (DEBUG),
 * lost holds and leadership (WARN), corrupted nodes (ERROR). One sink per process (the last call
 * wins); records arrive one at a time, in order, on this JS thread. `setLogger(null)` turns
 * logging off. Nothing is logged unless this is called, or the environment says
 * `ZKRECIPES_LOG=warn` (any level name), which logs to stderr from the start.
 */
export declare function setLogger(sink: ((record: LogRecord) => void) | null, level?: LogLevelName | Lowercase<LogLevelName>): void;

// ---------------------------------------------------------------------------------------------
// Nodes and membership, transactions

export interface PersistentNodeOptions {
  /** Default 'EPHEMERAL'. */
  mode?: CreateMode;
  data?: Data | null;
  /** Curator's protected mode (`_c_<uuid>-` name prefix). */
  protected?: boolean;
  /** Required for the *_WITH_TTL modes. */
  ttlMs?: number;
}

export interface PersistentNodeEvents {
  /** The node is on the server, ours, with our data (after each create or check). */
  registered: [actualPath: string];
  /** The node is known to be gone (deleted, session ended or LOST); it is being created again. */
  unregistered: [actualPath: string];
  /** The path holds another live session's node: left untouched; the node stops trying. */
  conflict: [path: string];
}

/**
 * Curator's PersistentNode: kept on the server while started (created again after a delete, a
 * reconnect, a session expiry). Another live session's node at the path is never taken over:
 * `waitForInitialCreate()` rejects with ZKR_CONFLICT. `close()` deletes our own node only.
 */
export declare class PersistentNode extends EventEmitter<PersistentNodeEvents> {
  constructor(client: Client, path: string, options?: PersistentNodeOptions);
  readonly path: string;
  /** With the sequence number and protected prefix; null until created. */
  readonly actualPath: string | null;
  readonly data: Buffer;
  readonly registered: boolean;
  start(): Promise<void>;
  waitForInitialCreate(options?: { timeoutMs?: number }): Promise<boolean>;
  /** Written now when connected, else on the next create or reconnect. */
  setData(data: Data): void;
  close(): Promise<void>;
}

/**
 * Curator's PersistentTtlNode: a CONTAINER node with a `touch` child of `ttlMs`, touched every
 * `ttlMs / 2`; gone within the TTL once its owner stops. `close()` does not delete it.
 */
export declare class PersistentTtlNode {
  constructor(client: Client, path: string, ttlMs: number, options?: { data?: Data | null });
  readonly path: string;
  start(): Promise<void>;
  waitForInitialCreate(options?: { timeoutMs?: number }): Promise<boolean>;
  setData(data: Data): void;
  close(): Promise<void>;
}

export interface GroupMemberEvents {
  /** Each new membership: member id → payload. */
  change: [members: Map<string, Buffer>];
}

/**
 * Curator's GroupMember: the ephemeral node `path/id` with `payload`, and the group's
 * membership. `start()` rejects with ZKR_CONFLICT when another live session holds the id.
 */
export declare class GroupMember extends EventEmitter<GroupMemberEvents> {
  constructor(client: Client, path: string, id: string, payload?: Data | null);
  readonly path: string;
  readonly id: string;
  start(): Promise<void>;
  /** Every member id → payload, this member's own included. */
  currentMembers(): Map<string, Buffer>;
  setThisData(payload: Data): void;
  close(): Promise<void>;
  [Symbol.asyncIterator](): AsyncIterator<Map<string, Buffer>>;
}

/** What one operation of a committed transaction did. */
export interface OpResult {
  type: 'create' | 'delete' | 'setData' | 'check';
  /** A create's actual path. */
  path?: string;
  /** The new stat of a create or setData. */
  stat?: Stat;
}

/**
 * Curator's transaction(): all or nothing. A failed commit rejects with the failing operation's
 * code and its `index` (nothing applied); ZKR_OUTCOME_UNKNOWN when the reply was lost.
 */
export declare class Transaction {
  create(path: string, data?: Data | null, options?: { mode?: CreateMode; ttlMs?: number; acl?: AclEntry[] }): this;
  delete(path: string, options?: { version?: number }): this;
  setData(path: string, data: Data | null, options?: { version?: number }): this;
  check(path: string, version: number): this;
  commit(): Promise<OpResult[]>;
}
/** The package's version (the same as package.json's, the C header's and Python's `__version__`). */
export declare const version: string;

// Only what is exported above is the package's (the helper classes are not exported at run time).
export {};

// ---------------------------------------------------------------------------------------------
// Caches (Curator 5.x's CuratorCache; NodeCache, PathChildrenCache and TreeCache as views)

export type CacheEventTypeName = 'CREATED' | 'CHANGED' | 'DELETED' | 'INITIALIZED' | 'RESYNCED';
/** What a cache event says (the core's list). */
export declare const CacheEventType: Names<CacheEventTypeName>;
export type StartModeName = 'NORMAL' | 'BUILD_INITIAL_CACHE' | 'POST_INITIALIZED_EVENT';
/** PathChildrenCache's start modes (Curator's StartMode; the core's list). */
export declare const StartMode: Names<StartModeName>;

/** A cached node (Curator's ChildData); `data` is null for a stats-only cache. */
export interface ChildData {
  path: string;
  data: Buffer | null;
  stat: Stat;
}

/**
 * One change seen by a cache: `old` before (CHANGED, DELETED), `new` after (CREATED, CHANGED);
 * `resync` marks a difference found by a resync after a reconnect or a new session.
 */
export interface CacheEvent {
  type: CacheEventTypeName;
  path: string;
  old: ChildData | null;
  new: ChildData | null;
  resync: boolean;
}

export interface CacheEvents {
  event: [event: CacheEvent];
}

/**
 * What every cache has. Events: `cache.on('event', fn)` (listeners added before `start()` hear
 * the initial load) and `for await (const ev of cache)` (from then on; ends at `close()`).
 * `for (const node of cache)` iterates the snapshot, sorted by path. A cache never writes.
 */
export declare class Cache extends EventEmitter<CacheEvents> implements Iterable<ChildData>, AsyncIterable<CacheEvent> {
  readonly path: string;
  /** How many nodes are cached. */
  readonly size: number;
  readonly initialized: boolean;
  /** How many resyncs (after reconnects or new sessions) completed. */
  readonly resyncs: number;
  start(): Promise<void>;
  /** Whether the initial load completed within `timeoutMs` (omitted: no limit). */
  awaitInitialized(timeoutMs?: number): Promise<boolean>;
  /** Read-your-writes: whether every change up to `zxid` (a stat's mzxid/czxid) was applied. */
  awaitZxid(zxid: bigint | number, timeoutMs?: number): Promise<boolean>;
  get(path: string): ChildData | null;
  snapshot(): ChildData[];
  events(): AsyncIterableIterator<CacheEvent>;
  /**
   * Adds `fn` as a listener of its own; its id, for `unlisten`. `replay: true`: it first hears
   * the current contents as CREATED events, then what happens next (nothing missed, nothing twice).
   */
  listen(fn: (event: CacheEvent) => void, options?: { replay?: boolean }): bigint;
  /** Removes a listener added by `listen`; whether it was there. */
  unlisten(id: bigint | number): boolean;
  [Symbol.iterator](): Iterator<ChildData>;
  [Symbol.asyncIterator](): AsyncIterator<CacheEvent>;
  close(): void;
}

/**
 * Curator 5.x's CuratorCache: the whole subtree (`maxDepth` 0: the root alone). `pathFilter`
 * (Curator's selector): false leaves a node and everything below it out; called on the JS thread
 * for the root and each level below it (keep it quick); one that throws keeps the node.
 */
export declare class CuratorCache extends Cache {
  constructor(
    client: Client,
    path: string,
    options?: { data?: boolean; maxDepth?: number; pathFilter?: (path: string) => boolean },
  );
}

/** Curator's NodeCache: one node. */
export declare class NodeCache extends Cache {
  constructor(client: Client, path: string);
  readonly currentData: ChildData | null;
}

/** Curator's PathChildrenCache: the children of `path` (not the path itself). */
export declare class PathChildrenCache extends Cache {
  constructor(client: Client, path: string, options?: { cacheData?: boolean; startMode?: StartModeName });
  readonly currentData: ChildData[];
}

/** Curator's TreeCache: the subtree to `maxDepth`. */
export declare class TreeCache extends Cache {
  constructor(client: Client, path: string, options?: { maxDepth?: number });
}

export type WatcherEventTypeName =
  | 'CREATED'
  | 'DELETED'
  | 'DATA_CHANGED'
  | 'CHILDREN_CHANGED'
  | 'DISCONNECTED'
  | 'RECONNECTED'
  | 'SESSION_LOST'
  | 'WATCH_REMOVED';
/** What a PersistentWatcher hears (the core's list). */
export declare const WatcherEventType: Names<WatcherEventTypeName>;

/**
 * A persistent watcher's event: a node event with the node's path, or a connection event
 * (DISCONNECTED, RECONNECTED, SESSION_LOST) with `path` null. RECONNECTED means changes made
 * meanwhile were not reported: read again what matters.
 */
export type WatcherEvent =
  | { type: 'CREATED' | 'DELETED' | 'DATA_CHANGED' | 'CHILDREN_CHANGED'; path: string }
  | { type: 'DISCONNECTED' | 'RECONNECTED' | 'SESSION_LOST' | 'WATCH_REMOVED'; path: null };

export interface WatcherEvents {
  event: [event: WatcherEvent];
}

/**
 * Curator's PersistentWatcher: a persistent watch on `path` (ZooKeeper 3.6+'s addWatch), kept
 * after it fires and across reconnects and sessions until `close()`; `recursive` also covers
 * every node below it. Events: `watcher.on('event', fn)` and `for await (const ev of watcher)`.
 * Watchers and caches on one path of one client share one watch on the server, whatever their
 * modes (the recursive one serves the plain ones, filtered). `client.removeWatches` of its kind
 * ends it: WATCH_REMOVED is its last event.
 */
export declare class PersistentWatcher extends EventEmitter<WatcherEvents> implements AsyncIterable<WatcherEvent> {
  constructor(client: Client, path: string, options?: { recursive?: boolean });
  readonly path: string;
  readonly recursive: boolean;
  /** Whether it was started and is not closed. */
  readonly started: boolean;
  /** Sets the watch; resolves once the server has it. Once only. */
  start(): Promise<void>;
  events(): AsyncIterableIterator<WatcherEvent>;
  [Symbol.asyncIterator](): AsyncIterator<WatcherEvent>;
  /** Removes the watch; no event after this; `for await` loops end. Idempotent. */
  close(): void;
}

// ---------------------------------------------------------------------------------------------
// Barriers and queues (Curator's node names and item framing)

/** Curator's DistributedBarrier: waiters wait while the node at `path` exists. */
export declare class DistributedBarrier {
  constructor(client: Client, path: string);
  readonly path: string;
  setBarrier(): Promise<void>;
  removeBarrier(): Promise<void>;
  /** True once the barrier is removed, false after `timeoutMs`. */
  waitOnBarrier(options?: { timeoutMs?: number }): Promise<boolean>;
}

/** Curator's DistributedDoubleBarrier, one member (`memberQty` is a threshold, not a limit). */
export declare class DistributedDoubleBarrier {
  constructor(client: Client, path: string, memberQty: number);
  readonly path: string;
  readonly memberQty: number;
  /** This member's node name (a UUID). */
  readonly memberName: string;
  /** True once `memberQty` members are in; false after `timeoutMs` (our node removed). A member already in stays in, whatever entering again answers. */
  enter(options?: { timeoutMs?: number }): Promise<boolean>;
  /** True once every member has left; false after `timeoutMs`. */
  leave(options?: { timeoutMs?: number }): Promise<boolean>;
}

/** Curator's SimpleDistributedQueue: `qn-<seq>` nodes of raw bytes; at-most-once delivery. */
export declare class SimpleDistributedQueue {
  constructor(client: Client, path: string);
  readonly path: string;
  /** Resolves to the item's node path. */
  offer(data: Data): Promise<string>;
  take(options?: { timeoutMs?: number }): Promise<Buffer | null>;
  peek(): Promise<Buffer | null>;
  poll(): Promise<Buffer | null>;
}

/**
 * One taken item, valid until `done()` (completes it exactly once; rejects with
 * ZKR_SESSION_EXPIRED when our lock went with the session, or with ZKR_OUTCOME_UNKNOWN when a
 * reply was lost and the item is gone: it may have been completed by us), `release()` or
 * `giveBack()` (give it back). An item garbage-collected before any of them has its lock deleted
 * (with a lock path), so another consumer takes it; without a lock path the take removed it and
 * a collected item is gone.
 */
export declare class QueueItem {
  readonly data: Buffer;
  readonly messages: Buffer[];
  /** The czxid of this consumer's lock node: a later taker of the item gets a larger one. */
  readonly fencingToken: bigint;
  readonly node: string;
  /** The item's id (an id queue's), else null. */
  readonly id: string | null;
  done(): Promise<void>;
  /**
   * The consumer failed the item: with a lock path the queue's `errorMode` requeues it at the
   * tail (`'REQUEUE'`, the default) or deletes it (`'DELETE'`); rejects as `done()` does.
   */
  fail(): Promise<void>;
  /**
   * With a lock path, gives the item back where it was (taken again next). Without one the take
   * removed the item and this does nothing: see `giveBack()`.
   */
  release(): Promise<void>;
  /**
   * Gives the item back for another take without completing it, whatever the queue: with a
   * lock path it is `release()` (the item stayed in the queue); without one the item was
   * removed when it was taken, so it is put back at the tail with its messages and its key
   * (priority, delay, id), as a failed item is requeued. Rejects with `ZKR_OUTCOME_UNKNOWN`
   * when the put-back's reply was lost (not resent), and with `ZKR_INVALID_ARGUMENT` for an
   * item already completed, released or given back.
   */
  giveBack(): Promise<void>;
}

/** What `item.fail()` does with an item (Curator's ErrorMode; needs a lock path). */
export type ErrorMode = 'REQUEUE' | 'DELETE';

export interface QueueOptions {
  /** Curator's lock path: with it, consumption is exactly once. */
  lockPath?: string;
  /** Bound on the number of items (puts wait for room). */
  maxItems?: number;
  /** What `item.fail()` does (default `'REQUEUE'`); needs `lockPath`. */
  errorMode?: ErrorMode;
}

/** A completed put (Curator's QueuePutListener: putCompleted, or putMultiCompleted when `multi`). */
export interface QueuePut {
  /** The item's node path (with its sequence number). */
  node: string;
  /** The messages put: one for `put`, every one of `putMulti`. */
  messages: Buffer[];
  multi: boolean;
}

export interface QueueEvents {
  state: [state: ConnectionState];
  /** After every put or putMulti through this queue that succeeded. */
  put: [put: QueuePut];
}

/** What the DistributedQueue family shares. */
declare class DistributedQueueBase extends EventEmitter<QueueEvents> {
  readonly path: string;
  /** What `item.fail()` does; setting it needs a lock path. */
  errorMode: ErrorMode;
  /** The same as `on('put', listener)` (Curator's QueuePutListener). */
  addPutListener(listener: (put: QueuePut) => void): this;
  removePutListener(listener: (put: QueuePut) => void): this;
  take(options?: { timeoutMs?: number }): Promise<QueueItem | null>;
  /** Items as they come; ends when none came within `timeoutMs` (default: never). */
  consume(options?: { timeoutMs?: number }): AsyncGenerator<QueueItem, void, undefined>;
  length(): Promise<number>;
  close(): void;
}

/** Curator's DistributedQueue. */
export declare class DistributedQueue extends DistributedQueueBase {
  constructor(client: Client, path: string, options?: QueueOptions);
  put(data: Data, options?: { timeoutMs?: number }): Promise<boolean>;
  /** Puts `values` (at least one) as one item (Curator's putMulti). */
  putMulti(values: Data[], options?: { timeoutMs?: number }): Promise<boolean>;
}

/** Curator's DistributedIdQueue. */
export declare class DistributedIdQueue extends DistributedQueueBase {
  constructor(client: Client, path: string, options?: QueueOptions);
  put(data: Data, id: string, options?: { timeoutMs?: number }): Promise<boolean>;
  remove(id: string): Promise<number>;
}

/** Curator's DistributedPriorityQueue (lower first). */
export declare class DistributedPriorityQueue extends DistributedQueueBase {
  constructor(client: Client, path: string, options?: QueueOptions);
  put(data: Data, priority: number, options?: { timeoutMs?: number }): Promise<boolean>;
  putMulti(values: Data[], priority: number, options?: { timeoutMs?: number }): Promise<boolean>;
}

/** Curator's DistributedDelayQueue. */
export declare class DistributedDelayQueue extends DistributedQueueBase {
  constructor(client: Client, path: string, options?: QueueOptions);
  put(data: Data, delayUntil: Date | number, options?: { timeoutMs?: number }): Promise<boolean>;
  putMulti(values: Data[], delayUntil: Date | number, options?: { timeoutMs?: number }): Promise<boolean>;
}

export interface QueueSharderOptions {
  /** The parent of the shards' lock paths (shard S locks under `lockPath/S`). */
  lockPath?: string;
  /** The shards' error mode (needs `lockPath`). */
  errorMode?: ErrorMode;
  /** Items in a shard that make the leader add one (Curator's default 10000). */
  newQueueThreshold?: number;
  /** How often the shards are counted (Curator's default 30000). */
  thresholdCheckMs?: number;
  /** The most shards (Curator's default 10). */
  maxQueues?: number;
}

/**
 * Curator's QueueSharder: DistributedQueue shards `queuePath/queue-<UUID>`, one added by the
 * sharders' leader (a LeaderLatch at `leaderPath`) when a shard holds the threshold.
 */
export declare class QueueSharder {
  constructor(client: Client, queuePath: string, leaderPath: string, options?: QueueSharderOptions);
  readonly path: string;
  readonly shardQty: number;
  readonly queuePaths: string[];
  readonly isLeader: boolean;
  start(): Promise<void>;
  close(): Promise<void>;
  /** A shard for puts (one under the threshold, at random). */
  getQueue(): DistributedQueue;
  /** The next item of any shard, or null after `timeoutMs`. */
  take(options?: { timeoutMs?: number }): Promise<QueueItem | null>;
  consume(options?: { timeoutMs?: number }): AsyncGenerator<QueueItem, void, undefined>;
}

// ---------------------------------------------------------------------------------------------
// Service discovery (Curator's curator-x-discovery: the same `basePath/name/id` nodes and JSON)

export type ServiceTypeName = 'DYNAMIC' | 'STATIC' | 'PERMANENT' | 'DYNAMIC_SEQUENTIAL';
/** How an instance is registered (the core's list). */
export declare const ServiceType: Names<ServiceTypeName>;
export type ServiceCacheEventKindName = 'ADDED' | 'UPDATED' | 'REMOVED' | 'INVALID' | 'INITIALIZED';
/** What a ServiceCache event says (the core's list). */
export declare const ServiceCacheEventKind: Names<ServiceCacheEventKindName>;
export type ProviderStrategyName = 'round_robin' | 'random' | 'sticky';
/** How a ServiceProvider picks: `ProviderStrategy.ROUND_ROBIN === 'round_robin'`. */
export declare const ProviderStrategy: Readonly<{ ROUND_ROBIN: 'round_robin'; RANDOM: 'random'; STICKY: 'sticky' }>;

/** Any JSON value (a service instance's payload). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** The key of `ServiceInstance.readFrom`. */
declare const serviceInstanceReadFrom: unique symbol;

/**
 * What an instance read from a node keeps beyond its fields: the node's JSON and the payload as
 * first seen (its `JSON.stringify`). Fields a newer writer added and the payload's exact text
 * are written back from it while unchanged.
 */
export interface ServiceInstanceReadFrom {
  readonly node: Buffer;
  readonly payload: string;
}

/**
 * One instance of a service (Curator's ServiceInstance), a plain object. Absent values are null;
 * `payloadClass` is the Java class Curator's Jackson records with the payload
 * (`'java.util.ArrayList'` for a list, `'com.example.Details'` for an object), null for plain JSON.
 */
export interface ServiceInstance {
  name: string;
  id: string;
  address: string | null;
  port: number | null;
  sslPort: number | null;
  payload: JsonValue;
  /**
   * The payload's JSON text as on the node (null without a payload), on instances read from
   * ZooKeeper: exact where `payload` rounds an integer past 2^53 (a Java `long` id). Not
   * enumerable: it is not spread, compared or written back. To write such a payload, give
   * `payloadJson` (a JSON text) instead of `payload`.
   */
  readonly payloadJson?: string | null;
  payloadClass: string | null;
  /** Milliseconds since the epoch. */
  registrationTimeUTC: number;
  serviceType: ServiceTypeName;
  /** A UriSpec template. */
  uriSpec: string | null;
  enabled: boolean;
  /**
   * On an instance read from a node that holds more than these fields show (unknown fields, a
   * payload's text): kept by a spread (`{ ...instance, port: 81 }`), written back while unchanged.
   */
  [serviceInstanceReadFrom]?: ServiceInstanceReadFrom;
}

/** What `register`, `update` and the ServiceInstance functions accept: `name` and any other field. */
export type ServiceInstanceInput = { name: string } & Partial<
  Omit<ServiceInstance, 'name' | 'uriSpec' | 'payload' | 'payloadJson'> & {
    uriSpec: string | UriSpec | null;
    payload: unknown;
    /** The payload as a JSON text, written as is (instead of `payload`, not with it). */
    payloadJson: string | null;
  }
>;

/** Makes and converts instances (Curator's ServiceInstanceBuilder and JsonInstanceSerializer). */
export declare const ServiceInstance: {
  /**
   * The symbol under which a read instance keeps what its fields do not show (see
   * ServiceInstanceReadFrom); `delete instance[ServiceInstance.readFrom]` writes the fields alone.
   */
  readonly readFrom: typeof serviceInstanceReadFrom;
  /** Every field: `id` a random UUID and `registrationTimeUTC` now unless given; checked. */
  create(name: string, options?: Omit<ServiceInstanceInput, 'name'>): ServiceInstance;
  /** Curator's JSON bytes; `enabled` only with `{ compatible: false }`. */
  toJson(instance: ServiceInstanceInput, options?: { compatible?: boolean }): Buffer;
  /** Reads a node's bytes; ZKR_CORRUPTED_DATA saying what is wrong otherwise. */
  fromJson(data: Data): ServiceInstance;
  /** Renders the instance's `uriSpec` (`''` without one). */
  buildUri(instance: ServiceInstanceInput, variables?: Record<string, string>): string;
};

/** Curator's UriSpec: `new UriSpec('{scheme}://{address}:{port}/v1').build(instance)`. */
export declare class UriSpec {
  constructor(template: string);
  build(instance?: ServiceInstanceInput | null, variables?: Record<string, string>): string;
  /** The template. */
  toString(): string;
}

/** One registered instance (from `discovery.register`). */
export declare class Registration {
  private constructor();
  /** The instance as registered (its last update). */
  readonly instance: ServiceInstance;
  /** `basePath/name/id` (plus the sequence number of a DYNAMIC_SEQUENTIAL instance). */
  readonly path: string;
  /** Whether the node is on the server as far as this client knows. */
  readonly registered: boolean;
  /**
   * Replaces the instance (same name, id and serviceType); returns at once. ZKR_CLOSED once
   * unregistered; ZKR_CONFLICT once the registration ended in a conflict (register it again).
   */
  update(instance: ServiceInstanceInput): void;
  /** A disabled instance is never picked by a provider. Throws as `update`. */
  setEnabled(enabled: boolean): void;
  waitRegistered(options?: { timeoutMs?: number }): Promise<boolean>;
  /**
   * Deletes the node (ours only; a PERMANENT one too, even after `discovery.close()` left it)
   * and stops keeping it; calling it again resolves. The delete is guaranteed: when it cannot
   * be done now (no connection within the retry policy) this rejects with ZKR_CONNECTION_LOSS
   * and the delete goes on in the background until it succeeds, the node is gone or no
   * longer ours, or the client closes.
   */
  unregister(): Promise<void>;
}

/** Curator's ServiceDiscovery over `basePath`. */
export declare class ServiceDiscovery {
  constructor(client: Client, basePath: string);
  readonly basePath: string;
  /**
   * Resolves once the node is on the server; ZKR_CONFLICT if another live session holds the id.
   * An id registered already is updated, unless its registration ended in a conflict: then it
   * is registered afresh. A register that fails leaves no node behind.
   */
  register(instance: ServiceInstanceInput): Promise<Registration>;
  queryForNames(): Promise<string[]>;
  queryForInstances(name: string): Promise<ServiceInstance[]>;
  /** The instance, or null; ZKR_CORRUPTED_DATA when its node does not decode. */
  queryForInstance(name: string, id: string): Promise<ServiceInstance | null>;
  /**
   * Unregisters every instance it registered but the PERMANENT ones, all at once; then
   * ZKR_CLOSED. Rejects with the first error an unregister met (ZKR_CONNECTION_LOSS: the deletes
   * go on in the background, see `Registration.unregister`).
   */
  close(): Promise<void>;
}

/**
 * A ServiceCache event: `instance` after (ADDED, UPDATED) or as last known (REMOVED), `old`
 * before (UPDATED), `error` why a node does not decode (INVALID, ZKR_CORRUPTED_DATA); `resync`
 * marks a change found by a resync after a reconnect or a new session.
 */
export interface ServiceCacheEvent {
  kind: ServiceCacheEventKindName;
  path: string;
  instance: ServiceInstance | null;
  old: ServiceInstance | null;
  error: ZkrError | null;
  resync: boolean;
}

export interface ServiceCacheEvents {
  event: [event: ServiceCacheEvent];
}

/**
 * Curator's ServiceCache: the instances of one service. Events: `cache.on('event', fn)` and
 * `for await (const ev of cache)` (`events({ replay: true })`: the cached instances first).
 */
export declare class ServiceCache extends EventEmitter<ServiceCacheEvents> implements AsyncIterable<ServiceCacheEvent> {
  constructor(discovery: ServiceDiscovery, name: string);
  readonly name: string;
  /** Sets the watch (see `awaitInitialized` for the first load). */
  start(): Promise<void>;
  awaitInitialized(timeoutMs?: number): Promise<boolean>;
  awaitZxid(zxid: bigint | number, timeoutMs?: number): Promise<boolean>;
  /** The instances now, sorted by id (no server call). */
  instances(): ServiceInstance[];
  events(options?: { replay?: boolean }): AsyncIterableIterator<ServiceCacheEvent>;
  [Symbol.asyncIterator](): AsyncIterator<ServiceCacheEvent>;
  close(): void;
}

export interface ServiceProviderOptions {
  /** Default 'round_robin'. */
  strategy?: ProviderStrategyName;
  /** Called with each cached instance at each pick (on the JS thread); falsy: never picked. */
  filter?: (instance: ServiceInstance) => unknown;
  /** noteError calls that make an instance down (default 2). */
  downErrorThreshold?: number;
  /** How long a down instance is left out, from its first noted error (default 30000). */
  downTimeoutMs?: number;
}

/** Curator's ServiceProvider: never a disabled or down instance. After `close()`, ZKR_CLOSED. */
export declare class ServiceProvider {
  constructor(discovery: ServiceDiscovery, name: string, options?: ServiceProviderOptions);
  readonly name: string;
  /** Starts the cache; resolves once it is loaded. */
  start(): Promise<void>;
  /** An instance by the strategy, or null. */
  getInstance(): ServiceInstance | null;
  getAllInstances(): ServiceInstance[];
  noteError(instance: ServiceInstanceInput): void;
  close(): void;
}

// ---------------------------------------------------------------------------------------------
// kazoo's recipes (SetPartitioner, NonBlockingLease, MultiNonBlockingLease), on kazoo's layout

export type PartitionState = 'ALLOCATING' | 'ACQUIRED' | 'RELEASE' | 'FAILURE';
/** kazoo's PartitionState (the core's list). */
export declare const PartitionState: Names<PartitionState>;

export interface SetPartitionerOptions {
  /** This member's identifier in the party (default `<hostname>-<pid>`). */
  identifier?: string;
  /** How long the party must be unchanged before the set is divided (default 30000, kazoo's). */
  timeBoundaryMs?: number;
  /** How long one attempt at a partition's lock waits before checking the party (default 1000). */
  maxReactionTimeMs?: number;
  /**
   * kazoo's `partition_func`: this member's partitions, from its identifier, the party's
   * identifiers (the server's listing order) and the set as given. Every member must compute the
   * same division (kazoo members without one use kazoo's default). Thrown, or a name not in the
   * set or named twice: FAILURE, and the member leaves the party.
   */
  partitionFunc?: (identifier: string, members: string[], set: string[]) => Iterable<string>;
}

export interface SetPartitionerEvents {
  /** Each new state. */
  state: [state: PartitionState];
}

/**
 * kazoo's SetPartitioner: the members of a party divide `set` among themselves, each partition to
 * exactly one member, and divide it again when members come or go; kazoo processes share the
 * path. `await start()` joins. In RELEASE call `releaseSet()` soon (other members wait for it).
 */
export declare class SetPartitioner extends EventEmitter<SetPartitionerEvents> {
  constructor(client: Client, path: string, set: Iterable<string>, options?: SetPartitionerOptions);
  readonly path: string;
  readonly identifier: string;
  readonly state: PartitionState;
  readonly failed: boolean;
  readonly release: boolean;
  readonly allocating: boolean;
  readonly acquired: boolean;
  /** This member's partitions, sorted, while ACQUIRED; `[]` otherwise. */
  readonly partitions: string[];
  snapshot(): [PartitionState, string[]];
  [Symbol.iterator](): Iterator<string>;
  start(): Promise<void>;
  /** Waits while ALLOCATING (default 30000 ms); whether ACQUIRED then. */
  waitForAcquire(options?: { timeoutMs?: number }): Promise<boolean>;
  /** Resolves to the state once it is no longer `seen` (default: the state now). */
  waitForChange(seen?: PartitionState | null, options?: { timeoutMs?: number }): Promise<PartitionState>;
  releaseSet(): Promise<void>;
  /** FAILURE at once, then the locks released and the party left. */
  finish(): Promise<void>;
  close(): Promise<void>;
  [Symbol.asyncIterator](): AsyncIterator<PartitionState>;
}

export interface LeaseOptions {
  /** Who holds the lease (default: this host's name, kazoo's); the same identifier renews it. */
  identifier?: string;
  /** The clock reading to use instead of the system clock (tests; kazoo's utcnow). */
  now?: Date;
  /** How long to wait for the lease's lock (default: no limit, as kazoo); ZKR_TIMEOUT after. */
  timeoutMs?: number;
}

/** kazoo's NonBlockingLease: `held` when obtained; the lease ends at `end` and is never released. */
export declare class NonBlockingLease {
  static obtain(client: Client, path: string, durationMs: number, options?: LeaseOptions): Promise<NonBlockingLease>;
  readonly held: boolean;
  readonly path: string;
  readonly identifier: string;
  /** When our lease ends (whole seconds), if held. */
  readonly end: Date | null;
}

/** kazoo's MultiNonBlockingLease: one of `count` leases `path/0` … `path/<count-1>`. */
export declare class MultiNonBlockingLease {
  static obtain(
    client: Client,
    count: number,
    path: string,
    durationMs: number,
    options?: LeaseOptions,
  ): Promise<MultiNonBlockingLease>;
  readonly held: boolean;
  /** Which lease was obtained, or null. */
  readonly index: number | null;
  readonly path: string;
  readonly identifier: string;
  readonly end: Date | null;
}

/** A member of the ensemble, from its `server.ID=` line. */
export interface EnsembleMember {
  /** Its myid. */
  readonly id: number;
  /** The host of its (first) quorum address. */
  readonly host: string;
  readonly quorumPort: number;
  readonly electionPort: number;
  readonly role: 'PARTICIPANT' | 'OBSERVER';
  /** The address it serves clients on as written ('0.0.0.0' for a port only); null without one. */
  readonly clientHost: string | null;
  /** Its plaintext client port; null without one. */
  readonly clientPort: number | null;
  /** Where a client reaches it ('host:port'); null without a client port. */
  readonly clientAddress: string | null;
  /** 'server.ID=HOST:QUORUM:ELECTION:ROLE;HOST:PORT': what `reconfig({ joining })` takes. */
  readonly serverLine: string;
}

/** The ensemble's configuration (`client.getConfig()`, `client.reconfig()`). */
export interface EnsembleConfig {
  /** The members by id (none on a standalone server). */
  readonly members: readonly EnsembleMember[];
  /** The zxid of the reconfiguration that made it (0n for one never changed): `fromConfig`. */
  readonly version: bigint;
  /** The members' client addresses as a connect string ('' if none has one). */
  readonly connectString: string;
  /** The node's text as read. */
  readonly data: string;
}

/** `client.reconfig(options)`: incremental (`joining`, `leaving`) or `newMembers`. */
export interface ReconfigOptions {
  /** Server lines to add: 'server.ID=HOST:QUORUM:ELECTION[:ROLE];[HOST:]CLIENTPORT'. */
  joining?: string | string[];
  /** Member ids to remove. */
  leaving?: number | number[];
  /** The whole new member list (not with `joining` or `leaving`). */
  newMembers?: string[];
  /** Only if the configuration is still this version. */
  fromConfig?: bigint | number;
}
