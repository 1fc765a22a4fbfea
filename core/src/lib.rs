//! # zkrecipes
//!
//! Apache Curator's coordination recipes on ZooKeeper, with Curator 5.x's node layout on the
//! wire, so that Rust, C, C++, Python, Node and Java/Curator processes share them:
//!
//! * [`lock`]: the reentrant mutex (with cohort handoffs), the read/write lock, the semaphores
//!   and the multi lock;
//! * [`leader`]: LeaderLatch, LeaderSelector and an observer of either;
//! * [`atomic`]: DistributedAtomicLong/Integer/Value, SharedCount, cached counters;
//! * [`cache`]: CuratorCache and its NodeCache, PathChildrenCache and TreeCache views, and
//!   persistent watches ([`client::PersistentWatcher`]);
//! * [`nodes`]: PersistentNode, PersistentTtlNode, GroupMember, and the client's transactions;
//! * [`barriers`]: DistributedBarrier and DistributedDoubleBarrier;
//! * [`queue`]: SimpleDistributedQueue and the DistributedQueue family;
//! * [`partition`]: kazoo's SetPartitioner, NonBlockingLease and MultiNonBlockingLease, on
//!   kazoo's node layout.
//!
//! Recipes are written against the recipe API ([`client`]; waiting and start/close live beside
//! it). The core is async; every blocking call runs on one process-wide runtime ([`runtime`]).
//! Listeners run under one threading guarantee ([`dispatch`]). Every face takes its words
//! from one vocabulary: [`ErrorKind`] (codes and names), [`CreateMode`], [`NodeEventKind`],
//! [`ConnectionState`], [`LostPolicy`] and the [`timeout`] contract.
//!
//! # Dropping a call (cancellation)
//! Any async call may be dropped at any await point: a `tokio::time::timeout` or `select!`
//! around it, an aborted task, and in the faces Ctrl-C during a blocking call or a cancelled
//! asyncio task. Requests are written when a call makes them, so a dropped call can leave
//! one applied with its reply unread. The recipes keep their promises anyway:
//! * what an attempt made and nobody will own is deleted in the background: a lock's, a
//!   lease's or a semaphore's node, a double barrier member's node, a protected create's node;
//! * what must not stop half way runs as its own task and goes on: a release of a multi lock,
//!   a guaranteed delete, a partitioner's `start` and `finish`, a queue sharder's `start`,
//!   [`Client::remove_watches`], [`queue::Item::give_back`];
//! * an at-most-once queue take dropped while its delete is in flight puts the item it removed
//!   back at the tail, so the item is not lost; [`Client::close`] waits for that put-back (at
//!   most the connection timeout), so Ctrl-C followed by a close does not cut it off. A process
//!   that exits at once gives it no time: the item is then lost;
//! * a write whose reply was not seen (a counter's `add`, `set_data`) may have applied: the
//!   count stays exact, but the caller does not learn the outcome.

#![warn(missing_docs)]

pub mod atomic;
pub mod barriers;
pub mod cache;
pub mod client;
pub mod discovery;
pub mod dispatch;
mod error;
pub mod leader;
mod lifecycle;
pub mod lock;
pub mod log;
pub mod nodes;
pub mod owner;
pub mod participants;
pub mod partition;
pub mod path;
pub mod queue;
pub mod retry;
pub mod runtime;
pub mod timeout;
mod wait;

pub use client::{
    Acl, AclProvider, Client, ClientBuilder, ConnectionState, CreateMode, CreateOptions,
    DeleteOptions, LostPolicy, NodeEventKind, Pem, Permission, SaslOptions, Stat, TlsOptions,
    WatcherType,
};
pub use client::{EnsembleConfig, EnsembleMember, Reconfig, ServerRole};
pub use dispatch::{ListenerId, ListenerIds};
pub use error::{Detail, Error, ErrorKind, Result};
pub use owner::Owner;
pub use retry::RetryPolicy;

/// This crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
