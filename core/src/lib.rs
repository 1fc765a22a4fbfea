//! # zkrecipes
//!
//! Apache Curator's coordination recipes — the reentrant distributed mutex, leader election
//! and distributed counters — on ZooKeeper, with Curator 5.x's node layout on the wire, so
//! that Rust, C, C++, Python, Node and Java/Curator processes share locks, leaders and
//! counters.
//!
//! The core is async; every blocking call runs on one process-wide runtime ([`runtime`]).

pub mod atomic;
pub mod client;
mod error;
pub mod leader;
pub mod lock;
pub mod owner;
pub mod path;
pub mod retry;
pub mod runtime;

pub use client::{
    Client, ClientBuilder, ConnectionState, CreateMode, CreateOptions, DeleteOptions, Stat,
};
pub use error::{Error, ErrorKind, Result};
pub use owner::Owner;
pub use retry::RetryPolicy;

/// This crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
