//! [`SimpleDistributedQueue`]: Curator's (and ZooKeeper's own recipe's) simple queue —
//! `qn-<seq>` children, the lowest first.

use std::future::Future;
use std::time::Duration;

use super::{put_back, put_sequential, removal_outliving_the_take, sorted_items, QueueNode};
use crate::client::{OrNone, Parents, Session};
use crate::wait::{self, Deadline, Wake};
use crate::{path, runtime, Client, Error, Result, Stat};

const PREFIX: &str = "qn-";

/// Curator's `SimpleDistributedQueue` (a drop-in for ZooKeeper's recipe): each item is a
/// persistent sequential node `path/qn-<seq>` holding the raw bytes; the lowest sequence is the
/// head. The queue's node is a container (made on demand, reaped by the server once empty).
///
/// Delivery is at most once, as Curator's: an item is removed (read, then deleted, in one round
/// trip) before it is returned, so a consumer that dies holding it loses it (as does a take
/// whose delete was applied with its reply lost: the retry cannot tell our delete from
/// another consumer's, and at most once forbids handing it out on a guess). A take dropped
/// while its delete is in flight (a `timeout()` around it, a cancelled task) does not lose the
/// item: it is offered again at the tail, handed to nobody. Use
/// [`DistributedQueue`](super::DistributedQueue) with a lock path for exactly-once consumption.
/// Beyond Curator: [`take`](Self::take) makes the queue's node again when the server reaped it
/// (CURATOR-308: Curator's `take()` waits forever there), and a lost connection makes a waiting
/// `take` read again through the retry policy.
#[derive(Clone, Debug)]
pub struct SimpleDistributedQueue {
    client: Client,
    path: String,
}

impl SimpleDistributedQueue {
    /// A queue at `path` (validated). Refuses a closed client.
    pub fn new(client: &Client, path: &str) -> Result<SimpleDistributedQueue> {
        path::validate_path(path)?;
        if path == "/" {
            return Err(Error::invalid("a queue cannot be the root node"));
        }
        client.ensure_open_for("SimpleDistributedQueue", path)?;
        Ok(SimpleDistributedQueue {
            client: client.clone(),
            path: path.to_string(),
        })
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Adds `data` at the tail; the item's node path. A create whose reply is lost is not
    /// resent (it would add the item twice): that is `OutcomeUnknown`.
    pub async fn offer(&self, data: &[u8]) -> Result<String> {
        path::validate_data(&self.path, data)?;
        put_sequential(&self.client, &self.path, PREFIX, data, QueueNode::Container)
            .await
            .map_err(|e| e.context(format!("offer to queue {}", self.path)))
    }

    /// The head's data without removing it, or `None` when the queue is empty.
    pub async fn peek(&self) -> Result<Option<Vec<u8>>> {
        let path = self.path.as_str();
        self.client
            .retry(|s| async move {
                let Some(children) = s.children(path).await.or_none()? else {
                    return Ok(None);
                };
                for node in sorted_items(children, PREFIX, path) {
                    if let Some((data, _)) = s.get_data(&path::join(path, &node)).await.or_none()? {
                        return Ok(Some(data));
                    }
                }
                Ok(None)
            })
            .await
            .map_err(|e| e.context(format!("peek queue {path}")))
    }

    /// Removes the head and returns its data, or `None` at once when the queue is empty.
    pub async fn poll(&self) -> Result<Option<Vec<u8>>> {
        self.take(Some(Duration::ZERO)).await
    }

    /// Removes the head and returns its data, waiting at most `timeout` (`None`: no limit) for
    /// one; `None` when the timeout passed first.
    pub async fn take(&self, timeout: Option<Duration>) -> Result<Option<Vec<u8>>> {
        let deadline = Deadline::after(timeout);
        deadline
            .bounding(async move {
                let path = self.path.as_str();
                loop {
                    let mut states = wait::states(&self.client);
                    let listed = self
                        .client
                        .retry(|s| async move {
                            let Some((children, watch)) = s.children_watch(path).await.or_none()?
                            else {
                                return Ok(None);
                            };
                            for node in sorted_items(children, PREFIX, path) {
                                let item = path::join(path, &node);
                                match self.remove(&s, item).await {
                                    (Ok((d, _)), Ok(())) => return Ok(Some((Some(d), watch))),
                                    (_, Err(Error::NoNode(_))) | (Err(Error::NoNode(_)), _) => {}
                                    (Err(e), _) | (_, Err(e)) => return Err(e),
                                }
                            }
                            Ok(Some((None, watch)))
                        })
                        .await
                        .map_err(|e| e.context(format!("take from queue {path}")))?;
                    let watch = match listed {
                        Some((Some(data), _)) => return Ok(Some(data)),
                        Some((None, watch)) => watch,
                        None => {
                            // The container was reaped (CURATOR-308): make it again and watch it.
                            self.client.ensure_path(path, Parents::Containers).await?;
                            continue;
                        }
                    };
                    if deadline.passed() {
                        return Ok(None);
                    }
                    match wait::wait(&self.client, vec![watch], deadline, &mut states).await {
                        Wake::Again => {}
                        Wake::Deadline => return Ok(None),
                        Wake::Closed => return Err(Error::closed()),
                    }
                }
            })
            .await
    }

    /// Reads and deletes `item` (pipelined: one round trip; only the session whose delete
    /// succeeds has it), to its end even if the take is dropped meanwhile: an item removed for
    /// nobody is offered again ([`removal_outliving_the_take`]).
    async fn remove(&self, s: &Session, item: String) -> (Result<(Vec<u8>, Stat)>, Result<()>) {
        let s = s.clone();
        let removal = async move {
            let data = s.get_data(&item);
            let delete = s.delete(&item, None);
            tokio::join!(data, delete)
        };
        let queue = self.clone();
        removal_outliving_the_take(&self.client, removal, move |removed| {
            if let (Ok((data, _)), Ok(())) = removed {
                drop(queue.give_back(data)); // it runs as its own task
            }
        })
        .await
    }

    /// Puts an item taken and not wanted back at the tail (a new node, as an offer), for a
    /// consumer that will not process an item nobody else has seen: still at most once. It runs
    /// as its own task, started by this call: it goes on if the returned future is dropped (or
    /// never polled), and the client's close waits for it. A create whose reply is lost is not
    /// resent: `OutcomeUnknown`.
    pub fn give_back(&self, data: Vec<u8>) -> impl Future<Output = Result<()>> + Send + 'static {
        put_back(&self.client, &self.path, PREFIX, data, QueueNode::Container)
    }

    /// [`offer`](Self::offer) for the blocking face.
    pub fn offer_blocking(&self, data: &[u8]) -> Result<String> {
        runtime::try_block_on(self.offer(data))?
    }

    /// [`peek`](Self::peek) for the blocking face.
    pub fn peek_blocking(&self) -> Result<Option<Vec<u8>>> {
        runtime::try_block_on(self.peek())?
    }

    /// [`poll`](Self::poll) for the blocking face.
    pub fn poll_blocking(&self) -> Result<Option<Vec<u8>>> {
        runtime::try_block_on(self.poll())?
    }

    /// [`take`](Self::take) for the blocking face.
    pub fn take_blocking(&self, timeout: Option<Duration>) -> Result<Option<Vec<u8>>> {
        runtime::try_block_on(self.take(timeout))?
    }
}
