// Types of `zkrecipes/testing`: a real ZooKeeper for tests (like Curator's curator-test).
import type { Client } from './index';

/** Where ZooKeeper will come from; throws (code `ZKR_ZOOKEEPER_NOT_FOUND`) naming what to install. */
export declare function findZooKeeper(): string;

/** How a server or ensemble is secured; every option is off by default. Unknown keys are refused. */
export interface SecurityOptions {
  /** TLS on a secure port too, asking clients for certificates: `'none'`, `'want'` or `'need'`. */
  tls?: 'none' | 'want' | 'need';
  /** What the TLS servers present: valid, expired, or a certificate whose only SAN is DNS `wrong.example`. */
  serverCert?: 'valid' | 'expired' | 'wrong-name';
  /** SASL DIGEST-MD5 users: `{ alice: 'secret' }` (ACL id `sasl:alice`). */
  saslUsers?: Record<string, string>;
  /** Sessions that did not authenticate with SASL are closed at their first request. */
  saslRequired?: boolean;
  /** A client certificate gives the session the `x509` identity of its subject; implies `tls: 'need'`. */
  x509?: boolean;
  /** `addauth digest name:password` (and, with SASL, the SASL user `name`) may do anything. */
  superuser?: { name: string; password: string };
}

/** How an ensemble is started: SecurityOptions, and its members' read-only mode. */
export interface ClusterOptions extends SecurityOptions {
  /**
   * A member cut off from its quorum goes on serving reads to new sessions that allow it
   * (`readonlymode.enabled`, with local sessions): a client made with `canBeReadOnly: true`
   * connects there in `READ_ONLY` state, and its writes are refused.
   */
  readOnlyMode?: boolean;
}

/** A client identity of TlsMaterial. */
export type ClientIdentity = 'client' | 'otherClient' | 'rsaClient' | 'sec1Client' | 'expiredClient' | 'wrongCaClient';

/** The client identities of TlsMaterial. */
export declare const CLIENT_IDENTITIES: readonly ClientIdentity[];

/**
 * The CA, certificates and keys of a TLS server or ensemble, made when it started: PEM file paths
 * in `dir` (the server's temporary directory, removed with it). Client subjects are `CN=<name>`;
 * server certificates carry an IP SAN for their 127.0.0.x. Keys are EC P-256 unless said otherwise.
 */
export declare class TlsMaterial {
  private constructor();
  readonly dir: string;
  /** The CA of the servers' and clients' certificates (not the wrong-CA one); servers trust only it. */
  readonly ca: string;
  /** Valid, `CN=zkr-client`. */
  readonly clientCert: string;
  /** PKCS#8 (`BEGIN PRIVATE KEY`). */
  readonly clientKey: string;
  /** The PKCS#8 key then the certificate, one file (ZooKeeper's Java PEM key store). */
  readonly clientKeystore: string;
  /** `'CN=zkr-client'`: the `x509` ACL id ZooKeeper records for it. */
  readonly clientX509Id: string;
  /** Valid, another subject: `CN=zkr-other`. */
  readonly otherClientCert: string;
  readonly otherClientKey: string;
  readonly otherClientKeystore: string;
  readonly otherClientX509Id: string;
  /** Valid, `CN=zkr-rsa-client`, RSA 2048. */
  readonly rsaClientCert: string;
  /** PKCS#1 (`BEGIN RSA PRIVATE KEY`). */
  readonly rsaClientKey: string;
  readonly rsaClientKeystore: string;
  readonly rsaClientX509Id: string;
  /** Valid, `CN=zkr-sec1-client`. */
  readonly sec1ClientCert: string;
  /** SEC1 (`BEGIN EC PRIVATE KEY`). */
  readonly sec1ClientKey: string;
  readonly sec1ClientKeystore: string;
  readonly sec1ClientX509Id: string;
  /** Signed by the CA, expired yesterday, `CN=zkr-expired-client`. */
  readonly expiredClientCert: string;
  readonly expiredClientKey: string;
  readonly expiredClientKeystore: string;
  readonly expiredClientX509Id: string;
  /** Valid but signed by `wrongCa`, `CN=zkr-wrong-ca-client`. */
  readonly wrongCaClientCert: string;
  readonly wrongCaClientKey: string;
  readonly wrongCaClientKeystore: string;
  readonly wrongCaClientX509Id: string;
  /** `clientKey` as encrypted PKCS#8 (`BEGIN ENCRYPTED PRIVATE KEY`; PBES2, AES-256-CBC). */
  readonly encryptedClientKey: string;
  readonly encryptedClientKeyPassword: string;
  /** A CA that signed nothing the servers present or trust. */
  readonly wrongCa: string;
  /** The PKCS#8 key and certificate of `which` in one file. */
  keystore(which: ClientIdentity): string;
  /** The `x509` identity ZooKeeper records for `which`'s certificate. */
  x509Id(which: ClientIdentity): string;
  /** The `x509` identity of a certificate from issueClient with this `cn`. */
  static x509IdForCn(cn: string): string;
  /**
   * Issues a fresh client identity now: a new EC P-256 key (PKCS#8) and a certificate for `CN=cn`
   * signed by `ca`, each file written atomically, the key first.
   */
  issueClient(cn: string, certPath: string, keyPath: string): Promise<void>;
}

