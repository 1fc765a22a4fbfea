// zkrecipes for Node: Apache Curator's coordination recipes on ZooKeeper, on one Rust core.
//
// The public API, one concern per module in lib/ over the native addon (src/, napi-rs):
//   native      the addon            vocabulary  the core's words   errors   coded Errors
//   args        argument checks      owners      who holds a lock   events   native -> EventEmitter
//   retry       Curator's policies   client      the Client, Transaction  locks  the lock family
//   leader      latch, selector, observer        counters            log      setLogger
//   caches      caches, watchers     nodes       nodes, membership   queues   barriers, queues
//   discovery   service discovery
//   partition   kazoo's SetPartitioner and leases
// Every recipe decision (queues, watches, retries, fencing) is the core's.
'use strict';

const { native } = require('./lib/native');
const { Owner } = require('./lib/owners');
const { Client, WatcherType } = require('./lib/client');

/** The version of the Rust core the addon was built from. */
const coreVersion = native.coreVersion();
/** The package's version: the workspace's one version (Cargo.toml), as the addon reports it. */
const version = coreVersion;

// Identifiers and `...require()` only: Node's ESM loader reads the names from this literal (and
// from the modules' own lists), which is how index.mjs's `export *` gets them.
module.exports = {
  Client,
  WatcherType,
  Owner,
  ...require('./lib/locks'),
  ...require('./lib/leader'),
  ...require('./lib/counters'),
  ...require('./lib/retry'),
  ...require('./lib/vocabulary'),
  ...require('./lib/log'),
  ...require('./lib/caches'),
  ...require('./lib/nodes'),
  ...require('./lib/queues'),
  ...require('./lib/discovery'),
  ...require('./lib/partition'),
  coreVersion,
  version,
};
