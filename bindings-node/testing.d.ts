// Types of `zkrecipes/testing`: a real ZooKeeper for tests (like Curator's curator-test).
import type { Client } from './index';

/** Where ZooKeeper will come from; throws (code `ZKR_ZOOKEEPER_NOT_FOUND`) naming what to install. */
export declare function findZooKeeper(): string;

/** One standalone server on 127.0.0.1 and a free port. */
export declare class TestingServer {
  private constructor();
  /** Starts a server; resolves once it serves. */
  static start(): Promise<TestingServer>;
  /** `'127.0.0.1:PORT'`. */
  readonly connectString: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Same port, same data; clients reconnect. */
  restart(): Promise<void>;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  isRunning(): Promise<boolean>;
  fourLetter(cmd: string): Promise<string>;
  /** Stops the server and removes its directory; idempotent. */
  close(): Promise<void>;
}

/** Server `index` of a TestingCluster. */
export declare class ClusterServer {
  private constructor();
  readonly index: number;
  readonly connectString: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
  kill(): Promise<void>;
}

/** An ensemble, server i on 127.0.0.(i+1). */
export declare class TestingCluster {
  private constructor();
  /** Starts `n` servers (default 3); resolves once every one serves and one leads. */
  static start(n?: number): Promise<TestingCluster>;
  readonly connectString: string;
  readonly servers: ClusterServer[];
  leader(): Promise<ClusterServer | null>;
  waitForQuorum(options?: { timeoutMs?: number }): Promise<ClusterServer | null>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Expires the client's session on the server (Curator's KillSession); LOST, then RECONNECTED. */
export declare function expireSession(client: Client): Promise<void>;
