//! Taking one item of a [`DistributedQueue`]: Curator's `processNormally` (read, then delete)
//! without a lock path, `processWithLockSafety` (our lock node, then the item) with one.

use std::time::{Duration, Instant};

use super::distributed::DistributedQueue;
use super::framing;
use super::item::Item;
use super::names::requeue_name;
use super::{removal_outliving_the_take, QueueNode};
use crate::client::{OrNone, Parents, Session};
use crate::{path, runtime, Client, CreateMode, Error, Result};

impl DistributedQueue {
    /// Tries to take `node`.
    pub(super) async fn try_take(&self, node: &str) -> Result<Taking> {
        let sh = &self.shared;
        let item_path = path::join(&sh.path, node);
        let taken = match &sh.lock_path {
            Some(lock_path) => self.take_locked(lock_path, node, &item_path).await,
            None => self.take_unlocked(node, &item_path).await,
        }
        .map_err(|e| e.context(format!("take {item_path}")))?;
        let (data, token, hold) = match taken {
            Taking::Item(taken) => taken,
            Taking::Gone => return Ok(Taking::Gone),
            Taking::Locked => return Ok(Taking::Locked),
        };
        let messages = match framing::decode(&item_path, &data) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(item = %item_path, error = %e, "queue item is not Curator's framing; left in place and passed over");
                sh.corrupt
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(node.to_string());
                if let Some(hold) = hold {
                    hold.release_in_background();
                }
                return Err(e);
            }
        };
        Ok(Taking::Item(Item {
            queue: self.clone(),
            node: node.to_string(),
            item_path,
            messages,
            token,
            hold,
        }))
    }

    /// Curator's `processNormally`: read, delete at the version read (at most once). The
    /// delete goes on to its end if the take is dropped meanwhile, and an item it removed for
    /// nobody is put back at the tail with its key ([`removal_outliving_the_take`]).
    async fn take_unlocked(&self, node: &str, item_path: &str) -> Result<Taking<Taken>> {
        self.shared
            .client
            .retry(|s| async move {
                let Some((data, stat)) = s.get_data(item_path).await.or_none()? else {
                    return Ok(Taking::Gone);
                };
                if framing::decode(item_path, &data).is_err() {
                    return Ok(Taking::Item((data, stat.czxid, None))); // reported, left in place
                }
                let (s, path) = (s.clone(), item_path.to_string());
                let delete = async move { (s.delete(&path, Some(stat.version)).await, data) };
                let (queue, node) = (self.clone(), node.to_string());
                let client = &self.shared.client;
                let (deleted, data) =
                    removal_outliving_the_take(client, delete, move |(deleted, data)| {
                        if deleted.is_ok() {
                            drop(queue.put_back(&node, data)); // it runs as its own task
                        }
                    })
                    .await;
                match deleted {
                    Ok(()) => Ok(Taking::Item((data, stat.czxid, None))),
                    Err(Error::NoNode(_)) | Err(Error::BadVersion(_)) => Ok(Taking::Gone),
                    Err(e) => Err(e),
                }
            })
            .await
    }

    /// Puts an item an at-most-once take removed and handed to nobody (`node`, its framed
    /// `data`) back at the tail with its key, as a failed item is requeued ([`super::put_back`]:
    /// as its own task, started by this call).
    pub(super) fn put_back(
        &self,
        node: &str,
        data: Vec<u8>,
    ) -> impl std::future::Future<Output = Result<()>> + Send + 'static {
        let sh = &self.shared;
        super::put_back(
            &sh.client,
            &sh.path,
            &requeue_name(node),
            data,
            QueueNode::Persistent,
        )
    }

    /// Curator's `processWithLockSafety`, first half: our lock node, then the item's data, on
    /// one session. The lock node holds a fresh id, so a retried create finds it ours.
    async fn take_locked(
        &self,
        lock_path: &str,
        node: &str,
        item_path: &str,
    ) -> Result<Taking<Taken>> {
        let sh = &self.shared;
        let lock = path::join(lock_path, node);
        let lock = lock.as_str();
        let attempt = uuid::Uuid::new_v4().to_string();
        // Until this take has answered, a lock node of this attempt is deleted if the take is
        // dropped (cancelled) or gives up: the create's reply, or the item's read, may have been
        // cut off with our lock made.
        let mut abandoned = AttemptCleanup {
            client: sh.client.clone(),
            lock: lock.to_string(),
            attempt: attempt.clone(),
            armed: true,
        };
        let attempt = attempt.as_bytes();
        let taken = sh
            .client
            .retry(|s: Session| async move {
                let mut rounds = 0;
                let czxid = loop {
                    rounds += 1;
                    let created = s.create_with_parents(
                        lock,
                        attempt,
                        CreateMode::Ephemeral,
                        None,
                        Parents::None,
                    );
                    match created.await {
                        Ok(c) => break c.stat.czxid,
                        // No lock path: made persistent, as Curator's queue makes it (its
                        // consumers lock without making parents), then locked again.
                        Err(Error::NoNode(_)) if rounds <= 3 => {
                            super::make_persistent(&s, lock_path).await?;
                        }
                        Err(Error::NodeExists(_)) => match s.get_data(lock).await.or_none()? {
                            // Ours: a retried create whose first reply was lost.
                            Some((d, st)) if d == attempt && s.owns(&st) => break st.czxid,
                            Some(_) => return Ok(Taking::Locked),
                            None if rounds <= 3 => {}
                            // A lock that keeps coming and going: its watch says when to retry.
                            None => return Ok(Taking::Locked),
                        },
                        Err(e) => return Err(e),
                    }
                };
                let hold = Hold::new(sh.client.clone(), s.clone(), lock.to_string(), czxid);
                match s.get_data(item_path).await {
                    Ok((data, _)) => Ok(Taking::Item((data, czxid, Some(hold)))),
                    Err(Error::NoNode(_)) => {
                        // Completed by another consumer between our listing and our lock.
                        hold.release_in_background();
                        Ok(Taking::Gone)
                    }
                    Err(e) if e.is_retryable() => {
                        // The retry finds this lock ours (its attempt id) and reads again. Not
                        // deleted meanwhile: a delete landing after that read would leave the
                        // item handed out without its lock.
                        hold.disarm();
                        Err(e)
                    }
                    Err(e) => {
                        hold.release_in_background();
                        Err(e)
                    }
                }
            })
            .await;
        if taken.is_ok() {
            abandoned.armed = false;
        }
        taken
    }
}

