//! # zkrecipes
//!
//! Apache Curator's coordination recipes — the reentrant distributed mutex, leader election
//! and distributed counters — on ZooKeeper, with Curator 5.x's node layout on the wire, so
//! that Rust, C, C++, Python, Node and Java/Curator processes share locks, leaders and
//! counters.
//!
//! The core is async; every blocking call runs on one process-wide runtime ([`runtime`]).
//! Listeners run under one threading guarantee ([`dispatch`]). Every face takes its words
//! from one vocabulary: [`ErrorKind`] (codes and names), [`CreateMode`], [`NodeEventKind`],
//! [`ConnectionState`], [`LostPolicy`] and the [`timeout`] contract.

#![warn(missing_docs)]

pub mod atomic;
pub mod barriers;
pub mod cache;
pub mod client;
pub mod dispatch;
mod error;
pub mod leader;
mod lifecycle;
pub mod lock;
pub mod log;
pub mod nodes;
pub mod owner;
pub mod path;
pub mod queue;
pub mod retry;
pub mod runtime;
pub mod timeout;
mod wait;

pub use client::{
    Acl, Client, ClientBuilder, ConnectionState, CreateMode, CreateOptions, DeleteOptions,
    LostPolicy, NodeEventKind, Permission, Stat,
};
pub use dispatch::{ListenerId, ListenerIds};
pub use error::{Detail, Error, ErrorKind, Result};
pub use owner::Owner;
pub use retry::RetryPolicy;

/// This crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