/** One standalone server on 127.0.0.1 and a free port. */
export declare class TestingServer {
  private constructor();
  /** Starts a server (secured as `options` say); resolves once it serves. */
  static start(options?: SecurityOptions): Promise<TestingServer>;
  /** `'127.0.0.1:PORT'` (plaintext, always there). */
  readonly connectString: string;
  /** `'127.0.0.1:SECUREPORT'`; null without `tls`. */
  readonly secureConnectString: string | null;
  /** The PEM files; null without `tls`. */
  readonly tls: TlsMaterial | null;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Same port, same data; clients reconnect. */
  restart(): Promise<void>;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /**
   * Freezes the server (SIGSTOP), as a hung machine: it keeps its sockets and sessions but answers
   * nothing, so clients go SUSPENDED. Resolves once stopped; rejects if the server is not running.
   */
  pause(): Promise<void>;
  /** Resumes a paused server (SIGCONT): clients back within their session timeout keep their session. */
  resume(): Promise<void>;
  /** Whether the server is frozen by `pause()`. */
  isPaused(): Promise<boolean>;
  /** Whether the server process runs (a paused one does). */
  isRunning(): Promise<boolean>;
  fourLetter(cmd: string): Promise<string>;
  /** Stops the server and removes its directory; idempotent. Afterwards every other method rejects with `ZKR_CLOSED`. */
  close(): Promise<void>;
}

/** Server `index` of a TestingCluster. */
export declare class ClusterServer {
  private constructor();
  readonly index: number;
  readonly connectString: string;
  /** `'127.0.0.x:SECUREPORT'`; null without `tls`. */
  readonly secureConnectString: string | null;
  /** In a reconfigurable ensemble, its `'server.ID=...'` line for `client.reconfig({ joining })`; null otherwise. */
  readonly reconfigSpec: string | null;
  stop(): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
  kill(): Promise<void>;
  /** Freezes this server (SIGSTOP). */
  pause(): Promise<void>;
  /** Resumes this server (SIGCONT). */
  resume(): Promise<void>;
  /** Whether this server is frozen by `pause()`. */
  isPaused(): Promise<boolean>;
}

/** An ensemble, server i on 127.0.0.(i+1). */
export declare class TestingCluster {
  private constructor();
  /** Starts `n` servers (default 3), each secured as `options` say; resolves once every one serves and one leads. */
  static start(n?: number, options?: ClusterOptions): Promise<TestingCluster>;
  readonly connectString: string;
  /** Every TLS port: `'127.0.0.1:s1,127.0.0.2:s2,...'`; null without `tls`. */
  readonly secureConnectString: string | null;
  /** The PEM files; null without `tls`. */
  readonly tls: TlsMaterial | null;
  readonly servers: ClusterServer[];
  leader(): Promise<ClusterServer | null>;
  waitForQuorum(options?: { timeoutMs?: number }): Promise<ClusterServer | null>;
  restart(): Promise<void>;
  close(): Promise<void>;
  /**
   * Starts `n` members (default 3) with reconfigEnabled=true and a digest superuser (default
   * `['super', 'secret']`), for `client.reconfig`.
   */
  static startReconfigurable(n?: number, options?: { superuser?: [string, string] }): Promise<TestingCluster>;
  /** Starts a server synced with the ensemble but not a member yet (`reconfigSpec` makes it one). */
  addServer(options?: { observer?: boolean }): Promise<ClusterServer>;
  /** Waits until the running members list exactly `ids` (myid = index + 1) and one leads. */
  waitForMembers(ids: number[], options?: { timeoutMs?: number }): Promise<boolean>;
}

/**
 * A TCP proxy on 127.0.0.1 and a free port in front of one server, injecting network faults
 * between clients and it. Each control takes effect at once on open and new connections. After
 * `close()`, every method rejects (and the counters throw) with code `ZKR_CLOSED`.
 */
export declare class FaultProxy {
  private constructor();
  /** Starts forwarding to one server's `'host:port'`; rejects with `ZKR_INVALID_ARGUMENT` if it is not one. */
  static start(upstream: string): Promise<FaultProxy>;
  /** `'127.0.0.1:PORT'`, for clients. */
  readonly connectString: string;
  readonly port: number;
  /** The `'host:port'` it forwards to. */
  readonly upstream: string;
  /** Client connections open through the proxy now. */
  readonly connections: number;
  /** Bytes delivered so far, both directions. */
  readonly bytesForwarded: number;
  /** Whether `close()` ran. */
  readonly closed: boolean;
  /** Closes every connection, and new ones as soon as they are accepted, until `restore()`; resolves once none is open. */
  cut(): Promise<void>;
  /** Keeps connections open but drops every byte both ways (a network partition: clients go SUSPENDED). */
  blackhole(): Promise<void>;
  /** Forwards requests but drops every reply. */
  dropReplies(): Promise<void>;
  /** Delays every chunk by `ms` each way (a round trip: twice that); `ZKR_INVALID_ARGUMENT` if negative or not finite. */
  delay(ms: number): Promise<void>;
  /** Delays every server-to-client chunk by `ms`; requests pass at once. */
  delayReplies(ms: number): Promise<void>;
  /** Forwards normally again. */
  restore(): Promise<void>;
  /** Stops the proxy and closes every connection through it; idempotent. */
  close(): Promise<void>;
}

/** Expires the client's session on the server (Curator's KillSession); LOST, then RECONNECTED. */
export declare function expireSession(client: Client): Promise<void>;
