// A TypeScript program using zkrecipes' types; `tsc --noEmit --strict -p examples/tsconfig.json`
// must accept it (scripts/test-node runs that). It is also a fair tour of the API.
import {
  Client,
  CreateMode,
  DistributedAtomicLong,
  ExponentialBackoffRetry,
  InterProcessMutex,
  InterProcessReadWriteLock,
  InterProcessSemaphoreV2,
  LeaseLostReason,
  LeaderLatch,
  LeaderObserver,
  LeaderSelector,
  Owner,
  SharedCount,
  GroupMember,
  PersistentNode,
  PersistentTtlNode,
  type OpResult,
  attemptRevoke,
  setLogger,
  type AtomicValue,
  type CohortOptions,
  type ConnectionState,
  type LeadershipContext,
  type LeaseLost,
  type LogRecord,
  type Participant,
  type Stat,
  type WatchedEvent,
  type ZkrError,
} from 'zkrecipes';
import zkrecipes from 'zkrecipes';

function isZkrError(err: unknown): err is ZkrError {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string';
}

async function main(hosts: string): Promise<void> {
  setLogger((r: LogRecord) => {
    if (r.level === 'ERROR') console.error(r.target, r.message, r.fields);
  }, 'warn');
  const client: Client = await Client.connect(hosts, {
    sessionTimeoutMs: 10_000,
    connectionTimeoutMs: 5_000,
    retry: new ExponentialBackoffRetry(100, 3),
    namespace: 'ts-example',
    auth: [{ scheme: 'digest', credentials: 'user:pass' }],
  });
  client.on('state', (state: ConnectionState) => console.log('state', state));

  const path: string = await client.create('/hello', 'world', { mode: CreateMode.PERSISTENT, createParents: true });
  const { data, stat }: { data: Buffer; stat: Stat } = await client.getData(path, {
    watch: (e: WatchedEvent) => console.log('watch', e.type, e.path),
  });
  const czxid: bigint = stat.czxid;
  console.log(data.toString(), czxid);

  const mutex = new InterProcessMutex(client, '/locks/a', { lostPolicy: 'standard' });
  mutex.on('lost', (owner) => console.log('lost', owner));
  mutex.makeRevocable((o: Owner | bigint) => console.log('asked to release', o));
  const nodes: string[] = await mutex.participantNodes();
  for (const node of nodes) await attemptRevoke(client, node);
  const n: number = await mutex.withLock(async () => {
    const token: bigint | null = mutex.fencingToken;
    console.log('fencing token', token);
    return 42;
  });
  const owner = new Owner();
  const acquired: boolean = await mutex.acquire({ timeoutMs: 1000, owner });
  if (acquired) await mutex.release({ owner });
  await owner.run(async () => mutex.isOwnedByCurrentOwner());

  // Cohort handoffs: this object's owners share one lock node; fence with the wide token.
  const cohortOptions: CohortOptions = { maxHandoffs: 16, maxHoldMs: 5 };
  const cohort = new InterProcessMutex(client, '/locks/cohort', { cohort: cohortOptions });
  const wide: Array<bigint | null> = await Promise.all(
    [1, 2, 3].map(() => cohort.withLock(async () => cohort.fencingTokenWide)),
  );
  const bound: Required<CohortOptions> | null = cohort.cohortOptions;
  const waiting: number = cohort.localWaiters;
  console.log('wide tokens', wide, bound?.maxHandoffs, waiting, new InterProcessMutex(client, '/locks/c2', { cohort: true }).cohortOptions);

  const rw = new InterProcessReadWriteLock(client, '/locks/rw');
  await rw.readLock().withLock(() => n + 1);

  const semaphore = new InterProcessSemaphoreV2(client, '/locks/sem', 3);
  const leases = await semaphore.acquire({ qty: 2, timeoutMs: 1000 });
  if (leases !== null) {
    // Stop the work done under the lease once it can no longer be counted on.
    const lost: Promise<LeaseLost> = leases[0].waitLost({ lostPolicy: 'session' });
    void lost.then((why) => console.log('lease lost:', why.reason, why.message, why.reason === 'STATE' ? why.state : null));
    const soon: LeaseLost | null = await leases[1].waitLost({ timeoutMs: 10 });
    if (soon !== null && soon.reason === LeaseLostReason.SESSION_CHANGED) console.log(soon.message);
    await semaphore.returnAll(leases);
  }

  const latch = new LeaderLatch(client, '/leader/latch', { id: 'ts', closeMode: 'NOTIFY_LEADER' });
  latch.on('isLeader', () => console.log('leading'));
  await latch.start();
  const leads: boolean = await latch.await({ timeoutMs: 5000 });
  const participants: Participant[] = await latch.getParticipants();
  const observer = await new LeaderObserver(client, '/leader/latch').start();
  observer.on('change', (p: Participant) => console.log('leader now', p.id));
  const seen: Participant | null = observer.leader;
  const nextLeader: Participant | null = await observer.waitChanged({ timeoutMs: 10 });
  console.log('observed', seen?.id, nextLeader?.id);
  await observer.close();
  console.log(leads, participants.map((p) => `${p.id}:${p.isLeader}`));
  await latch.close();

  const selector = new LeaderSelector(
    client,
    '/leader/selector',
    async (ctx: LeadershipContext) => {
      const token: bigint | null = ctx.fencingToken;
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      console.log('term', ctx.term, token, ctx.cancelReason);
    },
    { id: 'ts', autoRequeue: true },
  );
  selector.on('error', (err) => console.error(err));
  selector.start();
  await selector.close();

  const counter = new DistributedAtomicLong(client, '/counters/c');
  const next: bigint = await counter.addAndGet(1);
  const value: AtomicValue<bigint> = await counter.get();
  console.log(next, value.succeeded, value.preValue, value.postValue);
  await counter.add(2n);

  const shared = new SharedCount(client, '/counters/shared', 0);
  shared.on('change', (count: number, version: number) => console.log('count', count, version));
  await shared.start();
  await shared.trySetCount(shared.getVersionedValue(), shared.count + 1);
  shared.close();

  const pnode = new PersistentNode(client, '/services/api/_reg-', { mode: CreateMode.EPHEMERAL_SEQUENTIAL, data: 'addr', protected: true });
  pnode.on('registered', (path: string) => console.log('registered at', path));
  await pnode.start();
  const created: boolean = await pnode.waitForInitialCreate({ timeoutMs: 5000 });
  const actual: string | null = pnode.actualPath;
  pnode.setData('addr2');
  await pnode.close();
  const ttl = new PersistentTtlNode(client, '/services/ttl', 10000, { data: 'x' });
  await ttl.start();
  await ttl.close();
  const member = new GroupMember(client, '/services/api', 'host-a', '10.0.0.7:8080');
  member.on('change', (members: Map<string, Buffer>) => console.log([...members.keys()]));
  await member.start();
  const members: Map<string, Buffer> = member.currentMembers();
  member.setThisData('10.0.0.7:8081');
  await member.close();
  const results: OpResult[] = await client.transaction().check('/services', 0).create('/services/t', 'x', { mode: CreateMode.PERSISTENT_WITH_TTL, ttlMs: 60000 }).commit();
  await client.create('/z', 'zipped', { compressed: true, createParents: 'persistent' });
  const unzipped: Buffer = (await client.getData('/z', { compressed: true })).data;
  console.log(created, actual, members.size, results.length, unzipped.length);
  const cache = new zkrecipes.CuratorCache(client, '/counters', { data: true });
  cache.on('event', (ev: zkrecipes.CacheEvent) => console.log('cache', ev.type, ev.path, ev.resync));
  await cache.start();
  const loaded: boolean = await cache.awaitInitialized(10000);
  const caughtUp: boolean = await cache.awaitZxid((await client.setData('/counters/c', Buffer.alloc(8))).mzxid, 10000);
  for (const node of cache) console.log('cached', node.path, node.data?.length, node.stat.version, loaded, caughtUp);
  const one: zkrecipes.ChildData | null = cache.get('/counters/c');
  console.log(one?.path, cache.size);
  cache.close();

  try {
    await client.getData('/missing');
  } catch (err) {
    if (isZkrError(err) && err.code === zkrecipes.ErrorCode.NO_NODE) console.log('no node, as expected', err.zkCode, err.index);
    else throw err;
  }
  const jobs = new zkrecipes.DistributedQueue(client, '/jobs', { lockPath: '/jobs-locks' });
  await jobs.put('resize 42');
  for await (const job of jobs.consume({ timeoutMs: 100 })) {
    const token: bigint = job.fencingToken;
    console.log('job', job.data.toString(), token);
    await job.done();
  }
  const gate = new zkrecipes.DistributedDoubleBarrier(client, '/gates/start', 1);
  if (await gate.enter({ timeoutMs: 1000 })) await gate.leave();

  // Service discovery: Curator's nodes and JSON; instances are plain objects.
  const discovery = new zkrecipes.ServiceDiscovery(client, '/services');
  const me: zkrecipes.ServiceInstance = zkrecipes.ServiceInstance.create('api', {
    address: '10.0.0.7',
    port: 8080,
    payload: { zone: 'a' },
    uriSpec: '{scheme}://{address}:{port}',
  });
  const registration: zkrecipes.Registration = await discovery.register(me);
  registration.update({ ...me, port: 8081 });
  registration.setEnabled(true);
  const nodeBytes: Buffer = zkrecipes.ServiceInstance.toJson(me);
  const services: string[] = await discovery.queryForNames();
  const found: zkrecipes.ServiceInstance | null = await discovery.queryForInstance('api', me.id);
  if (found !== null) {
    // A read instance, spread and changed, keeps what its fields do not show (a newer writer's).
    const moved: zkrecipes.ServiceInstance = { ...found, port: 8082 };
    const kept: zkrecipes.ServiceInstanceReadFrom | undefined = moved[zkrecipes.ServiceInstance.readFrom];
    console.log('read from a node of', kept?.node.length ?? 0, 'bytes');
  }
  const apiCache = new zkrecipes.ServiceCache(discovery, 'api');
  apiCache.on('event', (ev: zkrecipes.ServiceCacheEvent) => console.log('service', ev.kind, ev.instance?.id, ev.error?.code));
  await apiCache.start();
  const provider = new zkrecipes.ServiceProvider(discovery, 'api', {
    strategy: zkrecipes.ProviderStrategy.ROUND_ROBIN,
    filter: (i: zkrecipes.ServiceInstance) => i.port !== null,
    downErrorThreshold: 2,
    downTimeoutMs: 30_000,
  });
  await provider.start();
  const target: zkrecipes.ServiceInstance | null = provider.getInstance();
  if (target !== null) {
    console.log('calling', new zkrecipes.UriSpec('{scheme}://{address}:{port}/v1').build(target), zkrecipes.ServiceInstance.buildUri(target));
    provider.noteError(target);
  }
  for await (const ev of apiCache.events({ replay: true })) {
    if (ev.kind === zkrecipes.ServiceCacheEventKind.INITIALIZED) break;
  }
  console.log(nodeBytes.length, services, found?.payload, apiCache.instances().length);
  provider.close();
  apiCache.close();
  await registration.unregister();
  await discovery.close();

  setLogger(null);
  await client.close();
}

