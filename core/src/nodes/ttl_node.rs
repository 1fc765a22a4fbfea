//! [`PersistentTtlNode`]: Curator's PersistentTtlNode — a container node kept by a
//! [`PersistentNode`], and a TTL child touched every half TTL.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

use super::persistent_node::PersistentNode;
use crate::client::{check_ttl, CreateMode, CreateOptions};
use crate::{path, runtime, Client, Error, Result};

/// Curator's name of the touched child (`PersistentTtlNode.DEFAULT_CHILD_NODE_NAME`).
pub const TOUCH_CHILD: &str = "touch";

/// The child is touched every TTL / this (`DEFAULT_TOUCH_SCHEDULE_FACTOR`).
const TOUCH_FACTOR: u32 = 2;

/// Curator's PersistentTtlNode: a registration that vanishes when its owner stops keeping it,
/// independent of sessions — for owners that come and go faster than a session times out, or
/// that must not keep a session just to stay registered.
///
/// The node at `path` is a CONTAINER kept by a [`PersistentNode`] (with the data). Every
/// TTL / 2 (first after TTL / 2) the child `path/touch` gets an empty setData, or is created as
/// PERSISTENT_WITH_TTL with the TTL if missing. When the owner stops (closed, crashed, kill -9,
/// partitioned), the server deletes the untouched child once its TTL passes, and then the empty
/// container: the node is gone within the TTL plus the server's container check interval.
/// Closing does not delete the node (Curator's behaviour: another owner may keep it).
/// The server must run with `zookeeper.extendedTypesEnabled=true`.
pub struct PersistentTtlNode {
    client: Client,
    ttl: Duration,
    node: PersistentNode,
    stop: watch::Sender<bool>,
    touch: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for PersistentTtlNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentTtlNode")
            .field("path", &self.node.path())
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl PersistentTtlNode {
    /// The node at `path` with `data`, kept alive by touches every `ttl` / 2.
    ///
    /// Errors: `InvalidArgument` for a bad path, a `ttl` under 2 ms or over 2^40 - 1 ms, or
    /// data over the request limit; `Closed` on a closed client.
    pub fn new(client: &Client, path: &str, ttl: Duration, data: &[u8]) -> Result<Self> {
        let node =
            PersistentNode::new(client, path, CreateMode::Container, data, false)?.keep_on_close();
        check_ttl(path, CreateMode::PersistentWithTtl, Some(ttl))?;
        if ttl < Duration::from_millis(2) {
            return Err(Error::invalid(format!(
                "persistent ttl node {path}: ttl {ttl:?} is under 2 ms"
            )));
        }
        Ok(PersistentTtlNode {
            client: client.clone(),
            ttl,
            node,
            stop: watch::channel(false).0,
            touch: Mutex::new(None),
        })
    }

    /// The path.
    pub fn path(&self) -> &str {
        self.node.path()
    }

    /// The TTL.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The touched child's path (`path/touch`).
    pub fn touch_path(&self) -> String {
        path::join(self.node.path(), TOUCH_CHILD)
    }

    /// Starts keeping the node and touching its child.
    ///
    /// Errors: `InvalidArgument` when started twice; `Closed` after close.
    pub fn start(&self) -> Result<()> {
        self.node.start()?;
        let (client, child, ttl) = (self.client.clone(), self.touch_path(), self.ttl);
        let mut stop = self.stop.subscribe();
        let task = runtime::spawn(async move {
            let period = ttl / TOUCH_FACTOR;
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                tokio::select! {
                    r = touch(&client, &child, ttl) => if let Err(e) = r {
                        tracing::debug!(node = %child, error = %e, "could not touch the TTL child");
                    },
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        });
        *self.touch.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
        Ok(())
    }

    /// See [`PersistentNode::wait_for_initial_create`].
    pub async fn wait_for_initial_create(&self, timeout: Option<Duration>) -> Result<bool> {
        self.node.wait_for_initial_create(timeout).await
    }

    /// [`wait_for_initial_create`](Self::wait_for_initial_create) for the blocking face.
    pub fn wait_for_initial_create_blocking(&self, timeout: Option<Duration>) -> Result<bool> {
        runtime::try_block_on(self.wait_for_initial_create(timeout))?
    }

    /// Sets the node's data (see [`PersistentNode::set_data`]).
    pub fn set_data(&self, data: &[u8]) -> Result<()> {
        self.node.set_data(data)
    }

    /// The node's data as last set.
    pub fn data(&self) -> Vec<u8> {
        self.node.data()
    }

    /// The underlying node (registration events, last error).
    pub fn node(&self) -> &PersistentNode {
        &self.node
    }

    /// Stops touching and keeping the node; it is not deleted (it goes once its TTL passes,
    /// unless another owner keeps it). Closing twice is fine.
    pub async fn close(&self) -> Result<()> {
        self.stop.send_replace(true);
        let task = self.touch.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
        self.node.close().await
    }

    /// [`close`](Self::close) for the blocking face.
    pub fn close_blocking(&self) -> Result<()> {
        runtime::try_block_on(self.close())?
    }
}

impl Drop for PersistentTtlNode {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

/// One touch: an empty setData on the child, or its create with the TTL when missing (Curator:
/// `setData`, then on NoNode `create().orSetData().withTtl(ttl)`); a missing container is left
/// to the PersistentNode.
async fn touch(client: &Client, child: &str, ttl: Duration) -> Result<()> {
    match client.set_data(child, &[], None).await {
        Err(Error::NoNode(_)) => {
            let options = CreateOptions::new(CreateMode::PersistentWithTtl).ttl(ttl);
            match client.create(child, &[], options).await {
                Ok(_) | Err(Error::NoNode(_)) => Ok(()),
                Err(Error::NodeExists(_)) => client.set_data(child, &[], None).await.map(|_| ()),
                Err(e) => Err(e),
            }
        }
        other => other.map(|_| ()),
    }
}
