// Retry policies (Curator's six), described as plain objects for the native layer, which
// checks them with the core's rules when they are made.
'use strict';

const { native } = require('./native');
const args = require('./args');

class RetryPolicy {
  constructor(kind, fields) {
    this.kind = kind;
    Object.assign(this, fields);
    native.checkRetryPolicy({ ...this });
    Object.freeze(this);
  }
}

/** Curator's ExponentialBackoffRetry(baseSleepMs, maxRetries[, maxSleepMs]). */
class ExponentialBackoffRetry extends RetryPolicy {
  constructor(baseSleepMs, maxRetries, maxSleepMs) {
    super('exponentialBackoff', {
      baseSleepMs: args.requiredMs('baseSleepMs', baseSleepMs),
      maxRetries: args.requiredUint32('maxRetries', maxRetries),
      maxSleepMs: args.ms('maxSleepMs', maxSleepMs),
    });
  }
}

/** Curator's BoundedExponentialBackoffRetry(baseSleepMs, maxSleepMs, maxRetries). */
class BoundedExponentialBackoffRetry extends RetryPolicy {
  constructor(baseSleepMs, maxSleepMs, maxRetries) {
    super('boundedExponentialBackoff', {
      baseSleepMs: args.requiredMs('baseSleepMs', baseSleepMs),
      maxSleepMs: args.requiredMs('maxSleepMs', maxSleepMs),
      maxRetries: args.requiredUint32('maxRetries', maxRetries),
    });
  }
}

/** Curator's RetryNTimes(n, sleepMs). */
class RetryNTimes extends RetryPolicy {
  constructor(n, sleepMs) {
    super('nTimes', { n: args.requiredUint32('n', n), sleepMs: args.requiredMs('sleepMs', sleepMs) });
  }
}

/** Curator's RetryOneTime(sleepMs). */
class RetryOneTime extends RetryPolicy {
  constructor(sleepMs) {
    super('oneTime', { sleepMs: args.requiredMs('sleepMs', sleepMs) });
  }
}

/** Curator's RetryUntilElapsed(maxElapsedMs, sleepMs). */
class RetryUntilElapsed extends RetryPolicy {
  constructor(maxElapsedMs, sleepMs) {
    super('untilElapsed', {
      maxElapsedMs: args.requiredMs('maxElapsedMs', maxElapsedMs),
      sleepMs: args.requiredMs('sleepMs', sleepMs),
    });
  }
}

/** Curator's RetryForever(sleepMs). */
class RetryForever extends RetryPolicy {
  constructor(sleepMs) {
    super('forever', { sleepMs: args.requiredMs('sleepMs', sleepMs) });
  }
}

module.exports = {
  RetryPolicy,
  ExponentialBackoffRetry,
  BoundedExponentialBackoffRetry,
  RetryNTimes,
  RetryOneTime,
  RetryUntilElapsed,
  RetryForever,
};