/// What one attempt to take an item found.
pub(super) enum Taking<T = Item> {
    /// Taken.
    Item(T),
    /// Gone: completed or taken by another consumer.
    Gone,
    /// Held by another consumer (its lock exists).
    Locked,
}

/// A taken item's data, fencing token and lock.
type Taken = (Vec<u8>, i64, Option<Hold>);

/// A lock on one item: the node and the session that made it. Dropped without being
/// released or used up (a `done` or `fail` that went through), it deletes the lock in the
/// background, retrying until that succeeds or the session ends: a lock left behind would keep
/// every other consumer off the item for as long as its session lives (Curator's
/// `processWithLockSafety` deletes it with a guaranteed delete).
pub(super) struct Hold {
    client: Client,
    pub(super) session: Session,
    pub(super) lock: String,
    /// The lock node's czxid: a node at `lock` with another czxid is another consumer's.
    czxid: i64,
    /// Not released yet: a drop deletes the lock in the background.
    armed: bool,
    /// A delete of the lock (alone, or in a transaction) may have been applied with its reply
    /// lost: the next one looks first, so that another consumer's lock made at the same path
    /// since is left alone. Until then a release is one plain delete, one round trip.
    uncertain: bool,
}

impl Hold {
    pub(super) fn new(client: Client, session: Session, lock: String, czxid: i64) -> Hold {
        Hold {
            client,
            session,
            lock,
            czxid,
            armed: true,
            uncertain: false,
        }
    }

