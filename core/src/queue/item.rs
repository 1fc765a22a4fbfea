//! What a consumer gets: [`Consumer`] takes items one after the other; an [`Item`] is valid
//! until it is done (one transaction with its lock) or given back.

use std::time::{Duration, Instant};

use super::distributed::DistributedQueue;
use super::framing;
use super::names::{id_of, requeue_name, ErrorMode, QueueKind};
use super::take::Hold;
use crate::client::Op;
use crate::{path, runtime, CreateMode, Error, Result};

/// Takes items one after the other: `next().await`, or iterate (blocking face; each step
/// waits with no limit).
#[derive(Clone, Debug)]
pub struct Consumer {
    pub(super) queue: DistributedQueue,
}

impl Consumer {
    /// The next item, waiting at most `timeout` (`None`: no limit).
    pub async fn next(&self, timeout: Option<Duration>) -> Result<Option<Item>> {
        self.queue.take(timeout).await
    }

    /// [`next`](Self::next) for the blocking face.
    pub fn next_blocking(&self, timeout: Option<Duration>) -> Result<Option<Item>> {
        self.queue.take_blocking(timeout)
    }
}

impl Iterator for Consumer {
    type Item = Result<Item>;

    fn next(&mut self) -> Option<Result<Item>> {
        match self.queue.take_blocking(None) {
            Ok(Some(item)) => Some(Ok(item)),
            Ok(None) => None,
            Err(e) if e.kind() == crate::ErrorKind::Closed => None,
            Err(e) => Some(Err(e)),
        }
    }
}

/// One taken item: its messages and fencing token are valid until [`done`](Self::done) (or
/// [`release`](Self::release)). Dropped without either, its lock is released (with a lock path:
/// another consumer takes the item); without a lock path the take removed the item, and a
/// dropped one is gone: [`give_back`](Self::give_back) puts it back.
pub struct Item {
    pub(super) queue: DistributedQueue,
    pub(super) node: String,
    pub(super) item_path: String,
    pub(super) messages: Vec<Vec<u8>>,
    pub(super) token: i64,
    pub(super) hold: Option<Hold>,
}

impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Item")
            .field("node", &self.node)
            .field("messages", &self.messages.len())
            .field("fencing_token", &self.token)
            .finish()
    }
}

