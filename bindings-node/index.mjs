// ESM entry of zkrecipes: the same objects as `require('zkrecipes')` (one module instance, so
// owners and errors are shared between `import` and `require` in one process).
import zkrecipes from './index.js';

export const {
  Client,
  Owner,
  InterProcessMutex,
  InterProcessReadWriteLock,
  InterProcessSemaphoreMutex,
  InterProcessSemaphoreV2,
  InterProcessMultiLock,
  Lease,
  LeaderLatch,
  LeaderSelector,
  LeaderObserver,
  LeadershipContext,
  DistributedAtomicLong,
  DistributedAtomicInteger,
  SharedCount,
  attemptRevoke,
  ErrorCode,
  RetryPolicy,
  ExponentialBackoffRetry,
  BoundedExponentialBackoffRetry,
  RetryNTimes,
  RetryOneTime,
  RetryUntilElapsed,
  RetryForever,
  coreVersion,
} = zkrecipes;

export default zkrecipes;