main(process.argv[2] ?? '127.0.0.1:2181').catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});

// The testing kit (`zkrecipes/testing`) and the one version.
import { FaultProxy, TestingCluster, TestingServer, TlsMaterial, expireSession } from 'zkrecipes/testing';
import { version } from 'zkrecipes';

export async function testingKitTour(): Promise<string> {
  const server: TestingServer = await TestingServer.start();
  const cluster: TestingCluster = await TestingCluster.start(3, { readOnlyMode: true });
  // @ts-expect-error: read-only mode is an ensemble's (a standalone server refuses it by name)
  const refused = (): Promise<TestingServer> => TestingServer.start({ readOnlyMode: true });
  void refused;
  try {
    const client = await Client.connect(server.connectString);
    await expireSession(client);
    await server.restart();
    const leader = await cluster.waitForQuorum({ timeoutMs: 10_000 });
    await leader?.kill();
    await client.close();
    return `${version} ${cluster.servers.length}`;
  } finally {
    await cluster.close();
    await server.close();
  }
}

// Network faults through a proxy, and a frozen server.
export async function faultsTour(): Promise<number> {
  const server = await TestingServer.start();
  const proxy: FaultProxy = await FaultProxy.start(server.connectString);
  try {
    const client = await Client.connect(proxy.connectString, { connectionTimeoutMs: 1000 });
    await proxy.blackhole();
    await proxy.restore();
    await proxy.delay(200);
    await proxy.delayReplies(100);
    await proxy.dropReplies();
    await proxy.cut();
    await proxy.restore();
    await server.pause();
    const paused: boolean = await server.isPaused();
    await server.resume();
    await client.close();
    return paused ? proxy.connections + proxy.bytesForwarded + proxy.port : -1;
  } finally {
    await proxy.close();
    await server.close();
  }
}

// Secured servers: TLS, SASL users, x509 identities, with PEM files made at test time.
export async function secureKitTour(): Promise<string[]> {
  const server = await TestingServer.start({ tls: 'need', saslUsers: { alice: 'secret' }, x509: true });
  try {
    const tls: TlsMaterial | null = server.tls;
    if (tls === null || server.secureConnectString === null) throw new Error('no TLS');
    await tls.issueClient('zkr-rotated', '/tmp/rotated.pem', '/tmp/rotated.key');
    return [server.secureConnectString, tls.ca, tls.clientCert, tls.keystore('otherClient'), TlsMaterial.x509IdForCn('x')];
  } finally {
    await server.close();
  }
}