    /// The lock node's czxid (a node at the lock's path with another is another consumer's).
    pub(super) fn czxid(&self) -> i64 {
        self.czxid
    }

    /// The lock is gone (used up by a transaction, or never to be deleted by us).
    pub(super) fn disarm(mut self) {
        self.armed = false;
    }

    /// A delete of the lock may have been applied without our seeing it (see `uncertain`).
    pub(super) fn mark_uncertain(&mut self) {
        self.uncertain = true;
    }

    /// Deletes our lock node on its own session; after an uncertain try, only if it is still
    /// ours (its czxid).
    async fn delete_once(&mut self) -> Result<()> {
        let version = if self.uncertain {
            match self.session.exists(&self.lock).await? {
                Some(stat) if stat.czxid == self.czxid => Some(stat.version),
                _ => return Ok(()),
            }
        } else {
            None
        };
        match self.session.delete(&self.lock, version).await {
            Ok(()) | Err(Error::NoNode(_)) => Ok(()),
            Err(e) => {
                if e.is_retryable() {
                    self.uncertain = true;
                }
                Err(e)
            }
        }
    }

    /// Deletes the lock node on its own session (a lock of an ended session is gone already),
    /// retrying connection losses under the client's retry policy; if that gives up, the drop
    /// goes on trying in the background.
    pub(super) async fn release(mut self) -> Result<()> {
        let client = self.session_client();
        let start = Instant::now();
        let mut retries = 0;
        loop {
            match self.delete_once().await {
                Ok(()) | Err(Error::SessionExpired(_)) => {
                    self.armed = false;
                    return Ok(());
                }
                Err(e) if e.is_retryable() => {
                    match client.retry_policy().next_sleep(retries, start.elapsed()) {
                        Some(d) if !client.is_closed() => {
                            retries += 1;
                            tokio::time::sleep(d).await;
                        }
                        _ => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Deletes the lock in the background (the drop does).
    pub(super) fn release_in_background(self) {
        drop(self);
    }

    pub(super) fn session_client(&self) -> Client {
        self.client.clone()
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if !std::mem::take(&mut self.armed) {
            return;
        }
        let mut hold = Hold {
            client: self.client.clone(),
            session: self.session.clone(),
            lock: std::mem::take(&mut self.lock),
            czxid: self.czxid,
            armed: false,
            uncertain: self.uncertain,
        };
        runtime::spawn(async move {
            let mut pause = Duration::from_millis(50);
            loop {
                match hold.delete_once().await {
                    Ok(()) | Err(Error::SessionExpired(_)) | Err(Error::Closed(_)) => return,
                    Err(e) if e.is_retryable() && !hold.client.is_closed() => {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(1));
                    }
                    Err(e) => {
                        tracing::warn!(lock = %hold.lock, error = %e, "could not delete a queue item's lock node (it goes with the session)");
                        return;
                    }
                }
            }
        });
    }
}

/// A take's lock node whose outcome the take did not report (cancelled, or given up): deleted
/// in the background if it is there with this attempt's id.
struct AttemptCleanup {
    client: Client,
    lock: String,
    attempt: String,
    armed: bool,
}

impl Drop for AttemptCleanup {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (client, lock, attempt) = (
            self.client.clone(),
            std::mem::take(&mut self.lock),
            std::mem::take(&mut self.attempt),
        );
        runtime::spawn(async move {
            let (lock, attempt) = (lock.as_str(), attempt.as_bytes());
            let cleaned = client
                .retry(|s: Session| async move {
                    match s.get_data(lock).await.or_none()? {
                        Some((data, stat)) if data == attempt => {
                            match s.delete(lock, Some(stat.version)).await {
                                Ok(()) | Err(Error::NoNode(_)) | Err(Error::BadVersion(_)) => {
                                    Ok(())
                                }
                                Err(e) => Err(e),
                            }
                        }
                        _ => Ok(()),
                    }
                })
                .await;
            if let Err(e) = cleaned {
                tracing::warn!(lock, error = %e, "could not delete an abandoned take's lock node (it goes with the session)");
            }
        });
    }
}