impl Item {
    /// The item's (first) message; empty for an item with none.
    pub fn data(&self) -> &[u8] {
        self.messages.first().map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every message of the item (several for Curator's `putMulti`).
    pub fn messages(&self) -> &[Vec<u8>] {
        &self.messages
    }

    /// The fencing token: the czxid of this consumer's lock node (with a lock path; a later
    /// taker of the same item gets a larger one), or of the item node (without one). Pass it
    /// to the sink, which refuses a token lower than one it has seen for the item.
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// The item's node name (`queue-…`).
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The item's id (an id queue's), or `None`.
    pub fn id(&self) -> Option<&str> {
        (self.queue.shared.layout == QueueKind::Id).then(|| id_of(&self.node))?
    }

    /// Completes the item: with a lock path, one transaction on the session holding the lock
    /// checks the lock, deletes the item and deletes the lock. An error means the item was not
    /// completed by us: the lock went with an ended session (`SessionExpired`; another consumer
    /// may take the item), or the item was removed by someone else (`NoNode`). A lost reply is
    /// resolved by reading back on the same session; when that cannot settle it (the session
    /// ended meanwhile, or the retry policy gave up) and the item is gone, the error is
    /// `OutcomeUnknown`: it may have been completed by us. Without a lock path, nothing to do.
    pub async fn done(mut self) -> Result<()> {
        let Some(hold) = self.hold.take() else {
            return Ok(());
        };
        self.settle(hold, None, "complete").await
    }

    /// The consumer failed to process the item (Curator's consumer threw): the queue's
    /// [`ErrorMode`] decides. `Requeue` (the default) puts the item back at the tail with its
    /// key, `Delete` removes it; either in one transaction on the session holding the lock that
    /// checks the lock first, so the errors are [`done`](Self::done)'s (an ended session:
    /// `SessionExpired`, and the item stays where it was for another consumer). Without a lock
    /// path the item was removed when it was taken: nothing to do, as in Curator.
    pub async fn fail(mut self) -> Result<()> {
        let Some(hold) = self.hold.take() else {
            return Ok(());
        };
        match self.queue.error_mode() {
            ErrorMode::Delete => self.settle(hold, None, "delete failed").await,
            ErrorMode::Requeue => {
                let sh = &self.queue.shared;
                let requeued = Op::Create {
                    path: path::join(&sh.path, &requeue_name(&self.node)),
                    data: framing::encode(self.messages.iter().map(Vec::as_slice)),
                    mode: CreateMode::PersistentSequential,
                    ttl: None,
                    acl: None,
                };
                self.settle(hold, Some(requeued), "requeue failed").await
            }
        }
    }

    /// One transaction on the session holding the lock: check the lock, delete the item,
    /// `also` (a requeue's create), delete the lock.
    async fn settle(&self, mut hold: Hold, also: Option<Op>, what: &str) -> Result<()> {
        let mut ops = vec![
            Op::Check {
                path: hold.lock.clone(),
                version: 0,
            },
            Op::Delete {
                path: self.item_path.clone(),
                version: None,
            },
        ];
        ops.extend(also);
        ops.push(Op::Delete {
            path: hold.lock.clone(),
            version: None,
        });
        let client = hold.session_client();
        let start = Instant::now();
        let mut retries = 0;
        // A try's reply was lost: the transaction may have been applied, and the lock with it.
        let mut uncertain = false;
        let context = |e: Error| e.context(format!("{what} queue item {}", self.item_path));
        loop {
            let err = match hold.session.multi(&ops).await {
                Ok(_) => {
                    hold.disarm();
                    return Ok(());
                }
                Err(e) => e,
            };
            let err = match err {
                Error::NoNode(_) if err.failed_op() == Some(1) => {
                    hold.release_in_background();
                    Error::NoNode("the item was removed by another process while we held it".into())
                }
                Error::NoNode(_) | Error::BadVersion(_) => {
                    hold.disarm();
                    Error::SessionExpired(
                        "our lock node on the item is gone; another consumer may take the item"
                            .into(),
                    )
                }
                Error::SessionExpired(_) => {
                    hold.disarm();
                    Error::SessionExpired(
                        "the session holding the item's lock ended; another consumer may take the item"
                            .into(),
                    )
                }
                e if e.is_retryable() => {
                    uncertain = true;
                    hold.mark_uncertain();
                    match client.retry_policy().next_sleep(retries, start.elapsed()) {
                        Some(d) if !client.is_closed() => {
                            retries += 1;
                            tokio::time::sleep(d).await;
                        }
                        _ => return Err(context(self.after_lost_reply(&client, e).await)),
                    }
                    // Applied already? Both nodes went in one transaction. A lock at our path
                    // with another czxid is another consumer's: ours went, by this transaction
                    // or otherwise, and is not to be checked (or deleted) again.
                    let lock = hold.session.exists(&hold.lock).await;
                    let item = hold.session.exists(&self.item_path).await;
                    let ours = |st: &crate::Stat| st.czxid == hold.czxid();
                    match (lock, item) {
                        (Ok(None), Ok(None)) => {
                            hold.disarm();
                            return Ok(());
                        }
                        (Ok(lock), Ok(Some(_))) if !lock.as_ref().is_some_and(ours) => {
                            // The item is there, so the transaction was not applied.
                            hold.disarm();
                            return Err(context(Error::SessionExpired(
                                "our lock node on the item is gone; another consumer may take the item"
                                    .into(),
                            )));
                        }
                        (Ok(Some(lock)), Ok(None)) if !ours(&lock) => {
                            hold.disarm();
                            return Err(context(Error::OutcomeUnknown(
                                "a try's reply was lost; the item is gone and our lock with it: this transaction may have applied"
                                    .into(),
                            )));
                        }
                        // Not applied (our lock and the item are there), or not known yet: again.
                        _ => continue,
                    }
                }
                e => e,
            };
            // An outcome that says the transaction did not apply, after a try whose reply was
            // lost: that try may have applied it.
            return Err(context(if uncertain {
                self.after_lost_reply(&client, err).await
            } else {
                err
            }));
        }
    }

    /// After a try whose reply was lost, `err` says the transaction did not apply (or nothing
    /// more can be learned on the lock's session). The item still at its node proves it: `err`
    /// stands. The item gone leaves it unknown (this transaction, or another consumer after our
    /// lock went, took it away): `OutcomeUnknown`, never a "not completed" that could make the
    /// caller undo work on an item that is consumed.
    async fn after_lost_reply(&self, client: &crate::Client, err: Error) -> Error {
        match client.exists(&self.item_path).await {
            Ok(Some(_)) => err,
            Ok(None) => Error::OutcomeUnknown(
                "a try's reply was lost and the item is gone: this transaction may have applied (or another consumer took the item after our lock went)"
                    .into(),
            ),
            Err(read) => Error::OutcomeUnknown(
                format!(
                    "a try's reply was lost ({}) and the item could not be read back ({}): the transaction may have applied",
                    err.message(),
                    read.message()
                )
                .into(),
            ),
        }
    }

    /// Gives the item back without completing it: deletes our lock, so another consumer (or
    /// this one) takes it again. Without a lock path the item is gone already.
    pub async fn release(mut self) -> Result<()> {
        match self.hold.take() {
            Some(hold) => hold.release().await,
            None => Ok(()),
        }
    }

    /// Gives the item back for another take without completing it, whatever the queue: with a
    /// lock path this is [`release`](Self::release) (the item stayed in the queue); without one
    /// the item was removed when it was taken, so it is put back at the tail with its messages
    /// and its key, as a failed item is requeued. For a consumer that will not process an item
    /// nobody else has seen (a face whose caller abandoned a take that had landed): consumption
    /// stays at most once. The put-back goes on if this call is dropped (or never awaited), and
    /// the client's close waits for it; its create, when its reply is lost, is not resent:
    /// `OutcomeUnknown`.
    pub fn give_back(mut self) -> impl std::future::Future<Output = Result<()>> + Send + 'static {
        let hold = self.hold.take();
        // Started now, as its own task: the item is nowhere else, so a caller that stops
        // waiting (or never polls) must not drop it; the client's close waits for it.
        let put = hold.is_none().then(|| {
            let data = framing::encode(self.messages.iter().map(Vec::as_slice));
            self.queue.put_back(&self.node, data)
        });
        async move {
            match (hold, put) {
                (Some(hold), _) => hold.release().await,
                (None, Some(put)) => put.await,
                (None, None) => Ok(()), // never: one of them is set above
            }
        }
    }

    /// [`done`](Self::done) for the blocking face.
    pub fn done_blocking(self) -> Result<()> {
        runtime::try_block_on(self.done())?
    }

    /// [`fail`](Self::fail) for the blocking face.
    pub fn fail_blocking(self) -> Result<()> {
        runtime::try_block_on(self.fail())?
    }

    /// [`give_back`](Self::give_back) for the blocking face.
    pub fn give_back_blocking(self) -> Result<()> {
        runtime::try_block_on(self.give_back())?
    }

    /// [`release`](Self::release) for the blocking face.
    pub fn release_blocking(self) -> Result<()> {
        runtime::try_block_on(self.release())?
    }
}

impl Drop for Item {
    fn drop(&mut self) {
        if let Some(hold) = self.hold.take() {
            hold.release_in_background();
        }
    }
}
